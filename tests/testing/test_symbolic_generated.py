"""The generated-program properties on programs with symbolic shapes
(relay_ref.testing.symbolic_programs): the round trip (Pr-RoundTrip), soundness (the
checker accepts them, infers the generator's result type, and evaluation at two sizes gives
values of that type's shapes, Shape-Bind) and ``check_pass`` for a few passes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.ir.expr import Call, Constant, Let, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.shape import is_any
from relay_ref.ir.types import TensorType, TupleType
from relay_ref.ir.visitor import post_order
from relay_ref.ops.registry import get_op
from relay_ref.passes import get_pass
from relay_ref.testing import check_pass
from relay_ref.testing.programs import arguments
from relay_ref.testing.symbolic_programs import (
    FEATURES,
    PACKED,
    SymbolicCase,
    symbolic_cases,
    symbolic_programs,
)

FAST = settings(max_examples=60, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


@FAST
@given(symbolic_cases())
def test_generated_symbolic_programs_round_trip(case: SymbolicCase) -> None:
    text = rr.astext(case.module)
    again = rr.parse(text, "printed")
    assert rr.alpha_equal(case.module, again), text
    assert rr.structural_hash(case.module) == rr.structural_hash(again)
    assert rr.astext(again) == text


def test_the_generator_reaches_every_feature() -> None:
    seen: set[str] = set()
    ops: set[str] = set()

    @settings(max_examples=150, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(symbolic_cases())
    def draw(case: SymbolicCase) -> None:
        seen.update(case.features)
        ops.update(n.op.name for n in post_order(case.module["main"])
                   if isinstance(n, Call) and isinstance(n.op, Op))

    draw()
    assert set(FEATURES) <= seen, set(FEATURES) - seen
    assert {"match_cast", "call_dps_packed", "call_tir", "dataflow", "reshape",
            "concatenate", "nn.dense"} <= ops


def test_symbolic_parameters_get_one_value_per_shape_variable() -> None:
    src = '''#[version = "0.0.5"]
def @main(%x: Tensor[(n, 3), float32], %y: Tensor[(n * 2, m), float32],
          %t: (Tensor[(m), float32], Tensor[(2), int32])) { %x }'''
    mod = rr.parse(src)

    @settings(max_examples=20, deadline=None, database=None)
    @given(arguments([p.type_annotation for p in mod["main"].params]))
    def check(args: tuple) -> None:
        x, y, (tm, ti) = args
        assert x.shape[1] == 3 and y.shape[0] == 2 * x.shape[0] and y.shape[1] == tm.shape[0]
        assert 1 <= x.shape[0] <= 4 and ti.shape == (2,) and ti.dtype == np.int32

    check()


def _direct(e: object, env: dict) -> object:
    """The value of a generated expression by the operators' NumPy references alone (no
    checker, no interpreter): the oracle for the generator's own derivations. The
    programs are small let chains; a dataflow block's body is one more chain."""
    match e:
        case Var():
            return env[e]
        case Let():
            inner = dict(env)
            while isinstance(e, Let):
                inner[e.var] = _direct(e.value, inner)
                e = e.body
            return _direct(e, inner)
        case Tuple(fields):
            return tuple(_direct(f, env) for f in fields)
        case TupleGetItem(tup, index):
            return _direct(tup, env)[index]
        case Constant(data):
            return data
        case Call(Op("call_dps_packed" | "call_tir"), (args,), attrs):
            inputs = _direct(args, env)
            out = np.zeros_like(inputs[0])
            PACKED[attrs.func_name](*inputs, out)
            return out
        case Call(Op(name), args, attrs):
            return get_op(name).reference([_direct(a, env) for a in args], attrs)
    raise AssertionError(f"not generated: {type(e).__name__}")


@FAST
@given(symbolic_cases(), st.integers(1, 4))
def test_the_generators_derivations_hold_under_numpy(case: SymbolicCase, size: int) -> None:
    env = {name: size + i for i, name in enumerate(case.param_vars)}
    main = case.module["main"]
    args = case.arguments(env, seed=size)
    with np.errstate(all="ignore"):
        value = _direct(main.body, dict(zip(main.params, args, strict=True)))
    assert _shapes(value) == case.expected_shapes(env), case.text()


def _agrees(inferred: object, derived: object) -> bool:
    """The checker's type is the generator's, up to dimensions it left ``?``."""
    if isinstance(derived, TupleType):
        return isinstance(inferred, TupleType) and len(inferred.fields) == len(
            derived.fields) and all(_agrees(a, b) for a, b in zip(inferred.fields,
                                                                   derived.fields,
                                                                   strict=True))
    assert isinstance(derived, TensorType)
    return isinstance(inferred, TensorType) and inferred.dtype == derived.dtype and \
        len(inferred.shape) == len(derived.shape) and all(
            is_any(a) or a == b for a, b in zip(inferred.shape, derived.shape, strict=True))


def _shapes(value: object) -> list[tuple[int, ...]]:
    vals = value if isinstance(value, tuple) else (value,)
    return [tuple(np.asarray(v).shape) for v in vals]


@FAST
@given(symbolic_cases(), st.integers(1, 3), st.integers(2, 5))
def test_generated_symbolic_programs_are_sound(case: SymbolicCase, a: int, b: int) -> None:
    typed = rr.infer_types(case.module)  # well typed by construction
    ret = typed.global_types["main"].ret_type
    assert _agrees(ret, case.ret_type), (rr.astext(ret), rr.astext(case.ret_type),
                                         case.text())
    for size in (a, b):  # one program, two sizes: the shape variables are bound per call
        env = {name: size + i for i, name in enumerate(case.param_vars)}
        value = rr.evaluate(typed, *case.arguments(env, seed=size))
        assert _shapes(value) == case.expected_shapes(env), case.text()


@pytest.mark.parametrize("name", ["DeadCodeElimination", "FoldConstant", "ToANormalForm",
                                  "EliminateCommonSubexpr", "FuseOps"])
def test_passes_on_generated_symbolic_programs(name: str) -> None:
    # DCE inside dataflow blocks, folding and fusion over symbolic shapes, A-normal form
    # through match_cast / DPS calls; arguments at random sizes (programs.arguments)
    check_pass(get_pass(name), programs=symbolic_programs(), examples=20,
               allow_vacuous=True)


def test_focus_on_a_relax_op_points_to_the_symbolic_generator() -> None:
    with pytest.raises(ValueError, match="symbolic_programs"):
        check_pass(get_pass("FoldConstant"), focus="match_cast")
