"""DTR as an executor runtime (``rr.compile(mod, memory_budget=...)``, relay_ref/dtr/runtime.py;
spec/dtr.md §2 and §6).

* Training steps (an MLP, a small CNN with batch norm, a residual network, an attention
  block, all through ``gradient(@loss)``; a recursive TreeLSTM-style model over a tree ADT
  through ``rr.gradient``'s higher-order mode) give **bit-identical** results with and
  without a budget, at every ratio of a sweep in 0.1 steps down to the lowest feasible one
  (which must reach ``REACHES``); every run's peak is at most the budget plus the largest
  single allocation; the lowest budgets evict and rematerialise (so the comparison means
  something); a quarter of the peak is out of memory, located at a Relay expression.
* Theorem 3.1 through ``rr.gradient``: a chain of N relu/tanh layers on one unit-size
  tensor, unfused (each op a kernel step), budget ``2 * ceil(sqrt(N))`` units beside the
  pinned bytes, ``cost="unit"``: the operator count stays <= C * N (``THEOREM_CASES``:
  the measured constants, and how they grow from N = 100 to 1000 with eager eviction
  rather than the theorem's banishing), and the simulator replaying the run's log does
  exactly what the run did.
* Bad arguments are clear errors; a budget below the pinned bytes and an infeasible one are
  located ``RelayRuntimeError`` s naming the budget and the pinned bytes; ``exe.dtr_stats``
  is fresh per call.
"""

from __future__ import annotations

import gc
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.dtr.errors import DTRError
from relay_ref.dtr.log import read_log
from relay_ref.dtr.runtime import DTRRuntime
from relay_ref.dtr.simulator import simulate
from tests.dtr.dtr_models import MODELS, leaves

#: a budget ratio each model's step must reach with dtr_eq and eager eviction (the lowest
#: feasible one, found by the test's sweep, is at most this: measured with the engine of
#: this commit mlp 0.8, cnn 0.7, resnet 0.4, attention 0.9, treelstm 1.0 -- of the peak of
#: the program as compiled, whose gradients are computed where their inputs are ready
#: (relay_ref/dtr/schedule.py): that lowers the MLP's and the attention block's peaks by
#: 21 % and 13 %, so the same bytes are a larger ratio. The TreeLSTM's higher-order
#: gradient keeps every value in closures and reference cells, all pinned by the executor's
#: liveness rule: nothing to evict but what the program dropped)
REACHES = {"mlp": 0.8, "cnn": 0.8, "resnet": 0.5, "attention": 0.9, "treelstm": 1.0}
SWEEP = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
_CACHE: dict[str, tuple[Any, list[Any], list[np.ndarray]]] = {}


def _model(name: str) -> tuple[Any, list[Any], list[np.ndarray]]:
    """(module, args, the unbudgeted executable's result tensors), once per model."""
    if name not in _CACHE:
        mod, args = MODELS[name]()
        _CACHE[name] = mod, args, leaves(rr.compile(mod)(*args))
    return _CACHE[name]


def _bit_identical(want: list[np.ndarray], got: list[np.ndarray]) -> bool:
    return len(want) == len(got) and all(
        w.dtype == g.dtype and w.shape == g.shape and np.array_equal(w, g, equal_nan=True)
        for w, g in zip(want, got, strict=True))


def _check_run(exe: Any, want: list[np.ndarray], args: list[Any]) -> Any:
    got = leaves(exe(*args))
    stats = exe.dtr_stats
    runtime = exe.runtime
    assert isinstance(runtime, DTRRuntime)
    assert _bit_identical(want, got)
    assert stats.peak_bytes <= stats.budget + runtime.largest_allocation
    assert not stats.oom
    return stats


@pytest.mark.parametrize("name", list(MODELS))
def test_training_steps_are_bit_identical_down_to_the_lowest_feasible_budget(name: str
                                                                            ) -> None:
    mod, args, want = _model(name)
    lowest, stats = None, None
    for ratio in SWEEP:  # down to the first infeasible ratio
        exe = rr.compile(mod, memory_budget=ratio)
        try:
            stats = _check_run(exe, want, args)
        except rr.RelayRuntimeError as err:
            assert "out of memory" in str(err) and err.span is not None
            break
        lowest = ratio
        assert stats.evictions > 0  # eager eviction of dropped values at least
        assert exe.runtime.handles > 0
    assert lowest is not None and lowest <= REACHES[name]
    if lowest < 1.0:  # the lowest budget rematerialises
        assert stats.rematerializations > 0 and stats.slowdown > 1.0
    # far below: out of memory, located at the Relay call that could not run
    exe = rr.compile(mod, memory_budget=0.25)
    with pytest.raises(rr.RelayRuntimeError) as info:
        exe(*args)
    message = str(info.value)
    assert "out of memory" in message and f"budget of {exe.runtime.budget} bytes" in message
    assert "pinned" in message and info.value.span is not None


