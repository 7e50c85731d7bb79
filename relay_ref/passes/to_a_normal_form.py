"""ToANormalForm (TVM's ``to_a_normal_form.cc``): every non-atomic sub-expression let-bound.

Guarantee. The result type-checks with the same types and *refines* the input under the
interpreter's semantics (spec/semantics.md 2.3: a graph-shared node is evaluated once per
function activation, at its first use): where the input returns a value, the result returns
the same one, with the same reference effects in the same order. In the result the
arguments of calls, the fields of tuples, the operands of projections, ``if`` conditions,
``match`` scrutinees and the operands of reference expressions are atoms (variables,
globals, operators, constructors, constants, ``Primitive=1`` functions); every other
expression is the value of a ``let`` (or the tail of a block). Bindings appear in the order
the interpreter evaluates the nodes (left to right, a ``let``'s value before its body).
Functions with ``Primitive=1`` are left alone, bodies in graph form (as TVM does).

Where a node is bound. Each function body (the global's, or a ``fn`` literal's) is converted
on its own, because the interpreter evaluates a shared node once per *activation*: a node
used inside a ``fn`` and outside it is bound in each (inside: in every call, as before).
Within one body, ``if`` branches and ``match`` clauses open scopes, and a node reached
through several edges (a graph binding) is bound as follows:

* *Safe* nodes (pure and cannot fail, see ``_Info.total``) are bound in the lowest common
  ancestor of the scopes of their uses (TVM's ``CalcScope``), where first reached, but
  never above the binding of a variable they read. Moving them earlier cannot change a
  result: they have no effect, always terminate and never fail.
* Every other node is bound where the interpreter first evaluates it: at its first use, in
  the scope of that use. A later use that sees that binding (same scope or nested in it)
  reuses it. A use in an exclusive branch (another arm of the same ``if``/``match``) binds
  its own copy: only one arm runs, so effects happen once, as in the input. A pure node
  (no reference effects) that is used again where the first binding is not visible is
  bound again there: evaluating it twice gives the same value (or the same failure).
* *Graph form*: the remaining nodes (a reference effect whose first use is conditional and
  a later use is not exclusive with it, or a node containing binders -- ``let``, ``match``,
  ``fn`` -- that would be copied) are not copied: the node is converted once into one
  block (a ``let`` chain ending in the node, itself in A-normal form) and that *same*
  object is the value of a ``let`` at each use, ``let %x1 = B; ... let %x2 = B``. The
  result then keeps this sharing, and the interpreter evaluates ``B`` once per activation
  at its first use, exactly as it evaluated the input's node. Such nodes are the only
  sharing left in the result; binders are never duplicated.

"Cannot fail" (``_Info.total``), decided conservatively: variables, constants, globals,
operators, constructors, function literals (a closure is made, its body does not run), and
tuples, projections, constructor calls and operator calls built only from such nodes, where
the operator is elementwise or broadcast (``OpPattern`` ELEMWISE/BROADCAST), in the core or
``nn.`` namespace, not one of ``PARTIAL_OPS`` (integer divide, mod, power, shifts...), and
every argument and the result have a recorded tensor type with a fully static shape (the
type checker has checked the shapes). Without recorded types nothing but atoms, tuples,
projections, constructor calls and function literals is total. Anything else may fail.

Departures from TVM: constants stay inline (TVM binds them too, though it calls them
atomic); nested ``let`` values are flattened (``let %a = (let %b = e; f); ...`` becomes
``let %b = e; let %a = f; ...``) except in a graph-form block; TVM hoists every shared node
to the LCA of its uses, which can move an effect or a failure out of a branch.

Cost: linear in the number of distinct nodes times the nesting of scopes (a lookup walks up
the scope chain), plus the copies made for exclusive branches and re-bound pure nodes; a
body whose first conversion finds a node that must stay in graph form is converted again
(rarely more than twice). Recursion runs on a deep stack.
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
    pattern_vars,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType
from relay_ref.ir.visitor import children_in_activation, post_order
from relay_ref.ops.registry import OpPattern, get_op, has_op
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.effects import Effects

ATOMS = (Var, GlobalVar, Op, Constructor, Constant)

#: Elementwise/broadcast operators that can fail (or whose failure we do not rule out) on
#: well-typed, statically shaped arguments: division by zero, negative powers of integers,
#: out-of-range shifts.
PARTIAL_OPS: frozenset[str] = frozenset({
    "divide", "floor_divide", "trunc_divide", "mod", "floor_mod", "trunc_mod", "power",
    "left_shift", "right_shift",
})


def _is_primitive(fn: Function) -> bool:
    return bool(fn.attr("Primitive", 0))


def _is_atom(node: Expr) -> bool:
    return isinstance(node, ATOMS) or (isinstance(node, Function) and _is_primitive(node))


class _Static:
    """A static scope of one function body: the body, an ``if`` branch, a ``match`` clause."""

    __slots__ = ("parent", "depth")

    def __init__(self, parent: _Static | None) -> None:
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1


def _lca(a: _Static, b: _Static) -> _Static:
    while a is not b:
        if a.depth > b.depth:
            a = a.parent  # type: ignore[assignment]
        elif b.depth > a.depth:
            b = b.parent  # type: ignore[assignment]
        else:
            a, b = a.parent, b.parent  # type: ignore[assignment]
    return a


def compute_scopes(body: Expr) -> tuple[list[Expr], dict[int, _Static], dict[int, list],
                                        dict[int, int]]:
    """For one function body (not entering ``fn`` literals): its nodes in post-order, each
    node's static scope (LCA of its uses' scopes), the scopes of each node's child edges,
    and each node's number of incoming edges."""
    order = list(post_order(body, enter=children_in_activation))
    root = _Static(None)
    scope: dict[int, _Static] = {id(body): root}
    edges: dict[int, list[_Static]] = {}
    uses: dict[int, int] = {}
    for node in reversed(order):  # parents before children
        s = scope[id(node)]
        match node:
            case If():
                kid_scopes = [s, _Static(s), _Static(s)]
            case Match(_, clauses):
                kid_scopes = [s] + [_Static(s) for _ in clauses]
            case _:
                kid_scopes = [s] * len(children_in_activation(node))
        edges[id(node)] = kid_scopes
        for kid, ks in zip(children_in_activation(node), kid_scopes, strict=True):
            uses[id(kid)] = uses.get(id(kid), 0) + 1
            old = scope.get(id(kid))
            scope[id(kid)] = ks if old is None else _lca(old, ks)
    return order, scope, edges, uses


