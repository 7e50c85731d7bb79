"""The constraint queue, solved to a fixpoint (spec/typing.md section 6.2, rule T-Rel).

A ``Constraint`` is a check that may have to wait for type information: an operator's type
relation (T-App-Op) or a projection from a tuple whose type is still a hole (T-Proj).

Invariants (these make solving linear in the number of constraints and holes):

* A constraint is *ready* (in ``_ready``), *waiting* (registered under the uids of the
  unbound holes it needs, ``_waiting[uid]``), *stuck* (it needs more information but names
  no hole to wait on) or *done*. Nothing ever scans all constraints: binding a hole (the
  unifier's ``on_bind``) moves exactly the constraints waiting on that hole to the ready
  queue, and each hole is bound at most once.
* ``solve()`` runs ready constraints until none is left; running one may bind holes and
  so make others ready. At the fixpoint, the constraints still waiting or stuck are the
  ones whose types could not be inferred (reported by the checker, spec 6.3).
* A constraint that fails calls ``report`` with a diagnostic and is done: errors never
  stop the solver.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from relay_ref.diagnostics import Diagnostic
from relay_ref.ir.expr import Expr
from relay_ref.ir.types import IncompleteType, Type
from relay_ref.typecheck.unify import Unifier


class Failure(Exception):
    """Raised inside a constraint or a typing rule: a located type error."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class Constraint:
    """One deferred check. ``expr`` is the expression responsible for it (for messages);
    ``owner`` names the global being checked when it was created."""

    expr: Expr
    owner: str | None

    def run(self, unifier: Unifier) -> list[IncompleteType] | None:
        """Try to discharge the constraint: return ``None`` when done, or the holes it
        waits for (an empty list: stuck). Raise ``Failure`` when it can never hold."""
        raise NotImplementedError

    def describe(self) -> str:
        """What could not be inferred, for the end-of-inference diagnostic."""
        raise NotImplementedError

    def pending_types(self) -> list[Type]:
        """The types that stay unknown while the constraint is pending."""
        return []


class Solver:
    """The queue of constraints (see the module docstring)."""

    def __init__(self, unifier: Unifier,
                 report: Callable[[Constraint, Diagnostic], None]) -> None:
        self.unifier = unifier
        unifier.on_bind = self._wake
        self._report = report
        self._ready: deque[Constraint] = deque()
        self._queued: set[int] = set()            # ids of constraints in _ready
        self._waiting: dict[int, list[Constraint]] = {}
        self._watch: dict[int, set[int]] = {}      # constraint id -> hole uids it waits on
        self._pending: dict[int, Constraint] = {}  # every constraint not yet done
        self.runs = 0                              # how many times constraints ran

    def add(self, constraint: Constraint) -> None:
        """Queue a new constraint (it runs at the next ``solve``)."""
        self._pending[id(constraint)] = constraint
        self._enqueue(constraint)

    def _enqueue(self, constraint: Constraint) -> None:
        key = id(constraint)
        if key in self._pending and key not in self._queued:
            self._queued.add(key)
            self._ready.append(constraint)

    def _wake(self, uid: int) -> None:
        for constraint in self._waiting.pop(uid, ()):
            watch = self._watch.get(id(constraint))
            if watch is not None:
                watch.discard(uid)
            self._enqueue(constraint)

    def solve(self) -> None:
        """Run ready constraints until the queue is empty (a fixpoint)."""
        while self._ready:
            constraint = self._ready.popleft()
            key = id(constraint)
            self._queued.discard(key)
            if key not in self._pending:
                continue
            self.runs += 1
            try:
                waits = constraint.run(self.unifier)
            except Failure as failure:
                self._done(key)
                self._report(constraint, failure.diagnostic)
                continue
            if waits is None:
                self._done(key)
                continue
            watch = self._watch.setdefault(key, set())
            for hole in waits:
                root = self.unifier.find(hole)
                if not isinstance(root, IncompleteType):
                    # Bound meanwhile (the constraint itself may have bound it): retry.
                    self._enqueue(constraint)
                    continue
                if root.uid not in watch:
                    watch.add(root.uid)
                    self._waiting.setdefault(root.uid, []).append(constraint)

    def _done(self, key: int) -> None:
        self._pending.pop(key, None)
        self._watch.pop(key, None)

    def unsolved(self) -> list[Constraint]:
        """Constraints still pending (call after ``solve``), in creation order."""
        return list(self._pending.values())
