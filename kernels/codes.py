"""The numeric codes of vizmm's records of these kernels (its instrumenter's reading of them).

These are plain integers so that the kernels stay free of any library: the
trace model (``vizmm.trace``) gives them names and checks that they agree.

Access codes (one ``int32`` per load record, one ``int8`` per P write):

========================  =====  =====================================================
name                      value  meaning
========================  =====  =====================================================
``NOT_RECORDED``          0      sentinel: no thread wrote this slot
``LOADED``                1      the element (row, col) was copied into Mds/Nds (P: written)
``ZERO_FILL``             2      the boundary check failed and 0.0 was stored (P: skipped)
``WRONG_ELEMENT``         3      (row, col) lies outside the matrix but its linearized index
                                 ``row*ncols + col`` does not: another element was read
                                 (the row wrap of the book's Fig. 5.11 discussion)
``OUT_OF_ALLOCATION``     4      the linearized index is past the end of the array: the
                                 access was recorded and *not* performed
========================  =====  =====================================================
"""

NOT_RECORDED = 0
LOADED = 1
ZERO_FILL = 2
WRONG_ELEMENT = 3
OUT_OF_ALLOCATION = 4

# Fields of the last axis of the load record array ``ld`` (int32):
M_KIND, M_ROW, M_COL, N_KIND, N_ROW, N_COL = range(6)
LOAD_FIELDS = 6

# Fields of the last axis of the per-block array ``blk`` (int64):
#   SM id (%smid), start/end %globaltimer (ns), start/end %clock64 (cycles),
#   completion order of the block within the launch (a logical clock).
BLK_SMID, BLK_T0, BLK_T1, BLK_CLK0, BLK_CLK1, BLK_SEQ = range(6)
BLK_FIELDS = 6

# Barrier records: axis ``which`` is the first (after the loads) or second
# (after the k loop) ``__syncthreads`` of a phase; axis ``when`` is arrival or
# release.
ARRIVE, RELEASE = 0, 1

# Per-block, per-phase, per-barrier spread (aggregated mode, int64 cycles of
# lane 0 of each warp): first arrival, last arrival, last release.
SPREAD_FIRST_ARRIVE, SPREAD_LAST_ARRIVE, SPREAD_LAST_RELEASE = range(3)
SPREAD_FIELDS = 3

# Sentinel for clock-like fields that were not read (the simulator has no clocks).
NO_CLOCK = -1

# Barrier lab (tiled and boundary kernels). Each shared slot Mds[ty][tx] /
# Nds[ty][tx] has a tag beside it (int32, in shared memory, written with the
# value): the linearized index ``row * ncols + col`` of the M / N element
# stored there, or one of these sentinels.
TAG_ZERO_FILL = -1  # the boundary check stored 0.0 (Fig. 5.13)
TAG_NEVER_WRITTEN = -2  # no thread of this block has written the slot yet
# Sentinel of the read records where nothing was recorded (block not recorded).
TAG_NOT_RECORDED = -3
# Last axis of the read records ``rd`` / ``rv`` (nd, nph, T, T, T, 2): the
# read of Mds[ty][k], then the read of Nds[k][tx].
READ_M, READ_N = 0, 1
READ_FIELDS = 2
# The two __syncthreads() of a phase, as numbered in the barrier lab.
BARRIER_LOAD, BARRIER_COMPUTE = 1, 2
