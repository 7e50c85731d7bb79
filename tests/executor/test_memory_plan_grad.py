"""The memory plan (``relay_ref.executor.memory``) covers gradient programs: their
intermediates (read by view kernels, references and tuples, as AD's output is) reuse
planned buffers as inference programs' do, and outputs stay fresh arrays.

Each program (a small CNN's first-order gradient, its higher-order gradient simplified by
PartialEvaluate + DCE, a training step with an SGD update, a residual block whose shared
intermediate feeds both branches, a chain of 200 layers) runs three calls on different
inputs, each equal to ``rr.evaluate`` (a buffer reused too early shows as a wrong value);
the first call's outputs are kept unchanged by the later ones and share no byte with a
buffer. A recording runtime then checks the plan left no intermediate fresh that it could
have planned: every result of a kernel writing ``out=`` is in a buffer unless it shares
memory with an output or a NumPy reference reads it (the plan takes a reference's result
to alias its arguments)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.executor.runtime import Instrumented, Recorder, Site
from relay_ref.ops.registry import op_kernel

BATCH, SIDE, F1, F2, K = 4, 12, 4, 8, 3  # the CNN: 4x1x12x12 -> 4 -> pool -> 8 -> pool -> 3


def _t(*shape: int) -> str:
    return f"Tensor[({', '.join(map(str, shape))},), float32]"


CNN_SIG = (f"%x: {_t(BATCH, 1, SIDE, SIDE)}, %y: {_t(BATCH, K)}, %w1: {_t(F1, 1, 3, 3)}, "
           f"%b1: {_t(F1)}, %w2: {_t(F2, F1, 3, 3)}, %b2: {_t(F2)}, "
           f"%w3: {_t(K, F2 * (SIDE // 4) ** 2)}, %b3: {_t(K)}")
CNN_NAMES = ("x", "y", "w1", "b1", "w2", "b2", "w3", "b3")
CNN_LOSS = f"""def @main({CNN_SIG}) -> float32 {{
  let %c1 = nn.relu(nn.bias_add(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]), %b1));
  let %h1 = nn.max_pool2d(%c1, pool_size=[2, 2], strides=[2, 2]);
  let %c2 = nn.relu(nn.bias_add(nn.conv2d(%h1, %w2, padding=[1, 1, 1, 1]), %b2));
  let %h2 = nn.max_pool2d(%c2, pool_size=[2, 2], strides=[2, 2]);
  let %z = nn.bias_add(nn.dense(nn.batch_flatten(%h2), %w3), %b3);
  negative(sum(nn.log_softmax(%z) * %y)) / {BATCH}f
}}
"""
_UPDATES = ", ".join(f"%{p} - 0.1f * %g.{i}" for i, p in enumerate(CNN_NAMES) if i >= 2)
CNN_STEP = CNN_LOSS.replace("@main", "@loss") + f"""
def @main({CNN_SIG}) {{
  let %r = gradient(@loss)({", ".join("%" + n for n in CNN_NAMES)});
  let %g = %r.1;
  (%r.0, ({_UPDATES}))
}}
"""

# a residual block whose shared intermediate %h feeds the convolutions and the sum
RES_SIG = (f"%x: {_t(2, 4, 8, 8)}, %w0: {_t(4, 4, 3, 3)}, %w1: {_t(4, 4, 3, 3)}, "
           f"%w2: {_t(4, 4, 3, 3)}, %y: {_t(2, 4, 8, 8)}")
RES_LOSS = f"""def @main({RES_SIG}) -> float32 {{
  let %h = nn.relu(nn.conv2d(%x, %w0, padding=[1, 1, 1, 1]));
  let %a = nn.relu(nn.conv2d(%h, %w1, padding=[1, 1, 1, 1]));
  let %b = nn.conv2d(%a, %w2, padding=[1, 1, 1, 1]);
  let %o = nn.relu(%b + %h);
  sum(%o * %y) / 2f
}}
"""

DEPTH = 200


def _chain(depth: int) -> str:
    """``depth`` layers ``tanh(dense(h, w) + b)`` sharing one weight and bias."""
    lines = [f"  let %h{k + 1} = tanh(nn.bias_add(nn.dense(%h{k}, %w), %b));"
             for k in range(depth)]
    return (f"def @main(%h0: {_t(32, 32)}, %w: {_t(32, 32)}, %b: {_t(32)}) -> float32 {{\n"
            + "\n".join(lines) + f"\n  sum(%h{depth} * %h{depth})\n}}\n")


def _first_order(text: str) -> rr.IRModule:
    return rr.gradient(rr.parse(text), "first_order")


def _higher_order(text: str) -> rr.IRModule:
    return rr.optimize(rr.gradient(rr.parse(text)), ["PartialEvaluate", "DeadCodeElimination"])


def _cnn_args(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    flat = F2 * (SIDE // 4) ** 2
    arrays = [rng.normal(size=(BATCH, 1, SIDE, SIDE)),
              np.eye(K)[rng.integers(0, K, BATCH)],
              rng.normal(size=(F1, 1, 3, 3)) * 0.3, rng.normal(size=F1) * 0.1,
              rng.normal(size=(F2, F1, 3, 3)) * 0.1, rng.normal(size=F2) * 0.1,
              rng.normal(size=(K, flat)) * 0.05, rng.normal(size=K) * 0.1]
    return [a.astype("float32") for a in arrays]


def _res_args(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, 4, 8, 8))
    ws = [rng.normal(size=(4, 4, 3, 3)) * 0.2 for _ in range(3)]
    return [a.astype("float32") for a in (x, *ws, rng.normal(size=(2, 4, 8, 8)))]


def _chain_args(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(32, 32)).astype("float32"),
            (rng.normal(size=(32, 32)) * 0.15).astype("float32"),
            (rng.normal(size=32) * 0.1).astype("float32")]


PROGRAMS = {
    "cnn first_order": (lambda: _first_order(CNN_LOSS), _cnn_args),
    "cnn higher_order + PE + DCE": (lambda: _higher_order(CNN_LOSS), _cnn_args),
    "cnn training step (gradient + SGD)": (lambda: rr.parse(CNN_STEP), _cnn_args),
    "residual block first_order": (lambda: _first_order(RES_LOSS), _res_args),
    "residual block higher_order + PE + DCE": (lambda: _higher_order(RES_LOSS), _res_args),
    f"chain of {DEPTH} layers first_order": (lambda: _first_order(_chain(DEPTH)), _chain_args),
}


def _leaves(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    return [np.asarray(value)]


def _assert_close(got: Any, want: Any) -> None:
    gs, ws = _leaves(got), _leaves(want)
    assert len(gs) == len(ws)
    for g, w in zip(gs, ws, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = max(float(np.max(np.abs(w), initial=0.0)), 1e-3)
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=2e-5 * scale)


def _writes_out(site: Site) -> bool:
    """A step whose kernel honours ``out=`` and returns a fresh array: a generated kernel,
    or an operator's CPU kernel that returns no views."""
    if site.kind == "fused":
        return True
    return site.kind == "op" and not site.view and \
        site.call.kernel is op_kernel(site.label, "cpu")  # type: ignore[attr-defined]


