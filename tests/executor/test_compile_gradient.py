"""``rr.compile`` of programs calling ``gradient(@f)``: the expansion (spec/ad.md AD-Grad-Op)
is simplified by PartialEvaluate + DeadCodeElimination before the pipeline
(``relay_ref.executor.compile.GRADIENT_PASSES``), guarded (a failing or growing
simplification leaves the expansion as it is). The compiled values equal the interpreter's
on an MLP and a small CNN training step and on a recursive function over a ``List``; the
MLP's compiled code has no reference cells left; programs without ``gradient`` are
compiled as before."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.executor.compile import DEFAULT_PASSES, GRADIENT_PASSES, compile_module
from relay_ref.ir.expr import Constant, RefCreate, RefRead, RefWrite, Tuple, TupleGetItem
from relay_ref.ir.visitor import post_order
from relay_ref.passes import partial_eval
from relay_ref.passes.gradient import expand_gradients

RNG = np.random.default_rng(0)
N, D, H, K = 4, 3, 5, 2  # MLP: batch, features, hidden, classes
B, C, S, F = 2, 1, 4, 2  # CNN: batch, channels, image side, filters


def f64(*shape: int) -> str:
    return f"Tensor[({', '.join(map(str, shape))},), float64]"


def step_text(sig: str, params: list[str], body: str) -> str:
    """``@loss`` with ``body``, and ``@main``: the loss and an SGD step of ``params``."""
    names = [a.split(":")[0].strip(" %") for a in sig.split("], ")]
    args = ", ".join("%" + n for n in names)
    updates = ", ".join(f"%{p} - 0.1f64 * %g.1.{names.index(p)}" for p in params)
    return f"""def @loss({sig}) -> float64 {{ {body} }}
