"""Reductions (TVM ``src/relay/op/tensor/reduce.cc``): sum, mean, max, min, prod, all, any,
argmax, argmin, variance.

Invariants shared by every reduction:

* ``axis=None`` reduces every axis; ``axis=()`` reduces none; negative axes count from the
  end; ``exclude=True`` reduces exactly the axes *not* listed.
* ``keepdims=True`` keeps each reduced axis as a dimension of size 1.
* The result keeps the input dtype (``argmax``/``argmin``: int32). ``mean`` of integers sums
  in the input dtype and truncates the division, as TVM's ``sum(x) / count`` does.
* Reducing an empty extent with ``max``/``min``/``argmax``/``argmin`` is a run-time error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import dims_compatible, is_any, shape_text
from relay_ref.ir.types import ANY, TensorType, Type
from relay_ref.ops.registry import NOT_YET, OpRuntimeError, RelationError, register_op
from relay_ref.ops.relations import (
    as_dtype,
    broadcast_shapes,
    is_float,
    is_int,
    output_is_input,
    reduce_axes,
    tensor_args,
)
from relay_ref.ops.transform import InitOpAttrs

Array = np.ndarray


@dataclass(frozen=True, slots=True)
class ReduceAttrs:
    """``axis``: the axes to reduce (None = all); ``keepdims``; ``exclude``."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    exclude: bool = False


@dataclass(frozen=True, slots=True)
class ArgReduceAttrs:
    """As ``ReduceAttrs``; ``select_last_index`` picks the last of tied extremes."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    select_last_index: bool = False
    exclude: bool = False


@dataclass(frozen=True, slots=True)
class VarianceAttrs:
    """As ``ReduceAttrs``; ``unbiased`` divides by ``count - 1``."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    exclude: bool = False
    unbiased: bool = False


def _out_shape(shape: tuple, axes: list[int], keepdims: bool) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_rel(op: str, out_dtype: str | None = None, num_inputs: int = 1
                ) -> Callable[[list[Type], object], object]:
    def rel(arg_types: list[Type], attrs: ReduceAttrs) -> object:
        names = ("data", "mean")[:num_inputs]
        args = tensor_args(op, arg_types, num_inputs, names)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        if num_inputs == 2:
            mean = args[1]
            if mean.dtype != data.dtype:
                raise RelationError(f"{op}: dtypes differ: {data.dtype} (data) vs "
                                    f"{mean.dtype} (mean)")
            both = broadcast_shapes(op, data.shape, mean.shape)
            if len(both) != data.ndim or any(
                    not dims_compatible(d, b)
                    for d, b in zip(data.shape, both, strict=True)):
                raise RelationError(f"{op}: mean of shape {shape_text(mean.shape)} does "
                                    f"not broadcast to data's shape {shape_text(data.shape)}")
        axes = reduce_axes(op, data.ndim, attrs.axis, attrs.exclude)
        return TensorType(_out_shape(data.shape, axes, attrs.keepdims),
                          out_dtype or data.dtype)
    return rel


def _axes(x: Array, attrs: ReduceAttrs, op: str) -> tuple[int, ...]:
    try:
        return tuple(reduce_axes(op, x.ndim, attrs.axis, attrs.exclude))
    except RelationError as err:
        raise OpRuntimeError(str(err)) from None


def _count(x: Array, axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


def _simple_ref(op: str, fn: Callable[..., object]) -> Callable[[list, ReduceAttrs], Array]:
    def ref(args: list, attrs: ReduceAttrs) -> Array:
        x = np.asarray(args[0])
        axes = _axes(x, attrs, op)
        if op in ("max", "min") and any(x.shape[a] == 0 for a in axes):
            raise OpRuntimeError(f"{op}: cannot reduce an empty extent")
        with np.errstate(all="ignore"):
            out = fn(x, axes, attrs.keepdims)
        return as_dtype(out, x.dtype)
    return ref


def _sum(x: Array, axes: tuple[int, ...], keep: bool) -> object:
    return np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype)


