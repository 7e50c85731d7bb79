"""Shape variables at run time in the definitional interpreter (spec/semantics.md, Symbolic
shapes: Shape-Bind, Shape-MatchCast, Shape-DPS, Shape-Dataflow).

The programs are written in the text format (spec/syntax.md S-MatchCast, S-DPS,
S-Dataflow). They run with ``typecheck=False`` (the run-time semantics is what is tested
here; the checker's rules are tested with the checker), so every failure below is the
run-time check's own.
"""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.interpreter.casts import cast_value
from relay_ref.ir.module import IRModule
from relay_ref.syntax.parser import parse_type
from relay_ref.typecheck.casts import Cast

F32 = "float32"


def run(mod: IRModule, *args: object) -> object:
    return rr.evaluate(mod, *args, typecheck=False)


def fails(mod: IRModule, *args: object) -> rr.RelayRuntimeError:
    with pytest.raises(rr.RelayRuntimeError) as info:
        run(mod, *args)
    return info.value


def line_of(err: rr.RelayError) -> int:
    span = err.diagnostics[0].span
    assert span is not None, str(err)
    return span.line


def ones(*shape: int) -> np.ndarray:
    return np.ones(shape, dtype=F32)


# -- Shape-Bind: function boundaries -------------------------------------------------------

TWO = """
def @main(%x: Tensor[(n, 2), float32], %y: Tensor[(n, 2), float32]) -> Tensor[(n * 2, 2), float32] {
  concatenate((%x, %y))
}
"""


def test_consistent_arguments_bind_and_run() -> None:
    x, y = np.arange(6, dtype=F32).reshape(3, 2), ones(3, 2)
    np.testing.assert_array_equal(run(rr.parse(TWO), x, y), np.concatenate([x, y]))
    # one compile-free program, any n
    assert run(rr.parse(TWO), ones(5, 2), ones(5, 2)).shape == (10, 2)


def test_one_variable_two_values_is_located_at_the_call() -> None:
    err = fails(rr.parse(TWO), ones(3, 2), ones(4, 2))
    message = str(err)
    assert "dimension 0" in message and "n is 3" in message and "4" in message
    assert "%y" in message and "[Shape-Bind]" in message
    span = err.diagnostics[0].span  # a host call: the parameter, as for A-Array
    assert (span.line, span.column) == (2, 40), str(err)


def test_an_expression_dimension_is_checked_whichever_parameter_binds_it() -> None:
    first = rr.parse("""
def @main(%a: Tensor[(n), float32], %b: Tensor[(n * 2), float32]) -> float32 { sum(%b) }
""")
    later = rr.parse("""
def @main(%b: Tensor[(n * 2), float32], %a: Tensor[(n), float32]) -> float32 { sum(%b) }
""")
    assert float(run(first, ones(3), ones(6))) == 6.0
    for mod, args in ((first, (ones(3), ones(7))), (later, (ones(7), ones(3)))):
        message = str(fails(mod, *args))
        assert "dimension 0: expected n * 2 = 6 (with n = 3), got 7" in message, message


def test_a_call_inside_the_program_is_located_at_the_call_expression() -> None:
    mod = rr.parse("""
def @g(%x: Tensor[(n), float32], %y: Tensor[(n), float32]) -> Tensor[(n), float32] {
  add(%x, %y)
}
def @main(%x: Tensor[(m), float32]) -> Tensor[(?), float32] {
  let %ok = @g(%x, %x);
  @g(%ok, strided_slice(%x, begin=[1], end=[100]))
}
""")
    err = fails(mod, ones(4))
    assert line_of(err) == 7, str(err)
    assert "call of @g: argument %y: dimension 0: n is 4 but the value has 3" in str(err)


def test_the_result_is_checked_against_the_return_type() -> None:
    mod = rr.parse("""
def @main(%x: Tensor[(n), float32]) -> Tensor[(n), float32] {
  concatenate((%x, %x))
}
""")
    message = str(fails(mod, ones(3)))
    assert "does not have its return type" in message
    assert "the result: dimension 0: n is 3 but the value has 6" in message


