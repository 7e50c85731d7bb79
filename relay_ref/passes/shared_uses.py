"""Which code a pass may not drop because it holds a use of a stateful shared node.

Under the lowest-common-scope rule (spec/semantics.md 2.3, E-Shared 3.18) *where* a shared
node is evaluated depends on all its uses: its scope is the lowest scope common to them, and
inside that scope it is evaluated at its first use (or at an anchor). Dropping one use can
therefore move the node's evaluation: later in its activation, or into a ``fn`` literal's
body (evaluated again at each call). For a node whose evaluation is *stateful*
(``relay_ref.passes.effects``: it may create, read or write a reference) that changes the
value (a fresh cell per call; a read after a write), so a pass that drops code keeps any
code holding a use of such a node that has other uses (spec/partial_eval.md 0, the
sharing rule). A node all of whose uses go with the dropped code disappears, and a node
that is not stateful computes the same value wherever and however often it is evaluated
(moving it only later or deeper can at most avoid a failure: a refinement).

Cost: counting the edges is linear in the function; each ``pins`` query walks the distinct
nodes of the code asked about, and answers at once when the function has no stateful shared
node (the common case).
"""

from __future__ import annotations

from collections.abc import Iterable

from relay_ref.ir.expr import Constant, Constructor, Expr, GlobalVar, Op, Var, children
from relay_ref.passes.effects import Effects

__all__ = ["SharedUses"]

_ATOMS = (Var, GlobalVar, Op, Constant, Constructor)


class SharedUses:
    """The incoming-edge counts of the non-atomic nodes under ``roots`` (one function, or
    every function of a module: a node reachable from two roots counts as shared, which is
    only conservative) and their stateful shared nodes (more than one incoming edge,
    ``Effects.stateful``). Queries are about the nodes counted: ask about original code,
    not a rewritten copy (a rebuilt node is not known and pins nothing)."""

    def __init__(self, roots: Expr | Iterable[Expr], effects: Effects) -> None:
        self.edges: dict[Expr, int] = {}
        stack = [roots] if isinstance(roots, Expr) else list(roots)
        seen = set(stack)
        while stack:
            node = stack.pop()
            for kid in children(node):
                if isinstance(kid, _ATOMS):
                    continue
                self.edges[kid] = self.edges.get(kid, 0) + 1
                if kid not in seen:
                    seen.add(kid)
                    stack.append(kid)
        self.stateful = frozenset(n for n, k in self.edges.items()
                                  if k > 1 and effects.stateful(n))

    def pins(self, code: Expr) -> bool:
        """Whether dropping ``code`` (and the one edge into it) would remove a use of a
        stateful shared node that keeps other uses elsewhere (see the module docstring)."""
        if not self.stateful or isinstance(code, _ATOMS):
            return False
        inside: dict[Expr, int] = {code: 1}
        stack = [code]
        while stack:
            node = stack.pop()
            for kid in children(node):
                if isinstance(kid, _ATOMS):
                    continue
                got = inside.get(kid)
                inside[kid] = 1 if got is None else got + 1
                if got is None:
                    stack.append(kid)
        return any(k < self.edges.get(n, k) for n, k in inside.items() if n in self.stateful)
