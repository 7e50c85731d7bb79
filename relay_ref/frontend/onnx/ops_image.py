"""Converters of resizing: ``Resize`` (10, 11+) and ``Upsample`` (7, 9).

Two lowerings, both of static shapes. When only H and W of a 4-d input change, each by
exactly its scale (``out == in * scale``: ONNX maps coordinates by the scale,
``image.resize2d`` by the size ratio, and they agree only then), with a coordinate mode
that op has and no antialias: one ``image.resize2d`` on NCHW data (TVM's resize
implements ONNX's coordinate transformations, nearest modes and cubic coefficients).
Otherwise (fractional output sizes floored as ONNX floors them, ``half_pixel_symmetric``,
``tf_crop_and_resize``, ``antialias``, ``keep_aspect_ratio_policy``, other ranks or
axes): separably, one axis after another as ONNX's reference does, each axis's sampling
computed at import time (``resize_math``): ``take`` of the nearest indices (exact for
every dtype), or ``nn.dense`` with the weight matrix (float data), then ``where`` for the
positions ``tf_crop_and_resize`` extrapolates.
"""

from __future__ import annotations

import numpy as np

from relay_ref.frontend.onnx import resize_math
from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext, axis_of
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr

_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic",
            "bilinear": "linear"}  # Upsample-7 spelled it bilinear
_COORDS = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
           "tf_crop_and_resize", "half_pixel_symmetric")
_RESIZE2D_COORDS = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_POLICIES = ("stretch", "not_larger", "not_smaller")


def _check_resize(ctx: NodeContext) -> list[str]:
    out = []
    if ctx.attr("mode", "nearest") not in _METHODS:
        out.append(f"mode={ctx.attr('mode')!r}")
    if ctx.attr("coordinate_transformation_mode", "half_pixel") not in _COORDS:
        out.append(f"coordinate_transformation_mode="
                   f"{ctx.attr('coordinate_transformation_mode')!r}")
    if ctx.attr("nearest_mode", "round_prefer_floor") not in _NEAREST:
        out.append(f"nearest_mode={ctx.attr('nearest_mode')!r}")
    if int(ctx.attr("antialias", 0)) and ctx.attr("mode", "nearest") == "nearest":
        out.append("antialias=1 with mode='nearest' (ONNX defines it for linear and cubic)")
    if ctx.attr("keep_aspect_ratio_policy", "stretch") not in _POLICIES:
        out.append(f"keep_aspect_ratio_policy={ctx.attr('keep_aspect_ratio_policy')!r}")
    return out


def _resize(ctx: NodeContext, scales: list[float] | None, sizes: list[int] | None,
            coord: str, nearest: str, roi: list[float] | None = None) -> Expr:
    shape = ctx.static_shape(0, "the resized input")
    rank = len(shape)
    raw_axes = ctx.attr("axes")
    axes = (list(range(rank)) if raw_axes is None
            else [axis_of(ctx, int(a), rank) for a in raw_axes])
    given = sizes if sizes else scales
    if not given:
        raise ConvertError("neither scales nor sizes is given")
    if len(given) != len(axes):
        raise ConvertError(f"{'sizes' if sizes else 'scales'} {given} do not fit "
                           f"{len(axes)} axes")
    if coord == "tf_crop_and_resize" and roi is None:
        raise ConvertError("tf_crop_and_resize needs a static roi")
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch") if sizes else "stretch"
    plans = resize_math.plan(shape, None if sizes else scales, sizes or None, axes, roi,
                             policy)
    mode = ctx.attr("mode", "nearest")
    antialias = bool(int(ctx.attr("antialias", 0)))
    if (rank == 4 and plans[0].identity and plans[1].identity and not antialias
            and coord in _RESIZE2D_COORDS
            and all(p.size_out == p.size_in * p.scale for p in plans[2:])):
        return _resize2d(ctx, [p.size_out for p in plans[2:]], coord, nearest)
    return _separable(ctx, plans, mode, coord, nearest, antialias)


def _resize2d(ctx: NodeContext, size: list[int], coord: str, nearest: str) -> Expr:
    method = _METHODS[ctx.attr("mode", "nearest")]
    attrs: dict[str, object] = dict(size=size, layout="NCHW", method=method,
                                    coordinate_transformation_mode=coord)
    if method == "nearest_neighbor":
        attrs["rounding_method"] = nearest
    if method == "cubic":
        attrs["cubic_alpha"] = float(ctx.attr("cubic_coeff_a", -0.75))
        attrs["cubic_exclude"] = int(ctx.attr("exclude_outside", 0))
    return ctx.call("image.resize2d", ctx.need(0), **attrs)


