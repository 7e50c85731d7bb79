"""Cast points: where a value of a less precise static type flows into a more precise one.

Relay's ``?`` dimension is gradual typing (spec/typing.md 5.1): two types are *consistent*
(``τ ~ τ'``) when they are equal up to ``?``, which is consistent with every dimension. The
rules that compare two types (T-Fn, T-Let, T-App, T-If, T-Match, TP-Var, T-WriteRef, T-Rel) require
only consistency; where the value's type is less precise than the type the rule gives it (a
``?`` where the other has a known extent, anywhere inside it), the rule has a *cast point*:
the value is checked at run time against the more precise type (spec/semantics.md 4,
Stuck-Cast), deeply, and a function value crossing it is wrapped so that its arguments and
its result are checked when it is called.

The checker records a ``Site`` for each comparison of a rule that moves a value (with the
types still holding holes); once every hole is resolved, ``cast_table`` keeps the sites
that need a check (``needs_cast``), as a ``CastTable`` stored in the checked module
(``IRModule.casts``). A program in which no ``?`` ever met a known dimension has no table
(``None``) and runs exactly as without casts.

Invariants: ``needs_cast`` and the table builder are iterative and memoised by type object
(types are DAGs), so the cost is linear in the size of the types compared; a table entry's
``target`` is hole-free (resolved).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from relay_ref.ir.expr import Expr
from relay_ref.ir.shape import AnyDim
from relay_ref.ir.span import Span
from relay_ref.ir.types import (
    ANY,
    FuncType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    subterms,
)

__all__ = ["Cast", "CastTable", "Site", "cast_table", "has_any", "needs_cast"]


@dataclass(frozen=True, slots=True)
class Cast:
    """One cast point: a value of static type ``source`` must have type ``target`` (the more
    precise one) here. ``rule`` is the typing rule whose consistency premise it comes from,
    ``what`` names the value in words (``argument 0 of @f``), ``span`` is the expression
    whose static type a failing check violates."""

    rule: str
    source: Type
    target: Type
    what: str
    span: Span | None


class Site(NamedTuple):
    """A comparison recorded while checking (types may still hold holes): at ``node``
    (``index``: the argument's position for T-App, else -1), a value of type ``found`` goes
    where ``expected`` is required, by ``rule``. ``result``: for T-Rel, the type the cast
    checks (the call's own type) instead of ``expected``. A tuple: the checker records one
    per rule application, so it must be cheap."""

    node: Expr
    index: int
    found: Type
    expected: Type
    rule: str
    result: Type | None = None


class CastTable:
    """The cast points of a checked module, by node identity.

    ``at(node)`` is the cast of a node whose own rule moves one value: a ``Function`` (its
    body's value is returned: T-Fn), a ``Let`` (the bound value: T-Let), an ``If`` or a
    ``Match`` (the value of the branch or clause taken: T-If, T-Match), a ``RefWrite`` (the
    value stored: T-WriteRef), an operator ``Call`` (the call's value: T-Rel) or an
    ``Op`` used as a value (its results: T-Rel), the ``Var`` of
    an annotated pattern variable (the value it binds: TP-Var).
    ``args(call)`` are a call's argument casts, one entry per argument (None: no check;
    T-App)."""

    __slots__ = ("_args", "_at")

    def __init__(self) -> None:
        self._at: dict[int, tuple[Expr, Cast]] = {}
        self._args: dict[int, tuple[Expr, tuple[Cast | None, ...]]] = {}

    def at(self, node: Expr) -> Cast | None:
        item = self._at.get(id(node))
        return None if item is None else item[1]

    def args(self, call: Expr) -> tuple[Cast | None, ...] | None:
        item = self._args.get(id(call))
        return None if item is None else item[1]

    def add(self, node: Expr, index: int, cast: Cast, arity: int = 0) -> None:
        if index < 0:
            self._at.setdefault(id(node), (node, cast))
            return
        old = self._args.get(id(node))
        casts = list(old[1]) if old is not None else [None] * arity
        if casts[index] is None:
            casts[index] = cast
        self._args[id(node)] = (node, tuple(casts))

    def items(self) -> Iterator[tuple[Expr, int, Cast]]:
        """Every cast point: (node, argument index or -1, cast)."""
        for node, cast in self._at.values():
            yield node, -1, cast
        for node, casts in self._args.values():
            for i, cast in enumerate(casts):
                if cast is not None:
                    yield node, i, cast

    def __len__(self) -> int:
        return len(self._at) + sum(sum(c is not None for c in cs)
                                   for _, cs in self._args.values())

    def __repr__(self) -> str:
        return f"<CastTable of {len(self)} cast points>"


def imprecise(ty: Type) -> Type:
    """``ty`` with every tensor dimension ``?``: the least precise type consistent with it
    (what an operator's result is known to be before its relation's answer is checked)."""
    match ty:
        case TensorType(shape, dtype):
            return TensorType(tuple(ANY for _ in shape), dtype)
        case TupleType(fields):
            return TupleType(tuple(imprecise(f) for f in fields))
    return ty


def has_any(ty: Type) -> bool:
    """Whether ``ty`` has a ``?`` dimension anywhere inside (a tensor, tuple field, ADT type
    argument, reference contents, function parameter or result): a binder annotated so may
    be less precise than its value, and a pass replacing the binder by the value would
    make its uses more precise (spec/typing.md 5.1). Iterative."""
    return any(isinstance(t, TensorType) and any(type(d) is not int for d in t.shape)
               for t in subterms(ty))


def needs_cast(source: Type, target: Type) -> bool:
    """Whether a value of (resolved) type ``source`` needs a run-time check to have type
    ``target``: somewhere inside, ``source`` has ``?`` where ``target`` has a known extent.
    Function types are compared contravariantly in their parameters (a wrapped function
    checks its arguments against its own parameter types). Iterative and memoised."""
    seen: set[tuple[int, int]] = set()
    work = [(source, target)]
    while work:
        s, t = work.pop()
        if s is t or (id(s), id(t)) in seen:
            continue
        seen.add((id(s), id(t)))
        match s, t:
            case TensorType(), TensorType():
                # a known (or symbolic) target extent that the source does not provably
                # have: ``?``, or another expression (``m`` vs ``n``, ``3`` vs ``n``: checked
                # at run time with the shape variables' values, spec 5.3 T-ShapeCall)
                if s.shape != t.shape and any(
                        a != b and type(b) is not AnyDim
                        for a, b in zip(s.shape, t.shape, strict=False)):
                    return True
            case TupleType(), TupleType():
                work.extend(zip(s.fields, t.fields, strict=False))
            case TypeCall(), TypeCall():
                work.extend(zip(s.args, t.args, strict=False))
            case RefType(), RefType():
                work.append((s.value, t.value))
            case FuncType(), FuncType():
                work.extend(zip(t.arg_types, s.arg_types, strict=False))
                work.append((s.ret_type, t.ret_type))
    return False


def cast_table(sites: list[Site], resolve: Callable[[Type], Type],
               place: Callable[[Site], tuple[str, Span | None, bool]]) -> CastTable | None:
    """The cast points among ``sites`` (types resolved by ``resolve``), or None if none.
    ``place(site)`` says what the value is called, where a failure is located and whether
    the run-time annotation check already performs the cast (then it gets no entry)."""
    table = CastTable()
    for site in sites:
        found, expected = resolve(site.found), resolve(site.expected)
        if site.result is not None:  # T-Rel: any disagreement checks the call's value
            if not (needs_cast(found, expected) or needs_cast(expected, found)):
                continue
            target = resolve(site.result)
            source = target
            if type(target) is FuncType:  # an op used as a value: its results are checked
                source = FuncType(target.arg_types, imprecise(target.ret_type))
            what, span, _ = place(site)
            table.add(site.node, -1, Cast(site.rule, source, target, what, span))
            continue
        if not needs_cast(found, expected):
            continue
        what, span, covered = place(site)
        if covered:
            continue
        arity = len(getattr(site.node, "args", ())) if site.index >= 0 else 0
        table.add(site.node, site.index, Cast(site.rule, found, expected, what, span), arity)
    return table if len(table) else None
