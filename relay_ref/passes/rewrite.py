"""Rebuilding expressions: the traversal every pass is written with.

* ``with_children(expr, kids)``: ``expr`` with its direct sub-expressions (in the order of
  ``relay_ref.ir.expr.children``) replaced; ``expr`` itself when nothing changed. A call
  whose callee becomes an operator (``let %f = add; %f(x, y)`` with ``%f`` substituted) and
  that has no attrs gets the op's default attrs (``default_attrs``), as the parser gives
  ``add(x, y)``: a pass's output prints and parses back to itself (alpha-equal; attrs
  ``None`` and default attrs differ, as in TVM's structural equality).
* ``rewrite(expr, rule)``: a bottom-up rebuild. Each distinct node is visited once, after
  its children (memoised by identity: a node shared by several users, a graph binding, is
  rewritten once and stays shared), so the cost is linear in the size of the graph, never in
  the number of paths through it. ``rule(node)`` sees the node with its children already
  rewritten and returns a replacement or ``None`` (keep it). Iterative: deep let chains and
  long graphs do not touch Python's recursion limit.
* ``rewrite_with_origin(expr, rule)``: the same rebuild, but ``rule(original, rebuilt)``
  also sees the node as it was, for rules that read the original's recorded type
  (``mod.checked_types``: rebuilt nodes have none).
* ``map_functions(mod, fn)``: apply ``fn`` to every global function of a module.
* ``LetChainMutator``: the memoised, let-chain-iterative rebuild for passes that decide
  binding by binding.
* ``fresh_copy(expr)``: a copy with fresh binders (``Var``s bound inside are renamed to new
  objects), for passes that duplicate code (inlining, partial evaluation): the IR's
  invariant is that each ``Var`` object is bound by at most one binder.

Invariant kept by everything here: binders are never changed (``Let.var``, parameters and
pattern variables are the same objects before and after), so scoping is preserved; only
``fresh_copy`` makes new binders, consistently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from relay_ref.ir.expr import (
    Call,
    Expr,
    Function,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
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

Rule = Callable[[Expr], Expr | None]


def with_children(expr: Expr, kids: Iterable[Expr]) -> Expr:
    """``expr`` with new direct sub-expressions (``children`` order); same node if equal."""
    new = tuple(kids)
    old = tuple(children(expr))
    if len(new) == len(old) and all(a is b for a, b in zip(new, old, strict=True)):
        return expr
    match expr:
        case Tuple():
            return replace(expr, fields=new)
        case TupleGetItem():
            return replace(expr, tuple_value=new[0])
        case Let():
            return replace(expr, value=new[0], body=new[1])
        case Call():
            attrs = expr.attrs
            if attrs is None and isinstance(new[0], Op):
                attrs = default_attrs(new[0].name)  # an op value now in call position
            return replace(expr, op=new[0], args=new[1:], attrs=attrs)
        case Function():
            return replace(expr, body=new[0])
        case If():
            return replace(expr, cond=new[0], true_branch=new[1], false_branch=new[2])
        case Match():
            clauses = tuple(c if c.rhs is rhs else replace(c, rhs=rhs)
                            for c, rhs in zip(expr.clauses, new[1:], strict=True))
            return replace(expr, data=new[0], clauses=clauses)
        case RefCreate():
            return replace(expr, value=new[0])
        case RefRead():
            return replace(expr, ref=new[0])
        case RefWrite():
            return replace(expr, ref=new[0], value=new[1])
    raise TypeError(f"{type(expr).__name__} has no children to replace")


def default_attrs(op_name: str) -> object | None:
    """The attrs object of ``op_name`` with every default, as the parser gives a call
    written without attributes; ``None`` for an unknown op or attrs without defaults."""
    from relay_ref.ops.registry import get_op

    try:
        return get_op(op_name).attrs()
    except Exception:  # noqa: BLE001 - unknown op, or required attributes
        return None


def rewrite(expr: Expr, rule: Rule, memo: dict[int, Expr] | None = None) -> Expr:
    """Bottom-up rebuild of ``expr`` applying ``rule`` once per distinct node (see the
    module docstring). ``memo`` (node id -> result) may be shared between calls on parts of
    one program so that nodes shared between them are rewritten once."""
    done: dict[int, Expr] = {} if memo is None else memo
    keep: list[Expr] = []  # keeps the ids in ``done`` valid (no reuse of a freed id)
    if id(expr) in done:
        return done[id(expr)]

    def enter(node: Expr) -> tuple[Expr, ...]:  # nodes done by an earlier call: not again
        return tuple(k for k in children(node) if id(k) not in done)

    for node in post_order(expr, enter=enter):
        rebuilt = with_children(node, (done[id(k)] for k in children(node)))
        out = rule(rebuilt)
        done[id(node)] = rebuilt if out is None else out
        keep.append(node)
    return done[id(expr)]


def rewrite_with_origin(expr: Expr, rule: Callable[[Expr, Expr], Expr | None]) -> Expr:
    """Like ``rewrite``, with ``rule(original, rebuilt)`` (see the module docstring)."""
    done: dict[int, Expr] = {}  # ids of nodes of ``expr``: alive while ``expr`` is
    for node in post_order(expr):
        rebuilt = with_children(node, (done[id(k)] for k in children(node)))
        out = rule(node, rebuilt)
        done[id(node)] = rebuilt if out is None else out
    return done[id(expr)]


class LetChainMutator:
    """A memoised rebuild that walks ``let`` chains iteratively: the scaffolding shared by
    the passes that decide binding by binding (FoldConstant, ToGraphNormalForm,
    DeadCodeElimination).

    Invariants: every distinct node is visited once (``memo`` by identity; ``keep`` holds
    the visited nodes so their ids stay valid); a chain of lets is walked with a loop, so
    only values recurse (deep chains need no deep stack); every let of a chain that is not
    the chain's head gets its own memo entry, so a let node shared by another user is not
    redone. Subclasses override the hooks:

    * ``visit_var(var)``: a variable's replacement (default: ``subst``, else itself);
    * ``rebuilt(orig, node)``: a non-let node after its children were visited;
    * ``bind(let)``: the new value of a binding, or ``None`` to drop it (after putting
      what replaces the variable, if anything, in ``subst``);
    * ``let(node)`` itself, for a pass that must see the body before the bindings
      (use ``chain`` and ``done`` then).
    """

    def __init__(self) -> None:
        self.memo: dict[int, Expr] = {}
        self.keep: list[Expr] = []
        self.subst: dict[Var, Expr] = {}

    def visit(self, node: Expr) -> Expr:
        got = self.memo.get(id(node))
        if got is not None:
            return got
        if isinstance(node, Var):
            out = self.visit_var(node)
        elif isinstance(node, Let):
            out = self.let(node)
        else:
            out = self.rebuilt(node, with_children(node, [self.visit(k)
                                                          for k in children(node)]))
        self.memo[id(node)] = out
        self.keep.append(node)
        return out

    def visit_var(self, var: Var) -> Expr:
        return self.subst.get(var, var)

    def rebuilt(self, orig: Expr, node: Expr) -> Expr:
        return node

    def bind(self, let: Let) -> Expr | None:
        return self.visit(let.value)

    def chain(self, node: Let) -> tuple[list[Let], Expr]:
        """The lets from ``node`` down to the first one already visited (or a non-let), and
        the expression after them."""
        lets: list[Let] = []
        cur: Expr = node
        while isinstance(cur, Let) and (cur is node or id(cur) not in self.memo):
            lets.append(cur)
            cur = cur.body
        return lets, cur

    def done(self, head: Let, let: Let, out: Expr) -> None:
        """Record ``out`` as the result of ``let``, an inner let of ``head``'s chain."""
        if let is not head:
            self.memo[id(let)] = out
            self.keep.append(let)

    def let(self, node: Let) -> Expr:
        # bindings in order, each before the next let is looked at (a binding may extend
        # ``subst`` for what follows), then the body, then the chain rebuilt inside out
        lets: list[Let] = []
        values: list[Expr | None] = []
        cur: Expr = node
        while isinstance(cur, Let) and (cur is node or id(cur) not in self.memo):
            lets.append(cur)
            values.append(self.bind(cur))
            cur = cur.body
        out = self.visit(cur)
        for let, value in zip(reversed(lets), reversed(values), strict=True):
            if value is not None:
                out = let if value is let.value and out is let.body else Let(
                    let.var, value, out, let.span)
            self.done(node, let, out)
        return out


