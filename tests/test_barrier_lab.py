"""The barrier lab in the simulator: hazards, wrong reads, and reads that explain P.

Oracles, each independent of vizmm's analysis code:

* Section 5.4's dependences enumerated by hand: thread (ty, tx) writes
  ``Mds[ty][tx]`` / ``Nds[ty][tx]`` and reads ``Mds[ty][k]`` / ``Nds[k][tx]``;
  without barrier 1 every read of another thread's slot races with that
  thread's write of the same phase (RAW), without barrier 2 with its write of
  the next phase (WAR).
* The recorded reads explain the output: per thread, the float32 sum over
  phases and k of (value read from Mds) x (value read from Nds), in the
  kernel's order, is the P element the kernel stored.
* NumPy's product: P elements that differ from ``M @ N`` are the wrong ones.
* The simulator's schedule "in turns" (threads run one at a time, in
  threadIdx order, until their next barrier), written out by hand: a read is
  wrong exactly when the schedule puts the writer's write on the wrong side of it.
"""

import importlib.resources

import numpy as np
import pytest

import vizmm
from vizmm.analysis import hazards as hz

# (kernel, Width, TILE_WIDTH): square kernels; 'tiled' on a multiple of TILE_WIDTH and
# once not (Fig. 5.9's wrong-element / out-of-allocation loads), 'boundary' on any size.
SIZES = [("tiled", 4, 2), ("tiled", 6, 3), ("tiled", 3, 2), ("boundary", 5, 2), ("boundary", 7, 4)]
DROPS = [None, 1, 2, (1, 2)]


def _id(v):
    return "-".join(map(str, v)) if isinstance(v, tuple) else str(v)


@pytest.fixture(scope="module")
def traces():
    out = {}
    for kernel, width, T in SIZES:
        for drop in DROPS:
            out[(kernel, width, T, drop)] = vizmm.record(
                width=width,
                tile_width=T,
                kernel=kernel,
                drop_barrier=drop,
                reads=True,
                seed=3,
                backend="simulator",
                quiet=True,
            )
    return out


def _expected_pairs(trace, kind_rule):
    """Hand enumeration of (kind, block, reader phase, write phase, array, slot, reader, k)."""
    T, nph = trace.tile_width, trace.n_phases
    j = trace.shape[0]
    out = set()
    for by, bx in trace.detail_blocks.tolist():
        for pr in range(nph):
            for pw in range(nph):
                kind = kind_rule(pr, pw)
                if kind is None:
                    continue
                for ty in range(T):
                    for tx in range(T):
                        for k in range(T):
                            for array, slot in (("Mds", (ty, k)), ("Nds", (k, tx))):
                                if slot == (ty, tx):
                                    continue  # a thread's own slot: program order
                                # Fig. 5.9 skips a load that would fall past the end
                                # of the allocation: no write, so no hazard.
                                if trace.kernel == "tiled" and not _performed(
                                    trace, array, pw, by, bx, slot, j
                                ):
                                    continue
                                out.add((kind, (by, bx), pr, pw, array, slot, (ty, tx), k))
    return out


def _performed(trace, array, ph, by, bx, slot, width):
    T = trace.tile_width
    wy, wx = slot  # the writer thread
    if array == "Mds":
        row, col = by * T + wy, ph * T + wx
    else:
        row, col = ph * T + wy, bx * T + wx
    return row * width + col < width * width


def _rows(trace):
    return {
        (
            str(r["kind"]),
            tuple(r["block"]),
            int(r["phase"]),
            int(r["write_phase"]),
            str(r["array"]),
            tuple(r["slot"]),
            tuple(r["reader"]),
            int(r["k"]),
        )
        for r in vizmm.hazards(trace)
    }


RULES = {
    None: lambda pr, pw: None,
    1: lambda pr, pw: "RAW" if pw == pr else None,
    2: lambda pr, pw: "WAR" if pw == pr + 1 else None,
    (1, 2): lambda pr, pw: "RAW" if pw <= pr else "WAR",
}


@pytest.mark.parametrize("drop", DROPS, ids=_id)
@pytest.mark.parametrize("size", SIZES, ids=_id)
def test_hazards_are_the_dependences_left_unordered(traces, size, drop):
    trace = traces[(*size, drop)]
    got = _rows(trace)
    assert got == _expected_pairs(trace, RULES[drop])
    if drop is None:
        assert got == set()
    for row in vizmm.hazards(trace):
        assert tuple(row["writer"]) == tuple(row["slot"])  # each slot has one writer
        assert row["read_line"] > 0 and row["write_line"] > 0


