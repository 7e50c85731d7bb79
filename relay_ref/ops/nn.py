"""Neural-network operators (TVM ``src/relay/op/nn/*.cc``): convolutions, dense/matmul,
activations, softmax, pooling, normalisation, dropout, lrn, pad, batch_flatten.

Conventions:

* 2-d spatial ops accept any layout that is a permutation of ``NCHW`` (kernels: of
  ``OIHW``); references transpose to ``NCHW``/``OIHW``, compute, and transpose back.
* ``padding`` takes 1, 2 or 4 values: ``p`` (all sides), ``(ph, pw)`` (top=bottom=ph,
  left=right=pw) or ``(top, left, bottom, right)``, as TVM's ``get_pad_tuple2d``.
* ``out_dtype=""`` means "the input dtype"; otherwise inputs are cast to ``out_dtype``
  before multiplying, as TOPI does (int8 x int8 -> int32 accumulates in int32).
* Shapes with ``?`` propagate ``?`` through every size formula.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from relay_ref.ir.shape import (
    dim_divisible,
    dim_le,
    dim_map,
    dims_compatible,
    is_any,
    shape_prod,
    shape_text,
)
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.layout import (
    along,
    check_layout,
    check_rank,
    from_canonical,
    shape_from,
    shape_to,
    to_canonical,
)
from relay_ref.ops.registry import (
    NOT_YET,
    AttrError,
    OpRuntimeError,
    RelationError,
    register_op,
)
from relay_ref.ops.relations import (
    as_dtype,
    broadcast_shapes,
    check_dtype,
    identity_rel,
    is_float,
    normalize_axis,
    output_is_input,
    tensor_args,
)

Array = np.ndarray


# -- shared helpers -----------------------------------------------------------------



def _check_out_dtype(dtype: str) -> None:
    if dtype != "":
        check_dtype(dtype, "out_dtype")


def _pair(attrs: object, name: str, minimum: int = 1) -> None:
    """Validate a 2-value attribute; a single value ``v`` (as TVM's Python API accepts)
    is widened to ``(v, v)`` in place (before the frozen object is shared)."""
    values = getattr(attrs, name)
    if values is not None and len(values) == 1:
        values = (values[0], values[0])
        object.__setattr__(attrs, name, values)
    if values is not None:
        _check_pairs(name, values, 2, minimum)


def _check_pairs(name: str, values: tuple[int, ...], n: int = 2, minimum: int = 1) -> None:
    if len(values) != n:
        raise AttrError(f"{name} must have {n} values, found {len(values)}", name)
    if any(v < minimum for v in values):
        raise AttrError(f"{name} values must be >= {minimum}, found {values}", name)


def _check_padding(padding: tuple[int, ...], name: str = "padding") -> None:
    if len(padding) not in (1, 2, 4):
        raise AttrError(f"{name} must have 1, 2 or 4 values, found {len(padding)}", name)
    if any(p < 0 for p in padding):
        raise AttrError(f"{name} values must be >= 0, found {padding}", name)


def pad4(padding: tuple[int, ...]) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from 1, 2 or 4 values."""
    if len(padding) == 1:
        return (padding[0],) * 4  # type: ignore[return-value]
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    return tuple(padding)  # type: ignore[return-value]














def _out_dtype(attrs: object, default: str) -> str:
    return getattr(attrs, "out_dtype", "") or default


def _windows(x: Array, kernel: tuple[int, int], strides: tuple[int, int],
             dilation: tuple[int, int], out_hw: tuple[int, int]) -> Array:
    """Sliding windows of an already padded NCHW array: shape (N, C, OH, OW, KH, KW).

    The padded array must be large enough for ``out_hw`` windows (callers pad for it)."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, strides, dilation, out_hw
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    view = sliding_window_view(x, (eh, ew), axis=(2, 3))
    return view[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :oh, :ow]


def trunc_div(a: Array, b: Array) -> Array:
    """Integer division rounding towards zero (C semantics, as TOPI's integer mean)."""
    r = np.fmod(a, b)
    return np.floor_divide(a - r, b)


# -- nn.conv2d ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Conv2DAttrs:
    """2-d convolution. ``channels``/``kernel_size``, when given, must agree with the
    weight's shape. ``groups`` divides both the input and the output channels."""

    strides: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCHW"
    kernel_layout: str = "OIHW"
    out_layout: str = ""
    out_dtype: str = ""

    def __post_init__(self) -> None:
        _pair(self, "strides")
        _check_padding(self.padding)
        _pair(self, "dilation")
        if self.groups < 1:
            raise AttrError(f"groups must be >= 1, found {self.groups}", "groups")
        _pair(self, "kernel_size")
        check_layout(self.data_layout, "NCHW", "data_layout")
        check_layout(self.kernel_layout, "OIHW", "kernel_layout")
        if self.out_layout:
            check_layout(self.out_layout, "NCHW", "out_layout")
        _check_out_dtype(self.out_dtype)


def _conv_out(n: object, k: object, s: int, p: int, d: int) -> object:
    return dim_map(lambda n, k: (n + p - ((k - 1) * d + 1)) // s + 1, n, k)


def conv2d_rel(arg_types: list[Type], attrs: Conv2DAttrs) -> object:
    """The ``nn.conv2d`` relation (TVM ``Conv2DRel``); shared by ``qnn.conv2d``."""
    op = "nn.conv2d"
    args = tensor_args(op, arg_types, 2, ("data", "weight"))
    if args is NOT_YET:
        return NOT_YET
    data, weight = args
    check_rank(op, data, 4, "data")
    check_rank(op, weight, 4, "weight")
    n, c, h, w = shape_to(data.shape, attrs.data_layout, "NCHW")
    o, i, kh, kw = shape_to(weight.shape, attrs.kernel_layout, "OIHW")
    g = attrs.groups
    # Shape-Rel: a symbolic fact is refused only when provably false
    if dim_divisible(c, g) is False:
        raise RelationError(f"{op}: input channels {c} are not divisible by groups={g}")
    if dim_divisible(o, g) is False:
        raise RelationError(f"{op}: output channels {o} are not divisible by groups={g}")
    if not (is_any(c) or is_any(i)) and not dims_compatible(c, i * g):
        raise RelationError(f"{op}: input has {c} channels but weight expects {i * g} "
                            f"(groups={g})")
    if attrs.channels is not None and not dims_compatible(o, attrs.channels):
        raise RelationError(f"{op}: channels={attrs.channels} but the weight has {o} "
                            f"output channels")
    if attrs.kernel_size is not None and not (
            dims_compatible(kh, attrs.kernel_size[0])
            and dims_compatible(kw, attrs.kernel_size[1])):
        raise RelationError(f"{op}: kernel_size={tuple(attrs.kernel_size)} but the weight "
                            f"has a {kh}x{kw} kernel")
    pt, pl, pb, pr = pad4(attrs.padding)
    oh = _conv_out(h, kh, attrs.strides[0], pt + pb, attrs.dilation[0])
    ow = _conv_out(w, kw, attrs.strides[1], pl + pr, attrs.dilation[1])
    for d, name in ((oh, "height"), (ow, "width")):
        if dim_le(d, 0) is True:  # Shape-Rel: provably empty
            raise RelationError(f"{op}: the (dilated) kernel is larger than the padded "
                                f"input (output {name} would be {d})")
    out = (n, o, oh, ow)
    return TensorType(shape_from(out, attrs.out_layout or attrs.data_layout, "NCHW"),
                      _out_dtype(attrs, data.dtype))


def conv2d_nchw(x: Array, w: Array, strides: tuple[int, ...], padding: tuple[int, ...],
                dilation: tuple[int, ...], groups: int) -> Array:
    """NCHW x OIHW grouped convolution in the arrays' (common) dtype."""
    pt, pl, pb, pr = pad4(padding)
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, c, hp, wp = xp.shape
    o, i, kh, kw = w.shape
    oh = (hp - ((kh - 1) * dilation[0] + 1)) // strides[0] + 1
    ow = (wp - ((kw - 1) * dilation[1] + 1)) // strides[1] + 1
    win = _windows(xp, (kh, kw), tuple(strides), tuple(dilation), (oh, ow))  # type: ignore
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    wg = w.reshape(groups, o // groups, i, kh, kw)
    out = np.einsum("ngchwij,gocij->ngohw", win, wg, optimize=True)
    return out.reshape(n, o, oh, ow)


def conv2d_ref(args: list, attrs: Conv2DAttrs) -> Array:
    """The ``nn.conv2d`` reference in any layout; shared by ``qnn.conv2d``."""
    data, weight = np.asarray(args[0]), np.asarray(args[1])
    dtype = _out_dtype(attrs, data.dtype.name)
    x = to_canonical(data, attrs.data_layout, "NCHW").astype(dtype, copy=False)
    w = to_canonical(weight, attrs.kernel_layout, "OIHW").astype(dtype, copy=False)
    with np.errstate(all="ignore"):
        out = conv2d_nchw(x, w, attrs.strides, attrs.padding, attrs.dilation, attrs.groups)
    return as_dtype(from_canonical(out, attrs.out_layout or attrs.data_layout, "NCHW"), dtype)


register_op(
    "nn.conv2d", attrs=Conv2DAttrs, num_inputs=2, arg_names=("data", "weight"),
    support_level=2, relation=conv2d_rel, reference=conv2d_ref,
    doc="2-d convolution (cross-correlation) of ``data`` (NCHW) with ``weight`` (OIHW, "
        "I = C / groups).\n\nOutput spatial size: (H + pt + pb - ((KH - 1) * dilation + 1)) "
        "// stride + 1.",
)


# -- nn.conv2d_transpose ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Conv2DTransposeAttrs:
    """Transposed 2-d convolution; weight layout IOHW (in, out / groups, kh, kw)."""

    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    strides: tuple[int, ...] = (1, 1)
    output_padding: tuple[int, ...] = (0, 0)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    groups: int = 1
    data_layout: str = "NCHW"
    kernel_layout: str = "IOHW"
    out_layout: str = ""
    out_dtype: str = ""

    def __post_init__(self) -> None:
        _pair(self, "strides")
        _pair(self, "output_padding", minimum=0)
        _check_padding(self.padding)
        _pair(self, "dilation")
        if self.groups < 1:
            raise AttrError(f"groups must be >= 1, found {self.groups}", "groups")
        _pair(self, "kernel_size")
        for op_, s, d in zip(self.output_padding, self.strides, self.dilation, strict=True):
            if op_ >= max(s, d):
                raise AttrError("output_padding must be smaller than the stride or the "
                                "dilation", "output_padding")
        check_layout(self.data_layout, "NCHW", "data_layout")
        check_layout(self.kernel_layout, "OIHW", "kernel_layout")
        if self.out_layout:
            check_layout(self.out_layout, "NCHW", "out_layout")
        _check_out_dtype(self.out_dtype)


def _convt_out(n: object, k: object, s: int, p: int, d: int, op_: int) -> object:
    return dim_map(lambda n, k: (n - 1) * s - p + d * (k - 1) + 1 + op_, n, k)


def _conv2d_transpose_rel(arg_types: list[Type], attrs: Conv2DTransposeAttrs) -> object:
    op = "nn.conv2d_transpose"
    args = tensor_args(op, arg_types, 2, ("data", "weight"))
    if args is NOT_YET:
        return NOT_YET
    data, weight = args
    check_rank(op, data, 4, "data")
    check_rank(op, weight, 4, "weight")
    n, c, h, w = shape_to(data.shape, attrs.data_layout, "NCHW")
    # the kernel layout names I (input channels) and O (output channels per group)
    i, o, kh, kw = shape_to(weight.shape, attrs.kernel_layout, "IOHW")
    g = attrs.groups
    if not dims_compatible(c, i):
        raise RelationError(f"{op}: input has {c} channels but weight expects {i}")
    if dim_divisible(c, g) is False:
        raise RelationError(f"{op}: input channels {c} are not divisible by groups={g}")
    out_c = dim_map(lambda o: o * g, o)
    if attrs.channels is not None and not dims_compatible(out_c, attrs.channels):
        raise RelationError(f"{op}: channels={attrs.channels} but the weight gives {out_c}")
    if attrs.kernel_size is not None and not (
            dims_compatible(kh, attrs.kernel_size[0])
            and dims_compatible(kw, attrs.kernel_size[1])):
        raise RelationError(f"{op}: kernel_size={tuple(attrs.kernel_size)} but the weight "
                            f"has a {kh}x{kw} kernel")
    pt, pl, pb, pr = pad4(attrs.padding)
    oh = _convt_out(h, kh, attrs.strides[0], pt + pb, attrs.dilation[0],
                    attrs.output_padding[0])
    ow = _convt_out(w, kw, attrs.strides[1], pl + pr, attrs.dilation[1],
                    attrs.output_padding[1])
    for d in (oh, ow):
        if dim_le(d, 0) is True:  # Shape-Rel: provably empty
            raise RelationError(f"{op}: padding leaves an empty output")
    out = (n, out_c, oh, ow)
    return TensorType(shape_from(out, attrs.out_layout or attrs.data_layout, "NCHW"),
                      _out_dtype(attrs, data.dtype))


def _conv2d_transpose_ref(args: list, attrs: Conv2DTransposeAttrs) -> Array:
    data, weight = np.asarray(args[0]), np.asarray(args[1])
    dtype = _out_dtype(attrs, data.dtype.name)
    x = to_canonical(data, attrs.data_layout, "NCHW").astype(dtype, copy=False)
    w = to_canonical(weight, attrs.kernel_layout, "IOHW").astype(dtype, copy=False)
    n, c, h, wd = x.shape
    cin, opg, kh, kw = w.shape
    g = attrs.groups
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation
    pt, pl, pb, pr = pad4(attrs.padding)
    oph, opw = attrs.output_padding
    # 1. spread the input by the stride
    up = np.zeros((n, c, (h - 1) * sh + 1, (wd - 1) * sw + 1), dtype)
    up[:, :, ::sh, ::sw] = x
    # 2. pad by the dilated kernel extent minus the padding (negative: crop)
    before_h, after_h = dh * (kh - 1) - pt, dh * (kh - 1) - pb + oph
    before_w, after_w = dw * (kw - 1) - pl, dw * (kw - 1) - pr + opw
    up = np.pad(up, ((0, 0), (0, 0), (max(before_h, 0), max(after_h, 0)),
                     (max(before_w, 0), max(after_w, 0))))
    up = up[:, :, max(-before_h, 0):up.shape[2] - max(-after_h, 0),
            max(-before_w, 0):up.shape[3] - max(-after_w, 0)]
    # 3. a stride-1 convolution with the flipped kernel, I and O swapped per group
    wf = w[:, :, ::-1, ::-1].reshape(g, cin // g, opg, kh, kw)
    wf = wf.transpose(0, 2, 1, 3, 4).reshape(g * opg, cin // g, kh, kw)
    with np.errstate(all="ignore"):
        out = conv2d_nchw(up, wf, (1, 1), (0, 0), (dh, dw), g)
    return as_dtype(from_canonical(out, attrs.out_layout or attrs.data_layout, "NCHW"), dtype)


register_op(
    "nn.conv2d_transpose", attrs=Conv2DTransposeAttrs, num_inputs=2,
    arg_names=("data", "weight"), support_level=2, relation=_conv2d_transpose_rel,
    reference=_conv2d_transpose_ref,
    doc="Transposed 2-d convolution (the gradient of conv2d w.r.t. its input). Weight "
        "IOHW: (C_in, C_out / groups, KH, KW).\n\nOutput size: (H - 1) * stride - pt - pb "
        "+ dilation * (KH - 1) + 1 + output_padding.",
)


# -- nn.dense / nn.matmul / nn.batch_matmul ---------------------------------------------

@dataclass(frozen=True, slots=True)
class DenseAttrs:
    """``units``, when given, must equal the weight's first dimension."""

    units: int | None = None
    out_dtype: str = ""

    def __post_init__(self) -> None:
        _check_out_dtype(self.out_dtype)


@dataclass(frozen=True, slots=True)
class MatmulAttrs:
    units: int | None = None
    out_dtype: str = ""
    transpose_a: bool = False
    transpose_b: bool = False

    def __post_init__(self) -> None:
        _check_out_dtype(self.out_dtype)


@dataclass(frozen=True, slots=True)
class BatchMatmulAttrs:
    """TVM's default ``transpose_b=True``: ``y`` is (batch, N, K)."""

    out_dtype: str = ""
    transpose_a: bool = False
    transpose_b: bool = True

    def __post_init__(self) -> None:
        _check_out_dtype(self.out_dtype)


def _matmul_like_rel(op: str, arg_types: list[Type], attrs: object, transpose_a: bool,
                     transpose_b: bool) -> object:
    args = tensor_args(op, arg_types, 2, ("data", "weight"))
    if args is NOT_YET:
        return NOT_YET
    data, weight = args
    check_rank(op, weight, 2, "weight")
    if data.ndim < (2 if transpose_a else 1):
        raise RelationError(f"{op}: data must have rank >= {2 if transpose_a else 1}")
    out = list(data.shape)
    k = data.shape[-1]
    if transpose_a:
        k = data.shape[-2]
        out[-2] = data.shape[-1]
    wk, units = (weight.shape[1], weight.shape[0]) if transpose_b else weight.shape
    if not dims_compatible(k, wk):
        raise RelationError(f"{op}: reduction dimensions differ: data has {k}, weight has "
                            f"{wk} (data {shape_text(data.shape)}, weight "
                            f"{shape_text(weight.shape)})")
    want = getattr(attrs, "units", None)
    if want is not None and not dims_compatible(units, want):
        raise RelationError(f"{op}: units={want} but the weight gives {units}")
    out[-1] = units
    return TensorType(tuple(out), _out_dtype(attrs, data.dtype))


def dense_rel(arg_types: list[Type], attrs: DenseAttrs) -> object:
    """The ``nn.dense`` relation (TVM ``DenseRel``); shared by ``qnn.dense``."""
    return _matmul_like_rel("nn.dense", arg_types, attrs, False, True)


def _matmul_rel(arg_types: list[Type], attrs: MatmulAttrs) -> object:
    return _matmul_like_rel("nn.matmul", arg_types, attrs, attrs.transpose_a,
                            attrs.transpose_b)


def _matmul_ref_impl(a: Array, b: Array, attrs: object, ta: bool, tb: bool) -> Array:
    dtype = _out_dtype(attrs, a.dtype.name)
    a = a.astype(dtype, copy=False)
    b = b.astype(dtype, copy=False)
    if ta:
        a = np.swapaxes(a, -1, -2)
    if tb:
        b = np.swapaxes(b, -1, -2)
    with np.errstate(all="ignore"):
        out = np.matmul(a, b)
    return as_dtype(out, dtype)


register_op(
    "nn.dense", attrs=DenseAttrs, num_inputs=2, arg_names=("data", "weight"),
    support_level=1, relation=dense_rel,
    reference=lambda args, attrs: _matmul_ref_impl(np.asarray(args[0]), np.asarray(args[1]),
                                                   attrs, False, True),
    doc="``data @ weight.T``: (..., K) x (units, K) -> (..., units).",
)

register_op(
    "nn.matmul", attrs=MatmulAttrs, num_inputs=2, arg_names=("tensor_a", "tensor_b"),
    support_level=1, relation=_matmul_rel,
    reference=lambda args, attrs: _matmul_ref_impl(np.asarray(args[0]), np.asarray(args[1]),
                                                   attrs, attrs.transpose_a,
                                                   attrs.transpose_b),
    doc="``op(a) @ op(b)`` with optional transposes; ``b`` is 2-d: (..., K) x (K, N) -> "
        "(..., N).",
)


def _batch_matmul_rel(arg_types: list[Type], attrs: BatchMatmulAttrs) -> object:
    op = "nn.batch_matmul"
    args = tensor_args(op, arg_types, 2, ("x", "y"))
    if args is NOT_YET:
        return NOT_YET
    x, y = args
    check_rank(op, x, 3, "x")
    check_rank(op, y, 3, "y")
    bx, m, k = (x.shape[0], x.shape[2], x.shape[1]) if attrs.transpose_a else x.shape
    by, n, k2 = y.shape if attrs.transpose_b else (y.shape[0], y.shape[2], y.shape[1])
    if not dims_compatible(k, k2):
        raise RelationError(f"{op}: reduction dimensions differ: {k} vs {k2} (x "
                            f"{shape_text(x.shape)}, y {shape_text(y.shape)})")
    batch = broadcast_shapes(op, (bx,), (by,))[0]
    return TensorType((batch, m, n), _out_dtype(attrs, x.dtype))


register_op(
    "nn.batch_matmul", attrs=BatchMatmulAttrs, num_inputs=2, arg_names=("x", "y"),
    support_level=10, relation=_batch_matmul_rel,
    reference=lambda args, attrs: _matmul_ref_impl(np.asarray(args[0]), np.asarray(args[1]),
                                                   attrs, attrs.transpose_a,
                                                   attrs.transpose_b),
    doc="Batched matmul of 3-d tensors; by default (TVM) ``y`` is transposed: (B, M, K) x "
        "(B, N, K) -> (B, M, N). A batch of 1 broadcasts.",
)


# -- bias_add, activations ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class BiasAddAttrs:
    axis: int = 1


def _per_axis_rel(op: str, second: str) -> object:
    """data plus a 1-d tensor whose length is data's ``axis`` dimension; output = data."""
    def rel(arg_types: list[Type], attrs: BiasAddAttrs) -> object:
        args = tensor_args(op, arg_types, 2, ("data", second))
        if args is NOT_YET:
            return NOT_YET
        data, vec = args
        axis = normalize_axis(op, attrs.axis, data.ndim)
        if vec.ndim != 1 or not dims_compatible(vec.shape[0], data.shape[axis]):
            raise RelationError(f"{op}: {second} must have shape ({data.shape[axis]},) "
                                f"(data's axis {attrs.axis}), found {shape_text(vec.shape)}")
        if vec.dtype != data.dtype:
            raise RelationError(f"{op}: dtypes differ: {data.dtype} (data) vs {vec.dtype} "
                                f"({second})")
        return TensorType(data.shape, data.dtype)
    return rel




def _bias_add_ref(args: list, attrs: BiasAddAttrs) -> Array:
    x, b = np.asarray(args[0]), np.asarray(args[1])
    axis = attrs.axis % x.ndim
    with np.errstate(all="ignore"):
        return as_dtype(x + along(b, x.ndim, axis), x.dtype)


register_op("nn.bias_add", attrs=BiasAddAttrs, num_inputs=2, arg_names=("data", "bias"),
            support_level=1, relation=_per_axis_rel("nn.bias_add", "bias"),
            reference=_bias_add_ref,
            doc="Add a 1-d ``bias`` along ``axis`` of ``data``.")

register_op("nn.relu", num_inputs=1, arg_names=("data",), support_level=1,
            relation=identity_rel("nn.relu"),
            reference=lambda args, attrs: as_dtype(
                np.maximum(args[0], np.zeros((), np.asarray(args[0]).dtype)),
                np.asarray(args[0]).dtype),
            doc="``max(x, 0)``.\n\nType relation: identity.")


@dataclass(frozen=True, slots=True)
class LeakyReluAttrs:
    alpha: float = 0.25


def _leaky_relu_ref(args: list, attrs: LeakyReluAttrs) -> Array:
    x = np.asarray(args[0])
    with np.errstate(all="ignore"):
        neg = x * np.asarray(attrs.alpha, x.dtype) if is_float(x.dtype.name) else \
            (x * attrs.alpha).astype(x.dtype)
    return as_dtype(np.where(x > 0, x, neg), x.dtype)


register_op("nn.leaky_relu", attrs=LeakyReluAttrs, num_inputs=1, arg_names=("data",),
            support_level=3, relation=identity_rel("nn.leaky_relu"),
            reference=_leaky_relu_ref,
            doc="``x if x > 0 else alpha * x``.\n\nType relation: identity.")


@dataclass(frozen=True, slots=True)
class PReluAttrs:
    axis: int = 1


def _prelu_ref(args: list, attrs: PReluAttrs) -> Array:
    x, a = np.asarray(args[0]), np.asarray(args[1])
    with np.errstate(all="ignore"):
        out = np.where(x > 0, x, x * along(a, x.ndim, attrs.axis % x.ndim))
    return as_dtype(out, x.dtype)


register_op("nn.prelu", attrs=PReluAttrs, num_inputs=2, arg_names=("data", "alpha"),
            support_level=3, relation=_per_axis_rel("nn.prelu", "alpha"),
            reference=_prelu_ref,
            doc="Leaky relu with a learned slope per channel (``alpha`` along ``axis``).")


@dataclass(frozen=True, slots=True)
class SoftmaxAttrs:
    axis: int = -1


def _axis_identity_rel(op: str) -> object:
    def rel(arg_types: list[Type], attrs: SoftmaxAttrs) -> object:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        normalize_axis(op, attrs.axis, args[0].ndim)
        return TensorType(args[0].shape, args[0].dtype)
    return rel


def _softmax_ref(args: list, attrs: SoftmaxAttrs) -> Array:
    x = np.asarray(args[0])
    if x.size == 0:
        return x.copy()
    xf = x if is_float(x.dtype.name) else x.astype(np.float64)
    with np.errstate(all="ignore"):
        e = np.exp(xf - np.max(xf, axis=attrs.axis, keepdims=True))
        out = e / np.sum(e, axis=attrs.axis, keepdims=True)
    return as_dtype(out, x.dtype)


def _log_softmax_ref(args: list, attrs: SoftmaxAttrs) -> Array:
    x = np.asarray(args[0])
    if x.size == 0:
        return x.copy()
    xf = x if is_float(x.dtype.name) else x.astype(np.float64)
    with np.errstate(all="ignore"):
        shifted = xf - np.max(xf, axis=attrs.axis, keepdims=True)
        out = shifted - np.log(np.sum(np.exp(shifted), axis=attrs.axis, keepdims=True))
    return as_dtype(out, x.dtype)


register_op("nn.softmax", attrs=SoftmaxAttrs, num_inputs=1, arg_names=("data",),
            support_level=1, relation=_axis_identity_rel("nn.softmax"),
            reference=_softmax_ref,
            doc="``exp(x) / sum(exp(x), axis)`` (computed stably).")
register_op("nn.fast_softmax", attrs=SoftmaxAttrs, num_inputs=1, arg_names=("data",),
            support_level=1, relation=_axis_identity_rel("nn.fast_softmax"),
            reference=_softmax_ref,
            doc="Softmax (TVM's approximation; exact here).")
register_op("nn.log_softmax", attrs=SoftmaxAttrs, num_inputs=1, arg_names=("data",),
            support_level=1, relation=_axis_identity_rel("nn.log_softmax"),
            reference=_log_softmax_ref,
            doc="``x - log(sum(exp(x), axis))`` (computed stably).")


# -- pooling ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MaxPool2DAttrs:
    pool_size: tuple[int, ...]
    strides: tuple[int, ...] = (1, 1)
    dilation: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    layout: str = "NCHW"
    out_layout: str = ""
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        _validate_pool(self)


@dataclass(frozen=True, slots=True)
class AvgPool2DAttrs:
    """``count_include_pad``: divide by the window's size within the explicitly padded
    input (else by the number of real input elements in the window)."""

    pool_size: tuple[int, ...]
    strides: tuple[int, ...] = (1, 1)
    dilation: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    layout: str = "NCHW"
    out_layout: str = ""
    ceil_mode: bool = False
    count_include_pad: bool = False

    def __post_init__(self) -> None:
        _validate_pool(self)


def _validate_pool(attrs: MaxPool2DAttrs | AvgPool2DAttrs) -> None:
    _pair(attrs, "pool_size")
    _pair(attrs, "strides")
    _pair(attrs, "dilation")
    _check_padding(attrs.padding)
    check_layout(attrs.layout, "NCHW", "layout")
    if attrs.out_layout:
        check_layout(attrs.out_layout, "NCHW", "out_layout")


def pool_out(n: object, k: int, s: int, p: int, d: int, ceil: bool) -> object:
    """Pooled size of a dimension ``n`` (``?`` stays ``?``): window ``k`` dilated by ``d``,
    stride ``s``, total padding ``p``; ``ceil`` rounds the last partial window up."""
    ext = (k - 1) * d + 1
    if ceil:
        return dim_map(lambda n: (n + p - ext + s - 1) // s + 1, n)
    return dim_map(lambda n: (n + p - ext) // s + 1, n)


def pool_out_hw(h: object, w: object, attrs: object) -> tuple[object, object]:
    """The pooled (OH, OW) of an (H, W) plane under a 2-d pooling op's attributes
    (``pool_size``, ``strides``, ``dilation``, ``padding``, ``ceil_mode``)."""
    (kh, kw), (sh, sw) = attrs.pool_size, attrs.strides  # type: ignore[attr-defined]
    dh, dw = attrs.dilation  # type: ignore[attr-defined]
    pt, pl, pb, pr = pad4(attrs.padding)  # type: ignore[attr-defined]
    ceil = attrs.ceil_mode  # type: ignore[attr-defined]
    return pool_out(h, kh, sh, pt + pb, dh, ceil), pool_out(w, kw, sw, pl + pr, dw, ceil)


def pool2d_rel(op: str) -> object:
    """The relation of a 2-d pool named ``op`` (TVM ``Pool2DRel``)."""
    def rel(arg_types: list[Type], attrs: MaxPool2DAttrs) -> object:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        check_rank(op, data, 4, "data")
        n, c, h, w = shape_to(data.shape, attrs.layout, "NCHW")
        pt, pl, pb, pr = pad4(attrs.padding)
        oh = pool_out(h, attrs.pool_size[0], attrs.strides[0], pt + pb, attrs.dilation[0],
                       attrs.ceil_mode)
        ow = pool_out(w, attrs.pool_size[1], attrs.strides[1], pl + pr, attrs.dilation[1],
                       attrs.ceil_mode)
        for d in (oh, ow):
            if dim_le(d, 0) is True:  # Shape-Rel: provably empty
                raise RelationError(f"{op}: the pooling window is larger than the padded "
                                    f"input {shape_text(data.shape)}")
        return TensorType(shape_from((n, c, oh, ow), attrs.out_layout or attrs.layout,
                                      "NCHW"), data.dtype)
    return rel


def _pool_windows(x: Array, attrs: MaxPool2DAttrs, fill: object) -> tuple[Array, tuple]:
    """Windows (N, C, OH, OW, KH, KW) of x padded with ``fill`` (plus the extra bottom/right
    rows that ``ceil_mode`` needs); also returns the geometry for counting."""
    n, c, h, w = x.shape
    pt, pl, pb, pr = pad4(attrs.padding)
    (kh, kw), (sh, sw), (dh, dw) = attrs.pool_size, attrs.strides, attrs.dilation
    oh = pool_out(h, kh, sh, pt + pb, dh, attrs.ceil_mode)
    ow = pool_out(w, kw, sw, pl + pr, dw, attrs.ceil_mode)
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1  # type: ignore[operator]
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1  # type: ignore[operator]
    eh = max(0, need_h - (h + pt + pb))
    ew = max(0, need_w - (w + pl + pr))
    pads = ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew))
    xp = np.pad(x, pads, constant_values=fill)
    geo = (pads, (kh, kw), (sh, sw), (dh, dw), (oh, ow), (eh, ew))
    return _windows(xp, (kh, kw), (sh, sw), (dh, dw), (oh, ow)), geo


def lowest(dtype: np.dtype) -> object:
    """The identity of ``max`` for ``dtype``: -inf, False or the smallest integer."""
    if np.issubdtype(dtype, np.floating):
        return -np.inf
    if dtype == np.bool_:
        return False
    return np.iinfo(dtype).min


def max_pool2d_ref(args: list, attrs: MaxPool2DAttrs) -> Array:
    """The ``nn.max_pool2d`` reference (padding never wins: it is the dtype's lowest)."""
    x = to_canonical(np.asarray(args[0]), attrs.layout, "NCHW")
    win, _ = _pool_windows(x, attrs, lowest(x.dtype))
    out = win.max(axis=(4, 5))
    return as_dtype(from_canonical(out, attrs.out_layout or attrs.layout, "NCHW"), x.dtype)


def avg_pool2d_ref(args: list, attrs: AvgPool2DAttrs) -> Array:
    """The ``nn.avg_pool2d`` reference (integers: sum in int64, divide towards zero)."""
    x = to_canonical(np.asarray(args[0]), attrs.layout, "NCHW")
    acc = x.dtype if is_float(x.dtype.name) else np.dtype(np.int64)
    win, geo = _pool_windows(x.astype(acc, copy=False), attrs, 0)
    total = win.sum(axis=(4, 5), dtype=acc)
    count = _avg_counts(x.shape[2:], attrs, geo)
    with np.errstate(all="ignore"):
        if is_float(x.dtype.name):
            out = total / count.astype(x.dtype)
        else:
            out = trunc_div(total, count)
    return as_dtype(from_canonical(out, attrs.out_layout or attrs.layout, "NCHW"), x.dtype)


def _avg_counts(hw: tuple, attrs: AvgPool2DAttrs, geo: tuple) -> Array:
    """The (OH, OW) divisors of an average pool: how many positions of each window count
    (real input, plus the explicit padding if ``count_include_pad``; never the ceil_mode
    extra), at least 1."""
    pads, kernel, strides, dilation, out_hw, (eh, ew) = geo
    h, w = hw
    if attrs.count_include_pad:
        pt, pb = pads[2][0], pads[2][1] - eh
        pl, pr = pads[3][0], pads[3][1] - ew
        region = np.pad(np.ones((h + pt + pb, w + pl + pr), np.int64), ((0, eh), (0, ew)))
    else:
        region = np.pad(np.ones((h, w), np.int64), (pads[2], pads[3]))
    cwin = _windows(region[None, None], kernel, strides, dilation, out_hw)
    return np.maximum(cwin.sum(axis=(4, 5)), 1)[0, 0]


_POOL_DOC = ("Output size: (H + pt + pb - ((K - 1) * dilation + 1)) // stride + 1 "
             "(ceil_mode: rounded up; the extra bottom/right rows are padding).")

register_op("nn.max_pool2d", attrs=MaxPool2DAttrs, num_inputs=1, arg_names=("data",),
            support_level=2, relation=pool2d_rel("nn.max_pool2d"), reference=max_pool2d_ref,
            doc=f"2-d max pooling; padding never wins the max.\n\n{_POOL_DOC}")
register_op("nn.avg_pool2d", attrs=AvgPool2DAttrs, num_inputs=1, arg_names=("data",),
            support_level=2, relation=pool2d_rel("nn.avg_pool2d"), reference=avg_pool2d_ref,
            doc="2-d average pooling; the divisor counts the window's real input elements, "
                "or with count_include_pad also its explicit padding (never the ceil_mode "
                f"extra).\n\n{_POOL_DOC}")


# -- the pools' gradients (TVM ``nn.max_pool2d_grad`` / ``nn.avg_pool2d_grad``) -------------

def pool2d_grad_rel(op: str) -> object:
    """``op(out_grad, data) -> data's type`` where ``out_grad`` has the type the pool of
    ``data`` has (TVM's ``Pool2DGradRel`` checks only data; here a mismatched out_grad is
    an error). Floating point only."""
    pooled_rel = pool2d_rel(op)

    def rel(arg_types: list[Type], attrs: MaxPool2DAttrs) -> object:
        args = tensor_args(op, arg_types, 2, ("out_grad", "data"))
        if args is NOT_YET:
            return NOT_YET
        out_grad, data = args
        pooled = pooled_rel([data], attrs)
        if not is_float(data.dtype):
            raise RelationError(f"{op}: data must be floating point, found {data.dtype}")
        if (out_grad.dtype != data.dtype or out_grad.ndim != 4
                or not all(dims_compatible(a, b)
                           for a, b in zip(out_grad.shape, pooled.shape, strict=True))):
            raise RelationError(f"{op}: out_grad must have the pooled type "
                                f"{shape_text(pooled.shape)} {data.dtype}, found "
                                f"{shape_text(out_grad.shape)} {out_grad.dtype}")
        return TensorType(data.shape, data.dtype)
    return rel


def _pool2d_grad_ref(kind: str) -> object:
    """The reference of ``nn.{kind}_pool2d_grad``: each output position's ``out_grad`` goes
    back to the window elements it was computed from, summed where windows overlap: all of
    it to the window's first maximum (max; TVM and jax pick one element too), or divided by
    the window's divisor to every counted element (avg). Padding receives nothing."""
    def ref(args: list, attrs: MaxPool2DAttrs) -> Array:
        g = to_canonical(np.asarray(args[0]), attrs.out_layout or attrs.layout, "NCHW")
        x = to_canonical(np.asarray(args[1]), attrs.layout, "NCHW")
        n, c, h, w = x.shape
        win, geo = _pool_windows(x, attrs, lowest(x.dtype) if kind == "max" else 0)
        pads, (kh, kw), (sh, sw), (dh, dw), (oh, ow), _ = geo
        if kind == "max":
            choice = win.reshape(*win.shape[:4], kh * kw).argmax(axis=4)  # first maximum
        else:
            with np.errstate(all="ignore"):
                share = g / _avg_counts((h, w), attrs, geo).astype(x.dtype)
        padded = np.zeros((n, c, h + sum(pads[2]), w + sum(pads[3])), x.dtype)
        for i in range(kh):
            for j in range(kw):
                part = np.where(choice == i * kw + j, g, 0) if kind == "max" else share
                # window offset (i, j) of output (p, q) reads padded (p sh + i dh, q sw + j dw)
                padded[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                       j * dw:j * dw + (ow - 1) * sw + 1:sw] += part
        out = padded[:, :, pads[2][0]:pads[2][0] + h, pads[3][0]:pads[3][0] + w]
        return as_dtype(from_canonical(out, attrs.layout, "NCHW"), x.dtype)
    return ref


register_op("nn.max_pool2d_grad", attrs=MaxPool2DAttrs, num_inputs=2,
            arg_names=("out_grad", "data"), support_level=2,
            relation=pool2d_grad_rel("nn.max_pool2d_grad"), reference=_pool2d_grad_ref("max"),
            doc="The adjoint of ``nn.max_pool2d`` (same attributes) at ``data``: each "
                "out_grad element goes to its window's first maximum, summed over "
                "overlapping windows.")
register_op("nn.avg_pool2d_grad", attrs=AvgPool2DAttrs, num_inputs=2,
            arg_names=("out_grad", "data"), support_level=2,
            relation=pool2d_grad_rel("nn.avg_pool2d_grad"), reference=_pool2d_grad_ref("avg"),
            doc="The adjoint of ``nn.avg_pool2d`` (same attributes): each out_grad element "
                "divided by its window's divisor goes to every counted element of the "
                "window, summed over overlapping windows (data gives only the shape).")


@dataclass(frozen=True, slots=True)
class GlobalPool2DAttrs:
    layout: str = "NCHW"
    out_layout: str = ""

    def __post_init__(self) -> None:
        check_layout(self.layout, "NCHW", "layout")
        if self.out_layout:
            check_layout(self.out_layout, "NCHW", "out_layout")


@dataclass(frozen=True, slots=True)
class AdaptivePool2DAttrs:
    """``output_size``: () keeps H and W, (s,) means (s, s), else (oh, ow)."""

    output_size: tuple[int, ...] = ()
    layout: str = "NCHW"
    out_layout: str = ""

    def __post_init__(self) -> None:
        if len(self.output_size) > 2 or any(s < 1 for s in self.output_size):
            raise AttrError(f"output_size must be 0, 1 or 2 positive values, found "
                            f"{self.output_size}", "output_size")
        check_layout(self.layout, "NCHW", "layout")
        if self.out_layout:
            check_layout(self.out_layout, "NCHW", "out_layout")


def _adaptive_size(attrs: AdaptivePool2DAttrs, h: object, w: object) -> tuple:
    size = attrs.output_size
    if not size:
        return h, w
    if len(size) == 1:
        return size[0], size[0]
    return size[0], size[1]


def _global_rel(op: str, adaptive: bool) -> object:
    def rel(arg_types: list[Type], attrs: GlobalPool2DAttrs) -> object:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        check_rank(op, data, 4, "data")
        n, c, h, w = shape_to(data.shape, attrs.layout, "NCHW")
        oh, ow = _adaptive_size(attrs, h, w) if adaptive else (1, 1)  # type: ignore
        return TensorType(shape_from((n, c, oh, ow), attrs.out_layout or attrs.layout,
                                      "NCHW"), data.dtype)
    return rel


def _mean_hw(x: Array) -> Array:
    if is_float(x.dtype.name):
        return np.mean(x, axis=(2, 3), keepdims=True, dtype=x.dtype)
    total = np.sum(x, axis=(2, 3), keepdims=True, dtype=np.int64)
    return trunc_div(total, np.int64(max(x.shape[2] * x.shape[3], 1)))


def _global_ref(kind: str) -> object:
    def ref(args: list, attrs: GlobalPool2DAttrs) -> Array:
        x = to_canonical(np.asarray(args[0]), attrs.layout, "NCHW")
        if x.shape[2] * x.shape[3] == 0:
            raise OpRuntimeError("global pooling over an empty extent")
        out = np.max(x, axis=(2, 3), keepdims=True) if kind == "max" else _mean_hw(x)
        return as_dtype(from_canonical(out, attrs.out_layout or attrs.layout, "NCHW"), x.dtype)
    return ref


def adaptive_bounds(n: int, out: int) -> tuple[Array, Array]:
    """Start and end (exclusive) of each of ``out`` adaptive windows over ``n`` elements."""
    i = np.arange(out)
    return (i * n) // out, -((-(i + 1) * n) // out)  # floor(i*n/out), ceil((i+1)*n/out)


def _adaptive_ref(kind: str) -> object:
    def ref(args: list, attrs: AdaptivePool2DAttrs) -> Array:
        x = to_canonical(np.asarray(args[0]), attrs.layout, "NCHW")
        n, c, h, w = x.shape
        oh, ow = _adaptive_size(attrs, h, w)
        if h * w == 0:
            raise OpRuntimeError("adaptive pooling over an empty extent")
        hs, he = adaptive_bounds(h, oh)
        ws, we = adaptive_bounds(w, ow)
        if kind == "avg":
            acc = x.dtype if is_float(x.dtype.name) else np.dtype(np.int64)
            # integral image: window sums in O(1) each, fully vectorised
            s = np.zeros((n, c, h + 1, w + 1), acc)
            s[:, :, 1:, 1:] = np.cumsum(np.cumsum(x, axis=2, dtype=acc), axis=3, dtype=acc)
            tot = (s[:, :, he[:, None], we[None, :]] - s[:, :, hs[:, None], we[None, :]]
                   - s[:, :, he[:, None], ws[None, :]] + s[:, :, hs[:, None], ws[None, :]])
            cnt = (he - hs)[:, None] * (we - ws)[None, :]
            out = tot / cnt.astype(acc) if is_float(x.dtype.name) else trunc_div(tot, cnt)
        else:
            out = np.empty((n, c, oh, ow), x.dtype)
            for i in range(oh):  # loops over the (small) output grid only
                for j in range(ow):
                    out[:, :, i, j] = x[:, :, hs[i]:he[i], ws[j]:we[j]].max(axis=(2, 3))
        return as_dtype(from_canonical(out, attrs.out_layout or attrs.layout, "NCHW"), x.dtype)
    return ref


register_op("nn.global_avg_pool2d", attrs=GlobalPool2DAttrs, num_inputs=1,
            arg_names=("data",), support_level=2,
            relation=_global_rel("nn.global_avg_pool2d", False),
            reference=_global_ref("avg"), doc="Mean over H and W: (N, C, H, W) -> (N, C, 1, 1).")
register_op("nn.global_max_pool2d", attrs=GlobalPool2DAttrs, num_inputs=1,
            arg_names=("data",), support_level=2,
            relation=_global_rel("nn.global_max_pool2d", False),
            reference=_global_ref("max"), doc="Max over H and W: (N, C, H, W) -> (N, C, 1, 1).")
register_op("nn.adaptive_avg_pool2d", attrs=AdaptivePool2DAttrs, num_inputs=1,
            arg_names=("data",), support_level=10,
            relation=_global_rel("nn.adaptive_avg_pool2d", True),
            reference=_adaptive_ref("avg"),
            doc="Average pooling to a fixed output size; output cell i covers input rows "
                "[floor(i*H/OH), ceil((i+1)*H/OH)).")
register_op("nn.adaptive_max_pool2d", attrs=AdaptivePool2DAttrs, num_inputs=1,
            arg_names=("data",), support_level=10,
            relation=_global_rel("nn.adaptive_max_pool2d", True),
            reference=_adaptive_ref("max"),
            doc="Max pooling to a fixed output size (windows as adaptive_avg_pool2d).")


# -- normalisation -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class BatchNormAttrs:
    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


def _batch_norm_rel(arg_types: list[Type], attrs: BatchNormAttrs) -> object:
    op = "nn.batch_norm"
    names = ("data", "gamma", "beta", "moving_mean", "moving_var")
    args = tensor_args(op, arg_types, 5, names)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    axis = normalize_axis(op, attrs.axis, data.ndim)
    c = data.shape[axis]
    for t, name in zip(args[1:], names[1:], strict=True):
        if t.ndim != 1 or not dims_compatible(t.shape[0], c):
            raise RelationError(f"{op}: {name} must have shape ({c},), found "
                                f"{shape_text(t.shape)}")
        if t.dtype != data.dtype:
            raise RelationError(f"{op}: dtypes differ: {data.dtype} (data) vs {t.dtype} "
                                f"({name})")
    vec = TensorType((c,), data.dtype)
    return TupleType((TensorType(data.shape, data.dtype), vec, vec))


def _batch_norm_ref(args: list, attrs: BatchNormAttrs) -> tuple[Array, Array, Array]:
    x, gamma, beta, mean, var = (np.asarray(a) for a in args)
    axis = attrs.axis % x.ndim
    with np.errstate(all="ignore"):
        eps = np.asarray(attrs.epsilon, x.dtype)
        out = (x - along(mean, x.ndim, axis)) / np.sqrt(along(var, x.ndim, axis) + eps)
        if attrs.scale:
            out = out * along(gamma, x.ndim, axis)
        if attrs.center:
            out = out + along(beta, x.ndim, axis)
    return as_dtype(out, x.dtype), mean.copy(), var.copy()


register_op(
    "nn.batch_norm", attrs=BatchNormAttrs, num_inputs=5,
    arg_names=("data", "gamma", "beta", "moving_mean", "moving_var"), support_level=1,
    relation=_batch_norm_rel, reference=_batch_norm_ref,
    doc="Inference batch norm along ``axis``: ``(x - mean) / sqrt(var + epsilon) * gamma + "
        "beta``. Returns the 3-tuple (out, moving_mean, moving_var), as TVM does.",
)


@dataclass(frozen=True, slots=True)
class LayerNormAttrs:
    axis: int = -1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


def _layer_norm_rel(arg_types: list[Type], attrs: LayerNormAttrs) -> object:
    op = "nn.layer_norm"
    names = ("data", "gamma", "beta")
    args = tensor_args(op, arg_types, 3, names)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    axis = normalize_axis(op, attrs.axis, data.ndim)
    c = data.shape[axis]
    for t, name in zip(args[1:], names[1:], strict=True):
        if t.ndim != 1 or not dims_compatible(t.shape[0], c):
            raise RelationError(f"{op}: {name} must have shape ({c},), found "
                                f"{shape_text(t.shape)}")
    return TensorType(data.shape, data.dtype)


def _layer_norm_ref(args: list, attrs: LayerNormAttrs) -> Array:
    x, gamma, beta = (np.asarray(a) for a in args)
    axis = attrs.axis % x.ndim
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        mean = np.mean(x, axis=axis, keepdims=True, dtype=x.dtype)
        var = np.mean((x - mean) ** 2, axis=axis, keepdims=True, dtype=x.dtype)
        out = (x - mean) / np.sqrt(var + np.asarray(attrs.epsilon, x.dtype))
        if attrs.scale:
            out = out * along(gamma, x.ndim, axis)
        if attrs.center:
            out = out + along(beta, x.ndim, axis)
    return as_dtype(out, x.dtype)


register_op("nn.layer_norm", attrs=LayerNormAttrs, num_inputs=3,
            arg_names=("data", "gamma", "beta"), support_level=1,
            relation=_layer_norm_rel, reference=_layer_norm_ref,
            doc="Normalise over ``axis``: ``(x - mean) / sqrt(var + epsilon) * gamma + beta`` "
                "(biased variance).")


@dataclass(frozen=True, slots=True)
class DropoutAttrs:
    rate: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate < 1.0:
            raise AttrError(f"rate must be in [0, 1), found {self.rate}", "rate")


def _dropout_rel(arg_types: list[Type], attrs: DropoutAttrs) -> object:
    args = tensor_args("nn.dropout", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    t = TensorType(args[0].shape, args[0].dtype)
    return TupleType((t, t))


register_op("nn.dropout", attrs=DropoutAttrs, num_inputs=1, arg_names=("data",),
            support_level=1, relation=_dropout_rel,
            reference=lambda args, attrs: (np.array(args[0], copy=True),
                                           np.ones_like(np.asarray(args[0]))),
            doc="Dropout at inference: returns (data, mask) with an all-ones mask, as TVM "
                "does before ``SimplifyInference``.")


@dataclass(frozen=True, slots=True)
class LRNAttrs:
    size: int = 5
    axis: int = 1
    bias: float = 2.0
    alpha: float = 1e-4
    beta: float = 0.75

    def __post_init__(self) -> None:
        if self.size < 1:
            raise AttrError(f"size must be >= 1, found {self.size}", "size")


def _lrn_ref(args: list, attrs: LRNAttrs) -> Array:
    x = np.asarray(args[0])
    if x.size == 0:
        return x.copy()
    axis = attrs.axis % x.ndim
    xf = x if is_float(x.dtype.name) else x.astype(np.float64)
    half = attrs.size // 2
    pads = [(0, 0)] * x.ndim
    pads[axis] = (half, half)
    sq = np.pad(xf * xf, pads)
    # window [c - size//2, c - size//2 + size) along the axis, as TOPI computes it
    win = sliding_window_view(sq, attrs.size, axis=axis)
    idx = [slice(None)] * win.ndim
    idx[axis] = slice(0, x.shape[axis])
    total = win[tuple(idx)].sum(axis=-1)
    with np.errstate(all="ignore"):
        dt = xf.dtype.type
        out = xf / (dt(attrs.bias) + dt(attrs.alpha / attrs.size) * total) ** dt(attrs.beta)
    return as_dtype(out, x.dtype)


register_op("nn.lrn", attrs=LRNAttrs, num_inputs=1, arg_names=("data",), support_level=2,
            relation=_axis_identity_rel("nn.lrn"), reference=_lrn_ref,
            predicate=output_is_input(_axis_identity_rel("nn.lrn")), relation_name="Identity",
            doc="Local response normalisation across ``axis``: ``x / (bias + alpha / size * "
                "sum(x^2 over the window)) ** beta``; the window is [c - size//2, c - size//2"
                " + size).")


# -- pad, batch_flatten ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PadAttrs:
    pad_width: tuple[tuple[int, ...], ...]
    pad_mode: str = "constant"
    # Older TVM (before pad_value became an input) printed ``nn.pad(%x, pad_width=...,
    # pad_value=0f)`` with one input; that form is accepted: the attribute then fills.
    pad_value: float | None = None

    def __post_init__(self) -> None:
        for pair in self.pad_width:
            if len(pair) != 2:
                raise AttrError(f"pad_width must be a list of (before, after) pairs, found "
                                f"{pair}", "pad_width")
        if self.pad_mode not in ("constant", "edge", "reflect"):
            raise AttrError(f"pad_mode must be constant, edge or reflect, found "
                            f"{self.pad_mode!r}", "pad_mode")


def _pad_rel(arg_types: list[Type], attrs: PadAttrs) -> object:
    op = "nn.pad"
    if len(arg_types) == 1:  # the older one-input form: the fill value is an attribute
        args = tensor_args(op, arg_types, 1, ("data",))
        if args is NOT_YET:
            return NOT_YET
        data, value = args[0], TensorType((), args[0].dtype)
    else:
        args = tensor_args(op, arg_types, 2, ("data", "pad_value"))
        if args is NOT_YET:
            return NOT_YET
        data, value = args
        if attrs.pad_value is not None:
            raise RelationError(f"{op}: pad_value is given both as an input and as an "
                                "attribute")
    if value.ndim != 0:
        raise RelationError(f"{op}: pad_value must be a scalar, found "
                            f"{shape_text(value.shape)}")
    if len(attrs.pad_width) != data.ndim:
        raise RelationError(f"{op}: pad_width has {len(attrs.pad_width)} pairs but the data "
                            f"has rank {data.ndim}")
    out = []
    for d, (before, after) in zip(data.shape, attrs.pad_width, strict=True):
        if before < 0 or after < 0:
            raise RelationError(f"{op}: negative padding ({before}, {after})")
        if attrs.pad_mode == "reflect" and True in (dim_le(d, before), dim_le(d, after)):
            raise RelationError(f"{op}: reflect padding ({before}, {after}) must be smaller "
                                f"than the dimension {d}")
        if attrs.pad_mode == "edge" and d == 0 and (before or after):
            raise RelationError(f"{op}: cannot edge-pad an empty dimension")
        out.append(dim_map(lambda d, b=before, a=after: d + b + a, d))
    return TensorType(tuple(out), data.dtype)


def _pad_ref(args: list, attrs: PadAttrs) -> Array:
    x = np.asarray(args[0])
    value = np.asarray(args[1] if len(args) > 1 else (attrs.pad_value or 0))
    widths = [tuple(p) for p in attrs.pad_width]
    if attrs.pad_mode == "constant":
        out = np.pad(x, widths, constant_values=value.astype(x.dtype))
    else:
        out = np.pad(x, widths, mode=attrs.pad_mode)
    return as_dtype(out, x.dtype)


register_op("nn.pad", attrs=PadAttrs, num_inputs=-1, arg_names=("data", "pad_value"),
            support_level=2, relation=_pad_rel, reference=_pad_ref,
            doc="Pad every dimension by (before, after); constant mode fills with the scalar "
                "``pad_value`` input, edge repeats the border, reflect mirrors without "
                "repeating it. The older one-input form takes ``pad_value`` as an attribute "
                "(default 0).")


def _batch_flatten_rel(arg_types: list[Type], attrs: object) -> object:
    op = "nn.batch_flatten"
    args = tensor_args(op, arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    if data.ndim < 1:
        raise RelationError(f"{op}: data must have rank >= 1")
    return TensorType((data.shape[0], shape_prod(data.shape[1:])), data.dtype)


register_op("nn.batch_flatten", num_inputs=1, arg_names=("data",), support_level=2,
            relation=_batch_flatten_rel,
            reference=lambda args, attrs: np.array(args[0], copy=True).reshape(
                np.shape(args[0])[0], int(np.prod(np.shape(args[0])[1:]))),
            doc="(N, d1, ..., dk) -> (N, d1 * ... * dk).")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

EXAMPLES["nn.conv2d"] = Examples(attrs=(
    {"strides": (2, 2)}, {"padding": (1, 1)}, {"dilation": (2, 2)}, {"groups": 2},
    {"data_layout": "NHWC", "kernel_layout": "HWIO"}),
    args=(((1, 2, 4, 4), (2, 2, 3, 3)), ((1, 2, 4, 4), (2, 1, 1, 1)),
          ((1, 4, 4, 2), (1, 1, 2, 2))))
EXAMPLES["nn.conv2d_transpose"] = Examples(attrs=({"strides": (2, 2)}, {"padding": (1, 1)}),
                                           args=(((1, 2, 3, 3), (2, 2, 2, 2)),))
for _name in ("nn.max_pool2d", "nn.avg_pool2d"):
    EXAMPLES[_name] = Examples(attrs=(
        {"pool_size": (2, 2)}, {"pool_size": (2, 2), "strides": (2, 2)},
        {"pool_size": (3, 3), "padding": (1, 1)}, {"pool_size": (2, 2), "ceil_mode": True,
                                                   "strides": (2, 2)},
        {"pool_size": (2, 2), "layout": "NHWC"}), args=(((1, 2, 5, 5),), ((1, 4, 4, 2),)))
for _name in ("nn.max_pool2d_grad", "nn.avg_pool2d_grad"):  # data (1, 2, 5, 5)
    EXAMPLES[_name] = Examples(attrs=(
        {"pool_size": (2, 2)}, {"pool_size": (2, 2), "strides": (2, 2)},
        {"pool_size": (3, 3), "padding": (1, 1)}, {"pool_size": (2, 2), "ceil_mode": True,
                                                   "strides": (2, 2)}),
        args=tuple(((1, 2, k, k), (1, 2, 5, 5)) for k in (4, 2, 5, 3)))
EXAMPLES["nn.global_avg_pool2d"] = Examples(attrs=({"layout": "NHWC"},))
EXAMPLES["nn.matmul"] = Examples(
    attrs=({"transpose_b": True},), args=(((2, 3), (3, 2)),
                                          ((2, 3), (2, 3))))
EXAMPLES["nn.dense"] = Examples(args=(((2, 3), (4, 3)),))
EXAMPLES["nn.batch_matmul"] = Examples(attrs=({"transpose_b": False},),
                                       args=(((2, 2, 3), (2, 3, 2)), ((2, 2, 3), (2, 4, 3))))
for _name in ("nn.softmax", "nn.log_softmax", "nn.fast_softmax"):
    EXAMPLES[_name] = Examples(attrs=({"axis": 0}, {"axis": 1}))
EXAMPLES["nn.pad"] = Examples(attrs=({"pad_width": ((1, 1),)}, {"pad_width": ((0, 1), (1, 0))},
                                      {"pad_width": ((1, 0), (0, 0), (0, 1))}))
EXAMPLES["nn.bias_add"] = Examples(attrs=({"axis": -1},), args=(((2, 3), (3,)), ((2, 3), (2,))))
EXAMPLES["nn.batch_norm"] = Examples(
    attrs=({"axis": -1}, {"center": False}),
    args=(((2, 3), (3,), (3,), (3,), (3,)), ((1, 2, 4, 4), (2,), (2,), (2,), (2,))))
EXAMPLES["nn.layer_norm"] = Examples(attrs=({"axis": 0},), args=(((2, 3), (3,), (3,)),))
EXAMPLES["nn.leaky_relu"] = Examples(attrs=({"alpha": 0.5},))


# -- values that matter (the ``values`` aspect, attached by ``relay_ref.ops``) ---------------

from relay_ref.ops.registry import Values  # noqa: E402

#: around the threshold 0 (both signs, tiny, signed zero) and inf/nan
_AROUND_ZERO = (-1.0, -0.5, -1e-3, 0.0, -0.0, 1e-3, 0.5, 1.0, float("inf"), -float("inf"),
                float("nan"))
#: this family's ``values`` aspect: where rewrites of these ops go wrong
VALUES: dict[str, Values] = {
    "nn.relu": Values(floats=_AROUND_ZERO, ints=(-1, 0, 1, -(2**31))),
    "nn.leaky_relu": Values(floats=_AROUND_ZERO, attrs=({"alpha": 0.1}, {"alpha": 2.0})),
    "nn.prelu": Values(floats=_AROUND_ZERO),
    "nn.softmax": Values(floats=(-100.0, 100.0, 0.0, float("-inf"))),
    "nn.log_softmax": Values(floats=(-100.0, 100.0, 0.0, float("-inf"))),
}
