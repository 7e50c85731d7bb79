"""More transform operators (TVM ``src/relay/op/tensor/transform.cc``): gather_nd and
layout_transform (plain axis permutations only; blocked layouts such as ``NCHW4c`` are
rejected by the relation)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.registry import NOT_YET, AttrError, OpRuntimeError, RelationError, register_op
from relay_ref.ops.relations import (
    dims_compatible,
    is_any,
    is_int,
    shape_text,
    tensor_args,
)

Array = np.ndarray


# -- gather_nd -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class GatherNDAttrs:
    """``indices`` has shape (M, B..., Y...): its first axis holds the M coordinates.
    ``index_rank``: M, needed when indices' first dimension is ``?``."""

    batch_dims: int = 0
    index_rank: int | None = None

    def __post_init__(self) -> None:
        if self.batch_dims < 0:
            raise AttrError(f"batch_dims must be >= 0, found {self.batch_dims}",
                            "batch_dims")
        if self.index_rank is not None and self.index_rank < 0:
            raise AttrError(f"index_rank must be >= 0, found {self.index_rank}",
                            "index_rank")


def _gather_nd_rel(arg_types: list[Type], attrs: GatherNDAttrs) -> object:
    op = "gather_nd"
    args = tensor_args(op, arg_types, 2, ("data", "indices"))
    if args is NOT_YET:
        return NOT_YET
    data, indices = args
    if not is_int(indices.dtype):
        raise RelationError(f"{op}: indices must have an integer dtype, found "
                            f"{indices.dtype}")
    if indices.ndim < 1:
        raise RelationError(f"{op}: indices must have rank >= 1, found a scalar")
    m = indices.shape[0]
    if attrs.index_rank is not None:
        if not dims_compatible(m, attrs.index_rank):
            raise RelationError(f"{op}: index_rank={attrs.index_rank} but indices' first "
                                f"dimension is {m}")
        m = attrs.index_rank
    if is_any(m):
        raise RelationError(f"{op}: indices' first dimension is unknown; give index_rank")
    b = attrs.batch_dims
    if m + b > data.ndim:
        raise RelationError(f"{op}: {m} coordinates plus batch_dims={b} exceed data's rank "
                            f"{data.ndim}")
    if indices.ndim - 1 < b:
        raise RelationError(f"{op}: indices {shape_text(indices.shape)} have fewer than "
                            f"batch_dims={b} batch axes")
    for j in range(b):
        if not dims_compatible(indices.shape[1 + j], data.shape[j]):
            raise RelationError(f"{op}: batch axis {j} differs: data {data.shape[j]} vs "
                                f"indices {indices.shape[1 + j]}")
    return TensorType(tuple(indices.shape[1:]) + tuple(data.shape[m + b:]), data.dtype)


def _gather_nd_ref(args: list, attrs: GatherNDAttrs) -> Array:
    data, ind = np.asarray(args[0]), np.asarray(args[1]).astype(np.int64)
    m, b = ind.shape[0], attrs.batch_dims
    rest = ind.shape[1:]
    keys: list[Array] = []
    for j in range(b):
        shape = [1] * len(rest)
        shape[j] = data.shape[j]
        keys.append(np.arange(data.shape[j]).reshape(shape))
    for i in range(m):
        d = data.shape[b + i]
        if ind[i].size and (ind[i].min() < -d or ind[i].max() >= d):
            raise OpRuntimeError(f"gather_nd: index out of range for axis {b + i} "
                                 f"(size {d})")
        keys.append(ind[i])
    if not keys:
        return np.broadcast_to(data, rest + data.shape).copy()
    return np.array(data[tuple(keys)], dtype=data.dtype)


register_op("gather_nd", attrs=GatherNDAttrs, num_inputs=2, arg_names=("data", "indices"),
            support_level=3, relation=_gather_nd_rel, reference=_gather_nd_ref,
            doc="out[b..., y...] = data[b..., indices[0, b..., y...], ..., "
                "indices[M-1, b..., y...], ...]; output shape indices.shape[1:] + "
                "data.shape[M + batch_dims:]. Negative indices count from the end.")


# -- layout_transform ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class LayoutTransformAttrs:
    src_layout: str = ""
    dst_layout: str = ""


def _layout_perm(op: str, src: str, dst: str) -> list[int]:
    for name, lay in (("src_layout", src), ("dst_layout", dst)):
        if not lay or not all("A" <= ch <= "Z" for ch in lay):
            raise RelationError(f"{op}: only plain layouts (upper-case axis letters) are "
                                f"supported, found {name}={lay!r}")
        if len(set(lay)) != len(lay):
            raise RelationError(f"{op}: {name}={lay!r} repeats an axis")
    if sorted(src) != sorted(dst):
        raise RelationError(f"{op}: {dst!r} is not a permutation of {src!r}")
    return [src.index(ch) for ch in dst]


def _layout_transform_rel(arg_types: list[Type], attrs: LayoutTransformAttrs) -> object:
    op = "layout_transform"
    args = tensor_args(op, arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    perm = _layout_perm(op, attrs.src_layout, attrs.dst_layout)
    if data.ndim != len(perm):
        raise RelationError(f"{op}: data {shape_text(data.shape)} has rank {data.ndim}, "
                            f"src_layout {attrs.src_layout!r} has {len(perm)} axes")
    return TensorType(tuple(data.shape[i] for i in perm), data.dtype)


def _layout_transform_ref(args: list, attrs: LayoutTransformAttrs) -> Array:
    x = np.asarray(args[0])
    perm = _layout_perm("layout_transform", attrs.src_layout, attrs.dst_layout)
    return np.transpose(x, perm).copy()


register_op("layout_transform", attrs=LayoutTransformAttrs, num_inputs=1,
            arg_names=("data",), support_level=5, relation=_layout_transform_rel,
            reference=_layout_transform_ref,
            doc="Permute axes from ``src_layout`` to ``dst_layout`` (e.g. NCHW -> NHWC). "
                "Blocked layouts (NCHW4c, ...) are not supported and fail to type-check.")
