"""The executor's runtime seam (``relay_ref.executor.runtime``): every kernel step runs
through the executable's runtime, releases come once per value after its last use, the
memory plan covers let chains and the first-order AD output, targets come from the
registry, and programs with ``Composite`` / ``Compiler`` functions compile to the
interpreter's values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.executor.groups import GroupPlanner
from relay_ref.executor.runtime import (
    Instrumented,
    Layer,
    Recorder,
    Runtime,
    Site,
    StaticPlanRuntime,
)
from relay_ref.executor.targets import (
    Target,
    UnknownTarget,
    get_target,
    register_target,
    target_names,
    unregister_target,
)

LET_CHAIN = """
def @main(%x: Tensor[(64, 64), float32], %w: Tensor[(64, 64), float32])
    -> Tensor[(64, 64), float32] {
  let %a = nn.dense(%x, %w);
  let %b = nn.relu(%a);
  let %c = nn.dense(%b, %w);
  let %d = tanh(%c);
  nn.dense(%d, %w)
}"""

GRAPH = """
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32])
    -> (Tensor[(4, 8), float32], Tensor[(4, 8), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = tanh(%0);
  %2 = nn.dense(%1, %w);
  %3 = add(%2, %1);
  %4 = nn.relu(%3);
  %5 = transpose(%4, axes=[1, 0]);
  %6 = transpose(%5, axes=[1, 0]);
  %7 = multiply(%6, %0);
  (%7, sigmoid(%7))
}"""


def _args(mod: rr.IRModule, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal([int(d) for d in p.type_annotation.shape]) * 0.3)
            .astype(p.type_annotation.dtype) for p in mod.functions["main"].params]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5))


def _record(exe: Any) -> Recorder:
    recorder = Recorder()
    exe.runtime = Instrumented(exe.runtime, recorder)
    return recorder


def _check_events(events: list[tuple[Any, ...]]) -> int:
    """Every release: of a value a step produced, once, after the last step reading it;
    a ``begin`` is followed by its ``end`` before the next ``begin``. Returns the number
    of releases."""
    produced: dict[int, int] = {}  # id(value) -> event index of its end
    last_read: dict[int, int] = {}
    released: dict[int, int] = {}
    open_site = None
    for i, event in enumerate(events):
        kind = event[0]
        if kind == "begin":
            assert open_site is None
            open_site = event[1]
            for arg in event[2]:
                last_read[id(arg)] = i
        elif kind == "end":
            assert event[1] is open_site
            open_site = None
            produced.setdefault(id(event[2]), i)
        elif kind == "release":
            key = id(event[2])
            assert key in produced, "released a value no step produced"
            assert key not in released, "released twice"
            released[key] = i
            assert produced[key] < i
    for key, i in released.items():
        assert last_read.get(key, -1) < i, "released before its last use"
        # and never read after its release
    for i, event in enumerate(events):
        if event[0] == "begin":
            for arg in event[2]:
                assert released.get(id(arg), len(events)) > i
    return len(released)


def test_every_step_runs_through_the_runtime_and_releases_follow_last_use() -> None:
    mod = rr.parse(GRAPH)
    x, w = _args(mod)
    exe = rr.compile(mod)
    recorder = _record(exe)
    got = exe(x, w)
    assert _same(got, rr.evaluate(mod, x, w))
    events = recorder.events
    begins = [e[1] for e in events if e[0] == "begin"]
    sites = exe.generated.sites
    # a dataflow program runs each of its steps exactly once per call
    assert sorted(s.index for s in begins) == [s.index for s in sites]
    assert all(isinstance(s, Site) for s in sites)
    assert exe.plan.launches == len(sites)
    n = _check_events(events)
    assert n == exe.generated.releases > 0
    # the results are never released
    results = {id(v) for v in got}
    assert not results & {id(e[2]) for e in events if e[0] == "release"}


def test_second_call_releases_again_once_each() -> None:
    mod = rr.parse(LET_CHAIN)
    x, w = _args(mod)
    exe = rr.compile(mod)
    recorder = _record(exe)
    exe(x, w)
    first = len(recorder.events)
    exe(x, w)
    assert len(recorder.events) == 2 * first
    assert _check_events(recorder.events[first:]) == exe.generated.releases


def test_let_chain_entry_gets_a_memory_plan() -> None:
    mod = rr.parse(LET_CHAIN)
    x, w = _args(mod)
    exe = rr.compile(mod)
    assert exe.memory.views, "a let-chain entry gets planned buffers"
    assert exe.plan.planned_values == len(exe.memory.views) >= 3
    assert isinstance(exe.runtime, StaticPlanRuntime)
    recorder = _record(exe)
    want = rr.evaluate(mod, x, w)
    assert _same(exe(x, w), want)
    first = len(recorder.events)
    assert _same(exe(x, w), want)  # the buffers are reused safely on a second call
    allocations = [e for e in recorder.events if e[0] == "allocate"]
    assert len(allocations) == 2 * len(exe.memory.views)
    assert all(e[1].slot >= 0 and e[2] is not None for e in allocations)
    _check_events(recorder.events[:first])
    _check_events(recorder.events[first:])
    exe.runtime = Runtime()  # the plain policy at the plan's sites: fresh arrays
    assert _same(exe(x, w), want)


def test_first_order_gradient_gets_a_memory_plan() -> None:
    mod = rr.parse(LET_CHAIN)
    grad = rr.gradient(mod, mode="first_order")
    x, w = _args(mod, seed=3)
    exe = rr.compile(grad)
    assert exe.plan.planned_values > 0 and exe.plan.buffers > 0
    assert len(exe.memory.ranges) == exe.plan.planned_values
    recorder = _record(exe)
    assert _same(exe(x, w), rr.evaluate(grad, x, w))
    assert _check_events(recorder.events) > 0


def test_reuse_buffers_off_is_the_fresh_policy() -> None:
    from relay_ref.executor.compile import compile_module

    mod = rr.parse(LET_CHAIN)
    x, w = _args(mod)
    exe = compile_module(mod, reuse_buffers=False)
    assert type(exe.runtime) is Runtime and not exe.memory.views
    assert "_alloc(" not in exe.source
    assert _same(exe(x, w), rr.evaluate(mod, x, w))


def test_profile_is_a_layer() -> None:
    mod = rr.parse(GRAPH)
    x, w = _args(mod)
    exe = rr.compile(mod, profile=True)
    assert isinstance(exe.runtime, Layer)
    exe(x, w)
    assert sum(int(n) for n, _ in exe.stats.kernels.values()) == len(exe.generated.sites)


def test_runtime_must_be_a_runtime() -> None:
    exe = rr.compile(rr.parse(GRAPH))
    with pytest.raises(TypeError, match="Runtime"):
        exe.runtime = object()


class _CountingPlanner(GroupPlanner):
    planned = 0

    def _plan(self, prim: Any) -> Any:
        type(self).planned += 1
        return super()._plan(prim)


def test_a_target_registered_through_the_registry_compiles_and_runs() -> None:
    def planner(types: dict[Any, Any], cache_dir: str | None) -> GroupPlanner:
        return _CountingPlanner(types, fuse=False, cache_dir=cache_dir)

    seen: list[Any] = []

    class Device:
        description = "toy device"

        @staticmethod
        def arguments(values: list[Any]) -> list[Any]:
            seen.append("arguments")
            return values

    def finish(plan: Any, generated: Any, device: Any) -> Any:
        seen.append(device)
        return plan

    register_target(Target("toy", planner, prepare=Device, finish=finish))
    try:
        assert "toy" in target_names() and target_names()[:2] == ("cpu", "cuda")
        with pytest.raises(ValueError, match="already registered"):
            register_target(Target("toy", planner))
        mod = rr.parse(GRAPH)
        x, w = _args(mod)
        exe = rr.compile(mod, target="toy")
        assert exe.plan.target == "toy"
        assert _CountingPlanner.planned > 0 and len(seen) == 1
        assert isinstance(seen[0], Device)
        assert all(g.strategy == "ops" for g in exe.plan.groups)  # its planner's choice
        assert _same(exe(x, w), rr.evaluate(mod, x, w))
        assert seen[1:] == ["arguments"]
    finally:
        unregister_target("toy")
    assert "toy" not in target_names()


def test_unknown_target_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown target 'tpu' \(targets: cpu, cuda"):
        get_target("tpu")
    with pytest.raises(UnknownTarget, match="unknown target 'tpu'"):
        rr.compile(rr.parse(GRAPH), target="tpu")
    with pytest.raises(rr.RelayError, match="targets: cpu, cuda"):
        rr.compile(rr.parse(GRAPH), target="tpu")


# -- Composite / Compiler / Primitive functions ------------------------------------------------

T = "Tensor[(2, 3), float32]"
COMPOSITE_PROGRAMS = {
    "compiler_calls_composite": f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Compiler="ccompiler", global_symbol="ext0") -> {T} {{
    %1 = fn (%b: {T}, Composite="add_relu") -> {T} {{ nn.relu(add(%b, %b)) }};
    %1(%a)
  }};
  %0(%x)
}}""",
    "primitive_calls_composite": f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> {T} {{
    %1 = fn (%b: {T}, Composite="add_relu") -> {T} {{ nn.relu(add(%b, %b)) }};
    %1(%a)
  }};
  %0(%x)
}}""",
    "composite_called_twice": f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> {T} {{
    %1 = fn (%b: {T}, Composite="e") -> {T} {{ exp(%b) }};
    multiply(%1(%a), %1(negative(%a)))
  }};
  %0(%x)
}}""",
    "compiler_global": f"""
def @ext(%a: {T}, Compiler="ccompiler", global_symbol="ext") -> {T} {{
  %1 = fn (%b: {T}, Composite="add_relu") -> {T} {{ nn.relu(add(%b, %b)) }};
  multiply(%1(%a), %1(%a))
}}
def @main(%x: {T}) -> {T} {{
  @ext(%x)
}}""",
    "two_composites_tuple": f"""
def @main(%x: {T}, %y: {T}) -> ({T}, {T}) {{
  %0 = fn (%a: {T}, %c: {T}, Compiler="ccompiler", global_symbol="ext1") -> ({T}, {T}) {{
    %1 = fn (%b: {T}, Composite="a") -> {T} {{ exp(%b) }};
    %2 = fn (%b: {T}, %d: {T}, Composite="b") -> {T} {{ subtract(%b, %d) }};
    (%1(%a), %2(%1(%c), %a))
  }};
  %0(%x, %y)
}}""",
    "let_composite_in_primitive": f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> {T} {{
    let %f = fn (%b: {T}, Composite="c") -> {T} {{ tanh(%b) }};
    let %y = %f(%a);
    add(%y, %a)
  }};
  %0(%x)
}}""",
    "composite_captures_and_projects": f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> {T} {{
    let %g = fn (%b: {T}, Composite="c") -> {T} {{ multiply(%b, %a) }};
    let %t = (%g(%a), %a);
    add(%t.0, %t.1)
  }};
  %0(%x)
}}""",
    "primitive_in_primitive": f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> {T} {{
    %1 = fn (%b: {T}, Primitive=1) -> {T} {{ sigmoid(%b) }};
    multiply(%1(%a), %a)
  }};
  %0(%x)
}}""",
    "primitive_with_control_flow": f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> {T} {{
    %1 = fn (%b: {T}, Composite="k") -> bool {{ greater(sum(%b), 0f) }};
    if (%1(%a)) {{ exp(%a) }} else {{ negative(%a) }}
  }};
  %0(%x)
}}""",
    "let_compiler_twice": f"""
def @main(%x: {T}) -> {T} {{
  let %f = fn (%a: {T}, Compiler="cc", global_symbol="e") -> {T} {{
    %1 = fn (%b: {T}, Composite="c") -> {T} {{ add(%b, 1f) }};
    %1(%a)
  }};
  %f(%f(%x))
}}""",
    "composite_tuple_result_in_primitive": f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> {T} {{
    %1 = fn (%b: {T}, Composite="t") -> ({T}, {T}) {{ (exp(%b), negative(%b)) }};
    %2 = %1(%a);
    add(%2.0, %2.1)
  }};
  %0(%x)
}}""",
    "primitive_calls_global": f"""