def _fresh_intermediates(exe: Any, args: list[np.ndarray]) -> tuple[list[str], int]:
    """One recorded call: the sites of group results a kernel wrote into a fresh array
    although the plan could have given it a buffer (not sharing memory with an output,
    read by no reference), and the number of group results in a buffer."""
    recorder = Recorder()
    inner = exe.runtime
    exe.runtime = Instrumented(inner, recorder)
    try:
        outputs = _leaves(exe(*args))
    finally:
        exe.runtime = inner
    buffers = exe.memory.buffers
    ends = [(k, e[1], e[2]) for k, e in enumerate(recorder.events) if e[0] == "end"]
    readers = [(k, e[1], e[2]) for k, e in enumerate(recorder.events)
               if e[0] == "begin" and not _writes_out(e[1]) and not e[1].view]
    fresh, planned = [], set()
    for k, site, value in ends:
        if site.shape is None or type(value) is not np.ndarray or not _writes_out(site):
            continue  # not a group's result, or not written by an out= kernel
        if any(np.shares_memory(value, b) for b in buffers):
            planned.add(id(value))  # (a tail written in place returns its anchor's array)
            continue
        if any(np.shares_memory(value, o) for o in outputs):
            continue
        if any(j > k and any(type(a) is np.ndarray and np.may_share_memory(a, value)
                             for a in reads) for j, _, reads in readers):
            continue  # a reference reads it (or a view of it): taken to alias it
        fresh.append(site.name)
    return fresh, len(planned)


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def compiled(request: pytest.FixtureRequest) -> tuple[str, rr.IRModule, Any, Any]:
    make, args = PROGRAMS[request.param]
    mod = make()
    return request.param, mod, rr.compile(mod), args


