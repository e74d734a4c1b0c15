"""The access log's model (vizmm.trace.access_log): its one decoder and the views its readers share.

Oracles: logs built here by hand, event by event, from the layout the module
documents (the packed word ``op | flag << 3 | (arr + 1) << 5 | line << 13``,
the fields of ``FIELDS``), and the decoding and views each derived by hand
from what the events say (which thread stored what, in which order).
"""

import numpy as np
import pytest

from vizmm.trace import access_log as A
from vizmm.trace.access_log import AccessLog, one_element, unpack, unpack_field_major

# The arrays of a tiled kernel's log, by id: M, N, P global; Mds, Nds shared.
M, N, P, MDS, NDS = 0, 1, 2, 3, 4
NAMES = ("M", "N", "P", "Mds", "Nds")
SPACES = ("global", "global", "global", "shared", "shared")
T = 2  # TILE_WIDTH: threads (0, 0), (0, 1), (1, 0), (1, 1)


def word(op, flag, arr, line):
    """The packed first word, from the layout the module's comment gives."""
    return op + flag * 8 + (arr + 1) * 32 + line * 8192


def event(op, arr=-1, idx=-1, row=A.NO_INDEX, col=A.NO_INDEX, tag=A.TAG_COMPUTED, src=None,
          flag=A.OK, epoch=0, tick=-1, line=1):  # fmt: skip
    """One decoded event (``FIELDS`` order); ``src``: (src_arr, src_idx, src_row, src_col)."""
    sa, si, sr, sc = src if src is not None else (-1, -1, -1, -1)
    return [op, flag, arr, idx, row, col, tag, sa, si, sr, sc, epoch, tick, line]


def tag_of(arr, flat):
    return flat * A.TAG_ARRAYS + arr


def make(threads, cap=12, names=NAMES, spaces=SPACES, shape=(2, 2, 2)):
    """A one-block log of ``threads`` (lists of events, thread ``ty * T + tx``)."""
    nt = len(threads)
    ev = np.zeros((1, nt, cap, A.NF), np.int32)
    vals = np.zeros((1, nt, cap, 2), np.float64)
    cnt = np.zeros((1, nt), np.int32)
    for t, events in enumerate(threads):
        for n, e in enumerate(events):
            ev[0, t, n] = e
            vals[0, t, n] = (10 * t + n, 100.0 + n)
        cnt[0, t] = len(events)
    return AccessLog(ev, vals, cnt, names, spaces, ((0, 0),), T, shape, "Pvalue")


def tile_thread(ty, tx, m_el, n_el, reads):
    """Thread (ty, tx) of Fig. 5.9 for one phase: copy M and N into its slot, a
    barrier, the k loop's reads (``reads``: (Mds slot, M element, Nds slot, N element))
    and its store of P."""
    s = ty * T + tx
    out = [
        event(A.LOAD, M, m_el, line=3),
        event(A.STORE, MDS, s, ty, tx, tag_of(M, m_el), (M, m_el, *divmod(m_el, 2)), line=3),
        event(A.LOAD, N, n_el, line=4),
        event(A.STORE, NDS, s, ty, tx, tag_of(N, n_el), (N, n_el, *divmod(n_el, 2)), line=4),
        event(A.ARRIVE, epoch=0, tick=s, line=5),
        event(A.RELEASE, epoch=1, tick=4 + s, line=5),
    ]
    for ms, me, ns, ne in reads:
        out.append(event(A.LOAD, MDS, ms, *divmod(ms, T), tag_of(M, me), epoch=1, line=7))
        out.append(event(A.LOAD, NDS, ns, *divmod(ns, T), tag_of(N, ne), epoch=1, line=7))
    out.append(event(A.STORE, P, s, ty, tx, epoch=1, line=9))
    return out


