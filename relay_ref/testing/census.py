"""The census of generated soundness programs: how often each feature the property is
about actually happens, statically (the program uses it) and at run time (a trace shows it
was evaluated), so a test can insist the soundness property is not vacuous.

``census(cases)`` type-checks and evaluates each ``sound_programs`` case with a plain trace
(``evaluate(..., trace=True)``: each event names the node a rule was applied to) and
counts, per program:

* ``ref-result``: ``@main``'s type holds a ``ref`` and the program returned a value (so
  V-Ref and V-Store were checked on it);
* ``clause-first`` / ``clause-second``: a complete two-clause ``match`` took its first /
  its second clause (clauses are generated in both orders, so together: every clause);
* ``escape-called``: the body of a closure that escaped (tuple, ``Box``, ``ref``, a
  function's result) was evaluated, i.e. the closure was called after it escaped;
* ``recursed``: a recursive function (the let-recursive loop, ``@len``) called itself;
* ``match?``: a ``match?`` was evaluated (E-Match or E-Match-Fail at it);
* ``match-failed``: the program got stuck by E-Match-Fail;
* ``?``: the program has a ``?`` annotation; ``unannotated``: an unannotated binder;
* ``op-failed``: an operator (``divide``, ``take``) failed at run time;
* ``cast checked and passed``: a run-time cast (E-Cast, spec/semantics.md 4.2) checked a
  value and let it through; ``cast failed``: the program got stuck by Stuck-Cast (or by an
  operator whose operands, come through ``?``, do not broadcast);
* ``value``: the program returned a value.

Every case is also checked by ``check_soundness`` (a violation raises). The casts are
counted by wrapping the deep check the interpreter's casts call
(``relay_ref.interpreter.casts.value_mismatch``) for the traced evaluation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from relay_ref.diagnostics import RelayRuntimeError
from relay_ref.interpreter.driver import evaluate
from relay_ref.ir.expr import Match
from relay_ref.testing.soundness import check_soundness, stuck_kind
from relay_ref.typecheck.infer import infer_types

__all__ = ["CENSUS_KEYS", "census"]

CENSUS_KEYS = ("ref-result", "clause-first", "clause-second", "escape-called", "recursed",
               "match?", "match-failed", "?", "unannotated", "op-failed",
               "cast checked and passed", "cast failed", "value")


@contextmanager
def _counting_casts() -> Iterator[Counter[str]]:
    """Counts of the interpreter's run-time cast checks (``"passed"``, ``"failed"``) while
    the block runs."""
    import relay_ref.interpreter.casts as casts

    counts: Counter[str] = Counter()
    check = casts.value_mismatch

    def counted(*args: object, **kwargs: object) -> object:
        problem = check(*args, **kwargs)  # type: ignore[arg-type]
        counts["passed" if problem is None else "failed"] += 1
        return problem

    casts.value_mismatch = counted  # type: ignore[assignment]
    try:
        yield counts
    finally:
        casts.value_mismatch = check


def census(cases: Iterable[object]) -> Counter[str]:
    """Counts of ``CENSUS_KEYS`` (each at most once per program) and ``"programs"``."""
    counts: Counter[str] = Counter()
    for case in cases:
        outcome = check_soundness(case)
        counts["programs"] += 1
        typed = infer_types(case.module)  # type: ignore[attr-defined]
        with _counting_casts() as casts:
            try:
                _, events = evaluate(typed, trace=True)
            except RelayRuntimeError as err:
                events = getattr(err, "trace", None) or []
                assert stuck_kind(err) == outcome.stuck
        hits: Counter[int] = Counter(id(e.expr) for e in events)
        features = case.features  # type: ignore[attr-defined]
        marks = case.marks  # type: ignore[attr-defined]
        found: set[str] = set()
        if outcome.stuck is None:
            found.add("value")
            if "ref-result" in features:
                found.add("ref-result")
        for clauses in case.clauses:  # type: ignore[attr-defined]
            if len(clauses) == 2:
                if hits[id(clauses[0])]:
                    found.add("clause-first")
                if hits[id(clauses[1])]:
                    found.add("clause-second")
        if any(hits[id(node)] for node in marks.get("escape", ())):
            found.add("escape-called")
        len_body = typed.functions["len"].body
        if any(hits[id(node)] >= 2 for node in marks.get("recursion", ())) or \
                hits[id(len_body)] >= 2:
            found.add("recursed")
        if any(isinstance(e.expr, Match) and not e.expr.complete for e in events):
            found.add("match?")
        if outcome.stuck == "match-fail":
            found.add("match-failed")
        if outcome.stuck in ("divide", "take"):
            found.add("op-failed")
        if casts["passed"]:
            found.add("cast checked and passed")
        if outcome.stuck in ("cast", "broadcast"):
            found.add("cast failed")
        found |= {f for f in ("?", "unannotated") if f in features}
        counts.update(found)
    return counts