def _prod(x: Array, axes: tuple[int, ...], keep: bool) -> object:
    return np.prod(x, axis=axes, keepdims=keep, dtype=x.dtype)


def _max(x: Array, axes: tuple[int, ...], keep: bool) -> object:
    return np.max(x, axis=axes, keepdims=keep)


def _min(x: Array, axes: tuple[int, ...], keep: bool) -> object:
    return np.min(x, axis=axes, keepdims=keep)


def _all(x: Array, axes: tuple[int, ...], keep: bool) -> object:
    return np.all(x, axis=axes, keepdims=keep)


def _any(x: Array, axes: tuple[int, ...], keep: bool) -> object:
    return np.any(x, axis=axes, keepdims=keep)


def _mean(x: Array, axes: tuple[int, ...], keep: bool) -> object:
    total = np.asarray(np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype))
    count = _count(x, axes)
    if is_float(x.dtype.name):
        return total / x.dtype.type(count)
    if count == 0:
        raise OpRuntimeError("mean: integer division by zero (empty reduction)")
    c = np.asarray(count).astype(x.dtype)
    return np.floor_divide(total - np.fmod(total, c), c)  # truncating division


_SIMPLE = {
    "sum": (_sum, "Sum over ``axis``."),
    "mean": (_mean, "Arithmetic mean over ``axis`` (integers: truncated ``sum / count``)."),
    "max": (_max, "Maximum over ``axis``."),
    "min": (_min, "Minimum over ``axis``."),
    "prod": (_prod, "Product over ``axis``."),
    "all": (_all, "Logical and over ``axis``."),
    "any": (_any, "Logical or over ``axis``."),
}

_ATTRS_DOC = ("Attributes: axis (None = all), keepdims [False], exclude [False].\n"
              "Type relation: reduce (drop or keep the reduced axes; dtype unchanged).")

for _name, (_fn, _doc) in _SIMPLE.items():
    register_op(_name, attrs=ReduceAttrs, num_inputs=1, arg_names=("data",),
                support_level=4, relation=_reduce_rel(_name),
                reference=_simple_ref(_name, _fn), doc=f"{_doc}\n\n{_ATTRS_DOC}")


# -- argmax / argmin ---------------------------------------------------------------

def _arg_ref(op: str) -> Callable[[list, ArgReduceAttrs], Array]:
    pick = np.argmax if op == "argmax" else np.argmin

    def ref(args: list, attrs: ArgReduceAttrs) -> Array:
        x = np.asarray(args[0])
        axes = _axes(x, attrs, op)
        if any(x.shape[a] == 0 for a in axes):
            raise OpRuntimeError(f"{op}: cannot reduce an empty extent")
        kept = [i for i in range(x.ndim) if i not in axes]
        # move the reduced axes last and flatten them: the index is row-major over them
        moved = np.transpose(x, kept + list(axes))
        flat = moved.reshape(tuple(x.shape[i] for i in kept) + (-1,))
        if attrs.select_last_index:
            idx = flat.shape[-1] - 1 - pick(flat[..., ::-1], axis=-1)
        else:
            idx = pick(flat, axis=-1)
        if attrs.keepdims:
            idx = np.reshape(idx, _out_shape(x.shape, list(axes), True))
        return as_dtype(idx, "int32")
    return ref


for _name in ("argmax", "argmin"):
    _what = "largest" if _name == "argmax" else "smallest"
    register_op(_name, attrs=ArgReduceAttrs, num_inputs=1, arg_names=("data",),
                support_level=4, relation=_reduce_rel(_name, "int32"),
                reference=_arg_ref(_name),
                doc=f"Index (int32) of the {_what} element over ``axis`` (first one on ties "
                    "unless ``select_last_index``; over several axes, the row-major index "
                    "within them).\n\nAttributes: axis, keepdims, select_last_index, "
                    "exclude.\nType relation: reduce with int32 output.")


# -- variance ----------------------------------------------------------------------

