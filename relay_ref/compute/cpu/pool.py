"""2-d pooling kernels (``../shared/reference/performance.md`` section 3).

Pure array kernels over C-contiguous float32/float64 arrays of fixed rank; the op-level
adapter (``relay_ref.ops.cpu_nn``) computes the output size and the divisors.

Window pooling is separable, and so is its padding: a window is the product of a row range
and a column range, and a padding tap (``-inf`` for max, 0 for a sum) never changes the
result, so out-of-range rows are skipped and padded columns hold the identity. Each plane is
pooled in two passes whose inner loops are contiguous (vectorisable) and long:

* NCHW (``pool_nchw``): a vertical pass over the input rows of each output row, then the
  horizontal taps on a stride-phase split of the result (see ``pool_nchw``), each tap one
  loop over the whole plane. Strided loads like ``v[2 * q]`` alone do not vectorise (3x
  slower measured); the split loads both members of each pair in one loop, which does.
* NHWC (``pool_nhwc``): horizontal then vertical, the inner loops over channels.

Average pooling divides the sum at ``(y, x)`` by ``cnt_h[y] * cnt_w[x]``: the counted region
(the input, or the input plus its explicit padding) is a rectangle, so its size within a
window is a product of one count per axis (the adapter passes counts >= 1). A window with no
valid tap gives ``-inf`` (max) or 0 (average), as the padded reference does. Max selects are
``m = max(m, v)`` (lesson 3); NaN inputs are not propagated by them (as in MLAS, unlike
NumPy's ``max``): the adapters (``relay_ref/ops/cpu_nn.py``) send inputs holding a NaN to
the reference.

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
def _hpass_c(row, t, kw, sw, dw, pl, is_max):
    """``t[q, :]`` = max/sum of ``row[q*sw + j*dw - pl, :]`` over the valid taps ``j``:
    (W, C) rows into (OW, C), the inner loops over channels."""
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


@njit(cache=True)
def _accumulate(dst, src, m, is_max):
    """``dst[k] = max(dst[k], src[k])`` (or ``+=``) for k < m: one contiguous loop."""
    if is_max:
        for k in range(m):
            dst[k] = max(dst[k], src[k])
    else:
        for k in range(m):
            dst[k] += src[k]


@njit(cache=True, parallel=True)
def pool_nchw(x, out, kh, kw, sh, sw, dh, dw, pt, pl, is_max, cnt_h, cnt_w):
    """Max or average pooling of ``x`` (B, H, W) into ``out`` (B, OH, OW), the padding
    ``pt`` rows above and ``pl`` columns left (the rest implied by the output size).

    Per plane: the vertical pass writes ``v`` (OH rows of pitch ``wp``, a multiple of the
    stride, the horizontal padding already in place); ``v`` is split into ``sw`` phases
    (``phase[p][k] = v[k * sw + p]``), so that column tap ``j`` of every output position is
    ``phase[j*dw % sw][k + j*dw // sw]`` at a contiguous ``k``; each tap is then one long
    loop over all OH * wq positions ("wide" rows whose values past OW are discarded)."""
    b_, h, wd = x.shape
    oh, ow = out.shape[1], out.shape[2]
    init = -np.inf if is_max else 0.0
    wq = (max(pl + wd, (ow - 1) * sw + (kw - 1) * dw + 1) + sw - 1) // sw
    wp = wq * sw
    span = oh * wq
    plen = span + (kw - 1) * dw // sw + 1  # phase length: the last taps read past span
    for b in prange(b_):
        v = np.full(plen * sw, init, x.dtype)
        for y in range(oh):
            dst = v[y * wp + pl:y * wp + pl + wd]
            for i in range(kh):
                r = y * sh + i * dh - pt
                if r >= 0 and r < h:
                    _accumulate(dst, x[b, r], wd, is_max)
        if sw == 1:
            phases = v.reshape((1, plen))
        else:
            phases = np.empty((sw, plen), x.dtype)
            if sw == 2:  # both members of each pair in one loop: LLVM vectorises it
                p0, p1 = phases[0], phases[1]
                for k in range(plen):
                    p0[k] = v[2 * k]
                    p1[k] = v[2 * k + 1]
            else:
                for p in range(sw):
                    ph = phases[p]
                    for k in range(plen):
                        ph[k] = v[k * sw + p]
        wide = np.full(span, init, x.dtype)
        for j in range(kw):
            _accumulate(wide, phases[j * dw % sw, j * dw // sw:], span, is_max)
        for y in range(oh):
            dst = out[b, y]
            src = wide[y * wq:]
            if is_max:
                for q in range(ow):
                    dst[q] = src[q]
            else:
                ch = cnt_h[y]
                for q in range(ow):
                    dst[q] = src[q] / (ch * cnt_w[q])


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
