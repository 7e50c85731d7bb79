"""PartialEvaluate's guarantee is refinement (spec/partial_eval.md section 0): the residual
program gives the input's value wherever the input returns one, and may return a value
where the input gets stuck on a computation nobody uses (E-Match-Fail, an integer division
by zero). Operators and ``match`` are pure for Tidy-Dead-Let, as TVM's purity analysis
treats them (dead_code.cc: an operator call is pure unless ``TOpIsStateful``); so do
DeadCodeElimination and ToGraphNormalForm."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.passes.dead_code import DeadCodeElimination
from relay_ref.passes.partial_eval import PartialEvaluate
from relay_ref.testing.check import PassCheckError, check_pass

# The issue's program: a dead `match?` and a dead integer division, then 1.
ISSUE = """
def @main(%o: Option[int32], %z: int32) {
  let %u = match? (%o) { Some(%q) => %q };
  let %w = divide(1, %z);
  1
}"""

# The same, with the option made from %z so that generated int32 arguments reach all three
# outcomes: E-Match-Fail (z <= 0), division by zero is behind it (z = 0), and the value.
GENERATED = """
def @main(%z: int32) {
  let %o = if (greater(%z, 0)) { Some(%z) } else { None };
  let %u = match? (%o) { Some(%q) => %q };
  let %w = divide(1, %z);
  1
}"""


def _option(mod: rr.IRModule, name: str, *fields):
    from relay_ref.interpreter.values import ConstructorValue
    ctor = {c.name: c for c in mod.type_definitions["Option"].constructors}[name]
    return ConstructorValue(ctor, tuple(fields))


@pytest.mark.parametrize("some, z, rule", [
    (False, 2, "E-Match-Fail"),
    (True, 0, "division by zero"),
])
def test_the_issue_program_is_stuck_before_and_returns_after(some, z, rule) -> None:
    mod = rr.parse(ISSUE)
    opt = rr.optimize(mod, ["PartialEvaluate"])
    o = _option(mod, "Some", np.array(5, "int32")) if some else _option(mod, "None")
    with pytest.raises(rr.RelayRuntimeError, match=rule):
        rr.evaluate(mod, o, np.int32(z))
    assert int(rr.evaluate(opt, o, np.int32(z))) == 1
    # where the input returns, the value is the same
    assert int(rr.evaluate(mod, _option(mod, "Some", np.array(5, "int32")), np.int32(3))) == 1
    assert int(rr.evaluate(opt, _option(mod, "Some", np.array(5, "int32")), np.int32(3))) == 1


@pytest.mark.parametrize("pass_", [PartialEvaluate(), DeadCodeElimination()],
                         ids=["PartialEvaluate", "DeadCodeElimination"])
def test_refinement_holds_and_strict_errors_shows_what_it_allows(pass_) -> None:
    report = check_pass(pass_, programs=[GENERATED], examples=30, min_fired=3)
    assert report.changed >= 3
    # The same pass, asked to keep every failure, is caught dropping the dead ones.
    with pytest.raises(PassCheckError, match="Match|match|division|stuck|fail"):
        check_pass(pass_, programs=[GENERATED], examples=30, min_fired=3,
                   strict_errors=True)


def test_a_used_failing_computation_is_kept() -> None:
    mod = rr.parse("""
        def @main(%z: int32) {
          let %w = divide(1, %z);
          add(%w, 1)
        }""")
    opt = rr.optimize(mod, ["PartialEvaluate"])
    for m in (mod, opt):
        with pytest.raises(rr.RelayRuntimeError):
            rr.evaluate(m, np.int32(0))
        assert int(rr.evaluate(m, np.int32(1))) == 2
    report = check_pass(PartialEvaluate(), programs=[rr.astext(mod)], examples=20,
                        strict_errors=True, allow_vacuous=True)
    assert report.generated >= 1
