"""``rr.compile(m, target="cuda")`` against ``rr.evaluate(m)``, under the simulator: every
golden program of ``tests/programs`` the CPU sweep runs, a small CNN (conv, batch norm,
relu, pooling, dense, softmax) with its weights bound, and elementwise groups (broadcasts,
integer wrap-around, bool, a division that must fail on the host as the interpreter fails).
Besides values, the tests check residency: a call of the CNN copies exactly its input in
and its output out, and ``exe.plan`` names its launches and host steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.compute.cuda import TRANSFERS
from relay_ref.testing.check import values_equal
from relay_ref.testing.goldens import load_golden

ROOT = Path(__file__).resolve().parents[2] / "programs"
PROGRAMS = sorted(p for p in ROOT.rglob("*.relay") if not p.name.endswith(".expected.relay"))
_LOADED = {p: load_golden(p) for p in PROGRAMS}
CASES = [p for p in PROGRAMS if _LOADED[p] is not None]


def test_the_simulator_is_the_device() -> None:
    assert rr.cuda_available()


def test_the_sweep_covers_the_golden_programs() -> None:
    assert len(CASES) >= 60, [p.name for p in CASES]


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_golden_program_on_the_device(path: Path) -> None:
    mod, args = _LOADED[path]  # type: ignore[misc]
    try:
        expected = rr.evaluate(mod, *args)
    except rr.RelayRuntimeError as err:
        with pytest.raises(rr.RelayRuntimeError) as got:
            rr.compile(mod, target="cuda")(*args)
        want, span = err.diagnostics[0].span, got.value.diagnostics[0].span
        assert span is not None and want is not None
        assert span.line == want.line, (str(got.value), str(err))
        return
    exe = rr.compile(mod, target="cuda")
    assert exe.plan.target == "cuda"
    assert values_equal(exe(*args), expected, rtol=1e-4, atol=1e-5)
    assert values_equal(exe(*args), expected, rtol=1e-4, atol=1e-5)  # nothing stale


CNN = """
def @main(%x: Tensor[(2, 3, 8, 8), float32], %w1: Tensor[(6, 3, 3, 3), float32],
          %gamma: Tensor[(6), float32], %beta: Tensor[(6), float32],
          %mean: Tensor[(6), float32], %var: Tensor[(6), float32],
          %w2: Tensor[(4, 6, 3, 3), float32], %b2: Tensor[(4), float32],
          %wd: Tensor[(5, 16), float32], %bd: Tensor[(5), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[1, 1]);
  %1 = nn.batch_norm(%0, %gamma, %beta, %mean, %var);
  %2 = nn.relu(%1.0);
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
  %4 = nn.conv2d(%3, %w2, strides=[2, 2], padding=[1, 1]);
  %5 = nn.bias_add(%4, %b2);
  %6 = nn.relu(%5);
  %7 = nn.avg_pool2d(%6, pool_size=[2, 2], padding=[1, 1, 0, 0], count_include_pad=True);
  %8 = nn.batch_flatten(%7);
  %9 = nn.dense(%8, %wd);
  %10 = nn.bias_add(%9, %bd);
  nn.softmax(%10)
}
"""


def _cnn_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def r(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {"w1": r(6, 3, 3, 3), "gamma": 1 + r(6), "beta": r(6),
            "mean": r(6), "var": 1 + np.abs(r(6)), "w2": r(4, 6, 3, 3), "b2": r(4),
            "wd": r(5, 16), "bd": r(5)}


def test_small_cnn_equals_the_interpreter_and_stays_on_the_device() -> None:
    rng = np.random.default_rng(0)
    mod = rr.parse(CNN)
    params = _cnn_params(rng)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    expected = rr.evaluate(mod, x, *params.values())
    exe = rr.compile(mod, params, target="cuda")
    plan = exe.plan
    assert plan.host_ops == () and plan.host_copies == 0, str(plan)
    kinds = {k for g in plan.groups for k in g.kernels}
    assert {"cuda conv2d", "cuda fused", "cuda max_pool2d", "cuda avg_pool2d", "cuda dense",
            "cuda softmax", "cuda view"} <= kinds, kinds
    # conv+bn+relu, conv+bias+relu, dense+bias: an anchor and its fused tail, two launches
    # each; two pools and the softmax one each; the flatten is a view (none)
    assert plan.device_launches == 9, str(plan)
    assert "9 kernel launches" in str(plan)
    before = TRANSFERS.snapshot()
    got = exe(x)
    after = TRANSFERS.snapshot()
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)  # the input, the output
    assert after[2] - before[2] == x.nbytes and after[3] - before[3] == got.nbytes
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
    assert type(got) is np.ndarray and got.flags.writeable
    again = exe(x=x)
    np.testing.assert_allclose(again, expected, rtol=1e-4, atol=1e-6)
    assert again is not got


ELEMENTWISE = [
    ("%a: Tensor[(3, 4), float32], %b: Tensor[(4), float32]",
     "nn.relu(add(multiply(%a, %b), 1f))"),
    ("%a: Tensor[(2, 3, 4), float32], %b: Tensor[(3), float32]",
     "clip(nn.bias_add(%a, %b, axis=1), a_min=0.5f, a_max=2f)"),
    ("%a: Tensor[(2, 1, 5), float32], %b: Tensor[(3, 1), float32]",
     "subtract(exp(%a), sqrt(%b))"),
    ("%a: Tensor[(6), int32], %b: Tensor[(6), int32]",
     "add(multiply(%a, 2147483647), %b)"),
    ("%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]",
     "where(greater(%a, %b), %a, negative(%b))"),
    ("%a: Tensor[(4), float32], %b: Tensor[(4), int32]",
     "cast(add(%a, cast(%b, dtype=\"float32\")), dtype=\"int8\")"),
]


@pytest.mark.parametrize("params,body", ELEMENTWISE, ids=[b[:30] for _, b in ELEMENTWISE])
def test_elementwise_group_is_one_kernel(params: str, body: str) -> None:
    mod = rr.parse(f"def @main({params}) {{ {body} }}")
    fn = mod.functions["main"]
    rng = np.random.default_rng(1)
    args = []
    for p in fn.params:
        ty = p.type_annotation
        a = rng.standard_normal(ty.shape) * 3
        args.append(a.astype(ty.dtype))
    expected = rr.evaluate(mod, *args)
    exe = rr.compile(mod, target="cuda")
    assert exe.plan.device_launches == 1 and exe.plan.host_ops == (), str(exe.plan)
    assert values_equal(exe(*args), expected, rtol=1e-5, atol=1e-6)


def test_integer_division_runs_on_the_host_and_fails_there() -> None:
    mod = rr.parse("""
