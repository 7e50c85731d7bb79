"""Types as Relay text (``Tensor[(1, 3), float32]``, ``fn (int32) -> int32``, ``List[A]``).

Shared by the printer, the diagnostics of the type checker, and the Jupyter kernel.
Invariant: for every type the parser can read, ``parse_type(type_to_text(t))`` is
alpha-equal to ``t`` (ref types and type parameters of function types print in TVM's form,
which TVM itself cannot parse back; our parser accepts them).
"""

from __future__ import annotations

from relay_ref.ir.shape import shape_text
from relay_ref.ir.types import (
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


def shape_to_text(shape: tuple) -> str:
    """A shape as Relay writes it: ``(2, 3)``, ``(3)`` for one dimension, ``()``, ``(?, 4)``
    (``relay_ref.ir.shape.shape_text``)."""
    return shape_text(shape)


def type_to_text(ty: Type | None, names: dict[TypeVar, str] | None = None) -> str:
    """Relay text for ``ty`` (``_`` for a hole or a missing type).

    ``names`` optionally renames type variables (the printer makes bound type-variable names
    unique within a definition, so that nested type parameters never capture). Iterative:
    a 10 000-deep tuple or function type is written without deep recursion."""
    out: list[str] = []
    stack: list[object] = [ty]  # invariant: a str is text to write, anything else a type
    while stack:
        item = stack.pop()
        if type(item) is str:
            out.append(item)
        else:
            stack.extend(reversed(_pieces(item, names or {})))  # type: ignore[arg-type]
    return "".join(out)


def _pieces(ty: Type | None, names: dict[TypeVar, str]) -> list[object]:
    """The text of ``ty`` one level deep: strings, and the types inside it in place."""
    match ty:
        case None | IncompleteType():
            return ["_"]
        case TensorType(shape, dtype):
            return [dtype if not shape else f"Tensor[{shape_to_text(shape)}, {dtype}]"]
        case TupleType(fields):
            if len(fields) == 1:
                return ["(", fields[0], ",)"]
            return ["(", *_commas(fields), ")"]
        case FuncType(args, ret, type_params):
            tps = ""
            if type_params:
                tps = "[" + ", ".join(names.get(tp, tp.name) for tp in type_params) + "]"
            return [f"fn {tps}(", *_commas(args), ") -> ", ret]
        case TypeCall(func, args):
            return [func.name] if not args else [f"{func.name}[", *_commas(args), "]"]
        case TypeVar(name):
            return [names.get(ty, name)]
        case GlobalTypeVar(name):
            return [name]
        case RefType(value):
            return ["ref(", value, ")"]
    raise TypeError(f"not a Relay type: {ty!r}")


def _commas(types: tuple[Type, ...]) -> list[object]:
    """``types`` separated by ``", "``."""
    pieces: list[object] = []
    for i, t in enumerate(types):
        if i:
            pieces.append(", ")
        pieces.append(t)
    return pieces
