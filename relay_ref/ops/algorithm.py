"""Scan and sorting operators (TVM ``src/relay/op/algorithm/*.cc``, ``transform.cc`` for the
scans): cumsum, cumprod, sort, argsort, topk.

Sorting is stable: equal elements keep their input order, in descending order too (the
element with the lower index comes first, as TVM's CPU kernels and ONNX TopK do).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import dim_lt, shape_prod
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, register_op
from relay_ref.ops.relations import as_dtype, check_dtype, normalize_axis, tensor_args

Array = np.ndarray


# -- cumsum / cumprod ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ScanopAttrs:
    """``axis=None``: scan the flattened input. ``dtype=""``: the input's dtype (the input
    is cast to ``dtype`` before accumulating). ``exclusive``: element i excludes x[i]."""

    axis: int | None = None
    dtype: str = ""
    exclusive: bool | None = None

    def __post_init__(self) -> None:
        if self.dtype:
            check_dtype(self.dtype)


def _scan_rel(op: str) -> object:
    def rel(arg_types: list[Type], attrs: ScanopAttrs) -> object:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        dtype = attrs.dtype or data.dtype
        if attrs.axis is None:
            return TensorType((shape_prod(data.shape),), dtype)
        if data.ndim == 0:
            raise RelationError(f"{op}: axis {attrs.axis} is out of range for a scalar")
        normalize_axis(op, attrs.axis, data.ndim)
        return TensorType(data.shape, dtype)
    return rel


def _scan_ref(kind: str) -> object:
    def ref(args: list, attrs: ScanopAttrs) -> Array:
        x = np.asarray(args[0])
        dtype = np.dtype(attrs.dtype or x.dtype.name)
        x = x.astype(dtype, copy=False)
        if attrs.axis is None:
            x, axis = x.reshape(-1), 0
        else:
            axis = attrs.axis % x.ndim
        fn = np.cumsum if kind == "sum" else np.cumprod
        with np.errstate(all="ignore"):
            out = fn(x, axis=axis, dtype=dtype)
        if attrs.exclusive and x.shape[axis] > 0:
            ident = np.full_like(np.take(out, [0], axis=axis), 0 if kind == "sum" else 1)
            out = np.concatenate([ident, np.delete(out, -1, axis=axis)], axis=axis)
        return as_dtype(out, dtype)
    return ref


register_op("cumsum", attrs=ScanopAttrs, num_inputs=1, arg_names=("data",), support_level=3,
            relation=_scan_rel("cumsum"), reference=_scan_ref("sum"),
            doc="Cumulative sum along ``axis`` (flattened when None); ``exclusive`` shifts "
                "by one, starting at 0. Integers wrap.")
register_op("cumprod", attrs=ScanopAttrs, num_inputs=1, arg_names=("data",),
            support_level=3, relation=_scan_rel("cumprod"), reference=_scan_ref("prod"),
            doc="Cumulative product along ``axis`` (flattened when None); ``exclusive`` "
                "shifts by one, starting at 1. Integers wrap.")


# -- sort / argsort -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ArgsortAttrs:
    axis: int = -1
    is_ascend: bool = True
    dtype: str = "int32"

    def __post_init__(self) -> None:
        check_dtype(self.dtype)
        if self.dtype == "bool":
            raise AttrError("dtype of the indices must be numeric, found 'bool'", "dtype")


def _stable_argsort(x: Array, axis: int, ascend: bool) -> Array:
    if ascend:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    rev = np.flip(x, axis=axis)
    return (n - 1) - np.flip(np.argsort(rev, axis=axis, kind="stable"), axis=axis)


def _sort_rel(op: str, indices: bool) -> object:
    def rel(arg_types: list[Type], attrs: ArgsortAttrs) -> object:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        if data.ndim == 0:
            raise RelationError(f"{op}: data must have rank >= 1, found a scalar")
        normalize_axis(op, attrs.axis, data.ndim)
        return TensorType(data.shape, attrs.dtype if indices else data.dtype)
    return rel


def _sort_ref(args: list, attrs: ArgsortAttrs) -> Array:
    x = np.asarray(args[0])
    axis = attrs.axis % x.ndim
    idx = _stable_argsort(x, axis, attrs.is_ascend)
    return as_dtype(np.take_along_axis(x, idx, axis=axis), x.dtype)


def _argsort_ref(args: list, attrs: ArgsortAttrs) -> Array:
    x = np.asarray(args[0])
    return as_dtype(_stable_argsort(x, attrs.axis % x.ndim, attrs.is_ascend), attrs.dtype)


register_op("sort", attrs=ArgsortAttrs, num_inputs=1, arg_names=("data",), support_level=6,
            relation=_sort_rel("sort", False), reference=_sort_ref,
            doc="Sort along ``axis`` (ascending unless ``is_ascend=False``); stable.")
register_op("argsort", attrs=ArgsortAttrs, num_inputs=1, arg_names=("data",),
            support_level=6, relation=_sort_rel("argsort", True), reference=_argsort_ref,
            doc="Indices (of type ``dtype``) that sort ``data`` along ``axis``; stable, so "
                "equal elements keep their input order.")


# -- topk -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TopKAttrs:
    """``k < 1`` (or None) takes every element along ``axis``; ``k`` larger than the axis
    is a type error."""

    k: int | None = None
    axis: int = -1
    ret_type: str = "both"
    is_ascend: bool = False
    dtype: str = "int32"

    def __post_init__(self) -> None:
        if self.ret_type not in ("both", "values", "indices"):
            raise AttrError(f"ret_type must be 'both', 'values' or 'indices', found "
                            f"{self.ret_type!r}", "ret_type")
        check_dtype(self.dtype)
        if self.dtype == "bool":
            raise AttrError("dtype of the indices must be numeric, found 'bool'", "dtype")


def _topk_rel(arg_types: list[Type], attrs: TopKAttrs) -> object:
    op = "topk"
    args = tensor_args(op, arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    if data.ndim == 0:
        raise RelationError(f"{op}: data must have rank >= 1, found a scalar")
    axis = normalize_axis(op, attrs.axis, data.ndim)
    k = attrs.k
    shape = list(data.shape)
    if k is not None and k >= 1:
        n = shape[axis]
        if dim_lt(n, k) is True:
            raise RelationError(f"{op}: k={k} is larger than axis {attrs.axis} "
                                f"(length {n})")
        shape[axis] = k
    values = TensorType(tuple(shape), data.dtype)
    indices = TensorType(tuple(shape), attrs.dtype)
    if attrs.ret_type == "values":
        return values
    if attrs.ret_type == "indices":
        return indices
    return TupleType((values, indices))


def _topk_ref(args: list, attrs: TopKAttrs) -> object:
    x = np.asarray(args[0])
    axis = attrs.axis % x.ndim
    idx = _stable_argsort(x, axis, attrs.is_ascend)
    if attrs.k is not None and attrs.k >= 1:
        idx = np.take(idx, np.arange(attrs.k), axis=axis)
    values = as_dtype(np.take_along_axis(x, idx, axis=axis), x.dtype)
    indices = as_dtype(idx, attrs.dtype)
    if attrs.ret_type == "values":
        return values
    if attrs.ret_type == "indices":
        return indices
    return (values, indices)


register_op("topk", attrs=TopKAttrs, num_inputs=1, arg_names=("data",), support_level=6,
            relation=_topk_rel, reference=_topk_ref,
            doc="The ``k`` largest (``is_ascend``: smallest) elements along ``axis``, in "
                "order, and their indices; ``ret_type`` ``both`` returns the tuple "
                "(values, indices). Ties: the lower index first.")
