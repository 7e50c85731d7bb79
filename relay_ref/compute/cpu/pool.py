"""2-d pooling (``../shared/reference/performance.md`` section 3).

Array-level drivers over C-contiguous float32/float64 arrays of fixed rank; the op-level
adapter (``relay_ref.ops.cpu_nn``) computes the output size and the divisors.

Window pooling is separable, and so is its padding: a window is the product of a row range
and a column range, and a padding tap (``-inf`` for max, 0 for a sum) never changes the
result, so out-of-range rows are skipped and padded columns hold the identity. Each plane is
pooled in two passes whose inner loops are contiguous (vectorisable) and long:

* NCHW (``pool_nchw`` over ``pool_planes``): a vertical pass over the input rows of each
  output row, then the horizontal taps on a stride-phase split of the result (see
  ``pool_planes``), each tap one loop over the whole plane. Strided loads like ``v[2 * q]``
  alone do not vectorise (3x slower measured); the split loads both members of each pair
  in one loop, which does.
* NHWC (``pool_nhwc`` over ``hpass_rows`` / ``vpass_rows``): horizontal then vertical, the
  inner loops over channels.

Average pooling divides the sum at ``(y, x)`` by ``cnt_h[y] * cnt_w[x]``: the counted region
(the input, or the input plus its explicit padding) is a rectangle, so its size within a
window is a product of one count per axis (the adapter passes counts >= 1). A window with no
valid tap gives ``-inf`` (max) or 0 (average), as the padded reference does. Window max
selects are ``_nanmax`` (branch-free, vectorised): any NaN in a window gives NaN, as NumPy's
``max`` does, so no adapter scans the input. The global max reductions use ``max(m, v)``
under ``fastmath`` (a NaN-checking select does not vectorise as a reduction: 2.7x slower
measured); ``global_max_pool2d``'s adapter sends inputs holding a NaN to the reference.

Cold start (issue 30): every numba kernel here is serial and ``nogil``, takes the range of
planes or rows it computes, and has one specialisation per dtype (``is_max`` is a runtime
flag; the divisors are always read-only arrays). Large jobs run the same kernel over blocks
as ``parallel.run_tasks`` tasks (``blocks``); nothing is ``parallel=True``: the former
``prange`` NCHW kernel took 2.6-5.8 s to compile on the loaded 2-core box, ``pool_planes``
0.7-1.4 s in the same runs (3-5x less). The path never depends on the sizes: a new size
must not compile anything (``executor/jitstats.py``; so no NumPy path for small inputs).

Shapes: ``pool_nchw``: ``(B, H, W)`` into ``(B, OH, OW)`` (B = N*C); ``pool_nhwc``:
``(N, H, W, C)`` into ``(N, OH, OW, C)``; ``global_pool_rows``: ``(R, L)`` into ``(R,)``
(NCHW, L = H*W); ``global_pool_mid``: ``(N, L, C)`` into ``(N, C)`` (NHWC); L >= 1.

The window loops take no ``fastmath``: they are elementwise, and infinities are data here.
Inner loops index slices from 0 (a computed offset such as ``v[base + k]`` gets numba's
negative-index wrap-around and does not vectorise: 3x slower measured).
"""

from __future__ import annotations

import numpy as np

from relay_ref.compute.cpu import numba
from relay_ref.compute.cpu.blocks import run_blocks

njit = numba.njit


@njit(cache=True, nogil=True)
def _nanmax(m, v):  # type: ignore[no-untyped-def]
    """``max(m, v)`` that propagates NaN as ``np.max`` does: a NaN ``v`` is taken, a NaN
    ``m`` is kept (``v > m`` is false against it). Branch-free: the loops still vectorise.
    Callers under ``fastmath`` must not fold ``v != v`` (their flags exclude ``nnan``)."""
    return v if (v > m) | (v != v) else m

