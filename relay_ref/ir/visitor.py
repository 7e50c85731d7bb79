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
    """Local variables occurring free in ``expr`` (first occurrence order, no repeats).

    Linear in the number of distinct nodes: every reachable node is visited once (shared
    nodes too), the variables used are collected in first-use order, and those bound
    anywhere inside ``expr`` (let, function parameters, pattern variables) are dropped.
    This relies on the IR's binding invariant: a ``Var`` object is bound by at most one
    binder and used only in that binder's scope (what the parser builds and the type
    checker enforces), as TVM's ``FreeVars`` does."""
    used: list[Var] = []
    bound: set[Var] = set()
    for node in post_order(expr):
        match node:
            case Var():
                used.append(node)
            case Let(var):
                bound.add(var)
            case Function(params):
                bound.update(params)
            case Match(_, clauses):
                for clause in clauses:
                    bound.update(pattern_vars(clause.lhs))
    return [v for v in used if v not in bound]
