"""``nn.softmax`` / ``nn.log_softmax`` over any axis on the device, one block per row.

The tensor is viewed as ``(outer, n, inner)`` around the softmax axis; row ``o * inner + i``
is ``x[o, :, i]``. A block makes three strided passes over its row: the maximum (a block
reduction, ``reduce.block_reduce``), the sum of ``exp(x - max)`` (another), then the
outputs ``exp(x - max) / sum`` or ``x - max - log(sum)``: the references' formulas.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import cuda  # a module global: the simulator swaps it in per launch

from relay_ref.compute.cuda.config import CudaConfig, default_config
from relay_ref.compute.cuda.launch import flat
from relay_ref.compute.cuda.reduce import block_reduce, combiner

__all__ = ["softmax_rows"]


@functools.cache
def _kernel(log: bool, threads: int, dtype: str) -> Any:
    dt = np.dtype(dtype).type
    fmax, _ = combiner("max")
    reduce_max = block_reduce("max", threads)
    reduce_sum = block_reduce("sum", threads)
    lowest = dt(-math.inf)

    @cuda.jit
    def kernel(x, out, rows, n, inner):
        sh = cuda.shared.array(threads, dt)
        tid = cuda.threadIdx.x
        for row in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            o = row // inner
            i = row - o * inner
            base = o * n * inner + i
            m = lowest
            for j in range(tid, n, threads):
                m = fmax(m, x[base + j * inner])
            m = reduce_max(sh, tid, m)
            s = dt(0)
            for j in range(tid, n, threads):
                s += dt(math.exp(x[base + j * inner] - m))
            s = reduce_sum(sh, tid, s)
            if log:
                ls = dt(math.log(s))
                for j in range(tid, n, threads):
                    k = base + j * inner
                    out[k] = x[k] - m - ls
            else:
                for j in range(tid, n, threads):
                    k = base + j * inner
                    out[k] = dt(math.exp(x[k] - m)) / s

    return kernel


def softmax_rows(x: Any, out: Any, outer: int, n: int, inner: int, log: bool = False,
                 config: CudaConfig | None = None) -> Any:
    """``out`` = softmax (``log``: log-softmax) of ``x`` (viewed as ``(outer, n, inner)``)
    over its middle axis. Returns ``out``."""
    cfg = config or default_config()
    rows = outer * inner
    kernel = _kernel(bool(log), cfg.row_threads, np.dtype(out.dtype).name)
    kernel[max(1, min(rows, cfg.max_blocks)), cfg.row_threads](flat(x), flat(out), rows, n,
                                                               inner)
    return out