def book_block():
    """M, N, P 2 x 2, TILE_WIDTH 2: one phase; thread (ty, tx) reads Mds[ty][k], Nds[k][tx]."""
    return make(
        [
            tile_thread(
                ty,
                tx,
                ty * 2 + tx,
                ty * 2 + tx,
                [(ty * T + q, ty * 2 + q, q * T + tx, q * 2 + tx) for q in range(2)],
            )
            for ty in range(T)
            for tx in range(T)
        ]  # fmt: skip
    )


# ------------------------------------------------------------------ the decoder
def test_unpack_reads_the_packed_word_and_fills_what_a_kind_fixes():
    cap = 3
    ev = np.full((2, cap, A.NF), 77, np.int32)  # what was there before: garbage
    vals = np.full((2, cap, 2), 9.5)
    # thread 0, event 0: a load of M[5] (row 1, col 1), line 7, epoch 0
    ev[0, 0, 0] = word(A.LOAD, A.OK, M, 7)
    ev[0, 0, A.IDX : A.COL + 1] = (5, 1, 1)
    ev[0, 0, A.EPOCH] = 0
    vals[0, 0] = (3.0, 0.0)
    # thread 0, event 1: an arrival at line 9, ticket 4
    ev[0, 1, 0] = word(A.ARRIVE, 0, -1, 9)
    ev[0, 1, A.EPOCH], ev[0, 1, A.TICK] = 0, 4
    vals[0, 1] = (8.0, 1.5)
    # thread 1, event 0: a skipped store into Mds slot 2, tag -1 guarding M[9], line 8
    ev[1, 0, 0] = word(A.STORE, A.SOURCE_OUT_OF_BOUNDS, MDS, 8)
    ev[1, 0, A.IDX : A.EPOCH + 1] = (2, 0, 2, -1, 0, 9, 1, 2, 1)
    vals[1, 0] = (0.0, 2.0)
    events, values = unpack(ev, vals, np.array([2, 1], np.int32), SPACES)
    assert events[0, 0].tolist() == [1, 0, M, 5, 1, 1, -4, -1, -1, -1, -1, 0, -1, 7]
    assert events[0, 1].tolist() == [3, 0, -1, -1, -1, -1, -4, -1, -1, -1, -1, 0, 4, 9]
    assert events[1, 0].tolist() == [2, 2, MDS, 2, 0, 2, -1, 0, 9, 1, 2, 1, -1, 8]
    assert values[0, :2].tolist() == [[3.0, 0.0], [0.0, 1.5]]  # a barrier's value: 0.0
    assert not events[0, 2].any() and not events[1, 1:].any()  # past each count: zeros
    assert not values[0, 2].any() and not values[1, 1:].any()


def test_a_term_keeps_every_field_it_wrote_but_its_row_and_col():
    ev = np.zeros((1, 1, A.NF), np.int32)
    ev[0, 0, 0] = word(A.TERM, 0, -1, 12)
    ev[0, 0, A.IDX : A.TICK + 1] = (0, 5, 5, tag_of(M, 1), N, tag_of(N, 2), 5, 5, 3, 7)
    events, _ = unpack(ev, np.zeros((1, 1, 2)), np.array([1], np.int32), SPACES)
    # row, col and the source's row, col: NO_INDEX; the tick -1 (not a barrier)
    x = A.NO_INDEX
    assert events[0, 0].tolist() == [A.TERM, 0, -1, 0, x, x, 8, N, 17, x, x, 3, -1, 12]


def test_the_field_major_layout_reads_as_the_per_thread_one():
    rng = np.random.default_rng(1)
    tt, cap = 3, 4
    rows = rng.integers(0, 50, (tt, cap, A.NF)).astype(np.int32)
    rows[..., A.OP] = word(A.LOAD, 0, rng.integers(0, 5, (tt, cap)), 6)
    vals = rng.random((tt, cap, 2))
    counts = np.array([4, 2, 0], np.int32)
    flat = np.ascontiguousarray(rows.transpose(1, 2, 0)).ravel()  # (cap, NF, threads)
    flat_vals = np.ascontiguousarray(vals.transpose(1, 2, 0)).ravel()
    got = unpack_field_major(flat, flat_vals, counts, cap, SPACES)
    want = unpack(rows.copy(), vals.copy(), counts, SPACES)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