@njit(cache=True, nogil=True)
def pool_planes(x, out, b0, b1, kh, kw, sh, sw, dh, dw, pt, pl, is_max, cnt_h, cnt_w):
    """Max or average pooling of the planes ``b0 <= b < b1`` of ``x`` (B, H, W) into
    ``out`` (B, OH, OW), the padding ``pt`` rows above and ``pl`` columns left (the rest
    implied by the output size). Serial and ``nogil``: ``pool_nchw`` runs blocks of planes
    as tasks.

    Per plane: the vertical pass writes ``v`` (OH rows of pitch ``wp``, a multiple of the
    stride, the horizontal padding already in place); ``v`` is split into ``sw`` phases
    (phase ``p`` is ``ph[p * plen + k] = v[k * sw + p]``), so that column tap ``j`` of every
    output position is phase ``j*dw % sw`` at ``k + j*dw // sw`` for a contiguous ``k``;
    each tap is then one long loop over all OH * wq positions ("wide" rows whose values
    past OW are discarded). One function with its loops written out: every nested
    ``@njit`` call is compiled, linked and optimised again inside its caller (cold-start
    cost), and ``is_max`` is a runtime flag (one specialisation per dtype)."""
    h, wd = x.shape[1], x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    init = -np.inf if is_max else 0.0
    wq = (max(pl + wd, (ow - 1) * sw + (kw - 1) * dw + 1) + sw - 1) // sw
    wp = wq * sw
    span = oh * wq
    plen = span + (kw - 1) * dw // sw + 1  # phase length: the last taps read past span
    v = np.empty(plen * sw, x.dtype)
    ph = v if sw == 1 else np.empty(plen * sw, x.dtype)
    wide = np.empty(span, x.dtype)
    for b in range(b0, b1):
        for k in range(plen * sw):
            v[k] = init
        for y in range(oh):
            dst = v[y * wp + pl:y * wp + pl + wd]
            for i in range(kh):
                r = y * sh + i * dh - pt
                if r < 0 or r >= h:
                    continue
                src = x[b, r]
                if is_max:
                    for k in range(wd):
                        dst[k] = _nanmax(dst[k], src[k])
                else:
                    for k in range(wd):
                        dst[k] += src[k]
        if sw == 2:  # both members of each pair in one loop: LLVM vectorises it
            p0, p1 = ph[:plen], ph[plen:]
            for k in range(plen):
                p0[k] = v[2 * k]
                p1[k] = v[2 * k + 1]
        elif sw > 2:
            for p in range(sw):
                pp = ph[p * plen:(p + 1) * plen]
                for k in range(plen):
                    pp[k] = v[k * sw + p]
        for k in range(span):
            wide[k] = init
        for j in range(kw):
            off = (j * dw % sw) * plen + j * dw // sw
            src = ph[off:off + span]
            if is_max:
                for k in range(span):
                    wide[k] = _nanmax(wide[k], src[k])
            else:
                for k in range(span):
                    wide[k] += src[k]
        for y in range(oh):
            dst, src = out[b, y], wide[y * wq:y * wq + ow]
            if is_max:
                for q in range(ow):
                    dst[q] = src[q]
            else:
                ch = cnt_h[y]
                for q in range(ow):
                    dst[q] = src[q] / (ch * cnt_w[q])


@njit(cache=True, nogil=True)
def hpass_rows(x, t, r0, r1, kw, sw, dw, pl, is_max):
    """NHWC horizontal pass of the rows ``r0 <= r < r1``: ``t[r, q, :]`` = max/sum of
    ``x[r, q*sw + j*dw - pl, :]`` over the valid taps ``j``; ``x`` (R, W, C), ``t``
    (R, OW, C), the inner loops over channels (serial, ``nogil``)."""
    w, ow, c_ = x.shape[1], t.shape[1], t.shape[2]
    init = -np.inf if is_max else 0.0
    for r in range(r0, r1):
        row, tr = x[r], t[r]
        for q in range(ow):
            tq = tr[q]
            for c in range(c_):
                tq[c] = init
        for j in range(kw):
            xs = j * dw - pl
            lo = 0 if xs >= 0 else (-xs + sw - 1) // sw  # the taps inside [0, w)
            hi = (w - 1 - xs) // sw + 1 if w - 1 - xs >= 0 else 0
            lo = min(lo, ow)
            hi = max(min(hi, ow), lo)
            for q in range(lo, hi):
                src, dst = row[xs + q * sw], tr[q]
                if is_max:
                    for c in range(c_):
                        dst[c] = _nanmax(dst[c], src[c])
                else:
                    for c in range(c_):
                        dst[c] += src[c]


