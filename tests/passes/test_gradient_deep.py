"""AD and PartialEvaluate on deep programs in the shapes real models have (issue 24, Build 2):
graph-form chains (``%i = tanh(%i-1)``, as the ONNX importer writes them), a nested multiply
expression (``%x * 1.0001f * ...``), residual networks (``%i = add(%i-1, tanh(nn.dense(%i-1,
%W)))``: each block uses its input twice and every block shares ``%W``) and an RNN unrolled
over 300 steps.

Cost is measured as ``tests/test_linear_cost.py`` does, by the number of Python lines
executed (``relay_ref.testing.growth.step_count``, deterministic): doubling the program at
most doubles the work of ``rr.gradient`` (every mode) and of PartialEvaluate on its output,
and the size of the gradient program grows by the same amount from ``n`` to ``2n`` as from
``2n`` to ``4n`` (affine: a quadratic output would grow by twice as much). Values are
compared against the chain rule computed in NumPy (float64)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.ir import expr as E
from relay_ref.ir.visitor import post_order
from relay_ref.passes.gradient import MODES
from relay_ref.passes.gradient_first_order import FirstOrderAD
from relay_ref.passes.gradient_forward import ForwardAD
from relay_ref.passes.gradient_reverse import ReverseAD
from relay_ref.passes.partial_eval import partial_evaluate
from relay_ref.testing.growth import step_count

# A path-walking or quadratic regression would hang rather than fail: bound it.
pytestmark = pytest.mark.timeout(300)

X = np.linspace(-1, 1, 4).astype("float32")


def tanh_chain(n: int) -> str:
    lines = ["def @main(%x: Tensor[(4), float32]) {", "  %0 = tanh(%x);"]
    lines += [f"  %{i} = tanh(%{i - 1});" for i in range(1, n)]
    return "\n".join([*lines, f"  %{n - 1}", "}"])


def multiply_chain(n: int) -> str:
    """One expression ``n`` multiplies deep (no bindings at all)."""
    return "def @main(%x: Tensor[(4), float32]) {\n  %x" + " * 1.0001f" * n + "\n}"


def residual_net(n: int) -> str:
    """``n`` residual blocks sharing one weight; each block's input is used twice."""
    lines = ["def @main(%x: Tensor[(1, 2), float32], %w: Tensor[(2, 2), float32]) {",
             "  %0 = add(%x, tanh(nn.dense(%x, %w)));"]
    lines += [f"  %{i} = add(%{i - 1}, tanh(nn.dense(%{i - 1}, %w)));" for i in range(1, n)]
    return "\n".join([*lines, f"  %{n - 1}", "}"])


SHAPES: dict[str, Callable[[int], str]] = {
    "tanh_chain": tanh_chain, "multiply_chain": multiply_chain, "residual": residual_net}


def _size(mod: rr.IRModule) -> int:
    """Distinct nodes of every function of ``mod`` (a shared node counts once)."""
    return sum(len(list(post_order(fn))) for fn in mod.functions.values())


# -- linear work and linear output --------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_gradient_work_doubles_at_most_when_the_network_doubles(mode: str) -> None:
    def cost(n: int) -> int:
        mod = rr.infer_types(rr.parse(residual_net(n)))
        return step_count(lambda: rr.gradient(mod, mode))

    small, large = cost(40), cost(80)
    assert large <= 2.1 * small + 2000, (mode, small, large)


@pytest.mark.parametrize("mode", ["higher_order", "first_order"])
def test_partial_evaluate_of_a_gradient_is_linear(mode: str) -> None:
    def cost(n: int) -> tuple[int, int]:
        grad = rr.gradient(rr.parse(residual_net(n)), mode)
        box: dict[str, rr.IRModule] = {}
        steps = step_count(lambda: box.__setitem__("out", partial_evaluate(grad)))
        return steps, _size(box["out"])

    (small, small_size), (large, large_size) = cost(30), cost(60)
    assert large <= 2.1 * small + 2000, (mode, small, large)
    assert large_size <= 2.1 * small_size, (mode, small_size, large_size)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_gradient_output_grows_linearly(shape: str, mode: str) -> None:
    ns = (25, 50, 100)
    sizes = [_size(rr.gradient(rr.parse(SHAPES[shape](n)), mode)) for n in ns]
    inputs = [_size(rr.parse(SHAPES[shape](n))) for n in ns]
    # affine in n: the second doubling adds exactly twice what the first added
    assert sizes[2] - sizes[1] == 2 * (sizes[1] - sizes[0]), (shape, mode, sizes)
    # a few dozen output nodes for each node of the program
    assert sizes[2] - sizes[1] <= 50 * (inputs[2] - inputs[1]), (shape, mode, sizes, inputs)