def test_a_budget_in_bytes_and_as_a_percentage_are_the_same_run() -> None:
    mod, args, want = _model("resnet")
    first = rr.compile(mod, memory_budget="60%")
    a = _check_run(first, want, args)
    second = rr.compile(mod, memory_budget=a.budget)
    b = _check_run(second, want, args)
    assert (a.budget, a.evictions, a.rematerializations, a.peak_bytes) == \
        (b.budget, b.evictions, b.rematerializations, b.peak_bytes)
    # fresh statistics per call, the budget fixed after the first
    again = _check_run(first, want, args)
    assert again is not a and again.budget == a.budget and again.evictions == a.evictions


@pytest.mark.parametrize("heuristic", ["dtr", "dtr_local", "lru", "size", "msps", "random",
                                       "ablation(s=1,m=0,c=eq)"])
@pytest.mark.parametrize("dealloc", ["eager", "banish", "ignore"])
def test_every_heuristic_and_dealloc_policy_keeps_the_values(heuristic: str,
                                                              dealloc: str) -> None:
    # at 0.9 of the peak every combination is feasible (a sweep; banish reaches least far)
    mod, args, want = _model("mlp")
    exe = rr.compile(mod, memory_budget=0.9, heuristic=heuristic, dealloc=dealloc)
    stats = _check_run(exe, want, args)
    assert stats.evictions > 0
    assert stats.heuristic.startswith(heuristic.split("(")[0]) and stats.dealloc == dealloc


@pytest.mark.parametrize("cost", ["flops", "unit", "measured"])
def test_cost_models(cost: str) -> None:
    mod, args, want = _model("resnet")
    exe = rr.compile(mod, memory_budget=0.6, cost=cost)
    stats = _check_run(exe, want, args)
    assert stats.base_compute > 0 and stats.remat_compute > 0
    if cost == "unit":  # one unit per kernel step
        assert stats.base_compute + stats.remat_compute == stats.op_executions


def test_flops_cost_is_defined_beside_the_ops() -> None:
    from relay_ref.ops.registry import get_op

    dense = get_op("nn.dense").cost
    assert dense([(8, 32), (16, 32)], (8, 16), None) == 2 * 8 * 16 * 32
    conv = get_op("nn.conv2d").cost
    assert conv([(1, 3, 8, 8), (4, 3, 3, 3)], (1, 4, 8, 8), None) == 2 * 4 * 64 * 27
    assert get_op("tanh").cost is None  # the default: one per output element


# -- Theorem 3.1 through rr.gradient ---------------------------------------------------------

UNIT = 64  # float32 elements per layer: one unit is 256 bytes
UNFUSED = "SimplifyInference,FoldConstant,DeadCodeElimination"  # each op one kernel step


def _chain(n: int) -> Any:
    t = f"Tensor[({UNIT},), float32]"
    lines = ["let %h0 = tanh(%x);"] + [
        f"let %h{i} = {'tanh' if i % 2 else 'nn.relu'}(%h{i - 1});" for i in range(1, n)]
    return rr.parse(f"def @loss(%x: {t}) -> float32 {{ {' '.join(lines)} sum(%h{n - 1}) }}\n"
                    f"def @main(%x: {t}) {{ gradient(@loss)(%x) }}")


