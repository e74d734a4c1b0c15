"""mypy over vizmm and vizmm_apps, configured by ``[tool.mypy]`` in pyproject.toml.

The pages live in the folder apps/ but install as ``vizmm_apps`` (and kernels/ as
``vizmm_kernels``); mypy finds modules by folder name, so it is run from a folder of
links that carry the installed names (``.mypy_cache/src``, ignored by git, next to
mypy's cache so that a second run only re-checks what changed).

Any error fails: there is no list of tolerated ones (issue 28).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".mypy_cache"
# installed name -> folder of the checkout
PACKAGES = {"vizmm": "vizmm", "vizmm_apps": "apps", "vizmm_kernels": "kernels"}
_ERROR = re.compile(r"^[^:\s]+\.py:\d+: error: ")


def _source_links() -> Path:
    src = CACHE / "src"
    src.mkdir(parents=True, exist_ok=True)
    for name, folder in PACKAGES.items():
        link, target = src / name, REPO / folder
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink(missing_ok=True)
        try:
            link.symlink_to(target, target_is_directory=True)
        except FileExistsError:  # another run made it meanwhile
            pass
    return src


def _mypy(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MYPYPATH": str(cwd)}
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")]
    cmd += ["--cache-dir", str(CACHE), *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=500)


def _errors(stdout: str) -> list[str]:
    """mypy's error lines, each file named by its folder (apps/, not vizmm_apps/)."""
    out = stdout.replace("vizmm_apps/", "apps/")
    return [line for line in out.splitlines() if _ERROR.match(line)]


@pytest.mark.slow  # mypy over both packages
def test_vizmm_and_its_pages_type_check():
    done = _mypy(_source_links(), "-p", "vizmm", "-p", "vizmm_apps")
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 2: mypy itself failed
    errors = _errors(done.stdout)
    assert not errors, "mypy finds:\n" + "\n".join(errors)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_check_finds_a_lazy_import_of_a_name_that_is_gone(tmp_path):
    # The bug this check is for: a page imported, inside an unannotated function, a
    # private helper that another module no longer had.
    pkg = tmp_path / "pages_under_test"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "dashboard.py").write_text("def index_at(step):\n    return step\n")
    (pkg / "quiz.py").write_text(
        "def ask(step):\n    from pages_under_test.dashboard import _equivalent\n\n"
        "    return _equivalent(step)\n"
    )
    done = _mypy(tmp_path, "-p", "pages_under_test")
    assert done.returncode == 1
    assert 'quiz.py:2: error: Module "pages_under_test.dashboard" has no attribute' in done.stdout