def @g(%b: {T}) -> {T} {{ tanh(%b) }}
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> {T} {{ add(@g(%a), %a) }};
  %0(%x)
}}""",
    "nested_composites": f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> {T} {{
    %1 = fn (%b: {T}, Composite="o") -> {T} {{
      %2 = fn (%c: {T}, Composite="i") -> {T} {{ multiply(%c, 2f) }};
      subtract(%2(%b), %2(%2(%b)))
    }};
    %1(%a)
  }};
  %0(%x)
}}""",
    "primitive_returns_a_closure": f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> fn ({T}) -> {T} {{
    fn (%b: {T}) -> {T} {{ add(%a, %b) }}
  }};
  %0(%x)(%x)
}}""",
    "big_composite_dense": """
def @main(%x: Tensor[(64, 64), float32]) -> Tensor[(64, 64), float32] {
  %0 = fn (%a: Tensor[(64, 64), float32], Compiler="ccompiler", global_symbol="e2")
      -> Tensor[(64, 64), float32] {
    %1 = fn (%b: Tensor[(64, 64), float32], Composite="dense_relu")
        -> Tensor[(64, 64), float32] {
      nn.relu(nn.dense(%b, %b))
    };
    add(%1(%a), tanh(%1(%a)))
  };
  %0(%x)
}""",
}


@pytest.mark.parametrize("name", sorted(COMPOSITE_PROGRAMS))
def test_composite_and_compiler_functions_compile_to_the_interpreters_values(
        name: str) -> None:
    mod = rr.parse(COMPOSITE_PROGRAMS[name])
    args = _args(mod, seed=5)
    want = rr.evaluate(mod, *args)
    exe = rr.compile(mod)
    assert _same(exe(*args), want)
    if name == "primitive_calls_composite":  # flattened into one planned group
        assert [g.label for g in exe.plan.groups] == ["add+relu"]


def test_gradient_of_a_compiler_program_compiles() -> None:
    src = COMPOSITE_PROGRAMS["nested_composites"].replace(
        "Primitive=1", 'Compiler="cc", global_symbol="z"')
    grad = rr.gradient(rr.parse(src))
    (x,) = _args(rr.parse(src), seed=2)
    assert _same(rr.compile(grad)(x), rr.evaluate(grad, x))


CONTROL = """
def @loop(%i: int32, %x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32])
    -> Tensor[(4, 8), float32] {
  %0 = nn.dense(%x, %w);
  %1 = tanh(%0);
  %2 = multiply(%1, %0);
  if (less(%i, 3)) { @loop(add(%i, 1), %2, %w) } else { %2 }
}
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32], %c: bool)
    -> Tensor[(4, 8), float32] {
  let %a = nn.dense(%x, %w);
  let %b = tanh(%a);
  let %k = fn (%y: Tensor[(4, 8), float32]) -> Tensor[(4, 8), float32] { add(%y, %b) };
  let %d = multiply(%b, %a);
  let %e = if (%c) { %k(%d) } else { nn.relu(%d) };
  @loop(0, %e, %w)
}"""


@pytest.mark.parametrize("cond", [True, False])
def test_releases_in_functions_with_control_flow_and_loops(cond: bool) -> None:
    mod = rr.parse(CONTROL)
    x, w = _args(mod)[:2]
    exe = rr.compile(mod)
    recorder = _record(exe)
    assert _same(exe(x, w, np.array(cond)), rr.evaluate(mod, x, w, np.array(cond)))
    released = _check_events(recorder.events)
    # @main releases %a after its last reader (%b is captured by %k, %d read by a closure
    # call: kept); each of @loop's 4 iterations releases its %0 and %1
    main_sites = {e[1].index for e in recorder.events if e[0] == "release"
                  and e[1].label == "nn.dense" and e[1].span.line == 11}
    assert len(main_sites) == 1
    assert released == 1 + 4 * 2


def test_compile_does_not_change_the_callers_module() -> None:
    """Flattening a group's nested functions types its new nodes in the planner's own
    overlay, never in the module's ``checked_types`` (shared with the caller's module
    when no pass changed it)."""
    from relay_ref.interpreter.driver import checked_module

    mod = rr.parse(f"""
