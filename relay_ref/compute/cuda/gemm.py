"""A register-blocked, shared-memory tiled GEMM: ``C[b] = A[b] @ B[b]`` on the device.

Operands are flat device arrays addressed through element strides, so one kernel serves
``nn.dense`` (``B`` is the weight read transposed), ``nn.matmul`` with either operand
transposed and ``nn.batch_matmul`` (a batch stride of 0 broadcasts an operand): element
``(b, i, j)`` of ``A`` is ``a[b * sab + i * sam + j * sak]``, and likewise for ``B`` and ``C``.

The kernel (one per ``GemmTile`` and dtype, built by ``_kernel``): block ``(x, y, z)``
computes the ``bm x bn`` tile of ``C[z]`` at row ``y * bm``, column ``x * bn``; each thread
a ``tm x tn`` sub-tile in registers (``cuda.local.array``). K is walked ``bk`` at a time
through two shared-memory buffers per operand: while the threads multiply slice ``t`` out of
buffer ``t % 2`` they load slice ``t + 1`` into the other one, so one ``syncthreads`` per
slice suffices. Loads are coalesced along whichever axis of the operand is contiguous.
Elements outside ``m x k`` / ``k x n`` load as 0 (edge tiles), stores outside ``m x n``
are skipped. Accumulation is in the operands' dtype (float32 or float64), as BLAS does.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import cuda  # a module global: the simulator swaps it in per launch

from relay_ref.compute.cuda.config import CudaConfig, GemmTile, default_config

__all__ = ["gemm"]


@functools.cache
def _kernel(tile: GemmTile, dtype: str) -> Any:
    dt = np.dtype(dtype).type
    BM, BN, BK, TM, TN = tile.bm, tile.bn, tile.bk, tile.tm, tile.tn  # noqa: N806
    NTX, NT = BN // TN, tile.threads  # noqa: N806
    A_N, B_N = BK * BM, BK * BN  # noqa: N806
    A_LOADS, B_LOADS = -(-A_N // NT), -(-B_N // NT)  # noqa: N806

    @cuda.jit(device=True)
    def load_a(a, sa, buf, base, row0, k0, m, k, sam, sak, tid):
        for ld in range(A_LOADS):
            e = tid + ld * NT
            if e < A_N:
                if sak == 1:  # k contiguous: consecutive threads along k
                    mm = e // BK
                    kk = e - mm * BK
                else:
                    kk = e // BM
                    mm = e - kk * BM
                r = row0 + mm
                q = k0 + kk
                if r < m and q < k:
                    sa[buf, kk, mm] = a[base + r * sam + q * sak]
                else:
                    sa[buf, kk, mm] = 0

    @cuda.jit(device=True)
    def load_b(b, sb, buf, base, col0, k0, n, k, sbk, sbn, tid):
        for ld in range(B_LOADS):
            e = tid + ld * NT
            if e < B_N:
                if sbn == 1:  # n contiguous: consecutive threads along n
                    kk = e // BN
                    nn = e - kk * BN
                else:
                    nn = e // BK
                    kk = e - nn * BK
                cc = col0 + nn
                q = k0 + kk
                if cc < n and q < k:
                    sb[buf, kk, nn] = b[base + q * sbk + cc * sbn]
                else:
                    sb[buf, kk, nn] = 0

    @cuda.jit
    def kernel(a, b, c, m, n, k, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn):
        sa = cuda.shared.array((2, BK, BM), dt)
        sb = cuda.shared.array((2, BK, BN), dt)
        acc = cuda.local.array((TM, TN), dt)
        ra = cuda.local.array(TM, dt)
        rb = cuda.local.array(TN, dt)
        tid = cuda.threadIdx.x
        ty = tid // NTX
        tx = tid - ty * NTX
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        z = cuda.blockIdx.z
        abase = z * sab
        bbase = z * sbb
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0
        ntiles = (k + BK - 1) // BK
        load_a(a, sa, 0, abase, row0, 0, m, k, sam, sak, tid)
        load_b(b, sb, 0, bbase, col0, 0, n, k, sbk, sbn, tid)
        cuda.syncthreads()
        for t in range(ntiles):
            cur = t & 1
            if t + 1 < ntiles:  # prefetch the next slice into the other buffer
                load_a(a, sa, 1 - cur, abase, row0, (t + 1) * BK, m, k, sam, sak, tid)
                load_b(b, sb, 1 - cur, bbase, col0, (t + 1) * BK, n, k, sbk, sbn, tid)
            for kk in range(BK):
                for i in range(TM):
                    ra[i] = sa[cur, kk, ty * TM + i]
                for j in range(TN):
                    rb[j] = sb[cur, kk, tx * TN + j]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += ra[i] * rb[j]
            cuda.syncthreads()
        cbase = z * scb
        for i in range(TM):
            r = row0 + ty * TM + i
            if r < m:
                for j in range(TN):
                    cc = col0 + tx * TN + j
                    if cc < n:
                        c[cbase + r * scm + cc * scn] = acc[i, j]

    return kernel


def flat(d: Any) -> Any:
    """A C-contiguous device array as 1-d (a view)."""
    return d.reshape(int(np.prod(d.shape, dtype=np.int64)))


def gemm(a: Any, b: Any, out: Any, m: int, n: int, k: int, a_strides: tuple[int, int, int],
         b_strides: tuple[int, int, int], out_strides: tuple[int, int, int], batch: int = 1,
         config: CudaConfig | None = None) -> Any:
    """``out[z] = A[z] @ B[z]`` for ``z < batch`` (see the module docstring; strides are
    ``(batch, row, column)`` element strides of each flat operand). Returns ``out``."""
    tile = (config or default_config()).gemm
    kernel = _kernel(tile, np.dtype(out.dtype).name)
    grid = (-(-n // tile.bn), -(-m // tile.bm), batch)
    kernel[grid, tile.threads](flat(a), flat(b), flat(out), m, n, k, *a_strides, *b_strides,
                               *out_strides)
    return out
