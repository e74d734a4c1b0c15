"""The simulator's shared memory is one array per line, even when threads race to make it.

Numba's simulator makes a ``cuda.shared.array`` the first time a line asks
for it, in two steps (look up, then make and store); threads of the first
block that reach the line together can each make their own "shared" array,
and a correct kernel then computes wrong Pvalues. vizmm's simulator driver
makes the look-up and the making one step (``safe_shared``).
"""

import sys
import threading

import numpy as np
import pytest

pytest.importorskip("numba")


def _arrays_made(shared, n_threads=64):
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


@pytest.mark.slow
@pytest.mark.parametrize("zero", [False, True])
def test_threads_of_a_block_share_one_array_per_line(zero):
    from vizmm.record.simulator import safe_shared

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        # Numba's own FakeCUDAShared gives some thread its own array in about
        # 1 trial of 70 this way; 300 trials would see it with 98% probability.
        counts = [_arrays_made(safe_shared(0, zero=zero)) for _ in range(300)]
    finally:
        sys.setswitchinterval(old)
    assert max(counts) == 1


def test_zeroed_shared_starts_at_zero_and_plain_keeps_the_line():
    from vizmm.record.simulator import safe_shared

    z = safe_shared(0, zero=True)
    a = z.array((3, 3), np.float32)
    assert a.dtype == np.float32 and a.shape == (3, 3) and not a.any()
    s = safe_shared(0)
    arrays = [s.array((2, 2), np.float32) for _ in range(3)]  # one line, three calls
    assert arrays[0] is arrays[1] is arrays[2]
