"""Each layer folder keeps an ARCHITECTURE.md that names its files; the top one links them all."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = (
    "kernels",
    "vizmm/record",
    "vizmm/trace",
    "vizmm/replay",
    "vizmm/analysis",
    "vizmm/render",
    "vizmm/serve",
    "vizmm/grade",
    "apps",
)
SECTIONS = ("## Files", "## Terms", "## How to extend", "## Gotchas")


@pytest.mark.parametrize("folder", LAYERS)
def test_a_layer_describes_each_of_its_files(folder):
    text = (REPO / folder / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for section in SECTIONS:
        assert section in text, f"{folder}/ARCHITECTURE.md has no {section!r}"
    named = set(re.findall(r"`([A-Za-z_0-9]+\.py)`", text))
    files = {p.name for p in (REPO / folder).glob("*.py") if p.name != "__init__.py"}
    missing = files - named
    assert not missing, f"{folder}/ARCHITECTURE.md does not name {sorted(missing)}"


def test_the_top_architecture_links_every_layer():
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for folder in LAYERS:
        assert f"({folder}/ARCHITECTURE.md)" in text