def @main(%x: {T}) -> {T} {{
  %0 = fn (%a: {T}, Primitive=1) -> {T} {{
    %1 = fn (%b: {T}, Composite="add_relu") -> {T} {{ nn.relu(add(%b, %b)) }};
    %1(%a)
  }};
  %0(%x)
}}""")
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    want = rr.evaluate(mod, x)
    checked = checked_module(mod)  # the type-checked module rr.compile starts from
    before = dict(checked.checked_types)
    for _ in range(3):
        exe = rr.compile(mod, passes=[])
        assert _same(exe(x), want)
        assert checked.checked_types == before


@pytest.mark.parametrize("bad, match", [
    (lambda: Target(None, _cpu_like), "name must be a non-empty str"),  # type: ignore[arg-type]
    (lambda: Target("", _cpu_like), "name must be a non-empty str"),
    (lambda: Target("bad", None), "planner must be callable"),  # type: ignore[arg-type]
    (lambda: Target("bad", _cpu_like, prepare=3), "prepare must be callable or None"),
    (lambda: Target("bad", _cpu_like, finish="x"), "finish must be callable or None"),
    (lambda: Target("bad", _cpu_like, host_memory="no"), "host_memory must be a bool"),
])
def test_register_target_refuses_a_malformed_target(bad: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        register_target(bad())
    assert "bad" not in target_names() and None not in target_names()


def _cpu_like(types: dict[Any, Any], cache_dir: str | None) -> GroupPlanner:
    return GroupPlanner(types, cache_dir=cache_dir)


def test_a_planner_returning_no_planner_is_a_clear_error() -> None:
    register_target(Target("toy", lambda types, cache_dir: None))
    try:
        with pytest.raises(rr.RelayError, match=r"target 'toy': its planner returned None"):
            rr.compile(rr.parse(GRAPH), target="toy")
    finally:
        unregister_target("toy")


def test_layers_refuse_what_is_not_a_runtime_or_an_observer() -> None:
    with pytest.raises(TypeError, match="inner must be a Runtime, not NoneType"):
        Layer(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="has no begin, end, allocated, released method"):
        Instrumented(Runtime(), object())  # type: ignore[arg-type]
