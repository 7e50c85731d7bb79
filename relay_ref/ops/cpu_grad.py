"""CPU kernels of the training step's gradient ops: the ``kernels["cpu"]`` entries of
``nn.conv2d_transpose`` (conv2d's data gradient), ``nn.max_pool2d_grad`` and
``nn.avg_pool2d_grad`` (named in ``relay_ref/ops/kernels.py``), and conv2d's weight gradient
as the AD rules emit it (``conv2d_many_taps``, called by ``cpu_nn.conv2d``).

Each kernel follows the kernel protocol (``registry.KernelRef``): ``fn(args, attrs,
out=None)`` computes what the op's NumPy reference computes, writes into ``out`` when given
and returns it, never returns a view of an argument and never mutates one. The fast paths
(``relay_ref.compute.cpu.conv_grad`` / ``pool_grad``, GEMMs through ``blas.gemm``, the work
split over cores by ``parallel.run_tasks`` over disjoint output planes) cover float32 and
float64 with every argument of one dtype and non-empty shapes that fit the attributes:

* ``nn.conv2d_transpose``: data layout ``NCHW`` (``out_layout`` empty or ``NCHW``), any
  kernel layout (the weight is viewed as IOHW), ``out_dtype`` empty or the data's, every
  stride, padding, output_padding, dilation and group count. Per image and group, ``cols =
  W_g^T @ x_g`` (one GEMM) scattered into the output by ``col2im``; with one input
  channel per group (depthwise) a direct scatter, all groups of an image at once.
* ``nn.max_pool2d_grad`` / ``nn.avg_pool2d_grad``: layout ``NCHW`` or ``NHWC`` (NHWC
  transposed to NCHW and back), ``out_layout`` empty or equal; every pool size, stride,
  dilation, padding, ceil_mode and count_include_pad.
* conv2d's weight gradient: AD's ``_conv2d_rev`` (``relay_ref/ops/grad_nn.py``) emits a
  one-group NCHW ``nn.conv2d`` whose weight is the output gradient, so its kernel has many
  more taps than its output positions. im2col's column buffer is then (C*KH*KW, OH*OW):
  very long and a few columns wide. ``conv2d_many_taps`` builds its transpose instead (rows
  of contiguous taps) and runs one GEMM per image, ``W (O, C*KH*KW) @ P^T``.

The column and patch matrices are temporaries in a per-thread buffer kept between calls
(``_Scratch``), so large ones do not page-fault on every call.

Everything else (integer or mixed dtypes, other layouts, empty tensors, shapes the relation
would reject) runs the op's reference, whose errors are therefore the reference's.
"""

from __future__ import annotations

import threading

import numpy as np

from relay_ref.compute.cpu import blas, parallel
from relay_ref.compute.cpu import conv_grad as cgrad
from relay_ref.compute.cpu import pool_grad as cpool
from relay_ref.ops import cpu_protocol
from relay_ref.ops.layout import from_canonical, to_canonical
from relay_ref.ops.nn import pad4, pool_out_hw

Array = np.ndarray

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_POOL_LAYOUTS = ("NCHW", "NHWC")
#: at most this many input channels per group: the direct transposed convolution (no GEMM)
DIRECT_MAX_CG = 1
#: a conv2d whose kernel has at least this many times more taps than output positions runs
#: as ``conv2d_many_taps``
MANY_TAPS_RATIO = 4
#: plane blocks per thread for the pools' gradients (dynamic balance, few Python calls)
BLOCKS_PER_THREAD = 4


_reference, _target, _finish = cpu_protocol.reference, cpu_protocol.target, cpu_protocol.finish


class _Scratch(threading.local):
    """One reusable buffer per thread for the kernels' temporaries (column and patch
    matrices). A fresh large array is a fresh mmap under glibc's default threshold, its
    pages faulted in on every call (measured: the benchmark step's weight gradients 1.19 ->
    0.41 ms and 0.88 -> 0.56 ms without the faults). A temporary is used only between its
    ``take`` and the end of the task that took it, and a thread runs its tasks one at a time,
    so one buffer per thread is never shared."""

    buf: Array | None = None

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> Array:
        """An uninitialised C-contiguous array of ``shape``: a view of this thread's buffer,
        or a fresh array above ``SCRATCH_MAX_BYTES`` (not kept)."""
        need = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if need > SCRATCH_MAX_BYTES:
            return np.empty(shape, dtype)
        if self.buf is None or self.buf.nbytes < need:
            self.buf = np.empty(max(need, 1), np.uint8)
        return self.buf[:need].view(dtype).reshape(shape)


