"""Operators whose output size depends on their input's values, as Relax has them
(``relax.op.nonzero``, ``relax.op.unique``, ``relax.op.vision.all_class_non_max_suppression``).

Their relations give ``?`` for each data-dependent dimension (and exact dimensions for the
rest); a program names such a size with ``match_cast`` to a type with a fresh shape
variable (``match_cast(nonzero(%x), Tensor[(2, k), int64])``, Shape-MatchCast, spec/typing.md
5.2), which binds ``k`` at run time. The ONNX importer does exactly that for NonZero,
Unique, Compress and NonMaxSuppression.

Invariants: every reference returns arrays of exactly the relation's dtypes, and of its
shapes with each ``?`` replaced by a size computed from the data; index outputs are int64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import ANY, dims_compatible, shape_prod
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.registry import (
    NOT_YET,
    AttrError,
    Examples,
    OpRuntimeError,
    RelationError,
    register_op,
)
from relay_ref.ops.relations import describe, is_float, normalize_axis, tensor_args

# -- nonzero ------------------------------------------------------------------------------


def _nonzero_rel(arg_types: list[Type], attrs: object) -> object:
    """``nonzero(x)``: ``Tensor[(max(ndim, 1), ?), int64]``, the coordinates of the
    non-zero elements, one column each, in row-major order (ONNX NonZero; a 0-d input
    counts as 1-d)."""
    args = tensor_args("nonzero", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    return TensorType((max(len(args[0].shape), 1), ANY), "int64")


def _nonzero_ref(args: list, attrs: object) -> np.ndarray:
    x = np.atleast_1d(np.asarray(args[0]))
    return np.stack(np.nonzero(x), axis=0).astype(np.int64).reshape(x.ndim, -1)


register_op("nonzero", num_inputs=1, arg_names=("data",), support_level=10,
            relation=_nonzero_rel, reference=_nonzero_ref,
            doc="Relax's nonzero (ONNX NonZero): the int64 coordinates of the non-zero "
                "elements, shape (max(ndim, 1), count), in row-major order; count is "
                "known at run time only (match_cast names it).")


# -- unique -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class UniqueAttrs:
    """Relax's ``unique``: ``sorted`` (ascending; else in order of first occurrence),
    which extra outputs to return, and ``axis`` (None: of the flattened input; else the
    unique slices along ``axis``)."""

    sorted: bool = True
    return_index: bool = False
    return_inverse: bool = False
    return_counts: bool = False
    axis: int | None = None

    def __post_init__(self) -> None:
        for name in ("sorted", "return_index", "return_inverse", "return_counts"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise AttrError(f"{name} must be a bool, found {getattr(self, name)!r}", name)
        if self.axis is not None and (isinstance(self.axis, bool) or
                                      not isinstance(self.axis, int | np.integer)):
            raise AttrError(f"axis must be an int or None, found {self.axis!r}", "axis")


def _unique_rel(arg_types: list[Type], attrs: UniqueAttrs) -> object:
    """The unique values: ``(?)`` without ``axis``, else the input's shape with ``?`` at
    ``axis``; then, as asked, ``index`` ``(?)``, ``inverse`` (the input's size, or its
    dim at ``axis``) and ``counts`` ``(?)``, all int64. One output is a tensor, more a
    tuple."""
    args = tensor_args("unique", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    x = args[0]
    if attrs.axis is None:
        values = TensorType((ANY,), x.dtype)
        length = shape_prod(x.shape)
    else:
        if not x.shape:
            raise RelationError("unique: axis needs an input of rank 1 or more")
        axis = normalize_axis("unique", int(attrs.axis), len(x.shape))
        values = TensorType(tuple(ANY if i == axis else d for i, d in enumerate(x.shape)),
                            x.dtype)
        length = x.shape[axis]
    outs: list[Type] = [values]
    if attrs.return_index:
        outs.append(TensorType((ANY,), "int64"))
    if attrs.return_inverse:
        outs.append(TensorType((length,), "int64"))
    if attrs.return_counts:
        outs.append(TensorType((ANY,), "int64"))
    return outs[0] if len(outs) == 1 else TupleType(tuple(outs))


def _unique_ref(args: list, attrs: UniqueAttrs) -> object:
    x = np.asarray(args[0])
    axis = None if attrs.axis is None else int(attrs.axis) % max(x.ndim, 1)
    if axis is None:
        x = x.reshape(-1)
    values, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                               return_counts=True, axis=0 if axis is None
                                               else axis)
    inverse = inverse.reshape(-1)
    if not attrs.sorted:  # in order of first occurrence (ONNX Unique sorted=0)
        order = np.argsort(index, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values = np.take(values, order, axis=0 if axis is None else axis)
        index, counts, inverse = index[order], counts[order], rank[inverse]
    outs = [values.astype(x.dtype, copy=False)]
    if attrs.return_index:
        outs.append(index.astype(np.int64))
    if attrs.return_inverse:
        outs.append(inverse.astype(np.int64))
    if attrs.return_counts:
        outs.append(counts.astype(np.int64))
    return outs[0] if len(outs) == 1 else tuple(outs)


register_op("unique", attrs=UniqueAttrs, num_inputs=1, arg_names=("data",), support_level=10,
            relation=_unique_rel, reference=_unique_ref,
            doc="Relax's unique (ONNX Unique): the unique values (of the flattened input, "
                "or the unique slices along axis), sorted ascending or in order of first "
                "occurrence; optionally the index of each one's first occurrence, the "
                "inverse (each input element's or slice's position in the result) and "
                "the counts. Their length is known at run time only.")


# -- vision.all_class_non_max_suppression --------------------------------------------------

@dataclass(frozen=True, slots=True)
class AllClassNMSAttrs:
    """Only ONNX's output format (Relax's default): rows ``[batch, class, box]``."""

    output_format: str = "onnx"

    def __post_init__(self) -> None:
        if self.output_format != "onnx":
            raise AttrError(f"output_format must be 'onnx', found {self.output_format!r}",
                            "output_format")


_NMS_NAMES = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
              "score_threshold")


def _all_class_nms_rel(arg_types: list[Type], attrs: AllClassNMSAttrs) -> object:
    """boxes ``(B, N, 4)`` ([y1, x1, y2, x2], corners in either order), scores
    ``(B, C, N)`` of the same float dtype, an integer and two float scalars (or 1-element
    tensors); the result is ``(selected (?, 3) int64, (1,) int64 count)``."""
    op = "vision.all_class_non_max_suppression"
    args = tensor_args(op, arg_types, 5, _NMS_NAMES)
    if args is NOT_YET:
        return NOT_YET
    boxes, scores, limit, iou, score = args
    if len(boxes.shape) != 3 or not dims_compatible(boxes.shape[2], 4):
        raise RelationError(f"{op}: boxes must be (batch, boxes, 4), found {describe(boxes)}")
    if len(scores.shape) != 3:
        raise RelationError(f"{op}: scores must be (batch, classes, boxes), found "
                            f"{describe(scores)}")
    if not (dims_compatible(boxes.shape[0], scores.shape[0]) and
            dims_compatible(boxes.shape[1], scores.shape[2])):
        raise RelationError(f"{op}: boxes {describe(boxes)} and scores {describe(scores)} "
                            "disagree on the batch or the number of boxes")
    if not is_float(boxes.dtype) or boxes.dtype != scores.dtype:
        raise RelationError(f"{op}: boxes and scores must have one float dtype, found "
                            f"{boxes.dtype} and {scores.dtype}")
    if not limit.dtype.startswith(("int", "uint")) or not is_float(iou.dtype) or \
            not is_float(score.dtype):
        raise RelationError(f"{op}: max_output_boxes_per_class must be an integer, the "
                            "thresholds floats")
    for t, name in ((limit, _NMS_NAMES[2]), (iou, _NMS_NAMES[3]), (score, _NMS_NAMES[4])):
        if len(t.shape) > 1 or (t.shape and not dims_compatible(t.shape[0], 1)):
            raise RelationError(f"{op}: {name} must be a scalar or hold one value, found "
                                f"{describe(t)}")
    return TupleType((TensorType((ANY, 3), "int64"), TensorType((1,), "int64")))


def _iou_exceeds(a: np.ndarray, b: np.ndarray, threshold: object) -> bool:
    """ONNX's ``suppress_by_iou`` for corner boxes ``[y1, x1, y2, x2]``, in the boxes'
    own float type, the same comparisons in the same order."""
    ax0, ax1 = (a[1], a[3]) if a[1] < a[3] else (a[3], a[1])
    bx0, bx1 = (b[1], b[3]) if b[1] < b[3] else (b[3], b[1])
    ix0, ix1 = max(ax0, bx0), min(ax1, bx1)
    if ix1 <= ix0:
        return False
    ay0, ay1 = (a[0], a[2]) if a[0] < a[2] else (a[2], a[0])
    by0, by1 = (b[0], b[2]) if b[0] < b[2] else (b[2], b[0])
    iy0, iy1 = max(ay0, by0), min(ay1, by1)
    if iy1 <= iy0:
        return False
    inter = (ix1 - ix0) * (iy1 - iy0)
    if inter <= 0:
        return False
    area_a = (ax1 - ax0) * (ay1 - ay0)
    area_b = (bx1 - bx0) * (by1 - by0)
    union = area_a + area_b - inter
    if area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return bool(inter / union > threshold)


def _scalar(value: object, what: str) -> object:
    arr = np.asarray(value)
    if arr.size != 1:
        raise OpRuntimeError(f"vision.all_class_non_max_suppression: {what} must hold one "
                             f"value, found {arr.size}")
    return arr.reshape(())[()]


def _all_class_nms_ref(args: list, attrs: AllClassNMSAttrs) -> tuple[np.ndarray, np.ndarray]:
    """ONNX NonMaxSuppression (its reference implementation's order): per batch, per
    class, the boxes scoring above ``score_threshold`` by descending score (ties: lower
    box index first), each kept unless its IoU with a box kept before in this class is
    above ``iou_threshold``, at most ``max_output_boxes_per_class`` (negative: 0)."""
    boxes, scores = np.asarray(args[0]), np.asarray(args[1])
    limit = max(int(_scalar(args[2], "max_output_boxes_per_class")), 0)
    iou = _scalar(args[3], "iou_threshold")
    threshold = _scalar(args[4], "score_threshold")
    rows: list[tuple[int, int, int]] = []
    for b in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            candidates = [i for i in range(s.shape[0]) if s[i] > threshold]
            candidates.sort(key=lambda i: (-s[i], i))
            kept: list[int] = []
            for i in candidates:
                if len(kept) >= limit:
                    break
                if not any(_iou_exceeds(boxes[b, i], boxes[b, k], iou) for k in kept):
                    kept.append(i)
                    rows.append((b, c, i))
    out = np.array(rows, dtype=np.int64).reshape(len(rows), 3)
    return out, np.array([len(rows)], dtype=np.int64)


register_op("vision.all_class_non_max_suppression", attrs=AllClassNMSAttrs, num_inputs=5,
            arg_names=_NMS_NAMES, support_level=5, relation=_all_class_nms_rel,
            reference=_all_class_nms_ref,
            doc="Relax's all_class_non_max_suppression in ONNX format: greedy NMS per batch "
                "and class on corner boxes [y1, x1, y2, x2]; the selected rows [batch, "
                "class, box] (their number known at run time only) and that number.")


# -- test-generation hints for the ops above (relay_ref.testing.programs) ------------------
EXAMPLES: dict[str, Examples] = {
    "unique": Examples(attrs=({}, {"sorted": False, "return_counts": True},
                              {"return_index": True, "return_inverse": True, "axis": 0})),
    "vision.all_class_non_max_suppression": Examples(args=(
        (((1, 4, 4), "float32"), ((1, 2, 4), "float32"), ((1,), "int64"), ((1,), "float32"),
         ((1,), "float32")),
        (((2, 3, 4), "float32"), ((2, 1, 3), "float32"), ((), "int64"), ((), "float32"),
         ((), "float32")))),
}
