"""Scatter operators (TVM ``src/relay/op/tensor/transform.cc``): ``scatter_elements`` and
``scatter_nd``, the inverses of ``gather`` and ``gather_nd``.

Both return a copy of ``data`` into which ``updates`` are written at positions given by
``indices``, combined with what is there by the reduction (``update`` replaces; ``add``,
``mul``, ``min``, ``max`` fold; TVM's ``mean`` is not provided). Updates are applied in
row-major order of ``indices``, so with ``update`` and a repeated index the last one wins
(ONNX's reference; TVM leaves it undefined). Negative indices count from the end; an index
out of range is a run-time error (``OpRuntimeError``). Both are opaque to fusion, as in
TVM (extern schedules).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import dim_lt, dims_compatible, shape_text
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.registry import NOT_YET, AttrError, OpRuntimeError, RelationError, register_op
from relay_ref.ops.relations import is_int, normalize_axis, tensor_args

Array = np.ndarray

_FOLDS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _check_updates(op: str, data: TensorType, indices: TensorType,
                   updates: TensorType) -> None:
    if not is_int(indices.dtype):
        raise RelationError(f"{op}: indices must have an integer dtype, found {indices.dtype}")
    if updates.dtype != data.dtype:
        raise RelationError(f"{op}: updates must have data's dtype {data.dtype}, found "
                            f"{updates.dtype}")


def _in_range(op: str, idx: Array, n: int, axis: int) -> Array:
    """``idx`` (int64) with negatives counted from the end; raises when out of range."""
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise OpRuntimeError(f"{op}: index out of range [-{n}, {n}) on axis {axis}")
    return np.where(idx < 0, idx + n, idx)


def _apply(out: Array, where: tuple, values: Array, reduction: str) -> None:
    """Write ``values`` at ``where`` (parallel index arrays, one entry per update, in
    order) into ``out`` in place."""
    if reduction == "update":
        for k in range(values.shape[0]):  # in order: the last of repeated indices wins
            out[tuple(w[k] for w in where)] = values[k]
    else:
        _FOLDS[reduction].at(out, where, values)


# -- scatter_elements ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ScatterElementsAttrs:
    """``axis``: the axis ``indices`` index; ``reduction``: how an update combines with
    the element it lands on (``update``, ``add``, ``mul``, ``min``, ``max``)."""

    axis: int = 0
    reduction: str = "update"

    def __post_init__(self) -> None:
        if self.reduction not in ("update", "add", "mul", "min", "max"):
            raise AttrError("reduction must be one of update, add, mul, min, max, "
                            f"found {self.reduction!r}", "reduction")


def _scatter_elements_rel(arg_types: list[Type], attrs: ScatterElementsAttrs) -> object:
    op = "scatter_elements"
    args = tensor_args(op, arg_types, 3, ("data", "indices", "updates"))
    if args is NOT_YET:
        return NOT_YET
    data, indices, updates = args
    _check_updates(op, data, indices, updates)
    if indices.ndim != data.ndim:
        raise RelationError(f"{op}: indices must have data's rank {data.ndim}, found "
                            f"{shape_text(indices.shape)}")
    if len(updates.shape) != len(indices.shape) or not all(
            dims_compatible(a, b) for a, b in zip(updates.shape, indices.shape, strict=True)):
        raise RelationError(f"{op}: updates {shape_text(updates.shape)} must have indices' "
                            f"shape {shape_text(indices.shape)}")
    normalize_axis(op, attrs.axis, data.ndim)
    for k, (i, d) in enumerate(zip(indices.shape, data.shape, strict=True)):
        if dim_lt(d, i) is True and (k != attrs.axis % data.ndim):
            raise RelationError(f"{op}: indices {shape_text(indices.shape)} exceed data "
                                f"{shape_text(data.shape)} on axis {k}")
    return TensorType(data.shape, data.dtype)


def _scatter_elements_ref(args: list, attrs: ScatterElementsAttrs) -> Array:
    op = "scatter_elements"
    data, indices, updates = (np.asarray(a) for a in args)
    axis = normalize_axis(op, attrs.axis, data.ndim)
    if updates.shape != indices.shape or any(
            i > d for k, (i, d) in enumerate(zip(indices.shape, data.shape, strict=True))
            if k != axis):
        raise OpRuntimeError(f"{op}: indices {indices.shape} and updates {updates.shape} "
                             f"do not fit data {data.shape}")
    idx = _in_range(op, indices.astype(np.int64), data.shape[axis], axis)
    where = list(np.indices(indices.shape).reshape(indices.ndim, -1))
    where[axis] = idx.reshape(-1)
    values = updates.reshape(-1)
    out = np.array(data, copy=True)
    _apply(out, tuple(where), values, attrs.reduction)
    return out


register_op("scatter_elements", attrs=ScatterElementsAttrs, num_inputs=3,
            arg_names=("data", "indices", "updates"), support_level=3,
            relation=_scatter_elements_rel, reference=_scatter_elements_ref,
            doc="A copy of ``data`` with ``out[..., indices[i, j, k], ...] = updates[i, j, "
                "k]`` (``indices`` along ``axis``; ONNX ScatterElements), combined by "
                "``reduction``.")


# -- scatter_nd ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ScatterNDAttrs:
    """``mode``: how an update combines with what it lands on (``update``, ``add``,
    ``mul``, ``min``, ``max``)."""

    mode: str = "update"

    def __post_init__(self) -> None:
        if self.mode not in ("update", "add", "mul", "min", "max"):
            raise AttrError(f"mode must be one of update, add, mul, min, max, found "
                            f"{self.mode!r}", "mode")


def _scatter_nd_rel(arg_types: list[Type], attrs: ScatterNDAttrs) -> object:
    """TVM's ``ScatterNDRel``: data (X_0, ..., X_{N-1}), indices (M, Y_0, ..., Y_{K-1}),
    updates (Y_0, ..., Y_{K-1}, X_M, ..., X_{N-1}); the result has data's type."""
    op = "scatter_nd"
    args = tensor_args(op, arg_types, 3, ("data", "indices", "updates"))
    if args is NOT_YET:
        return NOT_YET
    data, indices, updates = args
    _check_updates(op, data, indices, updates)
    if indices.ndim < 1 or not isinstance(indices.shape[0], int):
        raise RelationError(f"{op}: indices need a static first axis (the coordinates), "
                            f"found {shape_text(indices.shape)}")
    m = int(indices.shape[0])
    if m > data.ndim:
        raise RelationError(f"{op}: {m} coordinates exceed data's rank {data.ndim}")
    want = tuple(indices.shape[1:]) + tuple(data.shape[m:])
    if len(updates.shape) != len(want) or not all(
            dims_compatible(a, b) for a, b in zip(updates.shape, want, strict=True)):
        raise RelationError(f"{op}: updates must have shape {shape_text(want)} (indices' "
                            f"{shape_text(indices.shape[1:])} then data's "
                            f"{shape_text(data.shape[m:])}), found "
                            f"{shape_text(updates.shape)}")
    return TensorType(data.shape, data.dtype)


