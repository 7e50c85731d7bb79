"""Types as Relay text (``Tensor[(1, 3), float32]``, ``fn (int32) -> int32``, ``List[A]``).

Shared by the printer, the diagnostics of the type checker, and the Jupyter kernel.
Invariant: for every type the parser can read, ``parse_type(type_to_text(t))`` is
alpha-equal to ``t`` (ref types and type parameters of function types print in TVM's form,
which TVM itself cannot parse back; our parser accepts them).
"""

from __future__ import annotations

from relay_ref.ir.types import (
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)


def dim_to_text(dim: object) -> str:
    return "?" if isinstance(dim, AnyDim) else str(dim)


def shape_to_text(shape: tuple) -> str:
    """A shape as Relay writes it: ``(2, 3)``, ``(3)`` for one dimension, ``()``, ``(?, 4)``."""
    return "(" + ", ".join(dim_to_text(d) for d in shape) + ")"


def type_to_text(ty: Type | None, names: dict[TypeVar, str] | None = None) -> str:
    """Relay text for ``ty`` (``_`` for a hole or a missing type).

    ``names`` optionally renames type variables (the printer makes bound type-variable names
    unique within a definition, so that nested type parameters never capture)."""
    if names is not None:
        return _named(ty, names)
    match ty:
        case None | IncompleteType():
            return "_"
        case TensorType(shape, dtype):
            if not shape:
                return dtype
            return f"Tensor[{shape_to_text(shape)}, {dtype}]"
        case TupleType(fields):
            if len(fields) == 1:
                return f"({type_to_text(fields[0])},)"
            return "(" + ", ".join(type_to_text(f) for f in fields) + ")"
        case FuncType(args, ret, type_params):
            tps = ""
            if type_params:
                tps = "[" + ", ".join(tp.name for tp in type_params) + "]"
            arg_text = ", ".join(type_to_text(a) for a in args)
            return f"fn {tps}({arg_text}) -> {type_to_text(ret)}"
        case TypeCall(func, args):
            if not args:
                return func.name
            return f"{func.name}[" + ", ".join(type_to_text(a) for a in args) + "]"
        case GlobalTypeVar(name) | TypeVar(name):
            return name
        case RefType(value):
            return f"ref({type_to_text(value)})"
    raise TypeError(f"not a Relay type: {ty!r}")


def _named(ty: Type | None, names: dict[TypeVar, str]) -> str:
    match ty:
        case TypeVar(name):
            return names.get(ty, name)
        case TupleType(fields):
            if len(fields) == 1:
                return f"({_named(fields[0], names)},)"
            return "(" + ", ".join(_named(f, names) for f in fields) + ")"
        case FuncType(args, ret, type_params):
            tps = ""
            if type_params:
                tps = "[" + ", ".join(names.get(tp, tp.name) for tp in type_params) + "]"
            arg_text = ", ".join(_named(a, names) for a in args)
            return f"fn {tps}({arg_text}) -> {_named(ret, names)}"
        case TypeCall(func, args) if args:
            return f"{func.name}[" + ", ".join(_named(a, names) for a in args) + "]"
        case RefType(value):
            return f"ref({_named(value, names)})"
    return type_to_text(ty)
