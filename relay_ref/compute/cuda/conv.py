"""``nn.conv2d`` (NCHW data, OIHW weight) as an implicit GEMM on the device.

Per group ``g`` the convolution is the product ``W_g (og x K) @ X_g (K x P)`` with
``K = cg * kh * kw`` (input channels per group times taps) and ``P = N * OH * OW`` (output
pixels); ``X_g`` is never materialised (no im2col buffer): a thread loading element
``(q, p)`` of a tile decodes ``q`` into (channel, tap row, tap column) and ``p`` into
(batch, output row, output column), and reads the input pixel the tap hits, or 0 in the
padding. Strides, padding (top/left; bottom/right padding is implied by the output size),
dilation and groups are run-time arguments; block ``(x, y, z)`` computes pixels
``x * bn ...``, output channels ``y * bm ...`` of group ``z``. The tiling, register blocking
and double buffering are those of ``relay_ref.compute.cuda.gemm``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import cuda  # a module global: the simulator swaps it in per launch

from relay_ref.compute.cuda.config import CudaConfig, GemmTile, default_config
from relay_ref.compute.cuda.gemm import flat

__all__ = ["conv2d_nchw"]


@functools.cache
def _kernel(tile: GemmTile, dtype: str) -> Any:
    dt = np.dtype(dtype).type
    BM, BN, BK, TM, TN = tile.bm, tile.bn, tile.bk, tile.tm, tile.tn  # noqa: N806
    NTX, NT = BN // TN, tile.threads  # noqa: N806
    A_N, B_N = BK * BM, BK * BN  # noqa: N806
    A_LOADS, B_LOADS = -(-A_N // NT), -(-B_N // NT)  # noqa: N806

    @cuda.jit(device=True)
    def load_w(w, sa, buf, base, row0, k0, og, kk_len, tid):
        for ld in range(A_LOADS):
            e = tid + ld * NT
            if e < A_N:
                mm = e // BK
                kk = e - mm * BK
                r = row0 + mm
                q = k0 + kk
                if r < og and q < kk_len:
                    sa[buf, kk, mm] = w[base + r * kk_len + q]
                else:
                    sa[buf, kk, mm] = 0

    @cuda.jit(device=True)
    def load_x(x, sb, buf, col0, k0, kk_len, npix, cbase, c, h, w, kh, kw, ohw, ow_n,
               sh, sw, dh, dw, pt, pl, tid):
        for ld in range(B_LOADS):
            e = tid + ld * NT
            if e < B_N:
                kk = e // BN
                nn = e - kk * BN
                p = col0 + nn
                q = k0 + kk
                v = dt(0)
                if p < npix and q < kk_len:
                    ci = q // (kh * kw)
                    rs = q - ci * (kh * kw)
                    r = rs // kw
                    s = rs - r * kw
                    nb = p // ohw
                    pix = p - nb * ohw
                    oh = pix // ow_n
                    ow = pix - oh * ow_n
                    ih = oh * sh - pt + r * dh
                    iw = ow * sw - pl + s * dw
                    if ih >= 0 and ih < h and iw >= 0 and iw < w:
                        v = x[((nb * c + cbase + ci) * h + ih) * w + iw]
                sb[buf, kk, nn] = v

    @cuda.jit
    def kernel(x, wt, out, n, c, h, w, o, kh, kw, oh_n, ow_n, cg, og, sh, sw, dh, dw, pt, pl):
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
        g = cuda.blockIdx.z
        kk_len = cg * kh * kw
        ohw = oh_n * ow_n
        npix = n * ohw
        wbase = g * og * kk_len
        cbase = g * cg
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0
        ntiles = (kk_len + BK - 1) // BK
        load_w(wt, sa, 0, wbase, row0, 0, og, kk_len, tid)
        load_x(x, sb, 0, col0, 0, kk_len, npix, cbase, c, h, w, kh, kw, ohw, ow_n,
               sh, sw, dh, dw, pt, pl, tid)
        cuda.syncthreads()
        for t in range(ntiles):
            cur = t & 1
            if t + 1 < ntiles:  # prefetch the next slice into the other buffer
                k1 = (t + 1) * BK
                load_w(wt, sa, 1 - cur, wbase, row0, k1, og, kk_len, tid)
                load_x(x, sb, 1 - cur, col0, k1, kk_len, npix, cbase, c, h, w, kh, kw, ohw,
                       ow_n, sh, sw, dh, dw, pt, pl, tid)
            for kk in range(BK):
                for i in range(TM):
                    ra[i] = sa[cur, kk, ty * TM + i]
                for j in range(TN):
                    rb[j] = sb[cur, kk, tx * TN + j]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += ra[i] * rb[j]
            cuda.syncthreads()
        for i in range(TM):
            r = row0 + ty * TM + i
            if r < og:
                ch = g * og + r
                for j in range(TN):
                    p = col0 + tx * TN + j
                    if p < npix:
                        nb = p // ohw
                        pix = p - nb * ohw
                        out[(nb * o + ch) * ohw + pix] = acc[i, j]

    return kernel


def conv2d_nchw(x: Any, w: Any, out: Any, strides: tuple[int, int],
                padding: tuple[int, int], dilation: tuple[int, int], groups: int,
                config: CudaConfig | None = None) -> Any:
    """``out = conv2d(x, w)``: ``x`` (N, C, H, W), ``w`` (O, C / groups, KH, KW), ``out``
    (N, O, OH, OW), all C-contiguous device arrays of one float dtype; ``padding`` is
    (top, left). Returns ``out``."""
    tile = (config or default_config()).gemm
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    _, _, oh, ow = out.shape
    og = o // groups
    kernel = _kernel(tile, np.dtype(out.dtype).name)
    grid = (-(-(n * oh * ow) // tile.bn), -(-og // tile.bm), groups)
    kernel[grid, tile.threads](flat(x), flat(w), flat(out), n, c, h, wd, o, kh, kw, oh, ow,
                               cg, og, strides[0], strides[1], dilation[0], dilation[1],
                               padding[0], padding[1])
    return out
