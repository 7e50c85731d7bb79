"""Scheduling a simplified gradient program for memory (spec/dtr.md §7, "Measured").

``gradient(@f)`` simplified by PartialEvaluate and DeadCodeElimination leaves each
parameter's gradient as a residual expression *inside the result tuple*: the weight
gradients (``conv2d(transpose(%act), transpose(%grad))`` ...) run after the whole backward
pass, so every forward activation and every activation gradient they read stays live to
the end. Measured on tests/dtr/dtr_models.py's resnet: that order makes the unbudgeted peak
hold all of them at once, and under a budget DTR must keep or replay them for the last
steps (the source of most of the slowdown at low budgets).

``hoist_result_fields(mod)`` binds each such field to a fresh ``let`` placed right after
the binding of the latest variable it reads (the point where it can first run: what the
paper's PyTorch does when it accumulates a weight's gradient as the backward pass reaches
it), and returns the tuple of those variables. Only fields made of operator calls, tuples,
projections, variables and constants move (pure and total on well-typed arguments, so the
result is the same value: only the order in which the pure calls run changes). A function
whose body is not a ``let`` chain ending in a tuple is kept as it is. Iterative: let chains
and expressions of any depth.
"""

from __future__ import annotations

from dataclasses import replace

from relay_ref.ir.expr import Call, Constant, Expr, Let, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.module import IRModule

__all__ = ["hoist_result_fields"]


def hoist_result_fields(mod: IRModule) -> IRModule:
    """``mod`` with every function's result-tuple fields hoisted (see the module
    docstring); the module itself when nothing moves."""
    functions = dict(mod.functions)
    changed = False
    for name, fn in mod.functions.items():
        body = _hoist(fn.body)
        if body is not None:
            functions[name] = replace(fn, body=body)
            changed = True
    if not changed:
        return mod
    # new nodes: the types are inferred again by whoever needs them (as DCE leaves them)
    return replace(mod, functions=functions, checked_types={}, global_types={})


def _movable_free_vars(expr: Expr) -> set[Var] | None:
    """The variables ``expr`` reads, or None when it is not made of operator calls, tuples,
    projections, variables and constants only."""
    out: set[Var] = set()
    stack = [expr]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Var):
            out.add(e)
        elif isinstance(e, Constant):
            continue
        elif isinstance(e, Call) and isinstance(e.op, Op):
            stack.extend(e.args)
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        else:
            return None
    return out


def _hoist(body: Expr) -> Expr | None:
    chain: list[Let] = []
    e = body
    while isinstance(e, Let):
        chain.append(e)
        e = e.body
    if not chain or not isinstance(e, Tuple):
        return None
    position = {let.var: i for i, let in enumerate(chain)}
    # the tuple's leaves (nested tuples walked), each a Call that may move
    after: dict[int, list[tuple[Var, Expr]]] = {}
    replacement: dict[int, Var] = {}
    stack: list[Expr] = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Tuple):
            stack.extend(reversed(x.fields))
            continue
        if not isinstance(x, Call) or id(x) in replacement:
            continue
        reads = _movable_free_vars(x)
        if reads is None:
            continue
        at = max((position[v] for v in reads if v in position), default=-1)
        if at >= len(chain) - 1:
            continue  # already where it can first run
        var = Var("grad")
        replacement[id(x)] = var
        after.setdefault(at, []).append((var, x))
    if not replacement:
        return None
    tail = _rebuild_tuple(e, replacement)
    # rebuild the chain innermost first, with the hoisted bindings after their positions
    out: Expr = tail
    for i in range(len(chain) - 1, -2, -1):
        for var, value in reversed(after.get(i, [])):
            out = Let(var, value, out)
        if i >= 0:
            let = chain[i]
            out = Let(let.var, let.value, out, let.span)
    return out


def _rebuild_tuple(t: Tuple, replacement: dict[int, Var]) -> Expr:
    """``t`` with the moved leaves replaced by their variables (nested tuples rebuilt,
    iteratively: post-order over the tuple nodes)."""
    done: dict[int, Expr] = {}
    stack: list[tuple[Tuple, bool]] = [(t, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in done:
            continue
        inner = [f for f in node.fields if isinstance(f, Tuple)]
        if not ready and inner:
            stack.append((node, True))
            stack.extend((f, False) for f in inner)
            continue
        fields = tuple(done[id(f)] if isinstance(f, Tuple)
                       else replacement.get(id(f), f) for f in node.fields)
        done[id(node)] = Tuple(fields, node.span)
    return done[id(t)]

