"""The constraint queue (spec/typing.md 6.2): waiting on holes, waking, fixpoint, linearity."""

from __future__ import annotations

from relay_ref.ir.expr import Tuple
from relay_ref.ir.types import IncompleteType, TensorType, Type
from relay_ref.typecheck.solver import Constraint, Solver
from relay_ref.typecheck.unify import Unifier

F32 = TensorType((), "float32")


class _Copy(Constraint):
    """out := src once src is known (a stand-in for an identity relation)."""

    def __init__(self, src: Type, out: Type) -> None:
        self.src, self.out, self.expr, self.owner = src, out, Tuple(()), None

    def run(self, unifier: Unifier) -> list[IncompleteType] | None:
        src = unifier.resolve(self.src)
        if unifier.holes(src):
            return unifier.holes(src)
        unifier.unify(self.out, src)
        return None


def _solver() -> Solver:
    return Solver(Unifier(), lambda c, d: (_ for _ in ()).throw(AssertionError(d)))


def test_constraint_waits_until_its_hole_is_bound() -> None:
    s = _solver()
    src, out = s.unifier.fresh(), s.unifier.fresh()
    c = _Copy(src, out)
    s.add(c)
    s.solve()
    assert s.unsolved() == [c]
    s.unifier.unify(src, F32)
    s.solve()
    assert s.unsolved() == []
    assert s.unifier.resolve(out) == F32


def test_chain_solved_backwards_runs_each_constraint_a_bounded_number_of_times() -> None:
    # h0 -> h1 -> ... -> hn, queued so that every constraint first waits: solving the
    # first hole then ripples through. Each constraint must run at most twice (no rescans).
    n = 2000
    s = _solver()
    holes = [s.unifier.fresh() for _ in range(n + 1)]
    for i in range(n, 0, -1):
        s.add(_Copy(holes[i - 1], holes[i]))
    s.solve()
    assert s.runs == n
    s.unifier.unify(holes[0], F32)
    s.solve()
    assert s.unsolved() == []
    assert s.runs <= 2 * n
    assert s.unifier.resolve(holes[n]) == F32


def test_hole_bound_to_another_hole_keeps_the_constraint_waiting() -> None:
    s = _solver()
    src, other, out = s.unifier.fresh(), s.unifier.fresh(), s.unifier.fresh()
    s.add(_Copy(src, out))
    s.solve()
    s.unifier.unify(src, other)
    s.solve()
    assert len(s.unsolved()) == 1
    s.unifier.unify(other, F32)
    s.solve()
    assert s.unsolved() == []
