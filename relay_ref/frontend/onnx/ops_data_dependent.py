"""Converters of the operators whose output size depends on the data: NonZero, Unique,
Compress, NonMaxSuppression (Relax's ONNX frontend does the same).

Each becomes a Relay op whose relation leaves the data-dependent dims ``?``
(``nonzero``, ``unique`` in ``ops/algorithm.py``, ``vision.all_class_non_max_suppression``
in ``ops/vision.py``), followed by a ``match_cast`` to a type with a fresh
shape variable for that size (``k``, ``k_1`` ... never a name the model's ``dim_param``s
took): ``match_cast(nonzero(%x), Tensor[(2, k), int64])``. From there on the size is a
symbol the rest of the graph computes with (Shape-MatchCast, spec/typing.md 5.2); the
``match_cast`` is checked at run time.
"""

from __future__ import annotations

import numpy as np

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext, axis_of, fresh_dim, match_cast
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr
from relay_ref.ir.shape import shape_prod
from relay_ref.ir.types import TensorType, TupleType


@converter("NonZero", since=9)
def nonzero(ctx: NodeContext) -> Expr:
    rows = max(ctx.rank(0), 1)
    k = fresh_dim(ctx, "k")
    return match_cast(ctx, ctx.call("nonzero", ctx.need(0)), TensorType((rows, k), "int64"))


@converter("Compress", since=9)
def compress(ctx: NodeContext) -> Expr:
    """``take`` of the positions where the 1-d ``condition`` holds (``nonzero`` of it, cast
    to ``(1, k)``, flattened), along ``axis`` or of the flattened input. A condition longer
    than the axis with a true value past its end is a run-time error (``take`` mode
    ``fast``), as NumPy's ``compress`` refuses it."""
    if ctx.rank(1) != 1:
        raise ConvertError(f"condition must be 1-d, found rank {ctx.rank(1)}")
    cond = ctx.need(1)
    if ctx.dtype(1) != "bool":
        cond = ctx.call("not_equal", cond, ctx.scalar(0, 1))
    k = fresh_dim(ctx, "k")
    where = match_cast(ctx, ctx.call("nonzero", cond), TensorType((1, k), "int64"))
    indices = ctx.call("reshape", where, newshape=[-1])
    axis = ctx.attr("axis")
    data = ctx.need(0)
    if axis is None:
        data = ctx.call("reshape", data, newshape=[-1])
        return ctx.call("take", data, indices, axis=0, mode="fast")
    return ctx.call("take", data, indices, axis=axis_of(ctx, int(axis), ctx.rank(0)),
                    mode="fast")


@converter("Unique", since=11, outputs=4)
def unique(ctx: NodeContext) -> list[Expr]:
    """``unique`` with the outputs the node names (Y, indices, inverse_indices, counts;
    an omitted middle one is computed anyway), then one ``match_cast`` of them all, so
    that Y's length, indices' and counts' are one variable ``k``."""
    n = max(ctx.num_outputs, 1)
    axis = ctx.attr("axis")
    shape = ctx.shape(0)
    if axis is not None:
        axis = axis_of(ctx, int(axis), len(shape))
    y = ctx.call("unique", ctx.need(0), sorted=bool(ctx.attr("sorted", 1)),
                 return_index=n > 1, return_inverse=n > 2, return_counts=n > 3, axis=axis)
    k = fresh_dim(ctx, "k")
    dtype = ctx.dtype(0)
    values = TensorType((k,) if axis is None else
                        tuple(k if i == axis else d for i, d in enumerate(shape)), dtype)
    length = shape_prod(shape) if axis is None else shape[axis]
    fields = [values, TensorType((k,), "int64"), TensorType((length,), "int64"),
              TensorType((k,), "int64")][:n]
    if n == 1:
        return [match_cast(ctx, y, values)]
    cast = match_cast(ctx, y, TupleType(tuple(fields)))
    return [ctx.builder.item(cast, i) for i in range(n)]


def _corners(ctx: NodeContext, boxes: Expr) -> Expr:
    """``[x_center, y_center, width, height]`` boxes as corners ``[y1, x1, y2, x2]`` (the
    same arithmetic ONNX's reference does on them)."""
    dtype = ctx.dtype(0)
    part = [ctx.call("strided_slice", boxes, begin=[i], end=[i + 1], axes=[2])
            for i in range(4)]
    two = ctx.const(np.array(2, dtype))
    half_w, half_h = ctx.call("divide", part[2], two), ctx.call("divide", part[3], two)
    x1, x2 = ctx.call("subtract", part[0], half_w), ctx.call("add", part[0], half_w)
    y1, y2 = ctx.call("subtract", part[1], half_h), ctx.call("add", part[1], half_h)
    return ctx.call("concatenate", ctx.builder.tuple(y1, x1, y2, x2), axis=2)


def _check_nms(ctx: NodeContext) -> list[str]:
    box = int(ctx.attr("center_point_box", 0))
    return [] if box in (0, 1) else [f"center_point_box={box} (0 or 1)"]


@converter("NonMaxSuppression", since=10, check=_check_nms)
def non_max_suppression(ctx: NodeContext) -> Expr:
    """``vision.all_class_non_max_suppression`` (ONNX output format) and a ``match_cast``
    of its selected rows to ``(k, 3)``. Absent inputs take ONNX's meaning: no boxes
    (``max_output_boxes_per_class`` 0), IoU threshold 0, no score threshold (``-inf``)."""
    boxes = ctx.need(0)
    if int(ctx.attr("center_point_box", 0)) == 1:
        boxes = _corners(ctx, boxes)
    limit = ctx.input(2)
    iou = ctx.input(3)
    score = ctx.input(4)
    limit = ctx.const(np.array(0, np.int64)) if limit is None else limit
    iou = ctx.const(np.array(0, np.float32)) if iou is None else iou
    score = ctx.const(np.array(-np.inf, np.float32)) if score is None else score
    out = ctx.call("vision.all_class_non_max_suppression", boxes, ctx.need(1), limit, iou,
                   score)
    k = fresh_dim(ctx, "k")
    return match_cast(ctx, ctx.builder.item(out, 0), TensorType((k, 3), "int64"))
