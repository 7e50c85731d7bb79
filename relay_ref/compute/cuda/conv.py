"""``nn.conv2d`` (NCHW data, OIHW weight) as an implicit GEMM on the device.

Per group ``g`` the convolution is the product ``W_g (og x K) @ X_g (K x P)`` with
``K = cg * kh * kw`` (input channels per group times taps) and ``P = N * OH * OW`` (output
pixels); ``X_g`` is never materialised (no im2col buffer): a thread loading element
``(q, p)`` of a tile decodes ``q`` into (channel, tap row, tap column) and ``p`` into
(batch, output row, output column), and reads the input pixel the tap hits, or 0 in the
padding. Strides, padding (top/left; bottom/right padding is implied by the output size),
dilation and groups are run-time arguments; block ``(x, y, z)`` computes pixels
``x * bn ...``, output channels ``y * bm ...`` of group ``z`` (looping over row tiles and
groups with the grid's stride). The main loop (tiling, register blocking, double
buffering) is ``relay_ref.compute.cuda.gemm.mainloop`` with conv2d's element accessors.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import cuda  # a module global: the simulator swaps it in per launch

from relay_ref.compute.cuda.config import CudaConfig, GemmTile, default_config
from relay_ref.compute.cuda.gemm import mainloop
from relay_ref.compute.cuda.launch import flat, grid_dim

__all__ = ["conv2d_nchw"]


@cuda.jit(device=True)
def _elem_w(w, p, r, q):  # p = (group base, k length)
    return w[p[0] + r * p[1] + q]


@cuda.jit(device=True)
def _elem_x(x, p, q, pix):
    # p = (c, h, w, kh, kw, ohw, ow_n, sh, sw, dh, dw, pt, pl, cbase)
    c, h, w, kh, kw, ohw, ow_n = p[0], p[1], p[2], p[3], p[4], p[5], p[6]
    taps = kh * kw
    ci = q // taps
    rs = q - ci * taps
    r = rs // kw
    s = rs - r * kw
    nb = pix // ohw
    rest = pix - nb * ohw
    oh = rest // ow_n
    ow = rest - oh * ow_n
    ih = oh * p[7] - p[11] + r * p[9]
    iw = ow * p[8] - p[12] + s * p[10]
    v = x[0] - x[0]  # zero of x's dtype
    if ih >= 0 and ih < h and iw >= 0 and iw < w:
        v = x[((nb * c + p[13] + ci) * h + ih) * w + iw]
    return v


@functools.cache
def _kernel(tile: GemmTile, dtype: str) -> Any:
    dt = np.dtype(dtype).type
    BM, BN, TM, TN = tile.bm, tile.bn, tile.tm, tile.tn  # noqa: N806
    NTX = BN // TN  # noqa: N806
    main = mainloop(tile, dtype, _elem_w, _elem_x)

    @cuda.jit
    def kernel(x, wt, out, n, c, h, w, o, kh, kw, oh_n, ow_n, cg, og, sh, sw, dh, dw, pt, pl,
               groups):
        acc = cuda.local.array((TM, TN), dt)
        tid = cuda.threadIdx.x
        ty = tid // NTX
        tx = tid - ty * NTX
        col0 = cuda.blockIdx.x * BN
        kk_len = cg * kh * kw
        ohw = oh_n * ow_n
        npix = n * ohw
        row_tiles = (og + BM - 1) // BM
        for g in range(cuda.blockIdx.z, groups, cuda.gridDim.z):
            for by in range(cuda.blockIdx.y, row_tiles, cuda.gridDim.y):
                row0 = by * BM
                main(wt, (g * og * kk_len, kk_len), True, x,
                     (c, h, w, kh, kw, ohw, ow_n, sh, sw, dh, dw, pt, pl, g * cg), True,
                     og, npix, kk_len, row0, col0, acc)
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
    grid = (-(-(n * oh * ow) // tile.bn), grid_dim(-(-og // tile.bm)), grid_dim(groups))
    kernel[grid, tile.threads](flat(x), flat(w), flat(out), n, c, h, wd, o, kh, kw, oh, ow,
                               cg, og, strides[0], strides[1], dilation[0], dilation[1],
                               padding[0], padding[1], groups)
    return out
