"""What a server process holds (vizmm/serve): caches, per-trace results, listeners, the command."""

import functools
import gc
import sys
import types
import weakref

import pytest

from vizmm.serve.caches import CacheRegistry
from vizmm.serve.command import ServeError, serve_command, serve_environment
from vizmm.serve.listeners import PageListeners
from vizmm.trace.derived import derived_count, kept, per_trace


class _Trace:  # anything with a __dict__ stands for a trace here
    pass


def test_per_trace_keeps_the_last_results_on_the_trace_and_lets_go_with_it():
    calls = []

    @per_trace(maxsize=2)
    def square(trace, n):
        calls.append(n)
        return [n * n]  # a fresh object each time it is worked out

    t = _Trace()
    first = square(t, 3)
    assert square(t, 3) is first and calls == [3]  # worked out once
    square(t, 4)
    square(t, 5)  # maxsize 2: 3, the least recently used, goes
    assert derived_count(t) == 2
    square(t, 3)
    assert calls == [3, 4, 5, 3]
    other = _Trace()
    assert square(other, 3) == [9] and calls[-1] == 3  # kept per trace, not shared
    alive = weakref.ref(t)
    del t
    gc.collect()
    assert alive() is None  # nothing outside the trace holds it
    with pytest.raises(ValueError, match="at least 1"):
        per_trace(maxsize=0)


def test_kept_keys_on_what_it_is_told():
    t = _Trace()
    assert kept(t, "layout", (0, 1), lambda: "a") == "a"
    assert kept(t, "layout", (0, 1), lambda: "b") == "a"  # the make is not called again
    assert kept(t, "layout", (1, 1), lambda: "c") == "c"


def test_the_cache_registry_empties_what_it_names_and_finds_unbounded_caches(monkeypatch):
    module = types.ModuleType("vizmm_test_drawing")

    @functools.lru_cache(maxsize=4)
    def label(n):
        return str(n)

    @functools.cache
    def unbounded(n):
        return n

    class Steps(dict):
        pass

    module.label, module.unbounded, module.STEPS = label, unbounded, Steps(a=1, b=2)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    reg = CacheRegistry((module.__name__, "not.imported.module"), ((module.__name__, "STEPS"),))
    label(1), label(2), unbounded(7)
    assert reg.entries() == 2 + 1 + 2
    assert reg.unbounded() == ["vizmm_test_drawing.unbounded"]
    assert reg.clear() == 5
    assert reg.entries() == 0 and label.cache_info().currsize == 0 and not module.STEPS


def test_page_listeners_wake_the_pages_of_one_class():
    pages = PageListeners()
    woken = []
    pages.listen("ABC", 1, lambda: woken.append(1))
    pages.listen("ABC", 2, lambda: 1 / 0)  # a page closing: skipped
    pages.listen("XYZ", 3, lambda: woken.append(3))
    assert pages.wake("ABC") == 2 and woken == [1]
    pages.unlisten("ABC", 1)
    pages.unlisten("ABC", 2)
    pages.unlisten("ABC", 9)  # not listening: nothing
    assert pages.count("ABC") == 0 and pages.wake("ABC") == 0
    assert pages.wake("XYZ") == 1 and woken == [1, 3]


def test_the_serve_command_and_its_environment(tmp_path):
    cmd = serve_command("127.0.0.1", 5123, 2)
    # -P: the working directory is not on the server's sys.path (a clone named vizmm there)
    assert cmd[1:5] == ["-P", "-m", "panel", "serve"]
    assert cmd[5].endswith("dashboard.py") and cmd[6].endswith("large_view.py")
    assert cmd[cmd.index("--setup") + 1].endswith("preload.py")
    assert cmd[cmd.index("--num-procs") + 1] == "2"
    # on a loopback address with no origin given: this machine's two names
    assert "--allow-websocket-origin=localhost:5123" in cmd
    assert "--allow-websocket-origin=127.0.0.1:5123" in cmd
    wide = serve_command("0.0.0.0", 80, 1, ["class.example:80"], show=True)
    assert [a for a in wide if a.startswith("--allow")] == [
        "--allow-websocket-origin=class.example:80"
    ]
    assert wide[-1] == "--show"
    env = serve_environment({"PYTHONMALLOC": "pymalloc"}, [str(tmp_path)], 3)
    assert "PYTHONMALLOC" not in env  # set by whoever started it: kept
    assert env["VIZMM_SERVE_TRACES"] == str(tmp_path)
    assert env["VIZMM_SERVER_MAX_TRACE_BYTES"] == str(3 * 2**20)
    with pytest.raises(ServeError, match="no such file or folder"):
        serve_environment({}, [str(tmp_path / "missing")])
