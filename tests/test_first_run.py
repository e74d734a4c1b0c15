"""The first five minutes: started beside a clone, progress on long work, one process.

``vizmm serve`` started in the folder that holds a clone named ``vizmm``
(git's default name) serves the installed pages; a missing data file is
named in one line with exit code 2. A recording tells its progress, and a
simulator recording in a fresh process runs in that process.
"""

import os
import signal
import subprocess
import sys
import time
import types
import urllib.request

import pytest
from served import free_port

from vizmm.cli import main
from vizmm.serve import command


def _clone(parent):
    """A folder laid out as a clone of vizmm's repository (no ``__init__.py`` at its top)."""
    top = parent / "vizmm"
    (top / "vizmm").mkdir(parents=True)
    (top / "vizmm" / "__init__.py").write_text('"""A clone\'s package, never imported."""\n')
    (top / "pyproject.toml").write_text('[project]\nname = "vizmm"\n')
    return top


@pytest.mark.slow
def test_serve_started_beside_a_clone_serves_the_installed_pages(tmp_path):
    _clone(tmp_path)
    port = free_port()
    exe = os.path.join(os.path.dirname(sys.executable), "vizmm")
    log = open(tmp_path / "serve.log", "w+")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env.pop("PYTHONPATH", None)
    proc = subprocess.Popen(
        [exe, "serve", "--port", str(port)],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.time() + 240
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/dashboard", timeout=60) as r:
                    assert r.status == 200
                    break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    log.seek(0)
                    pytest.fail(f"vizmm serve did not start (exit {proc.poll()}):\n{log.read()}")
                time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        log.seek(0)
        assert "ERROR" not in log.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()


def test_a_missing_data_file_is_named_in_one_line_with_exit_2(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "presets.json").write_text('{"presets": []}')  # device-presets.json is missing
    monkeypatch.setattr(command, "_data_folder", lambda: data)
    assert main(["serve", "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err == (
        f"vizmm: error: vizmm's data file {data / 'device-presets.json'} is missing: "
        "reinstall vizmm ('pip install vizmm', or 'pip install -e .' in its repository)\n"
    )


def test_a_clone_imported_in_place_of_the_package_is_named(tmp_path, monkeypatch):
    # What Python imports as `vizmm` from a folder holding a clone: the clone's
    # folder, as a namespace package (no __file__), whose data/ does not exist.
    top = _clone(tmp_path)
    clone = types.ModuleType("vizmm")
    clone.__path__ = [str(top)]
    monkeypatch.setitem(sys.modules, "vizmm", clone)
    with pytest.raises(command.ServeError) as info:
        command.check_data_files(top / "data")
    assert str(info.value) == (
        f"vizmm's data file {top / 'data' / 'presets.json'} is missing: 'vizmm' was imported "
        f"from the folder {top}, not the installed package; start vizmm from another folder"
    )
