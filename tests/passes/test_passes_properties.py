"""Every pass of relay_ref.passes on generated and large programs.

* Meaning: on generated well-typed programs (``typed_strategies.well_typed_modules``) each
  pass returns a module that type-checks with ``@main``'s type unchanged and gives the same
  value (where the input gives one: passes may only refine).
* Linear cost on shared graphs: the work (``step_count``, executed Python lines) at most
  doubles, plus a constant, when the program doubles (residual and let chains).
* Depth: a 10 000-deep let chain goes through every pass without touching Python's limit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import relay_ref as rr
from relay_ref.interpreter.values import value_to_text
from relay_ref.passes import get_pass
from relay_ref.testing.growth import let_residual_chain, residual_chain, step_count
from relay_ref.testing.typed_strategies import let_chain_module, well_typed_modules

PASSES = ["ToANormalForm", "ToGraphNormalForm", "DeadCodeElimination", "FoldConstant",
          "EliminateCommonSubexpr", "SimplifyExpr", "Inline", "LambdaLift", "SimplifyInference",
          "FoldScaleAxis", "FuseOps", "DefuseOps"]


def _same(a: object, b: object) -> bool:
    if isinstance(a, rr.Closure | rr.RecClosure):
        return isinstance(b, rr.Closure | rr.RecClosure)  # functions are not compared
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return (a.shape == b.shape and a.dtype == b.dtype
                and bool(np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, rr.ConstructorValue) and isinstance(b, rr.ConstructorValue):
        return a.constructor.name == b.constructor.name and _same(tuple(a.fields),
                                                                  tuple(b.fields))
    if isinstance(a, rr.RefValue) and isinstance(b, rr.RefValue):
        return _same(a.value, b.value)
    return value_to_text(a) == value_to_text(b)


def check_refines(name: str, mod: rr.IRModule, *args: object) -> rr.IRModule:
    """Run pass ``name`` on ``mod``; assert the result type-checks with the same @main
    type and gives the same value. Returns the checked result."""
    mod = rr.infer_types(mod)
    out = rr.infer_types(get_pass(name)(mod))
    assert rr.alpha_equal(out.global_types["main"], mod.global_types["main"])
    try:
        before = rr.evaluate(mod, *args)
    except rr.RelayRuntimeError:
        return out  # the input fails: any outcome refines it
    after = rr.evaluate(out, *args)
    assert _same(before, after), (name, value_to_text(before), value_to_text(after),
                                  rr.astext(out))
    return out


@pytest.mark.parametrize("name", PASSES)
@settings(max_examples=40)
@given(case=well_typed_modules())
def test_pass_keeps_types_and_values_of_generated_programs(name: str, case) -> None:
    mod, _ = case
    check_refines(name, mod)


@pytest.mark.parametrize("name", PASSES)
def test_pass_is_linear_on_shared_graphs(name: str) -> None:
    for gen in (residual_chain, let_residual_chain):
        small, large = rr.infer_types(rr.parse(gen(150))), rr.infer_types(rr.parse(gen(300)))
        p = get_pass(name)
        cost_small = step_count(lambda p=p, m=small: p(m))
        cost_large = step_count(lambda p=p, m=large: p(m))
        assert cost_large <= 2.1 * cost_small + 2000, (name, gen.__name__, cost_small,
                                                       cost_large)


@pytest.mark.parametrize("name", PASSES)
def test_pass_survives_a_10000_deep_let_chain(name: str) -> None:
    mod = rr.infer_types(let_chain_module(10_000))
    out = rr.infer_types(get_pass(name)(mod))
    x = np.arange(4, dtype="float32")
    np.testing.assert_array_equal(rr.evaluate(out, x), x * 10_001)


@pytest.mark.parametrize("name", PASSES)
def test_pass_keeps_the_residual_chain_meaning(name: str) -> None:
    x = np.array([-2, -1e-3, 0, 1e-3, 1, 3, 0.5, -0.5], "float32")
    check_refines(name, rr.parse(residual_chain(50)), x)