#: (N, heuristic, dealloc, C): the bound asserted on op_executions / N (spec/dtr.md §9).
#: Measured (unit costs, budget 2 * ceil(sqrt(N)) units + pinned; the unbudgeted step runs
#: 5.5 N kernel steps): eager eviction grows with N (dtr_eq 6.81, 7.96, 9.69, 10.92 at
#: N = 100, 300, 1000, 2000; dtr 6.43, 6.83, 7.38, 7.94); dealloc="ignore" does not
#: (dtr_eq 9.85, 9.06, 9.46, 9.32 at N = 100 ... 2000; dtr 10.15, 8.61, 8.52), so the O(N)
#: claim is asserted for "ignore" up to N = 1000; banishing runs out of memory at every N
#: (the forward's released relu outputs pin the tanh outputs after them).
THEOREM_CASES = [
    (100, "dtr_eq", "eager", 7.5), (300, "dtr_eq", "eager", 9.0), (100, "dtr", "eager", 7.0),
    (100, "dtr_eq", "ignore", 10.5), (300, "dtr_eq", "ignore", 10.5),
    pytest.param(1000, "dtr_eq", "ignore", 10.5,
                 marks=pytest.mark.slow),  # ~20 s: rr.compile of 1000 unfused layers, twice
]


@pytest.mark.parametrize(("n", "heuristic", "dealloc", "c"), THEOREM_CASES)
def test_theorem_3_1_linear_chain_gradient_in_O_n_operations(n: int, heuristic: str,
                                                             dealloc: str, c: float,
                                                             tmp_path: Path) -> None:
    mod = _chain(n)
    x = np.linspace(-1, 1, UNIT).astype("float32")
    want = leaves(rr.compile(mod, passes=UNFUSED)(x))
    pinned = 2 * UNIT * 4 + 4  # x, its gradient, the loss
    units = 2 * math.ceil(math.sqrt(n))
    log = tmp_path / "chain.jsonl"
    exe = rr.compile(mod, passes=UNFUSED, memory_budget=pinned + units * UNIT * 4,
                     cost="unit", heuristic=heuristic, dealloc=dealloc, dtr_log=log)
    stats = _check_run(exe, want, [x])
    assert stats.rematerializations > 0  # the budget binds
    assert stats.op_executions <= c * n
    # the log reads back, and the simulator replaying it does what the run did
    records = read_log(log)
    assert sum(type(r).__name__ == "LogCall" for r in records) == \
        stats.op_executions - stats.rematerializations
    sim = simulate(log, stats.budget, heuristic, dealloc, "unit")
    assert (sim.evictions, sim.rematerializations, sim.op_executions, sim.peak_bytes) == \
        (stats.evictions, stats.rematerializations, stats.op_executions, stats.peak_bytes)
    flops = simulate(log, stats.budget, "dtr_eq", "eager", "flops")
    assert not flops.oom


# -- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "error", "says"), [
    ({"memory_budget": -5}, DTRError, "must be non-negative"),
    ({"memory_budget": "-5"}, DTRError, "must be non-negative"),
    ({"memory_budget": 1.5}, DTRError, "not in (0, 1]"),
    ({"memory_budget": 0.0}, DTRError, "not in (0, 1]"),
    ({"memory_budget": float("nan")}, DTRError, "not in (0, 1]"),
    ({"memory_budget": 1e9}, DTRError, "bytes are an integer: 1000000000"),
    ({"memory_budget": "1e9"}, DTRError, "bytes are an integer: 1000000000"),
    ({"memory_budget": "140%"}, DTRError, "percentage 140% is not in (0%, 100%]"),
    ({"memory_budget": "lots"}, DTRError, "'lots' is not a budget"),
    ({"memory_budget": True}, DTRError, "not True"),
    ({"memory_budget": np.bool_(True)}, DTRError, "True"),
    ({"memory_budget": [1]}, TypeError, "memory_budget"),
    ({"memory_budget": 0.5, "heuristic": "dtr_eqq"}, DTRError, "did you mean"),
    ({"memory_budget": 0.5, "heuristic": 3}, TypeError, "heuristic"),
    ({"memory_budget": 0.5, "dealloc": "evict"}, DTRError, "eager, banish, ignore"),
    ({"memory_budget": 0.5, "cost": "time"}, DTRError, "flops, unit, measured"),
    ({"memory_budget": 0.5, "dtr_log": 3}, TypeError, "dtr_log"),
    ({"memory_budget": 0.5, "dtr_log": "/nonexistent/dir/x.jsonl"}, DTRError,
     "dtr_log: /nonexistent/dir/x.jsonl: no directory /nonexistent/dir"),
    ({"memory_budget": 0.5, "dtr_log": "."}, DTRError, "is a directory"),
    ({"dtr_log": "x.jsonl"}, DTRError, "needs a memory_budget"),
    ({"dealloc": "evict"}, DTRError, "dealloc"),
])
def test_bad_arguments_are_clear_errors(kwargs: dict, error: type, says: str) -> None:
    mod = rr.parse("def @main(%x: Tensor[(4,), float32]) { tanh(%x) }")
    with pytest.raises(error) as info:
        rr.compile(mod, **kwargs)
    assert says in str(info.value)
    assert isinstance(info.value, ValueError) or error is TypeError  # spec/dtr.md §7
    assert gc.isenabled()


