"""Match completeness (spec/typing.md section 3.14, rule T-Match-Complete).

``missing_case(patterns, constructors_of)`` returns a value shape (as Relay pattern text,
e.g. ``Cons(_, Nil)``) that no pattern matches, or ``None`` when the patterns cover every
value. The algorithm is the classic *usefulness* check on a pattern matrix (Maranget,
"Warnings for pattern matching", 2007): a vector of wildcards is useful after the rows
iff some value is not matched; specialising by each constructor of the column's ADT (or
by the tuple shape) and taking the default matrix otherwise yields a witness.

Invariants: patterns are assumed well-typed (the checker runs this only after the clause
patterns type-checked); variables behave as wildcards; a column whose patterns name no
constructor is covered by wildcards only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from relay_ref.ir.expr import (
    Constructor,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
)

_WILD = PatternWildcard()

Row = tuple[Pattern, ...]
ConstructorsOf = Callable[[Constructor], Sequence[Constructor] | None]


def missing_case(patterns: Sequence[Pattern], constructors_of: ConstructorsOf) -> str | None:
    """A description of a value no pattern matches, or ``None`` if ``patterns`` are
    exhaustive. ``constructors_of(c)`` lists every constructor of ``c``'s ADT (``None`` when
    unknown: the column is then treated as open, i.e. never complete)."""
    rows = [(p,) for p in patterns]
    witness = _witness(rows, 1, constructors_of)
    return None if witness is None else witness[0]


def _is_wild(p: Pattern) -> bool:
    return isinstance(p, PatternWildcard | PatternVar)


def _same_ctor(a: Constructor, b: Constructor) -> bool:
    return a is b or (a.name == b.name and a.belong_to.name == b.belong_to.name)


def _ctor_text(c: Constructor, fields: Sequence[str]) -> str:
    return c.name if not fields else f"{c.name}({', '.join(fields)})"


def _witness(rows: list[Row], n: int, constructors_of: ConstructorsOf) -> list[str] | None:
    """A vector of ``n`` value descriptions matched by no row, or ``None``."""
    if n == 0:
        return None if rows else []
    heads = [row[0] for row in rows]
    tuples = [p for p in heads if isinstance(p, PatternTuple)]
    if tuples:
        k = len(tuples[0].patterns)
        spec: list[Row] = []
        for row in rows:
            head = row[0]
            if isinstance(head, PatternTuple):
                spec.append(tuple(_fit(head.patterns, k)) + row[1:])
            elif _is_wild(head):
                spec.append((_WILD,) * k + row[1:])
        w = _witness(spec, k + n - 1, constructors_of)
        if w is None:
            return None
        inner = w[:k]
        text = f"({inner[0]},)" if k == 1 else "(" + ", ".join(inner) + ")"
        return [text] + w[k:]
    seen: list[Constructor] = []
    for p in heads:
        if isinstance(p, PatternConstructor) and not any(
                _same_ctor(p.constructor, c) for c in seen):
            seen.append(p.constructor)
    everything = constructors_of(seen[0]) if seen else None
    if seen and everything is not None and all(
            any(_same_ctor(c, s) for s in seen) for c in everything):
        # The column names every constructor: each must be covered.
        for c in everything:
            arity = len(c.inputs)
            spec = []
            for row in rows:
                head = row[0]
                if isinstance(head, PatternConstructor):
                    if _same_ctor(head.constructor, c):
                        spec.append(tuple(_fit(head.patterns, arity)) + row[1:])
                elif _is_wild(head):
                    spec.append((_WILD,) * arity + row[1:])
            w = _witness(spec, arity + n - 1, constructors_of)
            if w is not None:
                return [_ctor_text(c, w[:arity])] + w[arity:]
        return None
    # Some constructor (or, with no constructors, any value) is left to the wildcards.
    default = [row[1:] for row in rows if _is_wild(row[0])]
    w = _witness(default, n - 1, constructors_of)
    if w is None:
        return None
    if seen and everything is not None:
        absent = next(c for c in everything if not any(_same_ctor(c, s) for s in seen))
        return [_ctor_text(absent, ["_"] * len(absent.inputs))] + w
    return ["_"] + w


def _fit(patterns: Sequence[Pattern], k: int) -> list[Pattern]:
    """``patterns`` padded with wildcards / truncated to ``k`` (robustness only)."""
    out = list(patterns[:k])
    out.extend([_WILD] * (k - len(out)))
    return out
