"""SimplifyInference: TVM's test_simplify_batchnorm (alpha-equal to TVM's expansion), every
rule against the operator's own reference on random shapes, axes and flags, and the
batch_norm running statistics (only ``.0`` is rewritten)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.ir.expr import Call, Op, TupleGetItem
from relay_ref.ir.visitor import post_order
from relay_ref.passes import get_pass
from relay_ref.passes.simplify_inference import SimplifyInference
from relay_ref.testing.check import check_pass

SIMPLIFIED = {"nn.batch_norm", "nn.dropout", "nn.layer_norm", "nn.instance_norm",
              "nn.group_norm", "nn.l2_normalize"}


def op_names(mod: rr.IRModule) -> list[str]:
    return [n.op.name for n in post_order(mod["main"])
            if isinstance(n, Call) and isinstance(n.op, Op)]


def tensor(shape: tuple[int, ...], dtype: str = "float32") -> str:
    return f"Tensor[({', '.join(map(str, shape))}{',' * (len(shape) == 1)}), {dtype}]"


@pytest.mark.parametrize(("dim", "axis", "nstep"), [(2, 1, 1), (4, 1, 1), (4, 0, 3)])
def test_simplify_batchnorm_as_tvm(dim: int, axis: int, nstep: int) -> None:
    """TVM's test: ``nstep`` times batch_norm(y + 1).0 then dropout(.).0 becomes TVM's
    ``simple_bn``: y * E(scale) + E(shift) (E: expand_dims along ``axis``)."""
    shape = tuple(10 for _ in range(dim))
    head = (f"def @main(%x: {tensor(shape)}, %gamma: {tensor((10,))}, %beta: {tensor((10,))}, "
            f"%mm: {tensor((10,))}, %mv: {tensor((10,))}) {{")
    num = dim - (axis + 1)

    def expand(e: str) -> str:
        return f"expand_dims({e}, axis=1, num_newaxis={num})" if num else e

    before, expected = [head], [head]
    y1 = y2 = "%x"
    for i in range(nstep):
        bn, drop = 2 * i, 2 * i + 1
        before.append(f"%{bn} = nn.batch_norm(add({y1}, 1f), %gamma, %beta, %mm, %mv, "
                      f"axis={axis}, epsilon=0.01f);")
        before.append(f"%{drop} = nn.dropout(%{bn}.0);")
        y1 = f"%{drop}.0"
        scale, shift, out = 3 * i, 3 * i + 1, 3 * i + 2
        expected.append(f"%{scale} = multiply(divide(1f, sqrt(add(%mv, 0.01f))), %gamma);")
        expected.append(f"%{shift} = add(multiply(negative(%mm), %{scale}), %beta);")
        expected.append(f"%{out} = add(multiply(add({y2}, 1f), {expand(f'%{scale}')}), "
                        f"{expand(f'%{shift}')});")
        y2 = f"%{out}"
    mod = rr.infer_types(rr.parse("\n".join([*before, y1, "}"])))
    got = rr.infer_types(SimplifyInference()(mod))
    want = rr.infer_types(rr.parse("\n".join([*expected, y2, "}"])))
    assert rr.alpha_equal(got, want), rr.astext(got)


# -- numbers: each rule against the operator's reference ----------------------------------

@st.composite
def norm_programs(draw: st.DrawFn) -> tuple[str, tuple[int, ...]]:
    """One normalisation call on random shapes, axes, epsilons and flags."""
    op = draw(st.sampled_from(sorted(SIMPLIFIED - {"nn.dropout"})))
    ndim = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=ndim,
                                max_size=ndim)))
    axis = draw(st.integers(-ndim, ndim - 1))
    flags = ", ".join(f"{k}={draw(st.booleans())}" for k in ("center", "scale"))
    eps = draw(st.sampled_from(["1e-05f", "0.001f", "0.5f"]))
    c = shape[axis]
    vec = tensor((c,))
    if op == "nn.batch_norm":
        args = f"%x, %g, %b, %m, exp(%v), axis={axis}, epsilon={eps}, {flags}"
        call = f"%0 = nn.batch_norm({args}); (%0.0, %0.1, %0.2)"
    elif op == "nn.l2_normalize":
        axes = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
        call = f"nn.l2_normalize(%x, eps={eps}, axis={list(axes)})"
    elif op == "nn.group_norm":
        if axis % ndim == 0:
            axis = 1
            c = shape[1]
            vec = tensor((c,))
        groups = draw(st.sampled_from([g for g in range(1, c + 1) if c % g == 0]))
        call = (f"nn.group_norm(%x, %g, %b, num_groups={groups}, axis={axis}, "
                f"epsilon={eps}, {flags})")
    elif op == "nn.instance_norm":
        if axis % ndim == 0:
            axis = 1
            vec = tensor((shape[1],))
        call = f"nn.instance_norm(%x, %g, %b, axis={axis}, epsilon={eps}, {flags})"
    else:
        call = f"nn.layer_norm(%x, %g, %b, axis={axis}, epsilon={eps}, {flags})"
    params = f"%x: {tensor(shape)}, %g: {vec}, %b: {vec}, %m: {vec}, %v: {vec}"
    return f"def @main({params}) {{ {call} }}", shape


@settings(max_examples=80, deadline=None)
@given(case=norm_programs(), seed=st.integers(0, 2**16))
def test_every_rule_computes_the_operator(case, seed: int) -> None:
    text, shape = case
    mod = rr.infer_types(rr.parse(text))
    out = rr.infer_types(SimplifyInference()(mod))
    assert rr.alpha_equal(out.global_types["main"], mod.global_types["main"])
    names = op_names(out)
    assert not SIMPLIFIED & set(names) or (names.count("nn.batch_norm") == 1
                                           and "%0.1" in text), rr.astext(out)
    rng = np.random.default_rng(seed)
    args = [rng.uniform(-2, 2, p.type_annotation.shape).astype("float32")
            for p in mod["main"].params]
    want, got = rr.evaluate(mod, *args), rr.evaluate(out, *args)
    for w, g in zip(want if isinstance(want, tuple) else (want,),
                    got if isinstance(got, tuple) else (got,), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_generated_programs_keep_their_values() -> None:
    check_pass(SimplifyInference(), examples=60)


# -- batch_norm's other fields and the TupleGetItem(call, 0) pattern -----------------------

BN = """def @main(%x: Tensor[(2, 3), float32], %g: Tensor[(3), float32], %b: Tensor[(3), float32],
                  %m: Tensor[(3), float32], %v: Tensor[(3), float32]) {{ {} }}"""


def test_running_statistics_keep_the_call() -> None:
    mod = rr.infer_types(rr.parse(BN.format(
        "%0 = nn.batch_norm(%x, %g, %b, %m, %v); (%0.0, %0.1, %0.2, %0)")))
    out = rr.infer_types(SimplifyInference()(mod))
    bns = [n for n in post_order(out["main"])
           if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "nn.batch_norm"]
    assert len(bns) == 1  # the same call serves .1, .2 and the whole tuple
    projections = [n.index for n in post_order(out["main"])
                   if isinstance(n, TupleGetItem) and n.tuple_value is bns[0]]
    assert sorted(projections) == [1, 2]
    args = [np.linspace(0.5, 2, 6, dtype="float32").reshape(2, 3)] + [
        np.array([0.5, 1.5, 2.5], "float32")] * 4
    want, got = rr.evaluate(mod, *args), rr.evaluate(out, *args)
    for w, g in zip(want[:3], got[:3], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    for w, g in zip(want[3], got[3], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5)


@pytest.mark.parametrize("body", [
    "let %t = nn.batch_norm(%x, %g, %b, %m, %v); %t.0",  # the tuple is a variable
    "(nn.batch_norm(%x, %g, %b, %m, %v), 1f).0.1",  # a projection of something else
])
def test_only_projection_zero_of_the_call_is_rewritten(body: str) -> None:
    mod = rr.infer_types(rr.parse(BN.format(body)))
    assert SimplifyInference()(mod) is mod  # nothing changed: the same module back


def test_the_pass_infers_types_runs_at_opt_level_0_and_is_idempotent() -> None:
    mod = rr.parse(BN.format("nn.relu(nn.batch_norm(%x, %g, %b, %m, %v).0)"))
    out = SimplifyInference()(mod)  # not type-checked: the pass does it
    assert "nn.batch_norm" not in op_names(out)
    assert SimplifyInference()(rr.infer_types(out)) is not None
    again = SimplifyInference()(rr.infer_types(out))
    assert rr.alpha_equal(rr.infer_types(again), rr.infer_types(out))
    assert get_pass("SimplifyInference").opt_level == 0


def test_nested_and_global_functions_are_simplified() -> None:
    text = """
