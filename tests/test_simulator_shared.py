"""The simulator's shared memory is one array per line, even when threads race to make it.

Numba's simulator makes a ``cuda.shared.array`` the first time a line asks
for it, in two steps (look up, then make and store); threads of the first
block that reach the line together can each make their own "shared" array,
and a correct kernel then computes wrong Pvalues. vizmm's simulator driver
makes the look-up and the making one step (``safe_shared``).
"""

import threading
import time

import numpy as np
import pytest

pytest.importorskip("numba")


class _SlowNumPy:
    """NumPy whose ``empty`` and ``zeros`` take 20 ms: a race between look-up and store made wide.

    Every thread that looks the line up before the first array is stored
    finds none; where the look-up and the making are not one step, each of
    them then makes an array of its own (no luck of the scheduler needed).
    """

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def _slow(make):
        def made(*args, **kwargs):
            time.sleep(0.02)
            return make(*args, **kwargs)

        return made

    empty = staticmethod(_slow(np.empty))
    zeros = staticmethod(_slow(np.zeros))


def _arrays_made(shared, n_threads=16):
    """How many distinct arrays ``n_threads`` threads got from one line, all starting at once."""
    got = [None] * n_threads
    start = threading.Barrier(n_threads)

    def work(i):
        start.wait()
        got[i] = shared.array((4, 4), np.float32)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len({id(a) for a in got})


def test_the_race_is_seen_in_numbas_own_shared_memory(monkeypatch):
    """The oracle: Numba's own two-step look-up gives threads arrays of their own here."""
    from numba.cuda.simulator import kernelapi

    monkeypatch.setattr(kernelapi, "np", _SlowNumPy())
    assert _arrays_made(kernelapi.FakeCUDAShared(0)) > 1


@pytest.mark.parametrize("zero", [False, True])
def test_threads_of_a_block_share_one_array_per_line(zero, monkeypatch):
    from vizmm.record import simulator
    from vizmm.record.simulator import safe_shared

    monkeypatch.setattr(simulator, "np", _SlowNumPy())
    assert [_arrays_made(safe_shared(0, zero=zero)) for _ in range(3)] == [1, 1, 1]


def test_zeroed_shared_starts_at_zero_and_plain_keeps_the_line():
    from vizmm.record.simulator import safe_shared

    z = safe_shared(0, zero=True)
    a = z.array((3, 3), np.float32)
    assert a.dtype == np.float32 and a.shape == (3, 3) and not a.any()
    s = safe_shared(0)
    arrays = [s.array((2, 2), np.float32) for _ in range(3)]  # one line, three calls
    assert arrays[0] is arrays[1] is arrays[2]