#: the largest temporary a thread keeps for reuse
SCRATCH_MAX_BYTES = 64 << 20
_SCRATCH = _Scratch()


def _floats(*arrays: object) -> bool:
    """Non-empty 4-d float arrays of one dtype."""
    first = arrays[0]
    return all(isinstance(a, np.ndarray) and a.ndim == 4 and a.size > 0 for a in arrays) \
        and first.dtype in _FLOATS and all(a.dtype == first.dtype for a in arrays)  # type: ignore


# -- nn.conv2d_transpose -----------------------------------------------------------------

def conv2d_transpose(args: list, attrs: object, out: Array | None = None) -> Array:
    """``nn.conv2d_transpose`` (see the module docstring for the fast cases)."""
    op = "nn.conv2d_transpose"
    data, weight = args[0], args[1]
    a = attrs
    if not (_floats(data, weight) and a.data_layout == "NCHW"  # type: ignore[attr-defined]
            and a.out_layout in ("", "NCHW")  # type: ignore[attr-defined]
            and a.out_dtype in ("", data.dtype.name)):  # type: ignore[attr-defined]
        return _reference(op, args, attrs, out)
    w = np.ascontiguousarray(to_canonical(weight, a.kernel_layout, "IOHW"))  # type: ignore
    n, c, h, wd = data.shape
    cin, og, kh, kw = w.shape
    g = a.groups  # type: ignore[attr-defined]
    (sh, sw), (dh, dw) = a.strides, a.dilation  # type: ignore[attr-defined]
    pt, pl, pb, pr = pad4(a.padding)  # type: ignore[attr-defined]
    oph, opw = a.output_padding  # type: ignore[attr-defined]
    oh = (h - 1) * sh - pt - pb + dh * (kh - 1) + 1 + oph
    ow = (wd - 1) * sw - pl - pr + dw * (kw - 1) + 1 + opw
    if cin != c or c % g or oh <= 0 or ow <= 0:
        return _reference(op, args, attrs, out)
    x = np.ascontiguousarray(data)
    res = _target(out, (n, g * og, oh, ow), x.dtype)
    cg = c // g
    if cg <= DIRECT_MAX_CG:
        def image(b: int) -> None:
            cgrad.zero_planes(res[b])
            cgrad.convt_direct(x[b], w, res[b], g, sh, sw, dh, dw, pt, pl)
        parallel.run_tasks(n, image)
        return _finish(res, out)
    rows = og * kh * kw
    # W_g^T: (OG*KH*KW, CG) transposed views of the group's (CG, OG*KH*KW) weight rows
    wts = [w[k * cg:(k + 1) * cg].reshape(cg, rows).T for k in range(g)]

    def image_group(t: int) -> None:
        b, k = divmod(t, g)
        planes = res[b, k * og:(k + 1) * og]
        cols = blas.gemm(wts[k], x[b, k * cg:(k + 1) * cg].reshape(cg, h * wd),
                         out=_SCRATCH.take((rows, h * wd), x.dtype))
        cgrad.zero_planes(planes)
        cgrad.col2im_nchw(cols, planes, h, wd, kh, kw, sh, sw, dh, dw, pt, pl)
    parallel.run_tasks(n * g, image_group)
    return _finish(res, out)


# -- conv2d's weight gradient (a hook of cpu_nn.conv2d) ------------------------------------

def many_taps(geo: object) -> bool:
    """Whether a conv2d of this geometry (``cpu_nn.ConvGeometry``) runs as
    ``conv2d_many_taps``: one group, many more kernel taps than output positions."""
    return (geo.groups == 1  # type: ignore[attr-defined]
            and geo.kh * geo.kw >= MANY_TAPS_RATIO * geo.oh * geo.ow)  # type: ignore


def conv2d_many_taps(x: Array, w: Array, geo: object, res: Array) -> None:
    """NCHW ``x`` by OIHW ``w`` (C-contiguous, one group) into ``res`` (N, O, OH, OW): per
    image the transposed patches (OH*OW, C*KH*KW), then ``W @ P^T`` into its planes."""
    g = geo
    k_len = g.c * g.kh * g.kw  # type: ignore[attr-defined]
    pixels = g.oh * g.ow  # type: ignore[attr-defined]
    w2 = w.reshape(g.o, k_len)  # type: ignore[attr-defined]
    (sh, sw), (dh, dw), (pt, pl, _, _) = g.strides, g.dilation, g.pads  # type: ignore

    def image(b: int) -> None:
        p = _SCRATCH.take((pixels, k_len), x.dtype)
        cgrad.patches_t(x[b], p, g.kh, g.kw, sh, sw, dh, dw, pt, pl,  # type: ignore
                        g.oh, g.ow)  # type: ignore[attr-defined]
        blas.gemm(w2, p.T, out=res[b].reshape(g.o, pixels))  # type: ignore[attr-defined]
    parallel.run_tasks(g.n, image)  # type: ignore[attr-defined]