@functools.cache
def _checked_chain(n: int) -> rr.IRModule:
    return rr.infer_types(rr.parse(tanh_chain(n)))


@pytest.mark.parametrize("transform", [ReverseAD, FirstOrderAD, ForwardAD])
def test_the_transforms_need_no_deep_stack_on_a_graph_form_chain(transform: type) -> None:
    # On this thread, under Python's default recursion limit: each transform walks the
    # dataflow iteratively (rr.gradient still runs it on a big stack, for deep nests of
    # lets and closures, and the type checker needs one).
    n = 3000
    assert sys.getrecursionlimit() < n
    mod = _checked_chain(n)
    fn = transform(mod).wrapper(mod.functions["main"], mod.global_types["main"], None)
    tanh = [node for node in post_order(fn) if isinstance(node, E.Call)
            and isinstance(node.op, E.Op) and node.op.name == "tanh"]
    assert len(tanh) == n  # one forward call for each node of the chain


def test_partial_evaluate_needs_no_deep_stack_on_a_graph_form_chain() -> None:
    # the evaluator's own walk, on this thread (partial_evaluate also runs on a big stack)
    from relay_ref.passes import partial_eval

    n = 3000
    mod = _checked_chain(n)
    pe = partial_eval._PE(mod)
    fn = pe.global_function(mod.functions["main"])
    tanh = [node for node in post_order(fn) if isinstance(node, E.Call)
            and isinstance(node.op, E.Op) and node.op.name == "tanh"]
    assert len(tanh) == n and not pe.pre  # every value computed ahead was taken


# -- values on deep programs --------------------------------------------------------------

def _tanh_chain_rule(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    value, grad = x.astype(np.float64), np.ones(x.shape)
    for _ in range(n):
        value = np.tanh(value)
        grad = grad * (1 - value * value)
    return value, grad


@pytest.mark.slow  # ~20 s, most of it rr.compile's pipeline on 130 000 nodes
def test_gradient_of_a_10000_node_chain_compiled_and_evaluated() -> None:
    n = 10_000
    grad_mod = rr.gradient(rr.parse(tanh_chain(n)), "first_order")
    want_value, want_grad = _tanh_chain_rule(X, n)
    evaluated = rr.evaluate(grad_mod, X)
    compiled = rr.compile(grad_mod)(X)
    for value, (grad,) in (evaluated, compiled):
        np.testing.assert_allclose(value, want_value, rtol=1e-3, atol=1e-6)
        np.testing.assert_allclose(grad, want_grad, rtol=2e-3, atol=1e-9)
    np.testing.assert_allclose(compiled[1][0], evaluated[1][0], rtol=1e-5, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_gradient_of_a_1000_multiply_expression(mode: str) -> None:
    n = 1000
    value, (grad,) = rr.evaluate(rr.gradient(rr.parse(multiply_chain(n)), mode), X)
    factor = np.float64(np.float32(1.0001)) ** n
    np.testing.assert_allclose(value, X * factor, rtol=1e-4)
    np.testing.assert_allclose(grad, np.full(4, factor), rtol=1e-4)


def _residual_chain_rule(x: np.ndarray, w: np.ndarray, n: int
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Value and the gradients of ``sum(h_n)`` w.r.t. ``x`` and ``w`` (float64)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    hs, ts = [x], []
    for _ in range(n):
        t = np.tanh(hs[-1] @ w.T)
        ts.append(t)
        hs.append(hs[-1] + t)
    g, gw = np.ones_like(x), np.zeros_like(w)
    for h, t in zip(reversed(hs[:-1]), reversed(ts), strict=True):
        d = g * (1 - t * t)
        gw += d.T @ h
        g = g + d @ w
    return hs[-1], g, gw


@pytest.mark.parametrize("mode", MODES)
def test_gradient_of_a_1000_block_residual_network(mode: str) -> None:
    n = 1000
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 2)).astype("float32")
    w = (rng.normal(size=(2, 2)) * 0.01).astype("float32")
    value, (gx, gw) = rr.evaluate(rr.gradient(rr.parse(residual_net(n)), mode), x, w)
    want_value, want_gx, want_gw = _residual_chain_rule(x, w, n)
    np.testing.assert_allclose(value, want_value, rtol=1e-3)
    np.testing.assert_allclose(gx, want_gx, rtol=2e-3, atol=1e-3 * np.abs(want_gx).max())
    np.testing.assert_allclose(gw, want_gw, rtol=2e-3, atol=1e-3 * np.abs(want_gw).max())


def test_partial_evaluate_makes_a_deep_higher_order_gradient_straight_line() -> None:
    # the backpropagator closures and adjoint cells of a 500-block network all resolve
    # statically (1000 blocks: the same, in about twice the time)
    n = 500
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 2)).astype("float32")
    w = (rng.normal(size=(2, 2)) * 0.01).astype("float32")
    out = partial_evaluate(rr.gradient(rr.parse(residual_net(n)), "higher_order"))
    nodes = list(post_order(out.functions["main"]))
    assert not [e for e in nodes if isinstance(e, E.RefCreate | E.RefRead | E.RefWrite)]
    assert sum(isinstance(e, E.Function) for e in nodes) == 1  # @main itself
    value, (gx, gw) = rr.evaluate(out, x, w)
    want_value, want_gx, want_gw = _residual_chain_rule(x, w, n)
    np.testing.assert_allclose(value, want_value, rtol=1e-3)
    np.testing.assert_allclose(gx, want_gx, rtol=2e-3)
    np.testing.assert_allclose(gw, want_gw, rtol=2e-3)


