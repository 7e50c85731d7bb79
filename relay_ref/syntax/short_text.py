"""One-line summaries of expressions and patterns, for traces and derivations.

``short_text(expr)`` is Relay-like text of an expression with nested parts elided as ``...``
and the whole cut to a width (``let %x = add(%a, 1f); ...``); ``pattern_text(p)`` the same
for a ``match`` pattern (``Cons(%h, _)``). Both are bounded: a node is summarised to a fixed
nesting depth, so the cost is constant per node whatever the size of the program (a trace or
a derivation of ``n`` nodes writes ``O(n)`` text). Never raises.

It sits in the syntax layer (below the checker and the interpreter) so that the typing
derivations (``relay_ref.typecheck.derive``) and the evaluation traces can share it; scalar
constants are written as the printer writes them (``scalar_text``).
"""

from __future__ import annotations

import numpy as np

from relay_ref.ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.types import TensorType
from relay_ref.syntax.printer import scalar_text

__all__ = ["pattern_text", "short_text"]

_BINARY = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "less": "<",
           "greater": ">", "less_equal": "<=", "greater_equal": ">=", "equal": "==",
           "not_equal": "!="}


def short_text(expr: Expr | None, width: int = 70) -> str:
    """Relay-like text of ``expr``, nested parts elided as ``...``, cut to ``width``."""
    if expr is None:
        return "(host call)"
    try:
        text = " ".join(_text(expr, 4).split())
    except Exception:  # noqa: BLE001 - a summary must never fail
        text = type(expr).__name__
    return text if len(text) <= width else text[: width - 3] + "..."


def pattern_text(pattern: Pattern, width: int = 70) -> str:
    """Relay text of a pattern (``Cons(%h, _)``, ``(%a, _)``), cut to ``width``."""
    text = _pattern(pattern, 4)
    return text if len(text) <= width else text[: width - 3] + "..."


def _constant(data: object) -> str:
    arr = np.asarray(data)
    if arr.ndim == 0:
        text = scalar_text(arr)
        return text if text is not None else repr(arr[()])
    if arr.size > 6:
        return "meta[...]"
    if arr.size == 0:
        return type_to_text(TensorType(tuple(arr.shape), arr.dtype.name)) + "([])"
    return np.array2string(arr, separator=", ", threshold=6, max_line_width=100,
                           formatter={"all": lambda x: scalar_text(np.asarray(x))
                                      or repr(np.asarray(x)[()])})


def _text(e: Expr, depth: int) -> str:
    if depth < 0:
        return "..."
    d = depth - 1
    match e:
        case Var(name_hint=name):
            return f"%{name}"
        case GlobalVar(name=name):
            return f"@{name}"
        case Op(name=name) | Constructor(name=name):
            return name
        case Constant(data=data):
            return _constant(data)
        case Tuple(fields=fields):
            inner = ", ".join(_text(f, d) for f in fields)
            return f"({inner},)" if len(fields) == 1 else f"({inner})"
        case TupleGetItem(tuple_value=t, index=i):
            return f"{_text(t, d)}.{i}"
        case Let(var=var, value=value, body=body):
            return f"let %{var.name_hint} = {_text(value, d)}; {_text(body, d - 1)}"
        case Call(op=Op(name=name), args=(lhs, rhs)) if name in _BINARY:
            return f"{_wrap(lhs, d)} {_BINARY[name]} {_wrap(rhs, d)}"
        case Call(op=op, args=args):
            return f"{_text(op, d)}(" + ", ".join(_text(a, d) for a in args) + ")"
        case Function(params=params, body=body):
            names = ", ".join(f"%{p.name_hint}" for p in params)
            return f"fn ({names}) {{ {_text(body, d - 1)} }}"
        case If(cond=c, true_branch=t, false_branch=f):
            return f"if ({_text(c, d)}) {{ {_text(t, d - 1)} }} else {{ {_text(f, d - 1)} }}"
        case Match(data=data, complete=complete):
            return f"match{'' if complete else '?'} ({_text(data, d)}) {{ ... }}"
        case RefCreate(value=v):
            return f"ref({_text(v, d)})"
        case RefRead(ref=r):
            return f"ref_read({_text(r, d)})"
        case RefWrite(ref=r, value=v):
            return f"ref_write({_text(r, d)}, {_text(v, d)})"
    return type(e).__name__


def _wrap(e: Expr, depth: int) -> str:
    text = _text(e, depth)
    if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in _BINARY:
        return f"({text})"
    return text


def _pattern(p: Pattern, depth: int) -> str:
    if depth < 0:
        return "..."
    match p:
        case PatternWildcard():
            return "_"
        case PatternVar(var):
            return f"%{var.name_hint}"
        case PatternConstructor(ctor, subs):
            if not subs:
                return ctor.name
            return f"{ctor.name}(" + ", ".join(_pattern(s, depth - 1) for s in subs) + ")"
        case PatternTuple(subs):
            inner = ", ".join(_pattern(s, depth - 1) for s in subs)
            return f"({inner},)" if len(subs) == 1 else f"({inner})"
    return type(p).__name__
