"""PartialEvaluate (relay_ref/passes/partial_eval.py, spec/partial_eval.md).

Goldens (TVM's test_pass_partial_eval programs) are in tests/programs/passes/pe_*.relay;
here: the programs a golden cannot hold (loops that never return), the thesis example's
exact output, the guarantees on generated programs (same value, same @main type), binder
uniqueness, termination bounds, linear cost on shared graphs and deep let chains.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given

import relay_ref as rr
from relay_ref.interpreter.driver import evaluate
from relay_ref.ir.expr import Call, Constant, Function, GlobalVar, Let, Match, Var, pattern_vars
from relay_ref.ir.types import TensorType
from relay_ref.ir.visitor import post_order
from relay_ref.passes import get_pass
from relay_ref.passes.partial_eval import UNFOLD_BUDGET, PartialEvaluate
from relay_ref.passes.rewrite import rewrite
from relay_ref.testing.check import check_pass, values_equal
from relay_ref.testing.growth import residual_chain, step_count
from relay_ref.testing.typed_strategies import let_chain_module, well_typed_modules

PE = PartialEvaluate()


def _pe(text: str) -> rr.IRModule:
    out = PE(rr.infer_types(rr.parse(text)))
    return rr.infer_types(out)


def _binders(expr) -> list[Var]:
    out: list[Var] = []
    for node in post_order(expr):
        match node:
            case Let(var):
                out.append(var)
            case Function(params):
                out.extend(params)
            case Match(_, clauses):
                for c in clauses:
                    out.extend(pattern_vars(c.lhs))
    return out


def test_registered() -> None:
    assert isinstance(get_pass("PartialEvaluate"), PartialEvaluate)


def test_gradient_of_identity_becomes_straight_line_code() -> None:
    # The thesis example (papers.md 1.5/1.6): refs and a backpropagator closure go away;
    # add(zeros_like(%d), ones_like(%d)) is ones_like(%d) by the unit rule.
    out = _pe("""
    def @main(%d: Tensor[(3), float32]) {
      let %r = ref(zeros_like(%d));
      let %b = fn () { ref_write(%r, add(ref_read(%r), ones_like(%d))) };
      %b();
      (%d, (ref_read(%r),))
    }""")
    want = rr.infer_types(rr.parse(
        "def @main(%d: Tensor[(3), float32]) { (%d, (ones_like(%d),)) }"))
    assert rr.alpha_equal(out, want), rr.astext(out)


def test_unit_rule_needs_equal_static_types() -> None:
    # add(zeros_like(%a), %b) broadcasts %b to %a's shape: it is not %b.
    out = _pe("""
    def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(3), float32]) {
      add(zeros_like(%a), %b)
    }""")
    assert "zeros_like" in rr.astext(out)


def test_loop_is_unfolded_once_and_stays_a_call() -> None:
    # TVM test_loop: @loop(%x) = @loop(%x) never makes progress; the result is the call.
    out = _pe("""
    def @loop(%x: int32) -> int32 { @loop(%x) }
    def @main() -> int32 { @loop(1) }""")
    body = out["main"].body
    assert isinstance(body, Call) and body.op == GlobalVar("loop")
    assert isinstance(body.args[0], Constant) and int(body.args[0].data) == 1


def test_swap_loop_stops_when_the_arguments_come_back() -> None:
    # TVM test_swap_loop: unfolded while some argument gets older, then a residual call.
    out = _pe("""
    type nat { Z, S(nat) }
    def @loop(%x: nat, %y: nat) -> nat { @loop(%y, %x) }
    def @main() -> nat { @loop(S(Z), S(S(Z))) }""")
    calls = [n for n in post_order(out["main"].body)
             if isinstance(n, Call) and n.op == GlobalVar("loop")]
    assert len(calls) == 1


def test_recursion_on_dynamic_arguments_is_not_unrolled() -> None:
    out = _pe("""
    def @sum(%n: int32) -> int32 {
      if (less(%n, 1)) { 0 } else { add(%n, @sum(subtract(%n, 1))) }
    }
    def @main(%n: int32) -> int32 { @sum(%n) }""")
    calls = [n for n in post_order(out["main"].body)
             if isinstance(n, Call) and n.op == GlobalVar("sum")]
    assert len(calls) == 1  # unfolded once (TVM's first unfolding), then called
    assert int(evaluate(out, np.int32(10))) == 55


def test_exponential_static_recursion_is_bounded() -> None:
    # fib(25) would unfold 250 000 times: the budget stops it; the result still computes.
    src = """
    def @fib(%n: int32) -> int32 {
      if (less(%n, 2)) { %n } else { add(@fib(subtract(%n, 1)), @fib(subtract(%n, 2))) }
    }
    def @main() -> int32 { @fib(25) }"""
    out = _pe(src)
    calls = sum(1 for n in post_order(out["main"].body)
                if isinstance(n, Call) and n.op == GlobalVar("fib"))
    assert 0 < calls <= 2 * UNFOLD_BUDGET
    assert int(evaluate(out)) == 75025


def test_closure_unfolded_twice_keeps_binders_unique() -> None:
    out = _pe("""
    def @main(%x: float32, %c: bool) {
      let %f = fn (%y: float32) {
        let %z = multiply(%y, %y);
        if (%c) { fn (%w: float32) { add(%w, %z) } } else { fn (%w: float32) { %z } }
      };
      let %g = %f(%x);
      let %h = %f(add(%x, 1f));
      (%g(%x), %h(%x), %g, %h)
    }""")
    binders = _binders(out["main"])
    assert len(binders) == len(set(binders))
    for x, c in [(2.0, True), (3.0, False)]:
        got = evaluate(out, np.float32(x), np.bool_(c))
        want = (x + x * x, x + (x + 1) ** 2) if c else (x * x, (x + 1) ** 2)
        assert np.allclose(got[:2], want)


def test_effects_keep_their_order_and_number() -> None:
    # The cell escapes to an unknown function: every write stays, in order.
    out = _pe("""
    def @main(%k: fn (ref(float32)) -> float32, %x: float32) {
      let %r = ref(%x);
      ref_write(%r, add(ref_read(%r), 1f));
      let %a = %k(%r);
      ref_write(%r, add(ref_read(%r), %a));
      ref_read(%r)
    }""")
    order = [type(n).__name__ for n in post_order(out["main"].body)
             if type(n).__name__ in ("RefCreate", "RefWrite", "RefRead", "Call")
             and not (isinstance(n, Call) and type(n.op).__name__ == "Op")]
    assert order == ["RefCreate", "RefWrite", "Call", "RefRead", "RefWrite"], order


def test_shared_dynamic_value_is_bound_once() -> None:
    out = _pe("""
    def @main(%x: float32) {
      let %f = fn (%y: float32) { (%y, %y) };
      %f(exp(%x))
    }""")
    assert rr.astext(out).count("exp(") == 1


def _dynamic(mod: rr.IRModule) -> tuple[rr.IRModule, list[np.ndarray]]:
    """``@main`` with its constants turned into parameters (so they are dynamic)."""
    params: list[Var] = []
    args: list[np.ndarray] = []

    def rule(node):
        if isinstance(node, Constant) and len(params) < 8:
            var = Var(f"k{len(params)}", TensorType(node.data.shape, str(node.data.dtype)))
            params.append(var)
            args.append(node.data)
            return var
        return None

    main = mod["main"]
    body = rewrite(main.body, rule)
    main = replace(main, params=main.params + tuple(params), body=body)
    return mod.with_function("main", main), args


@given(well_typed_modules())
def test_same_value_on_generated_programs(case) -> None:
    mod, _ = case
    for program, args in [(mod, []), _dynamic(mod)]:
        checked = rr.infer_types(program)
        out = PE(checked)
        typed = rr.infer_types(out)
        assert rr.alpha_equal(typed.global_types["main"], checked.global_types["main"])
        before, after = evaluate(checked, *args), evaluate(typed, *args)
        assert values_equal(before, after), (rr.astext(checked), rr.astext(out))


def test_check_pass() -> None:
    check_pass(PE, examples=200)


def test_linear_on_residual_chains() -> None:
    def cost(n: int) -> int:
        mod = rr.infer_types(rr.parse(residual_chain(n)))
        return step_count(lambda: PE(mod))

    small, large = cost(150), cost(300)
    assert large <= 2.2 * small + 5000, (small, large)


def test_deep_let_chain() -> None:
    mod = rr.infer_types(let_chain_module(10_000))
    out = rr.infer_types(PE(mod))
    x = np.full(4, 0.5, "float32")
    assert np.allclose(evaluate(out, x), evaluate(mod, x))


@pytest.mark.parametrize("n", [1, 4])
def test_static_ref_in_loop(n: int) -> None:
    out = _pe(f"""
    def @main() -> int32 {{
      let %r = ref(0);
      let %f = fn (%i: int32) -> () {{
        if (less(%i, 1)) {{ () }} else {{
          ref_write(%r, add(ref_read(%r), %i)); %f(subtract(%i, 1))
        }}
      }};
      %f({n});
      ref_read(%r)
    }}""")
    assert isinstance(out["main"].body, Constant)
    assert int(out["main"].body.data) == n * (n + 1) // 2


def test_gradient_of_square_becomes_straight_line_code() -> None:
    # AD-shaped output for f(x) = x * x (a backpropagator cell holding closures, gradient
    # cells): TVM's test_ad. Unit and identity rules leave d*d and d + d.
    out = _pe("""
    def @main(%d: Tensor[(3), float32]) {
      let %bp = ref(fn () { () });
      let %xg = ref(zeros_like(%d));
      let %v = multiply(%d, %d);
      let %vg = ref(zeros_like(%v));
      let %old = ref_read(%bp);
      ref_write(%bp, fn () {
        let %g = ref_read(%vg);
        ref_write(%xg, add(ref_read(%xg), collapse_sum_like(multiply(%g, %d), %d)));
        ref_write(%xg, add(ref_read(%xg), collapse_sum_like(multiply(%g, %d), %d)));
        %old()
      });
      ref_write(%vg, ones_like(%v));
      let %k = ref_read(%bp);
      %k();
      (%v, (ref_read(%xg),))
    }""")
    want = rr.infer_types(rr.parse("""
    def @main(%d: Tensor[(3), float32]) { (multiply(%d, %d), (add(%d, %d),)) }"""))
    assert rr.alpha_equal(out, want), rr.astext(out)


# -- regressions ----------------------------------------------------------------------------
def test_write_to_dead_cell_keeps_the_effects_of_its_value() -> None:
    # The tidy-up inlines `let %c1 = %r(); ref_write(%ref1, %c1)` into
    # `ref_write(%ref1, %r())`; when %ref1 is later found dead, the call must stay.
    src = """
    def @main(%c: bool) -> int32 {
      let %s = ref(0);
      let %f = if (%c) { fn () -> int32 { ref_write(%s, 1); 1 } }
               else { fn () -> int32 { ref_write(%s, 2); 2 } };
      let %D = ref(0); let %C = ref(ref(0)); let %B = ref(ref(ref(0)));
      let %A = ref(ref(ref(ref(0))));
      ref_write(%A, %B); ref_write(%B, %C); ref_write(%C, %D);
      if (%c) { ref_write(%D, %f()) } else { () };
      ref_read(%s)
    }"""
    mod = rr.infer_types(rr.parse(src))
    out = rr.infer_types(rr.optimize(mod, ["PartialEvaluate"], opt_level=3))
    for c, want in [(True, 1), (False, 0)]:
        assert int(evaluate(out, np.bool_(c))) == want == int(evaluate(mod, np.bool_(c)))
    calls = [n for n in post_order(out["main"].body)
             if isinstance(n, Call) and isinstance(n.op, Var)]
    assert len(calls) == 1, rr.astext(out)


def _type_vars_in_annotations(expr) -> set[str]:
    from relay_ref.ir.types import TypeVar
    from relay_ref.passes.partial_eval import _type_vars

    names: set[str] = set()
    for var in _binders(expr):
        names.update(v.name for v in _type_vars(var.type_annotation, set())
                     if isinstance(v, TypeVar))
    return names


@pytest.mark.parametrize("body", ["@rev(%xs)", "@foldr(Cons, Nil, %xs)",
                                  "@map(@id, @rev(%xs))"])
def test_polymorphic_constructor_argument_is_instantiated(body: str) -> None:
    # @flip(Cons) inside @rev: flip's type parameters are List's A at this use (int32),
    # not Cons's own polymorphic type (whose A is out of scope in @main).
    src = f"def @id[T](%a: T) -> T {{ %a }}\ndef @main(%xs: List[int32]) {{ {body} }}"
    mod = rr.infer_types(rr.parse(src))
    out = rr.infer_types(PE(mod))  # raised "type parameter A is not in scope"
    assert _type_vars_in_annotations(out["main"]) == set()
    assert rr.alpha_equal(out.global_types["main"], mod.global_types["main"])
    cons, nil = mod.constructors["Cons"], mod.constructors["Nil"]
    from relay_ref.interpreter.values import ConstructorValue

    xs = ConstructorValue(nil, ())
    for i in (3, 2, 1):
        xs = ConstructorValue(cons, (np.array(i, "int32"), xs))
    assert values_equal(evaluate(out, xs), evaluate(mod, xs))


@pytest.mark.parametrize("src", [
    # the annotation is all that fixes Nil's type argument
    "def @main(%a: int32) { let %e: List[float32] = Nil; (Cons(%a, Nil), %e) }",
    "def @main() { let %e: List[List[int32]] = Cons(Nil, Nil); %e }",
    "def @main() { let %e: Option[float32] = None; let %t = (%e, %e); %t }",
    # an unannotated parameter typed only backwards, by a binding PE removes
    "def @main(%a) -> int32 { let %u: Tensor[(2, 2), int32] = ones_like(%a); 1 }",
    "def @main(%a: float32) { let %f = fn (%y) { let %u: float32 = %y; 1 }; (%f, %f(%a)) }",
    # ? dimensions: the residual value has a static shape, the program keeps `?`
    """def @f(%x: Tensor[(?, 3), float32]) -> Tensor[(?, 3), float32] { %x }
       def @main() { let %z = zeros(shape=[5, 3], dtype="float32"); (@f(%z), %z) }""",
    """def @main() {
         let %z: Tensor[(?, 3), float32] = zeros(shape=[5, 3], dtype="float32"); %z }""",
])
def test_types_fixed_only_by_removed_code_are_kept(src: str) -> None:
    mod = rr.infer_types(rr.parse(src))
    out = rr.infer_types(PE(mod))  # raised "cannot infer the type"
    assert rr.alpha_equal(out.global_types["main"], mod.global_types["main"]), \
        rr.astext(out)


def test_typed_binding_needed_only_once() -> None:
    # Cons(1, Nil): the head fixes the list's type, so Nil needs no annotation.
    out = _pe("def @main() -> List[int32] { let %e: List[int32] = Nil; Cons(1, %e) }")
    assert ":" not in rr.astext(out["main"].body), rr.astext(out)


def test_linear_on_applied_closures() -> None:
    # (fn (%x1) { (fn (%x2) { ... })(%x1) })(%x0): each closure's free variables were
    # computed by a traversal of its body (quadratic in the depth).
    from relay_ref.testing.nested_fns import applied_closures

    def cost(n: int) -> int:
        mod = rr.infer_types(rr.parse(applied_closures(n)))
        return step_count(lambda: PE(mod))

    small, large = cost(200), cost(400)
    assert large <= 2.3 * small + 5000, (small, large)
