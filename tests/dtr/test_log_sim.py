"""The log format and the simulator (spec/dtr.md §8-9): Theorem 3.1 on generated chains, a
paper-style residual log at full and half budget, round trips through LogWriter, located
errors for malformed logs and bad arguments."""

from __future__ import annotations

import json
import math

import pytest

from relay_ref.dtr import DTRError, DTRLogError
from relay_ref.dtr.log import LogCall, LogWriter, read_log
from relay_ref.dtr.simulator import simulate, sweep, unbudgeted_peak
from tests.dtr.chain import chain_log, residual_log, sqrt_budget

# Measured (spec/dtr.md §9): dtr and dtr_eq need 2.85·N, 2.90·N and 2.98·N operations for
# N = 100, 300, 1000 at budget 2·ceil(sqrt(N)); unconstrained the step is 2N + 1.
C = 3.2


@pytest.mark.parametrize("n", [100, 300, 1000])
@pytest.mark.parametrize("dealloc", ["eager", "banish"])
def test_theorem_3_1_linear_chain_in_linear_operations(n, dealloc):
    log = chain_log(n)
    free = simulate(log, None, "dtr_eq", dealloc, "unit")
    assert free.op_executions == 2 * n + 1 and free.rematerializations == 0
    s = simulate(log, sqrt_budget(n), "dtr_eq", dealloc, "unit", overhead_limit=math.inf)
    assert not s.oom
    assert s.peak_bytes <= sqrt_budget(n)
    assert 2 * n + 1 < s.op_executions <= C * n


@pytest.mark.parametrize(("access", "growth"), [("lock", 1.3), ("simrd", 1.6)])
def test_lru_is_superlinear_on_the_chain(access, growth):
    """Without the cost term the chain is not O(N): lru needs 4.5·N, 6.1·N, 9.7·N
    operations for N = 100, 300, 1000 (6.6·N, 11.4·N, 28.1·N with simrd's access
    convention; spec/dtr.md §9)."""
    per_n = []
    for n in (100, 300, 1000):
        s = simulate(chain_log(n), sqrt_budget(n), "lru", "eager", "unit",
                     overhead_limit=math.inf, access=access)
        assert not s.oom
        per_n.append(s.op_executions / n)
    assert per_n[0] > C and per_n[1] > growth * per_n[0] and per_n[2] > growth * per_n[1]


def test_theorem_3_1_exact_and_approximate_agree_closely():
    log = chain_log(300)
    exact = simulate(log, sqrt_budget(300), "dtr", "eager", "unit", overhead_limit=math.inf)
    eq = simulate(log, sqrt_budget(300), "dtr_eq", "eager", "unit", overhead_limit=math.inf)
    assert exact.op_executions <= C * 300 and eq.op_executions <= C * 300
    assert eq.heuristic_evaluations < exact.heuristic_evaluations


def test_simulator_on_a_paper_style_log():
    log = residual_log(8)
    full = simulate(log, 1.0)
    assert full.slowdown == 1.0 and not full.oom and full.rematerializations == 0
    assert full.peak_bytes == unbudgeted_peak(log) == full.budget
    # about half (0.6: this step's backward holds more than half its peak at once)
    half = simulate(log, 0.6, overhead_limit=math.inf)
    assert not half.oom and half.slowdown > 1.0 and half.peak_bytes <= half.budget
    assert half.budget == math.ceil(full.peak_bytes * 0.6)  # options.resolve_budget rounds up
    assert simulate(log, 0.4).oom
    # heuristics differ; every one of them respects the budget
    for h in ("dtr", "dtr_local", "lru", "size", "msps", "random"):
        s = simulate(log, 0.7, h, overhead_limit=math.inf)
        assert s.oom or s.peak_bytes <= s.budget


def test_infeasible_budget_is_oom_not_an_exception():
    log = residual_log(2)
    s = simulate(log, 10)  # below the constants' bytes
    assert s.oom and s.budget == 10
    assert simulate(log, 0.01).oom


def test_log_writer_round_trip_and_artifact_layout(tmp_path):
    path = tmp_path / "run.log"
    with LogWriter(path) as w:
        w.constant("x0", 64)
        w.call("split", ["x0"], ["x1", "x2"], 1500, [32, 0], [None, 0], flops=99)
        w.copy("x3", "x1")
        w.release("x1")
        w.annotate("BACKWARD")
    lines = path.read_text().splitlines()
    assert lines[0] == '{"ANNOTATION":"START","INSTRUCTION":"ANNOTATE"}'
    assert lines[3] == ('{"ARGS":["x0"],"FLOPS":"99","INSTRUCTION":"CALL","NAME":"split",'
                        '"RESULT":["x1","x2"],"TIME":"1500"}')
    assert lines[6] == '{"INSTRUCTION":"MEMORY","MEMORY":"0","NAME":"x2"}'
    assert lines[7] == '{"ALIAS":"0","INSTRUCTION":"ALIAS","NAME":"x2"}'
    recs = read_log(path)
    call = next(r for r in recs if isinstance(r, LogCall))
    assert call == LogCall("split", ("x0",), ("x1", "x2"), 1500, 99, 4)
    s = simulate(path, None, cost="flops")
    assert s.base_compute == 99 and s.peak_bytes == 96


