"""2-d pooling kernels (``../shared/reference/performance.md`` section 3).

Pure array kernels over C-contiguous float32/float64 arrays of fixed rank; the op-level
adapter (``relay_ref.ops.cpu_nn``) computes the output size and the divisors.

Window pooling is separable, and so is its padding: a window is the product of a row range
and a column range, and a padding tap (``-inf`` for max, 0 for a sum) never changes the
result, so it is skipped instead of materialised. Each plane is pooled in two passes, both
elementwise over contiguous (vectorisable) inner loops:

1. horizontal: for every input row, the max/sum over the valid column taps of each output
   column, into a scratch ``(H, OW)`` (NHWC: ``(H, OW, C)``);
2. vertical: for every output row, the max/sum over the valid scratch rows.

Average pooling then divides the sum at ``(y, x)`` by ``cnt_h[y] * cnt_w[x]``: the counted
region (the input, or the input plus its explicit padding) is a rectangle, so its size within
a window is a product of one count per axis (the adapter passes counts >= 1). A window with
no valid tap gives ``-inf`` (max) or 0 (average), as the padded reference does. Max selects
are ``m = max(m, v)`` (lesson 3); NaN inputs are not propagated by them (as in MLAS, unlike
NumPy's ``max``).

Shapes: ``pool_nchw``: ``(B, H, W)`` into ``(B, OH, OW)`` (B = N*C, one plane per thread);
``pool_nhwc``: ``(N, H, W, C)`` into ``(N, OH, OW, C)``; ``global_rows``: ``(R, L)`` into
``(R,)`` (NCHW, L = H*W); ``global_mid``: ``(N, L, C)`` into ``(N, C)`` (NHWC).

The window loops take no ``fastmath``: they are elementwise, and infinities are data here.
"""

from __future__ import annotations

import numpy as np

from relay_ref.compute.cpu import numba
from relay_ref.compute.cpu.conv import valid_range

njit = numba.njit
prange = numba.prange


@njit(cache=True)
def _hpass(row, t, kw, sw, dw, pl, is_max):
    """``t[q]`` = max/sum of ``row[q*sw + j*dw - pl]`` over the valid taps ``j``."""
    w, ow = row.shape[0], t.shape[0]
    init = -np.inf if is_max else 0.0
    for q in range(ow):
        t[q] = init
    for j in range(kw):
        xs = j * dw - pl
        lo, hi = valid_range(xs, sw, w, ow)
        if hi <= lo:
            continue
        src = row[xs + lo * sw:]  # non-negative offset: no wrap-around in the loops
        dst = t[lo:hi]
        m = hi - lo
        if is_max:
            if sw == 1:
                for q in range(m):
                    dst[q] = max(dst[q], src[q])
            elif sw == 2:  # a literal stride: LLVM vectorises the interleaved load
                for q in range(m):
                    dst[q] = max(dst[q], src[2 * q])
            else:
                for q in range(m):
                    dst[q] = max(dst[q], src[q * sw])
        else:
            if sw == 1:
                for q in range(m):
                    dst[q] += src[q]
            elif sw == 2:
                for q in range(m):
                    dst[q] += src[2 * q]
            else:
                for q in range(m):
                    dst[q] += src[q * sw]


@njit(cache=True)
def _hpass_c(row, t, kw, sw, dw, pl, is_max):
    """``_hpass`` over (W, C) rows into (OW, C): the inner loops run over channels."""
    w, ow, c_ = row.shape[0], t.shape[0], t.shape[1]
    init = -np.inf if is_max else 0.0
    for q in range(ow):
        tq = t[q]
        for c in range(c_):
            tq[c] = init
    for j in range(kw):
        xs = j * dw - pl
        lo, hi = valid_range(xs, sw, w, ow)
        for q in range(lo, hi):
            src = row[xs + q * sw]
            dst = t[q]
            if is_max:
                for c in range(c_):
                    dst[c] = max(dst[c], src[c])
            else:
                for c in range(c_):
                    dst[c] += src[c]


