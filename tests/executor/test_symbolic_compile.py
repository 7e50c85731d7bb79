"""One compile for every shape (issue 29, item 7): a program whose ``@main`` has symbolic
shapes compiles once, runs any size with the static program's plan (fusion groups,
strategies, kernels, buffers), compiles nothing for a new size, plans its buffers with
symbolic sizes (``shape_bounds`` preallocating them), binds its shape variables at the
entry (Shape-Bind) and runs ``match_cast`` and ``call_dps_packed`` (Shape-MatchCast,
Shape-DPS)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.executor.compile import DEFAULT_PASSES
from relay_ref.ir.expr import Call, Let, Op, Tuple
from relay_ref.ir.shape import sym
from relay_ref.ir.types import TensorType
from relay_ref.ops.symbolic import DPSAttrs, MatchCastAttrs, register_packed

HIDDEN = 1024  # wide enough that the static program fuses at batch 1 (MIN_FUSED_ELEMENTS)


def _mlp(batch: object) -> str:
    return f"""
def @main(%x: Tensor[({batch}, 64), float32], %w1: Tensor[({HIDDEN}, 64), float32],
          %b1: Tensor[({HIDDEN}), float32], %w2: Tensor[({HIDDEN}, {HIDDEN}), float32],
          %b2: Tensor[({HIDDEN}), float32], %w3: Tensor[({HIDDEN}, {HIDDEN}), float32],
          %b3: Tensor[({HIDDEN}), float32]) {{
  %0 = nn.relu(nn.bias_add(nn.dense(%x, %w1), %b1));
  %1 = nn.relu(nn.bias_add(nn.dense(%0, %w2), %b2));
  %2 = nn.relu(nn.bias_add(nn.dense(%1, %w3), %b3));
  nn.softmax(%2)
}}"""


def _cnn(batch: object) -> str:
    return f"""
def @main(%x: Tensor[({batch}, 3, 16, 16), float32], %w: Tensor[(8, 3, 3, 3), float32],
          %bc: Tensor[(8), float32], %wd: Tensor[(10, 512), float32],
          %bd: Tensor[(10), float32], %gamma: Tensor[(8), float32],
          %beta: Tensor[(8), float32], %mean: Tensor[(8), float32],
          %var: Tensor[(8), float32]) {{
  %9 = nn.batch_norm(nn.conv2d(%x, %w, padding=[1, 1, 1, 1]), %gamma, %beta, %mean, %var);
  %0 = nn.relu(nn.bias_add(%9.0, %bc));
  %1 = nn.max_pool2d(%0, pool_size=[2, 2], strides=[2, 2]);
  %2 = nn.dense(nn.batch_flatten(%1), %wd);
  nn.softmax(nn.bias_add(%2, %bd))
}}"""


def _params(mod: rr.IRModule, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in mod.functions["main"].params[1:]:
        shape = p.type_annotation.shape
        if p.name_hint in ("gamma", "var"):  # batch norm: folded into the conv (both)
            out[p.name_hint] = rng.uniform(0.5, 1.5, shape).astype("float32")
            continue
        scale = 1 / np.sqrt(np.prod(shape[1:])) if len(shape) > 1 else 0.1
        out[p.name_hint] = (rng.standard_normal(shape) * scale).astype("float32")
    return out


def _summary(plan: object) -> tuple:
    """The plan's structure: groups (label, strategy, kernels, count), buffers, planned
    values, kernel calls, constants (FoldScaleAxis folded the same); not the text."""
    groups = sorted((g.label, g.strategy, g.kernels, g.count) for g in plan.groups)
    return groups, plan.buffers, plan.planned_values, plan.launches, plan.constants


@pytest.mark.parametrize(("source", "feature"), [(_mlp, (64,)), (_cnn, (3, 16, 16))],
                         ids=["mlp", "cnn"])
def test_one_compile_runs_every_batch_with_the_static_plan(source, feature) -> None:
    mod = rr.parse(source("n"))
    params = _params(mod)
    exe = rr.compile(mod, params=params)
    assert any(g.strategy == "anchor+fused" for g in exe.plan.groups)
    assert exe.plan.symbolic_buffers and "n" in str(exe.plan)  # symbolic sizes printed
    rng = np.random.default_rng(1)
    for k, batch in enumerate((1, 7, 64)):
        x = rng.standard_normal((batch, *feature)).astype("float32")
        got = exe(x)
        want = rr.evaluate(mod, x, *params.values())
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        if k:  # a new size compiles nothing
            assert exe.stats.last_compilations == 0
        static = rr.compile(rr.parse(source(batch)), params=params)
        assert _summary(exe.plan) == _summary(static.plan)
    assert exe.stats.calls == 3


def test_buffers_reuse_provably_equal_symbolic_sizes() -> None:
    exe = rr.compile(rr.parse(_mlp("n")), params=_params(rr.parse(_mlp("n"))))
    memory = exe.memory
    # three hidden activations of n * HIDDEN floats ping-pong between two buffers
    assert len(memory.symbolic) == 3 and len(memory.symbolic_sizes) == 2
    assert {str(s) for s in memory.symbolic_sizes} == {f"n * {HIDDEN * 4}"}
    by_buffer: dict[int, list[tuple[int, int]]] = {}
    for call in memory.symbolic:
        by_buffer.setdefault(memory.offsets[call], []).append(memory.ranges[call])
    for ranges in by_buffer.values():  # one buffer's values are never live together
        ranges.sort()
        for (_, end), (start, _) in zip(ranges, ranges[1:], strict=False):
            assert end <= start


def test_buffers_grow_only_when_a_call_needs_more() -> None:
    mod = rr.parse(_mlp("n"))
    exe = rr.compile(mod, params=_params(mod))
    runtime = exe.runtime
    exe(np.ones((64, 64), np.float32))
    grown = runtime.allocations
    assert grown == 2 and runtime.nbytes == 2 * 64 * HIDDEN * 4
    first = exe(np.ones((7, 64), np.float32))
    again = exe(np.ones((7, 64), np.float32))
    assert runtime.allocations == grown  # smaller sizes reuse the buffers
    np.testing.assert_array_equal(first, again)  # outputs never alias the buffers


def test_shape_bounds_preallocate_and_refuse_larger() -> None:
    mod = rr.parse(_mlp("n"))
    params = _params(mod)
    exe = rr.compile(mod, params=params, shape_bounds={"n": 16})
    runtime = exe.runtime
    assert runtime.nbytes == 2 * 16 * HIDDEN * 4  # allocated at compile time
    x = np.random.default_rng(2).standard_normal((16, 64)).astype("float32")
    np.testing.assert_allclose(exe(x), rr.evaluate(mod, x, *params.values()), rtol=1e-5,
                               atol=1e-6)
    exe(x[:3])
    assert runtime.allocations == 0
    with pytest.raises(rr.RelayRuntimeError, match="n is 17, above its bound 16"):
        exe(np.ones((17, 64), np.float32))
    with pytest.raises(rr.RelayError, match="not a shape variable"):
        rr.compile(mod, params=params, shape_bounds={"m": 4})


def test_entry_binds_shape_variables_and_reports_a_mismatch() -> None:
    mod = rr.parse("""
