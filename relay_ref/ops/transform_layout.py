"""Layout operators (TVM ``src/relay/op/tensor/transform.cc``, ``nn/nn.cc``):
``layout_transform`` between plain and blocked layouts (``NCHW`` <-> ``NCHW8c``, see
``layout.py``), and ``nn.depth_to_space`` / ``nn.space_to_depth``, which move data between
channels and spatial blocks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import dim_divisible, dim_map, dims_compatible, shape_text
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.layout import (
    blocked_shape,
    check_layout,
    check_rank,
    from_canonical,
    from_primal,
    parse_layout,
    primal,
    shape_from,
    shape_to,
    to_canonical,
    to_primal,
    unblocked_shape,
)
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, register_op
from relay_ref.ops.relations import as_dtype, tensor_args

Array = np.ndarray


# -- layout_transform ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class LayoutTransformAttrs:
    """``src_layout`` and ``dst_layout`` name the same primal axes (checked by the
    relation); either may block any of them (``NCHW8c``, ``OIHW4i8o``)."""

    src_layout: str = ""
    dst_layout: str = ""


def _layouts(op: str, attrs: LayoutTransformAttrs) -> tuple:
    """The parsed (src, dst) layouts; ``RelationError`` unless they name the same axes."""
    parsed = []
    for name in ("src_layout", "dst_layout"):
        text = getattr(attrs, name)
        if not text:
            raise RelationError(f"{op}: {name} must be given")
        try:
            parsed.append(parse_layout(text, name))
        except AttrError as err:
            raise RelationError(f"{op}: {err}") from None
    src, dst = parsed
    if sorted(primal(src)) != sorted(primal(dst)):
        raise RelationError(f"{op}: {attrs.dst_layout!r} and {attrs.src_layout!r} do not "
                            f"name the same axes")
    return src, dst


def _layout_transform_rel(arg_types: list[Type], attrs: LayoutTransformAttrs) -> object:
    op = "layout_transform"
    args = tensor_args(op, arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    src, dst = _layouts(op, attrs)
    if data.ndim != len(src):
        raise RelationError(f"{op}: data {shape_text(data.shape)} has rank {data.ndim}, "
                            f"src_layout {attrs.src_layout!r} has {len(src)} axes")
    for a, n in zip(src, data.shape, strict=True):
        if a.is_block and not dims_compatible(n, a.factor):
            raise RelationError(f"{op}: the {a.factor}{a.name.lower()} block of "
                                f"{attrs.src_layout!r} has size {n} in data "
                                f"{shape_text(data.shape)}")
    plain = shape_to(unblocked_shape(data.shape, src), primal(src), primal(dst))
    return TensorType(blocked_shape(op, plain, dst), data.dtype)


def _layout_transform_ref(args: list, attrs: LayoutTransformAttrs) -> Array:
    x = np.asarray(args[0])
    src, dst = _layouts("layout_transform", attrs)
    plain = to_canonical(to_primal(x, src), primal(src), primal(dst))
    return from_primal(np.ascontiguousarray(plain), dst)


register_op("layout_transform", attrs=LayoutTransformAttrs, num_inputs=1,
            arg_names=("data",), support_level=5, relation=_layout_transform_rel,
            reference=_layout_transform_ref,
            doc="Move ``data`` from ``src_layout`` to ``dst_layout``: a permutation of plain "
                "axes (NCHW -> NHWC) and/or packing an axis into blocks (NCHW -> NCHW8c: "
                "out[n, c // 8, h, w, c % 8] = in[n, c, h, w]) or unpacking them. A split "
                "axis must be a multiple of its block size (the ragged case is refused).")


# -- nn.depth_to_space / nn.space_to_depth ------------------------------------------------

@dataclass(frozen=True, slots=True)
class SubPixelAttrs:
    """``mode`` (depth_to_space only): ``DCR`` (depth-column-row) or ``CRD``."""

    block_size: int = 1
    layout: str = "NCHW"
    mode: str = "DCR"

    def __post_init__(self) -> None:
        if self.block_size < 1:
            raise AttrError(f"block_size must be >= 1, found {self.block_size}",
                            "block_size")
        check_layout(self.layout, "NCHW", "layout")
        if self.mode not in ("DCR", "CRD"):
            raise AttrError(f"mode must be 'DCR' or 'CRD', found {self.mode!r}", "mode")


def _subpixel_rel(op: str, to_depth: bool) -> object:
    def rel(arg_types: list[Type], attrs: SubPixelAttrs) -> object:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        check_rank(op, data, 4, "data")
        n, c, h, w = shape_to(data.shape, attrs.layout, "NCHW")
        b = attrs.block_size
        if to_depth:
            for d, name in ((h, "height"), (w, "width")):
                if dim_divisible(d, b) is False:
                    raise RelationError(f"{op}: {name} {d} is not divisible by "
                                        f"block_size={b}")
            out = (n, dim_map(lambda c: c * b * b, c), dim_map(lambda h: h // b, h),
                   dim_map(lambda w: w // b, w))
        else:
            if dim_divisible(c, (b * b)) is False:
                raise RelationError(f"{op}: channels {c} are not divisible by "
                                    f"block_size**2={b * b}")
            out = (n, dim_map(lambda c: c // (b * b), c), dim_map(lambda h: h * b, h),
                   dim_map(lambda w: w * b, w))
        return TensorType(shape_from(out, attrs.layout, "NCHW"), data.dtype)
    return rel


def _depth_to_space_ref(args: list, attrs: SubPixelAttrs) -> Array:
    x = to_canonical(np.asarray(args[0]), attrs.layout, "NCHW")
    n, c, h, w = x.shape
    b = attrs.block_size
    if attrs.mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    out = y.reshape(n, c // (b * b), h * b, w * b)
    return as_dtype(from_canonical(out, attrs.layout, "NCHW").copy(), x.dtype)


def _space_to_depth_ref(args: list, attrs: SubPixelAttrs) -> Array:
    x = to_canonical(np.asarray(args[0]), attrs.layout, "NCHW")
    n, c, h, w = x.shape
    b = attrs.block_size
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    out = y.reshape(n, c * b * b, h // b, w // b)
    return as_dtype(from_canonical(out, attrs.layout, "NCHW").copy(), x.dtype)


register_op("nn.depth_to_space", attrs=SubPixelAttrs, num_inputs=1, arg_names=("data",),
            support_level=5, relation=_subpixel_rel("nn.depth_to_space", False),
            reference=_depth_to_space_ref,
            doc="Move channel blocks into b x b spatial blocks: (N, C, H, W) -> "
                "(N, C / b^2, H * b, W * b); ``mode`` DCR or CRD as in ONNX DepthToSpace.")
register_op("nn.space_to_depth", attrs=SubPixelAttrs, num_inputs=1, arg_names=("data",),
            support_level=5, relation=_subpixel_rel("nn.space_to_depth", True),
            reference=_space_to_depth_ref,
            doc="Inverse of depth_to_space (DCR): (N, C, H, W) -> (N, C * b^2, H / b, W / b); "
                "``mode`` is ignored, as in TVM.")
