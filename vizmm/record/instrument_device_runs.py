"""The lean variant's runs on the device: loads counted once per loop (:mod:`.instrument_runs`).

The rewrite counts a loop's affine loads after the loop with
:func:`lg_run` / :func:`lg_run2` (the iterations an ``if`` test lets load
worked out by :func:`cond_lo` / :func:`cond_hi`), loads them in the loop with
:func:`lg_peek` (or :func:`lg_peek_or`, which counts when the run could not
be), and :func:`expand_runs` adds the runs into the read counters after the
launch. Split from :mod:`.instrument_device`, whose conventions these follow.
"""

import functools

from vizmm_kernels import _target
from vizmm_kernels._hw import device
from vizmm_kernels._target import cuda

from .instrument_device import _documented, inside


@device
@_documented
def lg_peek(A, i, zero):
    """``A[i]`` not counted (its read counted as a run after the loop); out of bounds zero."""
    ok = inside(i, A.shape[0])
    v = A[i if ok else 0]  # branch-free, as lg_load
    return v if ok else zero


@device
@_documented
def lg_peek2(A, r, c, zero):
    """``A[r, c]`` not counted (a run's); outside, zero."""
    ok = inside(r, A.shape[0]) & inside(c, A.shape[1])
    v = A[r if ok else 0, c if ok else 0]
    return v if ok else zero


@device
@_documented
def lg_count(A, i, reads):
    """Count a read of ``A[i]`` inside ``A`` (its load moved ahead, its run not counted)."""
    ok = inside(i, A.shape[0])
    cuda.atomic.add(reads, i if ok else 0, 1 if ok else 0)


@device
@_documented
def lg_count2(A, r, c, reads):
    """Count a read of ``A[r, c]`` at ``r * ncols + c`` where it lies inside ``A``."""
    ok = inside(r, A.shape[0]) & inside(c, A.shape[1])
    cuda.atomic.add(reads, r * A.shape[1] + c if ok else 0, 1 if ok else 0)


@device
@_documented
def lg_peek_or(A, i, reads, zero, counted):
    """``A[i]``, its read counted here unless ``counted`` (its run was); out of bounds zero.

    Parameters
    ----------
    counted : bool
        The run of this load is counted after the loop.
    """
    ok = inside(i, A.shape[0])
    j = i if ok else 0
    v = A[j]
    if not counted:
        cuda.atomic.add(reads, j, 1 if ok else 0)
    return v if ok else zero


@device
@_documented
def lg_peek_or2(A, r, c, reads, zero, counted):
    """``A[r, c]``, counted at ``r * ncols + c`` unless ``counted``; outside, zero.

    Parameters
    ----------
    counted : bool
        The run of this load is counted after the loop.
    """
    ok = inside(r, A.shape[0]) & inside(c, A.shape[1])
    rr = r if ok else 0
    cc = c if ok else 0
    v = A[rr, cc]
    if not counted:
        cuda.atomic.add(reads, rr * A.shape[1] + cc, 1 if ok else 0)
    return v if ok else zero


@device
def whole(x):
    """Whether ``x`` is a whole number (always, for an integer): a guard's run is exact.

    Parameters
    ----------
    x : int or float
        A term of an ``if`` test around a counted load.

    Returns
    -------
    bool
    """
    return x == int(x)


@device
def cond_lo(d0, dd, op, lo):
    """The first iteration, at least ``lo``, from which ``d0 + dd*k op 0`` can hold.

    Parameters
    ----------
    d0, dd : int or float
        The test's difference (left side minus right) at iteration 0 and its step; whole.
    op : int
        0: ``<``, 1: ``<=``, 2: ``>``, 3: ``>=`` (a constant).
    lo : int
        The first iteration so far.

    Returns
    -------
    int
        ``lo`` or later; :data:`RUN_KEY` (never reached) when the test never holds.
    """
    d, s = int(d0), int(dd)
    e = -1 - d if op == 0 else (-d if op == 1 else (d - 1 if op == 2 else d))
    de = -s if op <= 1 else s
    if e >= 0:
        return lo
    if de <= 0:
        return RUN_KEY
    k = (de - 1 - e) // de
    return k if k > lo else lo


