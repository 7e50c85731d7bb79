"""Generic traversals over expressions, iterative so that deep programs do not overflow.

* ``post_order(expr, enter=, seen=)``: every distinct node (shared nodes once) with
  children first; ``children_in_activation`` and ``children_outside`` are its usual hooks.
* ``shared_nodes(module, roots)``: the non-atomic nodes with several parents.
* ``free_vars(expr)``: local variables used but not bound in ``expr``, in first-use order.
* ``dataflow_operands(expr)``: the operands a call, tuple or projection evaluates first.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator

from relay_ref.ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
    pattern_vars,
)
from relay_ref.ir.module import IRModule


def post_order(expr: Expr, *, enter: Callable[[Expr], Iterable[Expr]] = children,
               seen: set[int] | None = None) -> Iterator[Expr]:
    """Yield each node reachable from ``expr`` once, after all of the children it enters.

    Invariants: every node is yielded after each of its entered children (so consumers can
    read their children's results from a table); a node reachable along several paths
    (shared) is yielded once; siblings come left to right. Iterative (a 10 000-deep chain
    is fine) and linear in the number of distinct nodes: the memo is by node identity.

    Hooks the passes need:

    * ``enter(node)``: the children to walk into (default: all, function bodies included).
      ``children_in_activation`` stops at ``fn`` literals (ToANormalForm's regions);
      ``children_outside(pred)`` stops at functions matching ``pred`` (FuseOps: not inside
      ``Primitive`` functions), which are still yielded themselves. ``enter`` must return
      nodes that exist while ``expr`` does (identity is the memo key).
    * ``seen``: a set of node ids shared between calls: a node already in it is neither
      walked nor yielded, and every yielded node is added, so walking several roots of one
      program visits their shared nodes once. The caller keeps those nodes alive."""
    visited: set[int] = set() if seen is None else seen
    if id(expr) in visited:
        return
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        kids = tuple(enter(node))
        for kid in reversed(kids):
            if id(kid) not in visited:
                stack.append((kid, False))


def dataflow_operands(node: Expr) -> tuple[Expr, ...]:
    """What a dataflow node evaluates before itself: a call's arguments, a tuple's fields,
    a projection's tuple; ``()`` for any other node (its callee, for a call, is not among
    them: the walks that use this treat it as an atom)."""
    kind = type(node)
    if kind is Call:
        return node.args
    if kind is Tuple:
        return node.fields
    if kind is TupleGetItem:
        return (node.tuple_value,)
    return ()


def children_in_activation(node: Expr) -> tuple[Expr, ...]:
    """``node``'s children evaluated in the same activation: a ``fn`` literal's body is
    not (it runs when the closure is called), so a ``Function`` has none here."""
    if type(node) is Function:
        return ()
    return tuple(children(node))


def children_outside(stop: Callable[[Function], bool], root: Expr | None = None
                     ) -> Callable[[Expr], tuple[Expr, ...]]:
    """An ``enter`` hook for ``post_order`` that does not enter functions for which
    ``stop`` holds (they are yielded, their bodies not walked), except ``root``."""
    def enter(node: Expr) -> tuple[Expr, ...]:
        if type(node) is Function and node is not root and stop(node):
            return ()
        return tuple(children(node))
    return enter


_ATOMS = (Var, GlobalVar, Op, Constant, Constructor)
_SHARED_CACHE: weakref.WeakKeyDictionary[IRModule, frozenset[Expr]] = (
    weakref.WeakKeyDictionary())


def shared_nodes(module: IRModule, roots: tuple[Expr, ...] = ()) -> frozenset[Expr]:
    """Non-atomic nodes with more than one incoming edge (graph-bound: E-Shared, spec
    semantics 3.18), over every function of ``module`` and the extra ``roots``.

    Invariant: a node is in the result exactly when two parent edges (counting each edge,
    so ``add(%a, %a)`` shares ``%a``) in the walked program point at it; variables,
    globals, operators, constants and constructors are atoms and never counted. The
    module's part is cached per module object (modules are immutable values)."""

    def count(exprs: list[Expr]) -> set[Expr]:
        seen: set[Expr] = set()
        shared: set[Expr] = set()
        for root in exprs:
            for node in post_order(root):
                for kid in children(node):
                    if isinstance(kid, _ATOMS):
                        continue
                    if kid in seen:
                        shared.add(kid)
                    seen.add(kid)
        return shared

    cached = _SHARED_CACHE.get(module)
    if cached is None:
        cached = frozenset(count(list(module.functions.values())))
        _SHARED_CACHE[module] = cached
    if not roots:
        return cached
    return cached | count(list(roots))


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