def test_tuple_parameters_and_results_bind_field_by_field() -> None:
    mod = rr.parse("""
def @main(%p: (Tensor[(n), float32], Tensor[(n, k), float32])) -> (Tensor[(k), float32],) {
  (sum(%p.1, axis=[0]),)
}
""")
    (out,) = run(mod, (ones(2), ones(2, 5)))
    np.testing.assert_array_equal(out, np.full(5, 2, F32))
    message = str(fails(mod, (ones(2), ones(3, 5))))
    assert "%p (field 1): dimension 0: n is 2 but the value has 3" in message


def test_each_activation_has_its_own_variables() -> None:
    """A global's shape variables are its own, per call: @len is called at two lengths."""
    mod = rr.parse("""
def @len(%x: Tensor[(n), float32]) -> Tensor[(n), float32] { %x }
def @main(%x: Tensor[(a), float32], %y: Tensor[(b), float32]) -> Tensor[(?), float32] {
  concatenate((@len(%x), @len(%y)))
}
""")
    assert run(mod, ones(2), ones(5)).shape == (7,)


def test_closures_see_the_variables_of_their_scope() -> None:
    """T-ShapeScope: ``n`` in the inner function's parameter is the outer function's ``n``
    (bound when it was made), so applying it to a different length fails; ``k`` is the
    closure's own, bound afresh at each call."""
    mod = rr.parse("""
def @main(%x: Tensor[(n), float32], %y: Tensor[(?), float32]) -> Tensor[(?), float32] {
  let %f = fn (%a: Tensor[(n), float32], %b: Tensor[(k), float32]) -> Tensor[(n + k), float32] {
    concatenate((%a, %b))
  };
  let %u = %f(%x, %y);
  let %v = %f(%x, ones(shape=[4], dtype="float32"));
  %f(%y, %y)
}
""")
    assert run(mod, ones(3), ones(3)).shape == (6,)
    err = fails(mod, ones(3), ones(2))
    assert line_of(err) == 8 and "argument %a: dimension 0: n is 3 but the value has 2" \
        in str(err)


def test_deep_recursion_over_a_symbolic_length() -> None:
    """Each of the 200 nested activations binds its own ``n`` (200, 199, ... 1): the shape
    environment adds no Python recursion (Shape-Bind is a loop at the call)."""
    mod = rr.parse("""
def @f(%x: Tensor[(n), float32], %k: int32) -> float32 {
  if (equal(%k, 0)) {
    sum(%x)
  } else {
    @f(strided_slice(%x, begin=[1], end=[2147483647]), subtract(%k, 1))
  }
}
def @main(%x: Tensor[(n), float32]) -> float32 { @f(%x, 199) }
""")
    x = np.arange(200, dtype=F32)
    assert float(run(mod, x)) == 199.0
    bad = rr.parse("""
def @f(%x: Tensor[(n), float32], %y: Tensor[(n), float32], %k: int32) -> float32 {
  if (equal(%k, 0)) {
    sum(%x)
  } else {
    @f(strided_slice(%x, begin=[1], end=[2147483647]),
       strided_slice(%y, begin=[2], end=[2147483647]), subtract(%k, 1))
  }
}
def @main(%x: Tensor[(n), float32]) -> float32 { @f(%x, %x, 150) }
""")
    err = fails(bad, x)
    assert "n is 199 but the value has 198" in str(err) and line_of(err) == 6


def test_an_expression_s_free_variables_bind_like_parameters() -> None:
    """``rr.evaluate(expr, env=...)``: the free variables' annotations bind ``n``."""
    from relay_ref.ir.expr import Call, Op, Tuple, Var
    from relay_ref.ops.symbolic import DPSAttrs

    x = Var("x", parse_type("Tensor[(n), float32]"))
    y = Var("y", parse_type("Tensor[(n), float32]"))
    rr.register_packed("test_sym.copy", _copy, replace=True)
    expr = Call(Op("call_dps_packed"), (Tuple((x, y)),),
                DPSAttrs("test_sym.copy", parse_type("Tensor[(n), float32]")))
    out = rr.evaluate(expr, env={x: np.arange(3, dtype=F32), y: ones(3)}, typecheck=False)
    np.testing.assert_array_equal(out, np.arange(3, dtype=F32))
    with pytest.raises(rr.RelayRuntimeError, match="free variable %y: dimension 0: n is 3"):
        rr.evaluate(expr, env={x: ones(3), y: ones(2)}, typecheck=False)