@njit(cache=True)
def _vpass(tmp, dst, y, kh, sh, dh, pt, is_max, cnt_h, cnt_w):
    """Row ``y`` of the output (``dst``, 1-d or (OW, C) raveled to 1-d) from the scratch rows
    ``tmp[y*sh + i*dh - pt]`` (each raveled like ``dst``)."""
    h, m = tmp.shape[0], dst.shape[0]
    init = -np.inf if is_max else 0.0
    for q in range(m):
        dst[q] = init
    for i in range(kh):
        r = y * sh + i * dh - pt
        if r < 0 or r >= h:
            continue
        src = tmp[r]
        if is_max:
            for q in range(m):
                dst[q] = max(dst[q], src[q])
        else:
            for q in range(m):
                dst[q] += src[q]
    if not is_max:
        ow = cnt_w.shape[0]
        per = m // ow  # channels per output column (1 for NCHW)
        ch = cnt_h[y]
        for q in range(ow):
            div = ch * cnt_w[q]
            for c in range(q * per, (q + 1) * per):
                dst[c] = dst[c] / div


@njit(cache=True, parallel=True)
def pool_nchw(x, out, kh, kw, sh, sw, dh, dw, pt, pl, is_max, cnt_h, cnt_w):
    """Max or average pooling of ``x`` (B, H, W) into ``out`` (B, OH, OW), the padding
    ``pt`` rows above and ``pl`` columns left (the rest implied by the output size)."""
    b_, h = x.shape[0], x.shape[1]
    oh, ow = out.shape[1], out.shape[2]
    for b in prange(b_):
        tmp = np.empty((h, ow), x.dtype)
        for r in range(h):
            _hpass(x[b, r], tmp[r], kw, sw, dw, pl, is_max)
        for y in range(oh):
            _vpass(tmp, out[b, y], y, kh, sh, dh, pt, is_max, cnt_h, cnt_w)


@njit(cache=True, parallel=True)
def pool_nhwc(x, out, kh, kw, sh, sw, dh, dw, pt, pl, is_max, cnt_h, cnt_w):
    """Max or average pooling of ``x`` (N, H, W, C) into ``out`` (N, OH, OW, C)."""
    n_, h, c_ = x.shape[0], x.shape[1], x.shape[3]
    oh, ow = out.shape[1], out.shape[2]
    tmp = np.empty((n_, h, ow, c_), x.dtype)
    for r in prange(n_ * h):
        n = r // h
        _hpass_c(x[n, r - n * h], tmp[n, r - n * h], kw, sw, dw, pl, is_max)
    for r in prange(n_ * oh):
        n = r // oh
        _vpass(tmp[n].reshape((h, ow * c_)), out[n, r - n * oh].reshape(ow * c_), r - n * oh,
               kh, sh, dh, pt, is_max, cnt_h, cnt_w)


@njit(cache=True, fastmath=True)
def global_rows(x, out, is_max):
    """Max or mean of each row of ``x`` (R, L) into ``out`` (R,); L >= 1. Serial: the
    tensors of global pooling are small."""
    r_, l_ = x.shape
    for r in range(r_):
        src = x[r]
        acc = src[0]
        if is_max:
            for k in range(1, l_):
                acc = max(acc, src[k])
            out[r] = acc
        else:
            for k in range(1, l_):
                acc += src[k]
            out[r] = acc / l_


@njit(cache=True, fastmath=True)
def global_mid(x, out, is_max):
    """Max or mean over axis 1 of ``x`` (N, L, C) into ``out`` (N, C); L >= 1."""
    n_, l_, c_ = x.shape
    for n in range(n_):
        dst = out[n]
        first = x[n, 0]
        for c in range(c_):
            dst[c] = first[c]
        for k in range(1, l_):
            src = x[n, k]
            if is_max:
                for c in range(c_):
                    dst[c] = max(dst[c], src[c])
            else:
                for c in range(c_):
                    dst[c] += src[c]
        if not is_max:
            for c in range(c_):
                dst[c] = dst[c] / l_
