"""Passes that drop or move code keep where a stateful shared node is evaluated
(spec/semantics.md 2.3, spec/partial_eval.md 0): dropping a dead ``let`` that holds one use
of a shared ``ref``/``ref_read`` would move the node's evaluation (into a closure's body, or
past a write), so DeadCodeElimination keeps it; LambdaLift binds captured shared nodes
first."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.passes import get_pass
from relay_ref.passes.registry import pass_names
from relay_ref.testing import check_pass

# the reviewer's reproducer: a shared cell used in a closure and by a dead let
CELL = """
def @main() {
  %0 = ref(0);
  let %f = fn () { ref_write(%0, add(ref_read(%0), 1)); ref_read(%0) };
  let %z = ref_read(%0);
  (%f(), %f())
}
"""
# the same with a shared read: dropping %z would move the read into the closure
READ = """
def @main() {
  let %r = ref(0);
  %0 = ref_read(%r);
  let %f = fn () { ref_write(%r, add(ref_read(%r), 1)); add(%0, ref_read(%r)) };
  let %z = %0;
  (%f(), %f())
}
"""
# no closure: dropping the first use moves the read past a write
LATER = """
def @main() {
  let %r = ref(1);
  %0 = ref_read(%r);
  let %z = %0;
  let %u = ref_write(%r, 5);
  (%0, %0)
}
"""
# the dead use sits in an if inside a dead binding; a pure dead binding still goes
BRANCH = """
def @main() {
  %0 = ref(0);
  let %f = fn () { ref_write(%0, add(ref_read(%0), 1)); ref_read(%0) };
  let %g = if (True) { let %y = ref_read(%0); 0 } else { 1 };
  let %dead = add(1, 2);
  (%f(), %f())
}
"""
# every use of the shared cell is in one dead binding: it goes with it
ALL_DEAD = """
def @main() {
  %0 = ref(0);
  let %b = (%0, ref_read(%0));
  (1, 2)
}
"""
CASES = [(CELL, (1, 2)), (READ, (1, 2)), (LATER, (1, 1)), (BRANCH, (1, 2)),
         (ALL_DEAD, (1, 2))]
IDS = ["cell", "read", "later", "branch", "all-dead"]


def _plain(value):
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return int(np.asarray(value))


@pytest.mark.parametrize("src, want", CASES, ids=IDS)
def test_the_interpreter_and_the_compiler_agree(src, want) -> None:
    mod = rr.parse(src)
    assert _plain(rr.evaluate(mod)) == want
    assert _plain(rr.compile(mod)()) == want  # the default pipeline runs DCE
    assert _plain(rr.compile(mod, passes=())()) == want


@pytest.mark.parametrize("name", pass_names())
@pytest.mark.parametrize("src, want", CASES, ids=IDS)
def test_each_pass_keeps_the_value(src, want, name) -> None:
    out = get_pass(name)(rr.parse(src))
    assert _plain(rr.evaluate(out)) == want


def test_dce_keeps_only_the_pinned_bindings() -> None:
    out = rr.astext(get_pass("DeadCodeElimination")(rr.parse(BRANCH)))
    assert "%g" in out and "%dead" not in out
    out = rr.astext(get_pass("DeadCodeElimination")(rr.parse(ALL_DEAD)))
    assert "ref(" not in out


def test_dce_refines_on_programs_sharing_effects_with_closures() -> None:
    report = check_pass(get_pass("DeadCodeElimination"),
                        programs=[src for src, _ in CASES], examples=20, min_fired=2)
    assert report.fired >= 2  # BRANCH and ALL_DEAD lose bindings; the others are kept


# a fn literal holding a use of a shared cell, substituted by ToGraphNormalForm into
# another literal, would move the cell's scope into that literal's body
MOVED = """
def @main() {
  %0 = ref(0);
  let %g = fn () { ref_write(%0, add(ref_read(%0), 1)); ref_read(%0) };
  let %f = fn () { let %y = %0; %g() };
  (%f(), %f())
}
"""


@pytest.mark.parametrize("name", ["ToGraphNormalForm", "DeadCodeElimination", "LambdaLift",
                                  "PartialEvaluate", "Inline"])
def test_a_literal_using_a_shared_cell_is_not_moved(name) -> None:
    mod = rr.parse(MOVED)
    assert _plain(rr.evaluate(mod)) == (1, 2)
    assert _plain(rr.evaluate(get_pass(name)(mod))) == (1, 2)
    assert _plain(rr.compile(mod)()) == (1, 2)


# FoldConstant: a folded if drops its other branch (a use of the cell) ...
FOLD_ELSE = """
def @main() {
  %0 = ref(0);
  let %f = fn () { ref_write(%0, add(ref_read(%0), 1)); ref_read(%0) };
  let %g = if (True) { 0 } else { ref_read(%0) };
  (%f(), %f(), %g)
}
"""
# ... or lifts the taken branch out of its scope: %0, anchored before the branch, would
# be read at its first use, after the write
FOLD_TAKEN = """
def @main() {
  let %r = ref(1);
  %0 = ref_read(%r);
  let %a = if (True) { (ref_write(%r, 5), %0).1 } else { 0 };
  (%a, %0)
}
"""
# ... and a folded projection drops the other fields (a literal using the cell)
FOLD_PROJ = """
def @main() {
  %0 = ref(0);
  let %f = fn () { ref_write(%0, add(ref_read(%0), 1)); ref_read(%0) };
  let %p = (fn () { ref_read(%0) }, 7).1;
  (%f(), %f(), %p)
}
"""


@pytest.mark.parametrize("src, want", [(FOLD_ELSE, (1, 2, 0)), (FOLD_TAKEN, (1, 1)),
                                       (FOLD_PROJ, (1, 2, 7))],
                         ids=["else", "taken", "projection"])
@pytest.mark.parametrize("name", ["FoldConstant", "SimplifyExpr", "DeadCodeElimination",
                                  "ToGraphNormalForm", "PartialEvaluate"])
def test_folding_keeps_where_the_shared_node_is_evaluated(src, want, name) -> None:
    mod = rr.parse(src)
    assert _plain(rr.evaluate(mod)) == want
    assert _plain(rr.evaluate(get_pass(name)(mod))) == want
    assert _plain(rr.compile(mod)()) == want


def test_folding_still_folds_without_stateful_sharing() -> None:
    src = "def @main() { %0 = add(1, 2); let %g = if (True) { %0 } else { 0 }; (%g, %0) }"
    out = rr.astext(get_pass("FoldConstant")(rr.parse(src)))
    assert "if" not in out
