"""ToANormalForm (TVM's ``to_a_normal_form.cc``): every non-atomic sub-expression let-bound.

Guarantee. The result type-checks with the same types and has the input's meaning under
the interpreter's semantics (spec/semantics.md 2.3, E-Shared 3.18): the same value, or the
same failure, with the same reference effects in the same order. In the result the
arguments of calls, the fields of tuples, the operands of projections, ``if`` conditions,
``match`` scrutinees and the operands of reference expressions are atoms (variables,
globals, operators, constructors, constants, ``Primitive=1`` functions); every other
expression is the value of a ``let`` (or the tail of a block), and no node is shared.
Functions with ``Primitive=1`` are left alone, bodies in graph form (as TVM does).

Algorithm: TVM's, on the scopes of ``relay_ref.ir.sharing`` (``CalcScope``): each global
function is converted on its own; scopes are the function's body, each ``fn`` literal's
body, ``if`` branches, ``match`` clauses and ``let``s; a node is bound in the let-list of
its scope, the lowest common scope of its uses, when the depth-first walk (``Fill``, in
evaluation order) first reaches it, and every later use names that binding. So a shared
node used inside a ``fn`` literal and outside it is bound once, before the closure is
made, and the closure captures it; one used in a branch and after the ``if`` is bound
before the ``if`` (after its condition). That is exactly where the interpreter evaluates it
(E-Shared is defined by this placement), which is why the meaning is the same: the pass
makes the sharing explicit, it does not change it. A ``let`` body's let-list is flattened
into the enclosing one when the ``let`` is done (``let %a = (let %b = e; f); ...`` becomes
``let %b = e; let %a = f; ...``), as TVM's ``Compound`` does.

Departures from TVM, none observable: constants stay inline (TVM binds them too, though it
calls them atomic); a block whose tail is an atom ends in that atom (TVM binds it to a fresh
variable first); ``let %y = a`` with an atom or an already bound node ``a`` is bound where
the ``let`` is (TVM binds it in the scope of ``a``, possibly earlier: both see ``a``); a
call's callee is visited before its arguments (TVM: after), matching evaluation order.

Cost: linear in the number of distinct nodes (the plan's cost, spec'd in
``relay_ref.ir.sharing``); the walk recurses along the nesting of expressions, so it runs on
a deep stack.
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
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.sharing import Scope, SharingPlan, sharing_plan
from relay_ref.passes.base import Pass, register_pass

ATOMS = (Var, GlobalVar, Op, Constructor, Constant)


def _is_primitive(fn: Function) -> bool:
    return bool(fn.attr("Primitive", 0))


def _is_atom(node: Expr) -> bool:
    return isinstance(node, ATOMS) or (isinstance(node, Function) and _is_primitive(node))


class _Fill:
    """TVM's ``Fill`` for one root: ``visit`` returns the atom naming a node's value,
    pushing its binding onto its scope's let-list the first time (``memo`` afterwards)."""

    def __init__(self, plan: SharingPlan, root: Function) -> None:
        self.plan = plan
        self.root = root
        self.memo: dict[Expr, Expr] = {}
        #: scope -> its bindings, in order; an item may be a finished ``let``'s list
        self.lists: dict[Scope, list] = {}

    def push(self, scope: Scope, var: Var, value: Expr) -> Var:
        self.lists.setdefault(scope, []).append((var, value))
        return var

    def get(self, scope: Scope | None, body: Expr) -> Expr:
        """The let-list of ``scope`` wrapped around ``body`` (TVM's ``LetList::Get``). A
        finished ``let``'s list sits in its parent's as one nested list (``Let`` below),
        flattened here once, so a long ``let`` chain costs linear time."""
        items = self.lists.pop(scope, None) if scope is not None else None
        if not items:
            return body
        flat: list[tuple[Var, Expr]] = []
        stack = [iter(items)]
        while stack:
            for item in stack[-1]:
                if type(item) is list:
                    stack.append(iter(item))
                    break
                flat.append(item)
            else:
                stack.pop()
        for var, value in reversed(flat):
            body = Let(var, value, body)
        return body

    def sub(self, node: Expr, k: int, body: Expr) -> Expr:
        """The block of ``node``'s sub-scope edge ``k`` around its converted ``body``."""
        return self.get(self.plan.child_scope(node, k), body)

    def visit(self, e: Expr, var: Var | None = None, at: Scope | None = None) -> Expr:
        """The atom for ``e``; with ``var``, ``e``'s value is bound to ``var`` (a ``let``'s
        variable), in scope ``at`` when ``e`` is an atom or already bound."""
        if _is_atom(e):
            return self.push(at, var, e) if var is not None and at is not None else e
        known = self.memo.get(e)
        if known is not None:
            if var is not None and at is not None:
                self.push(at, var, known)
            return known
        out = self.convert(e, var)
        self.memo[e] = out
        return out

    def compound(self, orig: Expr, now: Expr, var: Var | None) -> Expr:
        """Bind ``now`` (``orig`` rebuilt) in ``orig``'s scope; a ``let`` chain is
        flattened into that scope (TVM's ``Compound``)."""
        scope = self.plan.scopes[orig]
        while type(now) is Let:
            self.push(scope, now.var, now.value)
            now = now.body
        if var is None:
            if _is_atom(now):
                return now
            var = Var("x")
        return self.push(scope, var, now)

    def convert(self, e: Expr, var: Var | None) -> Expr:
        visit = self.visit
        match e:
            case Tuple(fields):
                return self.compound(e, replace(e, fields=tuple(visit(f) for f in fields)), var)
            case TupleGetItem(tup):
                return self.compound(e, replace(e, tuple_value=visit(tup)), var)
            case Call(op, args):
                new_op = visit(op)
                return self.compound(e, replace(e, op=new_op,
                                                args=tuple(visit(a) for a in args)), var)
            case RefCreate(value):
                return self.compound(e, replace(e, value=visit(value)), var)
            case RefRead(ref):
                return self.compound(e, replace(e, ref=visit(ref)), var)
            case RefWrite(ref, value):
                r = visit(ref)
                return self.compound(e, replace(e, ref=r, value=visit(value)), var)
            case If(cond, t, f):
                c = visit(cond)
                then = self.sub(e, 1, visit(t))
                return self.compound(e, replace(e, cond=c, true_branch=then,
                                                false_branch=self.sub(e, 2, visit(f))), var)
            case Match(data, clauses):
                d = visit(data)
                return self.compound(e, replace(e, data=d, clauses=tuple(
                    Clause(c.lhs, self.sub(e, k, visit(c.rhs)), c.span)
                    for k, c in enumerate(clauses, start=1))), var)
            case Function(_, body):
                fn = replace(e, body=self.sub(e, 0, visit(body)))
                if e is self.root:
                    return fn
                return self.compound(e, fn, var)
            case Let(v, value, body):
                # the let's own scope: its bindings move, as one nested list, into the
                # enclosing scope's list when it is done (TVM's Compound flattening)
                inner = self.plan.child_scope(e, 0)
                visit(value, v, inner)
                tail = visit(body)
                scope = self.plan.scopes[e]
                done = self.lists.pop(inner, None)
                if done:
                    self.lists.setdefault(scope, []).append(done)
                return tail if var is None else self.push(scope, var, tail)
        raise TypeError(f"ToANormalForm: unexpected {type(e).__name__}")


def convert_function(fn: Function) -> Function:
    """The A-normal form of one global function (not on a deep stack: see ``run_deep``)."""
    if _is_primitive(fn):
        return fn
    out = _Fill(sharing_plan(fn), fn).visit(fn)
    assert isinstance(out, Function)
    return out


def to_a_normal_form_function(fn: Function, mod: IRModule | None = None) -> Function:
    """The A-normal form of a function (see the module docstring); ``mod`` is unused (kept
    for callers of the earlier signature)."""
    del mod
    return run_deep(lambda: convert_function(fn))


@register_pass
class ToANormalForm(Pass):
    """Let-bind every non-atomic sub-expression (see the module docstring)."""

    name = "ToANormalForm"
    idempotent = True
    opt_level = 1

    def __call__(self, mod: IRModule) -> IRModule:
        functions = {n: run_deep(lambda f=f: convert_function(f))
                     for n, f in mod.functions.items()}
        return replace(mod, functions=functions, checked_types={}, global_types={})
