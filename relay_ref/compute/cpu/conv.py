"""2-d convolution kernels: im2col into a preallocated column buffer and direct depthwise
loops (``../shared/reference/performance.md`` section 3).

These are pure array kernels over C-contiguous float32/float64 arrays of fixed rank; the
op-level adapter (``relay_ref.ops.cpu_nn``) validates shapes, picks a kernel per shape class
and runs the matrix products with NumPy's BLAS *outside* numba (``np.dot`` inside ``@njit``
would need SciPy and start a second BLAS thread pool).

Inner loops run over 1-d slices taken at non-negative offsets, so numba emits no
wrap-around code there and they vectorise. Shape conventions:

* ``im2col_nchw``: output rows ``[y0, y1)`` of ``(C, H, W)`` into ``(C * KH * KW, (y1 - y0)
  * OW)``; row ``(c * KH + i) * KW + j``, column ``(y - y0) * OW + x``; the zero padding is
  written by the kernel (no padded copy). ``weight.reshape(O, -1) @ col`` is those rows of
  the ``(O, OH * OW)`` output.
* ``im2col_nhwc``: output pixels ``[p0, p1)``, channels ``[c0, c0 + cg)`` of ``(H, W, C)``
  into ``(p1 - p0, KH * KW * cg)``; column ``(i * KW + j) * cg + c``. ``col @
  weight_hwio.reshape(-1, O)`` is those rows of the ``(OH * OW, O)`` output.
* depthwise (``groups == C``, ``O = C * mult``): output channel ``o`` reads input channel
  ``o // mult``. NHWC skips the taps in the padding; NCHW (``depthwise_nchw_phased``)
  splits each plane into its stride phases, zero-padded, in a buffer reused across planes:
  the strided taps become contiguous loops (stride 2: 2.4-3.2x faster than strided loads on
  ShuffleNet's layers, loaded machine).

Only the NCHW depthwise kernel copies the input into a padded buffer: the zero padding is
written into the columns (im2col) or skipped (NHWC depthwise), with ``valid_range`` giving
the in-bounds output columns of each tap.

Every function is compiled with ``cache=True``, serial and ``nogil``: each works on a range
of its output (rows ``[y0, y1)``, pixels ``[p0, p1)``, planes or rows ``[r0, r1)``), and the
adapter splits the work (and the products after im2col) over the executor's work pool
(``relay_ref.compute.cpu.parallel``), which balances dynamically on a busy machine where
OpenMP's static ``prange`` split waits for a descheduled thread.
"""

from __future__ import annotations

import numpy as np

from relay_ref.compute.cpu import numba

njit = numba.njit


@njit(cache=True)
def valid_range(start, step, size, count):
    """The positions ``k`` in [0, count) with ``0 <= start + k * step < size``, as a
    (lo, hi) pair with lo <= hi (``step`` >= 1)."""
    lo = 0
    if start < 0:
        lo = (-start + step - 1) // step
    hi = 0
    if size - 1 - start >= 0:
        hi = (size - 1 - start) // step + 1
    lo = min(lo, count)
    hi = max(min(hi, count), lo)
    return lo, hi


@njit(cache=True, nogil=True)
def im2col_nchw(x, col, kh, kw, sh, sw, dh, dw, pt, pl, ow, y0, y1):
    """Columns of output rows [y0, y1) of the (C, H, W) image ``x``, zero-padded by ``pt``
    rows on top and ``pl`` columns on the left (and as needed bottom/right), into ``col``
    (C*KH*KW, (y1-y0)*OW). Serial and ``nogil``: the work pool runs it on row blocks (a
    slice of ``x``'s channels into the matching rows of ``col``) or output-row blocks."""
    c_, h, w = x.shape
    kk = kh * kw
    for r in range(c_ * kk):
        c = r // kk
        k = r - c * kk
        i = k // kw
        j = k - i * kw
        xs = j * dw - pl  # input column of output column 0
        lo, hi = valid_range(xs, sw, w, ow)
        for y in range(y0, y1):
            dst = col[r, (y - y0) * ow:(y - y0 + 1) * ow]
            row = y * sh + i * dh - pt
            if row < 0 or row >= h:
                for q in range(ow):
                    dst[q] = 0.0
                continue
            for q in range(lo):
                dst[q] = 0.0
            if hi > lo:
                # slices start at non-negative offsets: the copy loop has no wrap-around
                src = x[c, row, xs + lo * sw:]
                inner = dst[lo:hi]
                if sw == 1:
                    for q in range(hi - lo):
                        inner[q] = src[q]
                else:
                    for q in range(hi - lo):
                        inner[q] = src[q * sw]
            for q in range(hi, ow):
                dst[q] = 0.0


@njit(cache=True, nogil=True)
def im2col_nhwc(x, col, kh, kw, sh, sw, dh, dw, pt, pl, ow, c0, cg, p0, p1):
    """Columns of output pixels [p0, p1) (row-major over (OH, OW)) for channels [c0, c0+cg)
    of the (H, W, C) image ``x``, zero-padded by ``pt`` rows on top and ``pl`` columns on
    the left, into ``col`` (p1-p0, KH*KW*cg). Serial and ``nogil`` (the work pool runs it on
    pixel blocks)."""
    h, w = x.shape[0], x.shape[1]
    for p in range(p0, p1):
        y = p // ow
        xo = p - y * ow
        for i in range(kh):
            row = y * sh + i * dh - pt
            for j in range(kw):
                cx = xo * sw + j * dw - pl
                base = (i * kw + j) * cg
                dst = col[p - p0, base:base + cg]
                if row < 0 or row >= h or cx < 0 or cx >= w:
                    for c in range(cg):
                        dst[c] = 0.0
                else:
                    src = x[row, cx, c0:c0 + cg]
                    for c in range(cg):
                        dst[c] = src[c]