def _variance_ref(args: list, attrs: VarianceAttrs) -> Array:
    x, mean = np.asarray(args[0]), np.asarray(args[1])
    axes = _axes(x, attrs, "variance")
    count = _count(x, axes) - (1 if attrs.unbiased else 0)
    with np.errstate(all="ignore"):
        diff = x - mean
        total = np.sum(diff * diff, axis=axes, keepdims=attrs.keepdims, dtype=x.dtype)
        if is_float(x.dtype.name):
            out = total / x.dtype.type(count)
        else:
            if count == 0:
                raise OpRuntimeError("variance: integer division by zero")
            c = np.asarray(count).astype(x.dtype)
            out = np.floor_divide(total - np.fmod(total, c), c)
    return as_dtype(out, x.dtype)


register_op("variance", attrs=VarianceAttrs, num_inputs=2, arg_names=("data", "mean"),
            support_level=4, relation=_reduce_rel("variance", num_inputs=2),
            reference=_variance_ref,
            doc="Variance over ``axis`` given the mean (usually ``mean(data, axis, "
                "keepdims=True)``): ``sum((data - mean)^2) / (count - unbiased)``.\n\n"
                "Attributes: axis, keepdims, exclude, unbiased [False].\n"
                "Type relation: reduce (mean must broadcast against data).")


# -- collapse_sum_like / collapse_sum_to ---------------------------------------------------

def _collapse_check(op: str, data: TensorType, target: tuple, dtype: str) -> None:
    """``broadcast(data, target)`` must be ``data``'s shape: target has no more axes, and
    each of its dimensions is 1 or the data's (TVM's ``BroadcastRel(data, target) = data``).
    """
    if dtype != data.dtype:
        raise RelationError(f"{op}: dtypes differ: {data.dtype} (data) vs {dtype}")
    if len(target) > data.ndim:
        raise RelationError(f"{op}: cannot collapse {shape_text(data.shape)} to the larger "
                            f"rank of {shape_text(target)}")
    out = broadcast_shapes(op, data.shape, target)
    for d, o in zip(data.shape, out, strict=True):
        if not (is_any(d) or is_any(o)) and not dims_compatible(d, o):
            raise RelationError(f"{op}: {shape_text(data.shape)} does not broadcast from "
                                f"{shape_text(target)}")


def _collapse_sum_like_rel(arg_types: list[Type], attrs: object) -> object:
    op = "collapse_sum_like"
    args = tensor_args(op, arg_types, 2, ("data", "collapse_type"))
    if args is NOT_YET:
        return NOT_YET
    data, like = args
    _collapse_check(op, data, like.shape, like.dtype)
    return TensorType(like.shape, like.dtype)


def collapse_sum(x: Array, target: tuple[int, ...]) -> Array:
    """Sum ``x`` down to ``target`` (the inverse of broadcasting ``target`` to ``x``): sum
    the leading extra axes and every axis where ``target`` is 1 (keeping it)."""
    lead = x.ndim - len(target)
    if lead < 0 or any(t not in (1, n) for t, n in zip(target, x.shape[lead:], strict=True)):
        raise OpRuntimeError(f"collapse_sum: cannot collapse shape {x.shape} to {target}")
    out = np.sum(x, axis=tuple(range(lead)), dtype=x.dtype) if lead else x
    ones = tuple(i for i, t in enumerate(target) if t == 1 and out.shape[i] != 1)
    if ones:
        out = np.sum(out, axis=ones, keepdims=True, dtype=x.dtype)
    return as_dtype(np.array(out, copy=True), x.dtype)


register_op("collapse_sum_like", num_inputs=2, arg_names=("data", "collapse_type"),
            support_level=10, relation=_collapse_sum_like_rel,
            # TVM's CollapseSumLikeRel assigns collapse_type's type to the result
            predicate=output_is_input(_collapse_sum_like_rel, 1),
            relation_name="CollapseSumLike",
            reference=lambda args, attrs: collapse_sum(np.asarray(args[0]),
                                                       np.shape(args[1])),
            doc="Sum ``data`` down to the shape of ``collapse_type`` (the gradient of "
                "broadcasting): leading extra axes and axes where ``collapse_type`` has 1 are "
                "summed. Requires broadcast(data, collapse_type) = data.")