def _copy(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    out[:] = x


# -- Shape-MatchCast --------------------------------------------------------------------------

CAST = """
def @main(%x: Tensor[(n), float32], %y: Tensor[(?), float32]) -> Tensor[(?), float32] {
  let %z = match_cast(%y, TARGET);
  add(%x, %z)
}
"""


def test_match_cast_checks_against_the_bound_variables() -> None:
    mod = rr.parse(CAST.replace("TARGET", "Tensor[(n), float32]"))
    np.testing.assert_array_equal(run(mod, ones(3), ones(3)), np.full(3, 2, F32))
    err = fails(mod, ones(3), ones(4))
    assert line_of(err) == 3
    assert "match_cast: dimension 0: n is 3 but the value has 4 [Shape-MatchCast]" in str(err)


def test_match_cast_checks_numbers_rank_and_dtype() -> None:
    for target, got in (("Tensor[(3), float32]", "dimension 0: expected 3, got 4"),
                        ("Tensor[(n, 1), float32]", "rank"),
                        ("Tensor[(n), int32]", "dtype")):
        err = fails(rr.parse(CAST.replace("TARGET", target)), ones(4), ones(4))
        assert got in str(err) and line_of(err) == 3, (target, str(err))


def test_match_cast_binds_new_variables_for_what_follows() -> None:
    """``k`` bound by match_cast fixes the shape of a packed call's output and is checked by
    a later annotation and by the function's return type."""
    src = """
def @main(%y: Tensor[(?), float32]) -> Tensor[(?), float32] {
  let %u = match_cast(%y, Tensor[(k), float32]);
  let %d: Tensor[(k * 2), float32] = call_dps_packed("test_sym.twice", (%u,),
                                                     Tensor[(k * 2), float32]);
  %d
}
"""
    rr.register_packed("test_sym.twice", _twice, replace=True)
    mod = rr.parse(src)
    np.testing.assert_array_equal(run(mod, np.arange(3, dtype=F32)),
                                  np.array([0, 1, 2, 0, 1, 2], F32))
    annotated = rr.parse(src.replace("let %d: Tensor[(k * 2), float32]",
                                  "let %d: Tensor[(k + 1), float32]"))
    err = fails(annotated, np.arange(3, dtype=F32))
    assert "annotated Tensor[(k + 1), float32]" in str(err) and line_of(err) == 4


def _twice(x: np.ndarray, out: np.ndarray) -> None:
    out[: len(x)] = x
    out[len(x):] = x


def test_a_closure_made_before_a_match_cast_does_not_see_its_variables() -> None:
    """Copy-on-write: ``%f`` was made before ``k`` was bound, so its own ``k`` is fresh."""
    src = """
def @main(%y: Tensor[(?), float32], %z: Tensor[(?), float32]) -> Tensor[(?), float32] {
  let %f = fn (%a: Tensor[(k), float32]) -> Tensor[(k), float32] { %a };
  let %u = match_cast(%y, Tensor[(k), float32]);
  %f(%z)
}
"""
    mod = rr.parse(src)
    assert run(mod, ones(2), ones(5)).shape == (5,)


def test_the_variables_a_branch_binds_are_its_own() -> None:
    """A match_cast inside an ``if`` branch or a ``match`` clause binds for that branch only
    (as the checker scopes it): the later match_cast binds ``k`` afresh, whichever branch
    ran, and the one before the ``if`` stays bound after it."""
    src = """
def @main(%c: bool, %y: Tensor[(?), float32], %z: Tensor[(?), float32]) -> Tensor[(?), float32] {
  let %w = match_cast(%y, Tensor[(j), float32]);
  let %a = if (%c) {
    let %u = match_cast(%y, Tensor[(k), float32]);
    sum(%u)
  } else {
    sum(%y)
  };
  let %b = match (%c) {
    _ => { let %t = match_cast(%y, Tensor[(m), float32]); sum(%t) },
  };
  let %v = match_cast(%z, Tensor[(k), float32]);
  let %q = match_cast(%z, Tensor[(m), float32]);
  let %again = match_cast(%y, Tensor[(j), float32]);
  %v
}
"""
    mod = rr.parse(src)
    for trace in (False, True):
        for c in (True, False):
            out = rr.evaluate(mod, np.array(c), ones(3), ones(4), typecheck=False, trace=trace)
            assert (out[0] if trace else out).shape == (4,)
    err = fails(rr.parse(src.replace("%again = match_cast(%y", "%again = match_cast(%z")),
                np.array(True), ones(3), ones(4))
    assert "j is 3 but the value has 4" in str(err)


# -- Shape-DPS ---------------------------------------------------------------------------------

DPS = """
def @main(%x: Tensor[(n, 4), float32], %w: Tensor[(4), float32]) -> Tensor[(n, 4), float32] {
  call_dps_packed(NAME, (%x, %w), Tensor[(n, 4), float32])
}
"""


def _scale_rows(x: np.ndarray, w: np.ndarray, out: np.ndarray, n: int) -> None:
    assert out.shape == (n, 4)
    np.multiply(x, w, out=out)


_scale_rows.sym_args = ("n",)  # type: ignore[attr-defined]


def test_call_dps_packed_with_a_numpy_function_and_sym_args() -> None:
    rr.register_packed("test_sym.scale_rows", _scale_rows, replace=True)
    mod = rr.parse(DPS.replace("NAME", '"test_sym.scale_rows"'))
    for n in (1, 7):
        x = np.arange(4 * n, dtype=F32).reshape(n, 4)
        w = np.array([1, 2, 3, 4], F32)
        np.testing.assert_array_equal(run(mod, x, w), x * w)


def test_call_tir_with_a_numba_kernel_and_a_tuple_output() -> None:
    import numba  # a dependency of relay_ref

    @numba.njit(cache=False)
    def split_sum(x, lo, hi, n):  # noqa: ANN001, ANN202 - a numba kernel
        for i in range(n):
            lo[i] = x[i, 0] + x[i, 1]
            hi[i] = x[i, 2] + x[i, 3]

    split_sum.sym_args = ("n",)
    rr.register_packed("test_sym.split_sum", split_sum, replace=True)
    src = """
def @main(%x: Tensor[(n, 4), float32]) -> (Tensor[(n), float32], Tensor[(n), float32]) {
  call_tir("test_sym.split_sum", (%x,), (Tensor[(n), float32], Tensor[(n), float32]))
}
"""
    mod = rr.parse(src)
    x = np.arange(12, dtype=F32).reshape(3, 4)
    lo, hi = run(mod, x)
    np.testing.assert_array_equal(lo, x[:, 0] + x[:, 1])
    np.testing.assert_array_equal(hi, x[:, 2] + x[:, 3])


def test_an_unknown_packed_function_is_located_with_a_suggestion() -> None:
    rr.register_packed("test_sym.scale_rows", _scale_rows, replace=True)
    mod = rr.parse(DPS.replace("NAME", '"test_sym.scale_row"'))
    err = fails(mod, ones(2, 4), ones(4))
    assert line_of(err) == 3
    assert "no packed function 'test_sym.scale_row'" in str(err)
    assert "test_sym.scale_rows" in str(err)  # did you mean


def test_a_failing_packed_function_is_located_at_the_call() -> None:
    def broken(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
        raise ValueError("kernel exploded")

    rr.register_packed("test_sym.broken", broken, replace=True)
    err = fails(rr.parse(DPS.replace("NAME", '"test_sym.broken"')), ones(2, 4), ones(4))
    assert line_of(err) == 3 and "kernel exploded" in str(err) and "[Shape-DPS]" in str(err)


def test_register_packed_refuses_bad_registrations() -> None:
    rr.register_packed("test_sym.scale_rows", _scale_rows, replace=True)
    with pytest.raises(ValueError, match="already registered"):
        rr.register_packed("test_sym.scale_rows", _twice)
    with pytest.raises(TypeError):
        rr.register_packed("", _twice)
    with pytest.raises(TypeError):
        rr.register_packed("test_sym.not_callable", 3)  # type: ignore[arg-type]
    rr.register_packed("test_sym.scale_rows", _scale_rows)  # the same function again: fine


# -- Shape-Dataflow ------------------------------------------------------------------------

def test_dataflow_is_the_value_of_its_body() -> None:
    mod = rr.parse("""
def @main(%x: Tensor[(n), float32]) -> Tensor[(n), float32] {
  dataflow { let %a = add(%x, %x); let %unused = multiply(%a, %a); negative(%a) }
}
""")
    x = np.arange(4, dtype=F32)
    np.testing.assert_array_equal(run(mod, x), -(x + x))
    assert np.array_equal(rr.evaluate(mod, x, typecheck=False, trace=True)[0], -(x + x))


# -- casts: symbolic targets are checked where the frame binds their variables --------------

def test_casts_check_bound_variables_and_skip_unbound_ones() -> None:
    cast = Cast("T-App", parse_type("Tensor[(?, 2), float32]"),
                parse_type("Tensor[(n * 2, m), float32]"), "argument 0 of @f", None)
    value = ones(6, 2)
    mod = IRModule({})
    assert cast_value(value, cast, mod) is value                      # nothing bound
    assert cast_value(value, cast, mod, shape_env={"n": 3}) is value  # m unbound: skipped
    assert cast_value(value, cast, mod, shape_env={"n": 3, "m": 2}) is value
    from relay_ref.interpreter.stuck import Stuck

    with pytest.raises(Stuck, match="cast failed") as info:
        cast_value(value, cast, mod, shape_env={"n": 4})
    assert "expected a tensor of type Tensor[(8, ?), float32]" in info.value.message
    assert "gave it type Tensor[(n * 2, m), float32] (with n = 4)" in info.value.notes[0].message
    with pytest.raises(Stuck, match="cast failed"):
        cast_value(value, cast, mod, shape_env={"n": 3, "m": 5})


def test_programs_without_shape_variables_make_no_shape_environment() -> None:
    """Precomputed per function: nothing is bound, no environment enters any frame."""
    from relay_ref.interpreter.eval import Interpreter
    from relay_ref.interpreter.shapes import SHAPE_ENV

    mod = rr.parse("""
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  let %f = fn (%a: Tensor[(3), float32]) { add(%a, %x) };
  %f(%x)
}
""")
    interp = Interpreter(mod, checked=False)
    closure = interp.global_closure("main", None)
    frame: dict = {}
    assert np.array_equal(interp.e_app_closure(closure, [ones(3)], None, frame), ones(3) * 2)
    assert SHAPE_ENV not in frame
    assert all(not info.shape_checks and info.shape_ret is None
               for info in interp.fn_info.values())


def test_a_partly_bound_cast_dimension_is_not_checked() -> None:
    """``n + m`` with only ``n`` bound is ``?`` at run time (not ``3 + m``, which no extent
    below 3 could match): what the environment does not determine is skipped."""
    from relay_ref.interpreter.shapes import resolve_type

    ty = parse_type("(Tensor[(n + m, 2, n), float32], Tensor[(?), float32])")
    assert resolve_type(ty, {"n": 3}) == parse_type(
        "(Tensor[(?, 2, 3), float32], Tensor[(?), float32])")
    plain = parse_type("Tensor[(3, ?), float32]")
    assert resolve_type(plain, {"n": 3}) is plain
    cast = Cast("T-Let", parse_type("Tensor[(?), float32]"), parse_type("Tensor[(n + m), float32]"),
                "the value of %v", None)
    assert cast_value(ones(2), cast, IRModule({}), shape_env={"n": 3}) is not None


def test_a_tuple_parameter_is_checked_after_all_its_fields_bind() -> None:
    # Shape-Bind: n is bound by field 1, then field 0's n * 2 is checked (5 is not 6)
    mod = rr.parse("def @main(%t: (Tensor[(n * 2), float32], Tensor[(n), float32])) "
                   "{ %t.0 }")
    bad = (np.zeros(5, "float32"), np.zeros(3, "float32"))
    with pytest.raises(rr.RelayRuntimeError, match=r"expected n \* 2 = 6 \(with n = 3\), got 5"):
        rr.evaluate(mod, bad)
    assert rr.evaluate(mod, (np.zeros(6, "float32"), np.zeros(3, "float32"))).shape == (6,)
