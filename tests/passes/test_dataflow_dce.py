"""DeadCodeElimination inside dataflow blocks (spec/semantics.md Shape-Dataflow): the unused
bindings of a block go without the effect analysis being asked (they are pure by the
checker's rule), the values stay the same, and bindings outside blocks keep the usual
conditions."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.passes import get_pass
from relay_ref.passes.effects import Effects

BLOCK = """
def @main(%x: Tensor[(n), float32]) -> Tensor[(n), float32] {
  let %outside = negative(%x);
  dataflow {
    let %a = add(%x, %x);
    let %unused = multiply(%a, %a);
    let %chain = negative(%unused);
    let %b = subtract(%a, %x);
    %b
  }
}
"""


def dce(src: str) -> rr.IRModule:
    return get_pass("DeadCodeElimination")(rr.parse(src))


def run(mod: rr.IRModule, x: np.ndarray) -> np.ndarray:
    return rr.evaluate(mod, x, typecheck=False)


def test_unused_bindings_of_a_block_go_and_the_value_stays() -> None:
    before = rr.parse(BLOCK)
    after = dce(BLOCK)
    text = rr.astext(after)
    assert "%unused" not in text and "%chain" not in text  # a dead chain goes at once
    assert "%outside" not in text                         # pure outside too (as before)
    assert "%a" in text and "%b" in text and "dataflow" in text
    for n in (1, 5):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(run(after, x), run(before, x))
        np.testing.assert_array_equal(run(after, x), x)


def test_the_effect_analysis_is_not_asked_inside_a_block(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """With an analysis that says every value may write, bindings outside blocks stay and
    those inside a block still go: the block's purity is the checker's guarantee."""
    monkeypatch.setattr(Effects, "writes", lambda self, expr: True)
    text = rr.astext(dce(BLOCK))
    assert "%outside" in text
    assert "%unused" not in text and "%chain" not in text
    assert "%a" in text and "%b" in text


def test_a_block_with_nothing_dead_is_returned_as_it_is() -> None:
    src = """
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  dataflow { let %a = add(%x, %x); %a }
}
"""
    mod = rr.parse(src)
    assert get_pass("DeadCodeElimination")(mod) is mod
    np.testing.assert_array_equal(rr.evaluate(mod, np.ones(3, np.float32)),
                                  np.full(3, 2, np.float32))