def _collapse_sum_to_rel(arg_types: list[Type], attrs: InitOpAttrs) -> object:
    op = "collapse_sum_to"
    args = tensor_args(op, arg_types, 2, ("data", "shape"))
    if args is NOT_YET:
        return NOT_YET
    data, shape = args
    if shape.ndim != 1 or not is_int(shape.dtype):
        raise RelationError(f"{op}: shape must be a 1-d integer tensor, found "
                            f"{shape.dtype}{shape_text(shape.shape)}")
    if not isinstance(shape.shape[0], int):  # ? or a shape expression
        raise RelationError(f"{op}: the shape argument must have a static length")
    rank = shape.shape[0]
    if attrs.shape is not None and len(attrs.shape) != rank:
        raise RelationError(f"{op}: the shape attribute {tuple(attrs.shape)} does not have "
                            f"the shape argument's {rank} values")
    target = tuple(attrs.shape) if attrs.shape is not None else (ANY,) * rank
    _collapse_check(op, data, target, data.dtype)
    return TensorType(target, data.dtype)


def _collapse_sum_to_ref(args: list, attrs: InitOpAttrs) -> Array:
    target = tuple(int(v) for v in np.asarray(args[1]).reshape(-1))
    if attrs.shape is not None and target != tuple(attrs.shape):
        raise OpRuntimeError(f"collapse_sum_to: the shape argument {target} differs from the "
                             f"shape attribute {tuple(attrs.shape)}")
    return collapse_sum(np.asarray(args[0]), target)


register_op("collapse_sum_to", attrs=InitOpAttrs, num_inputs=2, arg_names=("data", "shape"),
            support_level=4, relation=_collapse_sum_to_rel, reference=_collapse_sum_to_ref,
            doc="Sum ``data`` down to the target ``shape`` (a 1-d integer tensor; TVM also "
                "records a constant one in the ``shape`` attribute, which then gives the "
                "static result type, else every dimension is ``?``).")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

_REDUCE_EXAMPLES = ({"axis": (1,)}, {"axis": (0,), "keepdims": True},
                    {"axis": (-1,), "keepdims": True}, {"axis": (1,), "exclude": True},
                    {"axis": (0, 2), "keepdims": True}, {"keepdims": True})
for _name in (*_SIMPLE, "argmax", "argmin"):
    EXAMPLES[_name] = Examples(attrs=_REDUCE_EXAMPLES)
EXAMPLES["variance"] = Examples(attrs=_REDUCE_EXAMPLES, args=(((2, 3), (2, 1)), ((3,), (1,))))


# -- values that matter (the ``values`` aspect, attached by ``relay_ref.ops``) ---------------

from relay_ref.ops.registry import Values  # noqa: E402

#: this family's ``values`` aspect: reductions over an empty axis list, size-1 axes, all
#: axes excluded, and empty (zero-extent) inputs; ties (argmax/argmin), inf/nan, overflow
VALUES: dict[str, Values] = {}
for _name in ("sum", "mean", "max", "min", "prod", "all", "any", "argmax", "argmin",
              "variance"):
    VALUES[_name] = Values(
        floats=(0.0, -0.0, 1.0, -1.0, float("inf"), -float("inf"), float("nan"), 3e38),
        ints=(2**31 - 1, -(2**31), 0, -1),
        attrs=({"axis": ()}, {"axis": (1,)}, {"axis": (1,), "keepdims": True},
               {"axis": (0,), "exclude": True}, {"axis": (-1,), "keepdims": True}),
        args=(((0, 3),), ((2, 1, 3),), (((2, 1, 3), "bool"),), (((0, 3), "bool"),), ((1,),)))