def test_one_budget_parser_and_rounding_for_compile_simulate_and_the_cli(tmp_path: Path
                                                                          ) -> None:
    # review of issue 27: simulate rounded down, the runtime up; NumPy numbers were refused
    # by rr.compile; "100000" was bytes in one and a fraction in another
    from relay_ref.cli.dtr import parse_budgets
    from relay_ref.dtr.options import Budget, parse_budget, resolve_budget

    mod, args, _ = _model("mlp")
    full = rr.compile(mod, memory_budget=1 << 62, dtr_log=tmp_path / "full.jsonl")
    full(*args)
    peak = full.dtr_stats.peak_bytes
    want = math.ceil(0.9 * peak - 1e-6)
    for given in (0.9, "90%", " 90 % ", "0.9", np.float64(0.9)):
        exe = rr.compile(mod, memory_budget=given)
        exe(*args)
        assert exe.dtr_stats.budget == want, given
    assert parse_budgets("90%") == [0.9] == parse_budgets("0.9")  # relay dtr sweep --budgets
    assert resolve_budget(parse_budgets("90%")[0], peak) == want
    log = tmp_path / "full.jsonl"
    sim_peak = simulate(log, None).peak_bytes
    assert simulate(log, "60%").budget == resolve_budget(0.6, sim_peak) == \
        simulate(log, 0.6).budget == math.ceil(0.6 * sim_peak - 1e-6)
    # integers, NumPy's included, and digit strings are bytes everywhere
    assert parse_budget(np.int64(100000)) == parse_budget("100000") == Budget(100000, None)
    assert simulate(log, np.int64(100000)).budget == simulate(log, "100000").budget == 100000
    exe = rr.compile(mod, memory_budget=np.int64(1 << 30))
    exe(*args)
    assert exe.dtr_stats.budget == 1 << 30
    assert resolve_budget(Budget(None, 0.6), 718855) == 431313  # not 431314 (float error)
    assert resolve_budget(Budget(None, 0.5), 7) == 4 and resolve_budget(1e-9, 5) == 1


def test_a_log_that_cannot_be_opened_or_written_restores_the_collector(tmp_path: Path,
                                                                       monkeypatch) -> None:
    # review of issue 27: start() paused the collector before opening the log, outside the
    # try that finishes the call: gc stayed off for the process
    mod, args, want = _model("mlp")
    where = tmp_path / "d"
    where.mkdir()
    exe = rr.compile(mod, memory_budget=0.9, dtr_log=where / "x.jsonl")
    where.rmdir()  # checked at compile time, gone by the call
    with pytest.raises(DTRError, match="dtr_log: cannot write"):
        exe(*args)
    assert gc.isenabled() and exe.runtime.engine is None
    where.mkdir()
    assert _bit_identical(want, leaves(exe(*args)))  # the next call is fine
    assert (where / "x.jsonl").exists()
    # the log's rename failing at the end (the path became a directory): a DTRError, the
    # engine dropped, no temporary file left
    (where / "x.jsonl").unlink()
    (where / "x.jsonl").mkdir()
    with pytest.raises(DTRError, match="dtr_log: cannot write"):
        exe(*args)
    assert gc.isenabled() and exe.runtime.engine is None
    assert [p.name for p in where.iterdir()] == ["x.jsonl"]


def test_a_budget_below_the_pinned_bytes_is_a_located_error() -> None:
    mod, args, _ = _model("mlp")
    exe = rr.compile(mod, memory_budget=1000)
    with pytest.raises(rr.RelayRuntimeError) as info:
        exe(*args)
    assert "budget of 1000 bytes" in str(info.value) and info.value.span is not None
    assert exe.dtr_stats.oom
    # the input that did not fit is named, at its parameter (not an operator's "constant")
    first = mod.functions["main"].params[0]
    assert f"input %{first.name_hint} ({args[0].nbytes} bytes) does not fit the budget " \
        "of 1000 bytes" in str(info.value)
    assert info.value.span == first.span and "operator constant" not in str(info.value)
    with pytest.raises(rr.RelayRuntimeError, match="does not fit the budget of 0 bytes"):
        rr.compile(mod, memory_budget=0)(*args)  # 0 bytes: a budget, infeasible