def @main({sig}) {{
  let %g = gradient(@loss)({args});
  (%g.0, ({updates}))
}}"""


MLP = step_text(
    f"%x: {f64(N, D)}, %y: {f64(N, K)}, %w1: {f64(H, D)}, %b1: {f64(H)}, %w2: {f64(K, H)}, "
    f"%b2: {f64(K)}", ["w1", "b1", "w2", "b2"],
    """let %h = nn.relu(nn.bias_add(nn.dense(%x, %w1), %b1));
  let %z = nn.bias_add(nn.dense(%h, %w2), %b2);
  negative(sum(nn.log_softmax(%z) * %y)) / 4f64""")

CNN = step_text(
    f"%x: {f64(B, C, S, S)}, %y: {f64(B, K)}, %w1: {f64(F, C, 3, 3)}, %b1: {f64(F)}, "
    f"%w2: {f64(K, F * (S // 2) ** 2)}", ["w1", "b1", "w2"],
    """let %c = nn.relu(nn.bias_add(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]), %b1));
  let %p = nn.max_pool2d(%c, pool_size=[2, 2], strides=[2, 2]);
  let %z = nn.dense(nn.batch_flatten(%p), %w2);
  negative(sum(nn.log_softmax(%z) * %y)) / 2f64""")

SUMSQ = """def @sumsq(%xs: List[Tensor[(2,), float64]]) -> float64 {
  match (%xs) { Nil => 0f64, Cons(%x, %rest) => sum(%x * %x) * sum(%x) + @sumsq(%rest) }
}
def @loss(%a: Tensor[(2,), float64], %b: Tensor[(2,), float64]) -> float64 {
  @sumsq(Cons(%a, Cons(%b, Cons(%a * %b, Nil))))
}
def @main(%a: Tensor[(2,), float64], %b: Tensor[(2,), float64]) { gradient(@loss)(%a, %b) }
"""


def mlp_args() -> list[np.ndarray]:
    return [RNG.normal(size=(N, D)), np.eye(K)[RNG.integers(0, K, N)],
            RNG.normal(size=(H, D)), RNG.normal(size=H), RNG.normal(size=(K, H)),
            RNG.normal(size=K)]


def cnn_args() -> list[np.ndarray]:
    return [RNG.normal(size=(B, C, S, S)), np.eye(K)[RNG.integers(0, K, B)],
            RNG.normal(size=(F, C, 3, 3)), RNG.normal(size=F),
            RNG.normal(size=(K, F * (S // 2) ** 2))]


def leaves(value) -> list[np.ndarray]:
    if isinstance(value, tuple | list):
        return [x for v in value for x in leaves(v)]
    return [np.asarray(value)]


def assert_same(got, want) -> None:
    got, want = leaves(got), leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def refs(mod: rr.IRModule) -> int:
    return sum(type(n) in (RefCreate, RefRead, RefWrite)
               for f in mod.functions.values() for n in post_order(f))


def test_mlp_step_is_simplified_to_code_without_reference_cells() -> None:
    mod, args = rr.parse(MLP), mlp_args()
    exe = rr.compile(mod)
    assert_same(exe(*args), rr.evaluate(mod, *args))
    assert exe.plan.passes == GRADIENT_PASSES + DEFAULT_PASSES
    assert not exe.plan.notes
    assert refs(exe.module) == 0 and "_Ref(" not in exe.source
    assert not any(name.endswith(("_grad", "_rev")) for name in exe.module.functions)
    # the expansion compiled as it is (what rr.compile did before) has them: the checks
    # above can fail
    raw = compile_module(expand_gradients(mod))
    assert refs(raw.module) > 0 and "_Ref(" in raw.source
    assert raw.plan.passes == DEFAULT_PASSES
    assert_same(raw(*args), exe(*args))


def test_cnn_step_with_max_pool_equals_the_interpreter() -> None:
    mod, args = rr.parse(CNN), cnn_args()
    exe = rr.compile(mod)
    assert exe.plan.passes[:2] == GRADIENT_PASSES
    assert_same(exe(*args), rr.evaluate(mod, *args))


def test_gradient_of_a_recursive_list_function_equals_the_interpreter() -> None:
    mod = rr.parse(SUMSQ)
    a, b = RNG.normal(size=2), RNG.normal(size=2)
    exe = rr.compile(mod)
    assert exe.plan.passes[:2] == GRADIENT_PASSES
    want = rr.evaluate(mod, a, b)
    assert_same(exe(a, b), want)
    value, (da, db) = want  # d/da of s(a) + s(b) + s(a*b), s(v) = sum(v*v) * sum(v)

    def ds(v: np.ndarray) -> np.ndarray:
        return 2 * v * v.sum() + (v * v).sum()

    np.testing.assert_allclose(da, ds(a) + ds(a * b) * b)
    np.testing.assert_allclose(db, ds(b) + ds(a * b) * a)


def test_params_bind_after_the_simplification() -> None:
    mod, args = rr.parse(MLP), mlp_args()
    exe = rr.compile(mod, params={"w1": args[2], "b2": args[5]})
    assert_same(exe(args[0], args[1], args[3], args[4]), rr.evaluate(mod, *args))


def test_a_program_without_gradient_compiles_as_before() -> None:
    mod = rr.parse(f"def @main(%x: {f64(3)}) -> float64 {{ sum(%x * %x) }}")
    exe = rr.compile(mod)
    assert exe.plan.passes == DEFAULT_PASSES and not exe.plan.notes


def test_a_failing_simplification_falls_back_to_the_expansion(monkeypatch) -> None:
    def broken(mod: rr.IRModule) -> rr.IRModule:
        raise RecursionError("out of stack")

    monkeypatch.setattr(partial_eval, "partial_evaluate", broken)
    mod, args = rr.parse(MLP), mlp_args()
    exe = rr.compile(mod)
    assert exe.plan.passes == DEFAULT_PASSES
    assert exe.plan.notes == ("gradient expansion compiled unsimplified: PartialEvaluate "
                              "failed (RecursionError: out of stack)",)
    assert "_Ref(" in exe.source
    assert_same(exe(*args), rr.evaluate(mod, *args))


def test_a_simplification_that_grows_the_program_is_not_used(monkeypatch) -> None:
    """PartialEvaluate's bounds stop it without an error, possibly after unfoldings that
    made the program larger: the larger result is not compiled."""
    real = partial_eval.partial_evaluate

    def bloated(mod: rr.IRModule) -> rr.IRModule:
        out = real(mod)
        main = out.functions["main"]
        size = sum(1 for f in mod.functions.values() for _ in post_order(f))
        pad = tuple(Constant(np.zeros(())) for _ in range(size))
        body = TupleGetItem(Tuple((main.body, *pad)), 0)  # kept by DCE: not a binding
        return out.with_function("main", main.__class__(
            main.params, body, main.ret_type, main.type_params, main.attrs, main.span))

    monkeypatch.setattr(partial_eval, "partial_evaluate", bloated)
    mod, args = rr.parse(MLP), mlp_args()
    exe = rr.compile(mod)
    assert exe.plan.passes == DEFAULT_PASSES
    assert len(exe.plan.notes) == 1 and "nodes, more than its" in exe.plan.notes[0]
    assert_same(exe(*args), rr.evaluate(mod, *args))


@pytest.mark.parametrize("text", [MLP, SUMSQ])
def test_the_plan_names_the_simplification(text: str) -> None:
    assert "PartialEvaluate, DeadCodeElimination, DataflowToGraph, SimplifyInference" in str(
        rr.compile(rr.parse(text)).plan)