def _scatter_nd_ref(args: list, attrs: ScatterNDAttrs) -> Array:
    op = "scatter_nd"
    data, indices, updates = (np.asarray(a) for a in args)
    m = indices.shape[0]
    rest = indices.shape[1:]
    if updates.shape != rest + data.shape[m:]:
        raise OpRuntimeError(f"{op}: updates {updates.shape} do not fit indices "
                             f"{indices.shape} and data {data.shape}")
    coords = indices.astype(np.int64).reshape(m, -1)
    where = tuple(_in_range(op, coords[i], data.shape[i], i) for i in range(m))
    values = updates.reshape((-1,) + data.shape[m:])
    out = np.array(data, copy=True)
    _apply(out, where, values, attrs.mode)
    return out


register_op("scatter_nd", attrs=ScatterNDAttrs, num_inputs=3,
            arg_names=("data", "indices", "updates"), support_level=3,
            relation=_scatter_nd_rel, reference=_scatter_nd_ref,
            doc="A copy of ``data`` with ``out[indices[0, y], ..., indices[M-1, y], ...] = "
                "updates[y, ...]`` (indices' first axis holds the M coordinates, as "
                "gather_nd's), combined by ``mode``.")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

EXAMPLES["scatter_elements"] = Examples(
    attrs=({"axis": 1}, {"axis": 0, "reduction": "add"},
           {"axis": -1, "reduction": "max"}),
    args=((((2, 3), "float32"), ((2, 2), "int32"), ((2, 2), "float32")),
          (((3, 2), "int32"), ((2, 2), "int64"), ((2, 2), "int32"))))
EXAMPLES["scatter_nd"] = Examples(
    attrs=({"mode": "add"}, {"mode": "mul"}),
    args=((((3, 2), "float32"), ((1, 2), "int32"), ((2, 2), "float32")),
          (((2, 3), "int32"), ((2, 4), "int64"), ((4,), "int32"))))
