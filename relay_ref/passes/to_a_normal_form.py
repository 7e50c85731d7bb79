"""ToANormalForm (TVM's ``to_a_normal_form.cc``): every non-atomic sub-expression let-bound.

Guarantee. In the result, the arguments of calls, the fields of tuples, the operands of
projections, ``if`` conditions, ``match`` scrutinees and the operands of reference
expressions are atoms (variables, globals, operators, constructors, constants); every
other expression is the value of a ``let`` (or the tail of a block). Each node of the input
graph is bound exactly once, so a node shared by several users (a graph binding) is
computed once, as before, and the result has no sharing left. Evaluation order is kept:
bindings appear in the order the interpreter evaluates the nodes (left to right, a
``let``'s value before its body). The result type-checks with the same types and gives the
same values.

Scopes (as TVM's ``CalcScope``). Function bodies, ``if`` branches and ``match`` clauses open
a scope; a node is bound in the lowest common ancestor of the scopes of all its uses, at the
point where it is first evaluated. So a node used only inside a branch (or a function) is
bound there, never outside; a node used both inside a branch and after the ``if`` is bound
before the ``if``, never inside a branch or a ``fn`` from which the later use could not see
it. (Such a node was evaluated at its first use, inside the branch; it now runs before the
``if``: for the pure nodes converters produce this changes nothing.)

Departures from TVM: constants stay inline (TVM binds them too, though it calls them
atomic); functions with ``Primitive=1`` are left alone, as TVM does. Nested ``let`` values
are flattened (``let %a = (let %b = e; f); ...`` becomes ``let %b = e; let %a = f; ...``),
as TVM's ``Compound`` does; binders are unique objects, so nothing is captured.

Cost: linear in the number of distinct nodes (scope LCAs walk the scope tree, whose height
is the nesting of functions, branches and clauses); recursion runs on a deep stack.
"""

from __future__ import annotations

