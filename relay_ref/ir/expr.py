"""Relay expressions (spec/syntax.md, abstract syntax).

Invariants:
* Expressions compare and hash by *identity* (``eq=False``): two binders named ``%x`` are
  different variables; sharing the same node object twice is a DAG edge (a graph binding).
  Structural comparison is ``relay_ref.ir.equal.alpha_equal``.
* ``GlobalVar`` and ``Op`` are the two exceptions: they are names (module-unique / registry-
  unique) and compare by name.
* Every node has ``span`` (``None`` for synthesised nodes), never compared.
* Tuples of children are Python tuples; nodes are immutable.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from relay_ref.ir.span import Span
from relay_ref.ir.types import GlobalTypeVar, Type, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    pass

# Function attributes and attributes of calls to non-operators: ordered (key, value) pairs.
# Values are int, float, str, bool, None, ``MetaObject``s, or tuples of those (TVM's nested
# lists).
AttrItems = tuple[tuple[str, object], ...]


@dataclass(frozen=True, slots=True)
class MetaObject:
    """An object of the metadata table that relay_ref keeps opaque (TVM's ``VirtualDevice``,
    a ``tir.Var``, ...): an attribute value written ``meta[type_key][i]`` (spec/syntax.md
    S-Metadata). ``node`` is its TVM JSON node as canonical JSON text (sorted keys), so two
    objects are equal when their nodes are; ``source`` (not compared) is ``(nodes, arrays,
    index)`` of the ``#[metadata]`` graph it was read from, which lets the printer write that
    graph back unchanged (the node's own references stay valid)."""

    type_key: str
    node: str
    source: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class CallAttrs:
    """Attributes of a call whose callee is not an operator (TVM: ``%f(%x, name="n",
    attrs_type_key="attrs.TestAttrs")``): the attrs type's key and the other pairs in source
    order. Compared structurally; neither the type checker nor the interpreter reads them."""

    type_key: str
    items: AttrItems = ()


class Expr:
    """Base class of all expressions."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    """A local variable ``%name`` (optionally annotated). Identity is the variable."""

    name_hint: str
    type_annotation: Type | None = None
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class GlobalVar(Expr):
    """A reference to a module-level function ``@name``."""

    name: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Op(Expr):
    """A primitive operator, by registry name (``add``, ``nn.conv2d``)."""

    name: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Constant(Expr):
    """A tensor literal; ``data`` is a NumPy array (0-d for scalars) and is never mutated."""

    data: np.ndarray
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Tuple(Expr):
    """``(e1, ..., en)``; ``()`` is unit and ``(e,)`` a 1-tuple."""

    fields: tuple[Expr, ...]
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class TupleGetItem(Expr):
    """Projection ``e.index``."""

    tuple_value: Expr
    index: int
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Let(Expr):
    """``let %var = value; body``. ``var`` scopes over ``body`` (and over ``value`` when
    ``value`` is a function literal: let-bound functions may recurse)."""

    var: Var
    value: Expr
    body: Expr
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Call(Expr):
    """``op(args, key=value...)``; ``op`` is an ``Op``, a ``Constructor`` or any expression
    of function type. For an ``Op``, ``attrs`` is an instance of the op's attrs dataclass
    (``relay_ref.ops.registry``); otherwise it is ``None`` or a ``CallAttrs``."""

    op: Expr
    args: tuple[Expr, ...]
    attrs: object | None = None
    type_args: tuple[Type, ...] = ()
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Function(Expr):
    """``fn [type_params](params, attrs...) -> ret_type { body }``."""

    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None = None
    type_params: tuple[TypeVar, ...] = ()
    attrs: AttrItems = ()
    span: Span | None = field(default=None, repr=False)

    def attr(self, key: str, default: object = None) -> object:
        for k, v in self.attrs:
            if k == key:
                return v
        return default


@dataclass(frozen=True, slots=True, eq=False)
class If(Expr):
    """``if (cond) { true_branch } else { false_branch }``."""

    cond: Expr
    true_branch: Expr
    false_branch: Expr
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Constructor(Expr):
    """An ADT constructor; belongs to one ``TypeData`` and is referenced by identity.

    ``inputs`` are the field types (mentioning the ADT's type variables); ``tag`` is the
    constructor's index within its ADT."""

    name: str
    inputs: tuple[Type, ...]
    belong_to: GlobalTypeVar
    tag: int
    span: Span | None = field(default=None, repr=False)


class Pattern:
    """Base class of ``match`` patterns."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class PatternWildcard(Pattern):
    """``_``: matches anything, binds nothing."""

    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class PatternVar(Pattern):
    """``%x`` or ``%x: T``: matches anything, binds ``var``."""

    var: Var
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class PatternConstructor(Pattern):
    """``Ctor(p1, ..., pn)`` (``Ctor`` alone when it has no fields)."""

    constructor: Constructor
    patterns: tuple[Pattern, ...] = ()
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class PatternTuple(Pattern):
    """``(p1, ..., pn)``."""

    patterns: tuple[Pattern, ...]
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Clause:
    """One arm ``lhs => rhs`` of a ``match``."""

    lhs: Pattern
    rhs: Expr
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Match(Expr):
    """``match (data) { clauses }``; ``complete=False`` is ``match?`` (may be partial)."""

    data: Expr
    clauses: tuple[Clause, ...]
    complete: bool = True
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class RefCreate(Expr):
    """``ref(value)``: a new mutable cell."""

    value: Expr
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class RefRead(Expr):
    """``ref_read(ref)``."""

    ref: Expr
    span: Span | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class RefWrite(Expr):
    """``ref_write(ref, value)``; evaluates to ``()``."""

    ref: Expr
    value: Expr
    span: Span | None = field(default=None, repr=False)


def children(expr: Expr) -> Iterator[Expr]:
    """The direct sub-expressions of ``expr`` in evaluation (left-to-right) order.

    Binders (``Let.var``, ``Function.params``, pattern variables) are not yielded."""
    match expr:
        case Tuple(fields):
            yield from fields
        case TupleGetItem(tup, _):
            yield tup
        case Let(_, value, body):
            yield value
            yield body
        case Call(op, args):
            yield op
            yield from args
        case Function(_, body):
            yield body
        case If(cond, t, f):
            yield cond
            yield t
            yield f
        case Match(data, clauses):
            yield data
            for clause in clauses:
                yield clause.rhs
        case RefCreate(value):
            yield value
        case RefRead(ref):
            yield ref
        case RefWrite(ref, value):
            yield ref
            yield value
        case _:
            return


def pattern_vars(pattern: Pattern) -> list[Var]:
    """Variables bound by ``pattern``, left to right."""
    out: list[Var] = []
    stack = [pattern]
    while stack:
        p = stack.pop()
        match p:
            case PatternVar(var):
                out.append(var)
            case PatternConstructor(_, pats) | PatternTuple(pats):
                stack.extend(reversed(pats))
    return out
