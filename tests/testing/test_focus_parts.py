"""The parts behind a focused check: changed regions (what a pass rewrote), focus names,
focused forms, and values that matter reaching the focused operators' arguments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import relay_ref as rr
from relay_ref.ir.expr import Call, Constant, Match, Op, RefCreate, TupleGetItem
from relay_ref.ir.types import TensorType
from relay_ref.ir.visitor import post_order
from relay_ref.passes.registry import get_pass
from relay_ref.testing.focus import focus_values
from relay_ref.testing.programs import arguments, focus_sigs, programs, resolve_focus
from relay_ref.testing.regions import changed, changed_regions, summarise

_DRAW = settings(max_examples=60, database=None, derandomize=True, deadline=None,
                 suppress_health_check=list(HealthCheck))


def _regions(src: str, after_src: str):
    before, after = rr.infer_types(rr.parse(src)), rr.parse(after_src)
    return summarise(changed_regions(before, after))


def test_a_region_is_where_the_programs_differ():
    src = """def @main(%c: bool, %a: float32, %b: float32) -> float32 {
      add(where(%c, %a, %b), %a) }"""
    swapped = src.replace("where(%c, %a, %b)", "where(%c, %b, %a)")
    assert _regions(src, swapped).roots == {"where"}  # not the add above it
    cat = """def @main(%a: Tensor[(3), float32], %b: Tensor[(3), float32]) -> Tensor[(6), float32] {
      concatenate((%a, exp(%b))) }"""
    reversed_ = cat.replace("(%a, exp(%b))", "(exp(%b), %a)")
    regions = _regions(cat, reversed_)
    assert regions.roots == {"concatenate"} and regions.ops == {"concatenate", "exp"}


def test_merging_equal_calls_is_a_change():
    src = "def @main(%x: float32) -> float32 { add(exp(%x), exp(%x)) }"
    before = rr.infer_types(rr.parse(src))
    merged = get_pass("EliminateCommonSubexpr")(before)
    assert rr.alpha_equal(before, merged) and changed(before, merged)
    assert not changed(before, before)


def test_focus_names_operators_families_and_forms():
    focus = resolve_focus("maximum, reduce, match")
    assert "maximum" in focus.ops and "sum" in focus.ops and "argmax" in focus.ops
    assert focus.forms == ("match",) and focus.names == ("maximum", "reduce", "match")
    with pytest.raises(ValueError, match="not an operator, op family or expression form"):
        resolve_focus(["relu"])


@pytest.mark.parametrize("form, node", [("match", Match), ("ref", RefCreate)])
def test_a_focused_form_is_in_most_programs(form, node):
    seen = [0, 0]

    @_DRAW
    @given(programs(focus=resolve_focus(form)))
    def draw(mod):
        seen[0] += 1
        seen[1] += any(isinstance(n, node) for fn in mod.functions.values()
                       for n in post_order(fn))

    draw()
    assert seen[1] >= seen[0] // 2, seen


def test_a_focused_tuple_valued_op_is_also_used_through_its_fields():
    """Rewrites of tuple-valued ops match a projection (``nn.batch_norm(...).0``): focused
    generation projects such calls too, not only returning the whole tuple."""
    seen = [0, 0]

    @_DRAW
    @given(programs(focus=resolve_focus("nn.batch_norm")))
    def draw(mod):
        seen[0] += 1
        seen[1] += any(isinstance(n, TupleGetItem) and isinstance(n.tuple_value, Call)
                       and getattr(n.tuple_value.op, "name", "") == "nn.batch_norm"
                       for fn in mod.functions.values() for n in post_order(fn))

    draw()
    assert seen[1] >= seen[0] // 5, seen


def test_values_that_matter_reach_focused_arguments():
    # relu: both sides of 0, tiny, signed zero, nan; only ordinary ones without edge values
    relu = focus_values(["nn.relu"], "float32")
    assert -1e-3 in relu and any(np.isnan(v) for v in relu)
    assert not any(np.isnan(v) or abs(v) > 1e6 for v in focus_values(["nn.relu"], "float32",
                                                                        edge=False))
    # integer overflow and division by zero; only values the dtype holds
    assert {0, -1, -(2**31)} <= set(focus_values(["floor_divide"], "int32"))
    assert -(2**31) not in focus_values(["floor_divide"], "int8")
    # reductions: an empty axis list and zero-extent inputs among the focused signatures
    sums = focus_sigs("sum")
    assert any(s.attrs.axis == () for s in sums)
    assert any(isinstance(a, TensorType) and 0 in a.shape for s in sums for a in s.args)
    # clip: bounds that differ (the ordinary table has only synthesised equal ones)
    assert any(s.attrs.a_min < s.attrs.a_max for s in focus_sigs("clip"))
    # the drawn arguments hold them
    values: set[float] = set()

    @_DRAW
    @given(arguments([TensorType((2, 3), "float32")], edge=True, focus=resolve_focus("nn.relu")))
    def draw(args):
        values.update(np.asarray(args[0]).ravel().tolist())

    draw()
    assert -1e-3 in {round(v, 6) for v in values if np.isfinite(v)}


def test_focused_constants_take_values_that_matter():
    found: set[float] = set()

    @_DRAW
    @given(programs(focus=resolve_focus("clip"), edge=True))
    def draw(mod):
        for fn in mod.functions.values():
            for n in post_order(fn):
                if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "clip":
                    found.update(float(x) for a in n.args if isinstance(a, Constant)
                                 for x in np.asarray(a.data).ravel())

    draw()
    assert found & {6.0, 7.0, -2.0}  # on and beyond the bounds of clip's values table


def test_a_changed_constant_is_a_change_of_its_operator():
    """``x + 1`` to ``x + 2``: the region is the add (a leaf names no form to focus on)."""
    from relay_ref.testing.regions import changed_regions, summarise

    a = rr.parse("def @main(%x: Tensor[(2), float32]) { add(%x, 1f) }")
    b = rr.parse("def @main(%x: Tensor[(2), float32]) { add(%x, 2f) }")
    regions = summarise(changed_regions(a, b))
    assert regions.roots == {"add"} and regions.ops == {"add"}


def test_programs_and_focus_are_checked_on_entry():
    from relay_ref.testing import check_pass

    def same(m):
        return m

    with pytest.raises(TypeError, match="programs must be IRModules or Relay texts"):
        check_pass(same, examples=3, programs=5)
    with pytest.raises(ValueError, match="has no @main"):
        check_pass(same, examples=3, programs=["def @f(%x: float32) { %x }"])
    one = check_pass(same, examples=3, allow_vacuous=True,
                     programs="def @main(%x: float32) { %x }")  # one text: one program
    assert one.generated == 3 and one.changed == 0
    assert check_pass(same, examples=3, allow_vacuous=True, focus={"add"}).focus == ("add",)
    with pytest.raises(TypeError, match="focus must be a str or an iterable of str"):
        check_pass(same, examples=3, focus=3)
