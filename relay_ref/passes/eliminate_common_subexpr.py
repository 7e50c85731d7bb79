"""EliminateCommonSubexpr (TVM's ``eliminate_common_subexpr.cc``): merge equal computations.

Guarantee. Two operator calls with the same operator, equal attributes, equal type
arguments and equivalent arguments become one node; so do two projections ``t.i`` of the
same tuple node. Arguments are equivalent when they are the same node *after* merging, or
equal scalar constants (TVM's ``IsEqualScalar``), or tuples of such. The later node is
replaced by the earlier one (which is then shared, a graph binding), or by the earlier one's
``let`` variable when the earlier node is a ``let`` value whose body contains the later one
and the later one has no other user. The result type-checks with the same types and gives
the same values: operator calls are pure (no stateful operator is registered; those in
``effects.STATEFUL_OPS`` and calls with no arguments are never merged, as in TVM).

Scope (stricter than TVM, which merges across branches): a node is merged into an earlier
one only when the earlier node's scope (function body, ``if`` branch or ``match`` clause it
sits in) encloses the later one's, so a computation is never moved into a place where it
was not evaluated before.

Cost: linear: each distinct node is hashed once, by ``(op, attrs, type args, identities of
its merged arguments)``; candidate lists are walked only for nodes with equal keys, and the
scope test walks the scope tree (height = nesting of functions, branches and clauses).
"""

from __future__ import annotations

from dataclasses import replace

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Match,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.effects import STATEFUL_OPS
from relay_ref.passes.rewrite import with_children


class _Scope:
    __slots__ = ("parent", "depth")

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1

    def encloses(self, other: _Scope) -> bool:
        s: _Scope | None = other
        while s is not None and s.depth > self.depth:
            s = s.parent
        return s is self


def _attrs_key(attrs: object) -> object:
    try:
        hash(attrs)
        return attrs
    except TypeError:
        return (type(attrs).__name__, repr(attrs))


class _CSE:
    def __init__(self, parents: dict[int, int]) -> None:
        self.parents = parents
        self.memo: dict[int, Expr] = {}
        self.table: dict[object, list[tuple[Expr, _Scope, Let | None]]] = {}
        self.let_of: dict[int, Let] = {}   # id of a let's (merged) value -> that let
        self.open_lets: set[Var] = set()   # variables whose let body is being visited
        self.in_shared = 0  # > 0 while visiting below a node with several users
        self.keep: list[Expr] = []

    def arg_key(self, arg: Expr) -> object:
        if isinstance(arg, Constant) and arg.data.ndim == 0:
            return ("const", str(arg.data.dtype), arg.data.tobytes())
        if isinstance(arg, Tuple):
            return ("tuple", tuple(self.arg_key(f) for f in arg.fields))
        return id(arg)

    def key(self, node: Expr) -> object | None:
        match node:
            case Call(Op(name), args, attrs, type_args) if args and name not in STATEFUL_OPS:
                return ("call", name, _attrs_key(attrs), type_args,
                        tuple(self.arg_key(a) for a in args))
            case TupleGetItem(tup, index):
                return ("proj", id(tup), index)
        return None

    def visit(self, node: Expr, scope: _Scope) -> Expr:
        got = self.memo.get(id(node))
        if got is not None:
            return got
        shared = self.parents.get(id(node), 0) > 1
        self.in_shared += shared
        match node:
            case Let(var, value, body):
                new_value = self.visit(value, scope)
                self.open_lets.add(var)
                self.let_of.setdefault(id(new_value), node)
                new_body = self.visit(body, scope)
                self.open_lets.discard(var)
                out = with_children(node, (new_value, new_body))
            case Function(_, body):
                out = with_children(node, (self.visit(body, _Scope(scope)),))
            case If(cond, t, f):
                c = self.visit(cond, scope)
                out = with_children(node, (c, self.visit(t, _Scope(scope)),
                                           self.visit(f, _Scope(scope))))
            case Match(data, clauses):
                d = self.visit(data, scope)
                out = with_children(node, [d] + [self.visit(c.rhs, _Scope(scope))
                                                 for c in clauses])
            case _:
                out = with_children(node, [self.visit(k, scope) for k in children(node)])
                out = self.merge(node, out, scope)
        self.in_shared -= shared
        self.memo[id(node)] = out
        self.keep.append(node)
        return out

    def merge(self, orig: Expr, node: Expr, scope: _Scope) -> Expr:  # noqa: ARG002
        key = self.key(node)
        if key is None:
            return node
        try:
            candidates = self.table.setdefault(key, [])
        except TypeError:  # an unhashable attribute value: never merged
            return node
        for cand, cand_scope, _ in candidates:
            if not cand_scope.encloses(scope):
                continue
            let = self.let_of.get(id(cand))
            if let is not None and let.var in self.open_lets and not self.in_shared:
                # ``orig`` is reached only through the let's body: its variable is in scope
                return let.var
            return cand
        candidates.append((node, scope, None))
        return node


def _parent_counts(body: Expr) -> dict[int, int]:
    from relay_ref.ir.visitor import post_order

    counts: dict[int, int] = {}
    for node in post_order(body):
        for kid in children(node):
            counts[id(kid)] = counts.get(id(kid), 0) + 1
    return counts


def cse_function(fn: Function) -> Function:
    """``fn`` with common sub-expressions merged (see the module docstring)."""
    def job() -> Function:
        body = _CSE(_parent_counts(fn.body)).visit(fn.body, _Scope(None))
        return fn if body is fn.body else replace(fn, body=body)
    return run_deep(job)


@register_pass
class EliminateCommonSubexpr(Pass):
    """Merge equal pure operator calls and projections (see the module docstring)."""

    name = "EliminateCommonSubexpr"
    idempotent = True
    opt_level = 3

    def __call__(self, mod: IRModule) -> IRModule:
        functions = {n: cse_function(f) for n, f in mod.functions.items()}
        if all(functions[n] is f for n, f in mod.functions.items()):
            return mod
        return replace(mod, functions=functions, checked_types={}, global_types={})
