"""Elementwise operators: references vs onnxruntime (or NumPy formulas where ONNX has no
equivalent), plus TVM's integer semantics (truncating divide/mod, wrap-around)."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ops.registry import OpRuntimeError

SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 1, 4), (3, 1)), ((), (2, 2)), ((4,), ())]

# relay op -> (onnx op, dtypes, extra onnx attrs)
BINARY_ONNX = {
    "add": ("Add", ("float32", "int32", "int64"), {}),
    "subtract": ("Sub", ("float32", "int32"), {}),
    "multiply": ("Mul", ("float32", "int32"), {}),
    "divide": ("Div", ("float32", "int32", "int64"), {}),  # ORT int Div truncates, as TVM
    "mod": ("Mod", ("float32", "int32"), {"fmod": 1}),  # truncated remainder
    "floor_mod": ("Mod", ("int32", "int64"), {"fmod": 0}),  # sign of divisor
    "power": ("Pow", ("float32",), {}),
    "maximum": ("Max", ("float32", "int32"), {}),
    "minimum": ("Min", ("float32", "int32"), {}),
    "logical_and": ("And", ("bool",), {}),
    "logical_or": ("Or", ("bool",), {}),
    "logical_xor": ("Xor", ("bool",), {}),
    "bitwise_and": ("BitwiseAnd", ("int32", "uint8"), {"opset": 18}),
    "bitwise_or": ("BitwiseOr", ("int32",), {"opset": 18}),
    "bitwise_xor": ("BitwiseXor", ("int32",), {"opset": 18}),
    "left_shift": ("BitShift", ("uint32",), {"direction": "LEFT"}),
    "right_shift": ("BitShift", ("uint32",), {"direction": "RIGHT"}),
    "equal": ("Equal", ("float32", "int32"), {}),
    "less": ("Less", ("float32", "int32"), {}),
    "less_equal": ("LessOrEqual", ("float32",), {}),
    "greater": ("Greater", ("float32", "int32"), {}),
    "greater_equal": ("GreaterOrEqual", ("float32",), {}),
}

# ops without a direct ONNX node: NumPy formula of TVM's definition
BINARY_NUMPY = {
    "floor_divide": (("float32", "int32"), lambda a, b: np.floor(a / b) if a.dtype.kind == "f"
                     else np.floor_divide(a, b)),
    "not_equal": (("float32", "int32"), np.not_equal),
}


def _operands(name: str, dtype: str, sa: tuple, sb: tuple) -> tuple[np.ndarray, np.ndarray]:
    a = rand(sa, dtype, -20, 20) if dtype != "uint32" else rand(sa, dtype, 0, 1000)
    b = rand(sb, dtype, -6, 6) if dtype != "uint32" else rand(sb, dtype, 0, 7)
    if name in ("divide", "mod", "floor_mod", "floor_divide") and dtype != "bool":
        b = np.where(b == 0, np.asarray(3, dtype), b).astype(dtype)
        if dtype.startswith("float"):
            b = np.where(np.abs(b) < 0.5, np.asarray(1.5, dtype), b).astype(dtype)
    if name == "power":
        a = np.abs(a) + np.asarray(0.5, dtype)
    if name in ("equal", "less", "greater") and dtype == "float32":
        b = np.broadcast_to(b, np.broadcast_shapes(sa, sb))[tuple(slice(0, d) for d in sb)]
        a = a.copy()
    return a, b


@pytest.mark.parametrize("name", sorted(BINARY_ONNX))
def test_binary_vs_onnxruntime(name: str) -> None:
    onnx_op, dtypes, extra = BINARY_ONNX[name]
    for dtype in dtypes:
        for sa, sb in SHAPES:
            a, b = _operands(name, dtype, sa, sb)
            ours = run_op(name, [a, b])
            (theirs,) = onnx_run(onnx_op, [a, b], **extra)
            if theirs.dtype == bool or ours.dtype.kind in "iub":
                np.testing.assert_array_equal(ours, theirs, err_msg=f"{name} {dtype}")
            else:
                close(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(BINARY_NUMPY))
def test_binary_vs_numpy(name: str) -> None:
    dtypes, formula = BINARY_NUMPY[name]
    for dtype in dtypes:
        for sa, sb in SHAPES:
            a, b = _operands(name, dtype, sa, sb)
            ours = run_op(name, [a, b])
            np.testing.assert_array_equal(ours, np.asarray(formula(a, b)).astype(ours.dtype))


def test_tvm_integer_division_semantics() -> None:
    a = np.array([7, -7, 7, -7, 0], "int32")
    b = np.array([2, 2, -2, -2, 3], "int32")
    np.testing.assert_array_equal(run_op("divide", [a, b]), [3, -3, -3, 3, 0])
    np.testing.assert_array_equal(run_op("mod", [a, b]), [1, -1, 1, -1, 0])
    np.testing.assert_array_equal(run_op("floor_divide", [a, b]), [3, -4, -4, 3, 0])
    np.testing.assert_array_equal(run_op("floor_mod", [a, b]), [1, 1, -1, -1, 0])
    # floats: floor_mod = a - floor(a / b) * b, mod = fmod
    x, y = np.array([7.5, -7.5], "float32"), np.array([2.0, 2.0], "float32")
    np.testing.assert_allclose(run_op("floor_mod", [x, y]), [1.5, 0.5])
    np.testing.assert_allclose(run_op("mod", [x, y]), [1.5, -1.5])


@pytest.mark.parametrize("name", ["divide", "mod", "floor_divide", "floor_mod"])
def test_integer_division_by_zero_is_a_runtime_error(name: str) -> None:
    with pytest.raises(OpRuntimeError, match="division by zero"):
        run_op(name, [np.array([1, 2], "int32"), np.array([1, 0], "int32")])


def test_float_division_by_zero_is_ieee() -> None:
    out = run_op("divide", [np.array([1.0, -1.0, 0.0], "float32"),
                            np.zeros(3, "float32")])
    assert np.isinf(out[0]) and np.isinf(out[1]) and np.isnan(out[2])


def test_int32_wraps_and_float32_stays_float32() -> None:
    big = np.array(2**31 - 1, "int32")
    out = run_op("add", [big, np.array(1, "int32")])
    assert out.dtype == np.int32 and int(out) == -(2**31)
    assert run_op("multiply", [np.array([65536], "int32")] * 2)[0] == 0
    f = run_op("multiply", [np.array(1.5, "float32"), np.array(2.0, "float32")])
    assert isinstance(f, np.ndarray) and f.dtype == np.float32 and f.shape == ()
    assert run_op("sqrt", [np.array(2.0, "float16")]).dtype == np.float16


# relay op -> (onnx op, input range)
UNARY_ONNX = {
    "exp": ("Exp", (-3, 3)), "fast_exp": ("Exp", (-3, 3)), "log": ("Log", (0.1, 5)),
    "sqrt": ("Sqrt", (0.0, 5)), "sigmoid": ("Sigmoid", (-5, 5)), "tanh": ("Tanh", (-3, 3)),
    "fast_tanh": ("Tanh", (-3, 3)), "erf": ("Erf", (-2, 2)), "fast_erf": ("Erf", (-2, 2)),
    "abs": ("Abs", (-3, 3)), "negative": ("Neg", (-3, 3)), "floor": ("Floor", (-3, 3)),
    "ceil": ("Ceil", (-3, 3)), "round": ("Round", (-3, 3)), "sign": ("Sign", (-3, 3)),
    "sin": ("Sin", (-3, 3)), "cos": ("Cos", (-3, 3)), "tan": ("Tan", (-1, 1)),
    "asin": ("Asin", (-0.9, 0.9)), "acos": ("Acos", (-0.9, 0.9)), "atan": ("Atan", (-3, 3)),
    "sinh": ("Sinh", (-2, 2)), "cosh": ("Cosh", (-2, 2)), "asinh": ("Asinh", (-2, 2)),
    "acosh": ("Acosh", (1.1, 3)), "atanh": ("Atanh", (-0.9, 0.9)),
    "copy": ("Identity", (-3, 3)), "isnan": ("IsNaN", (-3, 3)), "isinf": ("IsInf", (-3, 3)),
}

UNARY_NUMPY = {
    "log2": (np.log2, (0.1, 5)), "log10": (np.log10, (0.1, 5)),
    "rsqrt": (lambda x: 1 / np.sqrt(x.astype(np.float64)), (0.1, 5)),
    "trunc": (np.trunc, (-3, 3)),
    "isfinite": (np.isfinite, (-3, 3)),
}


@pytest.mark.parametrize("name", sorted(UNARY_ONNX))
def test_unary_vs_onnxruntime(name: str) -> None:
    onnx_op, (lo, hi) = UNARY_ONNX[name]
    for shape in [(2, 3, 4), ()]:
        x = rand(shape, "float32", lo, hi)
        if name in ("isnan", "isinf") and x.size > 3:
            x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
        if name == "round" and x.size > 2:
            x.reshape(-1)[:2] = [0.5, 2.5]  # ties to even, as ONNX Round and LLVM nearbyint
        ours = run_op(name, [x])
        (theirs,) = onnx_run(onnx_op, [x])
        close(ours, theirs, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", sorted(UNARY_NUMPY))
def test_unary_vs_numpy(name: str) -> None:
    formula, (lo, hi) = UNARY_NUMPY[name]
    x = rand((3, 5), "float32", lo, hi)
    x[0, :2] = [np.inf, np.nan] if name == "isfinite" else x[0, :2]
    close(run_op(name, [x]), formula(x), rtol=2e-6, atol=2e-6)


def test_integer_unary_ops_keep_dtype() -> None:
    x = np.array([-3, 0, 5], "int32")
    np.testing.assert_array_equal(run_op("abs", [x]), [3, 0, 5])
    np.testing.assert_array_equal(run_op("negative", [x]), [3, 0, -5])
    np.testing.assert_array_equal(run_op("sign", [x]), [-1, 0, 1])
    assert run_op("exp", [x]).dtype == np.int32
    np.testing.assert_array_equal(run_op("isnan", [x]), [False] * 3)


OTHER_DIFF = {"logical_not", "bitwise_not", "clip"}


def test_logical_and_bitwise_not_vs_onnxruntime() -> None:
    b = rand((3, 4), "bool")
    np.testing.assert_array_equal(run_op("logical_not", [b]), onnx_run("Not", [b])[0])
    i = rand((3, 4), "int32", -100, 100)
    (theirs,) = onnx_run("BitwiseNot", [i], opset=18)
    np.testing.assert_array_equal(run_op("bitwise_not", [i]), theirs)


@pytest.mark.parametrize("dtype,lo,hi", [("float32", -1.0, 1.5), ("int32", -2.0, 3.0),
                                         ("float32", 0.0, np.inf)])
def test_clip_vs_onnxruntime(dtype: str, lo: float, hi: float) -> None:
    x = rand((4, 5), dtype, -5, 5)
    ours = run_op("clip", [x], a_min=lo, a_max=hi)
    bounds = [np.asarray(v).astype(dtype) if np.isfinite(v) else None for v in (lo, hi)]
    (theirs,) = onnx_run("Clip", [x] + bounds)
    np.testing.assert_array_equal(ours, theirs)


def test_clip_int_bounds_truncate() -> None:
    x = np.array([-5, 0, 5], "int32")
    np.testing.assert_array_equal(run_op("clip", [x], a_min=-1.7, a_max=2.9), [-1, 0, 2])


def test_bool_arithmetic_errors_are_runtime_errors() -> None:
    with pytest.raises(OpRuntimeError):
        run_op("subtract", [np.array([True]), np.array([False])])


DIFF_TESTED = set(BINARY_ONNX) | set(BINARY_NUMPY) | set(UNARY_ONNX) | set(UNARY_NUMPY) \
    | OTHER_DIFF
