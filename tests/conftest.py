"""Test set-up: Numba's CUDA simulator by default, real-GPU tests only where a GPU is usable.

``NUMBA_ENABLE_CUDASIM`` must be set before numba is first imported, so it is
set here, at import time: to ``1`` (the simulator) unless ``VIZMM_TEST_GPU=1``
asks for a run on a real GPU, where numba then drives the GPU in-process (and
vizmm runs simulator recordings in a subprocess).

Tests marked ``gpu`` are skipped unless a CUDA GPU is usable.
"""

import gc
import os
import re
import shutil
import sys

import pytest

GPU_RUN = os.environ.get("VIZMM_TEST_GPU") == "1"
if GPU_RUN:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")
else:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

if "numba.cuda" in sys.modules:
    raise RuntimeError(
        "numba.cuda was imported before tests/conftest.py could choose the "
        "simulator; run the tests with NUMBA_ENABLE_CUDASIM set"
    )

_gpu_usable = None


def gpu_usable() -> bool:
    """Whether numba can use a CUDA GPU (probed once, in a subprocess when simulating)."""
    global _gpu_usable
    if _gpu_usable is None:
        import ctypes.util

        if ctypes.util.find_library("cuda") is None and not os.path.exists("/dev/nvidia0"):
            _gpu_usable = False
        else:
            from vizmm import gpu_available

            _gpu_usable = gpu_available()
    return _gpu_usable


def _uses_browser(item) -> bool:
    return "browser" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and not gpu_usable():
        skip = pytest.mark.skip(reason="needs a usable CUDA GPU (none found)")
        for item in gpu_items:
            item.add_marker(skip)
    # One Chromium serves the whole session (the ``browser`` fixture). From its first
    # page on, Playwright's sync API keeps its event loop marked as running in this
    # thread, so ``asyncio.run`` (and a second Playwright) would refuse: the tests
    # that use the browser run last, in their order, after every other test.
    for item in items:
        if _uses_browser(item):
            item.add_marker(pytest.mark.browser)  # ``-m "not browser"`` leaves it out

    # The tests that read a PTX compile (tests/ptx.py) go last, after the browser tests
    # (they start no event loop): their compiles started with the session and are done
    # by then, instead of holding a process while they compile (placed just before the
    # browser tests, two of them waited 30 s each for theirs).
    # Among the browser tests the long ones go first: last, one of them kept one process
    # busy for up to 40 s after the other had run out of tests.
    def place(item) -> int:
        if hasattr(getattr(item, "module", None), "ptx_jobs"):
            return 3
        if _uses_browser(item):
            return 1 if "long" in item.keywords else 2
        return 0

    items.sort(key=place)  # stable: each group keeps its order


def _selected(config, path) -> bool:
    """Whether the command line's paths take in the test file ``path``."""
    args = [a.split("::")[0] for a in config.args] or ["."]
    for a in args:
        a = os.path.abspath(os.path.join(str(config.invocation_params.dir), a))
        if a == path or path.startswith(a.rstrip(os.sep) + os.sep):
            return True
    return False


def pytest_configure(config):
    # The tests make and drop many small objects (Bokeh documents, traces, frames):
    # the collector's youngest generation is walked every 50,000 allocations instead
    # of every 700, which takes about 5% off the quick run's time (68 s against 72 s,
    # two runs each). A test that needs a collection asks for one (gc.collect()).
    gc.set_threshold(50_000, 20, 100)
    # Under pytest-xdist the controller starts the PTX compiles (tests/ptx.py) before
    # the workers exist, two at a time in the background at the lowest priority, and
    # leaves each result in a folder the workers read (ptx.SHARE): they compile in the
    # time the workers leave a core idle, instead of holding a worker for up to two
    # minutes each or slowing the tests that keep both cores busy (a full run took
    # 8:32 with them at the lowest priority against 9:01 at the workers').
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return
    if re.search(r"not\s+slow", config.option.markexpr or ""):  # the compiles are slow tests
        return
    import importlib
    import tempfile

    here = os.path.dirname(os.path.abspath(__file__))
    jobs = []
    for name in sorted(os.listdir(here)):
        path = os.path.join(here, name)
        if not (name.startswith("test_") and name.endswith(".py")) or not _selected(config, path):
            continue
        with open(path, encoding="utf-8") as f:
            if "def ptx_jobs(" not in f.read():
                continue
        jobs += importlib.import_module(name[:-3]).ptx_jobs()
    if jobs:
        import ptx

        share = tempfile.mkdtemp(prefix="vizmm-ptx-")
        os.environ[ptx.SHARE] = share
        config.add_cleanup(lambda: shutil.rmtree(share, ignore_errors=True))
        ptx.start(jobs, share=share)


