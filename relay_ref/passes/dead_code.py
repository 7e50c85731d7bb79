"""DeadCodeElimination (TVM's ``dead_code.cc``): remove unused ``let`` bindings.

Guarantee. A binding ``let %v = e; body`` is removed when ``%v`` is not used in what remains
of ``body`` (uses inside bindings removed in the same run do not count, so chains of dead
bindings go at once) and evaluating ``e`` cannot write a reference
(``relay_ref.passes.effects``, conservative: a call of a function the analysis cannot see
through, a parameter say, may write) and ``e`` holds no use of a stateful shared node that
has other uses (``relay_ref.passes.shared_uses``: dropping it would move where that node is
evaluated, spec/semantics.md 2.3). Every other node is kept as it is, sharing included.
The result type-checks with the same types and refines the input: the same value wherever
the input returns one (a removed binding that would have failed, or looped, no longer does).

Types stay determined (``relay_ref.passes.pin_types``): unannotated parameters get their
checked types as annotations first (``annotate_params``; a dropped ``ones_like(%a)`` may
have been all that typed ``%a``), and a binding is removed only when every variable in its
value has a type fixed without it (``Determinacy.vars_fixed``: in ``let %n = Nil; let %u =
Cons(1, %n); match (%n) {..}`` the dead ``%u`` is what types ``%n``, so it stays).

The purity analysis, stated plainly: removable are operator calls, constructors, tuples,
projections, function literals (making a closure runs nothing), ``ref(..)`` (a fresh cell
nobody can reach) and ``ref_read``, and ``if``/``match``/``let`` made of those, and calls of
globals or let-bound function literals whose bodies are all of those (a least fixpoint over
the call graph for globals; local recursion counts as may-write). Anything containing a
``ref_write`` or an unknown call is kept.

Dataflow blocks (spec/semantics.md Shape-Dataflow): the bindings of the ``let`` chain that is
a ``dataflow(...)`` call's body are pure by the checker's rule (no control flow, references
or possibly impure calls inside a block), so an unused one is dropped without the effect
analysis (its value is not asked whether it may write); the other conditions (types stay
determined, sharing) hold there as everywhere.

Not done: TVM's ``inline_once`` (substituting bindings used once) -- ToGraphNormalForm
followed by ToANormalForm gives that effect for pure bindings, and doing it here would need
a second pass over each body.

Cost: linear in the number of distinct nodes; let chains are walked iteratively.
"""

from __future__ import annotations

from dataclasses import replace

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import Call, Expr, Function, Let, Op, Var
from relay_ref.ir.module import IRModule
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.effects import Effects
from relay_ref.passes.pin_types import Determinacy, annotate_params
from relay_ref.passes.rewrite import LetChainMutator
from relay_ref.passes.shared_uses import SharedUses
from relay_ref.typecheck.shapes import type_vars


class _DCE(LetChainMutator):
    def __init__(self, effects: Effects, det: Determinacy, uses: SharedUses) -> None:
        super().__init__()
        self.effects = effects
        self.det = det
        self.uses = uses
        self.used: set[Var] = set()
        #: ids of the lets of dataflow blocks' chains (alive: nodes of the function)
        self.in_block: set[int] = set()

    def visit(self, node: Expr) -> Expr:
        if type(node) is Call and type(node.op) is Op and node.op.name == "dataflow" \
                and node.args:                   # Shape-Dataflow: mark the block's lets
            cur = node.args[0]
            while type(cur) is Let:
                self.in_block.add(id(cur))
                cur = cur.body
        return super().visit(node)

    def visit_var(self, var: Var) -> Expr:
        self.used.add(var)
        return var

    def let(self, node: Let) -> Expr:
        lets, rest = self.chain(node)
        out = self.visit(rest)  # the body first: it decides which bindings are live
        for let in reversed(lets):
            if (let.var in self.used
                    or (id(let) not in self.in_block and self.effects.writes(let.value))
                    or not self.det.vars_fixed(let.value)
                    or self.uses.pins(let.value)    # spec/partial_eval.md 0, sharing
                    or _binds_shape_vars(let.value)):  # T-MatchCast: later types use them
                value = self.visit(let.value)
                if value is not let.value or out is not let.body:
                    out = Let(let.var, value, out, let.span)
                else:
                    out = let
            self.done(node, let, out)
        return out


def _binds_shape_vars(value: Expr) -> bool:
    """Whether ``value`` is (or directly applies an operator to) a ``match_cast`` whose
    type names shape variables: it binds them for the rest of the function (T-MatchCast),
    so dropping it would change what a later ``match_cast`` checks. (A match_cast binding
    nothing is a check only: dropping a dead one refines, as dropping a dead division.)"""
    for node in (value, *(value.args if type(value) is Call else ())):
        if type(node) is Call and type(node.op) is Op and node.op.name == "match_cast" \
                and node.attrs is not None and type_vars(node.attrs.type):
            return True
    return False


def dead_code_function(fn: Function, effects: Effects, det: Determinacy) -> Function:
    """``fn`` without its dead bindings (see the module docstring)."""
    uses = SharedUses(fn, effects)
    body = run_deep(lambda: _DCE(effects, det, uses).visit(fn.body))
    return fn if body is fn.body else replace(fn, body=body)


@register_pass
class DeadCodeElimination(Pass):
    """Remove unused, effect-free ``let`` bindings (see the module docstring)."""

    name = "DeadCodeElimination"
    idempotent = True
    opt_level = 1

    def __call__(self, mod: IRModule) -> IRModule:
        original = mod
        mod = annotate_params(mod)
        effects, det = Effects(mod), Determinacy(mod)
        functions = {n: dead_code_function(f, effects, det) for n, f in mod.functions.items()}
        if all(functions[n] is f for n, f in mod.functions.items()):
            return original  # nothing removed: no annotations added either
        return replace(mod, functions=functions, checked_types={}, global_types={})
