"""Packaging: our kernels cannot be shadowed, and importing vizmm stays light."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(code, tmp_path, extra_path=None):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(extra_path), env.get("PYTHONPATH", "")])
    # Run from an empty folder, so that the repository root is not on sys.path.
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_foreign_kernels_package_cannot_shadow_ours(tmp_path):
    # A package named 'kernels' (as the unrelated 'kernels' distribution on
    # the package index installs) first on sys.path.
    fake = tmp_path / "site"
    (fake / "kernels").mkdir(parents=True)
    (fake / "kernels" / "__init__.py").write_text(
        "raise ImportError('the foreign kernels package was imported')\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    out = _run(
        """
        import json, sys
        import vizmm
        t = vizmm.record(width=3, tile_width=2, kernel="boundary", backend="simulator",
                         quiet=True)
        import numpy as np
        import vizmm_kernels
        print(json.dumps({
            "ok": bool((t.P == t.M.astype(np.float64) @ t.N).all()),
            "file": vizmm_kernels.__file__,
            "foreign": "kernels" in sys.modules,
            "first": sys.path[1],
        }))
        """,
        work,
        extra_path=fake,
    )
    assert out["first"] == str(fake)  # the fake package really came first
    assert out["ok"]
    assert not out["foreign"]
    assert Path(out["file"]).resolve() == REPO / "kernels" / "__init__.py"


def test_import_vizmm_does_not_import_numba(tmp_path):
    out = _run(
        """
        import json, sys
        import vizmm, vizmm.trace, vizmm.replay.table, vizmm.replay.large, vizmm.cli
        import vizmm.analysis, vizmm.render.text, vizmm.export
        print(json.dumps(sorted(m for m in sys.modules
                                if m.split(".")[0] in ("numba", "numba_cuda_mlir", "llvmlite",
                                                       "vizmm_kernels"))))
        """,
        tmp_path,
    )
    assert out == []


def test_console_script_is_installed():
    from importlib.metadata import entry_points

    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts.get("vizmm") == "vizmm.cli:main"


def _readme_commands():
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```\n(.*?)```", text, flags=re.S)
    return [b.strip() for b in blocks if b.strip().startswith("python3 -m venv")]


def test_ci_runs_the_readme_test_command():
    commands = _readme_commands()
    assert len(commands) == 2
    assert commands[0].endswith("vizmm serve --show")  # localhost only, presets read first
    test_command = commands[1]
    assert test_command == (
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" '
        "&& .venv/bin/python -m pytest -q -n 2"
    )
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert test_command in ci  # a line of its own, unchanged
    assert os.access(REPO / ".ci" / "run", os.X_OK)


def test_tests_run_the_simulator_in_process():
    # conftest.py chose the simulator before numba.cuda was imported, so the
    # simulator recordings of the suite run here, not in subprocesses.
    from conftest import GPU_RUN

    import vizmm.record  # noqa: F401

    mode = sys.modules["vizmm.record.recorder"]._numba_mode()
    assert mode in (None, "gpu" if GPU_RUN else "simulator")


def test_every_package_folder_is_in_the_wheel():
    # A sub-package left out of pyproject.toml's list installs fine in
    # editable mode and breaks in a wheel; list every folder that has an
    # __init__.py and compare.
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    listed = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(p.parent.relative_to(REPO).parts)
        for p in (REPO / "vizmm").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert found <= listed, f"add to pyproject.toml's packages: {sorted(found - listed)}"
    assert "vizmm_kernels" in listed
