"""DataflowToGraph: the ``let`` bindings of dataflow blocks become graph sharing, so that
FuseOps sees a dataflow block as it sees the graph form (``%0 = nn.dense(..); ..``).

Guarantee. Inside the ``let`` chain that is a ``dataflow(...)`` call's body (and only
there), a binding is removed and its variable replaced by its (rewritten) value node at
every use, as ToGraphNormalForm does, but *without the effect analysis*: the checker admits
only pure straight-line bindings in a block (T-Dataflow, spec/semantics.md
Shape-Dataflow), so no binding there can touch a reference. A variable used several times
becomes one shared node (evaluated once per activation, spec/semantics.md 2.3); an unused
binding disappears (as DeadCodeElimination drops it in a block). ``let``s outside blocks
are left as they are (sharing included), and so is the ``dataflow`` call itself (the
identity: FuseOps leaves it outside groups and fuses its body; the executor evaluates it
as its body). The result type-checks with the same types and refines the input.

Kept as ``let`` inside a block:

* ``match_cast`` bindings: a ``match_cast`` binds shape variables from its point on
  (T-MatchCast, Shape-MatchCast); keeping the binding keeps that point, and the check it
  makes, where the program wrote it (FuseOps leaves ``match_cast`` outside groups anyway);
* bindings ToGraphNormalForm keeps for types (``relay_ref.passes.pin_types``): an
  annotation holding ``?``, or one the value alone does not determine, a binding whose
  value fixes the type of something that stays.

``rr.optimize(mod, ["ToGraphNormalForm"])`` converts dataflow bodies as well (with the
effect analysis, which finds block bindings pure); this pass is the narrow step
``rr.compile`` runs first (``relay_ref.executor.compile.DEFAULT_PASSES``), which leaves
the rest of the program, and its plan, as written.

Cost: linear in the number of distinct nodes; let chains are walked iteratively.
"""

from __future__ import annotations

from dataclasses import replace

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import Call, Expr, Function, Let, Op, Var, children
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import post_order
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.pin_types import Determinacy, annotate_params
from relay_ref.passes.rewrite import LetChainMutator
from relay_ref.typecheck.casts import has_any


def _is_op_call(node: Expr, name: str) -> bool:
    return type(node) is Call and type(node.op) is Op and node.op.name == name


class _DataflowGNF(LetChainMutator):
    """ToGraphNormalForm's rewrite restricted to the lets of dataflow blocks' chains."""

    def __init__(self, det: Determinacy, uses: dict[Var, int]) -> None:
        super().__init__()
        self.det = det
        self.uses = uses
        #: ids of the lets of dataflow blocks' chains (alive: nodes of the function)
        self.in_block: set[int] = set()

    def visit(self, node: Expr) -> Expr:
        if _is_op_call(node, "dataflow") and node.args and id(node) not in self.memo:
            cur = node.args[0]           # T-Dataflow: the block's bindings are pure
            while type(cur) is Let:
                self.in_block.add(id(cur))
                cur = cur.body
        return super().visit(node)

    def bind(self, let: Let) -> Expr | None:
        if id(let) in self.in_block and not _is_op_call(let.value, "match_cast") \
                and self.pure_substitutable(let.var, let.value):
            self.subst[let.var] = self.visit(let.value)
            return None
        return self.visit(let.value)

    def pure_substitutable(self, var: Var, value: Expr) -> bool:
        """ToGraphNormalForm's ``substitutable`` for a pure binding (no effect question)."""
        uses = self.uses.get(var, 0)
        if uses == 0 and not self.det.vars_fixed(value):
            return False  # dropping the value would untype a variable that stays
        if var.type_annotation is not None and has_any(var.type_annotation):
            return False  # ``?``: maybe less precise than the value (spec/typing.md 5.1)
        if self.det.determined(value):
            return True
        return var.type_annotation is None and uses <= 1


def _has_dataflow(fn: Function) -> bool:
    return any(_is_op_call(node, "dataflow") for node in post_order(fn.body))


def dataflow_to_graph_function(fn: Function, det: Determinacy) -> Function:
    """``fn`` with its dataflow blocks' bindings as graph sharing (module docstring)."""
    uses: dict[Var, int] = {}  # the number of places each variable is used in
    for node in post_order(fn.body):
        for kid in children(node):
            if isinstance(kid, Var):
                uses[kid] = uses.get(kid, 0) + 1
    body = run_deep(lambda: _DataflowGNF(det, uses).visit(fn.body))
    return fn if body is fn.body else replace(fn, body=body)


@register_pass
class DataflowToGraph(Pass):
    """Turn the ``let`` bindings of dataflow blocks into graph sharing (see the module
    docstring)."""

    name = "DataflowToGraph"
    idempotent = True
    opt_level = 0

    def __call__(self, mod: IRModule) -> IRModule:
        if not any(_has_dataflow(f) for f in mod.functions.values()):
            return mod  # nothing to do: the module as it is (no annotations added)
        mod = annotate_params(mod)
        det = Determinacy(mod)
        functions = {n: dataflow_to_graph_function(f, det)
                     for n, f in mod.functions.items()}
        return replace(mod, functions=functions, checked_types={}, global_types={})
