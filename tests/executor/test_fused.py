"""Fused elementwise kernels (``relay_ref.executor.fused``) against the operators' NumPy
references run one by one (the definitional interpreter, ``rr.evaluate``).

Numba compile time is the cost here: each test program is one fixed op structure and
hypothesis only varies values and dims inside a few broadcast patterns, so all examples of
a test hit the same handful of kernels (one per dtype and collapsed pattern)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import relay_ref as rr
from relay_ref.executor.fused import ElementwiseKernel, build_elementwise
from relay_ref.ir.expr import Call, Constant, Function, Op, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType
from relay_ref.ops.registry import OpRuntimeError, get_op, make_attrs

# -- helpers ----------------------------------------------------------------------------------

_MODULES: dict[str, object] = {}


def _module(text: str):
    mod = _MODULES.get(text)
    if mod is None:
        mod = _MODULES[text] = rr.infer_types(rr.parse(text))
    return mod


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


def _program(body: str, params: dict[str, tuple[tuple[int, ...], str]]) -> str:
    sig = ", ".join(f"%{n}: Tensor[{_shape_text(s)}, {d}]" for n, (s, d) in params.items())
    return f"def @main({sig}) {{\n{body}\n}}"


def _kernel(text: str) -> tuple[ElementwiseKernel, object]:
    mod = _module(text)
    fn = mod.functions["main"]
    k = build_elementwise(fn.params, fn.body, mod.checked_types)
    assert k is not None, text
    return k, mod


def _check(text: str, args: list[np.ndarray], *, rtol: float = 0.0,
           atol: float = 0.0) -> ElementwiseKernel:
    """The fused kernel of ``@main`` equals the interpreter (exactly, or within ``rtol`` /
    ``atol``)."""
    k, mod = _kernel(text)
    want = rr.evaluate(mod, *args)
    got = k(args)
    assert got.dtype == want.dtype and got.shape == want.shape
    if rtol:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)
    return k


# broadcast patterns: (x shape, y shape) as functions of three dims >= 2
PATTERNS = {
    "same": lambda a, b, c: ((a, b, c), (a, b, c)),  # rank 1
    "bias": lambda a, b, c: ((1, a, b, c), (a, 1, 1)),  # (C, HW)
    "scalar": lambda a, b, c: ((a, b), ()),  # rank 1, y broadcast
    "row": lambda a, b, c: ((a, b), (b,)),  # (1, C) rows
    "outer": lambda a, b, c: ((a, 1), (1, b)),  # both broadcast
    "batch_bias": lambda a, b, c: ((a, b, c), (b, 1)),  # rank 3
}
_DIM = st.integers(2, 4)


@st.composite
def _shapes(draw, patterns):
    name = draw(st.sampled_from(patterns))
    return PATTERNS[name](draw(_DIM), draw(_DIM), draw(_DIM))


def _floats(dtype, shape, special=True):
    width = 32 if dtype == "float32" else 64
    elems = st.floats(-8, 8, width=width) if not special else st.one_of(
        st.floats(-8, 8, width=width),
        st.sampled_from([0.0, -0.0, 0.5, -1.5, np.inf, -np.inf, np.nan]))
    return hnp.arrays(dtype, shape, elements=elems)


_I32 = st.one_of(st.integers(-9, 9),
                 st.sampled_from([-(2 ** 31), 2 ** 31 - 1, -1, 31, 32, 40]),
                 st.integers(-(2 ** 31), 2 ** 31 - 1))

# -- floats ---------------------------------------------------------------------------------

# IEEE-exact ops: the kernel must give bit-identical results (NaN where NumPy has NaN)
EXACT_FLOAT = """
  %0 = add(%x, %y);
  %1 = multiply(%0, %0);
  %2 = subtract(%1, %y);
  %3 = divide(%2, %x);
  %4 = floor_divide(%3, %y);
  %5 = floor_mod(%0, %y);
  %6 = mod(%1, %x);
  %7 = maximum(%4, %5);
  %8 = minimum(%7, %6);
  %9 = nn.relu(%8);
  %10 = clip(%3, a_min=-2f, a_max=3f);
  %11 = where(greater(%x, %y), %9, %10);
  %12 = add(%11, round(%0));
  %13 = add(%12, abs(negative(floor(%2))));
  %14 = add(%13, ceil(trunc(%1)));
  add(%14, sign(%0))"""


@given(st.data())
def test_exact_float_ops_float32(data):
    sx, sy = data.draw(_shapes(["same", "bias", "scalar"]))
    x = data.draw(_floats("float32", sx))
    y = data.draw(_floats("float32", sy))
    text = _program(EXACT_FLOAT, {"x": (sx, "float32"), "y": (sy, "float32")})
    _check(text, [x, y])


@given(st.data())
def test_exact_float_ops_float64(data):
    sx, sy = data.draw(_shapes(["same"]))
    x = data.draw(_floats("float64", sx))
    y = data.draw(_floats("float64", sy))
    text = _program(EXACT_FLOAT.replace("f,", "f64,").replace("f)", "f64)"),
                    {"x": (sx, "float64"), "y": (sy, "float64")})
    _check(text, [x, y])


TRANSCENDENTAL = """
  %0 = sigmoid(%x);
  %1 = tanh(%y);
  %2 = multiply(exp(%0), log(abs(%1)));
  %3 = add(sqrt(abs(%x)), rsqrt(add(abs(%y), 1f)));
  %4 = add(erf(%x), power(abs(%x), %y));
  %5 = add(nn.leaky_relu(%x, alpha=0.1f), sin(%y));
  %6 = add(%2, %3);
  add(%6, multiply(%4, %5))"""


@given(st.data())
def test_transcendental_float32_within_rtol(data):
    sx, sy = data.draw(_shapes(["same", "row"]))
    x = data.draw(_floats("float32", sx, special=False))
    y = data.draw(_floats("float32", sy, special=False))
    text = _program(TRANSCENDENTAL, {"x": (sx, "float32"), "y": (sy, "float32")})
    # each op within a few ulps; the final sums may cancel, so an absolute bound too
    _check(text, [x, y], rtol=2e-6, atol=1e-5)


@given(st.data())
def test_broadcast_patterns(data):
    """Every collapsed layout (rank 1 to 3, inputs dense or broadcast per dim), each
    argument order."""
    name = data.draw(st.sampled_from(sorted(PATTERNS)))
    sx, sy = PATTERNS[name](data.draw(_DIM), data.draw(_DIM), data.draw(_DIM))
    if data.draw(st.booleans()):
        sx, sy = sy, sx
    x = data.draw(_floats("float32", sx))
    y = data.draw(_floats("float32", sy))
    text = _program("nn.relu(add(%x, %y))", {"x": (sx, "float32"), "y": (sy, "float32")})
    _check(text, [x, y])


def test_layouts_collapse_to_few_dims():
    cases = {((1, 64, 56, 56), (64, 1, 1)): [64, 3136],
             ((8, 64, 7, 7), (64, 1, 1)): [8, 64, 49],
             ((2, 3, 4, 5), (2, 3, 4, 5)): [120],
             ((5, 6), ()): [30],
             ((5, 6), (6,)): [5, 6],
             ((1, 32, 7, 7), (32, 1, 1)): [32, 49]}
    sources = set()
    for (sx, sy), dims in cases.items():
        text = _program("add(%x, %y)", {"x": (sx, "float32"), "y": (sy, "float32")})
        k, _ = _kernel(text)
        assert list(k.dims) == dims
        sources.add(k.source)
    # the two batch-1 (C,1,1)-bias cases share one kernel; every other case has its own
    assert len(sources) == 5


def test_same_structure_other_shape_same_source():
    a = _kernel(_program("nn.relu(%x)", {"x": ((2, 3), "float32")}))[0]
    b = _kernel(_program("nn.relu(%x)", {"x": ((1, 64, 56, 56), "float32")}))[0]
    assert a.source == b.source and a.fn is b.fn


# -- integers and bools ---------------------------------------------------------------------

EXACT_INT = """
  %0 = add(%x, %y);
  %1 = multiply(%0, %x);
  %2 = subtract(%1, %y);
  %3 = divide(%2, %y);
  %4 = mod(%2, %y);
  %5 = floor_divide(%1, %y);
  %6 = floor_mod(%1, %y);
  %7 = maximum(%3, %4);
  %8 = minimum(%5, %6);
  %9 = bitwise_xor(bitwise_and(%7, %8), bitwise_or(%x, bitwise_not(%y)));
  %10 = add(left_shift(%9, %y), right_shift(%x, %y));
  %11 = where(less(%x, %y), %10, nn.relu(abs(negative(%x))));
  %12 = add(clip(%11, a_min=-1000f, a_max=1e6f), power(%x, 3));
  add(%12, cast(greater_equal(%0, %x), dtype="int32"))"""


@given(st.data())
def test_exact_int32_ops_wrap_and_round_like_relay(data):
    sx, sy = data.draw(_shapes(["same", "row"]))
    x = data.draw(hnp.arrays("int32", sx, elements=_I32))
    y = data.draw(hnp.arrays("int32", sy, elements=_I32.filter(lambda v: v != 0)))
    text = _program(EXACT_INT, {"x": (sx, "int32"), "y": (sy, "int32")})
    _check(text, [x, y])


EXACT_UINT8 = """
  %0 = add(multiply(%x, %y), negative(%x));
  %1 = add(divide(%0, %y), mod(%x, %y));
  %2 = add(floor_mod(%0, %y), subtract(%x, %y));
  %3 = maximum(left_shift(%1, %y), right_shift(%2, %y));
  add(%3, abs(%x))"""


@given(st.data())
def test_exact_uint8_ops(data):
    shape = (data.draw(_DIM), data.draw(_DIM))
    x = data.draw(hnp.arrays("uint8", shape))
    y = data.draw(hnp.arrays("uint8", shape, elements=st.integers(1, 255)))
    _check(_program(EXACT_UINT8, {"x": (shape, "uint8"), "y": (shape, "uint8")}), [x, y])


BOOLS = """
  %0 = greater(%x, %y);
  %1 = logical_and(%0, less(%x, 0f));
  %2 = logical_or(%1, logical_not(%0));
  %3 = logical_xor(%2, equal(%x, %y));
  %4 = bitwise_and(%3, not_equal(%x, %y));
  %5 = logical_and(%4, isfinite(%x));
  %6 = cast(logical_or(%x, %y), dtype="bool");
  where(%5, %6, isnan(%y))"""


@given(st.data())
def test_bool_results(data):
    sx, sy = PATTERNS["row"](data.draw(_DIM), data.draw(_DIM), 2)
    x = data.draw(_floats("float32", sx))
    y = data.draw(_floats("float32", sy))
    k = _check(_program(BOOLS, {"x": (sx, "float32"), "y": (sy, "float32")}), [x, y])
    assert k.dtype == np.bool_


@pytest.mark.parametrize("op", ["divide", "mod", "floor_divide", "floor_mod"])
def test_integer_division_by_zero_raises_the_references_error(op):
    text = _program(f"{op}(%x, %y)", {"x": ((2, 3), "int32"), "y": ((3,), "int32")})
    k, _ = _kernel(text)
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    y = np.array([1, 0, 2], np.int32)
    with pytest.raises(OpRuntimeError) as ref:
        get_op(op).reference([x, y], None)
    with pytest.raises(OpRuntimeError) as got:
        k([x, y])
    assert str(got.value) == str(ref.value)
    assert k([x, y + (y == 0)]).shape == (2, 3)  # no zero: no error


def test_integer_power_with_negative_exponent_raises():
    k, _ = _kernel(_program("power(%x, %y)", {"x": ((3,), "int32"), "y": ((3,), "int32")}))
    with pytest.raises(OpRuntimeError, match="power: integers to negative"):
        k([np.ones(3, np.int32), np.array([1, -1, 2], np.int32)])


# -- sharing, constants, out= ---------------------------------------------------------------

def test_shared_node_computed_once():
    text = _program("%0 = exp(%x);\n  %1 = add(%0, %0);\n  multiply(%1, %0)",
                    {"x": ((4,), "float32")})
    k = _check(text, [np.linspace(-1, 1, 4, dtype=np.float32)], rtol=1e-6)
    assert k.ops == ("exp", "add", "multiply")
    assert k.source.count("np.exp(") == 1


def _call(op: str, *args, **attrs) -> Call:
    return Call(Op(op), tuple(args), make_attrs(op, attrs))


def test_tensor_constants_are_bound_and_scalars_inlined():
    x = Var("x", TensorType((2, 3, 2, 2), "float32"))
    scale = Constant(np.arange(3, dtype=np.float32).reshape(3, 1, 1) + 0.5)
    shift = Constant(np.array(-1.25, np.float32))
    body = _call("nn.relu", _call("add", _call("multiply", x, scale), shift))
    mod = rr.infer_types(IRModule().with_function("main", Function((x,), body)))
    fn = mod.functions["main"]
    k = build_elementwise(fn.params, fn.body, mod.checked_types)
    assert k is not None and len(k.inputs) == 2  # x and the scale; the shift is a literal
    assert "np.float32(-1.25)" in k.source
    data = np.random.default_rng(1).standard_normal((2, 3, 2, 2)).astype(np.float32)
    np.testing.assert_array_equal(k([data]), np.maximum(data * scale.data + shift.data, 0))


def test_out_and_in_place_bias_relu():
    text = _program("nn.relu(nn.bias_add(%x, %b))",
                    {"x": ((1, 4, 3, 3), "float32"), "b": ((4,), "float32")})
    k, mod = _kernel(text)
    assert k.inplace_ok == frozenset({0})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    want = rr.evaluate(mod, x, b)
    out = np.empty_like(x)
    assert k([x, b], out=out) is out
    np.testing.assert_array_equal(out, want)
    assert k([x, b], out=x) is x  # in place: x is the output buffer
    np.testing.assert_array_equal(x, want)
    assert "in place through x0" in k.inplace_sources[0]  # the vectorisable variant ran
    assert 0 in k._variants
    with pytest.raises(ValueError, match="C-contiguous"):
        k([x, b], out=np.empty((1, 4, 3, 3), np.float64))


def test_broadcast_inputs_may_not_alias_out():
    text = _program("add(%x, %y)", {"x": ((2, 3), "float32"), "y": ((3,), "float32")})
    assert _kernel(text)[0].inplace_ok == frozenset({0})
    text = _program("add(%y, %x)", {"x": ((3,), "float32"), "y": ((2, 3), "float32")})
    assert _kernel(text)[0].inplace_ok == frozenset({1})


def test_wrong_argument_is_a_clear_error():
    k, _ = _kernel(_program("nn.relu(%x)", {"x": ((2, 3), "float32")}))
    with pytest.raises(ValueError, match="expected"):
        k([np.zeros((3, 2), np.float32)])
    with pytest.raises(ValueError, match="expected"):
        k([np.zeros((2, 3), np.float64)])


def test_non_contiguous_and_zero_size_arguments():
    k, _ = _kernel(_program("nn.relu(%x)", {"x": ((2, 3), "float32")}))
    x = np.arange(-3, 3, dtype=np.float32).reshape(3, 2).T
    np.testing.assert_array_equal(k([x]), np.maximum(x, 0))
    k0, _ = _kernel(_program("nn.relu(%x)", {"x": ((0, 3), "float32")}))
    assert k0([np.zeros((0, 3), np.float32)]).shape == (0, 3)


# -- what is refused ------------------------------------------------------------------------

@pytest.mark.parametrize("body, params", [
    ("reshape(%x, newshape=[3, 2])", {"x": ((2, 3), "float32")}),  # injective
    ("nn.relu(%x)", {"x": ((2, 3), "float16")}),  # no float16 kernels
    ("exp(%x)", {"x": ((2, 3), "int32")}),  # integer math: float64 round trip
    ("add(%x, %x)", {"x": ((2, 3), "bool")}),  # bool arithmetic
    ("sum(%x)", {"x": ((2, 3), "float32")}),  # a reduction
])
def test_unsupported_groups_return_none(body, params):
    mod = _module(_program(body, params))
    fn = mod.functions["main"]
    assert build_elementwise(fn.params, fn.body, mod.checked_types) is None


def test_dynamic_shape_returns_none():
    mod = _module("def @main(%x: Tensor[(?, 3), float32]) { nn.relu(%x) }")
    fn = mod.functions["main"]
    assert build_elementwise(fn.params, fn.body, mod.checked_types) is None


def test_free_variable_returns_none():
    mod = _module(_program("add(%x, %y)", {"x": ((3,), "float32"), "y": ((3,), "float32")}))
    fn = mod.functions["main"]
    assert build_elementwise(fn.params[:1], fn.body, mod.checked_types) is None
