"""A wheel of vizmm, installed outside the checkout, serves its pages from any folder.

``pip install .`` (not editable) once answered ``vizmm serve`` with "the apps
folder is not next to this vizmm": the pages were not in the package. Here
the wheel is built, unpacked with pip into a folder of its own (first on
``PYTHONPATH``, so that the checkout's editable install cannot answer), and
``python -m vizmm serve`` is run from an empty folder. The oracle is the
server itself: ``/dashboard`` and ``/large_view`` answer with Panel's page,
and the processes imported vizmm and its pages from the wheel's files.
"""

import os
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile

import pytest
from served import ROOT, free_port

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    # pip builds it as for a release: in an isolated environment with the
    # build requirements of pyproject.toml.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(out / "dist"), ROOT],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    (wheel,) = (out / "dist").glob("vizmm-*.whl")
    site = out / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
         str(wheel)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    return wheel, site


def test_the_wheel_holds_the_pages_and_the_kernels(wheel_site):
    wheel, _ = wheel_site
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("vizmm_apps/dashboard.py", "vizmm_apps/large_view.py", "vizmm_apps/preload.py",
                 "vizmm_kernels/tiled.py", "vizmm/data/fig5-8.vizmm"):  # fmt: skip
        assert name in names, name
    assert not any(n.startswith(("apps/", "tests/", "kernels/")) for n in names)


def test_an_installed_wheel_serves_the_dashboard_from_any_folder(wheel_site, tmp_path):
    _, site = wheel_site
    env = dict(os.environ, PYTHONPATH=str(site), NUMBA_ENABLE_CUDASIM="1")
    where = subprocess.run(
        [sys.executable, "-c",
         "import vizmm, vizmm_apps, vizmm_kernels; "
         "print(vizmm.__file__, vizmm_apps.__file__, vizmm_kernels.__file__)"],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert all(p.startswith(str(site)) for p in where), where
    port = free_port()
    log = open(tmp_path / "serve.log", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "vizmm", "serve", "--port", str(port)],
        env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        pages = {}
        deadline = time.monotonic() + 180
        for page in ("dashboard", "large_view"):
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/{page}", timeout=60) as r:
                        pages[page] = (r.status, r.read().decode())
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        pytest.fail(
                            f"vizmm serve from the wheel did not serve:\n{log.read()[-3000:]}"
                        )
                    time.sleep(1)
        for page, (status, html) in pages.items():
            assert status == 200, page
            assert "Bokeh" in html and "<html" in html, page
        log.seek(0)
        text = log.read()
        assert "Traceback" not in text, text[-3000:]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