class _Info:
    """Per-module facts about nodes, memoised by identity: effects, totality, binders."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.effects = Effects(mod)
        self.types = mod.checked_types
        self._total: dict[int, bool] = {}
        self._binders: dict[int, bool] = {}
        self.functions: dict[int, Function] = {}  # converted fn literals

    def stateful(self, node: Expr) -> bool:
        return self.effects.stateful(node)

    def total(self, node: Expr) -> bool:
        """Evaluating ``node`` cannot fail and terminates (module docstring)."""
        got = self._total.get(id(node))
        if got is None:
            got = self._total[id(node)] = self._decide_total(node)
        return got

    def _decide_total(self, node: Expr) -> bool:
        match node:
            case Var() | GlobalVar() | Op() | Constructor() | Constant() | Function():
                return True
            case Tuple(fields):
                return all(self.total(f) for f in fields)
            case TupleGetItem(tup):
                return self.total(tup)
            case Call(Constructor(), args):
                return all(self.total(a) for a in args)
            case Call(Op(name), args):
                return (self._total_op(name) and all(self.total(a) for a in args)
                        and all(self._static_tensor(e) for e in (node, *args)))
        return False

    @staticmethod
    def _total_op(name: str) -> bool:
        if name in PARTIAL_OPS or ("." in name and not name.startswith("nn.")):
            return False
        if not has_op(name):
            return False
        return get_op(name).op_pattern in (OpPattern.ELEMWISE, OpPattern.BROADCAST)

    def _static_tensor(self, expr: Expr) -> bool:
        ty = self.types.get(expr)
        return isinstance(ty, TensorType) and ty.is_static

    def binders(self, node: Expr) -> bool:
        """Does ``node`` contain a binder (``let``, ``match``, non-primitive ``fn``)?"""
        got = self._binders.get(id(node))
        if got is None:
            match node:
                case Let() | Match():
                    got = True
                case Function():
                    got = not _is_primitive(node)
                case _:
                    got = any(self.binders(k) for k in children(node))
            self._binders[id(node)] = got
        return got


class _Scope:
    """A scope instance of the result: a block of bindings being built. ``label`` is the
    static scope it instantiates; ``arm_of`` the ``if``/``match`` instance whose arm it is."""

    __slots__ = ("parent", "depth", "root", "label", "arm_of", "bindings", "memo")

    def __init__(self, parent: _Scope | None, label: _Static | None,
                 arm_of: object | None = None) -> None:
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.root: _Scope = self if parent is None else parent.root
        self.label = label
        self.arm_of = arm_of
        self.bindings: list[tuple[Var, Expr]] = []
        self.memo: dict[int, Expr] = {}

    def lookup(self, node: Expr) -> Expr | None:
        s: _Scope | None = self
        key = id(node)
        while s is not None:
            got = s.memo.get(key)
            if got is not None:
                return got
            s = s.parent
        return None


def _exclusive(a: _Scope, b: _Scope) -> bool:
    """Are ``a`` and ``b`` inside different arms of one ``if``/``match`` instance?"""
    if a.root is not b.root:
        return False
    ca = cb = None
    while a.depth > b.depth:
        ca, a = a, a.parent  # type: ignore[assignment]
    while b.depth > a.depth:
        cb, b = b, b.parent  # type: ignore[assignment]
    while a is not b:
        ca, a = a, a.parent  # type: ignore[assignment]
        cb, b = b, b.parent  # type: ignore[assignment]
    if ca is None or cb is None:
        return False  # one encloses the other
    return ca.arm_of is not None and ca.arm_of is cb.arm_of


class _Restart(Exception):
    """A node was found that must stay in graph form: convert the body again."""


class _Filler:
    """Builds the A-normal form of one function body (see the module docstring)."""

    def __init__(self, info: _Info, body: Expr) -> None:
        self.info = info
        self.body = body
        self.order, self.static, self.edges, self.uses = compute_scopes(body)
        self.graph: set[int] = set()  # nodes left in graph form

    def run(self) -> Expr:
        while True:
            self.blocks: dict[int, Expr] = {}
            self.bound_in: dict[int, list[_Scope]] = {}
            self.var_scope: dict[Var, _Scope] = {}
            self.conflicts: set[int] = set()
            root = _Scope(None, self.static[id(self.body)])
            tail = self.atom(self.body, root)
            if not self.conflicts:
                return self.block(root, tail)
            self._add_graph(self.conflicts)

    def _add_graph(self, nodes: set[int]) -> None:
        """Put ``nodes`` in graph form, with every node below them (in this body) that has
        several users and would be wrong to copy: a conflict found in a later round."""
        by_id = {id(n): n for n in self.order}
        stack = [by_id[i] for i in nodes]
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if id(node) in nodes or (self.uses.get(id(node), 0) > 1 and (
                    self.info.stateful(node) or self.info.binders(node))):
                self.graph.add(id(node))
            stack.extend(k for k in children_in_activation(node) if not _is_atom(k))

    # -- building ------------------------------------------------------------------------
    @staticmethod
    def block(scope: _Scope, tail: Expr) -> Expr:
        """Wrap ``tail`` in the bindings made in ``scope``."""
        out = tail
        for var, value in reversed(scope.bindings):
            out = Let(var, value, out)
        return out

    def bind(self, scope: _Scope, var: Var, value: Expr) -> Var:
        scope.bindings.append((var, value))
        self.var_scope[var] = scope
        return var

    def atom(self, node: Expr, cur: _Scope, target: Var | None = None) -> Expr:
        """An atom with the value of ``node``, valid in scope ``cur`` (bound where the module
        docstring says unless it is one); with ``target`` (a ``let``'s variable), the value
        is bound to ``target`` in ``cur`` (or where ``node`` is bound) instead."""
        if _is_atom(node):
            return node if target is None else self.bind(cur, target, node)
        done = cur.lookup(node)
        if done is not None:
            return done if target is None else self.bind(cur, target, done)
        if id(node) in self.graph:  # one shared block, bound at each use
            blk = self.blocks.get(id(node))
            if blk is None:
                blk = self.blocks[id(node)] = self.graph_block(node)
            var = self.bind(cur, target or Var("x"), blk)
            cur.memo[id(node)] = var
            return var
        self.check_conflict(node, cur)
        if isinstance(node, Let):
            out = self.let(node, cur)
            if target is not None:
                out = self.bind(cur, target, out)
            cur.memo[id(node)] = out
            self.bound_in.setdefault(id(node), []).append(cur)
            return out
        value = self.compound(node, cur)
        dest = self.destination(node, value, cur)
        var = self.bind(dest, target or Var("x"), value)
        dest.memo[id(node)] = var
        self.bound_in.setdefault(id(node), []).append(dest)
        return var

    def let(self, node: Let, cur: _Scope) -> Expr:
        """Flatten a ``let`` chain into ``cur``; the atom of its final body."""
        while True:
            self.atom(node.value, cur, node.var)
            body = node.body
            if (not isinstance(body, Let) or id(body) in self.graph
                    or self.uses.get(id(body), 0) != 1):
                return self.atom(body, cur)
            node = body  # an unshared nested let: iterate, not recurse (long chains)

    def check_conflict(self, node: Expr, cur: _Scope) -> None:
        """``node`` is bound again where its earlier binding is not visible: fine for a
        pure node without binders, or for a stateful one in an exclusive branch."""
        prev = self.bound_in.get(id(node))
        if not prev:
            return
        if self.info.binders(node) or (self.info.stateful(node) and not all(
                _exclusive(d, cur) for d in prev)):
            self.conflicts.add(id(node))

    def destination(self, node: Expr, value: Expr, cur: _Scope) -> _Scope:
        """Where ``node`` (converted to ``value``) is bound: ``cur``, or for a safe node the
        instance of its static LCA scope above ``cur``, but not above a variable it reads."""
        if isinstance(node, Function) or not self.info.total(node) or self.info.stateful(
                node):
            return cur
        label = self.static.get(id(node))
        dest: _Scope | None = cur
        while dest is not None and dest.label is not label:
            dest = dest.parent
        if dest is None:
            return cur
        for kid in children(value):
            if isinstance(kid, Var):
                s = self.var_scope.get(kid)
                if s is not None and s.root is cur.root and s.depth > dest.depth:
                    dest = s
        return dest

    def graph_block(self, node: Expr) -> Expr:
        """``node`` converted once, into a block of its own (graph form)."""
        root = _Scope(None, None)
        if isinstance(node, Let):
            tail = self.let(node, root)
        else:
            value = self.compound(node, root)
            if not root.bindings:
                return value
            tail = self.bind(root, Var("x"), value)
        return self.block(root, tail)

    def arm(self, node: Expr, i: int, kid: Expr, cur: _Scope, token: object) -> Expr:
        """The block of branch/clause ``i`` of ``node`` (an arm of instance ``token``)."""
        s = _Scope(cur, self.edges[id(node)][i], token)
        if isinstance(node, Match):
            for var in pattern_vars(node.clauses[i - 1].lhs):
                self.var_scope[var] = s
        return self.block(s, self.atom(kid, s))

    def compound(self, node: Expr, cur: _Scope) -> Expr:
        """``node`` rebuilt with atomic operands (and blocks for its branches)."""
        match node:
            case Tuple(fields):
                return replace(node, fields=tuple(self.atom(f, cur) for f in fields))
            case TupleGetItem(tup):
                return replace(node, tuple_value=self.atom(tup, cur))
            case Call(op, args):
                new_op = self.atom(op, cur)
                return replace(node, op=new_op, args=tuple(self.atom(a, cur) for a in args))
            case Function():
                return self.function(node)
            case If(cond, t, f):
                c = self.atom(cond, cur)
                token = object()
                return replace(node, cond=c, true_branch=self.arm(node, 1, t, cur, token),
                               false_branch=self.arm(node, 2, f, cur, token))
            case Match(data, clauses):
                d = self.atom(data, cur)
                token = object()
                return replace(node, data=d, clauses=tuple(
                    Clause(c.lhs, self.arm(node, i + 1, c.rhs, cur, token), c.span)
                    for i, c in enumerate(clauses)))
            case RefCreate(value):
                return replace(node, value=self.atom(value, cur))
            case RefRead(ref):
                return replace(node, ref=self.atom(ref, cur))
            case RefWrite(ref, value):
                r = self.atom(ref, cur)
                return replace(node, ref=r, value=self.atom(value, cur))
        raise TypeError(f"ToANormalForm: unexpected {type(node).__name__}")

    def function(self, fn: Function) -> Function:
        """A ``fn`` literal: its body is another activation, converted on its own."""
        done = self.info.functions.get(id(fn))
        if done is None:
            done = self.info.functions[id(fn)] = convert_function(self.info, fn)
        return done


def convert_function(info: _Info, fn: Function) -> Function:
    if _is_primitive(fn):
        return fn
    return replace(fn, body=_Filler(info, fn.body).run())


def to_a_normal_form_function(fn: Function, mod: IRModule | None = None) -> Function:
    """The A-normal form of a function of ``mod`` (see the module docstring)."""
    info = _Info(mod if mod is not None else IRModule())
    return run_deep(lambda: convert_function(info, fn))


@register_pass
class ToANormalForm(Pass):
    """Let-bind every non-atomic sub-expression (see the module docstring)."""

    name = "ToANormalForm"
    idempotent = True
    opt_level = 1

    def __call__(self, mod: IRModule) -> IRModule:
        info = _Info(mod)
        functions = {n: run_deep(lambda f=f: convert_function(info, f))
                     for n, f in mod.functions.items()}
        return replace(mod, functions=functions, checked_types={}, global_types={})