# ------------------------------------------------------------------ the model
def test_bad_arrays_are_refused_with_what_was_wrong():
    log = book_block()
    with pytest.raises(ValueError, match="int32"):
        AccessLog(log.events.astype(np.int64), log.values, log.counts, NAMES, SPACES,
                  ((0, 0),), T, (2, 2, 2))  # fmt: skip
    with pytest.raises(ValueError, match="0..cap"):
        AccessLog(log.events, log.values, log.counts + 99, NAMES, SPACES, ((0, 0),), T, (2, 2, 2))
    with pytest.raises(ValueError, match="one name and one space"):
        AccessLog(log.events, log.values, log.counts, NAMES[:4], SPACES, ((0, 0),), T, (2, 2, 2))
    with pytest.raises(ValueError, match="one \\(by, bx\\) per"):
        AccessLog(log.events, log.values, log.counts, NAMES, SPACES, (), T, (2, 2, 2))


def test_a_kernel_without_m_n_and_p_is_refused():
    log = make([[event(A.END)]], names=("A", "B", "S"), spaces=("global", "global", "shared"))
    with pytest.raises(ValueError, match="three global arrays"):
        log.matmul()


def test_events_of_a_thread_in_order_and_the_book_roles():
    log = book_block()
    # thread (0, 1): 6 events of the tile loads and barrier, 2 x 2 reads, the store of P
    assert log.counts.tolist() == [[11, 11, 11, 11]]
    assert log.thread(0, 1).shape == (11, A.NF)
    assert log.thread(0, 1)[-1, A.OP] == A.STORE and log.thread(0, 1)[-1, A.ARR] == P
    assert log.valid[0, 1].tolist() == [True] * 11 + [False]
    assert log.ty_tx(3) == (1, 1)
    assert log.matmul() == (M, N, P)
    assert log.tiles(performed=True) == {MDS: M, NDS: N}
    assert log.mds(performed=False) == MDS
    assert log.tile_for(N, performed=True) == NDS


def test_phases_start_at_each_store_into_mds_performed_or_not():
    a = [event(A.STORE, MDS, 0, 0, 0, tag_of(M, 0), (M, 0, 0, 0))]
    skipped = event(A.STORE, MDS, 0, 0, 0, A.TAG_ZERO, (M, 9, 4, 1),
                    flag=A.SOURCE_OUT_OF_BOUNDS)  # fmt: skip
    log = make([[event(A.END), *a, event(A.END), skipped, event(A.END)]])
    # before the first store -1; the store itself starts phase 0; a skipped store a phase
    # only when stores not performed count
    assert log.phases(performed=False)[0, 0, :5].tolist() == [-1, 0, 0, 1, 1]
    assert log.phases(performed=True)[0, 0, :5].tolist() == [-1, 0, 0, 0, 0]
    assert log.phases_of(None, performed=False)[0, 0, :5].tolist() == [-1] * 5


def test_factors_are_the_slots_read_and_pair_into_terms_in_read_order():
    log = book_block()
    side, element = log.factors(performed=True, global_loads=False)
    # thread (1, 0) reads Mds[1][0] (M_{1,0} = flat 2), Nds[0][0] (N_{0,0} = 0), then
    # Mds[1][1] (M_{1,1} = 3), Nds[1][0] (N_{1,0} = 2): events 6 to 9
    t = 1 * T + 0
    assert side[0, t, :11].tolist() == [-1] * 6 + [M, N, M, N] + [-1]
    assert element[0, t, 6:10].tolist() == [2, 0, 3, 2]
    assert log.pairs(0, t, side) == [(-1, 6, 7), (-1, 8, 9)]
    assert log.pairs(0, t, side, log.phases(performed=True)) == [(0, 6, 7), (0, 8, 9)]


