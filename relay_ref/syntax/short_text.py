"""One-line summaries of expressions and patterns, for traces and derivations.

``short_text(expr)`` is Relay-like text of an expression with nested parts elided as ``...``
and the whole cut to a width (``let %x = add(%a, 1f); ...``); ``pattern_text(p)`` the same
for a ``match`` pattern (``Cons(%h, _)``). It is the one summariser: the typing derivations
(``relay_ref.typecheck.derive``) and the evaluation traces (``relay_ref.interpreter.trace``)
both use it, so an expression reads the same in both.

What a summary shows:
* Leaves in full at any depth: variables, globals, operators, constructors, scalar and small
  constants (written as the printer writes literals, ``scalar_text``; more than 6 elements
  as ``meta[...]``), and a nullary constructor's value as the printer writes it (``Nil``,
  not ``Nil()``).
* Composite nodes to a fixed nesting depth, then ``...`` (an elided subexpression); binary
  arithmetic and comparison operators infix (``%x + 1f``) when the call has no attributes.
* Explicit type arguments (``@id[int32](3)``) and an operator call's non-default attributes
  as the printer writes them (``reshape(%x, newshape=[10])``, ``zeros(shape=[2])``: an op
  whose meaning is in its attributes must not read as ``zeros()``), a value longer than
  ``ATTR_WIDTH`` characters elided (``axes=...``); ``attrs=False`` leaves them out.
* With ``names`` (``graph_names(module)``): a node shared by several uses (a graph binding,
  Pr-Graph) is written by the ``%N`` name the printer gives it, so graph-form programs do
  not summarise as ``((... + ...) + ...)``; the summarised node itself, if shared, is
  written ``%N = ...``.
* Cut to ``width`` characters, ending in the ``cut`` mark (default ``...``); the dots of an
  elision the cut runs into are merged with it (never ``......``).

Cost and safety: text is produced into a bounded buffer (a little over ``width``
characters; wider nodes stop early), so a summary costs O(width) whatever the size of the
expression and a trace or derivation of ``n`` nodes writes O(n) text. Never raises: a node
that cannot be summarised shows its class name.
"""

from __future__ import annotations

from collections.abc import Mapping

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
from relay_ref.ops.registry import attrs_items
from relay_ref.syntax.printer import attr_value_text, graph_names, relax_call_form, scalar_text

__all__ = ["EXPR_WIDTH", "SMALL_CONSTANT", "graph_names", "pattern_text", "short_text"]

EXPR_WIDTH = 70
"""Default width of a summary, in characters."""
SMALL_CONSTANT = 6
"""Constants with at most this many elements are written out; larger ones as meta[...]."""
DEPTH = 4
"""Nesting levels of composite nodes shown before ``...``."""
ATTR_WIDTH = 24
"""Attribute values whose text is longer are written ``key=...``."""

_BINARY = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "less": "<",
           "greater": ">", "less_equal": "<=", "greater_equal": ">=", "equal": "==",
           "not_equal": "!="}


def short_text(expr: Expr | Pattern | None, width: int = EXPR_WIDTH,
               names: Mapping[int, str] | None = None, *, attrs: bool = True,
               cut: str = "...") -> str:
    """Relay-like text of ``expr`` (or of a pattern), nested parts elided as ``...``, cut
    to ``width`` with ``cut``. ``names``: ``id(node) -> "%N"`` for shared nodes
    (``graph_names``); ``attrs``: show operator calls' non-default attributes (the
    default)."""
    if expr is None:
        return "(host call)"
    if isinstance(expr, Pattern):
        return pattern_text(expr, width, cut=cut)
    out = _Out(2 * width + 16)
    try:
        writer = _Writer(out, names or {}, attrs)
        name = writer.names.get(id(expr))
        if name is not None:
            out.put(f"{name} = ")
        writer.expr(expr, DEPTH, root=True)
    except _Full:
        pass
    except Exception:  # noqa: BLE001 - a summary must never fail
        return type(expr).__name__
    return _cut(" ".join("".join(out.parts).split()), width, cut)


