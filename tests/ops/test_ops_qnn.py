"""qnn.* vs exact integer arithmetic (NumPy int64) and onnxruntime (QuantizeLinear,
DequantizeLinear, MatMulInteger, ConvInteger, the float unary ops) and, where ONNX has no
match (requantize, add, subtract, mul, leaky_relu), independent float formulas.

onnxruntime is a second oracle only on inputs where it is exact on every CPU: its integer
GEMM differs by CPU features (see ``_ort_exact_range``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from opcheck import onnx_run, rand, run_op

from relay_ref.ir.types import TensorType
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, get_op, make_attrs

F32, I32 = np.float32, np.int32


@pytest.mark.parametrize("out_dtype", ["int8", "uint8"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_dequantize_vs_onnxruntime(out_dtype: str, per_channel: bool) -> None:
    x = rand((2, 3, 4), low=-40, high=40)
    scale = np.array([0.3, 0.25, 0.7], F32) if per_channel else np.array(0.37, F32)
    zp = (np.array([3, -2, 0]) if per_channel else np.array(5)).astype(out_dtype if
                                                                    out_dtype == "int8"
                                                                    else "int32")
    zp = np.abs(zp) if out_dtype == "uint8" else zp
    axis = 1 if per_channel else -1
    q = run_op("qnn.quantize", [x, scale, zp.astype(I32)], out_dtype=out_dtype, axis=axis)
    (theirs,) = onnx_run("QuantizeLinear", [x, scale, zp.astype(out_dtype)], axis=axis,
                         opset=13)
    np.testing.assert_array_equal(q, theirs)
    dq = run_op("qnn.dequantize", [q, scale, zp.astype(I32)], axis=axis)
    (theirs,) = onnx_run("DequantizeLinear", [q, scale, zp.astype(out_dtype)], axis=axis,
                         opset=13)
    np.testing.assert_allclose(dq, theirs, rtol=1e-6)


def test_quantize_rounds_half_away_from_zero() -> None:
    x = np.array([0.5, 1.5, -0.5, -2.5, 300.0, -300.0], F32)
    q = run_op("qnn.quantize", [x, np.array(1.0, F32), np.array(0, I32)])
    np.testing.assert_array_equal(q, [1, 2, -1, -3, 127, -128])


@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST"])
def test_requantize_vs_formula(rounding: str) -> None:
    q = rand((3, 5), "int32", -1000, 1000)
    args = [q, np.array(0.05, F32), np.array(7, I32), np.array(0.3, F32), np.array(-3, I32)]
    out = run_op("qnn.requantize", args, rounding=rounding, out_dtype="int8")
    real = (q.astype(np.float64) - 7) * np.float64(F32(0.05)) / np.float64(F32(0.3))
    r = np.floor(real + 0.5) if rounding == "UPWARD" else np.sign(real) * np.floor(
        np.abs(real) + 0.5)
    np.testing.assert_array_equal(out, np.clip(r - 3, -128, 127).astype("int8"))
    ties = np.array([1, -1, 3, -3], I32)
    half = [ties, np.array(0.5, F32), np.array(0, I32), np.array(1.0, F32), np.array(0, I32)]
    want = {"UPWARD": [1, 0, 2, -1], "TONEAREST": [1, -1, 2, -2]}[rounding]
    np.testing.assert_array_equal(run_op("qnn.requantize", half, rounding=rounding), want)


def test_requantize_per_channel_and_default_rounding() -> None:
    q = rand((2, 3), "int8", -100, 100)
    scales = np.array([0.1, 0.2, 0.4], F32)
    out = run_op("qnn.requantize", [q, scales, np.array(0, I32), np.array(0.2, F32),
                                    np.array(10, I32)], axis=1, out_dtype="uint8")
    real = q * scales.astype(np.float64) / np.float64(F32(0.2))
    np.testing.assert_array_equal(out, np.clip(np.floor(real + 0.5) + 10, 0, 255))


def _qparams(ls: float, lz: int, rs: float, rz: int, os_: float, oz: int) -> list:
    return [np.array(ls, F32), np.array(lz, I32), np.array(rs, F32), np.array(rz, I32),
            np.array(os_, F32), np.array(oz, I32)]


@pytest.mark.parametrize("op", ["qnn.add", "qnn.mul"])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qnn_binary_vs_float(op: str, dtype: str) -> None:
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    a, b = rand((3, 4), dtype, lo, hi), rand((4,), dtype, lo, hi)
    params = _qparams(0.05, 3, 0.08, -4, 0.1, 2) if op == "qnn.add" else \
        _qparams(0.05, 3, 0.08, -4, 1.5, 2)
    out = run_op(op, [a, b] + params)
    ls, lz, rs, rz, os_, oz = (float(p) for p in params)
    fa, fb = ls * (a.astype(np.float64) - lz), rs * (b.astype(np.float64) - rz)
    real = fa + fb if op == "qnn.add" else fa * fb
    want = np.clip(np.floor(real / os_ + 0.5) + oz, lo, hi)
    assert np.abs(out.astype(np.int64) - want).max() <= 1  # add rounds twice
    # equal scales and zero points: qnn.add is exact integer addition
    same = run_op("qnn.add", [a, b] + _qparams(0.1, 1, 0.1, 1, 0.1, 1))
    np.testing.assert_array_equal(same, np.clip(a.astype(int) + b - 1, lo, hi))


def _ort_exact_range(wdtype: str) -> int:
    """The largest uint8 left operand for which onnxruntime's ``MatMulInteger`` is exact on
    every CPU. Without VNNI, its uint8 x int8 kernel adds pairs of products in saturating
    16-bit arithmetic (``pmaddubsw``): exact only while ``2 * x * |w| <= 32767``, so with int8
    right operands (``|w| <= 128``) the left ones must stay below 128. uint8 x uint8 widens
    to 16 bits first and is exact over the whole range."""
    return 127 if wdtype == "int8" else 255


@pytest.mark.parametrize("wdtype", ["uint8", "int8"])
def test_qnn_dense_vs_exact_integers_and_matmulinteger(wdtype: str) -> None:
    lo = 0 if wdtype == "uint8" else -128
    xz, wz = np.array(12, "uint8"), np.array(3, wdtype)
    scales = [np.array(0.1, F32), np.array(0.2, F32)]

    def dense(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return run_op("qnn.dense", [x, w, xz.astype(I32), wz.astype(I32), *scales],
                      units=w.shape[0], out_dtype="int32")

    # the oracle: exact integer arithmetic, over the whole range, extremes included
    x = rand((4, 6), "uint8", 0, 255)
    w = rand((5, 6), wdtype, lo, 127)
    x[0], w[0] = 255, lo  # the largest products, all of one sign
    exact = (x.astype(np.int64) - int(xz)) @ (w.astype(np.int64) - int(wz)).T
    out = dense(x, w)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, exact)
    # onnxruntime as a second oracle, on inputs where it is exact on every CPU
    x = rand((4, 6), "uint8", 0, _ort_exact_range(wdtype))
    (theirs,) = onnx_run("MatMulInteger", [x, np.ascontiguousarray(w.T), xz, wz])
    np.testing.assert_array_equal(dense(x, w), theirs)


def _conv_exact(x: np.ndarray, w: np.ndarray, strides: tuple, padding: tuple,
                dilation: tuple, groups: int) -> np.ndarray:
    """NCHW/OIHW convolution in exact int64 arithmetic, by explicit windows."""
    x = np.pad(x.astype(np.int64), [(0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2])
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow), np.int64)
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dilation[0], i * dilation[0] + strides[0] * (oh - 1) + 1,
                             strides[0])
                cols = slice(j * dilation[1], j * dilation[1] + strides[1] * (ow - 1) + 1,
                             strides[1])
                patch = x[:, g * cg:(g + 1) * cg, rows, cols]
                out[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, i, j].astype(np.int64))
    return out


@pytest.mark.parametrize("attrs", [{}, {"padding": (1, 1), "strides": (2, 2)},
                                   {"groups": 2, "dilation": (2, 1), "padding": (1, 0)}])
def test_qnn_conv2d_vs_convinteger(attrs: dict) -> None:
    g = attrs.get("groups", 1)
    x = rand((1, 4, 7, 6), "uint8", 0, 255)
    w = rand((6, 4 // g, 3, 3), "uint8", 0, 255)
    xz, wz = np.array(100, "uint8"), np.array(7, "uint8")
    out = run_op("qnn.conv2d", [x, w, xz.astype(I32), wz.astype(I32), np.array(0.1, F32),
                                np.array(0.2, F32)], out_dtype="int32", **attrs)
    p = attrs.get("padding", (0, 0))
    (theirs,) = onnx_run("ConvInteger", [x, w, xz, wz], group=g,
                         strides=list(attrs.get("strides", (1, 1))),
                         dilations=list(attrs.get("dilation", (1, 1))),
                         pads=[p[0], p[1], p[0], p[1]])
    exact = _conv_exact(x.astype(np.int64) - 100, w.astype(np.int64) - 7,
                        attrs.get("strides", (1, 1)), p, attrs.get("dilation", (1, 1)), g)
    np.testing.assert_array_equal(out, exact)  # exact integers first
    np.testing.assert_array_equal(out, theirs)  # uint8 x uint8: exact on every CPU


def test_qnn_conv2d_per_channel_zero_point_vs_numpy() -> None:
    x = rand((1, 2, 5, 5), "int8", -128, 127)
    w = rand((3, 2, 2, 2), "int8", -128, 127)
    wz = np.array([1, -2, 3], I32)
    out = run_op("qnn.conv2d", [x, w, np.array(-5, I32), wz, np.array(0.1, F32),
                                np.array([0.2, 0.3, 0.4], F32)])
    ref = run_op("nn.conv2d", [(x.astype(np.int64) + 5),
                               w.astype(np.int64) - wz[:, None, None, None]])
    np.testing.assert_array_equal(out, ref.astype(I32))
    assert out.dtype == np.int32


def test_qnn_relation_errors() -> None:
    s, z = TensorType((), "float32"), TensorType((), "int32")
    rel = get_op("qnn.quantize").relation
    at = make_attrs("qnn.quantize", {"axis": 1})
    assert rel([TensorType((2, 3), "float32"), TensorType((3,), "float32"), z], at) == \
        TensorType((2, 3), "int8")
    for bad in [[TensorType((2, 3), "int8"), s, z], [TensorType((2, 3), "float32"), z, z],
                [TensorType((2, 3), "float32"), TensorType((4,), "float32"), z]]:
        with pytest.raises(RelationError):
            rel(bad, at)
    with pytest.raises(RelationError):
        get_op("qnn.dense").relation([TensorType((2, 3), "int8"), TensorType((4, 5), "int8"),
                                      z, z, s, s], make_attrs("qnn.dense", {}))
    for name, bad in [("qnn.quantize", {"out_dtype": "float32"}),
                      ("qnn.requantize", {"rounding": "DOWN"})]:
        with pytest.raises(AttrError):
            make_attrs(name, bad)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qnn_subtract_vs_float(dtype: str) -> None:
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    a, b = rand((3, 4), dtype, lo, hi), rand((3, 1), dtype, lo, hi)
    params = _qparams(0.05, 3, 0.08, -4, 0.1, 2)
    out = run_op("qnn.subtract", [a, b] + params)
    real = 0.05 * (a.astype(np.float64) - 3) - 0.08 * (b.astype(np.float64) + 4)
    want = np.clip(np.floor(real / 0.1 + 0.5) + 2, lo, hi)
    assert np.abs(out.astype(np.int64) - want).max() <= 1  # rounds each operand
    same = run_op("qnn.subtract", [a, b] + _qparams(0.1, 1, 0.1, 1, 0.1, 1))
    np.testing.assert_array_equal(same, np.clip(a.astype(int) - b + 1, lo, hi))


def _float_unary(name: str, x: np.ndarray) -> np.ndarray:
    """The float op on onnxruntime (rsqrt, which ONNX lacks, as 1 / Sqrt)."""
    if name == "rsqrt":
        return 1 / onnx_run("Sqrt", [x])[0]
    onnx = {"abs": "Abs", "erf": "Erf", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
            "sigmoid": "Sigmoid", "tanh": "Tanh", "hardswish": "HardSwish"}[name]
    return onnx_run(onnx, [x])[0]


UNARY = ["abs", "erf", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "hardswish"]


@pytest.mark.parametrize("name", UNARY)
def test_qnn_unary_vs_onnxruntime(name: str) -> None:
    positive = name in ("log", "sqrt", "rsqrt")
    q = np.arange(0, 256).astype("uint8") if positive else rand((64,), "int8", -128, 127)
    zp, scale, ozp, oscale = (0 if positive else 5), 0.03, 7, 0.02
    args = [q, np.array(scale, F32), np.array(zp, I32), np.array(oscale, F32),
            np.array(ozp, I32)]
    out = run_op(f"qnn.{name}", args)
    real = scale * (q.astype(np.float32) - zp)
    if positive:
        real[q == 0] = 1.0  # keep log/rsqrt finite in the comparison; fixed below
    y = _float_unary(name, real).astype(np.float64)
    info = np.iinfo(q.dtype)
    want = np.clip(np.sign(y / oscale) * np.floor(np.abs(y / oscale) + 0.5) + ozp,
                   info.min, info.max)
    keep = q != 0 if positive else np.ones(q.shape, bool)
    assert np.abs(out[keep].astype(np.int64) - want[keep]).max() <= 1


def test_qnn_leaky_relu_vs_float() -> None:
    q = np.arange(-128, 128).astype("int8")
    args = [q, np.array(0.05, F32), np.array(-3, I32), np.array(0.04, F32),
            np.array(10, I32)]
    out = run_op("qnn.leaky_relu", args, alpha=0.1)
    real = 0.05 * (q.astype(np.float64) + 3)
    y = np.where(real < 0, 0.1 * real, real)
    want = np.clip(np.floor(y / 0.04 + 0.5) + 10, -128, 127)
    assert np.abs(out.astype(np.int64) - want).max() <= 1
    assert (out[q >= -3] == np.clip(np.floor(real[q >= -3] / 0.04 + 0.5) + 10,
                                    -128, 127)).all()


def test_qnn_unary_relation() -> None:
    from relay_ref.ir.types import ANY
    rel = get_op("qnn.tanh").relation
    at = make_attrs("qnn.tanh", {})
    s, z = TensorType((), "float32"), TensorType((), "int32")
    assert rel([TensorType((ANY, 3), "int8"), s, z, s, z], at) == TensorType((ANY, 3), "int8")
    with pytest.raises(RelationError, match="qnn.tanh: data must be int8 or uint8"):
        rel([TensorType((3,), "int32"), s, z, s, z], at)
    with pytest.raises(RelationError, match="qnn.tanh: output_scale must be a float32 scalar"):
        rel([TensorType((3,), "int8"), s, z, TensorType((3,), "float32"), z], at)
    with pytest.raises(RelationError, match="input_zero_point must be a int32 scalar"):
        rel([TensorType((3,), "int8"), s, s, s, z], at)


DIFF_TESTED = {"qnn.quantize", "qnn.dequantize", "qnn.requantize", "qnn.add", "qnn.mul",
               "qnn.dense", "qnn.conv2d", "qnn.subtract", "qnn.leaky_relu"}
DIFF_TESTED |= {f"qnn.{name}" for name in UNARY}


# -- qnn.concatenate, qnn.batch_matmul, qnn.conv2d_transpose, qnn.avg_pool2d ----------------

def _requant(q: np.ndarray, s: float, z: int, os_: float, oz: int, lo: int, hi: int
             ) -> np.ndarray:
    """round_half_up((q - z) * s / os) + oz, clipped: requantize written out."""
    real = (q.astype(np.float64) - z) * np.float64(F32(s)) / np.float64(F32(os_))
    return np.clip(np.floor(real + 0.5) + oz, lo, hi)


def test_qnn_concatenate_vs_formula() -> None:
    a, b = rand((2, 3), "int8", -128, 127), rand((2, 2), "int8", -128, 127)
    scales = (np.array(0.05, F32), np.array(0.2, F32))
    zps = (np.array(3, I32), np.array(-4, I32))
    out = run_op("qnn.concatenate", [(a, b), scales, zps, np.array(0.1, F32),
                                     np.array(1, I32)], axis=1)
    want = np.concatenate([_requant(a, 0.05, 3, 0.1, 1, -128, 127),
                           _requant(b, 0.2, -4, 0.1, 1, -128, 127)], axis=1)
    np.testing.assert_array_equal(out, want)
    assert out.dtype == np.int8
    same = run_op("qnn.concatenate", [(a, a), (scales[0],) * 2, (zps[0],) * 2, scales[0],
                                      zps[0]])
    np.testing.assert_array_equal(same, np.concatenate([a, a]))


def test_qnn_concatenate_relation() -> None:
    from relay_ref.ir.types import ANY, IncompleteType, TupleType
    rel = get_op("qnn.concatenate").relation
    at = make_attrs("qnn.concatenate", {"axis": 1})
    s, z = TensorType((), "float32"), TensorType((), "int32")
    data = TupleType((TensorType((ANY, 3), "uint8"), TensorType((2, ANY), "uint8")))
    assert rel([data, TupleType((s, s)), TupleType((z, z)), s, z], at) == \
        TensorType((2, ANY), "uint8")
    assert rel([data, TupleType((s, IncompleteType())), TupleType((z, z)), s, z],
               at) is NOT_YET
    with pytest.raises(RelationError, match="qnn.concatenate: 2 tensors but 1 scales and 2"):
        rel([data, TupleType((s,)), TupleType((z, z)), s, z], at)
    with pytest.raises(RelationError, match="input_zero_point must be a int32 scalar"):
        rel([data, TupleType((s, s)), TupleType((z, s)), s, z], at)
    with pytest.raises(RelationError, match="qnn.concatenate: field 1 has rank 1"):
        rel([TupleType((TensorType((2, 3), "int8"), TensorType((3,), "int8"))),
             TupleType((s, s)), TupleType((z, z)), s, z], at)
    with pytest.raises(RelationError, match="must be a quantized integer tensor"):
        rel([TupleType((TensorType((2, 3), "float32"),)), TupleType((s,)), TupleType((z,)),
             s, z], at)


@pytest.mark.parametrize("ydtype", ["uint8", "int8"])
def test_qnn_batch_matmul_vs_exact_integers_and_matmulinteger(ydtype: str) -> None:
    lo = 0 if ydtype == "uint8" else -128
    xz, yz = np.array(17, "uint8"), np.array(9, ydtype)

    def batch_matmul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return run_op("qnn.batch_matmul", [x, y, xz.astype(I32), yz.astype(I32),
                                           np.array(0.1, F32), np.array(0.2, F32)])

    x = rand((2, 3, 5), "uint8", 0, 255)
    y = rand((2, 4, 5), ydtype, lo, 127)
    x[0, 0], y[0, 0] = 255, lo
    exact = np.matmul(x.astype(np.int64) - int(xz),
                      (y.astype(np.int64) - int(yz)).transpose(0, 2, 1))
    out = batch_matmul(x, y)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, exact)
    x = rand((2, 3, 5), "uint8", 0, _ort_exact_range(ydtype))
    (theirs,) = onnx_run("MatMulInteger", [x, np.ascontiguousarray(y.transpose(0, 2, 1)),
                                           xz, yz])
    np.testing.assert_array_equal(batch_matmul(x, y), theirs)


def test_qnn_batch_matmul_relation() -> None:
    from relay_ref.ir.types import ANY
    rel = get_op("qnn.batch_matmul").relation
    s, z = TensorType((), "float32"), TensorType((), "int32")
    at = make_attrs("qnn.batch_matmul", {})
    assert rel([TensorType((ANY, 3, 5), "int8"), TensorType((1, 4, 5), "uint8"), z, z, s, s],
               at) == TensorType((ANY, 3, 4), "int32")
    with pytest.raises(RelationError, match="qnn.batch_matmul: reduction dimensions differ"):
        rel([TensorType((2, 3, 5), "int8"), TensorType((2, 4, 6), "int8"), z, z, s, s], at)
    with pytest.raises(RelationError, match="qnn.batch_matmul: x must be int8 or uint8"):
        rel([TensorType((2, 3, 5), "int32"), TensorType((2, 4, 5), "int8"), z, z, s, s], at)
    with pytest.raises(RelationError, match="out_dtype must be int32"):
        rel([TensorType((2, 3, 5), "int8"), TensorType((2, 4, 5), "int8"), z, z, s, s],
            make_attrs("qnn.batch_matmul", {"out_dtype": "int64"}))
    with pytest.raises(RelationError, match="x_scale must be a float32 scalar"):
        rel([TensorType((2, 3, 5), "int8"), TensorType((2, 4, 5), "int8"), z, z,
             TensorType((3,), "float32"), s], at)


@pytest.mark.parametrize("attrs", [{}, {"strides": (2, 2), "padding": (1, 1),
                                        "output_padding": (1, 0)},
                                   {"groups": 2, "dilation": (2, 1)}])
def test_qnn_conv2d_transpose_vs_onnxruntime(attrs: dict) -> None:
    g = attrs.get("groups", 1)
    x = rand((1, 4, 4, 3), "uint8", 0, 255)
    w = rand((4, 3, 3, 2), "int8", -128, 127)
    wz = np.array([2, -1, 5], I32)  # per output channel (O of IOHW)
    out = run_op("qnn.conv2d_transpose", [x, w, np.array(100, I32), wz, np.array(0.1, F32),
                                          np.array([0.2, 0.3, 0.4], F32)], **attrs)
    xs = (x.astype(np.int64) - 100).astype(F32)
    ws = (w.astype(np.int64) - wz[None, :, None, None]).astype(F32)
    p = attrs.get("padding", (0, 0))
    (theirs,) = onnx_run("ConvTranspose", [xs, ws], group=g,
                         strides=list(attrs.get("strides", (1, 1))),
                         dilations=list(attrs.get("dilation", (1, 1))), pads=list(p) * 2,
                         output_padding=list(attrs.get("output_padding", (0, 0))))
    np.testing.assert_array_equal(out, theirs.astype(np.int64))  # exact in float32 here
    assert out.dtype == np.int32 and out.shape[1] == 3 * g


def test_qnn_conv2d_transpose_relation() -> None:
    from relay_ref.ir.types import ANY
    rel = get_op("qnn.conv2d_transpose").relation
    s, z = TensorType((), "float32"), TensorType((), "int32")
    at = make_attrs("qnn.conv2d_transpose", {"strides": (2, 2), "out_dtype": "int64"})
    assert rel([TensorType((1, 4, ANY, 3), "int8"), TensorType((4, 2, 3, 3), "int8"), z, z,
                s, TensorType((2,), "float32")], at) == TensorType((1, 2, ANY, 7), "int64")
    with pytest.raises(RelationError, match="qnn.conv2d_transpose: input has 3 channels"):
        rel([TensorType((1, 3, 4, 4), "int8"), TensorType((4, 2, 3, 3), "int8"), z, z, s, s],
            at)
    with pytest.raises(RelationError, match="weight must be int8 or uint8"):
        rel([TensorType((1, 4, 4, 4), "int8"), TensorType((4, 2, 3, 3), "int16"), z, z, s, s],
            at)
    with pytest.raises(RelationError, match="kernel_scale has 3 values but axis 1"):
        rel([TensorType((1, 4, 4, 4), "int8"), TensorType((4, 2, 3, 3), "int8"), z, z, s,
             TensorType((3,), "float32")], at)
    with pytest.raises(RelationError, match="out_dtype must be int16, int32 or int64"):
        rel([TensorType((1, 4, 4, 4), "int8"), TensorType((4, 2, 3, 3), "int8"), z, z, s, s],
            make_attrs("qnn.conv2d_transpose", {"out_dtype": "float32"}))


@pytest.mark.parametrize("attrs", [{"pool_size": (2, 2)},
                                   {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1)},
                                   {"pool_size": (3, 2), "padding": (1, 0),
                                    "count_include_pad": True, "ceil_mode": True,
                                    "strides": (2, 2)}])
def test_qnn_avg_pool2d_vs_onnxruntime(attrs: dict) -> None:
    q = rand((1, 2, 5, 6), "uint8", 0, 255)
    args = [q, np.array(0.05, F32), np.array(20, I32), np.array(0.08, F32), np.array(7, I32)]
    out = run_op("qnn.avg_pool2d", args, **attrs)
    r = _requant(q, 0.05, 20, 0.08, 7, -(2 ** 31), 2 ** 31 - 1).astype(F32)
    p = attrs.get("padding", (0, 0))
    (mean,) = onnx_run("AveragePool", [r], kernel_shape=list(attrs["pool_size"]),
                       strides=list(attrs.get("strides", (1, 1))), pads=list(p) * 2,
                       ceil_mode=int(attrs.get("ceil_mode", False)),
                       count_include_pad=int(attrs.get("count_include_pad", False)))
    towards_zero = np.sign(mean) * np.floor(np.abs(mean) + 1e-4)  # float32 means of ints
    np.testing.assert_array_equal(out, np.clip(towards_zero, 0, 255))
    assert out.dtype == np.uint8


def test_qnn_avg_pool2d_relation() -> None:
    from relay_ref.ir.types import ANY
    rel = get_op("qnn.avg_pool2d").relation
    s, z = TensorType((), "float32"), TensorType((), "int32")
    at = make_attrs("qnn.avg_pool2d", {"pool_size": (2, 2), "layout": "NHWC"})
    assert rel([TensorType((ANY, 4, 5, 3), "int8"), s, z, s, z], at) == \
        TensorType((ANY, 3, 4, 3), "int8")
    with pytest.raises(RelationError, match="qnn.avg_pool2d: data must be int8 or uint8"):
        rel([TensorType((1, 4, 5, 3), "int32"), s, z, s, z], at)
    with pytest.raises(RelationError, match="output_zero_point must be a int32 scalar"):
        rel([TensorType((1, 4, 5, 3), "int8"), s, z, s, TensorType((1,), "int32")], at)


# -- simulated quantize / dequantize --------------------------------------------------------

@pytest.mark.parametrize("code,dtype", [(1, "int8"), (2, "uint8"), (3, "int32"), (0, None)])
def test_simulated_quantize_dequantize_vs_formula(code: int, dtype: str | None) -> None:
    x = rand((2, 3, 4), low=-30, high=30)
    scale, zp = np.array([0.1, 0.25, 0.05], F32), np.array([3, 0, -2], I32)
    args = [x, np.array(code, I32), scale, zp]
    out = run_op("qnn.simulated_quantize", args, axis=1)
    dq = run_op("qnn.simulated_dequantize", [out, np.array(code, I32), scale, zp], axis=1)
    assert out.dtype == np.float32 and dq.dtype == np.float32
    if dtype is None:
        np.testing.assert_array_equal(out, x)
        np.testing.assert_array_equal(dq, out)
        return
    s, z = scale[None, :, None], zp[None, :, None]
    y = x / s
    info = np.iinfo(dtype)
    want = np.clip(np.sign(y) * np.floor(np.abs(y) + 0.5) + z, info.min, info.max)
    np.testing.assert_array_equal(out, want.astype(F32))
    np.testing.assert_allclose(dq, (want - z) * s, rtol=1e-6)


def test_simulated_relations() -> None:
    from relay_ref.ir.types import ANY
    s, z = TensorType((), "float32"), TensorType((), "int32")
    for name in ("qnn.simulated_quantize", "qnn.simulated_dequantize"):
        rel = get_op(name).relation
        at = make_attrs(name, {"axis": 0})
        assert rel([TensorType((ANY, 3), "float32"), z, TensorType((4,), "float32"), z],
                   at) == TensorType((ANY, 3), "float32")
        with pytest.raises(RelationError, match=f"{name}: data must be a float tensor"):
            rel([TensorType((2, 3), "int8"), z, s, z], at)
        with pytest.raises(RelationError, match="must be an integer scalar"):
            rel([TensorType((2, 3), "float32"), s, s, z], at)
        with pytest.raises(RelationError, match="has 4 values but axis 0 of the data has 2"):
            rel([TensorType((2, 3), "float32"), z, TensorType((4,), "float32"), z], at)


# -- qnn.softmax -------------------------------------------------------------------------

def _softmax_loop(row: list[int], scale: float, zp: int) -> list[int]:
    """Algorithm 1 of arXiv 2207.01405 as TVM's canonicalization writes it, one row,
    Python integers; the result is the int8 value at scale 1/128 before requantizing."""
    x0 = int(math.floor(float(F32(1) / F32(scale)) + 0.5))
    qd = [v - zp for v in row]
    xs = [v - max(qd) for v in qd]
    xps = [x + (x >> 1) - (x >> 4) for x in xs]
    ks = [min(max(int(-xp / x0), 0), 20) for xp in xps]
    exps = [(((xp + k * x0) >> 1) + x0) << (max(ks) - k) for xp, k in zip(xps, ks, strict=True)]
    total = sum(exps)
    return [((1 << 30) // total) * e >> 23 for e in exps]


def test_qnn_softmax_vs_loop_and_float() -> None:
    q = rand((3, 7), "int8", -128, 127)
    scale, zp, os_, oz = 0.06, -5, 1 / 256, -128
    out = run_op("qnn.softmax", [q, np.array(scale, F32), np.array(zp, I32),
                                 np.array(os_, F32), np.array(oz, I32)])
    for i in range(q.shape[0]):
        ints = _softmax_loop([int(v) for v in q[i]], scale, zp)
        want = [min(max(math.floor(v / 128 / os_ + 0.5) + oz, -128), 127) for v in ints]
        assert out[i].tolist() == want
    real = scale * (q.astype(np.float64) - zp)
    soft = np.exp(real - real.max(-1, keepdims=True))
    soft /= soft.sum(-1, keepdims=True)
    assert np.abs(os_ * (out.astype(np.float64) - oz) - soft).max() < 0.05  # approximation
    axis0 = run_op("qnn.softmax", [np.ascontiguousarray(q.T), np.array(scale, F32),
                                   np.array(zp, I32), np.array(os_, F32), np.array(oz, I32)],
                   axis=0)
    np.testing.assert_array_equal(axis0, out.T)
    from relay_ref.ops.registry import OpRuntimeError
    with pytest.raises(OpRuntimeError, match="input_scale must be in"):
        run_op("qnn.softmax", [q, np.array(1.5, F32), np.array(0, I32), np.array(0.1, F32),
                               np.array(0, I32)])


def test_qnn_softmax_relation() -> None:
    from relay_ref.ir.types import ANY
    rel = get_op("qnn.softmax").relation
    s, z = TensorType((), "float32"), TensorType((), "int32")
    at = make_attrs("qnn.softmax", {"axis": 1})
    assert rel([TensorType((ANY, 4), "int8"), s, z, s, z], at) == TensorType((ANY, 4), "int8")
    with pytest.raises(RelationError, match="qnn.softmax: data must be int8, found uint8"):
        rel([TensorType((2, 4), "uint8"), s, z, s, z], at)
    with pytest.raises(RelationError, match="qnn.softmax: axis 1 is out of range"):
        rel([TensorType((4,), "int8"), s, z, s, z], at)


DIFF_TESTED |= {"qnn.concatenate", "qnn.batch_matmul", "qnn.conv2d_transpose",
                "qnn.avg_pool2d", "qnn.simulated_quantize", "qnn.simulated_dequantize",
                "qnn.softmax"}
