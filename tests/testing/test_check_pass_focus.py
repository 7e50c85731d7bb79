"""``check_pass`` cannot be fooled: deliberately wrong passes (``buggy_passes``, each a few
lines over ``rewrite``) are caught with default settings (automatic focus) and a small
counterexample; correct passes raise no false alarm; a pass that never fires is vacuous,
not "ok"; focused generation puts the focused constructs into most programs."""

from __future__ import annotations

import buggy_passes as bp
import pytest
from hypothesis import HealthCheck, given, settings

import relay_ref as rr
from relay_ref.ir.expr import Call, Op
from relay_ref.ir.visitor import post_order
from relay_ref.testing import CheckReport, PassCheckError, VacuousCheck, check_pass
from relay_ref.testing.programs import programs, resolve_focus


def _lines(mod) -> int:
    """Lines of Relay text, the metadata section (constants' bytes) not counted."""
    return len(rr.astext(mod).split("#[metadata]")[0].strip().splitlines())


@pytest.mark.parametrize("pass_, op", [
    (bp.swap_where, "where"), (bp.clip_bounds_swapped, "clip"),
    (bp.floor_divide_as_divide, "floor_divide"), (bp.concatenate_reversed, "concatenate"),
    (bp.sigmoid_as_tanh, "sigmoid"), (bp.x_minus_x_is_zero, "subtract"),
    (bp.transpose_rank3_reversed, "transpose"), (bp.take_clip_as_wrap, "take"),
    (bp.maximum_as_minimum, "maximum"), (bp.drop_relu, "nn.relu"),
    (bp.x_times_zero_is_zero, "multiply"),
], ids=lambda p: getattr(p, "__name__", str(p)))
def test_a_wrong_pass_is_caught_with_default_settings(pass_, op):
    with pytest.raises(PassCheckError) as info:
        check_pass(pass_)
    err = info.value
    assert not isinstance(err, VacuousCheck), str(err)
    text = rr.astext(err.before)
    assert f"{op}(" in text, text
    assert _lines(err.before) <= 8, text  # shrunk: a few lines
    assert err.report is not None and op in err.report.focus  # the focus found the op


@pytest.mark.parametrize("pass_", [bp.commute_add], ids=["commute-add"])
def test_a_correct_pass_that_fires_passes_with_a_report(pass_):
    report = check_pass(pass_)
    assert isinstance(report, CheckReport)
    assert report.fired >= 20 and report.verdict == "ok"
    assert report.changed >= report.fired and report.generated >= report.changed
    assert "add" in report.operators
    assert "changed and compared" in report.summary()


def test_a_pass_that_never_fires_is_vacuous_not_ok():
    with pytest.raises(VacuousCheck) as info:
        check_pass(bp.never_fires, examples=30)
    err = info.value
    assert isinstance(err, PassCheckError)
    text = str(err)
    assert "vacuous" in text and "0 of 30 programs" in text and "focus=" in text
    assert err.report.fired == 0 and err.report.probed > 0
    # the escape: a pass that legitimately rarely fires
    report = check_pass(bp.never_fires, examples=30, allow_vacuous=True)
    assert report.verdict == "vacuous (allowed)"


@pytest.mark.parametrize("pass_", [lambda m: m, bp.rename_variables],
                         ids=["identity", "rename-variables"])
def test_correct_passes_that_change_nothing_raise_no_false_alarm(pass_):
    report = check_pass(pass_, examples=40, allow_vacuous=True)
    assert report.changed == 0 and report.generated == 40


def test_a_rarely_firing_correct_pass_is_vacuous_then_focused():
    with pytest.raises(VacuousCheck):
        check_pass(bp.fold_zero_times_one, examples=40)
    prog = "def @main(%x: float32) -> float32 { add(multiply(0f, 1f), %x) }"
    report = check_pass(bp.fold_zero_times_one, programs=[prog], examples=20)
    assert report.fired == report.generated > 0


def test_a_given_focus_is_used_and_unknown_names_are_clear():
    report = check_pass(bp.commute_add, focus="add", examples=80)
    assert report.focus == ("add",) and report.focus_source == "given"
    assert report.fired >= 20
    with pytest.raises(ValueError, match="did you mean 'maximum'"):
        check_pass(bp.commute_add, focus="maximun")


@pytest.mark.parametrize("name", ["maximum", "nn.relu", "reduce", "concatenate"])
def test_focused_generation_puts_the_focus_into_most_programs(name):
    focus = resolve_focus(name)
    seen = [0, 0]

    @settings(max_examples=60, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(focus=focus, edge=True))
    def draw(mod):
        rr.infer_types(mod)  # well-typed
        seen[0] += 1
        seen[1] += any(isinstance(n, Call) and isinstance(n.op, Op) and n.op.name in focus.ops
                       for fn in mod.functions.values() for n in post_order(fn))

    draw()
    assert seen[1] >= seen[0] // 2, seen


def test_a_pilot_that_said_no_focus_is_needed_gets_a_focused_rerun(monkeypatch):
    """When the pilot over-estimates how often a pass fires unfocused (it said no focus is
    needed) and the unfocused run is vacuous, check_pass reruns once, focused on what the
    run saw the pass change (or, when it changed nothing, on what the search finds): a
    correct, rarely firing pass (maximum's operands swapped) then reaches min_fired."""
    import relay_ref.testing.autofocus as autofocus
    from relay_ref.testing.focus import Focus

    real = autofocus.infer_focus
    calls = []

    def overconfident(*args, trust_pilot=True, **kwargs):
        calls.append(trust_pilot)
        return (Focus(), "none", 0) if trust_pilot else real(*args, trust_pilot=False,
                                                             **kwargs)

    monkeypatch.setattr(autofocus, "infer_focus", overconfident)
    swap_max = bp.on_nodes(
        lambda n: Call(Op("maximum"), n.args[::-1], n.attrs) if bp.is_call(n, "maximum")
        else None, "swap_max")
    report = check_pass(swap_max)
    assert calls[0] is True
    assert report.focus_source == "rerun" and "maximum" in report.focus, report.text()
    assert not report.vacuous and report.fired >= 20, report.text()


def test_min_fired_zero_is_never_vacuous():
    report = check_pass(bp.on_nodes(lambda n: None, "never"), min_fired=0, examples=5,
                        focus=())
    assert report.fired == 0 and not report.vacuous and report.verdict == "ok"
