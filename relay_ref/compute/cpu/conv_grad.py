"""Kernels of convolution gradients: ``col2im`` for ``nn.conv2d_transpose`` (conv2d's data
gradient), a direct scatter for few input channels per group, and the transposed patch
matrix of conv2d's weight gradient (a convolution whose kernel is much larger than its
output).

Pure array kernels over C-contiguous float32/float64 arrays of fixed rank; the op-level
adapter (``relay_ref.ops.cpu_grad``) checks attributes and shapes, runs the matrix products
through ``relay_ref.compute.cpu.blas.gemm`` *outside* numba and splits the work over cores
with ``relay_ref.compute.cpu.parallel.run_tasks``. Every kernel is ``nogil=True`` (it runs
as a task on the pool's threads) and serial: the parallel split is the caller's, by disjoint
output planes, so no two tasks ever write the same element.

Shape conventions (one image, one group):

* ``col2im_nchw``: ``cols`` (OG * KH * KW, H * W), row ``(o * KH + i) * KW + j``, column
  ``y * W + x``, is ``W_g^T @ x_g`` (``W_g`` the group's (CG, OG * KH * KW) IOHW weight,
  ``x_g`` its (CG, H * W) input); input pixel ``(y, x)`` through tap ``(i, j)`` lands on
  output ``(y * sh - pt + i * dh, x * sw - pl + j * dw)`` of ``out`` (OG, OH, OW), added to
  what is there; taps outside ``out`` are dropped (the padding crops them).
* ``convt_direct``: the same sum without the column buffer, all groups of one image at
  once: ``x`` (C, H, W), ``w`` (C, OG, KH, KW) (IOHW), ``out`` (G * OG, OH, OW) added to.
* ``patches_t``: the transposed im2col of one image of a conv2d: ``x`` (C, H, W) into
  ``p`` (OH * OW, C * KH * KW), row ``y * OW + x``, column ``(c * KH + i) * KW + j``, zero
  where the tap is in the padding. ``weight.reshape(O, -1) @ p.T`` is the (O, OH * OW)
  output; the rows are long and contiguous, which suits a kernel of many taps and few
  output positions (conv2d's weight gradient, ``relay_ref/ops/grad_nn.py``).

Inner loops run over 1-d slices at non-negative offsets (``valid_range`` gives the
in-bounds positions of each tap), so numba emits no wrap-around code there.
"""

from __future__ import annotations

import numpy as np

from relay_ref.compute.cpu import numba
from relay_ref.compute.cpu.conv import valid_range

njit = numba.njit


@njit(cache=True, nogil=True, fastmath=True)
def col2im_nchw(cols, out, h, w, kh, kw, sh, sw, dh, dw, pt, pl):
    """``out`` (OG, OH, OW) += the columns ``cols`` (OG*KH*KW, H*W) scattered to their
    output positions (see the module docstring)."""
    og, oh, ow = out.shape
    for o in range(og):
        plane = out[o]
        for i in range(kh):
            ys = i * dh - pt
            ylo, yhi = valid_range(ys, sh, oh, h)
            for j in range(kw):
                xs = j * dw - pl
                xlo, xhi = valid_range(xs, sw, ow, w)
                row = cols[(o * kh + i) * kw + j]
                for y in range(ylo, yhi):
                    dst = plane[ys + y * sh]
                    src = row[y * w:(y + 1) * w]
                    if sw == 1:  # contiguous: vectorises
                        seg = dst[xs + xlo:xs + xhi]
                        part = src[xlo:xhi]
                        for x in range(xhi - xlo):
                            seg[x] += part[x]
                    else:
                        for x in range(xlo, xhi):
                            dst[xs + x * sw] += src[x]


@njit(cache=True, nogil=True, fastmath=True)
def convt_direct(x, w, out, groups, sh, sw, dh, dw, pt, pl):
    """``out`` (G*OG, OH, OW) += the transposed convolution of one image ``x`` (C, H, W) by
    ``w`` (C, OG, KH, KW), without a column buffer (for few input channels per group)."""
    c_, h, wd = x.shape
    og, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    oh, ow = out.shape[1], out.shape[2]
    cg = c_ // groups
    for c in range(c_):
        k = c // cg
        img = x[c]
        for o in range(og):
            plane = out[k * og + o]
            for i in range(kh):
                ys = i * dh - pt
                ylo, yhi = valid_range(ys, sh, oh, h)
                for j in range(kw):
                    xs = j * dw - pl
                    xlo, xhi = valid_range(xs, sw, ow, wd)
                    wt = w[c, o, i, j]
                    for y in range(ylo, yhi):
                        dst = plane[ys + y * sh]
                        src = img[y]
                        if sw == 1:  # contiguous: vectorises
                            seg = dst[xs + xlo:xs + xhi]
                            row = src[xlo:xhi]
                            for u in range(xhi - xlo):
                                seg[u] += wt * row[u]
                        else:
                            for u in range(xlo, xhi):
                                dst[xs + u * sw] += wt * src[u]


@njit(cache=True, nogil=True)
def patches_t(x, p, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow):
    """The transposed columns ``p`` (OH*OW, C*KH*KW) of the image ``x`` (C, H, W), zero-padded
    by ``pt`` rows on top and ``pl`` columns on the left (and as needed bottom/right)."""
    c_, h, w = x.shape
    # the in-bounds taps of each output column (integer divisions once, not per row)
    los = np.empty(ow, np.int64)
    his = np.empty(ow, np.int64)
    for q in range(ow):
        los[q], his[q] = valid_range(q * sw - pl, dw, w, kw)
    for y in range(oh):
        for q in range(ow):
            dst = p[y * ow + q]
            xs, lo, hi = q * sw - pl, los[q], his[q]
            for c in range(c_):
                img = x[c]
                for i in range(kh):
                    r = y * sh + i * dh - pt
                    base = (c * kh + i) * kw
                    if r < 0 or r >= h:
                        for j in range(kw):
                            dst[base + j] = 0.0
                        continue
                    src = img[r]
                    for j in range(lo):
                        dst[base + j] = 0.0
                    if dw == 1:
                        seg = dst[base + lo:base + hi]
                        row = src[xs + lo:xs + hi]
                        for j in range(hi - lo):
                            seg[j] = row[j]
                    else:
                        for j in range(lo, hi):
                            dst[base + j] = src[xs + j * dw]
                    for j in range(hi, kw):
                        dst[base + j] = 0.0


@njit(cache=True, nogil=True)
def zero_planes(out):
    """``out`` (P, H, W) = 0 (without the GIL, inside a task)."""
    p_, h, w = out.shape
    for p in range(p_):
        plane = out[p]
        for y in range(h):
            row = plane[y]
            for x in range(w):
                row[x] = 0.0