def rnn(steps: int) -> str:
    """An RNN unrolled over ``steps`` steps, written as graph bindings; returns sum(h)."""
    lines = [f"def @main(%xs: Tensor[({steps}, 1, 3), float32], %h: Tensor[(1, 5), float32], "
             "%wx: Tensor[(5, 3), float32], %wh: Tensor[(5, 5), float32]) {"]
    prev = "%h"
    for i in range(steps):
        lines.append(f"  %{2 * i} = squeeze(strided_slice(%xs, begin=[{i}], end=[{i + 1}]), "
                     "axis=[0]);")
        lines.append(f"  %{2 * i + 1} = tanh(add(nn.dense(%{2 * i}, %wx), "
                     f"nn.dense({prev}, %wh)));")
        prev = f"%{2 * i + 1}"
    return "\n".join([*lines, f"  sum({prev})", "}"])


def _rnn_chain_rule(xs: np.ndarray, h: np.ndarray, wx: np.ndarray, wh: np.ndarray
                    ) -> tuple[float, list[np.ndarray]]:
    """Backpropagation through time in float64: the loss and its four gradients."""
    xs, h, wx, wh = (a.astype(np.float64) for a in (xs, h, wx, wh))
    hs = [h]
    for x in xs:
        hs.append(np.tanh(x @ wx.T + hs[-1] @ wh.T))
    g = np.ones_like(h)
    gxs, gwx, gwh = np.zeros_like(xs), np.zeros_like(wx), np.zeros_like(wh)
    for t in reversed(range(len(xs))):
        d = g * (1 - hs[t + 1] ** 2)
        gwx += d.T @ xs[t]
        gwh += d.T @ hs[t]
        gxs[t] = d @ wx
        g = d @ wh
    return float(hs[-1].sum()), [gxs, g, gwx, gwh]


@pytest.mark.parametrize("mode", ["higher_order", "first_order"])
def test_gradient_of_an_rnn_unrolled_over_300_steps(mode: str) -> None:
    steps = 300
    rng = np.random.default_rng(1)
    args = [rng.normal(size=(steps, 1, 3)).astype("float32"),
            rng.normal(size=(1, 5)).astype("float32"),
            (rng.normal(size=(5, 3)) * 0.5).astype("float32"),
            (rng.normal(size=(5, 5)) * 0.3).astype("float32")]
    value, grads = rr.evaluate(rr.gradient(rr.parse(rnn(steps)), mode), *args)
    want_value, want_grads = _rnn_chain_rule(*args)
    assert float(value) == pytest.approx(want_value, rel=1e-4)
    for got, want in zip(grads, want_grads, strict=True):
        # the initial state's gradient vanishes over 300 steps (1e-170 in float64)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
    assert np.abs(grads[0][-1]).max() > 0.1  # the last steps' inputs matter
