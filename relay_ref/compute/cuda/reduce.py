"""Row reductions on the device: ``sum`` / ``mean`` / ``max`` / ``min`` over one run of
consecutive axes, and global pooling.

A tensor reduced over a run of consecutive axes is viewed as ``(outer, n, inner)`` (the
axes before the run, the run, the axes after it); output element ``row = o * inner + i``
reduces ``x[o, :, i]``. One block per row (a grid-stride loop over rows when there are more
than ``max_blocks``): each of the block's ``row_threads`` threads folds a strided part of the
row in a register, then the block combines the partial results by a tree in shared memory
(``block_reduce``, also used by ``softmax``; the simulator has no warp shuffles, so the
tree is in shared memory). ``max`` / ``min`` propagate NaN as NumPy's do.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import cuda  # a module global: the simulator swaps it in per launch

from relay_ref.compute.cuda.config import CudaConfig, default_config
from relay_ref.compute.cuda.launch import flat

__all__ = ["OPS", "combiner", "reduce_rows"]

OPS = ("sum", "mean", "max", "min")


@functools.cache
def combiner(op: str) -> tuple[Any, float]:
    """(device function combining two partial results of ``op``, its identity)."""
    if op in ("sum", "mean"):
        @cuda.jit(device=True)
        def add(a, b):
            return a + b
        return add, 0.0
    if op == "max":
        @cuda.jit(device=True)
        def fmax(a, b):
            return a if (a > b or a != a) else b
        return fmax, -math.inf

    @cuda.jit(device=True)
    def fmin(a, b):
        return a if (a < b or a != a) else b
    return fmin, math.inf


@functools.cache
def block_reduce(op: str, threads: int) -> Any:
    """A device function ``(shared, tid, value) -> the block's combined value`` over a
    shared array of ``threads`` elements (every thread of the block must call it)."""
    combine, _ = combiner(op)

    @cuda.jit(device=True)
    def reduce(sh, tid, v):
        sh[tid] = v
        cuda.syncthreads()
        s = threads // 2
        while s > 0:
            if tid < s:
                sh[tid] = combine(sh[tid], sh[tid + s])
            cuda.syncthreads()
            s //= 2
        r = sh[0]
        cuda.syncthreads()  # everyone has read sh[0] before it is reused
        return r

    return reduce


@functools.cache
def _kernel(op: str, threads: int, dtype: str) -> Any:
    dt = np.dtype(dtype).type
    combine, identity = combiner(op)
    reduce = block_reduce(op, threads)
    init = dt(identity)
    mean = op == "mean"

    @cuda.jit
    def kernel(x, out, rows, n, inner):
        sh = cuda.shared.array(threads, dt)
        tid = cuda.threadIdx.x
        for row in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            o = row // inner
            i = row - o * inner
            base = o * n * inner + i
            acc = init
            for j in range(tid, n, threads):
                acc = combine(acc, x[base + j * inner])
            acc = reduce(sh, tid, acc)
            if tid == 0:
                out[row] = acc / dt(n) if mean else acc

    return kernel


def reduce_rows(x: Any, out: Any, outer: int, n: int, inner: int, op: str,
                config: CudaConfig | None = None) -> Any:
    """``out`` (``outer * inner`` elements, any shape) = ``op`` of ``x`` viewed as
    ``(outer, n, inner)`` over its middle axis (``n >= 1``). Returns ``out``."""
    cfg = config or default_config()
    rows = outer * inner
    kernel = _kernel(op, cfg.row_threads, np.dtype(out.dtype).name)
    kernel[max(1, min(rows, cfg.max_blocks)), cfg.row_threads](flat(x), flat(out), rows, n,
                                                               inner)
    return out