def test_log_writer_is_atomic(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), LogWriter(path) as w:
        w.constant("x0", 8)
        raise RuntimeError("kernel failed")
    assert path.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize(("line", "problem"), [
    ("{not json", "not JSON"),
    ('{"INSTRUCTION":"JUMP"}', "unknown INSTRUCTION \"JUMP\""),
    ('{"ARGS":[],"INSTRUCTION":"CALL","NAME":"f","RESULT":["y"]}', "CALL without TIME"),
    ('{"INSTRUCTION":"MEMORY","MEMORY":"lots","NAME":"y"}', "MEMORY must be an integer"),
    ('{"ARGS":"x","INSTRUCTION":"CALL","NAME":"f","RESULT":["y"],"TIME":"1"}',
     "ARGS must be a list"),
    ('[1, 2]', "a log line is a JSON object"),
])
def test_malformed_lines_are_located(line, problem):
    lines = ['{"INSTRUCTION":"CONSTANT","NAME":"x"}',
             '{"INSTRUCTION":"MEMORY","MEMORY":"8","NAME":"x"}', line]
    with pytest.raises(DTRLogError) as info:
        simulate(lines, None)
    err = info.value
    assert err.line == 3 and problem in err.problem
    assert str(err).startswith("<log>:3:1: error: malformed DTR log")


def test_structural_errors_are_located(tmp_path):
    path = tmp_path / "bad.log"
    path.write_text("\n".join([
        json.dumps({"INSTRUCTION": "CONSTANT", "NAME": "x"}),
        json.dumps({"INSTRUCTION": "MEMORY", "MEMORY": "8", "NAME": "x"}),
        json.dumps({"ARGS": ["x"], "INSTRUCTION": "CALL", "NAME": "f", "RESULT": ["y"],
                    "TIME": "1"}),
        json.dumps({"INSTRUCTION": "MEMORY", "MEMORY": "8", "NAME": "y"}),
        json.dumps({"ARGS": ["z"], "INSTRUCTION": "CALL", "NAME": "g", "RESULT": ["w"],
                    "TIME": "1"}),
    ]) + "\n")
    with pytest.raises(DTRLogError) as info:
        simulate(path, None)
    assert info.value.line == 3 and "MEMORY and ALIAS" in info.value.problem
    assert str(path) + ":3:1" in str(info.value)
    assert '"NAME": "f"' in str(info.value)  # the line is quoted
    lines = path.read_text().splitlines()
    lines.insert(4, json.dumps({"ALIAS": "-1", "INSTRUCTION": "ALIAS", "NAME": "y"}))
    lines += [json.dumps({"INSTRUCTION": "MEMORY", "MEMORY": "8", "NAME": "w"}),
              json.dumps({"ALIAS": "-1", "INSTRUCTION": "ALIAS", "NAME": "w"})]
    with pytest.raises(DTRLogError, match="z is not defined") as info:
        simulate(lines, None)
    assert info.value.line == 6


def test_bad_simulator_arguments():
    log = chain_log(5)
    with pytest.raises(DTRError, match="did you mean lru"):
        simulate(log, 1.0, heuristic="lur")
    with pytest.raises(DTRError, match="non-negative"):
        simulate(log, -5)
    with pytest.raises(DTRError, match=r"in \(0, 1\]"):
        simulate(log, 1.5)
    with pytest.raises(DTRError, match="did you mean unit"):
        simulate(log, 1.0, cost="units")
    with pytest.raises(DTRLogError, match="no FLOPS field"):
        simulate(log, None, cost="flops")
    assert simulate(log, "50%").budget == simulate(log, 0.5).budget


def test_sweep_runs_every_ratio_and_heuristic_once():
    log = residual_log(4)
    seen = []
    points = sweep(log, [1.0, 0.6], ["dtr_eq", "lru"], progress=lambda d, t: seen.append((d, t)))
    assert [(p.heuristic, p.ratio) for p in points] == [
        ("dtr_eq", 1.0), ("dtr_eq", 0.6), ("lru", 1.0), ("lru", 0.6)]
    assert seen[-1] == (4, 4)
    assert points[0].stats == simulate(log, 1.0, "dtr_eq")
    assert points[3].stats == simulate(log, 0.6, "lru")
    with pytest.raises(DTRError, match=r"in \(0, 1\]"):
        sweep(log, [0.5, 0.0])