@pytest.mark.parametrize("size", SIZES, ids=_id)
def test_without_barrier_1_every_slot_read_in_the_k_loop_has_a_raw_hazard(traces, size):
    trace = traces[(*size, 1)]
    T = trace.tile_width
    hazards = vizmm.hazards(trace)
    assert set(hazards["kind"]) == {"RAW"} or T == 1
    slots = {
        (tuple(r["block"]), int(r["phase"]), str(r["array"]), tuple(r["slot"])) for r in hazards
    }
    for by, bx in trace.detail_blocks.tolist():
        for ph in range(trace.n_phases):
            for a in ("Mds", "Nds"):
                for row in range(T):
                    for col in range(T):
                        if trace.kernel == "tiled" and not _performed(
                            trace, a, ph, by, bx, (row, col), trace.shape[0]
                        ):
                            continue
                        assert ((by, bx), ph, a, (row, col)) in slots


def test_both_barriers_kept_also_for_old_traces():
    """Traces recorded before the lab (the shipped ones) load, keep both barriers, no hazards."""
    folder = importlib.resources.files("vizmm") / "data"
    for name in ("fig5-8", "fig5-11", "medium"):
        trace = vizmm.load(str(folder / f"{name}.vizmm"))
        assert "drop_barrier" not in trace.meta
        assert len(vizmm.hazards(trace)) == 0
        assert trace.shared_reads.size == 0
        assert len(hz.wrong_reads(trace)) == 0


@pytest.mark.parametrize("drop", DROPS, ids=_id)
@pytest.mark.parametrize("size", SIZES, ids=_id)
def test_recorded_reads_explain_every_stored_p_element(traces, size, drop):
    trace = traces[(*size, drop)]
    T = trace.tile_width
    width = trace.shape[0]
    mv = trace.read_values[..., 0]
    nv = trace.read_values[..., 1]
    sums = {}  # linear index of the P element stored -> the sums of the threads storing it
    for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
        for ty in range(T):
            for tx in range(T):
                row, col = by * T + ty, bx * T + tx
                if trace.p_write[s, ty, tx] not in (1, 3):  # written (3: the row wrap)
                    continue
                acc = np.float32(0)
                for ph in range(trace.n_phases):
                    for k in range(T):
                        acc = np.float32(acc + mv[s, ph, ty, tx, k] * nv[s, ph, ty, tx, k])
                sums.setdefault(row * width + col, []).append(acc)
    assert sorted(sums) == list(range(width * width))
    for index, candidates in sums.items():
        # Where the unchecked kernel's row wrap made two threads store one element,
        # the element holds one of their sums.
        assert trace.P.ravel()[index] in candidates, index


@pytest.mark.parametrize("drop", DROPS, ids=_id)
@pytest.mark.parametrize("size", SIZES, ids=_id)
def test_tags_and_values_travel_together(traces, size, drop):
    trace = traces[(*size, drop)]
    tags = trace.shared_reads
    vals = trace.read_values
    assert (tags != hz.TAG_NOT_RECORDED).all()
    for a, mat in ((0, trace.M), (1, trace.N)):
        t, v = tags[..., a], vals[..., a]
        known = t >= 0
        np.testing.assert_array_equal(v[known], mat.ravel()[t[known]])
        assert (v[t == hz.TAG_ZERO_FILL] == 0).all()


@pytest.mark.parametrize("drop", DROPS, ids=_id)
@pytest.mark.parametrize(
    "size", [s for s in SIZES if s[0] == "boundary" or s[1] % s[2] == 0], ids=_id
)
def test_wrong_p_elements_are_those_that_differ_from_numpy(traces, size, drop):
    trace = traces[(*size, drop)]
    ref = trace.M.astype(np.float64) @ trace.N.astype(np.float64)
    wrong = hz.wrong_p(trace)
    np.testing.assert_array_equal(wrong, trace.P != ref)
    if drop is None:
        assert not wrong.any() and len(hz.wrong_reads(trace)) == 0


def _turn_order(T):
    # The simulator in turns runs threads in threadIdx order, tx fastest.
    return {(ty, tx): ty * T + tx for ty in range(T) for tx in range(T)}