def @main(%a: Tensor[(4), int32], %b: Tensor[(4), int32]) {
  %0 = nn.relu(%a);
  %1 = divide(%0, %b);
  add(%1, %a)
}""")
    exe = rr.compile(mod, target="cuda")
    assert "divide" in exe.plan.host_ops and exe.plan.host_copies >= 3, str(exe.plan)
    a = np.array([4, -8, 9, 7], np.int32)
    b = np.array([2, 3, -4, 5], np.int32)
    np.testing.assert_array_equal(exe(a, b), rr.evaluate(mod, a, b))
    with pytest.raises(rr.RelayRuntimeError) as err:
        exe(a, np.array([1, 0, 1, 1], np.int32))
    assert "division by zero" in str(err.value)


def test_ops_without_a_cuda_kernel_copy_explicitly() -> None:
    mod = rr.parse("""
def @main(%x: Tensor[(2, 3, 4), float32]) {
  %0 = exp(%x);
  %1 = transpose(%0, axes=[2, 0, 1]);
  nn.softmax(%1)
}""")
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    exe = rr.compile(mod, target="cuda")
    assert exe.plan.host_ops == ("transpose",), str(exe.plan)  # exp: a one-op kernel
    assert exe.plan.device_launches == 2, str(exe.plan)
    before = TRANSFERS.snapshot()
    got = exe(x)
    after = TRANSFERS.snapshot()
    # the input and the output, and the transpose's argument out and result back in
    assert (after[0] - before[0], after[1] - before[1]) == (2, 2)
    np.testing.assert_allclose(got, rr.evaluate(mod, x), rtol=1e-5, atol=1e-6)


def test_control_flow_on_device_tensors() -> None:
    mod = rr.parse("""
