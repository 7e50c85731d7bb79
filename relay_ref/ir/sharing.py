"""Where a shared node is evaluated: TVM's lowest-common-scope rule (spec/semantics.md 2.3,
E-Shared 3.18), one analysis for the interpreter, ToANormalForm, PartialEvaluate and the
executor.

TVM's ToANormalForm (``to_a_normal_form.cc``: ``CalcScope`` over the ``DependencyGraph`` of
``dependency_graph.cc``, then ``Fill``) gives every node a *scope* and binds it in that
scope's let-list when its depth-first walk first reaches it. Scopes form a tree: the root's;
a ``fn`` literal's body; each ``if`` branch; each ``match`` clause; and each ``let``'s value
and body together. A node's scope is the lowest common ancestor of the scopes of its uses
(an edge into a branch, clause, body or ``let`` counts as the child scope of its parent's
scope, any other edge as the parent's scope). So a node is evaluated once per activation of
its scope, which for a node used inside a ``fn`` literal and outside it is the enclosing
activation: the closure captures its value (TVM's ANF binds it before the closure).

``sharing_plan(root)`` computes, for one root (a global function, or an expression
evaluated on its own), what the evaluators need:

* ``scopes``: each non-atomic node's scope (``Scope``), and ``child_scope(node, k)`` the
  scope that edge ``k`` of ``node`` (its ``children`` index) opens, if any;
* ``anchors``: node ``X`` -> the shared nodes to evaluate just before ``X`` enters its
  sub-scopes (a ``fn`` literal: before its closure is made; an ``if``: after the condition,
  before the branch; a ``match``: after the scrutinee; a ``let``: before its value), in
  the order the walk reached them. A shared node is anchored when the walk first reaches
  it inside a sub-scope of its own scope: TVM's ``Fill`` pushes it onto its scope's
  let-list at that moment, ahead of the innermost node of that scope being visited,
  which is ``X``. Otherwise it is evaluated at its first use (where ``Fill`` binds it);
* ``captures``: ``fn`` literal -> the shared nodes whose scope is outside it and that are
  used inside it (in its body or a nested literal): its closure captures their values.

Invariants: linear in the number of distinct nodes plus edges, times the logarithm of the
scope depth (lowest common ancestors by skew-binary jump pointers; a 10 000-binding ``let``
chain is 10 000 nested scopes); iterative; nodes are keys by identity. Atoms (variables,
globals, operators, constructors, constants) have no scope: they are never shared.
The walk visits children in evaluation order (``children``: a call's callee before its
arguments), where TVM's ``Fill`` visits a call's arguments before its callee; the two differ
only for a compound callee, which is never shared in practice.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field

from relay_ref.ir.expr import (
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Var,
    children,
)
from relay_ref.ir.module import IRModule

__all__ = ["Scope", "SharingPlan", "module_sharing_plan", "plan_of_function", "sharing_plan"]

_ATOMS = (Var, GlobalVar, Op, Constant, Constructor)


class Scope:
    """A node of the scope tree. ``fn`` is the ``fn`` literal whose activation evaluates
    the scope (None: the root's activation); ``level`` its depth; ``jump`` a skew-binary
    jump pointer (an ancestor), so that ancestors and common ancestors take O(log level)."""

    __slots__ = ("parent", "level", "jump", "fn", "owner")

    def __init__(self, parent: Scope | None, fn: Function | None, owner: Expr | None) -> None:
        self.parent = parent if parent is not None else self
        self.fn = fn
        self.owner = owner  # the node whose sub-scope this is (None: the root scope)
        if parent is None:
            self.level = 0
            self.jump = self
        else:
            self.level = parent.level + 1
            j = parent.jump
            self.jump = j.jump if parent.level - j.level == j.level - j.jump.level else parent


def _ancestor_at(s: Scope, level: int) -> Scope:
    while s.level > level:
        s = s.jump if s.jump.level >= level else s.parent
    return s


def _lca(a: Scope, b: Scope) -> Scope:
    if a is b:
        return a
    if a.level > b.level:
        a = _ancestor_at(a, b.level)
    elif b.level > a.level:
        b = _ancestor_at(b, a.level)
    while a is not b:
        if a.jump is not b.jump:
            a, b = a.jump, b.jump
        else:
            a, b = a.parent, b.parent
    return a


def _scope_group(node: Expr, k: int) -> int | None:
    """Which sub-scope edge ``k`` of ``node`` (a ``children`` index) opens, or None: a
    ``let``'s value and body share one (TVM's dependency graph gives the ``let`` one scope
    node for its variable, value and body)."""
    kind = type(node)
    if kind is Let or kind is Function:
        return 0
    if kind is If or kind is Match:
        return k if k > 0 else None
    return None


@dataclass(frozen=True)
class SharingPlan:
    """The result of ``sharing_plan`` (see the module docstring). Maps are keyed by node
    identity (expression nodes hash by identity)."""

    root: Scope
    scopes: Mapping[Expr, Scope] = field(default_factory=dict)
    sub_scopes: Mapping[tuple[int, int], Scope] = field(default_factory=dict)
    anchors: Mapping[Expr, tuple[Expr, ...]] = field(default_factory=dict)
    captures: Mapping[Function, tuple[Expr, ...]] = field(default_factory=dict)
    #: the nodes with more than one incoming edge under the root
    shared: frozenset[Expr] = frozenset()
    #: a merged plan (``module_sharing_plan``): the per-root plans it is made of
    parts: tuple[SharingPlan, ...] = ()

    def child_scope(self, node: Expr, k: int) -> Scope | None:
        """The scope edge ``k`` of ``node`` opens, or None (the edge stays in ``node``'s)."""
        group = _scope_group(node, k)
        return None if group is None else self.sub_scopes.get((id(node), group))

    @property
    def hoists(self) -> bool:
        """Whether some shared node is evaluated elsewhere than at its first use in its
        activation (anchored, or captured by a closure)."""
        return bool(self.anchors) or bool(self.captures)


def sharing_plan(root: Expr) -> SharingPlan:
    """The scopes, anchors and captures of the program under ``root`` (module docstring)."""
    edges, order = _edges(root)
    tree = _ScopeTree(root)
    shared = _lowest_common_scopes(root, edges, order, tree)
    if not shared:
        return _register(SharingPlan(tree.top, tree.scopes, tree.sub_scopes), order)
    shared_set = frozenset(shared)
    captures = _captures(shared, edges, tree)
    anchors = _anchors(root, shared_set, tree)
    return _register(SharingPlan(tree.top, tree.scopes, tree.sub_scopes, anchors, captures,
                                 shared_set), order)


def _edges(root: Expr) -> tuple[dict[Expr, list[tuple[Expr, int]]], list[Expr]]:
    """One depth-first walk in evaluation order: the incoming edges of every non-atomic node
    (parent, ``children`` index) and a post-order (its reverse is a topological order:
    parents first)."""
    edges: dict[Expr, list[tuple[Expr, int]]] = {}
    order: list[Expr] = []
    seen: set[int] = {id(root)}
    stack: list[tuple[Expr, tuple[Expr, ...], int]] = [(root, tuple(children(root)), 0)]
    while stack:
        node, kids, i = stack[-1]
        if i == len(kids):
            stack.pop()
            order.append(node)
            continue
        stack[-1] = (node, kids, i + 1)
        kid = kids[i]
        if isinstance(kid, _ATOMS):
            continue
        got = edges.get(kid)
        if got is None:
            edges[kid] = [(node, i)]
        else:
            got.append((node, i))
        if id(kid) not in seen:
            seen.add(id(kid))
            stack.append((kid, tuple(children(kid)), 0))
    return edges, order


class _ScopeTree:
    """The scopes found so far: each node's, and the sub-scopes edges open (made on
    demand, ``contrib``)."""

    def __init__(self, root: Expr) -> None:
        self.top = Scope(None, None, None)
        self.scopes: dict[Expr, Scope] = {root: self.top}
        self.sub_scopes: dict[tuple[int, int], Scope] = {}

    def contrib(self, parent: Expr, k: int) -> Scope:
        """The scope edge ``k`` of ``parent`` is in (``parent``'s scope must be known)."""
        group = _scope_group(parent, k)
        here = self.scopes[parent]
        if group is None:
            return here
        key = (id(parent), group)
        sub = self.sub_scopes.get(key)
        if sub is None:
            fn = parent if type(parent) is Function else here.fn
            sub = self.sub_scopes[key] = Scope(here, fn, parent)
        return sub

    def make_all_sub_scopes(self, order: list[Expr]) -> None:
        """Every sub-scope of every node, also of an edge with nothing under it (a ``fn``
        body that is an atom), so ``SharingPlan.child_scope`` always answers."""
        for node in order:
            kind = type(node)
            if kind is Let or kind is Function:
                self.contrib(node, 0)
            elif kind is If:
                self.contrib(node, 1)
                self.contrib(node, 2)
            elif kind is Match:
                for k in range(1, len(node.clauses) + 1):
                    self.contrib(node, k)


def _lowest_common_scopes(root: Expr, edges: Mapping[Expr, list[tuple[Expr, int]]],
                          order: list[Expr], tree: _ScopeTree) -> list[Expr]:
    """CalcScope: each node's scope, the lowest common ancestor of its edges' scopes,
    parents before children; returns the shared nodes (more than one incoming edge) in
    topological order."""
    shared: list[Expr] = []
    for node in reversed(order):
        if node is root:
            continue
        uses = edges[node]
        s = tree.contrib(*uses[0])
        for parent, k in uses[1:]:
            s = _lca(s, tree.contrib(parent, k))
        tree.scopes[node] = s
        if len(uses) > 1:
            shared.append(node)
    tree.make_all_sub_scopes(order)
    return shared


def _captures(shared: list[Expr], edges: Mapping[Expr, list[tuple[Expr, int]]],
              tree: _ScopeTree) -> dict[Function, tuple[Expr, ...]]:
    """Each use of a shared node inside a ``fn`` literal nested in its scope: that literal
    (and every literal between it and the scope) captures the node."""
    captures: dict[Function, dict[Expr, None]] = {}
    for node in shared:
        target = tree.scopes[node].fn
        for parent, k in edges[node]:
            fn = tree.contrib(parent, k).fn
            while fn is not target and fn is not None:
                got = captures.setdefault(fn, {})
                if node in got:
                    break
                got[node] = None
                fn = tree.scopes[fn].fn
    return {f: tuple(ns) for f, ns in captures.items()}


def _anchors(root: Expr, shared: frozenset[Expr],
             tree: _ScopeTree) -> dict[Expr, tuple[Expr, ...]]:
    """Walk again in the same order with the path; at a shared node's first visit, the
    innermost node on the path in the node's scope, if the path leaves that scope through
    one of its sub-scope edges (Fill's push onto the scope's let-list)."""
    scopes = tree.scopes
    anchors: dict[Expr, list[Expr]] = {}
    by_scope: dict[Scope, list[int]] = {}
    path: list[list] = []  # [node, kids, next index]
    seen = {id(root)}

    def enter(node: Expr) -> None:
        path.append([node, tuple(children(node)), 0])
        by_scope.setdefault(scopes[node], []).append(len(path) - 1)

    enter(root)
    while path:
        entry = path[-1]
        node, kids, i = entry
        if i == len(kids):
            path.pop()
            by_scope[scopes[node]].pop()
            continue
        entry[2] = i + 1
        kid = kids[i]
        if isinstance(kid, _ATOMS) or id(kid) in seen:
            continue
        seen.add(id(kid))
        if kid in shared:
            s = scopes[kid]
            at = by_scope.get(s)
            if at:
                depth = at[-1]
                x, _, nxt = path[depth]
                # the edge x took: the child it is walking now (index nxt - 1)
                if _scope_group(x, nxt - 1) is not None and tree.contrib(x, nxt - 1) is not s:
                    anchors.setdefault(x, []).append(kid)
        enter(kid)
    return {x: tuple(ns) for x, ns in anchors.items()}


#: id(fn literal or root function) -> the live plan it is part of (a closure made by one
#: evaluation and applied by another finds its function's plan here)
_BY_FUNCTION: weakref.WeakValueDictionary[int, SharingPlan] = weakref.WeakValueDictionary()


def _register(plan: SharingPlan, nodes: list[Expr]) -> SharingPlan:
    for node in nodes:
        if type(node) is Function:
            _BY_FUNCTION[id(node)] = plan
    return plan


def plan_of_function(fn: Function) -> SharingPlan | None:
    """The plan of the root ``fn`` is part of, while that plan lives (it keeps ``fn``
    alive, so the identity key is unambiguous), else None."""
    return _BY_FUNCTION.get(id(fn))


_MODULE_CACHE: weakref.WeakKeyDictionary[IRModule, SharingPlan] = weakref.WeakKeyDictionary()


def module_sharing_plan(module: IRModule, roots: tuple[Expr, ...] = ()) -> SharingPlan:
    """The anchors and captures of every function of ``module`` (each its own root, as
    TVM converts each global on its own) and of ``roots``, merged (scopes are left out:
    they are per root). The module's part is cached per module object."""
    cached = _MODULE_CACHE.get(module)
    if cached is None:
        cached = _merge([sharing_plan(f) for f in module.functions.values()])
        _MODULE_CACHE[module] = cached
    if not roots:
        return cached
    return _merge([cached, *(sharing_plan(r) for r in roots)])


def _merge(plans: list[SharingPlan]) -> SharingPlan:
    anchors: dict[Expr, tuple[Expr, ...]] = {}
    captures: dict[Function, tuple[Expr, ...]] = {}
    shared: set[Expr] = set()
    parts: list[SharingPlan] = []
    for plan in plans:
        for x, ns in plan.anchors.items():
            anchors.setdefault(x, ns)
        for f, ns in plan.captures.items():
            captures.setdefault(f, ns)
        shared |= plan.shared
        parts.extend(plan.parts or (plan,))
    return SharingPlan(Scope(None, None, None), {}, {}, anchors, captures, frozenset(shared),
                       tuple(parts))
