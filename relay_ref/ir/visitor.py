"""Generic traversals over expressions, iterative so that deep programs do not overflow.

* ``post_order(expr)``: every distinct node (shared nodes once) with children first.
* ``free_vars(expr)``: local variables used but not bound in ``expr``, in first-use order.
"""

from __future__ import annotations

from collections.abc import Iterator

from relay_ref.ir.expr import (
    Expr,
    Function,
    Let,
    Match,
    Var,
    children,
    pattern_vars,
)


def post_order(expr: Expr) -> Iterator[Expr]:
    """Yield each node reachable from ``expr`` once, after all of its children."""
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        kids = list(children(node))
        for kid in reversed(kids):
            if id(kid) not in seen:
                stack.append((kid, False))


def free_vars(expr: Expr) -> list[Var]:
    """Local variables occurring free in ``expr`` (first occurrence order, no repeats)."""
    # Walk with an explicit stack of (node, set of vars bound around it).
    result: list[Var] = []
    found: set[Var] = set()
    stack: list[tuple[Expr, frozenset[Var]]] = [(expr, frozenset())]
    while stack:
        node, bound = stack.pop()
        match node:
            case Var():
                if node not in bound and node not in found:
                    found.add(node)
                    result.append(node)
            case Let(var, value, body):
                inner = bound | {var}
                stack.append((body, inner))
                # A let-bound function may refer to itself.
                stack.append((value, inner if isinstance(value, Function) else bound))
            case Function(params, body):
                stack.append((body, bound | set(params)))
            case Match(data, clauses):
                for clause in reversed(clauses):
                    stack.append((clause.rhs, bound | set(pattern_vars(clause.lhs))))
                stack.append((data, bound))
            case _:
                for kid in reversed(list(children(node))):
                    stack.append((kid, bound))
    return result