def test_out_of_memory_in_gradient_code_is_located_at_the_gradient_call() -> None:
    # review of issue 27: code the gradient made has no spans; the error pointed at def @main
    mod = rr.parse("""def @f(%x: Tensor[(64, 32), float32], %w: Tensor[(32, 32), float32]) {
  let %a = nn.relu(nn.dense(%x, %w));
  let %t = transpose(%a);
  sum(exp(nn.dense(%t, %t) * 0.01f)) + sum(%a * %a)
}
def @main(%x: Tensor[(64, 32), float32], %w: Tensor[(32, 32), float32]) {
  let %g = gradient(@f)(%x, %w);
  (%g.0, %g.1.0, %g.1.1)
}""")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 32)) * 0.3).astype("float32")
    w = (rng.standard_normal((32, 32)) * 0.3).astype("float32")
    exe = rr.compile(mod, memory_budget=1 << 40)
    exe(x, w)
    pinned = exe.dtr_stats.pinned_bytes
    with pytest.raises(rr.RelayRuntimeError) as info:
        rr.compile(mod, memory_budget=pinned + 8192)(x, w)
    err = info.value
    assert err.span is not None and err.span.line == 7, str(err)  # gradient(@f)(%x, %w)
    assert "(in the code gradient made, which has no source location) [D-OOM]" in str(err)


def test_the_log_is_not_left_behind_on_failure(tmp_path: Path) -> None:
    mod, args, _ = _model("mlp")
    log = tmp_path / "run.jsonl"
    with pytest.raises(rr.RelayRuntimeError):
        rr.compile(mod, memory_budget=1000, dtr_log=log)(*args)
    assert list(tmp_path.iterdir()) == []


#: (model, budget ratio): low budgets where each step rematerialises (the MLP at 0.8 and
#: the ResNet at 0.4 are their lowest feasible ratios)
REPLAYS = [("mlp", 0.8), ("cnn", 0.7), ("resnet", 0.4), ("resnet", 0.6)]


@pytest.mark.parametrize(("name", "ratio"), REPLAYS)
def test_a_training_steps_log_replays_to_the_same_run(name: str, ratio: float,
                                                      tmp_path: Path) -> None:
    # the simulator replays the log with the same deterministic cost (FLOPS): the same
    # evictions, replays, operator count and peak. The log's PIN lines (this project's
    # extension, spec/dtr.md §8) say which results the program held as arrays, so the
    # simulator never evicts one; sizes of non-static results are known before the kernel
    # runs from the measuring call, as the log's MEMORY lines make them known to the
    # simulator (without either, the MLP at 0.5 and the ResNet at 0.4 diverged)
    mod, args, want = _model(name)
    log = tmp_path / "step.jsonl"
    exe = rr.compile(mod, memory_budget=ratio, dtr_log=log)
    stats = _check_run(exe, want, args)
    assert stats.rematerializations > 0
    assert any(type(r).__name__ == "LogPin" for r in read_log(log))
    sim = simulate(log, stats.budget, "dtr_eq", "eager", "flops")
    assert (sim.evictions, sim.rematerializations, sim.op_executions, sim.peak_bytes) == \
        (stats.evictions, stats.rematerializations, stats.op_executions, stats.peak_bytes)


# -- the paper's target: 3x less memory for ~20-30 % more compute ---------------------------

def test_a_resnet_step_at_a_third_of_its_peak_costs_at_most_1_3_times_the_compute() -> None:
    # an activation-dominated ResNet-style step (8 blocks, batch 16: weights and input are
    # 6 % of the peak, as in the paper's ResNet-32): measured slowdown at 1/3 of the peak
    # 1.21 with dtr_eq (16 blocks: 1.17; before the gradients were scheduled, 3.3)
    mod, args = MODELS["resnet"](8, 16, 8, 12)
    want = leaves(rr.compile(mod)(*args))
    exe = rr.compile(mod, memory_budget=1 / 3)
    stats = _check_run(exe, want, args)
    assert stats.rematerializations > 0 and stats.slowdown <= 1.3