def @main(%x: Tensor[(n, 8), float32], %y: Tensor[(n, 8), float32]) {
  nn.relu(add(%x, %y))
}""")
    exe = rr.compile(mod)
    a, b = np.ones((3, 8), np.float32), np.full((3, 8), -2.0, np.float32)
    np.testing.assert_array_equal(exe(a, b), np.zeros((3, 8), np.float32))
    with pytest.raises(rr.RelayRuntimeError, match=r"%y: dimension 0: n is 3 but the value "
                                                  r"has 4") as info:
        exe(a, np.ones((4, 8), np.float32))
    assert info.value.diagnostics[0].span.line == 2  # the parameter


def _with_symbolic_ops(text: str, out_rows: object, fn: str = "dup_rows") -> rr.IRModule:
    """``text`` with its first ``copy`` a ``match_cast`` to ``Tensor[(m, 4)]`` and its
    second a ``call_dps_packed("dup_rows", ...)`` giving ``Tensor[(out_rows, 4)]`` (the
    parser has no syntax for them yet: spans are the ``copy`` calls')."""
    mod = rr.parse(text)
    func = mod.functions["main"]
    first = func.body
    second = first.body
    c1, c2 = first.value, second.value
    cast = Call(Op("match_cast"), (c1.args[0],),
                MatchCastAttrs(TensorType((sym("m"), 4), "float32")), (), c1.span)
    dps = Call(Op("call_dps_packed"), (Tuple((c2.args[0],)),),
               DPSAttrs(fn, TensorType((out_rows, 4), "float32")), (), c2.span)
    body = Let(first.var, cast, Let(second.var, dps, second.body, second.span), first.span)
    return rr.IRModule({"main": dataclasses.replace(func, body=body)},
                       source_name=mod.source_name)


def _dup_rows(x: np.ndarray, out: np.ndarray, m: int) -> None:
    out[:m] = x
    out[m:] = 2 * x


_dup_rows.sym_args = ("m",)  # type: ignore[attr-defined]
register_packed("dup_rows", _dup_rows, replace=True)


def _dup_rows_k(x: np.ndarray, out: np.ndarray, k: int) -> None:
    _dup_rows(x, out, k)


_dup_rows_k.sym_args = ("k",)  # type: ignore[attr-defined]
register_packed("dup_rows_k", _dup_rows_k, replace=True)

_PROGRAM = """
def @main(%a: Tensor[(k), float32], %x: Tensor[(?, 4), float32]) {
  let %y = copy(%x);
  let %z = copy(%y);
  nn.relu(%z)
}"""


def test_match_cast_and_call_dps_packed_in_compiled_code() -> None:
    mod = _with_symbolic_ops(_PROGRAM, sym("m") * 2)
    exe = rr.compile(mod)
    for rows in (2, 5):
        x = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4) - 3
        got = exe(np.zeros(3, np.float32), x)
        want = np.maximum(np.concatenate([x, 2 * x]), 0)
        np.testing.assert_array_equal(got, want)