def test_three_calls_equal_the_interpreter_and_outputs_stay_fresh(compiled: Any) -> None:
    _, mod, exe, make_args = compiled
    kept = None
    for seed in range(3):
        args = make_args(seed)
        got = exe(*args)
        _assert_close(got, rr.evaluate(mod, *args))
        for leaf in _leaves(got):
            assert not any(np.shares_memory(leaf, b) for b in exe.memory.buffers)
        if kept is None:
            first, kept = got, [leaf.copy() for leaf in _leaves(got)]
    for leaf, copy in zip(_leaves(first), kept, strict=True):  # calls 2 and 3 left it
        np.testing.assert_array_equal(leaf, copy)


def test_the_plan_leaves_no_plannable_intermediate_fresh(compiled: Any) -> None:
    name, _, exe, make_args = compiled
    memory = exe.memory
    assert len(memory.buffers) > 0 and exe.plan.planned_values == len(memory.views) > 0, name
    fresh, planned = _fresh_intermediates(exe, make_args(5))
    assert fresh == [], f"{name}: fresh intermediates that could be planned: {fresh}"
    assert planned == len(memory.views)  # every planned value was written in its buffer


def test_values_read_by_views_and_references_are_planned(compiled: Any) -> None:
    """What the plan of issue 30 adds: results that view kernels (the transposes and the
    flattening of ``dense``'s gradient) or NumPy references (the pooling gradient, the
    convolution's data gradient) read are planned, their buffers held until the last
    reader of the view or of the reference's result (the three calls above check that
    no buffer is overwritten earlier)."""
    name, _, exe, make_args = compiled
    recorder = Recorder()
    inner = exe.runtime
    exe.runtime = Instrumented(inner, recorder)
    try:
        exe(*make_args(7))
    finally:
        exe.runtime = inner
    buffers = exe.memory.buffers
    made = {id(e[2]) for e in recorder.events if e[0] == "end" and _writes_out(e[1])}
    read_by = {"view": [0, 0], "reference": [0, 0]}  # kernel results read: planned, all
    for event in recorder.events:
        if event[0] != "begin" or _writes_out(event[1]):
            continue
        counts = read_by["view" if event[1].view else "reference"]
        for a in event[2]:
            if id(a) in made:
                counts[0] += any(np.shares_memory(a, b) for b in buffers)
                counts[1] += 1
    assert read_by["view"][0] > 0, f"{name}: no planned value is read through a view"
    if read_by["reference"][1]:  # (the training ops' kernels make references rare)
        assert read_by["reference"][0] > 0, f"{name}: no value a reference reads is planned"


def test_deep_chain_plans_in_few_buffers() -> None:
    """200 layers: thousands of values, a handful of buffers (the linear scan reuses them
    as the chain goes; the backward pass reads the forward activations in reverse)."""
    exe = rr.compile(_first_order(_chain(DEPTH)))
    memory = exe.memory
    assert len(memory.views) >= 2 * DEPTH  # the forward pre-activations and adjoints
    assert len(memory.buffers) <= len(memory.views) // 4


def test_a_result_returned_through_an_ungrouped_operator_is_fresh() -> None:
    """A ``dataflow`` block's operator (no FuseOps group) may return its argument: the
    value it reads (a ``let``'s body) must not be planned, or a later call overwrites
    the output a caller kept."""
    import dataclasses

    from relay_ref.executor.compile import DEFAULT_PASSES
    from relay_ref.ir.expr import Call, Op

    mod = rr.parse(f"""
def @main(%x: {_t(4, 1024)}) {{
  copy(let %a = nn.relu(%x); let %b = add(%a, 1f); multiply(%b, %b))
}}""")
    func = mod.functions["main"]
    block = Call(Op("dataflow"), func.body.args, None, (), func.body.span)
    blocked = rr.IRModule({"main": dataclasses.replace(func, body=block)})
    exe = rr.compile(blocked, passes=DEFAULT_PASSES[1:])
    assert exe.plan.planned_values == 2  # relu's and add's results; multiply's escapes
    x = np.random.default_rng(5).standard_normal((4, 1024)).astype("float32")
    first = exe(x)
    kept = first.copy()
    np.testing.assert_allclose(exe(x * 2), (np.maximum(x * 2, 0) + 1) ** 2, rtol=1e-6)
    np.testing.assert_array_equal(first, kept)
    assert not any(np.shares_memory(first, b) for b in exe.memory.buffers)
