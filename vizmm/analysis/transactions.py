"""Memory transactions of the tiles: global sectors and segments, shared-memory banks.

PMPP (4th ed.) Section 5.4 (Fig. 5.9/5.13) has the threads of a block copy
one tile of M and one of N into shared memory per phase; the lecture slides
add two rules: *coalesce global memory accesses* and *avoid shared-memory bank
conflicts* ("single cycle if no bank conflicts"). This module counts, from a
trace's records, what the hardware sees of those accesses, per block, phase
and warp, and in total the two figures Nsight Compute reports: sectors per
request (global loads of the tiles) and bank conflicts per request (shared
loads of the k loop).

The model
---------
*Warps.* Thread ``(ty, tx)`` of a ``T x T`` block is thread ``t = ty*T + tx``;
warp ``w`` holds threads ``32w .. 32w + 31`` (the last warp is partial when
``T*T`` is not a multiple of 32).

*Global loads.* Each warp executes one load instruction per tile and phase
(``M[...]`` and ``N[...]``): one *request* when at least one of its threads
performs the load (kind ``LOADED`` or ``WRONG_ELEMENT``; a zero-fill or an
out-of-allocation load is no access). The address of a thread's load comes
from its record: element ``(row, col)`` of M (``j x k``) or N (``k x l``),
row-major, 4-byte floats, at byte ``4 * (row * ncols + col)`` from the start
of the array (``cudaMalloc`` aligns arrays to 256 bytes, so sector and
segment boundaries are multiples of 32 and 128 bytes from the start).
A request touches the distinct 32-byte *sectors* and 128-byte *segments*
(cache lines) of its threads' addresses; the *ideal* for the bytes it moves
(4 per active thread) is ``ceil(bytes / 32)`` sectors and
``ceil(bytes / 128)`` segments.

*Shared memory.* 32 banks of 4-byte words; word ``w`` of an array lies in
bank ``w mod 32`` (banks are counted from the start of each array: Mds and
Nds are laid out by the compiler, and a shift of the whole array changes no
count). A warp's shared access needs as many *wavefronts* as the largest
number of *distinct* words any one bank is asked for: threads reading the
same word share it (a broadcast, counted once). ``n``-way conflict:
``n = wavefronts``; it costs ``n - 1`` replays, which Nsight Compute counts as
bank conflicts (``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld``).

Which word a thread reads or writes depends on the kernel's Mds/Nds layout,
known from the kernel variant (not recorded; :data:`LAYOUTS`):

================  ================  ================  ==================  ========
kernel            thread (ty, tx)   thread (ty, tx)   k loop reads        Nds
                  stores M into     stores N into                         columns
================  ================  ================  ==================  ========
tiled, boundary,  ``Mds[ty][tx]``   ``Nds[ty][tx]``   ``Mds[ty][k]``,     ``T``
general, dynamic                                      ``Nds[k][tx]``
uncoalesced       ``Mds[tx][ty]``   ``Nds[tx][ty]``   as Fig. 5.9         ``T``
conflict          ``Mds[ty][tx]``   ``Nds[tx][ty]``   ``Mds[ty][k]``,     ``T``
                                                      ``Nds[tx][k]``
padded            ``Mds[ty][tx]``   ``Nds[tx][ty]``   as conflict         ``T + 1``
================  ================  ================  ==================  ========

Every thread of a block runs the k loop (also threads without a P element),
so each warp makes ``T`` reads of Mds and ``T`` of Nds per phase; the loads
into shared memory are one store request per warp and tile (Fig. 5.13's
zero-fill stores too: the compiler merges the two branches' stores).

The *logical slot* of an element is where Fig. 5.9 puts it: ``Mds[r][c]``
holds ``M[by*T + r][ph*T + c]``, ``Nds[r][c]`` holds ``N[ph*T + r][bx*T + c]``.
Every kernel here puts the same elements into the same logical slots; the
layout says in which *physical word* a logical slot lies
(:meth:`Layout.slot_words`) and which thread fills it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from vizmm.trace import WARP_SIZE, Access, Trace, ceil_div

__all__ = [
    "BANKS",
    "LAYOUTS",
    "SECTOR_BYTES",
    "SEGMENT_BYTES",
    "WARP_SIZE",
    "WORD_BYTES",
    "Layout",
    "MemoryTransactions",
    "TransactionsError",
    "TransactionsOverlay",
    "WarpAccess",
    "WarpDetail",
    "bank_wavefronts",
    "vector_wavefronts",
    "layout_of",
    "memory_transactions",
    "sector_spans",
    "transactions_overlay",
    "warp_detail",
]

WORD_BYTES = 4  #: bytes per shared-memory bank word (and per float32 element)
BANKS = 32  #: shared-memory banks
SECTOR_BYTES = 32  #: bytes per global-memory sector
SEGMENT_BYTES = 128  #: bytes per global-memory segment (an L1 cache line)
_ELEMS_PER_SECTOR = SECTOR_BYTES // WORD_BYTES
_ELEMS_PER_SEGMENT = SEGMENT_BYTES // WORD_BYTES


class TransactionsError(ValueError):
    """The trace cannot give memory transactions; the message says why and what would."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """How one kernel variant maps threads to Mds/Nds words (see the module's table).

    Attributes
    ----------
    kernel : str
    m_store_transposed, n_store_transposed : bool
        Thread ``(ty, tx)`` fills logical slot ``[tx][ty]`` instead of ``[ty][tx]``
        (the uncoalesced kernel's swapped roles).
    nds_transposed : bool
        Logical ``Nds[r][c]`` is stored at physical ``Nds[c][r]`` (the conflict and
        padded kernels: the k loop then reads ``Nds[tx][k]``).
    nds_pad : int
        Extra columns of the physical Nds (1 for the padded kernel).
    """

    kernel: str
    m_store_transposed: bool = False
    n_store_transposed: bool = False
    nds_transposed: bool = False
    nds_pad: int = 0

    def slot_words(self, tile_width: int) -> tuple[np.ndarray, np.ndarray]:
        """Physical word of each logical slot of Mds and of Nds.

        Parameters
        ----------
        tile_width : int
            ``T``.

        Returns
        -------
        mds, nds : ndarray of int64, (T, T)
            ``[r, c]``: the word (4-byte units from the array's start) that holds
            logical ``Mds[r][c]`` / ``Nds[r][c]``; its bank is ``word % 32``.
        """
        T = tile_width
        r, c = np.indices((T, T), dtype=np.int64)
        mds = r * T + c
        pitch = T + self.nds_pad
        nds = c * pitch + r if self.nds_transposed else r * pitch + c
        return mds, nds

    def store_slots(self, tile_width: int) -> tuple[np.ndarray, np.ndarray]:
        """Logical slot each thread fills: ``(T, T, 2)`` arrays ``[ty, tx] -> (r, c)``, M then N.

        Parameters
        ----------
        tile_width : int
            TILE_WIDTH, 1 to 32.
        """
        T = tile_width
        ty, tx = np.indices((T, T), dtype=np.int64)
        straight = np.stack([ty, tx], axis=-1)
        swapped = np.stack([tx, ty], axis=-1)
        return (
            swapped if self.m_store_transposed else straight,
            swapped if self.n_store_transposed else straight,
        )

    def read_words(self, tile_width: int) -> tuple[np.ndarray, np.ndarray]:
        """Words each thread reads in the k loop: ``(T, T, T)`` arrays ``[k, ty, tx]``, Mds, Nds.

        Thread ``(ty, tx)`` multiplies logical ``Mds[ty][k]`` by logical ``Nds[k][tx]``
        (Fig. 5.9 line 24); the layout places them.

        Parameters
        ----------
        tile_width : int
            TILE_WIDTH, 1 to 32.
        """
        T = tile_width
        mds, nds = self.slot_words(T)
        k = np.arange(T)[:, None, None]
        ty = np.arange(T)[None, :, None]
        tx = np.arange(T)[None, None, :]
        return (
            np.broadcast_to(mds[ty, k], (T, T, T)).copy(),
            np.broadcast_to(nds[k, tx], (T, T, T)).copy(),
        )

    def store_words(self, tile_width: int) -> tuple[np.ndarray, np.ndarray]:
        """Word each thread writes when it loads its tile elements: ``(T, T)`` arrays, Mds, Nds.

        Parameters
        ----------
        tile_width : int
            TILE_WIDTH, 1 to 32.
        """
        mds, nds = self.slot_words(tile_width)
        ms, ns = self.store_slots(tile_width)
        return mds[ms[..., 0], ms[..., 1]], nds[ns[..., 0], ns[..., 1]]


#: Layout of each tiled kernel (the naive kernel has no shared memory).
LAYOUTS = {
    "tiled": Layout("tiled"),
    "boundary": Layout("boundary"),
    "general": Layout("general"),
    "uncoalesced": Layout("uncoalesced", m_store_transposed=True, n_store_transposed=True),
    "conflict": Layout("conflict", nds_transposed=True),
    "padded": Layout("padded", nds_transposed=True, nds_pad=1),
    "dynamic": Layout("dynamic"),  # Fig. 5.14: Mds[ty*TILE_WIDTH+tx], the same words
}


def layout_of(kernel: str) -> Layout:
    """The :class:`Layout` of kernel ``kernel``.

    Parameters
    ----------
    kernel : str
        A tiled kernel of :data:`vizmm.trace.KERNELS`.

    Raises
    ------
    TransactionsError
        For the naive kernel (no tiles in shared memory) or an unknown name.
    """
    if kernel == "naive":
        raise TransactionsError(
            "the naive kernel (Fig. 3.11) loads no tiles into shared memory; memory "
            f"transactions of the tiles need one of: {', '.join(LAYOUTS)}"
        )
    if kernel not in LAYOUTS:
        raise TransactionsError(
            f"no Mds/Nds layout is known for kernel {kernel!r}; known: {', '.join(LAYOUTS)}"
        )
    return LAYOUTS[kernel]


def _warps(n_threads: int) -> np.ndarray:
    """``(n_warps, 32)`` thread index of each lane, -1 past the last thread."""
    nw = ceil_div(n_threads, WARP_SIZE)
    lanes = np.arange(nw * WARP_SIZE, dtype=np.int64)
    return np.where(lanes < n_threads, lanes, -1).reshape(nw, WARP_SIZE)


def _by_warp(a: np.ndarray, fill) -> np.ndarray:
    """Regroup the last axis (``T*T`` threads) into ``(n_warps, 32)`` lanes, padding ``fill``."""
    n = a.shape[-1]
    nw = ceil_div(n, WARP_SIZE)
    pad = nw * WARP_SIZE - n
    if pad:
        a = np.concatenate([a, np.full(a.shape[:-1] + (pad,), fill, a.dtype)], axis=-1)
    return a.reshape(a.shape[:-1] + (nw, WARP_SIZE))


def _distinct(ids: np.ndarray) -> np.ndarray:
    """Distinct non-negative values along the last axis (-1 entries ignored)."""
    s = np.sort(ids, axis=-1)
    new = np.ones(s.shape, bool)
    new[..., 1:] = s[..., 1:] != s[..., :-1]
    return (new & (s >= 0)).sum(axis=-1)


def bank_wavefronts(words: np.ndarray) -> np.ndarray:
    """Wavefronts of shared accesses: the most distinct words asked of one bank.

    Parameters
    ----------
    words : ndarray of int, (..., 32)
        Word (4-byte units) each lane of a warp accesses; -1 for a lane that
        makes no access.

    Returns
    -------
    ndarray of int64, (...)
        ``n`` of the ``n``-way bank conflict (1: conflict-free, including any
        broadcast of one word to many lanes); 0 where no lane accesses. The
        access costs ``n - 1`` replays (Nsight Compute's bank conflicts).
    """
    words = np.asarray(words, np.int64)
    active = words >= 0
    # Distinct (bank, word) pairs: sort by word, drop repeats, count per bank.
    s = np.sort(np.where(active, words, -1), axis=-1)
    first = np.ones(s.shape, bool)
    first[..., 1:] = s[..., 1:] != s[..., :-1]
    keep = first & (s >= 0)
    bank = np.where(keep, s % BANKS, BANKS)  # BANKS: a bin for dropped lanes
    flat = bank.reshape(-1, bank.shape[-1])
    counts = np.zeros((flat.shape[0], BANKS + 1), np.int64)
    np.add.at(counts, (np.arange(flat.shape[0])[:, None], flat), 1)
    return counts[:, :BANKS].max(axis=-1).reshape(words.shape[:-1])


def sector_spans(ids, unit_elems: int, ncols: int, size: int) -> list[tuple[int, int, int]]:
    """Where sectors (or segments) lie in a row-major matrix, as row spans.

    Parameters
    ----------
    ids : iterable of int
        Sector (``unit_elems`` = 8) or segment (32) numbers: byte address // 32
        (or // 128) from the array's start.
    unit_elems : int
        Elements (4-byte floats) per sector or segment.
    ncols : int
        Columns of the matrix (elements).
    size : int
        Elements of the matrix (``nrows * ncols``).

    Returns
    -------
    list of (row, col0, col1)
        Elements ``row, col0 .. col1 - 1`` of each sector, split where it wraps
        to the next row; parts past the end of the matrix are left out.
    """
    out = []
    for s in sorted({int(i) for i in ids}):
        a, b = s * unit_elems, min(size, (s + 1) * unit_elems)
        while a < b:
            row, col = divmod(a, ncols)
            end = min(b, (row + 1) * ncols)
            out.append((row, col, col + end - a))
            a = end
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class MemoryTransactions:
    """The memory transactions of a trace's tile loads and k loops (see the module docstring).

    Shapes: ``nd`` blocks recorded per thread (:attr:`blocks`), ``nph`` phases,
    ``nw = ceil(T*T / 32)`` warps, ``T`` = TILE_WIDTH; a last axis of 2 is
    ``[M, N]`` (global) or ``[Mds, Nds]`` (shared).

    Attributes
    ----------
    kernel : str
    tile_width : int
    layout : Layout
    blocks : ndarray of int32, (nd, 2)
        ``(by, bx)`` of each block counted (the trace's detailed blocks).
    warp_threads : ndarray of int64, (nw, 32)
        Thread index ``ty*T + tx`` of each lane; -1 for lanes past the block.
    global_requests : ndarray of int64, (nd, nph, nw, 2)
        1 where the warp's tile load was performed by at least one lane, else 0.
    global_bytes : ndarray of int64, (nd, nph, nw, 2)
        Bytes the request moves (4 per lane that loads).
    global_sectors, global_segments : ndarray of int64, (nd, nph, nw, 2)
        Distinct 32-byte sectors / 128-byte segments the request touches.
    ideal_sectors, ideal_segments : ndarray of int64, (nd, nph, nw, 2)
        ``ceil(bytes / 32)`` / ``ceil(bytes / 128)``: the fewest that could move them.
    global_sector_ids, global_segment_ids : ndarray of int64, (nd, nph, nw, 32, 2)
        Sector (byte address // 32) and segment (// 128) of each lane's load;
        -1 where the lane performs none.
    shared_read_words : ndarray of int64, (T, nw, 32, 2)
        Word each lane reads at each ``k`` (the same in every block and phase).
    shared_read_wavefronts : ndarray of int64, (T, nw, 2)
        ``n`` of the ``n``-way conflict of each warp's read at each ``k``.
    shared_store_words : ndarray of int64, (nw, 32, 2)
        Word each lane writes when it fills its Mds / Nds slot.
    shared_store_wavefronts : ndarray of int64, (nw, 2)
    shared_ld : ndarray of int64, (T, nw, 2, 3)
        What the k loop's shared loads count, per ``k`` at which an instruction
        is issued, warp and array: ``[requests, wavefronts, bank conflicts]``. With
        ``vector_loads=False`` one 32-bit request per ``k`` (wavefronts = the
        n-way conflict, conflicts ``n - 1``); with ``vector_loads=True`` the
        128-bit requests of :func:`vector_wavefronts` sit at their first ``k``.
    vector_loads : bool
        Whether :attr:`shared_ld` models the compiler's 128-bit shared loads.
    n_phases : int
    """

    kernel: str
    tile_width: int
    layout: Layout
    blocks: np.ndarray
    warp_threads: np.ndarray
    global_requests: np.ndarray
    global_bytes: np.ndarray
    global_sectors: np.ndarray
    global_segments: np.ndarray
    ideal_sectors: np.ndarray
    ideal_segments: np.ndarray
    global_sector_ids: np.ndarray
    global_segment_ids: np.ndarray
    shared_read_words: np.ndarray
    shared_read_wavefronts: np.ndarray
    shared_store_words: np.ndarray
    shared_store_wavefronts: np.ndarray
    shared_ld: np.ndarray
    vector_loads: bool
    n_phases: int

    @property
    def n_warps(self) -> int:
        """Warps per block, ``ceil(T*T / 32)``."""
        return self.warp_threads.shape[0]

    def counters(self) -> dict[str, int]:
        """Totals over the counted blocks, named after Nsight Compute's metrics.

        Returns
        -------
        dict
            ``global_ld_requests``, ``global_ld_sectors``, ``global_ld_segments``,
            ``global_ld_ideal_sectors``, ``global_ld_bytes`` (tile loads of M and N);
            ``shared_ld_requests``, ``shared_ld_wavefronts``,
            ``shared_ld_bank_conflicts`` (k-loop reads of Mds and Nds);
            ``shared_st_requests``, ``shared_st_wavefronts``,
            ``shared_st_bank_conflicts`` (the stores into Mds and Nds). Counts.
        """
        nd = len(self.blocks)
        reps = nd * self.n_phases
        rd_req, rd_wf, rd_conf = (int(v) * reps for v in self.shared_ld.sum(axis=(0, 1, 2)))
        st_req = int((self.shared_store_wavefronts > 0).sum()) * reps
        st_wf = int(self.shared_store_wavefronts.sum()) * reps
        return {
            "global_ld_requests": int(self.global_requests.sum()),
            "global_ld_sectors": int(self.global_sectors.sum()),
            "global_ld_segments": int(self.global_segments.sum()),
            "global_ld_ideal_sectors": int(self.ideal_sectors.sum()),
            "global_ld_bytes": int(self.global_bytes.sum()),
            "shared_ld_requests": rd_req,
            "shared_ld_wavefronts": rd_wf,
            "shared_ld_bank_conflicts": rd_conf,
            "shared_st_requests": st_req,
            "shared_st_wavefronts": st_wf,
            "shared_st_bank_conflicts": st_wf - st_req,
        }

    @property
    def sectors_per_request(self) -> float:
        """32-byte sectors per global load request of the tiles (Nsight Compute's figure).

        4.0 for the book's kernel with TILE_WIDTH 32 (one 128-byte row segment per
        warp), 32.0 for the column-walking kernel; NaN when no load was recorded.
        """
        c = self.counters()
        n = c["global_ld_requests"]
        return c["global_ld_sectors"] / n if n else np.nan

    @property
    def segments_per_request(self) -> float:
        """128-byte segments per global load request of the tiles; NaN without loads."""
        c = self.counters()
        return (
            c["global_ld_segments"] / c["global_ld_requests"] if c["global_ld_requests"] else np.nan
        )

    @property
    def bank_conflicts_per_request(self) -> float:
        """Bank conflicts (replays) per shared load request of the k loop (Nsight's figure)."""
        c = self.counters()
        return (
            c["shared_ld_bank_conflicts"] / c["shared_ld_requests"]
            if c["shared_ld_requests"]
            else np.nan
        )

    def block_index(self, block) -> int:
        """Row of ``block = (by, bx)`` in the per-block arrays.

        Parameters
        ----------
        block : tuple of (int, int)
            (by, bx).

        Raises
        ------
        KeyError
            When the block was not counted (not recorded per thread).
        """
        key = (int(block[0]), int(block[1]))
        hits = np.flatnonzero((self.blocks[:, 0] == key[0]) & (self.blocks[:, 1] == key[1]))
        if not len(hits):
            raise KeyError(f"block {key} was not recorded per thread; no transactions for it")
        return int(hits[0])

    def warp_of(self, thread) -> int:
        """Warp of thread ``(ty, tx)``: ``(ty*T + tx) // 32``.

        Parameters
        ----------
        thread : tuple of (int, int)
            (ty, tx), threadIdx.y and threadIdx.x.
        """
        return (int(thread[0]) * self.tile_width + int(thread[1])) // WARP_SIZE

    def warp_rows(self, block, phase: int, k: int | None = None) -> list[dict]:
        """One row per warp of a block and phase, for tables and views.

        Parameters
        ----------
        block : tuple of (int, int)
            The block (by, bx) whose warps are counted; one recorded per thread.
        phase : int
            The phase ``ph`` of that block, 0 to ``n_phases - 1``.
        k : int, optional
            A step of the k loop, 0 to TILE_WIDTH - 1: adds its shared-memory reads.

        Returns
        -------
        list of dict
            Per warp ``w``: ``warp``, ``threads`` (first, last thread index), and
            for M and N ``{m,n}_requests``, ``{m,n}_sectors``, ``{m,n}_segments``,
            ``{m,n}_ideal_sectors``; with ``k`` also ``mds_way`` / ``nds_way`` (the
            n-way conflict of the warp's read at that k, 0 when none).
        """
        b = self.block_index(block)
        rows = []
        for w in range(self.n_warps):
            lanes = self.warp_threads[w]
            row = {"warp": w, "threads": (int(lanes[0]), int(lanes[lanes >= 0].max()))}
            for i, name in enumerate("mn"):
                row[f"{name}_requests"] = int(self.global_requests[b, phase, w, i])
                row[f"{name}_sectors"] = int(self.global_sectors[b, phase, w, i])
                row[f"{name}_segments"] = int(self.global_segments[b, phase, w, i])
                row[f"{name}_ideal_sectors"] = int(self.ideal_sectors[b, phase, w, i])
            if k is not None:
                row["mds_way"] = int(self.shared_read_wavefronts[k, w, 0])
                row["nds_way"] = int(self.shared_read_wavefronts[k, w, 1])
            rows.append(row)
        return rows

    def summary(self) -> str:
        """A few lines of totals (used by ``vizmm info`` style output)."""
        c = self.counters()
        return "\n".join(
            [
                f"global loads  {c['global_ld_requests']} requests, {c['global_ld_sectors']} "
                f"sectors ({self.sectors_per_request:.2f} per request; ideal "
                f"{c['global_ld_ideal_sectors']}), {c['global_ld_segments']} segments",
                f"shared reads  {c['shared_ld_requests']} requests, "
                f"{c['shared_ld_bank_conflicts']} bank conflicts "
                f"({self.bank_conflicts_per_request:.2f} per request)",
                f"shared stores {c['shared_st_requests']} requests, "
                f"{c['shared_st_bank_conflicts']} bank conflicts",
            ]
        )


def vector_wavefronts(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts and bank conflicts of 128-bit shared loads (``LDS.128``) of one warp.

    Each lane reads 16 bytes: words ``w .. w + 3`` (``w`` a multiple of 4), one
    *chunk* ``w // 4`` covering banks ``w % 32 .. w % 32 + 3``. The rule, fitted to
    Nsight Compute on an H200 (sm_90; ``docs/ncu_transactions.md``): the warp is
    served by quarter-warps (8 lanes, 128 bytes); a quarter needs as many
    wavefronts as the most distinct chunks in one group of 4 banks (a chunk read
    by several lanes counts once), and its bank conflicts are that number minus
    1; the two quarters of a half-warp share one wavefront when together they
    ask no bank group for two distinct chunks.

    Parameters
    ----------
    words : ndarray of int, (..., 32)
        First word of each lane's 16 bytes; -1 for a lane that makes no access.

    Returns
    -------
    wavefronts, conflicts : ndarray of int64, (...)
    """
    words = np.asarray(words, np.int64)
    chunk = np.where(words >= 0, words // 4, -1).reshape(words.shape[:-1] + (4, 8))
    group = np.where(chunk >= 0, chunk % (BANKS // 4), BANKS)

    def most(ch, gr):
        # the most distinct chunks in one bank group, per row of lanes
        key = np.where(ch >= 0, gr * (1 << 40) + ch, -1)
        s = np.sort(key, axis=-1)
        first = np.ones(s.shape, bool)
        first[..., 1:] = s[..., 1:] != s[..., :-1]
        g = np.where(first & (s >= 0), s >> 40, BANKS // 4)
        flat = g.reshape(-1, g.shape[-1])
        counts = np.zeros((flat.shape[0], BANKS // 4 + 1), np.int64)
        np.add.at(counts, (np.arange(flat.shape[0])[:, None], flat), 1)
        return counts[:, : BANKS // 4].max(axis=-1).reshape(g.shape[:-1])

    q = most(chunk, group)  # (..., 4) per quarter
    halves = most(
        chunk.reshape(words.shape[:-1] + (2, 16)), group.reshape(words.shape[:-1] + (2, 16))
    )  # (..., 2)
    qq = q.reshape(q.shape[:-1] + (2, 2))
    merged = (halves <= 1) & (qq.sum(axis=-1) > 0)
    wavefronts = np.where(merged, 1, qq.sum(axis=-1)).sum(axis=-1)
    conflicts = np.maximum(q - 1, 0).sum(axis=-1)
    return wavefronts, conflicts


def _shared_ld(rd: np.ndarray, rd_wf: np.ndarray, T: int, vector: bool) -> np.ndarray:
    """``(T, nw, 2, 3)`` requests, wavefronts and conflicts of the k loop's loads."""
    out = np.zeros(rd_wf.shape + (3,), np.int64)
    active = rd_wf > 0
    out[..., 0] = active
    out[..., 1] = rd_wf
    out[..., 2] = np.maximum(rd_wf - 1, 0)
    if not vector or T % 4:
        return out
    for i in range(2):
        w = rd[..., i]  # (T, nw, 32)
        groups = w.reshape(T // 4, 4, *w.shape[1:])  # (G, 4, nw, 32)
        base = groups[:, :1]
        lanes = base >= 0
        contiguous = (groups == base + np.arange(4)[None, :, None, None]) | ~lanes
        if not (contiguous.all() and ((base % 4 == 0) | ~lanes).all()):
            continue  # the compiler keeps 32-bit loads (not provably 16-byte runs)
        wf, conf = vector_wavefronts(groups[:, 0])  # (G, nw)
        out[..., i, :] = 0
        out[::4, :, i, 0] = active[::4, :, i]
        out[::4, :, i, 1] = wf
        out[::4, :, i, 2] = conf
    return out


def memory_transactions(trace: Trace, vector_loads: bool = False) -> MemoryTransactions:
    """Global sectors/segments of the tile loads and shared banks of the k loop, per warp.

    PMPP 4th ed., Section 5.4 (Fig. 5.9 / 5.13), with the lecture slides' rules
    on coalescing and bank conflicts; the model is in the module docstring.

    Parameters
    ----------
    trace : Trace
        A trace of a tiled kernel with blocks recorded per thread. Only those
        blocks are counted (all of them unless the trace was recorded with a
        window).
    vector_loads : bool
        Count the k loop's shared loads as the compiler issues them for sm_90
        (seen in the SASS of every kernel here at TILE_WIDTH 8, 16 and 32): four
        consecutive ``k`` whose words are one 16-byte-aligned run for every lane
        (``Mds[ty][k]``; ``Nds[tx][k]`` of the conflict kernel) become one
        128-bit load (:func:`vector_wavefronts`); other reads stay 32-bit. By
        default (False) every read of the source is one 32-bit request, as the
        book's code says. Only :attr:`MemoryTransactions.shared_ld` and the
        totals change.

    Returns
    -------
    MemoryTransactions

    Raises
    ------
    TransactionsError
        For the naive kernel, a kernel without a known layout, or a trace that
        recorded no block per thread (aggregated counts hold no addresses).
    """
    if not isinstance(trace, Trace):
        raise TransactionsError(
            f"memory_transactions needs a vizmm Trace, got {type(trace).__name__}"
        )
    layout = layout_of(trace.kernel)
    if len(trace.detail_blocks) == 0:
        raise TransactionsError(
            "this trace holds no block recorded per thread, so no addresses of single loads: "
            "record with every block detailed or name blocks with window=[(by, bx), ...]"
        )
    T = trace.tile_width
    _, k, l = trace.shape
    nd, nph = trace.loads.shape[:2]
    warp_threads = _warps(T * T)

    # Global loads: element (row, col) -> linear index -> sector, segment.
    sector_ids, segment_ids, requests, nbytes = [], [], [], []
    for base, ncols in ((0, k), (3, l)):
        rec = trace.loads[..., base : base + 3].reshape(nd, nph, T * T, 3).astype(np.int64)
        kind, row, col = rec[..., 0], rec[..., 1], rec[..., 2]
        active = (kind == Access.LOADED) | (kind == Access.WRONG_ELEMENT)
        lin = np.where(active, row * ncols + col, -1)
        lin = _by_warp(lin, -1)  # (nd, nph, nw, 32)
        act = lin >= 0
        sector_ids.append(np.where(act, lin // _ELEMS_PER_SECTOR, -1))
        segment_ids.append(np.where(act, lin // _ELEMS_PER_SEGMENT, -1))
        requests.append(act.any(axis=-1).astype(np.int64))
        nbytes.append(act.sum(axis=-1).astype(np.int64) * WORD_BYTES)
    sec = np.stack(sector_ids, axis=-1)  # (nd, nph, nw, 32, 2)
    seg = np.stack(segment_ids, axis=-1)
    gbytes = np.stack(nbytes, axis=-1)
    g_sectors = np.stack([_distinct(sec[..., i]) for i in range(2)], axis=-1)
    g_segments = np.stack([_distinct(seg[..., i]) for i in range(2)], axis=-1)

    # Shared memory: words from the layout, the same in every block and phase.
    rd_m, rd_n = layout.read_words(T)  # (T, T, T) [k, ty, tx]
    rd = np.stack(
        [_by_warp(w.reshape(T, T * T), -1) for w in (rd_m, rd_n)], axis=-1
    )  # (T, nw, 32, 2)
    st_m, st_n = layout.store_words(T)
    st = np.stack([_by_warp(w.reshape(T * T), -1) for w in (st_m, st_n)], axis=-1)  # (nw, 32, 2)
    rd_wf = np.stack([bank_wavefronts(rd[..., i]) for i in range(2)], axis=-1)
    st_wf = np.stack([bank_wavefronts(st[..., i]) for i in range(2)], axis=-1)

    def ro(a):
        a = np.ascontiguousarray(a)
        a.setflags(write=False)
        return a

    return MemoryTransactions(
        kernel=trace.kernel,
        tile_width=T,
        layout=layout,
        blocks=ro(trace.detail_blocks.copy()),
        warp_threads=ro(warp_threads),
        global_requests=ro(np.stack(requests, axis=-1)),
        global_bytes=ro(gbytes),
        global_sectors=ro(g_sectors),
        global_segments=ro(g_segments),
        ideal_sectors=ro(ceil_div(gbytes, SECTOR_BYTES)),
        ideal_segments=ro(ceil_div(gbytes, SEGMENT_BYTES)),
        global_sector_ids=ro(sec),
        global_segment_ids=ro(seg),
        shared_read_words=ro(rd),
        shared_read_wavefronts=ro(rd_wf),
        shared_store_words=ro(st),
        shared_store_wavefronts=ro(st_wf),
        shared_ld=ro(_shared_ld(rd, rd_wf, T, bool(vector_loads))),
        vector_loads=bool(vector_loads),
        n_phases=nph,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class WarpAccess:
    """What one warp asks of memory: the sectors of its tile loads and the banks of its reads.

    Attributes
    ----------
    warp : int
        Warp number in the block (threads ``32*warp ..``).
    m_sectors, n_sectors, m_segments, n_segments : list of (row, col0, col1)
        The 32-byte sectors / 128-byte segments the warp's loads of M / N
        touch, as row spans of the matrix (:func:`sector_spans`).
    mds_bank, nds_bank : ndarray of int64, (T, T), or None
        Bank of the word holding each logical slot (``word % 32``).
    mds_read, nds_read : ndarray of bool, (T, T)
        Logical slots the warp reads at the step ``k`` of the k loop.
    mds_conflict, nds_conflict : ndarray of bool, (T, T)
        Read slots whose bank is asked for more than one distinct word.
    mds_way, nds_way : int
        The n-way conflict of the warp's read at ``k``.
    """

    warp: int
    m_sectors: list
    n_sectors: list
    m_segments: list
    n_segments: list
    mds_bank: np.ndarray | None
    nds_bank: np.ndarray | None
    mds_read: np.ndarray
    nds_read: np.ndarray
    mds_conflict: np.ndarray
    nds_conflict: np.ndarray
    mds_way: int
    nds_way: int


#: The fields of :class:`WarpAccess` about the k loop's reads of Mds and Nds.
SHARED_FIELDS = tuple(
    f.name for f in dataclasses.fields(WarpAccess) if f.name.startswith(("mds_", "nds_"))
)


@dataclasses.dataclass(frozen=True, eq=False)
class WarpDetail(WarpAccess):
    """What one warp does to memory in one phase (and at one ``k``), for views.

    Attributes
    ----------
    threads : ndarray of bool, (T, T)
        ``[ty, tx]``: the thread is a lane of this warp.
    m_elements, n_elements : ndarray of int64, (n, 2)
        ``(row, col)`` of the M / N elements the warp's lanes load in the phase
        (lanes that load nothing are left out).
    m_counts, n_counts : dict
        ``requests``, ``sectors``, ``segments``, ``ideal_sectors``, ``bytes`` of the
        warp's request.
    k : int or None
        The step of the k loop of ``mds_read`` ...: without it no slot is read
        and the ways are 0 (the banks are always there).

    And those of :class:`WarpAccess`.
    """

    threads: np.ndarray
    m_elements: np.ndarray
    n_elements: np.ndarray
    m_counts: dict
    n_counts: dict
    k: int | None


def _conflicted(words: np.ndarray) -> np.ndarray:
    """Lanes whose bank is asked for more than one distinct word (``words``: (32,), -1 idle)."""
    out = np.zeros(words.shape, bool)
    active = words >= 0
    for bank in np.unique(words[active] % BANKS):
        lanes = active & (words % BANKS == bank)
        if len(np.unique(words[lanes])) > 1:
            out |= lanes
    return out


def warp_detail(
    mt: MemoryTransactions, trace: Trace, block, phase: int, warp: int, k: int | None = None
) -> WarpDetail:
    """The loads of one warp in one phase, and its Mds/Nds reads at ``k``, for drawing.

    Parameters
    ----------
    mt : MemoryTransactions
        ``memory_transactions(trace)``.
    trace : Trace
    block : (by, bx)
        A block recorded per thread.
    phase : int
        ``ph``, 0 to ``n_phases - 1``.
    warp : int
        0 to ``ceil(T*T / 32) - 1``.
    k : int, optional
        A step of the k loop (0 to T - 1).

    Returns
    -------
    WarpDetail

    Raises
    ------
    KeyError
        When the block was not recorded per thread.
    IndexError
        For a phase, warp or k out of range.
    """
    T = mt.tile_width
    b = mt.block_index(block)
    if not 0 <= phase < mt.n_phases:
        raise IndexError(f"phase must be 0..{mt.n_phases - 1}, got {phase}")
    if not 0 <= warp < mt.n_warps:
        raise IndexError(f"warp must be 0..{mt.n_warps - 1}, got {warp}")
    if k is not None and not 0 <= k < T:
        raise IndexError(f"k must be 0..{T - 1}, got {k}")
    _, kk, l = trace.shape
    lanes = mt.warp_threads[warp]
    lanes = lanes[lanes >= 0]
    in_warp = np.zeros(T * T, bool)
    in_warp[lanes] = True
    threads = in_warp.reshape(T, T)
    rec = trace.loads[trace.slot(block), phase].reshape(T * T, 6)[lanes]
    out: dict[str, Any] = {}
    for i, (name, base, ncols, nrows) in enumerate((("m", 0, kk, trace.shape[0]), ("n", 3, l, kk))):
        kind = rec[:, base]
        act = (kind == Access.LOADED) | (kind == Access.WRONG_ELEMENT)
        lin = rec[act, base + 1].astype(np.int64) * ncols + rec[act, base + 2]
        out[f"{name}_elements"] = np.stack(np.divmod(lin, ncols), axis=-1).reshape(-1, 2)
        out[f"{name}_sectors"] = sector_spans(lin // _ELEMS_PER_SECTOR, _ELEMS_PER_SECTOR, ncols,
                                              nrows * ncols)  # fmt: skip
        out[f"{name}_segments"] = sector_spans(
            lin // _ELEMS_PER_SEGMENT, _ELEMS_PER_SEGMENT, ncols, nrows * ncols
        )
        out[f"{name}_counts"] = {
            "requests": int(mt.global_requests[b, phase, warp, i]),
            "sectors": int(mt.global_sectors[b, phase, warp, i]),
            "segments": int(mt.global_segments[b, phase, warp, i]),
            "ideal_sectors": int(mt.ideal_sectors[b, phase, warp, i]),
            "bytes": int(mt.global_bytes[b, phase, warp, i]),
        }
    mds_w, nds_w = mt.layout.slot_words(T)
    reads: dict[str, Any] = {}
    for i, name in enumerate(("mds", "nds")):
        read = np.zeros((T, T), bool)
        conflict = np.zeros((T, T), bool)
        way = 0
        if k is not None:
            words = mt.shared_read_words[k, warp, :, i]
            conf = _conflicted(words)
            ty, tx = np.divmod(lanes, T)
            # Logical slot each lane reads: Mds[ty][k] and Nds[k][tx].
            r, c = (ty, np.full_like(ty, k)) if i == 0 else (np.full_like(tx, k), tx)
            read[r, c] = True
            conflict[r[conf[: len(lanes)]], c[conf[: len(lanes)]]] = True
            way = int(mt.shared_read_wavefronts[k, warp, i])
        reads[f"{name}_read"], reads[f"{name}_conflict"], reads[f"{name}_way"] = read, conflict, way
    return WarpDetail(
        warp=warp,
        threads=threads,
        mds_bank=mds_w % BANKS,
        nds_bank=nds_w % BANKS,
        k=k,
        **out,
        **reads,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class TransactionsOverlay(WarpAccess):
    """What the transactions view shows at one step of a block's replay (neutral data).

    The :class:`WarpAccess` fields are the current warp's (the followed
    thread's, else the one asked for): its sectors and segments where the
    step loads a tile of M / N (empty lists elsewhere), its banks, reads and
    conflicts at a step of the k loop (banks None, no read and ways 0
    elsewhere).

    Attributes
    ----------
    n_warps : int
    warp_threads : ndarray of bool, (T, T)
        Threads of the current warp.
    warp_labels : list of str
        One short line per warp: its load requests at a load step, its
        n-way conflicts at a step of the k loop, both otherwise.
    totals : list of str
        Lines for the counters: sectors per request of the tile loads and bank
        conflicts per request of the k loop (whole trace; the model named).
    warp_cost, warp_ideal : list of int
        Per warp, what the step costs and the ideal: sectors of the tiles
        loaded at a load step (ideal: the fewest for the bytes), the larger
        n of Mds's and Nds's n-way conflict at a step of the k loop (ideal 1);
        0 where the step has neither.
    warp_unit : str
        ``'sectors'``, ``'-way'`` or ``''``.
    """

    n_warps: int
    warp_threads: np.ndarray
    warp_labels: list
    totals: list
    warp_cost: list = dataclasses.field(default_factory=list)
    warp_ideal: list = dataclasses.field(default_factory=list)
    warp_unit: str = ""


def transactions_overlay(
    mt: MemoryTransactions,
    trace: Trace,
    block,
    phase: int | None,
    *,
    loads: tuple[str, ...] = (),
    k: int | None = None,
    warp: int = 0,
) -> TransactionsOverlay:
    """The transactions view of one step: the current warp's sectors and banks, every warp's row.

    Parameters
    ----------
    mt, trace, block
        As in :func:`warp_detail`.
    phase : int or None
        The current phase (None before the first).
    loads : tuple of {'M', 'N'}
        Tiles loaded at this step (their sectors are outlined).
    k : int, optional
        The step of the k loop (its banks are shown).
    warp : int
        The current warp, 0 to ``ceil(T*T / 32) - 1``.

    Returns
    -------
    TransactionsOverlay

    Raises
    ------
    IndexError
        For a warp, phase or k out of range.
    KeyError
        When the block was not recorded per thread.
    """
    T = mt.tile_width
    nw = mt.n_warps
    if not 0 <= warp < nw:
        raise IndexError(f"warp must be 0..{nw - 1}, got {warp}")
    false = np.zeros((T, T), bool)
    spans: dict[str, Any] = {"m_sectors": [], "n_sectors": [], "m_segments": [], "n_segments": []}
    shared: dict[str, Any] = dict(
        mds_bank=None, nds_bank=None, mds_read=false, nds_read=false, mds_conflict=false,
        nds_conflict=false, mds_way=0, nds_way=0,
    )  # fmt: skip
    labels = [f"w{w}" for w in range(nw)]
    cost, ideal, unit = [0] * nw, [0] * nw, ""
    if phase is not None:
        d = warp_detail(mt, trace, block, phase, warp, k)
        for name in loads:
            key = name.lower()
            spans[f"{key}_sectors"] = getattr(d, f"{key}_sectors")
            spans[f"{key}_segments"] = getattr(d, f"{key}_segments")
        if k is not None:
            shared = {key: getattr(d, key) for key in SHARED_FIELDS}
        b = mt.block_index(block)
        for w in range(nw):
            parts = []
            if k is not None:
                way = mt.shared_read_wavefronts[k, w]
                parts.append(f"Mds {way[0]}-way, Nds {way[1]}-way")
                cost[w], ideal[w], unit = int(way.max()), 1, "-way"
            else:
                for i, name in enumerate("MN"):
                    if loads and name not in loads:
                        continue
                    if not mt.global_requests[b, phase, w, i]:
                        parts.append(f"{name}: no load")
                        continue
                    if loads:
                        cost[w] += int(mt.global_sectors[b, phase, w, i])
                        ideal[w] += int(mt.ideal_sectors[b, phase, w, i])
                        unit = "sectors"
                    parts.append(
                        f"{name} {mt.global_sectors[b, phase, w, i]} sect "
                        f"{mt.global_segments[b, phase, w, i]} seg "
                        f"(ideal {mt.ideal_sectors[b, phase, w, i]})"
                    )
            labels[w] = f"w{w}: " + "; ".join(parts)
    threads = np.zeros(T * T, bool)
    lanes = mt.warp_threads[warp]
    threads[lanes[lanes >= 0]] = True
    c = mt.counters()
    model = ", as compiled" if mt.vector_loads else ""
    totals = [
        f"sectors/request {mt.sectors_per_request:.2f} "
        f"(ideal {c['global_ld_ideal_sectors'] / max(1, c['global_ld_requests']):.2f})",
        f"bank conflicts/request {mt.bank_conflicts_per_request:.2f} (k loop{model})",
    ]
    return TransactionsOverlay(
        warp=warp,
        n_warps=nw,
        warp_threads=threads.reshape(T, T),
        **spans,
        **shared,
        warp_labels=labels,
        totals=totals,
        warp_cost=cost,
        warp_ideal=ideal,
        warp_unit=unit,
    )
