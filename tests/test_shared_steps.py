"""Steps shared between pages (vizmm/render/shared_steps.py) show each page its own frame.

The oracle is ``frame_columns`` of the frame a page shows, worked out afresh
for that page alone: whatever another page took before, after every update
each source of each scene must hold exactly those columns.
"""

import dataclasses
import gc
import os

import numpy as np
import pytest

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from vizmm.render.bokeh_scene import Scene, frame_columns  # noqa: E402
from vizmm.render.shared_steps import STEPS, SharedSteps  # noqa: E402
from vizmm.replay import Replay  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE  # noqa: E402


def _shows(scene: Scene, frame) -> None:
    """Every source of ``scene`` holds ``frame``'s columns, as worked out for it alone."""
    want = frame_columns(
        frame,
        scene.trace,
        scene.sources,
        scene.palette,
        scene.sizes.caption_chars,
        scene.conceal,
    )
    for name, source in scene.sources.items():
        got = {c: list(v) if isinstance(v, np.ndarray) else v for c, v in source.data.items()}
        assert got.keys() == want[name].keys(), name
        for column, values in want[name].items():
            assert got[column] == values, (frame.index, name, column)


@pytest.fixture
def steps():
    STEPS.clear()
    yield STEPS
    STEPS.clear()


def test_pages_stepping_together_share_each_step_and_show_their_own_frames(steps):
    trace = CATALOGUE.get("fig5-8")
    replay = Replay(trace, (0, 0))
    first, second = Scene(trace), Scene(trace)
    for i in range(6):  # the first page takes each step, the second takes it again
        first.update(replay.frame(i))
        _shows(first, replay.frame(i))
    misses = steps.misses
    for i in range(6):
        second.update(replay.frame(i))
        _shows(second, replay.frame(i))
    assert steps.misses == misses and steps.hits >= 6
    # the same read-only arrays, not copies
    shared = [
        (name, c)
        for name, source in second.sources.items()
        for c, v in source.data.items()
        if isinstance(v, np.ndarray) and v is first.sources[name].data[c]
    ]
    assert shared and all(not second.sources[n].data[c].flags.writeable for n, c in shared)


def test_a_page_that_leaves_the_class_still_shows_its_frames(steps):
    """Jumps, a step back, another replay's frames, the table concealed, a frame with no key."""
    trace = CATALOGUE.get("fig5-8")
    replay = Replay(trace, (0, 0))
    followed = Replay(trace, (0, 0), focus=(1, 0))
    leader, page = Scene(trace), Scene(trace)
    for i in range(4):
        leader.update(replay.frame(i))
        page.update(replay.frame(i))
        _shows(page, replay.frame(i))
    page.update(replay.frame(9))  # a jump no page has made: worked out here
    _shows(page, replay.frame(9))
    for i in (9, 10, 11):
        leader.update(replay.frame(i))
    for i in (10, 11):  # steps the leader took: shared
        page.update(replay.frame(i))
        _shows(page, replay.frame(i))
    script = [
        (replay, 9),  # back to the frame it last worked out itself, from the shared 11
        (replay, 8),  # a step back
        (followed, 8),  # the same step of a replay that follows a thread
        (replay, 8),
    ]
    for rp, i in script:
        page.update(rp.frame(i))
        _shows(page, rp.frame(i))
    page.conceal = True  # a question is asked: the table's future cells go
    page.update(replay.frame(8))
    _shows(page, replay.frame(8))
    page.conceal = False
    keyless = dataclasses.replace(replay.frame(2), key=())
    page.update(keyless)
    _shows(page, keyless)
    page.update(replay.frame(3))  # after a frame with no key: worked out again
    _shows(page, replay.frame(3))
    # and the leader still shows its own
    leader.update(replay.frame(12))
    _shows(leader, replay.frame(12))


def test_frames_with_equal_keys_are_equal_and_other_replays_differ():
    trace = CATALOGUE.get("general")
    a, b = Replay(trace, (0, 0)), Replay(trace, (0, 0))
    other = Replay(trace, (0, 0), granularity="phase")
    for i in range(len(a)):
        fa, fb = a.frame(i), b.frame(i)
        assert fa.key == fb.key and fa.key != other.frame(min(i, len(other) - 1)).key
        for field in dataclasses.fields(fa):
            x, y = getattr(fa, field.name), getattr(fb, field.name)
            if isinstance(x, np.ndarray):
                assert np.array_equal(x, y, equal_nan=True), field.name
    assert len({a.frame(i).key for i in range(len(a))}) == len(a)


class _Trace:
    """Stands for a trace: the cache holds traces weakly, by identity."""


def test_the_oldest_steps_go_first_and_a_trace_takes_its_steps_with_it():
    cache = SharedSteps(max_bytes=3 * 800)
    trace = _Trace()
    for i in range(5):
        cache.put(trace, None, ("s", i), [("P", True, {"v": np.zeros(100)})])  # 800 bytes each
    assert len(cache) == 3 and cache.bytes == 2400
    assert cache.get(trace, None, ("s", 0)) is None and cache.get(trace, None, ("s", 4))
    cache.put(trace, None, ("big", 0), [("P", True, {"v": np.zeros(1000)})])  # over the bound
    assert cache.get(trace, None, ("big", 0)) is None
    # lists are each caller's own copy; arrays are shared and read-only
    cache.put(trace, None, ("l", 0), [("P", False, {"flags": [True, None]})])
    got = cache.get(trace, None, ("l", 0))[0][2]["flags"]
    got.append("mine")
    assert cache.get(trace, None, ("l", 0))[0][2]["flags"] == [True, None]
    with pytest.raises(ValueError):
        cache.get(trace, None, ("s", 4))[0][2]["v"][0] = 1.0
    del trace
    gc.collect()
    assert len(cache) == 0 and cache.bytes == 0


def test_a_trace_collected_while_the_cache_is_busy_does_not_wait_for_it():
    """A finalizer that ran with the lock held by its own thread must not wait for it.

    Collections start on any allocation, so a trace caught in a reference
    cycle can be collected while this very thread is inside the cache; a
    finalizer that took the lock then would wait forever (the server hangs).
    """
    import threading

    cache = SharedSteps()
    trace = _Trace()
    trace.itself = trace  # a cycle: only a collection frees it
    cache.put(trace, None, ("s", 0), [("P", True, {"v": np.zeros(10)})])
    del trace
    done = threading.Event()

    def collect_while_busy():
        with cache._lock:
            gc.collect()
        done.set()

    worker = threading.Thread(target=collect_while_busy, daemon=True)
    worker.start()
    worker.join(10)
    assert done.is_set(), "the collection waited for the cache's own lock"
    assert len(cache) == 0 and cache.bytes == 0