def pattern_text(pattern: Pattern, width: int = EXPR_WIDTH, *, cut: str = "...") -> str:
    """Relay text of a pattern (``Cons(%h, _)``, ``(%a, _)``), cut to ``width``."""
    out = _Out(2 * width + 16)
    try:
        _pattern(out, pattern, DEPTH)
    except _Full:
        pass
    except Exception:  # noqa: BLE001 - a summary must never fail
        return type(pattern).__name__
    return _cut("".join(out.parts), width, cut)


def _cut(text: str, width: int, cut: str) -> str:
    if len(text) <= width:
        return text
    # An elision's dots that the cut runs into merge with the cut mark.
    return text[: max(width - len(cut), 0)].rstrip(".") + cut


class _Full(Exception):
    """The buffer holds more than the summary can show: stop writing."""


class _Out:
    __slots__ = ("limit", "parts", "size")

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit

    def put(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size > self.limit:
            raise _Full


def constant_text(data: object) -> str:
    """A constant as a summary writes it: a scalar literal (``1``, ``2.5f``), a small tensor
    in brackets of literals (``[1, 2]``), an empty one by its type, else ``meta[...]``."""
    arr = np.asarray(data)
    if arr.ndim == 0:
        text = scalar_text(arr)
        return text if text is not None else repr(arr[()])
    if arr.size > SMALL_CONSTANT:
        return "meta[...]"
    if arr.size == 0:
        return type_to_text(TensorType(tuple(arr.shape), arr.dtype.name)) + "([])"
    return np.array2string(arr, separator=", ", threshold=SMALL_CONSTANT, max_line_width=100,
                           formatter={"all": lambda x: scalar_text(np.asarray(x))
                                      or repr(np.asarray(x)[()])})


_RELAX = frozenset({"match_cast", "call_dps_packed", "call_tir", "dataflow"})


def _attr_text(value: object) -> str:
    """An attribute value as the printer writes it, ``...`` past ``ATTR_WIDTH``."""
    try:
        text = attr_value_text(value)
    except ValueError:  # a string the text format cannot write
        return "..."
    return text if len(text) <= ATTR_WIDTH else "..."


def _leaf(e: Expr) -> str | None:
    """The text of a node always written in full, or None for a composite node."""
    match e:
        case Var(name_hint=name):
            return f"%{name}"
        case GlobalVar(name=name):
            return f"@{name}"
        case Op(name=name) | Constructor(name=name):
            return name
        case Constant(data=data):
            return constant_text(data)
        case Call(op=Constructor(name=name), args=(), type_args=()):
            return name  # a nullary constructor's value, as the printer writes it
    return None


class _Writer:
    __slots__ = ("attrs", "names", "out")

    def __init__(self, out: _Out, names: Mapping[int, str], attrs: bool) -> None:
        self.out, self.names, self.attrs = out, names, attrs

    def expr(self, e: Expr, depth: int, root: bool = False) -> None:
        put = self.out.put
        leaf = _leaf(e)
        if leaf is not None:
            put(leaf)
            return
        if not root:
            name = self.names.get(id(e))
            if name is not None:
                put(name)
                return
        if depth < 0:
            put("...")
            return
        d = depth - 1
        match e:
            case Tuple(fields=fields):
                put("(")
                self.items(fields, d)
                put(",)" if len(fields) == 1 else ")")
            case TupleGetItem(tuple_value=t, index=i):
                self.expr(t, d)
                put(f".{i}")
            case Let(var=var, value=value, body=body):
                put(f"let %{var.name_hint} = ")
                self.expr(value, d)
                put("; ")
                self.expr(body, d - 1)
            case Call(op=Op(name=name), args=(arg,), attrs=call_attrs, type_args=()) \
                    if name in _RELAX and relax_call_form(name, (arg,), call_attrs):
                # Pr-Relax: the text format's own forms (S-MatchCast, S-DPS, S-Dataflow)
                if name == "dataflow":
                    put("dataflow { ")
                    self.expr(arg, d - 1)
                    put(" }")
                    return
                ty = call_attrs.type if name == "match_cast" else call_attrs.out_type
                put(name + "(")
                if name != "match_cast":
                    put(f'"{call_attrs.func_name}", ')
                self.expr(arg, d)
                put(", " + type_to_text(ty) + ")")
            case Call(op=op, args=args, attrs=call_attrs, type_args=type_args):
                shown = self.attr_items(op, call_attrs)
                if isinstance(op, Op) and op.name in _BINARY and len(args) == 2 \
                        and not shown and not type_args:
                    self.operand(args[0], d)
                    put(f" {_BINARY[op.name]} ")
                    self.operand(args[1], d)
                    return
                self.expr(op, d)
                if type_args:
                    put("[" + ", ".join(type_to_text(t) for t in type_args) + "]")
                put("(")
                self.items(args, d)
                for i, (key, value) in enumerate(shown):
                    put(", " if args or i else "")
                    put(f"{key}={_attr_text(value)}")
                put(")")
            case Function(params=params, body=body):
                put("fn (" + ", ".join(f"%{p.name_hint}" for p in params) + ") { ")
                self.expr(body, d - 1)
                put(" }")
            case If(cond=c, true_branch=t, false_branch=f):
                put("if (")
                self.expr(c, d)
                put(") { ")
                self.expr(t, d - 1)
                put(" } else { ")
                self.expr(f, d - 1)
                put(" }")
            case Match(data=data, complete=complete):
                put(f"match{'' if complete else '?'} (")
                self.expr(data, d)
                put(") { ... }")
            case RefCreate(value=v):
                put("ref(")
                self.expr(v, d)
                put(")")
            case RefRead(ref=r):
                put("ref_read(")
                self.expr(r, d)
                put(")")
            case RefWrite(ref=r, value=v):
                put("ref_write(")
                self.expr(r, d)
                put(", ")
                self.expr(v, d)
                put(")")
            case _:
                put(type(e).__name__)

    def items(self, items: tuple[Expr, ...], depth: int) -> None:
        for i, item in enumerate(items):
            if i:
                self.out.put(", ")
            self.expr(item, depth)

    def operand(self, e: Expr, depth: int) -> None:
        """An operand of an infix operator: parenthesised when itself infix."""
        infix = (isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in _BINARY
                 and id(e) not in self.names and depth >= 0
                 and not self.attr_items(e.op, e.attrs) and not e.type_args)
        if infix:
            self.out.put("(")
        self.expr(e, depth)
        if infix:
            self.out.put(")")

    def attr_items(self, op: Expr, attrs: object) -> list[tuple[str, object]]:
        if not self.attrs or not isinstance(op, Op) or attrs is None:
            return []
        try:
            return attrs_items(attrs)
        except Exception:  # noqa: BLE001 - attributes are optional in a summary
            return []


def _pattern(out: _Out, p: Pattern, depth: int) -> None:
    if depth < 0:
        out.put("...")
        return
    match p:
        case PatternWildcard():
            out.put("_")
        case PatternVar(var=var):
            out.put(f"%{var.name_hint}")
        case PatternConstructor(constructor=ctor, patterns=subs):
            out.put(ctor.name)
            if subs:
                out.put("(")
                for i, s in enumerate(subs):
                    if i:
                        out.put(", ")
                    _pattern(out, s, depth - 1)
                out.put(")")
        case PatternTuple(patterns=subs):
            out.put("(")
            for i, s in enumerate(subs):
                if i:
                    out.put(", ")
                _pattern(out, s, depth - 1)
            out.put(",)" if len(subs) == 1 else ")")
        case _:
            out.put(type(p).__name__)
