"""Evaluation traces for teaching: which rule was applied to which expression.

``rr.evaluate(prog, trace=True)`` returns ``(value, events)``; each ``TraceEvent`` holds the
rule's name (as in spec/semantics.md: ``E-Let``, ``E-App-Rec``, ``E-Match`` ...), the
expression it was applied to and the derivation depth. Events come in derivation order: a
rule's event comes before the events of its premises (one level deeper), even for rules
chosen only once premises are evaluated (``E-If-True``/``E-If-False``, ``E-App-*``,
``E-Match``, ``E-Ref``...); the body of a ``let`` or the branch of an ``if`` is a premise too.
``format_trace`` renders events one per line, indented by depth::

    E-App-Closure  @main(...)
      E-Let  let %x = 1; ...
        E-Const  1
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.interpreter.values import tensor_to_text
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
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)

_BINARY = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "less": "<",
           "greater": ">", "less_equal": "<=", "greater_equal": ">=", "equal": "==",
           "not_equal": "!="}


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """Rule ``rule`` was applied to ``expr`` at derivation depth ``depth`` (1 = outermost)."""

    rule: str
    expr: Expr | None
    depth: int

    @property
    def text(self) -> str:
        """A one-line summary of the expression (at most 70 characters)."""
        return short_text(self.expr)

    def __str__(self) -> str:
        return f"{self.rule}  {self.text}"


def format_trace(events: list[TraceEvent], limit: int | None = None) -> str:
    """One line per event, indented two spaces per depth level; at most ``limit`` lines
    (then a line saying how many were left out). Beyond ``MAX_INDENT`` levels the depth is
    written as a number (``[depth 812]``) instead, so the output stays linear in the
    number of events however deep the derivation."""
    shown = events if limit is None else events[:limit]
    base = min((e.depth for e in shown), default=0)
    lines = [_indent(e.depth - base) + f"{e.rule}  {e.text}" for e in shown]
    if limit is not None and len(events) > limit:
        lines.append(f"... {len(events) - limit} more steps")
    return "\n".join(lines)


MAX_INDENT = 40
"""Depth levels shown as indentation in ``format_trace``; deeper ones are numbered."""


def _indent(depth: int) -> str:
    if depth <= MAX_INDENT:
        return "  " * depth
    return "  " * MAX_INDENT + f"[depth {depth}] "


def short_text(expr: Expr | None, width: int = 70) -> str:
    """Relay-like text of ``expr``, nested parts elided as ``...``, cut to ``width``."""
    if expr is None:
        return "(host call)"
    text = " ".join(_text(expr, 4).split())
    return text if len(text) <= width else text[: width - 3] + "..."


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
            return tensor_to_text(data, threshold=6) if np.size(data) <= 6 else "meta[...]"
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