def @main(%x: Tensor[(3, 4), float32]) {
  let %s = sum(%x);
  if (greater(%s, 0f)) { (nn.softmax(%x), %s) } else { (negative(%x), %s) }
}""")
    for sign in (1, -1):
        x = np.abs(np.random.default_rng(3).standard_normal((3, 4))).astype(np.float32) * sign
        got = rr.compile(mod, target="cuda")(x)
        assert values_equal(got, rr.evaluate(mod, x), rtol=1e-5, atol=1e-6)


def _copies(exe, *args):  # (host-to-device, device-to-host) copies of one call
    before = TRANSFERS.snapshot()
    got = exe(*args)
    after = TRANSFERS.snapshot()
    return got, (after[0] - before[0], after[1] - before[1])


def test_host_step_with_a_tuple_argument_counts_each_field() -> None:
    """concatenate (no CUDA kernel) takes a tuple of three device tensors: three copies
    out, one back; the plan says so exactly."""
    mod = rr.parse("""
def @main(%x: Tensor[(4, 6), float32], %y: Tensor[(4, 6), float32],
          %z: Tensor[(4, 6), float32]) {
  %0 = exp(%x); %1 = exp(%y); %2 = exp(%z);
  %3 = concatenate((%0, %1, %2), axis=1);
  nn.softmax(%3)
}""")
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((4, 6)).astype(np.float32) for _ in range(3)]
    exe = rr.compile(mod, target="cuda")
    assert exe.plan.host_ops == ("concatenate",) and exe.plan.host_copies == 4, str(exe.plan)
    got, copies = _copies(exe, *xs)
    assert copies == (3 + 1, 3 + 1)  # inputs and concatenate's result; its fields, output
    np.testing.assert_allclose(got, rr.evaluate(mod, *xs), rtol=1e-5, atol=1e-6)


def test_host_step_with_a_tuple_result_moves_it_to_the_device_once() -> None:
    """split (no CUDA kernel) returns a tuple: both fields go back to the device once, and
    the three device calls reading them (field 0 twice) read them there."""
    mod = rr.parse("""
def @main(%x: Tensor[(4, 6), float32], %w: Tensor[(5, 3), float32]) {
  %0 = exp(%x);
  %1 = split(%0, indices_or_sections=2, axis=1);
  %2 = nn.dense(%1.0, %w);
  %3 = nn.dense(%1.1, %w);
  %4 = nn.dense(nn.softmax(%1.0), %w);
  add(add(%2, %3), %4)
}""")
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((4, 6)).astype(np.float32), \
        rng.standard_normal((5, 3)).astype(np.float32)
    exe = rr.compile(mod, target="cuda")
    assert exe.plan.host_ops == ("split",) and exe.plan.host_copies == 3, str(exe.plan)
    got, copies = _copies(exe, x, w)
    assert copies == (2 + 2, 1 + 1)  # x, w and split's two fields; split's input, output
    np.testing.assert_allclose(got, rr.evaluate(mod, x, w), rtol=1e-5, atol=1e-6)
    _, again = _copies(exe, x, w)
    assert again == copies


def test_the_simulator_races_are_patched() -> None:
    """relay_ref.compute.cuda.simpatch: a block's threads get one shared array per call
    site even when they ask at once, and a function's ``cuda`` global stays the fake
    module until the *last* thread leaves it (numba 0.68's simulator had both races)."""
    import threading

    from numba.cuda.simulator import kernel, kernelapi

    from relay_ref.compute.cuda import cuda_module

    cuda_module()
    assert kernel.swapped_cuda_module.__module__ == "relay_ref.compute.cuda.simpatch"
    shared = kernelapi.FakeCUDAShared(0)
    start = threading.Barrier(8)
    got: list[np.ndarray] = []

    def ask() -> None:
        start.wait()
        got.append(shared.array(4, np.float32))  # the same line: one array

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(a is got[0] for a in got)

    def fn() -> None: ...

    from numba import cuda
    fn.__globals__["_probe_cuda"] = cuda
    fake = object()
    try:
        outer = kernel.swapped_cuda_module(fn, fake)
        inner = kernel.swapped_cuda_module(fn, fake)
        outer.__enter__()
        inner.__enter__()
        outer.__exit__(None, None, None)  # one thread leaves: the other still runs
        assert fn.__globals__["_probe_cuda"] is fake
        inner.__exit__(None, None, None)
        assert fn.__globals__["_probe_cuda"] is cuda
    finally:
        del fn.__globals__["_probe_cuda"]
