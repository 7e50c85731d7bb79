"""ToGraphNormalForm (TVM's ``to_graph_normal_form.cc``): ``let``s become graph sharing.

Guarantee. A ``let`` whose value is *not stateful* (``relay_ref.passes.effects``: it
creates, reads and writes no reference, and calls nothing that might) is removed and its
variable replaced by the (rewritten) value node at every use: a variable used several times
becomes a node shared by several users, which the interpreter evaluates once per activation
(spec/semantics.md 2.3) and the printer writes as a graph binding. An unused pure binding
disappears. The result type-checks with the same types and refines the input (same value
wherever the input returns one; a dropped binding that would have failed no longer fails).

Kept as ``let`` (in their order, so effects stay ordered):

* bindings whose value may be stateful (``ref(..)``, ``ref_read``, ``ref_write``, calls of
  functions that may touch references): moving them would reorder or repeat effects.
  TVM's pass substitutes these too (and so drops an unused ``ref_write``); this one does not.
* bindings whose value holds a use of a stateful shared node that has other uses (a
  ``fn`` literal using a shared ``ref``: ``relay_ref.passes.shared_uses``): moving or
  dropping that use could move where the node is evaluated (spec/semantics.md 2.3).
* let-bound recursive functions (the variable occurs in its own value). TVM replaces each
  use by ``let %f = fn ...; %f``; keeping the binding is the same program, printed once.
* bindings that keep types determined (``relay_ref.passes.pin_types``): an annotated
  ``let`` whose value's type does not follow from the value alone (``let %e:
  List[float32] = Nil``: a bare ``Nil`` in its place would have no type argument), and an
  unused binding whose value is what fixes the type of a variable or shared node that stays
  (``Determinacy.vars_fixed``), and an unannotated binding used several times whose value's
  type comes from its uses (``let %n = Nil``: the shared ``Nil`` would be printed at each
  use, each then on its own). Unannotated parameters get their checked types as
  annotations first (``annotate_params``), as a dropped binding may be all that typed them.

Cost: linear in the number of distinct nodes; runs on a deep stack.
"""

from __future__ import annotations

from dataclasses import replace

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import Expr, Function, Let, Var, children
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import free_vars, post_order
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.effects import Effects
from relay_ref.passes.pin_types import Determinacy, annotate_params
from relay_ref.passes.rewrite import LetChainMutator
from relay_ref.passes.shared_uses import SharedUses
from relay_ref.typecheck.casts import has_any


class _GNF(LetChainMutator):
    def __init__(self, effects: Effects, det: Determinacy, uses: dict[Var, int],
                 shared: SharedUses) -> None:
        super().__init__()
        self.effects = effects
        self.det = det
        self.uses = uses
        self.shared = shared

    def bind(self, let: Let) -> Expr | None:
        if self.substitutable(let.var, let.value):
            self.subst[let.var] = self.visit(let.value)
            return None
        return self.visit(let.value)

    def substitutable(self, var: Var, value: Expr) -> bool:
        """May ``let var = value`` become graph sharing? (see the module docstring)"""
        if isinstance(value, Function) and var in free_vars(value):
            return False  # recursive
        if self.effects.stateful(value) or self.shared.pins(value):
            return False  # a fn literal using a stateful shared node: spec/partial_eval.md 0
        uses = self.uses.get(var, 0)
        if uses == 0 and not self.det.vars_fixed(value):
            return False  # dropping the value would untype a variable that stays
        if var.type_annotation is not None and has_any(var.type_annotation):
            return False  # ``?``: maybe less precise than the value (spec/typing.md 5.1)
        if self.det.determined(value):
            return True
        # The variable's type comes from outside the value: from the annotation (which a
        # bare value would lose), or from its uses, which a single use keeps (a shared
        # atom such as ``Nil`` is printed at each use: the sharing would not round-trip).
        return var.type_annotation is None and uses <= 1


def to_graph_normal_form_function(fn: Function, effects: Effects,
                                  det: Determinacy) -> Function:
    """The graph normal form of a global function (see the module docstring)."""
    uses: dict[Var, int] = {}  # the number of places each variable is used in
    for node in post_order(fn.body):
        for kid in children(node):
            if isinstance(kid, Var):
                uses[kid] = uses.get(kid, 0) + 1
    shared = SharedUses(fn, effects)
    return run_deep(lambda: replace(fn, body=_GNF(effects, det, uses, shared).visit(fn.body)))


@register_pass
class ToGraphNormalForm(Pass):
    """Turn pure ``let`` bindings into graph sharing (see the module docstring)."""

    name = "ToGraphNormalForm"
    idempotent = True
    opt_level = 1

    def __call__(self, mod: IRModule) -> IRModule:
        mod = annotate_params(mod)
        effects, det = Effects(mod), Determinacy(mod)
        functions = {n: to_graph_normal_form_function(f, effects, det)
                     for n, f in mod.functions.items()}
        return replace(mod, functions=functions, checked_types={}, global_types={})