def test_numpy_numbers_are_budgets():
    import numpy as np
    log = chain_log(20)
    assert simulate(log, np.int64(12), "dtr_eq", cost="unit").budget == 12
    assert simulate(log, np.float64(0.5)).budget == simulate(log, 0.5).budget
    with pytest.raises(DTRError, match="not True"):
        simulate(log, True)


def _pin_log(pin: bool) -> list[str]:
    """x (constant); a = f(x), held by the program itself (PIN when ``pin``); b = g(x);
    c = k(x); d = h(c); then the program drops a, b and c. Sizes 100, costs 1."""
    w = []

    def line(**obj):
        w.append(json.dumps(obj))

    def call(name, args, res):
        line(ARGS=args, INSTRUCTION="CALL", NAME=name, RESULT=[res], TIME="1")
        line(INSTRUCTION="MEMORY", MEMORY="100", NAME=res)
        line(ALIAS="-1", INSTRUCTION="ALIAS", NAME=res)

    line(INSTRUCTION="CONSTANT", NAME="x")
    line(INSTRUCTION="MEMORY", MEMORY="100", NAME="x")
    call("f", ["x"], "a")
    if pin:
        line(INSTRUCTION="PIN", NAME="a")
    call("g", ["x"], "b")
    call("k", ["x"], "c")
    call("h", ["c"], "d")
    for name in "abc":
        line(INSTRUCTION="RELEASE", NAME=name)
    return w


def test_a_pinned_result_is_never_evicted_and_its_release_frees_it():
    # this project's PIN line (spec/dtr.md §8): at d's allocation (budget 400) the
    # simulator evicts the stalest of a and b (c is locked): `a` without PIN, `b` with it;
    # a's RELEASE then frees it for good (D-Free), where without PIN it was only released
    records = read_log(_pin_log(True))
    assert type(records[5]).__name__ == "LogPin" and records[5].name == "a"
    free = simulate(_pin_log(False), 400, "lru", "eager", "unit")
    held = simulate(_pin_log(True), 400, "lru", "eager", "unit")
    assert not free.oom and not held.oom
    assert (held.banished, held.pinned_bytes) == (1, 200)
    assert (free.banished, free.pinned_bytes) == (0, 100)
    assert held.memory_bytes == free.memory_bytes == 200  # x and d
    with pytest.raises(DTRLogError, match="PIN without NAME"):
        read_log(['{"INSTRUCTION":"PIN"}'])


def test_package_exports_the_simulator_functions():
    # review of issue 27: relay_ref.dtr.simulate was the module ("not callable")
    import relay_ref.dtr as dtr
    from relay_ref.dtr.simulator import simulate as function

    assert dtr.simulate is function and callable(dtr.simulate)
    assert dtr.sweep is sweep and dtr.read_log is read_log
    log = chain_log(20)
    assert dtr.simulate(log, sqrt_budget(20), cost="unit") == \
        simulate(log, sqrt_budget(20), "dtr_eq", "eager", "unit")


def test_cost_auto_is_flops_when_every_call_has_them():
    plain = chain_log(30)  # TIME only: auto is measured
    assert simulate(plain, 0.5) == simulate(plain, 0.5, cost="measured")
    with_flops = [json.dumps({**json.loads(x), "FLOPS": 7}) if '"CALL"' in x else x
                  for x in plain]
    auto = simulate(with_flops, 0.5)
    assert auto == simulate(with_flops, 0.5, cost="flops") and auto.base_compute == \
        7 * sum('"CALL"' in x for x in plain)
    with pytest.raises(DTRError, match="did you mean flops"):
        simulate(plain, 0.5, cost="flop")


def test_replay_errors_quote_the_line_of_a_log_given_as_lines():
    call = '{"ARGS":[],"INSTRUCTION":"CALL","NAME":"o","RESULT":["r"],"TIME":"1"}'
    with pytest.raises(DTRLogError) as info:
        simulate([call], 100)
    assert info.value.line == 1 and "(the log ends)" in str(info.value)
    assert call in str(info.value)  # the excerpt, not an empty line
    with pytest.raises(DTRLogError, match=r"line 2 is RELEASE r\)"):
        simulate([call, '{"INSTRUCTION":"RELEASE","NAME":"r"}'], 100)
    # MUTATE indices are JSON integers, as the artifact's parser (which indexes ARGS with
    # them) and its logs have them
    with pytest.raises(DTRLogError, match="JSON integers"):
        read_log(['{"ARGS":["a"],"INSTRUCTION":"MUTATE","MUTATE":["0"],"NAME":"m","TIME":"1"}'])
