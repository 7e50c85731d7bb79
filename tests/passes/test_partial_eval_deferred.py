"""PartialEvaluate's deferred reification of closures written into known cells
(Reify-Fn-Deferred, spec/partial_eval.md 3): the reverse-mode AD output stays linear and
becomes straight-line code; a deferred function the residual program needs is made, in
the scope of its write, with the same value as the input program.
"""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.interpreter.driver import evaluate
from relay_ref.ir.expr import Function, RefCreate
from relay_ref.ir.visitor import post_order
from relay_ref.passes.partial_eval import PartialEvaluate
from relay_ref.testing.check import values_equal

PE = PartialEvaluate()


def _mlp(n: int, d: int = 4) -> str:
    params = ", ".join(f"%w{i}: Tensor[({d}, {d}), float64]" for i in range(n))
    body = "let %h0 = %x;\n" + "".join(
        f"  let %h{i + 1} = nn.relu(nn.dense(%h{i}, %w{i}));\n" for i in range(n))
    return (f"def @main(%x: Tensor[(2, {d}), float64], {params}) -> float64 {{\n"
            f"  {body}  sum(%h{n})\n}}")


def _simplified_gradient(n: int) -> tuple[rr.IRModule, rr.IRModule]:
    mod = rr.parse(_mlp(n))
    return mod, rr.optimize(rr.gradient(mod), ["PartialEvaluate", "DeadCodeElimination"])


def test_mlp_gradient_is_straight_line_code_of_linear_size() -> None:
    # Each layer's backpropagator closure used to be reified at its write into %bp, each
    # reification unfolding the whole %prev() chain: quadratic, and past ~43 layers the
    # unfolding budget ran out with refs and closures left (review 16, S1).
    n = 100
    _, out = _simplified_gradient(n)
    nodes = list(post_order(out["main"]))
    assert not any(type(node) is RefCreate for node in nodes)
    assert sum(type(node) is Function for node in nodes) == 1  # @main itself
    assert len(nodes) <= 40 * n, len(nodes)  # about 35 per layer


def test_mlp_gradient_keeps_its_value() -> None:
    mod, out = _simplified_gradient(3)
    rng = np.random.default_rng(0)
    args = [rng.normal(size=(2, 4))] + [rng.normal(size=(4, 4)) for _ in range(3)]
    want = evaluate(rr.gradient(mod, "first_order"), *args)
    assert values_equal(evaluate(out, *args), want)


# Programs where the cell holding a deferred closure is observed, so the function is made.
NEEDED = {
    # read after an unknown branch invalidated the store
    "read_after_branch": ("""
    def @main(%x: float32, %c: bool) -> float32 {
      let %r = ref(fn () -> float32 { %x });
      ref_write(%r, fn () -> float32 { add(%x, 1f) });
      let %y = if (%c) { 1f } else { 2f };
      let %f = ref_read(%r);
      add(%f(), %y)
    }""", "fn ("),
    # the cell escapes into a residual branch
    "cell_escapes": ("""
    def @main(%x: float32, %c: bool) -> float32 {
      let %r = ref(fn () -> float32 { %x });
      ref_write(%r, fn () -> float32 { multiply(%x, 3f) });
      let %q = if (%c) { %r } else { ref(fn () -> float32 { %x }) };
      let %g = ref_read(%q);
      %g()
    }""", "fn ("),
    # the closure is also used elsewhere (passed to a residual branch's result)
    "closure_used_twice": ("""
    def @main(%x: float32, %c: bool) -> float32 {
      let %r = ref(fn () -> float32 { %x });
      let %h = fn () -> float32 { subtract(%x, 2f) };
      ref_write(%r, %h);
      let %g = if (%c) { %h } else { fn () -> float32 { %x } };
      %g()
    }""", "fn ("),
    # written inside a branch; a static tuple captured there is reified after the write
    "in_branch_with_late_atoms": ("""
    def @main(%x: float32, %c: bool) -> (float32, float32) {
      let %r = ref(fn () -> (float32, float32) { (%x, %x) });
      let %z = if (%c) {
        let %a = add(%x, 1f);
        let %t = (%a, %x);
        ref_write(%r, fn () -> (float32, float32) { %t });
        let %q = ref(%t);
        let %u = if (%c) { %t } else { (%x, %a) };
        %u.0
      } else { 0f };
      let %y = if (%c) { 1f } else { 2f };
      let %f = ref_read(%r);
      let %p = %f();
      (add(%p.0, %z), %p.1)
    }""", "fn ("),
    # a deferred closure whose body writes another closure into a cell read later
    "nested": ("""
    def @main(%x: float32, %c: bool) -> float32 {
      let %s = ref(fn () -> float32 { %x });
      let %r = ref(fn () -> () { () });
      ref_write(%r, fn () -> () {
        ref_write(%s, fn () -> float32 { multiply(%x, %x) })
      });
      let %y = if (%c) { 1f } else { 2f };
      let %f = ref_read(%r);
      %f();
      let %g = ref_read(%s);
      add(%g(), %y)
    }""", "fn ("),
    # a recursive closure, written and then read dynamically
    "recursive": ("""
    def @main(%n: int32, %c: bool) -> int32 {
      let %r = ref(fn (%i: int32) -> int32 { %i });
      let %f = fn (%i: int32) -> int32 {
        if (less(%i, 1)) { 0 } else { add(%i, %f(subtract(%i, 1))) }
      };
      ref_write(%r, %f);
      let %y = if (%c) { 1 } else { 2 };
      let %g = ref_read(%r);
      add(%g(%n), %y)
    }""", "fn ("),
}