def map_functions(mod: IRModule, fn: Callable[[str, Function], Function]) -> IRModule:
    """A module whose every global ``name`` is ``fn(name, function)`` (types dropped)."""
    functions = {name: fn(name, f) for name, f in mod.functions.items()}
    if all(functions[n] is f for n, f in mod.functions.items()):
        return mod
    return replace(mod, functions=functions, checked_types={}, global_types={})


def fresh_copy(expr: Expr) -> Expr:
    """``expr`` with every binder inside it renamed to a fresh ``Var`` (same name hint and
    annotation); free variables are kept. Sharing inside ``expr`` is preserved."""
    renamed: dict[Var, Var] = {}

    def fresh(var: Var) -> Var:
        new = Var(var.name_hint, var.type_annotation, var.span)
        renamed[var] = new
        return new

    def pattern(p: Pattern) -> Pattern:
        match p:
            case PatternVar(var):
                return replace(p, var=fresh(var))
            case PatternConstructor(_, pats):
                return replace(p, patterns=tuple(pattern(q) for q in pats))
            case PatternTuple(pats):
                return replace(p, patterns=tuple(pattern(q) for q in pats))
        return p

    # Binders first (a pre-pass), so uses anywhere below see the new variables.
    from relay_ref.ir.visitor import post_order
    new_lhs: dict[int, Pattern] = {}  # id of an original pattern -> its renamed copy
    for node in post_order(expr):
        match node:
            case Let(var):
                fresh(var)
            case Function(params):
                for p in params:
                    fresh(p)
            case Match(_, clauses):
                for c in clauses:
                    new_lhs[id(c.lhs)] = pattern(c.lhs)

    def rule(node: Expr) -> Expr | None:
        match node:
            case Var():
                return renamed.get(node)
            case Let(var):
                return replace(node, var=renamed[var])
            case Function(params):
                return replace(node, params=tuple(renamed[p] for p in params))
            case Match(_, clauses):
                # rebuilt clauses keep their original ``lhs`` object: look it up
                return replace(node, clauses=tuple(
                    replace(c, lhs=new_lhs.get(id(c.lhs), c.lhs)) for c in clauses))
        return None

    return rewrite(expr, rule)

