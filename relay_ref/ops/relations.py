"""Shared pieces of type relations and references (TVM's ``op/type_relations.cc`` and friends).

Every helper here either returns a value, returns ``NOT_YET``, or raises ``RelationError``
with a plain-words message that starts with the operator's name. Nothing else escapes:
relations are called by the solver on arbitrary (possibly nonsensical) argument types.

Dimensions and their arithmetic (``Dim``, ``dim_map``, ``broadcast_dim``, ``?``) are
``relay_ref.ir.shape``'s, shared with unification.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relay_ref.ir.shape import DimMismatch, Shape, is_any, is_static, shape_text
from relay_ref.ir.shape import broadcast_shapes as shape_broadcast
from relay_ref.ir.types import IncompleteType, TensorType, TupleType, Type, has_hole
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, Solved

#: dtypes the references can compute with (NumPy names; TVM spells them the same way).
DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
)


# -- dtypes -----------------------------------------------------------------------------

def is_float(dtype: str) -> bool:
    return dtype.startswith("float")


def is_int(dtype: str) -> bool:
    """Signed or unsigned integer (not bool)."""
    return dtype.startswith("int") or dtype.startswith("uint")


def check_dtype(dtype: str, what: str = "dtype") -> str:
    """Validate a dtype attribute (raises ``AttrError``)."""
    if dtype not in DTYPES:
        raise AttrError(f"unsupported {what} {dtype!r} (supported: {', '.join(DTYPES)})",
                        what)
    return dtype


# -- holes and argument checking ---------------------------------------------------------

def check_arity(op: str, arg_types: Sequence[Type], n: int) -> None:
    if len(arg_types) != n:
        raise RelationError(f"{op}: expected {n} argument{'s' if n != 1 else ''}, "
                            f"found {len(arg_types)}")


def describe(ty: object) -> str:
    """A short description of a type for messages."""
    try:
        from relay_ref.ir.type_text import type_to_text
        return type_to_text(ty)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - messages must never fail
        return type(ty).__name__


def tensor_args(op: str, arg_types: Sequence[Type], n: int,
                names: Sequence[str] | None = None) -> list[TensorType] | Any:
    """The ``n`` arguments as tensor types, or ``NOT_YET`` if any is a hole.

    Raises ``RelationError`` for a wrong count or a non-tensor argument."""
    check_arity(op, arg_types, n)
    if any(has_hole(t) for t in arg_types):
        return NOT_YET
    out = []
    for i, t in enumerate(arg_types):
        if not isinstance(t, TensorType):
            what = names[i] if names and i < len(names) else f"argument {i}"
            raise RelationError(f"{op}: {what} must be a tensor, found {describe(t)}")
        out.append(t)
    return out


def tuple_of_tensors(op: str, ty: Type, what: str = "input") -> list[TensorType] | Any:
    """Fields of a tuple-of-tensors argument (``concatenate``'s input), or ``NOT_YET``."""
    if has_hole(ty):
        return NOT_YET
    if not isinstance(ty, TupleType):
        raise RelationError(f"{op}: {what} must be a tuple of tensors, found {describe(ty)}")
    out = []
    for i, f in enumerate(ty.fields):
        if not isinstance(f, TensorType):
            raise RelationError(f"{op}: field {i} of the {what} must be a tensor, "
                                f"found {describe(f)}")
        out.append(f)
    return out


def same_dtype(op: str, types: Sequence[TensorType], names: Sequence[str]) -> str:
    first = types[0].dtype
    for t, name in zip(types[1:], names[1:], strict=False):
        if t.dtype != first:
            raise RelationError(f"{op}: dtypes differ: {first} ({names[0]}) vs "
                                f"{t.dtype} ({name})")
    return first


# -- dimensions (the arithmetic itself is relay_ref.ir.shape) ------------------------------

def broadcast_shapes(op: str, sa: Shape, sb: Shape) -> Shape:
    """Right-aligned NumPy broadcasting of two shapes (``relay_ref.ir.shape``), a
    ``RelationError`` naming ``op`` and both shapes when they cannot broadcast."""
    try:
        return shape_broadcast(sa, sb)
    except DimMismatch as err:
        raise RelationError(f"{op}: shapes {shape_text(sa)} and {shape_text(sb)} "
                            f"cannot be broadcast together ({err})") from None


def normalize_axis(op: str, axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` in ``[-ndim, ndim)`` made non-negative; ``RelationError`` otherwise."""
    if not -ndim <= axis < ndim:
        raise RelationError(f"{op}: {what} {axis} is out of range for a tensor of rank "
                            f"{ndim}")
    return axis + ndim if axis < 0 else axis


def reduce_axes(op: str, ndim: int, axis: Sequence[int] | None, exclude: bool) -> list[int]:
    """The sorted axes a reduction removes (TVM's ``GetReduceAxes``).

    ``axis=None`` means all axes; ``exclude`` reduces every axis *not* listed."""
    if axis is None:
        return [] if exclude else list(range(ndim))
    seen = []
    for a in axis:
        k = normalize_axis(op, a, ndim)
        if k in seen:
            raise RelationError(f"{op}: axis {a} is repeated")
        seen.append(k)
    if exclude:
        return [k for k in range(ndim) if k not in seen]
    return sorted(seen)


# -- predicates: relations that also run backwards (spec/typing.md 3.9, 6.2) -----------

Relation = Callable[[list[Type], object], Any]


def output_is_input(forward: Relation, index: int = 0) -> Callable[[list[Type], object], Any]:
    """The predicate of a relation whose result type *is* argument ``index``'s type (TVM's
    ``IdentityRel``: ``Assign(out, in)``, which unifies in both directions).

    While that argument is a hole, the predicate unifies it with the result (whatever is
    known of either flows to the other) and waits; once it is known, ``forward`` checks the
    arguments and computes the result as usual. So ``fn (%x) -> Tensor[(3), float32]
    { nn.relu(%x) }`` infers ``%x``, and the op's own checks (tensor, dtype) still apply."""
    def pred(types: list[Type], attrs: object) -> Any:
        if isinstance(types[index], IncompleteType):
            return Solved(((index, types[-1]),), done=False)
        out = forward(types[:-1], attrs)
        if out is NOT_YET:
            return NOT_YET
        return Solved(((len(types) - 1, out),))
    return pred


def broadcast_operand(other: Shape, out: Shape) -> Shape | None:
    """The one shape ``x`` with ``broadcast(x, other) == out``, when there is exactly one:
    ``other`` is all ones (a scalar, ``(1)``, ``(1, 1)``...) and ``x`` cannot be of lower
    rank (``other`` is shorter than ``out``, or ``out``'s first dimension is neither 1 nor
    ``?``, which may be 1 at run time). Then every dimension of ``x`` is ``out``'s (a ``?``
    of ``out`` stays ``?``). Otherwise ``None`` (``(3)`` broadcast with ``x`` gives
    ``(4, 3)`` for ``x`` of shape ``(4, 3)`` or ``(4, 1)``; ``(1, 1)`` broadcast with ``x``
    gives ``(?, 3)`` for ``x`` of shape ``(?, 3)`` or ``(3)``: not unique)."""
    if len(other) > len(out) or any(is_any(d) or d != 1 for d in other):
        return None
    if len(other) == len(out) and out and (is_any(out[0]) or out[0] == 1):
        return None
    return tuple(out)


def broadcast_pred(forward: Relation) -> Callable[[list[Type], object], Any]:
    """The predicate of a broadcasting relation (``lhs``, ``rhs``, result).

    Forward as TVM's ``BroadcastRel`` once both operands are known. Backward where the
    answer is unique: one operand a hole, the other known and all ones, the result known
    (``add(%x, 1f) : Tensor[(2, 3), float32]`` gives ``%x : Tensor[(2, 3), float32]``; the
    dtype is the known operand's, which must equal the other's). TVM's relation is
    forward-only; it leaves ``%x`` uninferred there."""
    def pred(types: list[Type], attrs: object) -> Any:
        lhs, rhs, out = types
        for hole, other in ((0, rhs), (1, lhs)):
            if (isinstance(types[hole], IncompleteType) and isinstance(other, TensorType)
                    and isinstance(out, TensorType)):
                shape = broadcast_operand(other.shape, out.shape)
                if shape is not None:
                    return Solved(((hole, TensorType(shape, other.dtype)),), done=False)
        result = forward([lhs, rhs], attrs)
        if result is NOT_YET:
            return NOT_YET
        return Solved(((2, result),))
    return pred


def _named(rel: Any, name: str, predicate: Any = None) -> Any:
    rel.relation_name = name
    if predicate is not None:
        rel.predicate = predicate
    return rel


# -- generic relations ---------------------------------------------------------------

def identity_rel(op: str) -> Callable[[list[Type], object], Type | Any]:
    """Output type = the single input's type (TVM ``IdentityRel``); bidirectional
    (``output_is_input``)."""
    def rel(arg_types: list[Type], attrs: object) -> Type | Any:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        return TensorType(args[0].shape, args[0].dtype)
    return _named(rel, "Identity", output_is_input(rel))


def identity_bool_rel(op: str) -> Callable[[list[Type], object], Type | Any]:
    """Same shape, bool output (TVM ``IdentityCompRel``)."""
    def rel(arg_types: list[Type], attrs: object) -> Type | Any:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        return TensorType(args[0].shape, "bool")
    # forward only: a known bool result does not say the input's dtype
    return _named(rel, "IdentityComp")


def broadcast_rel(op: str, out_dtype: str | None = None,
                  dtype_check: Callable[[str], str | None] | None = None
                  ) -> Callable[[list[Type], object], Type | Any]:
    """Two inputs, NumPy broadcasting, equal dtypes; output dtype = lhs dtype or
    ``out_dtype`` (``bool`` for comparisons). ``dtype_check`` returns an error text or None.
    """
    def rel(arg_types: list[Type], attrs: object) -> Type | Any:
        args = tensor_args(op, arg_types, 2, ("lhs", "rhs"))
        if args is NOT_YET:
            return NOT_YET
        lhs, rhs = args
        if lhs.dtype != rhs.dtype:
            raise RelationError(f"{op}: dtypes differ: {lhs.dtype} vs {rhs.dtype}")
        if dtype_check is not None:
            problem = dtype_check(lhs.dtype)
            if problem:
                raise RelationError(f"{op}: {problem}")
        shape = broadcast_shapes(op, lhs.shape, rhs.shape)
        return TensorType(shape, out_dtype or lhs.dtype)
    return _named(rel, "BroadcastComp" if out_dtype == "bool" else "Broadcast",
                  broadcast_pred(rel))


# -- reference helpers ---------------------------------------------------------------

def as_dtype(x: object, dtype: str | np.dtype) -> np.ndarray:
    """``x`` as an ndarray of exactly ``dtype`` (NumPy 2 returns scalars from 0-d ops)."""
    arr = np.asarray(x)
    if arr.dtype != np.dtype(dtype):
        arr = arr.astype(dtype)
    return arr


def static_shape(op: str, shape: Shape, what: str = "shape") -> tuple[int, ...]:
    if not is_static(shape):
        raise RelationError(f"{op}: {what} must be static")
    return tuple(int(d) for d in shape)  # type: ignore[arg-type]