def test_failing_match_cast_is_located_at_the_match_cast() -> None:
    # match_cast to (k, 4): k is bound by %a at the entry, so rows must equal len(a)
    mod = _with_symbolic_ops(_PROGRAM, sym("k") * 2, "dup_rows_k")
    func = mod.functions["main"]
    cast = func.body.value
    fixed = Call(cast.op, cast.args, MatchCastAttrs(TensorType((sym("k"), 4), "float32")),
                 (), cast.span)
    mod = rr.IRModule({"main": dataclasses.replace(
        func, body=Let(func.body.var, fixed, func.body.body, func.body.span))})
    exe = rr.compile(mod)
    x = np.ones((3, 4), np.float32)
    assert exe(np.zeros(3, np.float32), x).shape == (6, 4)
    with pytest.raises(rr.RelayRuntimeError, match="match_cast: dimension 0: k is 2 but the "
                                                  "value has 3") as info:
        exe(np.zeros(2, np.float32), x)
    assert info.value.diagnostics[0].span.line == 3  # the match_cast (was copy)


def test_new_rank_compiles_then_new_sizes_do_not() -> None:
    # a kernel no other test builds (its constant is in the source): the first call
    # specialises it, later sizes reuse it
    mod = rr.parse("""
def @main(%x: Tensor[(n, m, 1024), float64]) {
  add(multiply(sigmoid(%x), 3.0625f64), %x)
}""")
    exe = rr.compile(mod)
    assert exe.plan.groups[0].strategy == "fused"
    rng = np.random.default_rng(3)
    for k, shape in enumerate([(2, 4, 1024), (5, 3, 1024), (1, 7, 1024)]):
        x = rng.standard_normal(shape)
        np.testing.assert_allclose(exe(x), 3.0625 / (1 + np.exp(-x)) + x, rtol=1e-12)
        if k:
            assert exe.stats.last_compilations == 0
    assert exe.stats.compilations >= 1  # the first call's


def test_fused_kernel_with_symbolic_broadcasting_shapes() -> None:
    mod = rr.parse("""
def @main(%x: Tensor[(n, 64, 16, m), float32], %y: Tensor[(64, 1, 1), float32]) {
  nn.relu(add(multiply(%x, %y), 1f))
}""")
    exe = rr.compile(mod)
    assert [g.strategy for g in exe.plan.groups] == ["fused"]
    rng = np.random.default_rng(4)
    y = rng.standard_normal((64, 1, 1)).astype("float32")
    for shape in [(1, 64, 16, 1), (3, 64, 16, 5), (0, 64, 16, 2), (2, 64, 16, 1)]:
        x = rng.standard_normal(shape).astype("float32")
        got = exe(x, y)
        assert got.shape == shape
        np.testing.assert_allclose(got, np.maximum(x * y + 1, 0), rtol=1e-6)
    with pytest.raises(rr.RelayRuntimeError):
        exe(np.ones((2, 64, 15, 1), np.float32), y)  # a number in the type: refused


def test_dataflow_block_runs_its_body_with_planned_buffers() -> None:
    mod = rr.parse("""
def @main(%x: Tensor[(n, 1024), float32]) {
  copy(let %a = nn.relu(%x); let %b = add(%a, 1f); multiply(%b, %b))
}""")
    func = mod.functions["main"]
    block = Call(Op("dataflow"), func.body.args, None, (), func.body.span)
    blocked = rr.IRModule({"main": dataclasses.replace(func, body=block)})
    x = np.random.default_rng(5).standard_normal((3, 1024)).astype("float32")
    # without DataflowToGraph (the first default pass) each let is its own group
    exe = rr.compile(blocked, passes=DEFAULT_PASSES[1:])
    assert [g.strategy for g in exe.plan.groups] == ["fused"] * 3
    assert exe.plan.planned_values == 2  # relu's and add's results, in n * 4096 buffers
    np.testing.assert_allclose(exe(x), (np.maximum(x, 0) + 1) ** 2, rtol=1e-6)
    # by default the block's bindings are graph sharing first: one fused group
    exe = rr.compile(blocked)
    assert [(g.label, g.strategy) for g in exe.plan.groups] == [("relu+add+multiply",
                                                                 "fused")]
    np.testing.assert_allclose(exe(x), (np.maximum(x, 0) + 1) ** 2, rtol=1e-6)
