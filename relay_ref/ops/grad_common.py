"""Builders shared by the differentiation rules (``relay_ref/ops/grad_*.py``).

The rules follow the registry's differentiation protocol (``relay_ref.ops.registry``,
"Differentiation protocol"; spec/ad.md): a reverse rule maps ``(call, out_grad, type_of)`` to
one adjoint expression per argument, a forward rule maps ``(call, tangents, type_of)`` to the
result's tangent. Both only *build* Relay expressions with the ``relay_ref.ir`` constructors;
nothing here evaluates anything.

Invariants the builders keep:
* every expression they return has a statically known type derivable from the types
  ``type_of`` gives (the rules pass the dtype of the original argument to every constant);
* ``unbroadcast`` returns an expression of the argument's own type (TVM's
  ``collapse_sum_like``), and skips the collapse when the shapes already agree.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relay_ref.ir.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.registry import make_attrs

#: ``type_of(expr) -> Type``: the checked type of an original expression (supplied by the
#: AD pass, see the registry's differentiation protocol).
TypeOf = Callable[[Expr], Type]
#: ``rule(call, out_grad, type_of) -> tuple[Expr, ...]``
Reverse = Callable[[Call, Expr, TypeOf], tuple]
#: ``rule(call, tangents, type_of) -> Expr``
Forward = Callable[[Call, tuple, TypeOf], Expr]


def op(name: str, *args: Expr, **attrs: object) -> Call:
    """The call ``name(args..., attrs...)``, attributes validated as the parser would."""
    return Call(Op(name), tuple(args), make_attrs(name, attrs))


def op_with(name: str, attrs: object, *args: Expr) -> Call:
    """The call ``name(args...)`` with an attrs object as it is (the original call's)."""
    return Call(Op(name), tuple(args), attrs)


def tensor_type(ty: Type) -> TensorType:
    if not isinstance(ty, TensorType):
        raise TypeError(f"a differentiation rule expected a tensor type, not {ty!r}")
    return ty


def shape(expr: Expr, type_of: TypeOf) -> tuple:
    """The static shape of ``expr`` (an original expression)."""
    return tuple(tensor_type(type_of(expr)).shape)


def dtype(expr: Expr, type_of: TypeOf) -> str:
    return tensor_type(type_of(expr)).dtype


def const(value: float, dtype_name: str) -> Constant:
    """A scalar constant of ``dtype_name``."""
    return Constant(np.array(value, dtype=dtype_name))


def scalar_like(value: float, expr: Expr, type_of: TypeOf) -> Constant:
    """A scalar constant with ``expr``'s dtype (broadcasts against it)."""
    return const(value, dtype(expr, type_of))


def zeros_like(expr: Expr) -> Call:
    return op("zeros_like", expr)


def ones_like(expr: Expr) -> Call:
    return op("ones_like", expr)


def is_float(expr: Expr, type_of: TypeOf) -> bool:
    return np.dtype(dtype(expr, type_of)).kind in "fc"


def unbroadcast(grad: Expr, arg: Expr, call: Expr, type_of: TypeOf) -> Expr:
    """``grad`` (of ``call``'s shape) summed back to ``arg``'s shape: the adjoint of an
    implicit broadcast (TVM's ``collapse_sum_like``)."""
    if shape(arg, type_of) == shape(call, type_of):
        return grad
    return op("collapse_sum_like", grad, arg)


def add_all(terms: list[Expr]) -> Expr:
    """The sum of one or more expressions (broadcasting)."""
    out = terms[0]
    for t in terms[1:]:
        out = op("add", out, t)
    return out


def fields(expr: Expr, n: int) -> tuple[Expr, ...]:
    """The ``n`` fields of a tuple-valued expression (its fields when it is a literal)."""
    if isinstance(expr, Tuple):
        return expr.fields
    return tuple(TupleGetItem(expr, i) for i in range(n))


def tuple_len(expr: Expr, type_of: TypeOf) -> int:
    ty = type_of(expr)
    if not isinstance(ty, TupleType):
        raise TypeError(f"a differentiation rule expected a tuple type, not {ty!r}")
    return len(ty.fields)