@device
def cond_hi(d0, dd, op, hi):
    """One past the last iteration, at most ``hi``, at which ``d0 + dd*k op 0`` holds.

    Parameters
    ----------
    d0, dd : int or float
        As :func:`cond_lo`'s.
    op : int
        As :func:`cond_lo`'s.
    hi : int
        The bound so far (the trip count at first).

    Returns
    -------
    int
        ``hi`` or less (no bound when the test holds from some iteration on).
    """
    d, s = int(d0), int(dd)
    e = -1 - d if op == 0 else (-d if op == 1 else (d - 1 if op == 2 else d))
    de = -s if op <= 1 else s
    if de >= 0 or e < 0:
        return hi
    k = e // (-de) + 1
    return k if k < hi else hi


#: A run's key: ``stride * RUN_KEY + length`` in the int64 ``code`` array (0: no run yet).
RUN_KEY = 1 << 32


@device
def run_first(a, b, n):
    """The first iteration ``k >= 0`` at which ``a + b*k`` lies in ``[0, n)`` (unbounded above).

    Parameters
    ----------
    a, b : int
        The run's index at iteration 0 and its step per iteration (elements; any sign).
    n : int
        The extent (elements).

    Returns
    -------
    int
        That iteration; when ``b == 0`` and ``a`` is outside, a huge one (never reached).
    """
    if b > 0:
        return 0 if a >= 0 else (b - 1 - a) // b
    if b < 0:
        return 0 if a < n else (a - n - b) // (-b)
    return 0 if inside(a, n) else RUN_KEY


@device
def run_end(a, b, c, n):
    """One past the last iteration ``k < c`` at which ``a + b*k`` lies in ``[0, n)``.

    Parameters
    ----------
    a, b : int
        The run's index at iteration 0 and its step (elements; any sign).
    c : int
        The loop's trip count.
    n : int
        The extent (elements).

    Returns
    -------
    int
        At most ``c``; at most :func:`run_first` when no iteration is inside.
    """
    if b > 0:
        if a >= n:
            return 0
        e = (n - 1 - a) // b + 1
        return e if e < c else c
    if b < 0:
        if a < 0:
            return 0
        e = a // (-b) + 1
        return e if e < c else c
    return c


@device
def count_run(reads, mult, code, s, b, n):
    """Count one read of each of ``s, s+b, ..., s+(n-1)b`` (``b > 0``, ``n >= 2``): as one run.

    The thread claims ``code[s]`` for its run's shape (stride, length) and adds
    1 to ``mult[s]``; when another run of another shape holds ``code[s]``, it
    counts each element with an atomic of its own.

    Parameters
    ----------
    reads : device array of int32
        The array's per-element read counters (flat).
    mult : device array of int32
        Per element, how many runs of the shape ``code`` holds start there.
    code : device array of int64
        Per element, ``stride * RUN_KEY + length`` of the runs starting there; 0: none yet.
    s, b, n : int
        The run's first element, stride and length (elements).
    """
    key = b * RUN_KEY + n
    old = key + 1  # a stride or a length too large for a key: counted element by element
    if b < RUN_KEY // 2 and n < RUN_KEY:
        old = cuda.atomic.cas(code, s, 0, key)
    if old == 0 or old == key:
        cuda.atomic.add(mult, s, 1)
    else:
        for k in range(n):
            cuda.atomic.add(reads, s + b * k, 1)