def pytest_collection_finish(session):
    # The PTX compiles (tests/ptx.py) run in subprocesses, each on one core and for
    # up to a minute or more: those of the chosen tests start now, two at a time
    # in the background, and compile while the other tests run. Under pytest-xdist
    # the controller started them (pytest_configure); a worker waits for their files.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    jobs = []
    for module in {id(m): m for m in (getattr(i, "module", None) for i in session.items)}.values():
        if module is not None and hasattr(module, "ptx_jobs"):
            jobs += module.ptx_jobs()
    if jobs:
        import ptx

        ptx.start(jobs)


def pytest_sessionfinish(session, exitstatus):
    if "ptx" in sys.modules:
        sys.modules["ptx"].stop()


@pytest.fixture(scope="session")
def record_sim():
    """``vizmm.record`` on the simulator, quiet, with results cached per arguments."""
    import vizmm

    cache = {}

    def run(**kwargs):
        key = tuple(sorted((k, repr(v)) for k, v in kwargs.items()))
        if key not in cache:
            cache[key] = vizmm.record(backend="simulator", quiet=True, **kwargs)
        return cache[key]

    return run


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, one for the whole session (tests/served.py).

    A test opens its pages in contexts of its own (``browser.new_page()`` makes
    a fresh context per page, ``browser.new_context()`` one for several pages)
    and closes them. Skipped when Chromium or Playwright is missing.
    """
    from served import ARGS, CHROMIUM

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def new_page(browser):
    """``browser.new_page(**options)`` for one test: a fresh context each, closed after it."""
    opened = []

    def make(**options):
        pg = browser.new_page(**options)
        opened.append(pg)
        return pg

    yield make
    for pg in opened:
        pg.close()  # and its context


@pytest.fixture(scope="session")
def dashboard_class_dir(tmp_path_factory):
    """The class store's folder of the session's dashboard (not made yet: vizmm makes it)."""
    return tmp_path_factory.mktemp("classes") / "store"


@pytest.fixture(scope="session")
def dashboard_url(tmp_path_factory, dashboard_class_dir):
    """``panel serve apps/dashboard.py``, one for the session: the default dashboard's URL.

    Every module that drives the default dashboard shares it (each page is a
    session of its own); its class store is in a folder of the test run's,
    not the user's.
    """
    from served import serve

    env = {"VIZMM_CLASS_DIR": str(dashboard_class_dir)}
    with serve("dashboard", tmp_path_factory.mktemp("serve-dashboard"), 180, env) as url:
        yield url


@pytest.fixture(scope="session")
def side_by_side_url(tmp_path_factory):
    """``panel serve apps/side_by_side.py``, one for the session: the page's URL."""
    from served import serve

    with serve("side_by_side", tmp_path_factory.mktemp("serve-side-by-side"), 180) as url:
        yield url


@pytest.fixture(scope="session")
def large_view_url(tmp_path_factory):
    """``panel serve apps/large_view.py``, one for the session: the page's URL."""
    from served import serve

    with serve("large_view", tmp_path_factory.mktemp("serve-large-view"), 180) as url:
        yield url


@pytest.fixture(scope="session")
def vizmm_served(tmp_path_factory):
    """``vizmm serve`` with its default options, one for the session: (process, base URL)."""
    from served import vizmm_serve

    with vizmm_serve(tmp_path_factory.mktemp("vizmm-serve")) as (proc, base):
        yield proc, base
