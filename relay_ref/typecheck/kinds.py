"""Kind checking of written types (spec/typing.md section 1, rules K-*).

``check_kind(ty, scope, adts)`` returns the problems of a type written by the user (an
annotation, a constructor field, an explicit type argument) as ``(message, span)`` pairs;
an empty list means ``ty : Type``. Invariants: only types that can be written are checked
(holes ``_`` are fine, K-Hole); a ``TypeVar`` must be bound by an enclosing function or ADT
definition (``scope`` holds their uids); an ADT must be applied to exactly as many type
arguments as it declares.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from relay_ref.ir.module import TypeData
from relay_ref.ir.shape import is_any, is_symbolic
from relay_ref.ir.span import Span
from relay_ref.ir.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)

_DTYPE = re.compile(r"(bool|(u?int|float|bfloat)\d+)(x\d+)?")

Problems = list[tuple[str, Span | None]]


def valid_dtype(dtype: object) -> bool:
    """K-BaseType: ``bool``, ``intN``, ``uintN``, ``floatN``, ``bfloatN``, optionally with
    lanes ``xL``."""
    return isinstance(dtype, str) and _DTYPE.fullmatch(dtype) is not None


def check_kind(ty: object, scope: set[int], adts: Mapping[str, TypeData],
               where: Span | None = None) -> Problems:
    """Problems (message, span) making ``ty`` not a well-kinded ``Type`` (see module doc)."""
    problems: Problems = []
    _check(ty, set(scope), adts, where, problems)
    return problems


def _add(out: Problems, rule: str, message: str, span: Span | None) -> None:
    out.append((f"{message} [{rule}]", span))


def _check(ty: object, scope: set[int], adts: Mapping[str, TypeData], where: Span | None,
           out: Problems) -> None:
    span = getattr(ty, "span", None) or where
    match ty:
        case TensorType(shape, dtype):  # K-Tensor (with K-BaseType and K-Shape)
            if not valid_dtype(dtype):
                _add(out, "K-Tensor", f"unknown dtype {dtype!r}", span)
            if not isinstance(shape, tuple):
                _add(out, "K-Tensor", "a shape must be a tuple of dimensions", span)
                return
            for i, d in enumerate(shape):
                if type(d) is int and d >= 0:  # the common case first
                    continue
                if is_any(d) or is_symbolic(d):  # symbolic: scoped by T-ShapeScope
                    continue
                if isinstance(d, bool) or not isinstance(d, int) or d < 0:
                    _add(out, "K-Tensor", f"dimension {i} must be a non-negative integer, "
                         f"a shape expression or ?, found {d!r}", span)
        case TupleType(fields):  # K-Tuple
            for f in fields:
                _check(f, scope, adts, span, out)
        case FuncType(args, ret, params):  # K-Fn
            inner = scope | {p.uid for p in params}
            for p in params:
                if p.kind != Kind.Type:
                    _add(out, "K-Fn", f"type parameter {p.name} must have kind Type, "
                         f"found {p.kind.name}", span)
            for a in args:
                _check(a, inner, adts, span, out)
            _check(ret, inner, adts, span, out)
        case TypeVar(name, kind, uid):  # K-Var
            if uid not in scope:
                _add(out, "K-Var", f"type parameter {name} is not in scope here", span)
            elif kind != Kind.Type:
                _add(out, "K-Var", f"{name} has kind {kind.name}, not Type", span)
        case TypeCall(func, args):  # K-TypeCall
            td = adts.get(func.name)
            if td is None:
                _add(out, "K-TypeCall", f"unknown type {func.name}", span)
                return
            if len(args) != len(td.type_vars):
                _add(out, "K-TypeCall", f"{func.name} takes {len(td.type_vars)} type "
                     f"argument{'s' if len(td.type_vars) != 1 else ''}, "
                     f"found {len(args)}", span)
            for a in args:
                _check(a, scope, adts, span, out)
        case GlobalTypeVar(name):  # K-TypeCall with no arguments
            td = adts.get(name)
            if td is None:
                _add(out, "K-TypeCall", f"unknown type {name}", span)
            elif td.type_vars:
                _add(out, "K-TypeCall", f"{name} takes {len(td.type_vars)} type "
                     f"argument{'s' if len(td.type_vars) != 1 else ''}, found 0",
                     span)
        case RefType(value):  # K-Ref
            _check(value, scope, adts, span, out)
        case IncompleteType():  # K-Hole
            pass
        case _:
            _add(out, "K-Type", f"not a type: {ty!r}", span)