@device
def lg_run(reads, mult, code, a, b, lo, hi, n):
    """Count, after a loop, the reads ``lg_load`` would count of ``a + b*k``, ``lo <= k < hi``.

    Parameters
    ----------
    reads, mult, code : device arrays
        As :func:`count_run`'s.
    a, b : int
        The load's flat index at the loop's first iteration and its step per iteration.
    lo, hi : int
        The iterations that load (the trip count, or where its ``if`` holds).
    n : int
        The array's extent (elements).
    """
    k0 = run_first(a, b, n)
    k0 = lo if lo > k0 else k0
    k1 = run_end(a, b, hi, n)
    if k1 > k0:
        if b == 0 or k1 - k0 == 1:
            cuda.atomic.add(reads, a + b * k0, k1 - k0)
        elif b > 0:
            count_run(reads, mult, code, a + b * k0, b, k1 - k0)
        else:
            count_run(reads, mult, code, a + b * (k1 - 1), -b, k1 - k0)


@device
def lg_run2(reads, mult, code, ar, br, ac, bc, lo, hi, nr, nc):
    """:func:`lg_run` of a 2-D load ``A[ar + br*k, ac + bc*k]``, counted at ``row * nc + col``.

    Parameters
    ----------
    reads, mult, code : device arrays
        As :func:`count_run`'s.
    ar, br, ac, bc : int
        The row's and the column's index at the first iteration and their steps.
    lo, hi : int
        The iterations that load.
    nr, nc : int
        The array's rows and columns.
    """
    k0 = run_first(ar, br, nr)
    k0 = lo if lo > k0 else k0
    k1 = run_end(ar, br, hi, nr)
    f = run_first(ac, bc, nc)
    e = run_end(ac, bc, hi, nc)
    k0 = f if f > k0 else k0
    k1 = e if e < k1 else k1
    if k1 > k0:
        a = ar * nc + ac
        b = br * nc + bc
        if b == 0 or k1 - k0 == 1:
            cuda.atomic.add(reads, a + b * k0, k1 - k0)
        elif b > 0:
            count_run(reads, mult, code, a + b * k0, b, k1 - k0)
        else:
            count_run(reads, mult, code, a + b * (k1 - 1), -b, k1 - k0)


@device
def _expand_at(s, mult, code, reads):
    """Element ``s``'s runs added: ``reads[s + b*k] += mult[s]`` for ``k < n`` (``code[s]``)."""
    if s < mult.shape[0]:
        m = mult[s]
        if m != 0:
            key = code[s]
            b = key // RUN_KEY
            for k in range(key - b * RUN_KEY):
                cuda.atomic.add(reads, s + b * k, m)


def _expand_runs(r32, r64):
    """After the lean variant: each run's multiplicity added to every element of the run.

    The lean variant's two buffers (:mod:`.instrument_lean`); ``blockIdx.y``
    picks the run array, whose offsets and size ``r64``'s header holds:
    ``r64[1 + 4 j : 5 + 4 j]`` = its ``_mult_X`` offset in ``r32``, its
    ``_code_X`` offset in ``r64``, its ``_reads_X`` offset in ``r32``, its
    size. One thread per element ``s`` (a launch over the largest run
    array's size): where ``mult[s]`` runs of stride ``b`` and length ``n``
    (``code[s]``) start, ``reads[s + b*k] += mult[s]`` for ``k < n``. All the
    run arrays take one launch: a launch costs the host more than this
    kernel takes on a GPU at Width 1024.

    Parameters
    ----------
    r32 : device array of int32
        The lean launch's int32 buffer (``_mult_X``, ``_reads_X`` in it).
    r64 : device array of int64
        Its int64 buffer (the header, ``_code_X`` in it).
    """
    h = 1 + 4 * cuda.blockIdx.y
    om = r64[h]
    oc = r64[h + 1]
    orr = r64[h + 2]
    n = r64[h + 3]
    s = cuda.grid(1)
    if s < n:
        _expand_at(s, r32[om : om + n], r64[oc : oc + n], r32[orr : orr + n])


@functools.cache
def expand_runs():
    """:func:`_expand_runs` compiled as a kernel for this target (once).

    Returns
    -------
    kernel
        Launch it ``[((size + 255) // 256, k), 256, stream](r32, r64)``, ``size``
        the largest run array's, ``k`` the run arrays.
    """
    return _target.cuda.jit(_expand_runs)
