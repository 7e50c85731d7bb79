"""Converters of resizing: ``Resize`` (10, 11+) and ``Upsample`` (7, 9), as one
``image.resize2d`` on NCHW data (TVM's resize implements ONNX's coordinate
transformations, nearest modes and cubic coefficients).

Only 4-d inputs resized in H and W (scales of N and C equal to 1) are covered; the output
size is ``sizes`` when given, else ``dim * scale``, which must be whole (ONNX maps
coordinates by the scale, resize2d by the size ratio: they agree only then); both must be
static.
"""

from __future__ import annotations

import math

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr

_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic",
            "bilinear": "linear"}  # Upsample-7 spelled it bilinear
_COORDS = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
           "tf_crop_and_resize")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _check_resize(ctx: NodeContext) -> list[str]:
    out = []
    if ctx.attr("mode", "nearest") not in _METHODS:
        out.append(f"mode={ctx.attr('mode')!r}")
    if ctx.attr("coordinate_transformation_mode", "half_pixel") not in _COORDS:
        out.append(f"coordinate_transformation_mode="
                   f"{ctx.attr('coordinate_transformation_mode')!r}")
    if ctx.attr("nearest_mode", "round_prefer_floor") not in _NEAREST:
        out.append(f"nearest_mode={ctx.attr('nearest_mode')!r}")
    if int(ctx.attr("antialias", 0)):
        out.append("antialias=1")
    if ctx.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        out.append(f"keep_aspect_ratio_policy={ctx.attr('keep_aspect_ratio_policy')!r}")
    if ctx.attr("axes") is not None:
        out.append("axes (resize every axis, with scale 1 for N and C)")
    return out


def _resize(ctx: NodeContext, scales: list[float] | None, sizes: list[int] | None,
            coord: str, nearest: str, roi: list[float] | None = None) -> Expr:
    shape = ctx.static_shape(0, "the resized input")
    if len(shape) != 4:
        raise ConvertError(f"only 4-d (NCHW) inputs are resized, not rank {len(shape)}")
    if sizes:
        out = [int(s) for s in sizes]
    elif scales:
        out = [math.floor(d * s) for d, s in zip(shape, scales, strict=True)]
        if any(o != d * s for o, d, s in zip(out, shape, scales, strict=True)):
            # ONNX then maps coordinates with the scale, resize2d with the size ratio
            raise ConvertError(f"scales {scales} do not give whole output dims for "
                               f"{list(shape)} (give sizes instead)")
    else:
        raise ConvertError("neither scales nor sizes is given")
    if out[:2] != list(shape[:2]):
        raise ConvertError("resizing N or C is not supported")
    method = _METHODS[ctx.attr("mode", "nearest")]
    attrs: dict[str, object] = dict(size=out[2:], layout="NCHW", method=method,
                                    coordinate_transformation_mode=coord)
    if method == "nearest_neighbor":
        attrs["rounding_method"] = nearest
    if method == "cubic":
        attrs["cubic_alpha"] = float(ctx.attr("cubic_coeff_a", -0.75))
        attrs["cubic_exclude"] = int(ctx.attr("exclude_outside", 0))
    if coord == "tf_crop_and_resize":
        if roi is None or len(roi) != 8:
            raise ConvertError("tf_crop_and_resize needs a static roi of 8 values")
        attrs["roi"] = [roi[2], roi[3], roi[6], roi[7]]
        attrs["extrapolation_value"] = float(ctx.attr("extrapolation_value", 0.0))
    return ctx.call("image.resize2d", ctx.need(0), **attrs)


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