def @f(%x: Tensor[(2, 3), float32]) { nn.dropout(%x).0 }
def @main(%x: Tensor[(2, 3), float32]) {
  let %k = fn (%y: Tensor[(2, 3), float32]) { nn.l2_normalize(%y, eps=0.001f) };
  %k(@f(%x))
}"""
    out = SimplifyInference()(rr.infer_types(rr.parse(text)))
    for fn in out.functions.values():
        names = {n.op.name for n in post_order(fn) if isinstance(n, Call)
                 and isinstance(n.op, Op)}
        assert not names & SIMPLIFIED
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(rr.evaluate(out, x), x / np.sqrt(np.sum(x * x)), rtol=1e-6)


def test_group_norm_with_the_channel_axis_last_keeps_its_value() -> None:
    # found by the property test above: the expansion reduced only the axes after the
    # group axis, so with axis=-1 it normalised each element alone (0 instead of +-1)
    mod = rr.infer_types(rr.parse(
        "def @main(%x: Tensor[(1, 2, 1), float32], %g: Tensor[(1), float32], "
        "%b: Tensor[(1), float32]) { nn.group_norm(%x, %g, %b, num_groups=1, axis=-1, "
        "center=False, scale=False) }"))
    out = rr.infer_types(SimplifyInference()(mod))
    args = [np.array([[[3.0], [1.0]]], "float32"), np.ones(1, "float32"),
            np.zeros(1, "float32")]
    np.testing.assert_allclose(rr.evaluate(out, *args), rr.evaluate(mod, *args), atol=1e-5)
    np.testing.assert_allclose(rr.evaluate(out, *args), [[[1.0], [-1.0]]], atol=1e-4)
