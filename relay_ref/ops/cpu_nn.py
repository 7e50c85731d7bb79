"""CPU kernels of the convolution and pooling operators: the ``kernels["cpu"]`` entries of
``nn.conv2d``, ``nn.max_pool2d``, ``nn.avg_pool2d``, ``nn.global_avg_pool2d`` and
``nn.global_max_pool2d`` (named in ``relay_ref/ops/kernels.py``).

Each function follows the kernel protocol (``registry.KernelRef``): ``fn(args, attrs,
out=None)`` computes what the op's NumPy reference computes, writes into ``out`` when given
and returns it, never returns a view of an argument and never mutates one. The fast path
(``relay_ref.compute.cpu.conv`` / ``pool`` plus NumPy's BLAS) covers:

* float32 and float64 (conv2d: both arguments of one dtype, ``out_dtype`` empty or equal);
* data layout ``NCHW`` or ``NHWC`` with ``out_layout`` empty or equal; conv2d accepts any
  kernel layout (the small weight is transposed to ``OIHW`` / ``HWIO``);
* non-empty tensors whose shapes fit the attributes.

Everything else (integer dtypes, mixed dtypes, other layouts, empty tensors, shapes the
relation would reject) runs the op's reference, whose errors are therefore the reference's.

conv2d picks a kernel per shape class: a 1x1, stride-1, unpadded convolution is a plain
matrix product; a depthwise one (``groups == C > 1``, one input channel per group) is a
direct loop that skips the padding taps; the rest is im2col into a column buffer (one group and
batch element at a time) followed by a GEMM. Only the im2col and direct loops run in numba;
the products run in NumPy's OpenBLAS (``relay_ref.compute.cpu.blas``), and im2col plus
product are split over the executor's work pool (``_conv_nchw``'s docstring).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from relay_ref.compute.cpu import conv as cconv
from relay_ref.compute.cpu import parallel
from relay_ref.compute.cpu import pool as cpool
from relay_ref.ops import cpu_grad, cpu_protocol
from relay_ref.ops.layout import to_canonical
from relay_ref.ops.nn import pad4, pool_out_hw

Array = np.ndarray

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_LAYOUTS = ("NCHW", "NHWC")


_reference, _target, _finish = cpu_protocol.reference, cpu_protocol.target, cpu_protocol.finish


@functools.cache
def _blas() -> object:
    """``relay_ref.compute.cpu.blas`` (imported on first use, as ``cpu_tensor`` does)."""
    from relay_ref.compute.cpu import blas

    return blas


def _fast_layout(data: object, layout: str, out_layout: str) -> bool:
    """True when ``data`` is a non-empty 4-d float tensor in a layout the kernels read."""
    return (isinstance(data, np.ndarray) and data.dtype in _FLOATS and data.ndim == 4
            and data.size > 0 and layout in _LAYOUTS and out_layout in ("", layout))


# -- nn.conv2d ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ConvGeometry:
    """Sizes of one convolution; ``cg``/``og`` are input/output channels per group."""

    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int
    kw: int
    groups: int
    strides: tuple[int, int]
    dilation: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    oh: int
    ow: int

    @property
    def cg(self) -> int:
        return self.c // self.groups

    @property
    def og(self) -> int:
        return self.o // self.groups

    @property
    def pointwise(self) -> bool:
        """A 1x1, stride-1, unpadded convolution: a matrix product per group."""
        return (self.kh == self.kw == 1 and self.strides == (1, 1)
                and not any(self.pads))

    @property
    def depthwise(self) -> bool:
        """One input channel per group, more than one group (``O = C * multiplier``)."""
        return self.groups == self.c > 1


def conv_geometry(data_shape: tuple[int, ...], weight_shape: tuple[int, ...],
                  attrs: object) -> ConvGeometry | None:
    """The geometry of ``nn.conv2d`` on these shapes (data ``NCHW`` or ``NHWC``, weight
    ``OIHW``), or None when the shapes do not fit the attributes or anything is empty."""
    if attrs.data_layout == "NCHW":  # type: ignore[attr-defined]
        n, c, h, w = data_shape
    else:
        n, h, w, c = data_shape
    o, i, kh, kw = weight_shape
    g = attrs.groups  # type: ignore[attr-defined]
    if c != i * g or o % g or min(n, c, h, w, o, kh, kw) <= 0:
        return None
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation  # type: ignore[attr-defined]
    pads = pad4(attrs.padding)  # type: ignore[attr-defined]
    oh = (h + pads[0] + pads[2] - ((kh - 1) * dh + 1)) // sh + 1
    ow = (w + pads[1] + pads[3] - ((kw - 1) * dw + 1)) // sw + 1
    if oh <= 0 or ow <= 0:
        return None
    return ConvGeometry(n, c, h, w, o, kh, kw, g, (sh, sw), (dh, dw), pads, oh, ow)


def conv2d(args: list, attrs: object, out: Array | None = None) -> Array:
    """``nn.conv2d`` (see the module docstring for the fast cases)."""
    data, weight = args[0], args[1]
    layout = attrs.data_layout  # type: ignore[attr-defined]
    if not (_fast_layout(data, layout, attrs.out_layout)  # type: ignore[attr-defined]
            and isinstance(weight, np.ndarray) and weight.dtype == data.dtype
            and weight.ndim == 4
            and attrs.out_dtype in ("", data.dtype.name)):  # type: ignore[attr-defined]
        return _reference("nn.conv2d", args, attrs, out)
    kernel_layout = attrs.kernel_layout  # type: ignore[attr-defined]
    geo = conv_geometry(data.shape, to_canonical(weight, kernel_layout, "OIHW").shape, attrs)
    if geo is None:
        return _reference("nn.conv2d", args, attrs, out)
    x = np.ascontiguousarray(data)
    if layout == "NCHW":
        w = np.ascontiguousarray(to_canonical(weight, kernel_layout, "OIHW"))
        res = _target(out, (geo.n, geo.o, geo.oh, geo.ow), x.dtype)
        _conv_nchw(x, w, geo, res)
    else:
        w = np.ascontiguousarray(to_canonical(weight, kernel_layout, "HWIO"))
        res = _target(out, (geo.n, geo.oh, geo.ow, geo.o), x.dtype)
        _conv_nhwc(x, w, geo, res)
    return _finish(res, out)


def _slots(count: int, size: int, dtype: np.dtype) -> list[Array]:
    """``count`` flat scratch buffers of ``size`` elements, one per thread of the pool: a
    task takes one (``_take``) and appends it back (list operations are atomic under the
    GIL; at most ``threads()`` tasks run at once, so the list is empty only if the count
    changed in between, by another thread's executable: ``_take`` then allocates)."""
    return [np.empty(size, dtype) for _ in range(count)]


def _take(slots: list[Array], size: int, dtype: np.dtype) -> Array:
    try:
        return slots.pop()
    except IndexError:
        return np.empty(size, dtype)


#: Below these sizes the caller runs the work alone: a split into pool tasks of ~10-20 us
#: each lost more to waking (and, on a busy machine, waiting for) a worker than it gained.
#: ShuffleNet (loaded 2-core box, load 1.3-1.4, same-process A/B): its depthwise layers
#: (<= 790 k multiply-adds) and groups=4 1x1 products (<= 15 Mflop) serial made the model
#: 0.70-0.89x the time of the former 200 k / always-split thresholds.
#: depthwise work (multiply-adds) below which one task runs it all
_DEPTHWISE_SPLIT = 1_000_000
#: grouped 1x1 products (flops of all groups) below which they run in turn on the caller
_POINTWISE_SPLIT_FLOPS = 16_000_000


def _split_rows(rows: int, geo: ConvGeometry, kernel: object, args: tuple) -> None:
    """``kernel(*args, r0, r1)`` over ``[0, rows)``, in up to ``4 * threads`` blocks run
    by the pool when the convolution is large enough (depthwise kernels)."""
    t = parallel.threads()
    work = geo.n * geo.o * geo.oh * geo.ow * geo.kh * geo.kw
    chunks = 1 if t == 1 or work < _DEPTHWISE_SPLIT else min(rows, 4 * t)
    per = -(-rows // chunks)

    def block(i: int) -> None:
        kernel(*args, i * per, min(rows, (i + 1) * per))  # type: ignore[operator]

    parallel.run_tasks(-(-rows // per), block)


def _conv_nchw(x: Array, w: Array, geo: ConvGeometry, res: Array) -> None:
    """NCHW x OIHW into ``res`` (N, O, OH, OW); all C-contiguous.

    Work split (``relay_ref.compute.cpu.parallel``): with at least ``2 * threads`` (image,
    group) products, each is one task (serial im2col + one GEMM, a scratch buffer per
    thread); else each product is split: over output-row blocks (im2col of the block + its
    GEMM, one task) when its pixels outnumber its output channels, else im2col over
    channel blocks then ``blas.gemm`` (which splits the rows of the weight)."""
    if cpu_grad.many_taps(geo):  # conv2d's weight gradient as AD emits it (cpu_grad.py)
        cpu_grad.conv2d_many_taps(x, w, geo, res)
        return
    n, c, g, cg, og = geo.n, geo.c, geo.groups, geo.cg, geo.og
    (sh, sw), (dh, dw), (pt, pl, _, _) = geo.strides, geo.dilation, geo.pads
    if geo.depthwise:
        planes = x.reshape(n * c, geo.h, geo.w)
        w3 = w.reshape(geo.o, geo.kh, geo.kw)
        r3 = res.reshape(n * geo.o, geo.oh, geo.ow)
        _split_rows(n * geo.o, geo, cconv.depthwise_nchw_phased,
                    (planes, w3, r3, c, sh, sw, dh, dw, pt, pl, og))
        return
    blas = _blas()
    kk = cg * geo.kh * geo.kw
    pixels = geo.oh * geo.ow
    w2 = w.reshape(geo.o, kk)
    r3 = res.reshape(n, geo.o, pixels)
    t = parallel.threads()
    jobs = n * g
    flops = 2 * og * kk * pixels
    if geo.pointwise:
        x3 = x.reshape(n, c, geo.h * geo.w)

        def product(i: int) -> None:
            b, k = divmod(i, g)
            np.dot(w2[k * og:(k + 1) * og], x3[b, k * cg:(k + 1) * cg],
                   out=r3[b, k * og:(k + 1) * og])

        if t > 1 and jobs >= 2 * t and flops * jobs >= _POINTWISE_SPLIT_FLOPS:
            parallel.run_tasks(jobs, product)
        else:
            for i in range(jobs):
                b, k = divmod(i, g)
                blas.gemm(w2[k * og:(k + 1) * og], x3[b, k * cg:(k + 1) * cg],
                          r3[b, k * og:(k + 1) * og])
        return
    im2col = cconv.im2col_nchw
    geom = (geo.kh, geo.kw, sh, sw, dh, dw, pt, pl, geo.ow)
    if t == 1 or flops * jobs < blas.SPLIT_FLOPS or jobs >= 2 * t:
        slots = _slots(min(t, jobs), kk * pixels, x.dtype)

        def whole(i: int) -> None:
            b, k = divmod(i, g)
            buf = _take(slots, kk * pixels, x.dtype)
            try:
                col = buf.reshape(kk, pixels)
                im2col(x[b, k * cg:(k + 1) * cg], col, *geom, 0, geo.oh)
                np.dot(w2[k * og:(k + 1) * og], col, out=r3[b, k * og:(k + 1) * og])
            finally:
                slots.append(buf)

        parallel.run_tasks(jobs, whole)
        return
    for b in range(n):
        for k in range(g):
            _conv_nchw_one(x[b, k * cg:(k + 1) * cg], w2[k * og:(k + 1) * og],
                           r3[b, k * og:(k + 1) * og], geo, geom, t)


def _conv_nchw_one(xk: Array, wk: Array, out: Array, geo: ConvGeometry, geom: tuple,
                   t: int) -> None:
    """One image and group, ``out`` (og, OH*OW) = ``wk`` (og, cg*KH*KW) @ im2col(``xk``),
    split over the pool's ``t`` threads (see ``_conv_nchw``)."""
    og, kk = wk.shape
    cg = xk.shape[0]
    oh, ow = geo.oh, geo.ow
    im2col = cconv.im2col_nchw
    if oh * ow >= og and oh > 1:
        chunks = min(2 * t, oh)
        per = -(-oh // chunks)
        slots = _slots(t, kk * per * ow, xk.dtype)

        def block(i: int) -> None:
            y0, y1 = i * per, min(oh, (i + 1) * per)
            buf = _take(slots, kk * per * ow, xk.dtype)
            try:
                col = buf[:kk * (y1 - y0) * ow].reshape(kk, (y1 - y0) * ow)
                im2col(xk, col, *geom, y0, y1)
                np.matmul(wk, col, out=out[:, y0 * ow:y1 * ow])
            finally:
                slots.append(buf)

        parallel.run_tasks(-(-oh // per), block)
        return
    col = np.empty((kk, oh * ow), xk.dtype)
    taps = geo.kh * geo.kw
    per_c = -(-cg // min(2 * t, cg))

    def channels(i: int) -> None:
        c0, c1 = i * per_c, min(cg, (i + 1) * per_c)
        im2col(xk[c0:c1], col[c0 * taps:c1 * taps], *geom, 0, oh)

    parallel.run_tasks(-(-cg // per_c), channels)
    _blas().gemm(wk, col, out)


def _conv_nhwc(x: Array, w: Array, geo: ConvGeometry, res: Array) -> None:
    """NHWC x HWIO into ``res`` (N, OH, OW, O); all C-contiguous. Split over the pool as
    ``_conv_nchw``: (image, group) products as tasks when there are at least ``2 *
    threads``, else each product over blocks of output pixels (im2col of the block + its
    GEMM into those rows of the output, one task)."""
    n, c, g, cg, og = geo.n, geo.c, geo.groups, geo.cg, geo.og
    (sh, sw), (dh, dw), (pt, pl, _, _) = geo.strides, geo.dilation, geo.pads
    if geo.depthwise:
        _split_rows(n * geo.oh, geo, cconv.depthwise_nhwc,
                    (x, w.reshape(geo.kh, geo.kw, geo.o), res, sh, sw, dh, dw, pt, pl, og))
        return
    blas = _blas()
    if geo.pointwise and g == 1:
        rows = n * geo.h * geo.w
        blas.gemm(x.reshape(rows, c), w.reshape(c, geo.o), res.reshape(rows, geo.o))
        return
    k_len = geo.kh * geo.kw * cg
    pixels = geo.oh * geo.ow
    if g == 1:
        weights = [w.reshape(k_len, geo.o)]
    else:
        weights = [np.ascontiguousarray(w[:, :, :, k * og:(k + 1) * og]).reshape(k_len, og)
                   for k in range(g)]
    r3 = res.reshape(n, pixels, geo.o)
    geom = (geo.kh, geo.kw, sh, sw, dh, dw, pt, pl, geo.ow)
    t = parallel.threads()
    jobs = n * g
    flops = 2 * og * k_len * pixels
    if t == 1 or flops * jobs < blas.SPLIT_FLOPS or jobs >= 2 * t:
        chunks, per = jobs, pixels
    else:
        per = max(16, -(-pixels // (2 * t)))
        chunks = jobs * -(-pixels // per)
    blocks = -(-pixels // per)
    slots = _slots(min(t, chunks), per * k_len, x.dtype)

    def block(i: int) -> None:
        job, j = divmod(i, blocks)
        b, k = divmod(job, g)
        p0, p1 = j * per, min(pixels, (j + 1) * per)
        buf = _take(slots, per * k_len, x.dtype)
        try:
            col = buf[:(p1 - p0) * k_len].reshape(p1 - p0, k_len)
            cconv.im2col_nhwc(x[b], col, *geom, k * cg, cg, p0, p1)
            if g == 1:
                np.dot(col, weights[0], out=r3[b, p0:p1])
            else:
                np.matmul(col, weights[k], out=r3[b, p0:p1, k * og:(k + 1) * og])
        finally:
            slots.append(buf)

    parallel.run_tasks(chunks, block)


# -- pooling -----------------------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _window_counts(k: int, s: int, d: int, lo: int, hi: int, out_size: int,
                   dtype: np.dtype) -> Array:
    """For each of ``out_size`` windows along one axis (positions counted from the start of
    the explicit padding), how many of its ``k`` taps fall in the counted range [lo, hi), at
    least 1 (read-only, cached)."""
    taps = np.arange(out_size)[:, None] * s + np.arange(k)[None, :] * d
    counts = np.maximum(((taps >= lo) & (taps < hi)).sum(axis=1), 1).astype(dtype)
    counts.setflags(write=False)
    return counts


@functools.lru_cache(maxsize=4)
def _no_counts(dtype: np.dtype) -> Array:
    """Empty divisors for max pooling (read-only, as ``_window_counts``'s: one numba
    specialisation serves both)."""
    counts = np.ones(0, dtype)
    counts.setflags(write=False)
    return counts


def _pool(op: str, args: list, attrs: object, out: Array | None, is_max: bool) -> Array:
    data = args[0]
    layout = attrs.layout  # type: ignore[attr-defined]
    if not _fast_layout(data, layout, attrs.out_layout):  # type: ignore[attr-defined]
        return _reference(op, args, attrs, out)
    if layout == "NCHW":
        n, c, h, w = data.shape
    else:
        n, h, w, c = data.shape
    (kh, kw), (sh, sw) = attrs.pool_size, attrs.strides  # type: ignore[attr-defined]
    dh, dw = attrs.dilation  # type: ignore[attr-defined]
    pt, pl, pb, pr = pad4(attrs.padding)  # type: ignore[attr-defined]
    oh, ow = pool_out_hw(h, w, attrs)
    if oh <= 0 or ow <= 0:  # type: ignore[operator]
        return _reference(op, args, attrs, out)
    dtype = data.dtype
    if is_max:
        cnt_h = cnt_w = _no_counts(dtype)
    else:
        include = attrs.count_include_pad  # type: ignore[attr-defined]
        lo_h, hi_h = (0, h + pt + pb) if include else (pt, pt + h)
        lo_w, hi_w = (0, w + pl + pr) if include else (pl, pl + w)
        cnt_h = _window_counts(kh, sh, dh, lo_h, hi_h, oh, dtype)
        cnt_w = _window_counts(kw, sw, dw, lo_w, hi_w, ow, dtype)
    x = np.ascontiguousarray(data)
    # the kernels skip padding taps: bottom/right padding (and ceil_mode's extra) is implied
    # by the output size
    if layout == "NCHW":
        res = _target(out, (n, c, oh, ow), dtype)  # type: ignore[arg-type]
        cpool.pool_nchw(x.reshape(n * c, h, w), res.reshape(n * c, oh, ow), kh, kw, sh, sw,
                        dh, dw, pt, pl, is_max, cnt_h, cnt_w)
    else:
        res = _target(out, (n, oh, ow, c), dtype)  # type: ignore[arg-type]
        cpool.pool_nhwc(x, res, kh, kw, sh, sw, dh, dw, pt, pl, is_max, cnt_h, cnt_w)
    return _finish(res, out)


def _has_nan(data: object) -> bool:
    """Whether a float tensor may hold a NaN (its sum is NaN; an ``inf - inf`` false alarm
    only costs the reference). The global max reductions' ``max(m, v)`` do not propagate
    NaN as the reference's ``np.max`` does, so such inputs go to the reference."""
    return isinstance(data, np.ndarray) and data.dtype.kind == "f" and \
        bool(np.isnan(np.add.reduce(data, axis=None)))


def max_pool2d(args: list, attrs: object, out: Array | None = None) -> Array:
    """``nn.max_pool2d`` (padding is ``-inf``: it never wins; the kernels' selects
    propagate NaN as the reference's ``np.max``)."""
    return _pool("nn.max_pool2d", args, attrs, out, True)


def avg_pool2d(args: list, attrs: object, out: Array | None = None) -> Array:
    """``nn.avg_pool2d`` (divisors as the reference counts them)."""
    return _pool("nn.avg_pool2d", args, attrs, out, False)


def _global(op: str, args: list, attrs: object, out: Array | None, is_max: bool) -> Array:
    data = args[0]
    layout = attrs.layout  # type: ignore[attr-defined]
    if not _fast_layout(data, layout, attrs.out_layout):  # type: ignore[attr-defined]
        return _reference(op, args, attrs, out)
    x = np.ascontiguousarray(data)
    if layout == "NCHW":
        n, c, h, w = x.shape
        res = _target(out, (n, c, 1, 1), x.dtype)
        cpool.global_pool_rows(x.reshape(n * c, h * w), res.reshape(n * c), is_max)
    else:
        n, h, w, c = x.shape
        res = _target(out, (n, 1, 1, c), x.dtype)
        cpool.global_pool_mid(x.reshape(n, h * w, c), res.reshape(n, c), is_max)
    return _finish(res, out)


def global_avg_pool2d(args: list, attrs: object, out: Array | None = None) -> Array:
    """``nn.global_avg_pool2d``: the mean over H and W."""
    return _global("nn.global_avg_pool2d", args, attrs, out, False)


def global_max_pool2d(args: list, attrs: object, out: Array | None = None) -> Array:
    """``nn.global_max_pool2d``: the max over H and W."""
    if _has_nan(args[0]):
        return _reference("nn.global_max_pool2d", args, attrs, out)
    return _global("nn.global_max_pool2d", args, attrs, out, True)