@njit(cache=True, nogil=True, fastmath=True)
def depthwise_nchw_phased(x, w, out, c_, sh, sw, dh, dw, pt, pl, mult, r0, r1):
    """Depthwise convolution of ``x`` (N*C, H, W), zero-padded by ``pt`` rows on top and
    ``pl`` columns on the left, with ``w`` (O, KH, KW), O = C*mult, into output planes
    [r0, r1) of ``out`` (N*O, OH, OW), on the stride phases of the zero-padded plane:
    phase ``(a, b)`` holds the padded values at rows ``u * sh + a`` and columns ``v * sw +
    b`` (``hq`` rows of pitch ``wq``), so tap ``(i, j)`` of every output position ``(y, q)``
    is phase ``(i*dh % sh, j*dw % sw)`` at ``(y + i*dh // sh) * wq + q + j*dw // sw``: one
    long contiguous loop over all ``OH * wq`` positions ("wide" rows whose last ``wq - OW``
    values are discarded) per tap, for stride 2 as for stride 1 (strided loads alone do not
    vectorise). The phases are allocated and zeroed once per call: the padding positions
    are the same for every plane, and each plane overwrites only the in-range ones."""
    oh, ow = out.shape[1], out.shape[2]
    o_, kh, kw = w.shape
    h, wd = x.shape[1], x.shape[2]
    hq = oh + (kh - 1) * dh // sh + 1  # one spare row: the wide loops read past the last
    wq = ow + (kw - 1) * dw // sw
    plen = hq * wq
    span = oh * wq
    ph = np.zeros(sh * sw * plen, x.dtype)
    acc = np.empty(span, x.dtype)
    for r in range(r0, r1):
        n = r // o_
        o = r - n * o_
        c = n * c_ + o // mult
        for a in range(sh):
            u0, u1 = valid_range(a - pt, sh, h, hq)
            for b in range(sw):
                v0, v1 = valid_range(b - pl, sw, wd, wq)
                base = (a * sw + b) * plen
                for u in range(u0, u1):
                    src = x[c, u * sh + a - pt, v0 * sw + b - pl:]
                    dst = ph[base + u * wq + v0:]
                    if sw == 1:
                        for v in range(v1 - v0):
                            dst[v] = src[v]
                    else:
                        for v in range(v1 - v0):
                            dst[v] = src[v * sw]
        for k in range(span):
            acc[k] = 0.0
        for i in range(kh):
            a, oi = i * dh % sh, i * dh // sh
            j = 0
            while j + 3 <= kw:  # three taps per pass: a third of the loads/stores of acc
                w0, w1, w2 = w[o, i, j], w[o, i, j + 1], w[o, i, j + 2]
                s0 = ph[(a * sw + j * dw % sw) * plen + oi * wq + j * dw // sw:]
                s1 = ph[(a * sw + (j + 1) * dw % sw) * plen + oi * wq + (j + 1) * dw // sw:]
                s2 = ph[(a * sw + (j + 2) * dw % sw) * plen + oi * wq + (j + 2) * dw // sw:]
                for k in range(span):
                    acc[k] += w0 * s0[k] + w1 * s1[k] + w2 * s2[k]
                j += 3
            for jj in range(j, kw):
                wv = w[o, i, jj]
                src = ph[(a * sw + jj * dw % sw) * plen + oi * wq + jj * dw // sw:]
                for k in range(span):
                    acc[k] += wv * src[k]
        for y in range(oh):
            dst = out[r, y]
            src = acc[y * wq:]
            for q in range(ow):
                dst[q] = src[q]


@njit(cache=True, nogil=True, fastmath=True)
def depthwise_nhwc(x, w, out, sh, sw, dh, dw, pt, pl, mult, r0, r1):
    """Depthwise convolution of ``x`` (N, H, W, C), zero-padded by ``pt`` rows on top and
    ``pl`` columns on the left, with ``w`` (KH, KW, O), O = C*mult, into output rows
    [r0, r1) (of the N*OH rows) of ``out`` (N, OH, OW, O)."""
    oh, ow, o_ = out.shape[1], out.shape[2], out.shape[3]
    h, wd = x.shape[1], x.shape[2]
    kh, kw = w.shape[0], w.shape[1]
    for r in range(r0, r1):
        n = r // oh
        y = r - n * oh
        for q in range(ow):
            dst = out[n, y, q]
            for o in range(o_):
                dst[o] = 0.0
            for i in range(kh):
                row = y * sh + i * dh - pt
                if row < 0 or row >= h:
                    continue
                for j in range(kw):
                    cx = q * sw + j * dw - pl
                    if cx < 0 or cx >= wd:
                        continue
                    src = x[n, row, cx]
                    wr = w[i, j]
                    if mult == 1:
                        for o in range(o_):
                            dst[o] += wr[o] * src[o]
                    else:
                        for o in range(o_):
                            dst[o] += wr[o] * src[o // mult]