def test_a_tile_loads_global_half_is_no_factor_but_a_lone_global_load_is():
    store = event(A.STORE, MDS, 0, 0, 0, tag_of(M, 1), (M, 1, 0, 1))
    lone = event(A.LOAD, N, 3, 1, 1)
    log = make([[event(A.LOAD, M, 1, 0, 1), store, lone, event(A.END)]])
    side, element = log.factors(performed=False, global_loads=True)
    assert side[0, 0, :4].tolist() == [-1, -1, N, -1]
    assert element[0, 0, 2] == 3
    side, _ = log.factors(performed=False, global_loads=False)
    assert (side[0, 0] == -1).all()


def test_a_slot_holding_no_element_is_a_factor_on_its_arrays_side():
    zero = event(A.STORE, MDS, 0, 0, 0, A.TAG_ZERO, (M, 9, 4, 1))
    never = event(A.LOAD, NDS, 1, 0, 1, A.TAG_NEVER)
    copy = event(A.STORE, NDS, 0, 0, 0, tag_of(N, 0), (N, 0, 0, 0))
    log = make([[zero, copy, event(A.LOAD, MDS, 0, 0, 0, A.TAG_ZERO), never]])
    side, element = log.factors(performed=True, global_loads=False)
    assert side[0, 0, 2:4].tolist() == [M, N]
    assert element[0, 0, 2:4].tolist() == [A.TAG_ZERO, A.TAG_NEVER]


def test_p_stores_elements_and_shared_accesses_by_epoch():
    log = book_block()
    pst = log.p_stores()
    assert [np.flatnonzero(pst[0, t]).tolist() for t in range(4)] == [[10]] * 4
    assert log.element(log.thread(0, 3)[10], 2) == (1, 1)
    flat = event(A.STORE, P, 3)  # a 1-D store: (row, col) from the flat index
    assert log.element(np.array(flat), 2) == (1, 1)
    acc = log.shared_accesses(0)
    # Mds[0][1] (slot 1): stored by thread (0, 1) in epoch 0, read in epoch 1 by threads
    # (0, 0) and (0, 1) (Mds[ty][k] at k = 1: their event 8)
    assert acc[(MDS, 1, 0)] == [(1, 1)]
    assert acc[(MDS, 1, 1)] == [(0, 8), (1, 8)]
    # the store that left the tag thread 0 read from Mds[0][1]: thread 1's, event 1
    assert log.last_store(0, log.thread(0, 0)[8]) == (1, 1)


def test_one_block_and_the_first_threads():
    log = book_block()
    two = dataclass_two_blocks(log)
    one = two.block(1, threads=2)
    assert one.events.shape == (1, 2, 12, A.NF) and one.blocks == ((0, 1),)
    np.testing.assert_array_equal(one.events[0], log.events[0, :2])
    assert two.head(3).counts.shape == (2, 3)


def dataclass_two_blocks(log):
    return AccessLog(
        np.concatenate([log.events, log.events]),
        np.concatenate([log.values, log.values]),
        np.concatenate([log.counts, log.counts]),
        NAMES, SPACES, ((0, 0), (0, 1)), T, (2, 2, 4),
    )  # fmt: skip


def test_one_element_is_every_term_of_one_element_once():
    k, l = 3, 4
    terms = [(1 * k + q, q * l + 2) for q in range(k)]  # P_{1,2}: M[1][q] * N[q][2]
    assert one_element(terms, k, l) == (1, 2)
    assert one_element(terms[:2], k, l) is None  # one missing
    assert one_element([*terms, terms[0]], k, l) is None  # one twice
    assert one_element([*terms[:2], (0, 2)], k, l) is None  # M[0][0]: another row