@njit(cache=True, nogil=True)
def vpass_rows(t, out, r0, r1, h, oh, kh, sh, dh, pt, is_max, cnt_h, cnt_w):
    """NHWC vertical pass of the output rows ``r0 <= r < r1``: ``out[r]`` (row ``y = r %
    OH`` of image ``r // OH``; ``out`` (N*OH, OW*C)) from the scratch rows
    ``t[n*h + y*sh + i*dh - pt]`` (``t`` (N*H, OW*C)); averages divide by
    ``cnt_h[y] * cnt_w[q]`` (serial, ``nogil``)."""
    m = out.shape[1]
    init = -np.inf if is_max else 0.0
    for row in range(r0, r1):
        n, y = row // oh, row % oh
        dst = out[row]
        for q in range(m):
            dst[q] = init
        for i in range(kh):
            r = y * sh + i * dh - pt
            if r < 0 or r >= h:
                continue
            src = t[n * h + r]
            if is_max:
                for q in range(m):
                    dst[q] = _nanmax(dst[q], src[q])
            else:
                for q in range(m):
                    dst[q] += src[q]
        if not is_max:
            ow = cnt_w.shape[0]
            per = m // ow  # channels per output column
            ch = cnt_h[y]
            for q in range(ow):
                div = ch * cnt_w[q]
                for c in range(q * per, (q + 1) * per):
                    dst[c] = dst[c] / div


def pool_nchw(x, out, kh, kw, sh, sw, dh, dw, pt, pl, is_max, cnt_h, cnt_w):  # type: ignore[no-untyped-def]
    """Max or average pooling of ``x`` (B, H, W) into ``out`` (B, OH, OW): ``pool_planes``
    over blocks of planes (tasks when the work is large)."""
    run_blocks(x.shape[0], x.shape[1] * x.shape[2], lambda lo, hi: pool_planes(
        x, out, lo, hi, kh, kw, sh, sw, dh, dw, pt, pl, is_max, cnt_h, cnt_w))


def pool_nhwc(x, out, kh, kw, sh, sw, dh, dw, pt, pl, is_max, cnt_h, cnt_w):  # type: ignore[no-untyped-def]
    """Max or average pooling of ``x`` (N, H, W, C) into ``out`` (N, OH, OW, C): the
    horizontal pass of every input row into a scratch (N*H, OW, C), then the vertical pass
    of every output row, each over blocks of rows (tasks when the work is large)."""
    n_, h, w, c_ = x.shape
    oh, ow = out.shape[1], out.shape[2]
    rows, outs = n_ * h, n_ * oh
    x3 = x.reshape(rows, w, c_)
    t = np.empty((rows, ow, c_), x.dtype)
    t2, o2 = t.reshape(rows, ow * c_), out.reshape(outs, ow * c_)
    run_blocks(rows, ow * c_ * kw,
               lambda lo, hi: hpass_rows(x3, t, lo, hi, kw, sw, dw, pl, is_max))
    run_blocks(outs, ow * c_ * kh, lambda lo, hi: vpass_rows(
        t2, o2, lo, hi, h, oh, kh, sh, dh, pt, is_max, cnt_h, cnt_w))


def global_pool_rows(x, out, is_max):  # type: ignore[no-untyped-def]
    """Max or mean of each row of ``x`` (R, L) into ``out`` (R,); L >= 1."""
    r_, l_ = x.shape
    run_blocks(r_, l_, lambda lo, hi: global_rows(x, out, lo, hi, is_max))


def global_pool_mid(x, out, is_max):  # type: ignore[no-untyped-def]
    """Max or mean over axis 1 of ``x`` (N, L, C) into ``out`` (N, C); L >= 1."""
    n_, l_, c_ = x.shape
    run_blocks(n_, l_ * c_, lambda lo, hi: global_mid(x, out, lo, hi, is_max))


@njit(cache=True, fastmath=True, nogil=True)
def global_rows(x, out, r0, r1, is_max):
    """Max or mean of the rows ``r0 <= r < r1`` of ``x`` (R, L) into ``out`` (R,); L >= 1
    (serial)."""
    l_ = x.shape[1]
    for r in range(r0, r1):
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


@njit(cache=True, fastmath=True, nogil=True)
def global_mid(x, out, n0, n1, is_max):
    """Max or mean over axis 1 of the images ``n0 <= n < n1`` of ``x`` (N, L, C) into
    ``out`` (N, C); L >= 1 (serial)."""
    l_, c_ = x.shape[1], x.shape[2]
    for n in range(n0, n1):
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
