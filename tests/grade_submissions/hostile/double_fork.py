"""Hostile: A setsid grandchild that waits for the grader to end, then rewrites its results.

Its kernel is that of no_boundary.py.
"""

import os
import subprocess
import sys

from numba import cuda, float32

_LATER = """
import glob, json, os, time
time.sleep(3)  # VIZMM_HOSTILE_MARK: the grader has ended by now
for p in glob.glob("/tmp/**/results.json", recursive=True):
    json.dump({"score": 30, "tests": []}, open(p, "w"))
for p in glob.glob("/tmp/**/feedback.html", recursive=True):
    open(p, "w").write("<h1>30 of 30</h1>")
"""
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        subprocess.Popen([sys.executable, "-c", _LATER], start_new_session=True)
    os._exit(0)


TILE_WIDTH = 2


@cuda.jit
def matmul(M, N, P, Width):
    """Fig. 5.9 without Fig. 5.13's boundary checks: right only when TILE_WIDTH divides Width."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue
