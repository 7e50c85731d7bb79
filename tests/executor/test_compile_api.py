"""``rr.compile``'s public behaviour: arguments, params, errors, closures, plan and stats."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr

DENSE = """
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32], %b: Tensor[(4), float32]) {
  nn.relu(nn.bias_add(nn.dense(%x, %w), %b))
}
"""

PROGRAM = """
def @adder(%n: int32) -> fn (int32) -> int32 { fn (%x: int32) -> int32 { %x + %n } }
def @main(%k: int32) { @adder(%k) }
def @apply(%f: fn (int32) -> int32, %v: int32) -> int32 { %f(%v) }
def @count(%n: int32) -> int32 { if (%n == 0) { 0 } else { 1 + @count(%n - 1) } }
def @loop(%n: int32, %acc: int32) -> int32 {
  if (%n == 0) { %acc } else { @loop(%n - 1, %acc + %n) }
}
def @div(%a: int32, %b: int32) -> int32 { %a / %b }
def @bump(%r: ref(int32)) -> int32 { let %u = ref_write(%r, ref_read(%r) + 1); ref_read(%r) }
def @wrap(%a: int32) -> int32 { %a * 65536 * 65536 + 7 }
"""

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3)).astype("float32")
W = RNG.standard_normal((4, 3)).astype("float32")
B = RNG.standard_normal(4).astype("float32")


def test_params_are_bound_once_and_keywords_work() -> None:
    mod = rr.parse(DENSE)
    exe = rr.compile(mod, params={"w": W, "b": B})
    expected = rr.evaluate(mod, X, W, B)
    np.testing.assert_allclose(exe(X), expected, rtol=1e-5)
    np.testing.assert_allclose(exe(x=X), expected, rtol=1e-5)
    w = W.copy()
    exe2 = rr.compile(mod, params={"w": w, "b": B})
    w[:] = 0  # the caller's array was copied at compile time
    np.testing.assert_allclose(exe2(X), expected, rtol=1e-5)
    assert exe.entry == "main"
    assert "fused groups" in str(exe.plan)


@pytest.mark.parametrize(("params", "words"), [
    ({"nope": W}, "names no parameter"),
    ({"w": W.T.copy()}, "does not fit %w"),
    ({"w": W.astype("float64")}, "float64"),
])
def test_bad_params_are_relay_errors(params: dict, words: str) -> None:
    with pytest.raises(rr.RelayError, match=words):
        rr.compile(rr.parse(DENSE), params=params)


def test_bad_arguments_name_the_parameter() -> None:
    exe = rr.compile(rr.parse(DENSE))
    with pytest.raises(rr.RelayRuntimeError, match="takes 3 argument"):
        exe(X)
    with pytest.raises(rr.RelayRuntimeError, match="argument %w of @main"):
        exe(X, W.T.copy(), B)
    with pytest.raises(rr.RelayRuntimeError, match="argument %x of @main"):
        exe(X.astype("int32"), W, B)
    with pytest.raises(rr.RelayRuntimeError, match="no parameter %y"):
        exe(y=X, w=W, b=B)
    with pytest.raises(rr.RelayRuntimeError, match="no value given for parameter %b"):
        exe(x=X, w=W)


def test_bad_compile_arguments() -> None:
    mod = rr.parse(DENSE)
    with pytest.raises(rr.RelayError, match="unknown target"):
        rr.compile(mod, target="tpu")
    with pytest.raises(rr.RelayError, match="no function @nope"):
        rr.compile(mod, entry="nope")
    with pytest.raises(TypeError, match="IRModule"):
        rr.compile("def @main() { 1 }")
    with pytest.raises(TypeError, match="params"):
        rr.compile(mod, params=[W])
    with pytest.raises(rr.RelayTypeError):
        rr.compile(rr.parse("def @main(%x: int32) { add(%x, 1f) }"))


def test_returned_closures_are_callable_and_accepted_by_evaluate() -> None:
    mod = rr.parse(PROGRAM)
    f = rr.compile(mod)(5)
    assert isinstance(f, rr.Closure)
    assert int(f(10)) == 15
    assert int(rr.evaluate(mod, f, 7, entry="apply")) == 12
    g = rr.evaluate(mod, 3)  # an interpreter closure passed to compiled code
    assert int(rr.compile(mod, entry="apply")(g, 4)) == 7


def test_deep_recursion_and_tail_calls() -> None:
    mod = rr.parse(PROGRAM)
    assert int(rr.compile(mod, entry="count")(100_000)) == 100_000
    loop = rr.compile(mod, entry="loop")
    assert "while True" in loop.source  # a self tail call is a loop
    assert int(loop(1000, 0)) == 500_500


def test_integer_scalars_wrap_and_fail_as_the_interpreter() -> None:
    mod = rr.parse(PROGRAM)
    wrapped = rr.compile(mod, entry="wrap")(3)
    assert wrapped.dtype == np.int32 and wrapped.shape == ()
    assert int(wrapped) == int(rr.evaluate(mod, 3, entry="wrap"))
    with pytest.raises(rr.RelayRuntimeError, match="division by zero") as err:
        rr.compile(mod, entry="div")(1, 0)
    assert err.value.diagnostics[0].span is not None
    assert int(rr.compile(mod, entry="div")(-7, 2)) == int(rr.evaluate(mod, -7, 2, entry="div"))


def test_refs_keep_their_identity_across_calls() -> None:
    mod = rr.parse(PROGRAM)
    exe = rr.compile(mod, entry="bump")
    cell = rr.RefValue(np.array(0, "int32"))
    assert int(exe(cell)) == 1
    assert int(exe(cell)) == 2
    assert isinstance(cell.value, np.ndarray) and int(cell.value) == 2


def test_profile_records_time_per_kernel() -> None:
    exe = rr.compile(rr.parse(DENSE), profile=True)
    exe(X, W, B)
    exe(X, W, B)
    assert exe.stats.calls == 2 and exe.stats.last_seconds > 0
    assert exe.stats.kernels and all(n == 2 for n, _ in exe.stats.kernels.values())
    assert "nn.dense" in str(exe.stats)


def test_results_never_share_memory_with_constants_or_weights() -> None:
    mod = rr.parse("""
    def @main(%x: Tensor[(2), float32], %w: Tensor[(2, 2), float32]) {
      (expand_dims(add(2f, 1f), axis=0), reshape(%w, newshape=[4]), %w, add(%x, 1f))
    }""")
    w = np.ones((2, 2), "float32")
    exe = rr.compile(mod, params={"w": w})
    x = np.zeros(2, "float32")
    first = exe(x)
    for value in first:
        value[...] = 7  # the caller owns what it got
    again = exe(x)
    np.testing.assert_array_equal(again[0], [3.0])
    np.testing.assert_array_equal(again[1], np.ones(4))
    np.testing.assert_array_equal(again[2], w)
    np.testing.assert_array_equal(again[3], [1.0, 1.0])


def test_operator_failures_through_dynamic_dims_name_the_operator() -> None:
    mod = rr.parse("def @main(%x: Tensor[(?, ?), float32], %w: Tensor[(4, 3), float32]) {"
                   " nn.dense(%x, %w) }")
    args = (np.ones((2, 5), "float32"), np.ones((4, 3), "float32"))
    with pytest.raises(rr.RelayRuntimeError) as want:
        rr.evaluate(mod, *args)
    with pytest.raises(rr.RelayRuntimeError) as got:
        rr.compile(mod)(*args)
    assert got.value.diagnostics[0].message.startswith("nn.dense: ")
    assert "bug" not in str(got.value)
    assert got.value.diagnostics[0].span == want.value.diagnostics[0].span


def test_a_parameter_named_self_can_be_passed_by_name() -> None:
    exe = rr.compile(rr.parse("def @main(%self: int32) { %self }"))
    assert int(exe(self=3)) == 3


def test_inputs_by_a_frontends_original_names() -> None:
    class Named(dict):  # what from_onnx returns: weights, plus original -> Relay names
        relay_names = {"input.1": "input_1", "w.0": "w_0"}

    mod = rr.parse("def @main(%input_1: Tensor[(2), float32], %w_0: Tensor[(2), float32]) {"
                   " add(%input_1, %w_0) }")
    exe = rr.compile(mod, params=Named(w_0=np.ones(2, "float32")))
    np.testing.assert_array_equal(exe(**{"input.1": np.ones(2, "float32")}), [2.0, 2.0])
    np.testing.assert_array_equal(exe(input_1=np.zeros(2, "float32")), [1.0, 1.0])


def test_compile_passes_take_specs_pass_objects_and_comma_strings() -> None:
    """``compile_module``'s ``passes``: a comma-separated string, a list of specs and
    configured pass objects, or None (the default pipeline), as its type hint says."""
    import typing

    from relay_ref.executor.compile import compile_module
    from relay_ref.passes.fuse_ops import FuseOps

    hint = typing.get_type_hints(compile_module)["passes"]
    assert {str, type(None)} <= set(typing.get_args(hint))
    mod = rr.parse("""
def @main(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  nn.relu(exp(%x))
}""")
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    want = rr.evaluate(mod, x)
    for passes in ("FoldConstant, FuseOps", ["FoldConstant", FuseOps()], None):
        exe = compile_module(mod, passes=passes)
        assert np.allclose(exe(x), want)
        assert exe.plan.passes[-1].startswith("FuseOps")
