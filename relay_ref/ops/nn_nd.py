"""``nn.*`` operators over one and three spatial dimensions (TVM ``src/relay/op/nn/
convolution.cc``, ``pooling.cc``): ``nn.conv1d`` / ``nn.conv3d``, their transposes, max / avg
pooling and adaptive pooling in 1-d and 3-d (the 2-d family is in ``nn.py``).

Same conventions as ``nn.py``. Spatial layouts are any permutation of the canonical one
(``NCW``/``OIW``, ``NCDHW``/``OIDHW``); references transpose to canonical, compute, and
transpose back. ``padding`` takes 1, nd or 2 * nd values (all sides; before = after per
axis; all befores then all afters), as TVM's ``get_pad_tuple``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from relay_ref.ir.shape import dim_divisible, dim_le, dim_map, dims_compatible, is_any, shape_text
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops import nn
from relay_ref.ops.layout import (
    check_layout,
    check_rank,
    from_canonical,
    shape_from,
    shape_to,
    to_canonical,
)
from relay_ref.ops.registry import NOT_YET, AttrError, OpRuntimeError, RelationError, register_op
from relay_ref.ops.relations import as_dtype, check_dtype, is_float, tensor_args

Array = np.ndarray


def _widen(attrs: object, name: str, n: int, minimum: int = 1) -> None:
    """An ``n``-value attribute; a single value is widened to ``n`` copies."""
    values = getattr(attrs, name)
    if values is None:
        return
    if len(values) == 1 and n > 1:
        values = tuple(values) * n
        object.__setattr__(attrs, name, values)
    if len(values) != n:
        raise AttrError(f"{name} must have {n} values, found {len(values)}", name)
    if any(v < minimum for v in values):
        raise AttrError(f"{name} values must be >= {minimum}, found {tuple(values)}", name)


def _pads(padding: tuple[int, ...], nd: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(before, after) per spatial dim from 1, nd or 2*nd values (TVM get_pad_tuple)."""
    if len(padding) == 1:
        return (padding[0],) * nd, (padding[0],) * nd
    if len(padding) == nd:
        return tuple(padding), tuple(padding)
    return tuple(padding[:nd]), tuple(padding[nd:])


def _check_pad(padding: tuple[int, ...], nd: int) -> None:
    if len(padding) not in {1, nd, 2 * nd}:
        raise AttrError(f"padding must have 1, {nd} or {2 * nd} values, found "
                        f"{len(padding)}", "padding")
    if any(p < 0 for p in padding):
        raise AttrError(f"padding values must be >= 0, found {padding}", "padding")


# -- nn.conv1d / nn.conv3d ----------------------------------------------------------------

def _conv_attrs_post(attrs: object, nd: int, data: str, kernel: str) -> None:
    _widen(attrs, "strides", nd)
    _check_pad(attrs.padding, nd)  # type: ignore[attr-defined]
    _widen(attrs, "dilation", nd)
    if attrs.groups < 1:  # type: ignore[attr-defined]
        raise AttrError(f"groups must be >= 1, found {attrs.groups}", "groups")  # type: ignore
    _widen(attrs, "kernel_size", nd)
    check_layout(attrs.data_layout, data, "data_layout")  # type: ignore[attr-defined]
    check_layout(attrs.kernel_layout, kernel, "kernel_layout")  # type: ignore[attr-defined]
    if attrs.out_layout:  # type: ignore[attr-defined]
        check_layout(attrs.out_layout, data, "out_layout")  # type: ignore[attr-defined]
    if attrs.out_dtype:  # type: ignore[attr-defined]
        check_dtype(attrs.out_dtype, "out_dtype")  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Conv1DAttrs:
    strides: tuple[int, ...] = (1,)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1,)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCW"
    kernel_layout: str = "OIW"
    out_layout: str = ""
    out_dtype: str = ""

    def __post_init__(self) -> None:
        _conv_attrs_post(self, 1, "NCW", "OIW")


