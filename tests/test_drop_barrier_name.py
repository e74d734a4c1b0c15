"""One name for a removed ``__syncthreads()`` from the record form to the frame: drop_barrier."""

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from vizmm.replay import Replay, Sub  # noqa: E402
from vizmm.serve.catalogue import Catalogue, parse_key  # noqa: E402


def test_the_form_the_key_the_record_the_trace_and_the_frame_say_drop_barrier():
    from vizmm_apps.dashboard import RecordForm

    form = RecordForm(lambda spec: None, kernel="tiled", j=4, tile_width=2)
    form.barriers = "no barrier 1"
    spec = form.spec()
    assert spec.drop_barrier == (1,)
    assert spec.key.endswith(":d1")
    assert parse_key(spec.key) == spec  # the URL's key names the same recording
    assert spec.record_kwargs()["drop_barrier"] == (1,)
    trace = Catalogue().get(spec.key)
    assert trace.meta["drop_barrier"] == [1]
    replay = Replay(trace, (0, 0))
    assert replay.drop_barrier == (1,)
    # Section 5.4 with the first __syncthreads() gone: the replay has no
    # barrier-1 step, and every frame says which barrier was removed.
    assert not any(s.sub in (Sub.ARRIVE_1, Sub.RELEASE_1) for s in replay.steps)
    assert any(s.sub == Sub.RELEASE_2 for s in replay.steps)
    frames = [replay.frame(i) for i in (0, len(replay) - 1)]
    assert all(f.drop_barrier == (1,) for f in frames)
    assert len(frames[0].struck_lines) == 1  # one source line struck out


def test_a_recording_that_keeps_both_barriers_names_none():
    spec = parse_key("rec:tiled:4x4x4:T2:s0:simulator")
    assert spec.drop_barrier == () and "drop_barrier" not in spec.record_kwargs()