def _separable(ctx: NodeContext, plans: list[resize_math.AxisPlan], mode: str, coord: str,
               nearest: str, antialias: bool) -> Expr:
    """Resize one axis after another (the axes whose plan is not the identity)."""
    mode = "linear" if mode == "bilinear" else mode
    dtype = ctx.dtype(0)
    if mode != "nearest" and np.dtype(dtype).kind != "f":
        raise ConvertError(f"{mode} resizing of {dtype} data with this configuration is "
                           "not supported (float data only)")
    y = ctx.need(0)
    shape = [p.size_in for p in plans]
    for axis, p in enumerate(plans):
        if p.identity:
            continue
        m, extrapolated = resize_math.weights(
            p, mode, coord, nearest=nearest, cubic_a=float(ctx.attr("cubic_coeff_a", -0.75)),
            exclude_outside=bool(int(ctx.attr("exclude_outside", 0))), antialias=antialias)
        if mode == "nearest":
            idx = np.argmax(m, axis=1).astype(np.int64)
            y = ctx.call("take", y, ctx.const(idx), axis=axis)
        else:
            y = _along(ctx, y, shape, axis, m.astype(dtype))
        shape[axis] = p.size_out
        if extrapolated is not None and extrapolated.any():
            mask = extrapolated.reshape([-1 if a == axis else 1 for a in range(len(shape))])
            value = float(ctx.attr("extrapolation_value", 0.0))
            y = ctx.call("where", ctx.const(mask), ctx.scalar(value, dtype), y)
    return y


def _along(ctx: NodeContext, x: Expr, shape: list[int], axis: int, m: np.ndarray) -> Expr:
    """``m @ x`` along ``axis``: the axis moved last, ``nn.dense`` on the rows, moved back."""
    rank = len(shape)
    perm = [a for a in range(rank) if a != axis] + [axis]
    moved = [shape[a] for a in perm]
    if axis != rank - 1:
        x = ctx.call("transpose", x, axes=perm)
    if rank != 2:
        x = ctx.call("reshape", x, newshape=[-1, shape[axis]])
    y = ctx.call("nn.dense", x, ctx.const(m), units=m.shape[0])
    if rank != 2:
        y = ctx.call("reshape", y, newshape=moved[:-1] + [m.shape[0]])
    if axis != rank - 1:
        y = ctx.call("transpose", y, axes=[perm.index(a) for a in range(rank)])
    return y


@converter("Resize", since=10, until=10, static_inputs=(1,), check=_check_resize)
def resize_10(ctx: NodeContext) -> Expr:
    """Resize-10: ``scales`` only; asymmetric coordinates, nearest rounds down."""
    scales = ctx.static(1, "scales")
    return _resize(ctx, [float(s) for s in scales.reshape(-1)], None,  # type: ignore[union-attr]
                   "asymmetric", "floor")


@converter("Resize", since=11, static_inputs=(1, 2, 3), check=_check_resize)
def resize(ctx: NodeContext) -> Expr:
    roi = ctx.static(1, "roi")
    scales = ctx.static(2, "scales")
    sizes = ctx.static(3, "sizes")
    return _resize(ctx, None if scales is None or scales.size == 0 else
                   [float(s) for s in scales.reshape(-1)],
                   None if sizes is None or sizes.size == 0 else
                   [int(s) for s in sizes.reshape(-1)],
                   ctx.attr("coordinate_transformation_mode", "half_pixel"),
                   ctx.attr("nearest_mode", "round_prefer_floor"),
                   None if roi is None or roi.size == 0 else [float(r) for r in roi.reshape(-1)])


@converter("Upsample", since=7, until=8, check=_check_resize)
def upsample_attr(ctx: NodeContext) -> Expr:
    return _resize(ctx, [float(s) for s in ctx.attr("scales")], None, "asymmetric", "floor")


@converter("Upsample", since=9, until=9, static_inputs=(1,), check=_check_resize)
def upsample_input(ctx: NodeContext) -> Expr:
    scales = ctx.static(1, "scales")
    return _resize(ctx, [float(s) for s in scales.reshape(-1)], None,  # type: ignore[union-attr]
                   "asymmetric", "floor")