def test_gradients_leave_the_result_tuple_for_where_their_inputs_are_ready(monkeypatch
                                                                         ) -> None:
    # relay_ref/dtr/schedule.py: the same values (to rounding: the order of the pure calls
    # changes fusion), a lower or equal unbudgeted peak, and far less recomputation under
    # a budget (measured for the 4-block ResNet at 0.5: 1.17 against 2.74)
    from relay_ref.dtr import schedule

    mod, args, want = _model("resnet")
    hoisted = rr.compile(mod, memory_budget=0.5)
    a = _check_run(hoisted, want, args)
    peak = rr.compile(mod, memory_budget=1.0)
    _check_run(peak, want, args)
    monkeypatch.setattr(schedule, "hoist_result_fields", lambda m: m)
    plain = rr.compile(mod)
    got = leaves(plain(*args))
    assert all(np.allclose(w, g, rtol=1e-5, atol=1e-6) for w, g in zip(want, got, strict=True))
    late = rr.compile(mod, memory_budget=0.5)
    b = _check_run(late, got, args)
    unscheduled = rr.compile(mod, memory_budget=1.0)
    _check_run(unscheduled, got, args)
    assert peak.dtr_stats.peak_bytes <= unscheduled.dtr_stats.peak_bytes
    assert a.slowdown <= 1.25 < 2.0 <= b.slowdown


def test_closures_returned_by_the_program_run_under_the_budget_too() -> None:
    mod = rr.parse("""def @main(%x: Tensor[(32, 32), float32]) {
      let %y = tanh(nn.dense(%x, %x));
      fn (%z: Tensor[(32, 32), float32]) { sum(nn.relu(nn.dense(%z, %y)) * %y) }
    }""")
    x = np.random.default_rng(7).standard_normal((32, 32)).astype("float32")
    want = rr.compile(mod)(x)(x)
    exe = rr.compile(mod, memory_budget=1 << 20)
    assert exe.dtr_stats is None
    f = exe(x)
    first = exe.dtr_stats
    got = f(x)
    assert np.array_equal(np.asarray(got), np.asarray(want))
    assert exe.dtr_stats is not first and exe.dtr_stats.op_executions > 0


def test_the_garbage_collector_is_paused_during_a_call_and_restored_after() -> None:
    import gc

    mod = rr.parse("def @main(%x: Tensor[(8,), float32]) { tanh(tanh(%x)) }")
    seen = []
    exe = rr.compile(mod, memory_budget=1 << 20)
    runtime = exe.runtime
    step = runtime._step

    def spy(site: Any, args: list[Any], out: Any) -> Any:
        seen.append(gc.isenabled())
        return step(site, args, out)

    runtime._step = spy
    x = np.ones(8, "float32")
    assert gc.isenabled()
    exe(x)
    assert seen and not any(seen) and gc.isenabled()
    gc.disable()
    try:
        exe(x)
        assert not gc.isenabled()  # restored as it was
    finally:
        gc.enable()
    with pytest.raises(rr.RelayRuntimeError):
        rr.compile(mod, memory_budget=8)(x)  # out of memory: restored too
    assert gc.isenabled()


def test_hoisting_walks_long_let_chains_without_recursion() -> None:
    # relay_ref/dtr/schedule.py on a 20 000-binding chain whose result tuple holds a call
    # reading the first binding: the call moves right after it, the rest is kept
    from relay_ref.dtr.schedule import hoist_result_fields
    from relay_ref.ir.expr import Call, Function, Let, Op, Tuple, Var
    from relay_ref.ir.module import IRModule

    x = Var("x")
    vs = [Var(f"v{i}") for i in range(20000)]
    field = Call(Op("tanh"), (vs[0],))
    body: Any = Tuple((vs[-1], Tuple((field,))))
    for i in range(len(vs) - 1, -1, -1):
        body = Let(vs[i], Call(Op("negative"), (vs[i - 1] if i else x,)), body)
    out = hoist_result_fields(IRModule({"main": Function((x,), body)}))
    e = out.functions["main"].body
    assert e.var is vs[0] and e.body.value is field  # moved after its input
    while type(e) is Let:
        e = e.body
    assert e.fields[0] is vs[-1] and type(e.fields[1].fields[0]) is Var