@dataclass(frozen=True, slots=True)
class Conv3DAttrs:
    strides: tuple[int, ...] = (1, 1, 1)
    padding: tuple[int, ...] = (0, 0, 0)
    dilation: tuple[int, ...] = (1, 1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCDHW"
    kernel_layout: str = "OIDHW"
    out_layout: str = ""
    out_dtype: str = ""

    def __post_init__(self) -> None:
        _conv_attrs_post(self, 3, "NCDHW", "OIDHW")


def _conv_rel(op: str, nd: int, dcanon: str, kcanon: str) -> object:
    def rel(arg_types: list[Type], attrs: Conv1DAttrs | Conv3DAttrs) -> object:
        args = tensor_args(op, arg_types, 2, ("data", "weight"))
        if args is NOT_YET:
            return NOT_YET
        data, weight = args
        check_rank(op, data, nd + 2, "data")
        check_rank(op, weight, nd + 2, "weight")
        if data.dtype != weight.dtype and not attrs.out_dtype:
            raise RelationError(f"{op}: dtypes differ: {data.dtype} (data) vs "
                                f"{weight.dtype} (weight)")
        n, c, *sp = shape_to(data.shape, attrs.data_layout, dcanon)
        o, i, *ks = shape_to(weight.shape, attrs.kernel_layout, kcanon)
        g = attrs.groups
        if dim_divisible(c, g) is False:
            raise RelationError(f"{op}: input channels {c} are not divisible by groups={g}")
        if dim_divisible(o, g) is False:
            raise RelationError(f"{op}: output channels {o} are not divisible by "
                                f"groups={g}")
        if not (is_any(c) or is_any(i)) and not dims_compatible(c, i * g):
            raise RelationError(f"{op}: input has {c} channels but weight expects {i * g} "
                                f"(groups={g})")
        if attrs.channels is not None and not dims_compatible(o, attrs.channels):
            raise RelationError(f"{op}: channels={attrs.channels} but the weight has {o} "
                                f"output channels")
        if attrs.kernel_size is not None and not all(
                dims_compatible(k, a) for k, a in zip(ks, attrs.kernel_size, strict=True)):
            raise RelationError(f"{op}: kernel_size={tuple(attrs.kernel_size)} but the "
                                f"weight's kernel is {shape_text(tuple(ks))}")
        before, after = _pads(attrs.padding, nd)
        out = []
        for j in range(nd):
            s, d, p = attrs.strides[j], attrs.dilation[j], before[j] + after[j]
            od = dim_map(lambda n, k, s=s, d=d, p=p: (n + p - ((k - 1) * d + 1)) // s + 1,
                         sp[j], ks[j])
            if dim_le(od, 0) is True:  # Shape-Rel: provably empty
                raise RelationError(f"{op}: the (dilated) kernel is larger than the padded "
                                    f"input")
            out.append(od)
        return TensorType(shape_from((n, o, *out), attrs.out_layout or attrs.data_layout,
                                      dcanon), attrs.out_dtype or data.dtype)
    return rel


def conv_nd(x: Array, w: Array, strides: tuple[int, ...], padding: tuple[int, ...],
            dilation: tuple[int, ...], groups: int) -> Array:
    """N-d grouped convolution, x: (N, C, *S), w: (O, C / groups, *K)."""
    nd = x.ndim - 2
    before, after = _pads(padding, nd)
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(before, after, strict=True)))
    n, c = xp.shape[:2]
    o, i = w.shape[:2]
    ks = w.shape[2:]
    ext = [(k - 1) * d + 1 for k, d in zip(ks, dilation, strict=True)]
    outs = [(xp.shape[2 + j] - ext[j]) // strides[j] + 1 for j in range(nd)]
    view = sliding_window_view(xp, ext, axis=tuple(range(2, 2 + nd)))
    idx = ((slice(None), slice(None))
           + tuple(slice(0, od * s, s) for od, s in zip(outs, strides, strict=True))
           + tuple(slice(None, None, d) for d in dilation))
    win = view[idx].reshape(n, groups, c // groups, *outs, *ks)
    wg = w.reshape(groups, o // groups, i, *ks)
    sp, kl = "stu"[:nd], "STU"[:nd]
    out = np.einsum(f"xgc{sp}{kl},goc{kl}->xgo{sp}", win, wg, optimize=True)
    return out.reshape(n, o, *outs)


def _conv_ref(dcanon: str, kcanon: str) -> object:
    def ref(args: list, attrs: Conv1DAttrs | Conv3DAttrs) -> Array:
        data, weight = np.asarray(args[0]), np.asarray(args[1])
        dtype = attrs.out_dtype or data.dtype.name
        x = to_canonical(data, attrs.data_layout, dcanon).astype(dtype, copy=False)
        w = to_canonical(weight, attrs.kernel_layout, kcanon).astype(dtype, copy=False)
        with np.errstate(all="ignore"):
            out = conv_nd(x, w, attrs.strides, attrs.padding, attrs.dilation, attrs.groups)
        return as_dtype(from_canonical(out, attrs.out_layout or attrs.data_layout, dcanon), dtype)
    return ref


register_op("nn.conv1d", attrs=Conv1DAttrs, num_inputs=2, arg_names=("data", "weight"),
            support_level=2, relation=_conv_rel("nn.conv1d", 1, "NCW", "OIW"),
            reference=_conv_ref("NCW", "OIW"),
            doc="1-d convolution of ``data`` (NCW) with ``weight`` (OIW, I = C / groups); "
                "padding: 1 value or (left, right).")
register_op("nn.conv3d", attrs=Conv3DAttrs, num_inputs=2, arg_names=("data", "weight"),
            support_level=2, relation=_conv_rel("nn.conv3d", 3, "NCDHW", "OIDHW"),
            reference=_conv_ref("NCDHW", "OIDHW"),
            doc="3-d convolution of ``data`` (NCDHW) with ``weight`` (OIDHW, I = C / "
                "groups); padding: 1, 3 or 6 values (front, top, left, back, bottom, "
                "right).")


# -- nn.max_pool1d / nn.avg_pool1d --------------------------------------------------------

def _pool_post(attrs: object, canonical: str) -> None:
    """Validate the attrs of a pool over ``len(canonical) - 2`` spatial dimensions."""
    nd = len(canonical) - 2
    _widen(attrs, "pool_size", nd)
    _widen(attrs, "strides", nd)
    _widen(attrs, "dilation", nd)
    _check_pad(attrs.padding, nd)  # type: ignore[attr-defined]
    check_layout(attrs.layout, canonical, "layout")  # type: ignore[attr-defined]
    if attrs.out_layout:  # type: ignore[attr-defined]
        check_layout(attrs.out_layout, canonical, "out_layout")  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class MaxPool1DAttrs:
    pool_size: tuple[int, ...]
    strides: tuple[int, ...] = (1,)
    dilation: tuple[int, ...] = (1,)
    padding: tuple[int, ...] = (0,)
    layout: str = "NCW"
    out_layout: str = ""
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        _pool_post(self, "NCW")


@dataclass(frozen=True, slots=True)
class AvgPool1DAttrs:
    pool_size: tuple[int, ...]
    strides: tuple[int, ...] = (1,)
    dilation: tuple[int, ...] = (1,)
    padding: tuple[int, ...] = (0,)
    layout: str = "NCW"
    out_layout: str = ""
    ceil_mode: bool = False
    count_include_pad: bool = False

    def __post_init__(self) -> None:
        _pool_post(self, "NCW")


def pool1d_as_2d(attrs: MaxPool1DAttrs | AvgPool1DAttrs) -> object:
    """The 2-d pool attrs (NCHW) that pool a (N, C, 1, W) view as ``attrs`` pools NCW."""
    (b,), (a,) = _pads(attrs.padding, 1)
    common = dict(pool_size=(1, attrs.pool_size[0]), strides=(1, attrs.strides[0]),
                  dilation=(1, attrs.dilation[0]), padding=(0, b, 0, a),
                  ceil_mode=attrs.ceil_mode)
    if isinstance(attrs, AvgPool1DAttrs):
        return nn.AvgPool2DAttrs(**common, count_include_pad=attrs.count_include_pad)
    return nn.MaxPool2DAttrs(**common)


def _pool1d_rel(op: str) -> object:
    inner = nn.pool2d_rel(op)

    def rel(arg_types: list[Type], attrs: MaxPool1DAttrs) -> object:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        check_rank(op, data, 3, "data")
        n, c, w = shape_to(data.shape, attrs.layout, "NCW")
        as_2d = TensorType((n, c, 1, w), data.dtype)
        try:
            out = inner([as_2d], pool1d_as_2d(attrs))  # type: ignore[operator]
        except RelationError as err:  # speak of the 1-d input, not its 2-d stand-in
            raise RelationError(str(err).replace(shape_text(as_2d.shape),
                                                 shape_text(data.shape))) from None
        n2, c2, _, ow = out.shape  # type: ignore[attr-defined]
        return TensorType(shape_from((n2, c2, ow), attrs.out_layout or attrs.layout, "NCW"),
                          data.dtype)
    return rel


def _pool1d_ref(kind: str) -> object:
    inner = nn.max_pool2d_ref if kind == "max" else nn.avg_pool2d_ref

    def ref(args: list, attrs: MaxPool1DAttrs) -> Array:
        x = to_canonical(np.asarray(args[0]), attrs.layout, "NCW")
        out = inner([x[:, :, None, :]], pool1d_as_2d(attrs))[:, :, 0, :]  # type: ignore[operator]
        return as_dtype(from_canonical(out, attrs.out_layout or attrs.layout, "NCW"), x.dtype)
    return ref


register_op("nn.max_pool1d", attrs=MaxPool1DAttrs, num_inputs=1, arg_names=("data",),
            support_level=2, relation=_pool1d_rel("nn.max_pool1d"),
            reference=_pool1d_ref("max"),
            doc="1-d max pooling over W (layout NCW); as nn.max_pool2d with one spatial "
                "axis; padding: 1 value or (left, right).")
register_op("nn.avg_pool1d", attrs=AvgPool1DAttrs, num_inputs=1, arg_names=("data",),
            support_level=2, relation=_pool1d_rel("nn.avg_pool1d"),
            reference=_pool1d_ref("avg"),
            doc="1-d average pooling over W (layout NCW); as nn.avg_pool2d with one spatial "
                "axis (count_include_pad counts explicit padding).")


# -- nn.max_pool3d / nn.avg_pool3d ----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MaxPool3DAttrs:
    pool_size: tuple[int, ...]
    strides: tuple[int, ...] = (1, 1, 1)
    dilation: tuple[int, ...] = (1, 1, 1)
    padding: tuple[int, ...] = (0, 0, 0)
    layout: str = "NCDHW"
    out_layout: str = ""
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        _pool_post(self, "NCDHW")


@dataclass(frozen=True, slots=True)
class AvgPool3DAttrs:
    pool_size: tuple[int, ...]
    strides: tuple[int, ...] = (1, 1, 1)
    dilation: tuple[int, ...] = (1, 1, 1)
    padding: tuple[int, ...] = (0, 0, 0)
    layout: str = "NCDHW"
    out_layout: str = ""
    ceil_mode: bool = False
    count_include_pad: bool = False

    def __post_init__(self) -> None:
        _pool_post(self, "NCDHW")


def _pool3d_rel(op: str) -> object:
    def rel(arg_types: list[Type], attrs: MaxPool3DAttrs) -> object:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        check_rank(op, data, 5, "data")
        n, c, *sp = shape_to(data.shape, attrs.layout, "NCDHW")
        before, after = _pads(attrs.padding, 3)
        out = []
        for j in range(3):
            od = nn.pool_out(sp[j], attrs.pool_size[j], attrs.strides[j],
                               before[j] + after[j], attrs.dilation[j], attrs.ceil_mode)
            if dim_le(od, 0) is True:  # Shape-Rel: provably empty
                raise RelationError(f"{op}: the pooling window is larger than the padded "
                                    f"input {shape_text(data.shape)}")
            out.append(od)
        return TensorType(shape_from((n, c, *out), attrs.out_layout or attrs.layout,
                                      "NCDHW"), data.dtype)
    return rel


def _nd_windows(xp: Array, attrs: MaxPool3DAttrs, outs: list[int]) -> Array:
    nd = len(outs)
    ext = [(k - 1) * d + 1 for k, d in zip(attrs.pool_size, attrs.dilation, strict=True)]
    view = sliding_window_view(xp, ext, axis=tuple(range(xp.ndim - nd, xp.ndim)))
    lead = (slice(None),) * (xp.ndim - nd)
    idx = (lead + tuple(slice(0, o * s, s) for o, s in zip(outs, attrs.strides, strict=True))
           + tuple(slice(None, None, d) for d in attrs.dilation))
    return view[idx]


def _pool3d_ref(kind: str) -> object:
    def ref(args: list, attrs: MaxPool3DAttrs | AvgPool3DAttrs) -> Array:
        x = to_canonical(np.asarray(args[0]), attrs.layout, "NCDHW")
        sp = x.shape[2:]
        before, after = _pads(attrs.padding, 3)
        outs, extra = [], []
        for j in range(3):
            k, s, d = attrs.pool_size[j], attrs.strides[j], attrs.dilation[j]
            o = nn.pool_out(sp[j], k, s, before[j] + after[j], d, attrs.ceil_mode)
            need = (o - 1) * s + (k - 1) * d + 1  # type: ignore[operator]
            outs.append(o)
            extra.append(max(0, need - (sp[j] + before[j] + after[j])))
        pads = [(b, a + e) for b, a, e in zip(before, after, extra, strict=True)]
        axes = (-3, -2, -1)
        if kind == "max":
            xp = np.pad(x, [(0, 0), (0, 0)] + pads, constant_values=nn.lowest(x.dtype))
            out = _nd_windows(xp, attrs, outs).max(axis=axes)  # type: ignore[arg-type]
        else:
            acc = x.dtype if is_float(x.dtype.name) else np.dtype(np.int64)
            xp = np.pad(x.astype(acc, copy=False), [(0, 0), (0, 0)] + pads)
            total = _nd_windows(xp, attrs, outs).sum(axis=axes, dtype=acc)  # type: ignore
            if attrs.count_include_pad:  # type: ignore[union-attr]
                region = np.pad(np.ones([s + b + a for s, b, a in
                                         zip(sp, before, after, strict=True)], np.int64),
                                [(0, e) for e in extra])
            else:
                region = np.pad(np.ones(sp, np.int64), pads)
            count = np.maximum(_nd_windows(region, attrs, outs).sum(axis=axes), 1)  # type: ignore
            with np.errstate(all="ignore"):
                if is_float(x.dtype.name):
                    out = total / count.astype(x.dtype)
                else:
                    out = nn.trunc_div(total, count)
        return as_dtype(from_canonical(out, attrs.out_layout or attrs.layout, "NCDHW"), x.dtype)
    return ref


register_op("nn.max_pool3d", attrs=MaxPool3DAttrs, num_inputs=1, arg_names=("data",),
            support_level=2, relation=_pool3d_rel("nn.max_pool3d"),
            reference=_pool3d_ref("max"),
            doc="3-d max pooling over D, H, W (layout NCDHW); as nn.max_pool2d with three "
                "spatial axes; padding: 1, 3 or 6 values.")
register_op("nn.avg_pool3d", attrs=AvgPool3DAttrs, num_inputs=1, arg_names=("data",),
            support_level=2, relation=_pool3d_rel("nn.avg_pool3d"),
            reference=_pool3d_ref("avg"),
            doc="3-d average pooling over D, H, W (layout NCDHW); as nn.avg_pool2d with "
                "three spatial axes (count_include_pad counts explicit padding).")


# -- nn.conv1d_transpose / nn.conv3d_transpose ------------------------------------------------

def _convt_attrs_post(attrs: object, nd: int, data: str, kernel: str) -> None:
    """As ``nn.conv2d_transpose``: nd-value strides / output_padding / dilation (one value
    widens), 1 / nd / 2 * nd paddings, output_padding smaller than the stride or the
    dilation, layouts that permute the canonical ones."""
    _widen(attrs, "strides", nd)
    _widen(attrs, "output_padding", nd, minimum=0)
    _check_pad(attrs.padding, nd)  # type: ignore[attr-defined]
    _widen(attrs, "dilation", nd)
    if attrs.groups < 1:  # type: ignore[attr-defined]
        raise AttrError(f"groups must be >= 1, found {attrs.groups}", "groups")  # type: ignore
    _widen(attrs, "kernel_size", nd)
    for op_, s, d in zip(attrs.output_padding, attrs.strides,  # type: ignore[attr-defined]
                         attrs.dilation, strict=True):  # type: ignore[attr-defined]
        if op_ >= max(s, d):
            raise AttrError("output_padding must be smaller than the stride or the "
                            "dilation", "output_padding")
    check_layout(attrs.data_layout, data, "data_layout")  # type: ignore[attr-defined]
    check_layout(attrs.kernel_layout, kernel, "kernel_layout")  # type: ignore[attr-defined]
    if attrs.out_layout:  # type: ignore[attr-defined]
        check_layout(attrs.out_layout, data, "out_layout")  # type: ignore[attr-defined]
    if attrs.out_dtype:  # type: ignore[attr-defined]
        check_dtype(attrs.out_dtype, "out_dtype")  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Conv1DTransposeAttrs:
    """Transposed 1-d convolution; weight layout IOW (in, out / groups, kw)."""

    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    strides: tuple[int, ...] = (1,)
    output_padding: tuple[int, ...] = (0,)
    padding: tuple[int, ...] = (0,)
    dilation: tuple[int, ...] = (1,)
    groups: int = 1
    data_layout: str = "NCW"
    kernel_layout: str = "IOW"
    out_layout: str = ""
    out_dtype: str = ""

    def __post_init__(self) -> None:
        _convt_attrs_post(self, 1, "NCW", "OIW")


@dataclass(frozen=True, slots=True)
class Conv3DTransposeAttrs:
    """Transposed 3-d convolution; weight layout IODHW (in, out / groups, kd, kh, kw)."""

    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    strides: tuple[int, ...] = (1, 1, 1)
    output_padding: tuple[int, ...] = (0, 0, 0)
    padding: tuple[int, ...] = (0, 0, 0)
    dilation: tuple[int, ...] = (1, 1, 1)
    groups: int = 1
    data_layout: str = "NCDHW"
    kernel_layout: str = "IODHW"
    out_layout: str = ""
    out_dtype: str = ""

    def __post_init__(self) -> None:
        _convt_attrs_post(self, 3, "NCDHW", "OIDHW")


def _convt_rel(op: str, nd: int, dcanon: str, kcanon: str) -> object:
    """TVM's ``Conv1DTransposeRel`` / ``Conv3DTransposeRel`` as ``nn.conv2d_transpose``
    reads them: input channels = the weight's I; output channels = O * groups (TVM's
    relation says O when ``channels`` is unset; TOPI's grouped kernels give O * groups);
    ``?`` spatial dims stay ``?``."""
    def rel(arg_types: list[Type], attrs: Conv1DTransposeAttrs | Conv3DTransposeAttrs
            ) -> object:
        args = tensor_args(op, arg_types, 2, ("data", "weight"))
        if args is NOT_YET:
            return NOT_YET
        data, weight = args
        check_rank(op, data, nd + 2, "data")
        check_rank(op, weight, nd + 2, "weight")
        n, c, *sp = shape_to(data.shape, attrs.data_layout, dcanon)
        i, o, *ks = shape_to(weight.shape, attrs.kernel_layout, kcanon)
        g = attrs.groups
        if not (is_any(c) or is_any(i)) and not dims_compatible(c, i):
            raise RelationError(f"{op}: input has {c} channels but weight expects {i}")
        if dim_divisible(c, g) is False:
            raise RelationError(f"{op}: input channels {c} are not divisible by groups={g}")
        out_c = dim_map(lambda o: o * g, o)
        if attrs.channels is not None and not dims_compatible(out_c, attrs.channels):
            raise RelationError(f"{op}: channels={attrs.channels} but the weight gives "
                                f"{out_c}")
        if attrs.kernel_size is not None and not all(
                dims_compatible(k, a) for k, a in zip(ks, attrs.kernel_size, strict=True)):
            raise RelationError(f"{op}: kernel_size={tuple(attrs.kernel_size)} but the "
                                f"weight's kernel is {shape_text(tuple(ks))}")
        before, after = _pads(attrs.padding, nd)
        out = []
        for j in range(nd):
            s, d, p = attrs.strides[j], attrs.dilation[j], before[j] + after[j]
            op_ = attrs.output_padding[j]
            od = dim_map(lambda n, k, s=s, d=d, p=p, op_=op_:
                         (n - 1) * s - p + d * (k - 1) + 1 + op_, sp[j], ks[j])
            if dim_le(od, 0) is True:  # Shape-Rel: provably empty
                raise RelationError(f"{op}: padding leaves an empty output")
            out.append(od)
        return TensorType(shape_from((n, out_c, *out), attrs.out_layout or attrs.data_layout,
                                      dcanon), attrs.out_dtype or data.dtype)
    return rel


def conv_transpose_nd(x: Array, w: Array, strides: tuple[int, ...], padding: tuple[int, ...],
                      output_padding: tuple[int, ...], dilation: tuple[int, ...],
                      groups: int) -> Array:
    """N-d transposed convolution, x: (N, C, *S), w: (C, O / groups, *K) -> (N, O, *S').

    Spread ``x`` by the stride, pad each side by the dilated kernel extent minus the
    padding (crop where negative; ``output_padding`` extra at the end), and run a stride-1
    convolution with the flipped kernel, I and O swapped within each group."""
    nd = x.ndim - 2
    before, after = _pads(padding, nd)
    n, c, *sp = x.shape
    cin, opg, *ks = w.shape
    up = np.zeros((n, c, *[(m - 1) * s + 1 for m, s in zip(sp, strides, strict=True)]),
                  x.dtype)
    up[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)] = x
    lo = [d * (k - 1) - b for d, k, b in zip(dilation, ks, before, strict=True)]
    hi = [d * (k - 1) - a + e for d, k, a, e in zip(dilation, ks, after, output_padding,
                                                    strict=True)]
    up = np.pad(up, [(0, 0), (0, 0)] + [(max(b, 0), max(a, 0)) for b, a in
                                        zip(lo, hi, strict=True)])
    up = up[(slice(None), slice(None)) + tuple(
        slice(max(-b, 0), up.shape[2 + j] - max(-a, 0))
        for j, (b, a) in enumerate(zip(lo, hi, strict=True)))]
    flip = (slice(None), slice(None)) + (slice(None, None, -1),) * nd
    wf = w[flip].reshape(groups, cin // groups, opg, *ks)
    wf = np.swapaxes(wf, 1, 2).reshape(groups * opg, cin // groups, *ks)
    return conv_nd(up, wf, (1,) * nd, (0,), dilation, groups)


def _convt_ref(dcanon: str, kcanon: str) -> object:
    def ref(args: list, attrs: Conv1DTransposeAttrs | Conv3DTransposeAttrs) -> Array:
        data, weight = np.asarray(args[0]), np.asarray(args[1])
        dtype = attrs.out_dtype or data.dtype.name
        x = to_canonical(data, attrs.data_layout, dcanon).astype(dtype, copy=False)
        w = to_canonical(weight, attrs.kernel_layout, kcanon).astype(dtype, copy=False)
        with np.errstate(all="ignore"):
            out = conv_transpose_nd(x, w, attrs.strides, attrs.padding, attrs.output_padding,
                                    attrs.dilation, attrs.groups)
        return as_dtype(from_canonical(out, attrs.out_layout or attrs.data_layout, dcanon),
                        dtype)
    return ref


_CONVT_SIZE = ("\n\nOutput size per spatial axis: (n - 1) * stride - pad_before - pad_after + "
               "dilation * (k - 1) + 1 + output_padding.")
register_op("nn.conv1d_transpose", attrs=Conv1DTransposeAttrs, num_inputs=2,
            arg_names=("data", "weight"), support_level=2,
            relation=_convt_rel("nn.conv1d_transpose", 1, "NCW", "IOW"),
            reference=_convt_ref("NCW", "IOW"),
            doc="Transposed 1-d convolution (the gradient of conv1d w.r.t. its input). "
                "Weight IOW: (C_in, C_out / groups, KW); padding: 1 value or (left, right)."
                + _CONVT_SIZE)
register_op("nn.conv3d_transpose", attrs=Conv3DTransposeAttrs, num_inputs=2,
            arg_names=("data", "weight"), support_level=2,
            relation=_convt_rel("nn.conv3d_transpose", 3, "NCDHW", "IODHW"),
            reference=_convt_ref("NCDHW", "IODHW"),
            doc="Transposed 3-d convolution (the gradient of conv3d w.r.t. its input). "
                "Weight IODHW: (C_in, C_out / groups, KD, KH, KW); padding: 1, 3 or 6 values."
                + _CONVT_SIZE)


# -- nn.adaptive_{avg,max}_pool{1,3}d ---------------------------------------------------------

def _adaptive_post(attrs: object, canonical: str) -> None:
    nd = len(canonical) - 2
    size = attrs.output_size  # type: ignore[attr-defined]
    if len(size) not in {0, 1, nd} or any(s < 1 for s in size):
        raise AttrError(f"output_size must be {'0 or 1' if nd == 1 else f'0, 1 or {nd}'} "
                        f"positive values, found {size}", "output_size")
    check_layout(attrs.layout, canonical, "layout")  # type: ignore[attr-defined]
    if attrs.out_layout:  # type: ignore[attr-defined]
        check_layout(attrs.out_layout, canonical, "out_layout")  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class AdaptivePool1DAttrs:
    """``output_size``: () keeps W, else (ow,)."""

    output_size: tuple[int, ...] = ()
    layout: str = "NCW"
    out_layout: str = ""

    def __post_init__(self) -> None:
        _adaptive_post(self, "NCW")


@dataclass(frozen=True, slots=True)
class AdaptivePool3DAttrs:
    """``output_size``: () keeps D, H and W, (s,) means (s, s, s), else (od, oh, ow)."""

    output_size: tuple[int, ...] = ()
    layout: str = "NCDHW"
    out_layout: str = ""

    def __post_init__(self) -> None:
        _adaptive_post(self, "NCDHW")


def _adaptive_out(attrs: AdaptivePool1DAttrs | AdaptivePool3DAttrs, sp: list) -> list:
    size = attrs.output_size
    if not size:
        return list(sp)
    return [size[0]] * len(sp) if len(size) == 1 else list(size)


def _adaptive_rel(op: str, canonical: str) -> object:
    """TVM's ``AdaptivePool1DRel`` / ``AdaptivePool3DRel``: the spatial dims become
    ``output_size`` (kept when it is empty); N and C pass through, ``?`` included."""
    nd = len(canonical) - 2

    def rel(arg_types: list[Type], attrs: AdaptivePool1DAttrs) -> object:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        check_rank(op, data, nd + 2, "data")
        n, c, *sp = shape_to(data.shape, attrs.layout, canonical)
        out = _adaptive_out(attrs, sp)
        return TensorType(shape_from((n, c, *out), attrs.out_layout or attrs.layout,
                                      canonical), data.dtype)
    return rel


def _adaptive_ref(kind: str, canonical: str) -> object:
    """Output cell i of a spatial axis of extent n covers [floor(i*n/o), ceil((i+1)*n/o));
    the mean of an integer tensor rounds towards zero (as 2-d)."""
    def ref(args: list, attrs: AdaptivePool1DAttrs) -> Array:
        x = to_canonical(np.asarray(args[0]), attrs.layout, canonical)
        sp = list(x.shape[2:])
        if int(np.prod(sp)) == 0:
            raise OpRuntimeError("adaptive pooling over an empty extent")
        outs = _adaptive_out(attrs, sp)
        bounds = [nn.adaptive_bounds(m, o) for m, o in zip(sp, outs, strict=True)]
        axes = tuple(range(2, x.ndim))
        acc = x.dtype if is_float(x.dtype.name) else np.dtype(np.int64)
        out = np.empty(x.shape[:2] + tuple(outs), x.dtype)
        for cell in np.ndindex(*outs):  # loops over the (small) output grid only
            win = x[(slice(None), slice(None)) + tuple(
                slice(int(s[i]), int(e[i])) for (s, e), i in zip(bounds, cell, strict=True))]
            if kind == "max":
                out[(slice(None), slice(None)) + cell] = win.max(axis=axes)
            else:
                total = win.sum(axis=axes, dtype=acc)
                count = int(np.prod(win.shape[2:]))
                out[(slice(None), slice(None)) + cell] = (
                    total / acc.type(count) if is_float(x.dtype.name)
                    else nn.trunc_div(total, np.int64(count)))
        return as_dtype(from_canonical(out, attrs.out_layout or attrs.layout, canonical),
                        x.dtype)
    return ref


for _nd, _canon, _attrs in ((1, "NCW", AdaptivePool1DAttrs),
                            (3, "NCDHW", AdaptivePool3DAttrs)):
    for _kind in ("avg", "max"):
        _name = f"nn.adaptive_{_kind}_pool{_nd}d"
        register_op(_name, attrs=_attrs, num_inputs=1, arg_names=("data",), support_level=10,
                    relation=_adaptive_rel(_name, _canon), reference=_adaptive_ref(_kind, _canon),
                    doc=f"{'Average' if _kind == 'avg' else 'Max'} pooling of a {_canon} "
                        f"tensor to a fixed output size; output cell i of an axis of extent "
                        f"n covers [floor(i*n/o), ceil((i+1)*n/o)) (as nn.adaptive_"
                        f"{_kind}_pool2d).")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

EXAMPLES["nn.conv1d"] = Examples(attrs=({"strides": (2,)}, {"padding": (1,)}),
                                 args=(((1, 2, 5), (2, 2, 3)),))
EXAMPLES["nn.conv3d"] = Examples(attrs=({"padding": (1, 1, 1)},),
                                 args=(((1, 2, 3, 3, 3), (2, 2, 2, 2, 2)),))
for _name in ("nn.max_pool1d", "nn.avg_pool1d"):
    EXAMPLES[_name] = Examples(attrs=({"pool_size": (2,)}, {"pool_size": (2,), "strides": (2,)}),
                               args=(((1, 2, 5),),))
for _name in ("nn.max_pool3d", "nn.avg_pool3d"):
    EXAMPLES[_name] = Examples(attrs=({"pool_size": (2, 2, 2)},), args=(((1, 2, 3, 3, 3),),))
EXAMPLES["nn.conv1d_transpose"] = Examples(attrs=(
    {"strides": (2,)}, {"strides": (2,), "output_padding": (1,)}, {"padding": (1,)},
    {"dilation": (2,)}, {"groups": 2}, {"data_layout": "NWC", "kernel_layout": "WIO"}),
    args=(((1, 2, 3), (2, 2, 2)), ((1, 3, 2), (2, 2, 2)), ((1, 2, 3), (2, 1, 1))))
EXAMPLES["nn.conv3d_transpose"] = Examples(attrs=(
    {"strides": (2, 2, 2)}, {"strides": (2, 1, 1), "output_padding": (1, 0, 0)},
    {"padding": (1, 1, 1)}, {"groups": 2}, {"data_layout": "NDHWC", "kernel_layout": "DHWIO"}),
    args=(((1, 2, 2, 2, 2), (2, 1, 2, 2, 2)), ((1, 2, 2, 2, 2), (2, 2, 1, 1, 1))))
