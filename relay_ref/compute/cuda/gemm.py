"""A register-blocked, shared-memory tiled GEMM: ``C[b] = A[b] @ B[b]`` on the device.

Operands are flat device arrays addressed through element strides, so one kernel serves
``nn.dense`` (``B`` is the weight read transposed), ``nn.matmul`` with either operand
transposed and ``nn.batch_matmul`` (a batch stride of 0 broadcasts an operand): element
``(b, i, j)`` of ``A`` is ``a[b * sab + i * sam + j * sak]``, and likewise for ``B`` and ``C``.

The tiled main loop (``mainloop``, shared with conv2d's implicit GEMM, which passes other
element accessors): a block computes a ``bm x bn`` tile of ``C``, each thread a ``tm x tn``
sub-tile in registers (``cuda.local.array``). K is walked ``bk`` at a time through two
shared-memory buffers per operand: each thread loads its part of slice ``t + 1`` from global
memory into registers *before* multiplying slice ``t`` out of buffer ``t % 2`` (the loads
are in flight during the products), then stores them into the other buffer; one
``syncthreads`` per slice. Loads are coalesced along whichever axis of the operand is
contiguous; the shared arrays are padded by ``PAD`` words per row (stores of consecutive
threads along k then hit distinct banks). Elements outside ``m x k`` / ``k x n`` load as 0
(edge tiles), stores outside ``m x n`` are skipped. Accumulation is in the operands' dtype
(float32 or float64), as BLAS does.

Grid: block ``(x, y, z)`` starts at column tile ``x``, row tile ``y`` and batch ``z``, and
loops over row tiles and batches with the grid's stride (CUDA caps ``y`` and ``z`` at 65535).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import cuda  # a module global: the simulator swaps it in per launch

from relay_ref.compute.cuda.config import PAD, CudaConfig, GemmTile, default_config
from relay_ref.compute.cuda.launch import flat, grid_dim

__all__ = ["PAD", "gemm", "mainloop"]


@functools.cache
def mainloop(tile: GemmTile, dtype: str, elem_a: Any, elem_b: Any) -> Any:
    """The device function ``(a, pa, a_kfast, b, pb, b_nfast, m, n, k, row0, col0, acc)``:
    ``acc`` (a ``tm x tn`` local array) = this thread's part of the ``bm x bn`` tile at
    (``row0``, ``col0``) of ``A (m x k) @ B (k x n)``, where element ``(i, q)`` of ``A`` is
    ``elem_a(a, pa, i, q)`` and ``(q, j)`` of ``B`` is ``elem_b(b, pb, q, j)`` (device
    functions, called inside the bounds only; ``pa`` / ``pb``: their parameter tuples).
    ``a_kfast`` / ``b_nfast``: consecutive threads load along k of ``A`` / n of ``B`` (the
    operand's contiguous axis). Every thread of the block must call it (it synchronises)."""
    dt = np.dtype(dtype).type
    BM, BN, BK, TM, TN = tile.bm, tile.bn, tile.bk, tile.tm, tile.tn  # noqa: N806
    NTX, NT = BN // TN, tile.threads  # noqa: N806
    A_N, B_N = BK * BM, BK * BN  # noqa: N806
    A_LOADS, B_LOADS = -(-A_N // NT), -(-B_N // NT)  # noqa: N806
    SM, SN = BM + PAD, BN + PAD  # noqa: N806

    @cuda.jit(device=True)
    def fetch(a, pa, a_kfast, b, pb, b_nfast, m, n, k, row0, col0, k0, tid, ga, gb):
        for ld in range(A_LOADS):
            e = tid + ld * NT
            if a_kfast:
                mm = e // BK
                kk = e - mm * BK
            else:
                kk = e // BM
                mm = e - kk * BM
            r = row0 + mm
            q = k0 + kk
            v = dt(0)
            if e < A_N and r < m and q < k:
                v = elem_a(a, pa, r, q)
            ga[ld] = v
        for ld in range(B_LOADS):
            e = tid + ld * NT
            if b_nfast:
                kk = e // BN
                nn = e - kk * BN
            else:
                nn = e // BK
                kk = e - nn * BK
            c = col0 + nn
            q = k0 + kk
            v = dt(0)
            if e < B_N and c < n and q < k:
                v = elem_b(b, pb, q, c)
            gb[ld] = v

    @cuda.jit(device=True)
    def stash(a_kfast, b_nfast, sa, sb, buf, tid, ga, gb):
        for ld in range(A_LOADS):
            e = tid + ld * NT
            if e < A_N:
                if a_kfast:
                    mm = e // BK
                    kk = e - mm * BK
                else:
                    kk = e // BM
                    mm = e - kk * BM
                sa[buf, kk, mm] = ga[ld]
        for ld in range(B_LOADS):
            e = tid + ld * NT
            if e < B_N:
                if b_nfast:
                    kk = e // BN
                    nn = e - kk * BN
                else:
                    nn = e // BK
                    kk = e - nn * BK
                sb[buf, kk, nn] = gb[ld]

    @cuda.jit(device=True)
    def run(a, pa, a_kfast, b, pb, b_nfast, m, n, k, row0, col0, acc):
        sa = cuda.shared.array((2, BK, SM), dt)
        sb = cuda.shared.array((2, BK, SN), dt)
        ra = cuda.local.array(TM, dt)
        rb = cuda.local.array(TN, dt)
        ga = cuda.local.array(A_LOADS, dt)
        gb = cuda.local.array(B_LOADS, dt)
        tid = cuda.threadIdx.x
        ty = tid // NTX
        tx = tid - ty * NTX
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0
        ntiles = (k + BK - 1) // BK
        fetch(a, pa, a_kfast, b, pb, b_nfast, m, n, k, row0, col0, 0, tid, ga, gb)
        stash(a_kfast, b_nfast, sa, sb, 0, tid, ga, gb)
        cuda.syncthreads()
        for t in range(ntiles):
            cur = t & 1
            more = t + 1 < ntiles
            if more:  # slice t + 1 into registers: in flight during the products
                fetch(a, pa, a_kfast, b, pb, b_nfast, m, n, k, row0, col0, (t + 1) * BK,
                      tid, ga, gb)
            for kk in range(BK):
                for i in range(TM):
                    ra[i] = sa[cur, kk, ty * TM + i]
                for j in range(TN):
                    rb[j] = sb[cur, kk, tx * TN + j]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += ra[i] * rb[j]
            if more:  # the other buffer: every thread finished reading it before the
                stash(a_kfast, b_nfast, sa, sb, 1 - cur, tid, ga, gb)  # last syncthreads
            cuda.syncthreads()

    return run


@cuda.jit(device=True)
def _elem_a(a, p, r, q):  # p = (batch base, row stride, column stride)
    return a[p[0] + r * p[1] + q * p[2]]


@cuda.jit(device=True)
def _elem_b(b, p, q, c):
    return b[p[0] + q * p[1] + c * p[2]]


@functools.cache
def _kernel(tile: GemmTile, dtype: str) -> Any:
    dt = np.dtype(dtype).type
    BM, BN, TM, TN = tile.bm, tile.bn, tile.tm, tile.tn  # noqa: N806
    NTX = BN // TN  # noqa: N806
    main = mainloop(tile, dtype, _elem_a, _elem_b)

    @cuda.jit
    def kernel(a, b, c, m, n, k, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn, batch):
        acc = cuda.local.array((TM, TN), dt)
        tid = cuda.threadIdx.x
        ty = tid // NTX
        tx = tid - ty * NTX
        col0 = cuda.blockIdx.x * BN
        row_tiles = (m + BM - 1) // BM
        for z in range(cuda.blockIdx.z, batch, cuda.gridDim.z):
            for by in range(cuda.blockIdx.y, row_tiles, cuda.gridDim.y):
                row0 = by * BM
                main(a, (z * sab, sam, sak), sak == 1, b, (z * sbb, sbk, sbn), sbn == 1,
                     m, n, k, row0, col0, acc)
                cbase = z * scb
                for i in range(TM):
                    r = row0 + ty * TM + i
                    if r < m:
                        for j in range(TN):
                            cc = col0 + tx * TN + j
                            if cc < n:
                                c[cbase + r * scm + cc * scn] = acc[i, j]

    return kernel


def gemm(a: Any, b: Any, out: Any, m: int, n: int, k: int, a_strides: tuple[int, int, int],
         b_strides: tuple[int, int, int], out_strides: tuple[int, int, int], batch: int = 1,
         config: CudaConfig | None = None) -> Any:
    """``out[z] = A[z] @ B[z]`` for ``z < batch`` (see the module docstring; strides are
    ``(batch, row, column)`` element strides of each flat operand). Returns ``out``."""
    tile = (config or default_config()).gemm
    kernel = _kernel(tile, np.dtype(out.dtype).name)
    grid = (-(-n // tile.bn), grid_dim(-(-m // tile.bm)), grid_dim(batch))
    kernel[grid, tile.threads](flat(a), flat(b), flat(out), m, n, k, *a_strides, *b_strides,
                               *out_strides, batch)
    return out
