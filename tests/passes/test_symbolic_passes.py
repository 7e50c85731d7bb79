"""Passes keep what match_cast and call_dps_packed mean (T-MatchCast, Shape-DPS): DCE keeps
a dead match_cast that binds shape variables a later one checks; FoldConstant and
PartialEvaluate never evaluate them away."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr

SHADOW = """
def @main(%x: Tensor[(n), int64]) {
  let %v = match_cast(unique(%x), Tensor[(k), int64]);
  let %u = match_cast(%x, Tensor[(k), int64]);
  %u
}"""


def _error(run) -> str:
    with pytest.raises(rr.RelayRuntimeError) as info:
        run()
    return str(info.value)


def test_dce_keeps_a_dead_match_cast_whose_variables_a_later_one_checks() -> None:
    mod = rr.parse(SHADOW)
    out = rr.optimize(mod, ["DeadCodeElimination"])
    assert rr.astext(out).count("match_cast") == 2
    x = np.array([1, 2, 3, 3])
    # k is 3 (three distinct values), the second match_cast sees 4 elements: both engines
    assert "k is 3 but the value has 4" in _error(lambda: rr.evaluate(mod, x))
    assert "k is 3 but the value has 4" in _error(lambda: rr.compile(mod)(x))
    y = np.array([1, 2, 3])
    np.testing.assert_array_equal(rr.compile(mod)(y), y)


def test_dce_drops_a_dead_match_cast_that_binds_nothing() -> None:
    mod = rr.parse("""
def @main(%x: Tensor[(n), int64]) {
  let %v = match_cast(%x, Tensor[(?), int64]);
  %x
}""")
    assert "match_cast" not in rr.astext(rr.optimize(mod, ["DeadCodeElimination"]))


@pytest.mark.parametrize("pass_name", ["FoldConstant", "PartialEvaluate"])
def test_folding_keeps_match_cast_of_a_constant(pass_name: str) -> None:
    mod = rr.parse("""
def @main() {
  match_cast(ones(shape=[3], dtype="float32"), Tensor[(k), float32])
}""")
    out = rr.optimize(mod, [pass_name])
    assert "match_cast" in rr.astext(out)
    np.testing.assert_array_equal(rr.evaluate(out), np.ones(3, "float32"))