@pytest.mark.parametrize("name", sorted(NEEDED))
def test_needed_deferred_function_is_made(name: str) -> None:
    src, must = NEEDED[name]
    mod = rr.infer_types(rr.parse(src))
    out = rr.infer_types(PE(mod))
    assert rr.alpha_equal(out.global_types["main"], mod.global_types["main"])
    text = rr.astext(out)
    if must is not None:
        assert must in text, text
    params = mod["main"].params
    for c in (True, False):
        args = [np.float32(1.5) if p.name_hint == "x" else
                np.int32(4) if p.name_hint == "n" else np.bool_(c) for p in params]
        assert values_equal(evaluate(out, *args), evaluate(mod, *args)), (name, c, text)


def test_unneeded_deferred_function_goes_with_its_cell() -> None:
    out = rr.infer_types(PE(rr.infer_types(rr.parse("""
    def @main(%x: float32) -> float32 {
      let %r = ref(fn () -> float32 { %x });
      ref_write(%r, fn () -> float32 { add(%x, 1f) });
      ref_write(%r, fn () -> float32 { multiply(%x, 2f) });
      let %f = ref_read(%r);
      %f()
    }"""))))
    assert rr.astext(out["main"]).count("fn (") == 1  # @main only
    assert not any(type(n) is RefCreate for n in post_order(out["main"]))


def test_gradient_of_recursive_list_function_simplifies_in_one_round() -> None:
    # Notebook 06: @sumsq_rev creates its backpropagator closures from the same function
    # literal at every recursion level; the chain %back() -> %prev() -> .. calls older
    # closures of that literal, which the fuel counts as progress (spec/partial_eval.md 4),
    # so one round unfolds it (it used to leave 8 cells and 2 closures, a second round
    # finished).
    mod = rr.parse("""
    def @sumsq(%xs: List[Tensor[(2,), float32]]) -> float32 {
      match (%xs) {
        Nil => 0f,
        Cons(%x, %rest) => sum(%x * %x) + @sumsq(%rest)
      }
    }
    def @main(%a: Tensor[(2,), float32], %b: Tensor[(2,), float32]) -> float32 {
      @sumsq(Cons(%a, Cons(%b, Nil)))
    }""")
    grad = rr.gradient(mod)
    once = rr.optimize(grad, ["PartialEvaluate", "DeadCodeElimination"])
    nodes = list(post_order(once["main"]))
    assert not any(type(node) is RefCreate for node in nodes)
    assert sum(type(node) is Function for node in nodes) == 1
    twice = rr.optimize(once, ["PartialEvaluate", "DeadCodeElimination"])
    assert rr.alpha_equal(once["main"], twice["main"])
    a, b = np.array([1.0, 2.0], "float32"), np.array([3.0, -1.0], "float32")
    assert values_equal(evaluate(once, a, b), evaluate(grad, a, b))