# -- nn.max_pool2d_grad / nn.avg_pool2d_grad -----------------------------------------------

def _axis_counts(k: int, s: int, d: int, lo: int, hi: int, size: int, dtype: np.dtype) -> Array:
    """For each of ``size`` windows along one axis (positions counted from the start of the
    explicit padding), how many of its ``k`` taps fall in the counted range [lo, hi), at
    least 1 (the divisor matters only where a window has an in-bounds tap)."""
    taps = np.arange(size)[:, None] * s + np.arange(k)[None, :] * d
    return np.maximum(((taps >= lo) & (taps < hi)).sum(axis=1), 1).astype(dtype)


def _pool_grad(op: str, args: list, attrs: object, out: Array | None, is_max: bool) -> Array:
    grad, data = args[0], args[1]
    layout = attrs.layout  # type: ignore[attr-defined]
    if not (_floats(grad, data) and layout in _POOL_LAYOUTS
            and attrs.out_layout in ("", layout)):  # type: ignore[attr-defined]
        return _reference(op, args, attrs, out)
    x = np.ascontiguousarray(to_canonical(data, layout, "NCHW"))
    n, c, h, w = x.shape
    (kh, kw), (sh, sw) = attrs.pool_size, attrs.strides  # type: ignore[attr-defined]
    dh, dw = attrs.dilation  # type: ignore[attr-defined]
    pt, pl, pb, pr = pad4(attrs.padding)  # type: ignore[attr-defined]
    oh, ow = pool_out_hw(h, w, attrs)
    gc = to_canonical(grad, layout, "NCHW")
    if oh <= 0 or ow <= 0 or gc.shape != (n, c, oh, ow):  # type: ignore[operator]
        return _reference(op, args, attrs, out)
    g3 = np.ascontiguousarray(gc).reshape(n * c, oh, ow)  # type: ignore[arg-type]
    if layout == "NCHW":
        res = _target(out, (n, c, h, w), x.dtype)
    else:
        res = np.empty((n, c, h, w), x.dtype)
    planes, r3 = n * c, res.reshape(n * c, h, w)
    x3 = x.reshape(planes, h, w)
    blocks = min(planes, BLOCKS_PER_THREAD * parallel.threads())
    if parallel.threads() == 1:
        blocks = 1
    bounds = [planes * i // blocks for i in range(blocks + 1)]
    if is_max:
        def task(i: int) -> None:
            cpool.max_grad(g3, x3, r3, bounds[i], bounds[i + 1], kh, kw, sh, sw, dh, dw,
                           pt, pl)
    else:
        include = attrs.count_include_pad  # type: ignore[attr-defined]
        lo_h, hi_h = (0, h + pt + pb) if include else (pt, pt + h)
        lo_w, hi_w = (0, w + pl + pr) if include else (pl, pl + w)
        cnt_h = _axis_counts(kh, sh, dh, lo_h, hi_h, oh, x.dtype)  # type: ignore[arg-type]
        cnt_w = _axis_counts(kw, sw, dw, lo_w, hi_w, ow, x.dtype)  # type: ignore[arg-type]

        def task(i: int) -> None:
            cpool.avg_grad(g3, r3, bounds[i], bounds[i + 1], kh, kw, sh, sw, dh, dw, pt, pl,
                           cnt_h, cnt_w)
    parallel.run_tasks(blocks, task)
    if layout == "NCHW":
        return _finish(res, out)
    back = from_canonical(res, layout, "NCHW")
    if out is None:
        return np.ascontiguousarray(back)
    np.copyto(out, back)
    return out


def max_pool2d_grad(args: list, attrs: object, out: Array | None = None) -> Array:
    """``nn.max_pool2d_grad``: each out_grad element to its window's first maximum."""
    return _pool_grad("nn.max_pool2d_grad", args, attrs, out, True)


def avg_pool2d_grad(args: list, attrs: object, out: Array | None = None) -> Array:
    """``nn.avg_pool2d_grad``: each out_grad element over its window's divisor, to every
    counted element."""
    return _pool_grad("nn.avg_pool2d_grad", args, attrs, out, False)