from dataclasses import replace

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import (
    Call,
    Clause,
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
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import post_order
from relay_ref.passes.base import Pass, register_pass

ATOMS = (Var, GlobalVar, Op, Constructor, Constant)


class _Scope:
    __slots__ = ("parent", "depth", "bindings")

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.bindings: list[tuple[Var, Expr]] = []


def _lca(a: _Scope, b: _Scope) -> _Scope:
    while a is not b:
        if a.depth > b.depth:
            a = a.parent  # type: ignore[assignment]
        elif b.depth > a.depth:
            b = b.parent  # type: ignore[assignment]
        else:
            a, b = a.parent, b.parent  # type: ignore[assignment]
    return a


def _is_primitive(fn: Function) -> bool:
    return bool(fn.attr("Primitive", 0))


def _child_scopes(node: Expr, scope: _Scope) -> list[_Scope]:
    """The scope of each child edge of ``node`` (``children`` order)."""
    match node:
        case Function():
            return [_Scope(scope)]
        case If():
            return [scope, _Scope(scope), _Scope(scope)]
        case Match(_, clauses):
            return [scope] + [_Scope(scope) for _ in clauses]
    return [scope] * len(tuple(children(node)))


def compute_scopes(body: Expr, root: _Scope) -> tuple[dict[int, _Scope], dict[int, list]]:
    """Each node's scope (LCA of its uses' scopes), and the scopes of each node's child
    edges. Parents come before children in reverse post-order (a topological order)."""
    order = list(post_order(body))
    scope: dict[int, _Scope] = {id(body): root}
    edge_scopes: dict[int, list[_Scope]] = {}
    for node in reversed(order):
        s = scope[id(node)]
        if isinstance(node, Function) and _is_primitive(node):
            edge_scopes[id(node)] = [s]
            continue
        kid_scopes = _child_scopes(node, s)
        edge_scopes[id(node)] = kid_scopes
        for kid, ks in zip(children(node), kid_scopes, strict=True):
            old = scope.get(id(kid))
            scope[id(kid)] = ks if old is None else _lca(old, ks)
    return scope, edge_scopes


class _Filler:
    """Builds the A-normal form of one global function's body."""

    def __init__(self, body: Expr) -> None:
        self.root = _Scope(None)
        self.scope, self.edges = compute_scopes(body, self.root)
        self.memo: dict[int, Expr] = {}

    def block(self, scope: _Scope, tail: Expr) -> Expr:
        """Wrap ``tail`` in the bindings made in ``scope``."""
        out = tail
        for var, value in reversed(scope.bindings):
            out = Let(var, value, out)
        return out

    def sub(self, node: Expr, i: int, kid: Expr) -> Expr:
        """The block of child ``i`` of ``node`` (a branch, a clause or a body)."""
        s = self.edges[id(node)][i]
        return self.block(s, self.atom(kid))

    def atom(self, node: Expr, target: Var | None = None,
             where: _Scope | None = None) -> Expr:
        """An atom with the value of ``node`` (bound in its scope unless it is one); with
        ``target`` (a ``let``'s variable, the ``let`` being in scope ``where``), ``node``'s
        value is bound to ``target`` instead of a fresh variable."""
        done = self.memo.get(id(node))
        if done is not None:
            if target is not None:
                where.bindings.append((target, done))  # type: ignore[union-attr]
                return target
            return done
        if isinstance(node, ATOMS) or (isinstance(node, Function) and _is_primitive(node)):
            self.memo[id(node)] = node
            if target is not None:
                where.bindings.append((target, node))  # type: ignore[union-attr]
                return target
            return node
        if isinstance(node, Let):
            s = self.scope[id(node)]
            self.atom(node.value, node.var, s)
            out = self.atom(node.body)
            if target is not None:
                where.bindings.append((target, out))  # type: ignore[union-attr]
                out = target
            self.memo[id(node)] = out
            return out
        value = self.compound(node)
        var = target if target is not None else Var("x")
        self.scope[id(node)].bindings.append((var, value))
        self.memo[id(node)] = var
        return var

    def compound(self, node: Expr) -> Expr:
        """``node`` rebuilt with atomic operands (and blocks for its sub-scopes)."""
        match node:
            case Tuple(fields):
                return replace(node, fields=tuple(self.atom(f) for f in fields))
            case TupleGetItem(tup):
                return replace(node, tuple_value=self.atom(tup))
            case Call(op, args):
                new_op = self.atom(op)
                return replace(node, op=new_op, args=tuple(self.atom(a) for a in args))
            case Function(_, body):
                return replace(node, body=self.sub(node, 0, body))
            case If(cond, t, f):
                c = self.atom(cond)
                return replace(node, cond=c, true_branch=self.sub(node, 1, t),
                               false_branch=self.sub(node, 2, f))
            case Match(data, clauses):
                d = self.atom(data)
                return replace(node, data=d, clauses=tuple(
                    Clause(c.lhs, self.sub(node, i + 1, c.rhs), c.span)
                    for i, c in enumerate(clauses)))
            case RefCreate(value):
                return replace(node, value=self.atom(value))
            case RefRead(ref):
                return replace(node, ref=self.atom(ref))
            case RefWrite(ref, value):
                r = self.atom(ref)
                return replace(node, ref=r, value=self.atom(value))
        raise TypeError(f"ToANormalForm: unexpected {type(node).__name__}")

    def function(self, fn: Function) -> Function:
        tail = self.atom(fn.body)
        return replace(fn, body=self.block(self.root, tail))


def to_a_normal_form_function(fn: Function) -> Function:
    """The A-normal form of a global function (see the module docstring)."""
    if _is_primitive(fn):
        return fn
    return run_deep(lambda: _Filler(fn.body).function(fn))


@register_pass
class ToANormalForm(Pass):
    """Let-bind every non-atomic sub-expression (see the module docstring)."""

    name = "ToANormalForm"
    opt_level = 1

    def __call__(self, mod: IRModule) -> IRModule:
        functions = {n: to_a_normal_form_function(f) for n, f in mod.functions.items()}
        return replace(mod, functions=functions, checked_types={}, global_types={})