@pytest.mark.parametrize("drop", [1, 2], ids=_id)
@pytest.mark.parametrize("size", [("tiled", 4, 2), ("boundary", 5, 2), ("tiled", 6, 3)], ids=_id)
def test_wrong_reads_follow_the_turns_schedule(traces, size, drop):
    """Derived from the schedule alone: who had written what when each thread read."""
    trace = traces[(*size, drop)]
    T = trace.tile_width
    order = _turn_order(T)
    expect = set()
    for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
        for ph in range(trace.n_phases):
            for (ty, tx), t in order.items():
                for k in range(T):
                    for array, writer in (("Mds", (ty, k)), ("Nds", (k, tx))):
                        w = order[writer]
                        if drop == 1:
                            # Loads and k loop of a phase share one turn: a writer that
                            # comes later in the order has not written this phase's tile.
                            wrong = w > t
                        else:
                            # Without barrier 2 a thread's turn is its k loop of phase ph,
                            # then its loads of phase ph + 1: earlier writers have already
                            # overwritten the slot (the last phase has no next loads).
                            wrong = w < t and ph + 1 < trace.n_phases
                        if wrong and _differs(trace, s, ph, array, writer, drop):
                            expect.add(((by, bx), ph, (ty, tx), k, array))
    got = {
        (tuple(r["block"]), int(r["phase"]), tuple(r["thread"]), int(r["k"]), str(r["array"]))
        for r in hz.wrong_reads(trace)
    }
    assert got == expect
    assert expect  # the race shows in this schedule


def _differs(trace, s, ph, array, writer, drop):
    """Whether the slot's other content (old or new tile) is another element at all."""
    exp = hz.expected_tags(trace)  # independent of the reads: from the load records
    a = 0 if array == "Mds" else 1
    other_ph = ph - 1 if drop == 1 else ph + 1
    other = exp[s, other_ph, a][writer] if other_ph >= 0 else hz.TAG_NEVER_WRITTEN
    return other != exp[s, ph, a][writer]


def test_recordings_in_the_simulator_are_reproducible():
    a, b = (
        vizmm.record(
            width=6,
            tile_width=3,
            kernel="tiled",
            drop_barrier=(1, 2),
            seed=1,
            backend="simulator",
            quiet=True,
        )
        for _ in range(2)
    )
    np.testing.assert_array_equal(a.shared_reads, b.shared_reads)
    np.testing.assert_array_equal(a.read_values, b.read_values)
    np.testing.assert_array_equal(a.P, b.P)
    assert a.meta["sim_schedule"] == "threads"


def test_trace_file_keeps_the_lab(tmp_path, traces):
    trace = traces[("tiled", 4, 2, 1)]
    path = trace.save(tmp_path / "race.vizmm")
    back = vizmm.load(path)
    assert back.meta["drop_barrier"] == [1]
    np.testing.assert_array_equal(back.shared_reads, trace.shared_reads)
    np.testing.assert_array_equal(back.read_values, trace.read_values)
    assert len(vizmm.hazards(back)) == len(vizmm.hazards(trace)) > 0


def test_source_shows_the_books_barrier_lines(traces):
    src = traces[("boundary", 5, 2, 1)].meta["source"]
    assert "BARRIER" not in src
    assert src.count("    cuda.syncthreads()") == 2


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kernel="tiled", drop_barrier=3), "drop_barrier"),
        (dict(kernel="naive", drop_barrier=1), "no __syncthreads"),
        (dict(kernel="general", reads=True), "no such reads"),
    ],
)
def test_bad_lab_arguments(kwargs, match):
    with pytest.raises(vizmm.RecordError, match=match):
        vizmm.record(width=4, tile_width=2, backend="simulator", quiet=True, **kwargs)


def test_cli_records_without_a_barrier(tmp_path):
    from vizmm.cli import main

    out = tmp_path / "race.vizmm"
    args = ["record", "--width", "4", "-t", "2", "-k", "tiled", "-b", "simulator", "-q"]
    assert main([*args, "--drop-barrier", "1,2", "-o", str(out)]) == 0
    trace = vizmm.load(out)
    assert trace.meta["drop_barrier"] == [1, 2]
    assert trace.meta["reads_recorded"] is True
    assert set(vizmm.hazards(trace)["kind"]) == {"RAW", "WAR"}


@pytest.mark.parametrize("value", ["3", "1,3", "", "one"])
def test_cli_refuses_a_bad_barrier(tmp_path, capsys, value):
    from vizmm.cli import main

    code = main(["record", "--width", "4", "--drop-barrier", value, "-o", str(tmp_path / "x")])
    assert code == 2
    assert "--drop-barrier" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
