"""Quantized operators (TVM ``src/relay/qnn/op/*.cc``, ``python/tvm/relay/qnn/op/qnn.py``).

A quantized tensor q stands for ``scale * (q - zero_point)``. Scales are float tensors and
zero points integer tensors, each a scalar or a 1-d per-channel vector along ``axis``.
The references compute in float64 / int64 and then round, clip and cast; TVM lowers
requantize to fixed-point arithmetic, which can differ from this exact computation in the
last unit on rare inputs.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.nn import Conv2DAttrs, DenseAttrs, conv2d_ref, conv2d_rel, dense_rel
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, register_op
from relay_ref.ops.relations import (
    broadcast_shapes,
    describe,
    dims_compatible,
    is_float,
    is_int,
    normalize_axis,
    tensor_args,
)

Array = np.ndarray

QDTYPES = ("int8", "uint8", "int16", "uint16", "int32")


def _check_qdtype(dtype: str, key: str = "out_dtype") -> None:
    if dtype not in QDTYPES:
        raise AttrError(f"{key} must be one of {', '.join(QDTYPES)}, found {dtype!r}", key)


def _round(x: Array, rounding: str) -> Array:
    """UPWARD: halves go towards +inf; TONEAREST: halves go away from zero."""
    if rounding == "UPWARD":
        return np.floor(x + 0.5)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _saturate(x: Array, dtype: str) -> Array:
    info = np.iinfo(dtype)
    return np.asarray(np.clip(x, info.min, info.max)).astype(dtype)


def _check_param(op: str, t: TensorType, what: str, data: TensorType, axis: int,
                 per_channel: bool = True) -> None:
    want_float = what.endswith("scale")
    if want_float and not is_float(t.dtype):
        raise RelationError(f"{op}: {what} must be a float tensor, found {t.dtype}")
    if not want_float and not is_int(t.dtype):
        raise RelationError(f"{op}: {what} must be an integer tensor, found {t.dtype}")
    if t.ndim == 0:
        return
    if t.ndim != 1 or not per_channel:
        raise RelationError(f"{op}: {what} must be a scalar"
                            f"{' or a 1-d per-channel tensor' if per_channel else ''}, "
                            f"found {describe(t)}")
    if dims_compatible(t.shape[0], 1):
        return
    ax = normalize_axis(op, axis, data.ndim)
    if not dims_compatible(t.shape[0], data.shape[ax]):
        raise RelationError(f"{op}: {what} has {t.shape[0]} values but axis {ax} of the "
                            f"data has {data.shape[ax]}")


def _param(x: object, ndim: int, axis: int) -> Array:
    """A scalar or per-channel parameter shaped to broadcast against rank-``ndim`` data."""
    p = np.asarray(x)
    if p.ndim == 0 or p.size == 1:
        return p.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = p.shape[0]
    return p.reshape(shape)


def _f64(x: object, ndim: int, axis: int) -> Array:
    return _param(x, ndim, axis).astype(np.float64)


def _i64(x: object, ndim: int = 0, axis: int = -1) -> Array:
    return _param(x, ndim, axis).astype(np.int64)


# -- qnn.quantize / qnn.dequantize -----------------------------------------------------

@dataclass(frozen=True, slots=True)
class QuantizeAttrs:
    out_dtype: str = "int8"
    axis: int = -1

    def __post_init__(self) -> None:
        _check_qdtype(self.out_dtype)


def _quantize_rel(arg_types: list[Type], attrs: QuantizeAttrs) -> object:
    op = "qnn.quantize"
    names = ("data", "output_scale", "output_zero_point")
    args = tensor_args(op, arg_types, 3, names)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    if not is_float(data.dtype):
        raise RelationError(f"{op}: data must be a float tensor, found {data.dtype}")
    for t, what in zip(args[1:], names[1:], strict=True):
        _check_param(op, t, what, data, attrs.axis)
    return TensorType(data.shape, attrs.out_dtype)


def _quantize_ref(args: list, attrs: QuantizeAttrs) -> Array:
    # divide in the data's precision (at least float32), as TVM and onnxruntime do
    x = np.asarray(args[0])
    ftype = np.promote_types(x.dtype, np.float32)
    x = x.astype(ftype)
    scale = _param(args[1], x.ndim, attrs.axis).astype(ftype)
    zp = _i64(args[2], x.ndim, attrs.axis)
    with np.errstate(all="ignore"):
        q = _round(x / scale, "TONEAREST") + zp
    return _saturate(np.nan_to_num(q), attrs.out_dtype)


register_op("qnn.quantize", attrs=QuantizeAttrs, num_inputs=3,
            arg_names=("data", "output_scale", "output_zero_point"), support_level=10,
            relation=_quantize_rel, reference=_quantize_ref,
            doc="clip(round(data / output_scale) + output_zero_point) cast to ``out_dtype``; "
                "round = half away from zero (TVM's ``round``); per-channel parameters "
                "along ``axis``.")


@dataclass(frozen=True, slots=True)
class DequantizeAttrs:
    out_dtype: str = "float32"
    axis: int = -1

    def __post_init__(self) -> None:
        if self.out_dtype not in ("float16", "float32", "float64"):
            raise AttrError(f"out_dtype must be a float dtype, found {self.out_dtype!r}",
                            "out_dtype")


def _dequantize_rel(arg_types: list[Type], attrs: DequantizeAttrs) -> object:
    op = "qnn.dequantize"
    names = ("data", "input_scale", "input_zero_point")
    args = tensor_args(op, arg_types, 3, names)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    if not is_int(data.dtype):
        raise RelationError(f"{op}: data must be an integer tensor, found {data.dtype}")
    for t, what in zip(args[1:], names[1:], strict=True):
        _check_param(op, t, what, data, attrs.axis)
    return TensorType(data.shape, attrs.out_dtype)


def _dequantize_ref(args: list, attrs: DequantizeAttrs) -> Array:
    q = np.asarray(args[0]).astype(np.int64)
    scale, zp = _f64(args[1], q.ndim, attrs.axis), _i64(args[2], q.ndim, attrs.axis)
    return np.asarray((q - zp) * scale).astype(attrs.out_dtype)


register_op("qnn.dequantize", attrs=DequantizeAttrs, num_inputs=3,
            arg_names=("data", "input_scale", "input_zero_point"), support_level=10,
            relation=_dequantize_rel, reference=_dequantize_ref,
            doc="(data - input_zero_point) * input_scale as ``out_dtype``; per-channel "
                "parameters along ``axis``.")


# -- qnn.requantize --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RequantizeAttrs:
    """``rounding``: UPWARD (halves towards +inf, TVM's default) or TONEAREST (halves away
    from zero). ``compute_dtype`` is accepted and ignored (the reference is exact)."""

    axis: int = -1
    rounding: str = "None"
    compute_dtype: str = "None"
    out_dtype: str = "int8"

    def __post_init__(self) -> None:
        if self.rounding not in ("None", "UPWARD", "TONEAREST"):
            raise AttrError(f"rounding must be UPWARD or TONEAREST, found "
                            f"{self.rounding!r}", "rounding")
        _check_qdtype(self.out_dtype)


def _requantize_rel(arg_types: list[Type], attrs: RequantizeAttrs) -> object:
    op = "qnn.requantize"
    names = ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point")
    args = tensor_args(op, arg_types, 5, names)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    if not is_int(data.dtype):
        raise RelationError(f"{op}: data must be an integer tensor, found {data.dtype}")
    for t, what in zip(args[1:], names[1:], strict=True):
        _check_param(op, t, what, data, attrs.axis)
    return TensorType(data.shape, attrs.out_dtype)


def requantize(q: Array, in_scale: Array, in_zp: Array, out_scale: Array, out_zp: Array,
               rounding: str, out_dtype: str | None) -> Array:
    """round((q - in_zp) * in_scale / out_scale) + out_zp, saturated to ``out_dtype``
    (int64, unsaturated, when ``out_dtype`` is None)."""
    with np.errstate(all="ignore"):
        r = _round((q.astype(np.int64) - in_zp) * (in_scale / out_scale), rounding)
    r = np.nan_to_num(r, posinf=2.0 ** 62, neginf=-(2.0 ** 62))
    out = np.clip(r, -(2.0 ** 62), 2.0 ** 62).astype(np.int64) + out_zp
    return out if out_dtype is None else _saturate(out, out_dtype)


def _requantize_ref(args: list, attrs: RequantizeAttrs) -> Array:
    q = np.asarray(args[0])
    n, ax = q.ndim, attrs.axis
    rounding = "UPWARD" if attrs.rounding == "None" else attrs.rounding
    return requantize(q, _f64(args[1], n, ax), _i64(args[2], n, ax), _f64(args[3], n, ax),
                      _i64(args[4], n, ax), rounding, attrs.out_dtype)


register_op("qnn.requantize", attrs=RequantizeAttrs, num_inputs=5,
            arg_names=("data", "input_scale", "input_zero_point", "output_scale",
                       "output_zero_point"), support_level=10,
            relation=_requantize_rel, reference=_requantize_ref,
            doc="clip(round((data - input_zero_point) * input_scale / output_scale) + "
                "output_zero_point) as ``out_dtype``; ``rounding`` UPWARD (default) or "
                "TONEAREST.")


# -- qnn.add / qnn.mul -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class QnnBinaryOpAttrs:
    lhs_axis: int = -1
    rhs_axis: int = -1


_BIN_NAMES = ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point",
              "output_scale", "output_zero_point")


def _qnn_binary_rel(op: str):  # noqa: ANN202 - a relation
    def rel(arg_types: list[Type], attrs: QnnBinaryOpAttrs) -> object:
        args = tensor_args(op, arg_types, 8, _BIN_NAMES)
        if args is NOT_YET:
            return NOT_YET
        lhs, rhs = args[0], args[1]
        if lhs.dtype != rhs.dtype:
            raise RelationError(f"{op}: dtypes differ: {lhs.dtype} vs {rhs.dtype}")
        if lhs.dtype not in QDTYPES:
            raise RelationError(f"{op}: operands must be quantized integers, found "
                                f"{lhs.dtype}")
        shape = broadcast_shapes(op, lhs.shape, rhs.shape)
        _check_param(op, args[2], "lhs_scale", lhs, attrs.lhs_axis)
        _check_param(op, args[3], "lhs_zero_point", lhs, attrs.lhs_axis)
        _check_param(op, args[4], "rhs_scale", rhs, attrs.rhs_axis)
        _check_param(op, args[5], "rhs_zero_point", rhs, attrs.rhs_axis)
        _check_param(op, args[6], "output_scale", lhs, -1, per_channel=False)
        _check_param(op, args[7], "output_zero_point", lhs, -1, per_channel=False)
        return TensorType(shape, lhs.dtype)
    return rel


def _bin_params(args: list, attrs: QnnBinaryOpAttrs) -> tuple:
    lhs, rhs = np.asarray(args[0]), np.asarray(args[1])
    la, ra = attrs.lhs_axis, attrs.rhs_axis
    return (lhs, rhs, _f64(args[2], lhs.ndim, la), _i64(args[3], lhs.ndim, la),
            _f64(args[4], rhs.ndim, ra), _i64(args[5], rhs.ndim, ra), _f64(args[6], 0, -1),
            _i64(args[7]))


def _qnn_add_ref(args: list, attrs: QnnBinaryOpAttrs) -> Array:
    lhs, rhs, ls, lz, rs, rz, os_, oz = _bin_params(args, attrs)
    a = requantize(lhs, ls, lz, os_, oz, "UPWARD", None)
    b = requantize(rhs, rs, rz, os_, oz, "UPWARD", None)
    return _saturate(a + b - oz, lhs.dtype.name)


def _qnn_mul_ref(args: list, attrs: QnnBinaryOpAttrs) -> Array:
    lhs, rhs, ls, lz, rs, rz, os_, oz = _bin_params(args, attrs)
    prod = (lhs.astype(np.int64) - lz) * (rhs.astype(np.int64) - rz)
    return requantize(prod, ls * rs, np.int64(0), os_, oz, "UPWARD", lhs.dtype.name)


register_op("qnn.add", attrs=QnnBinaryOpAttrs, num_inputs=8, arg_names=_BIN_NAMES,
            support_level=10, relation=_qnn_binary_rel("qnn.add"),
            reference=_qnn_add_ref,
            doc="Quantized addition: requantize lhs and rhs to (output_scale, "
                "output_zero_point) (rounding UPWARD), add, subtract output_zero_point, "
                "saturate to the operands' dtype. Broadcasting as ``add``.")
register_op("qnn.mul", attrs=QnnBinaryOpAttrs, num_inputs=8, arg_names=_BIN_NAMES,
            support_level=10, relation=_qnn_binary_rel("qnn.mul"), reference=_qnn_mul_ref,
            doc="Quantized multiplication: (lhs - lhs_zero_point) * (rhs - rhs_zero_point) "
                "requantized from scale lhs_scale * rhs_scale to (output_scale, "
                "output_zero_point) (rounding UPWARD), saturated to the operands' dtype.")


# -- qnn.dense / qnn.conv2d ------------------------------------------------------------

_MM_NAMES = ("input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale")


def _check_mm_params(op: str, args: list[TensorType], out_axis: int) -> None:
    data, weight = args[0], args[1]
    if data.dtype not in QDTYPES or weight.dtype not in QDTYPES:
        raise RelationError(f"{op}: data and weight must be quantized integers, found "
                            f"{data.dtype} and {weight.dtype}")
    _check_param(op, args[2], "input_zero_point", data, -1, per_channel=False)
    _check_param(op, args[3], "kernel_zero_point", weight, out_axis)
    _check_param(op, args[4], "input_scale", data, -1, per_channel=False)
    _check_param(op, args[5], "kernel_scale", weight, out_axis)


def _qnn_dense_rel(arg_types: list[Type], attrs: DenseAttrs) -> object:
    op = "qnn.dense"
    args = tensor_args(op, arg_types, 6, ("data", "weight") + _MM_NAMES)
    if args is NOT_YET:
        return NOT_YET
    _check_mm_params(op, args, 0)
    try:
        out = dense_rel(args[:2], attrs)
    except RelationError as err:
        raise RelationError(str(err).replace("nn.dense", op, 1)) from None
    assert isinstance(out, TensorType)
    return TensorType(out.shape, attrs.out_dtype or "int32")


def _qnn_dense_ref(args: list, attrs: DenseAttrs) -> Array:
    x, w = np.asarray(args[0]), np.asarray(args[1])
    xs = x.astype(np.int64) - _i64(args[2])
    ws = w.astype(np.int64) - _i64(args[3], 2, 0)
    out = np.matmul(xs, ws.T)
    return out.astype(attrs.out_dtype or "int32")


register_op("qnn.dense", attrs=DenseAttrs, num_inputs=6, arg_names=("data", "weight")
            + _MM_NAMES, support_level=10, relation=_qnn_dense_rel,
            reference=_qnn_dense_ref,
            doc="(data - input_zero_point) @ (weight - kernel_zero_point).T accumulated in "
                "``out_dtype`` (\"\" = int32); kernel_zero_point may be per output unit. "
                "The scales only describe the output (input_scale * kernel_scale).")


def _qnn_conv2d_rel(arg_types: list[Type], attrs: Conv2DAttrs) -> object:
    op = "qnn.conv2d"
    args = tensor_args(op, arg_types, 6, ("data", "weight") + _MM_NAMES)
    if args is NOT_YET:
        return NOT_YET
    if args[1].ndim != 4 or len(attrs.kernel_layout) != 4:
        raise RelationError(f"{op}: weight must have rank 4, found {describe(args[1])}")
    _check_mm_params(op, args, attrs.kernel_layout.index("O"))
    try:
        out = conv2d_rel(args[:2], attrs)
    except RelationError as err:
        raise RelationError(str(err).replace("nn.conv2d", op, 1)) from None
    assert isinstance(out, TensorType)
    return TensorType(out.shape, attrs.out_dtype or "int32")


def _qnn_conv2d_ref(args: list, attrs: Conv2DAttrs) -> Array:
    x, w = np.asarray(args[0]), np.asarray(args[1])
    xs = x.astype(np.int64) - _i64(args[2])
    ws = w.astype(np.int64) - _i64(args[3], 4, attrs.kernel_layout.index("O"))
    out = conv2d_ref([xs, ws], dataclasses.replace(attrs, out_dtype="int64"))
    return out.astype(attrs.out_dtype or "int32")


register_op("qnn.conv2d", attrs=Conv2DAttrs, num_inputs=6, arg_names=("data", "weight")
            + _MM_NAMES, support_level=10, relation=_qnn_conv2d_rel,
            reference=_qnn_conv2d_ref,
            doc="nn.conv2d of (data - input_zero_point) and (weight - kernel_zero_point) "
                "accumulated in ``out_dtype`` (\"\" = int32): padding contributes "
                "input_zero_point, i.e. nothing. kernel_zero_point may be per output "
                "channel.")


# -- qnn.subtract ----------------------------------------------------------------------

def _qnn_subtract_ref(args: list, attrs: QnnBinaryOpAttrs) -> Array:
    lhs, rhs, ls, lz, rs, rz, os_, oz = _bin_params(args, attrs)
    a = requantize(lhs, ls, lz, os_, oz, "UPWARD", None)
    b = requantize(rhs, rs, rz, os_, oz, "UPWARD", None)
    return _saturate(a - b + oz, lhs.dtype.name)


register_op("qnn.subtract", attrs=QnnBinaryOpAttrs, num_inputs=8, arg_names=_BIN_NAMES,
            support_level=10, relation=_qnn_binary_rel("qnn.subtract"),
            reference=_qnn_subtract_ref,
            doc="Quantized subtraction: requantize lhs and rhs to (output_scale, "
                "output_zero_point) (rounding UPWARD), subtract, add output_zero_point, "
                "saturate to the operands' dtype. Broadcasting as ``subtract``.")


# -- unary ops: qnn.leaky_relu and dequantize -> f -> quantize ----------------------------

_UNARY_NAMES = ("data", "input_scale", "input_zero_point", "output_scale",
                "output_zero_point")


def _qnn_unary_rel(op: str):  # noqa: ANN202 - a relation
    """TVM's ``QnnElementwiseUnaryFuncRel``: int8/uint8 data, four scalar parameters
    (float32 scales, int32 zero points); the result has the data's type."""
    def rel(arg_types: list[Type], attrs: object) -> object:
        args = tensor_args(op, arg_types, 5, _UNARY_NAMES)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        if data.dtype not in ("int8", "uint8"):
            raise RelationError(f"{op}: data must be int8 or uint8, found {data.dtype}")
        for t, what in zip(args[1:], _UNARY_NAMES[1:], strict=True):
            want = "float32" if what.endswith("scale") else "int32"
            if t.ndim != 0 or t.dtype != want:
                raise RelationError(f"{op}: {what} must be a {want} scalar, found "
                                    f"{describe(t)}")
        return TensorType(data.shape, data.dtype)
    return rel


def _erf(x: Array) -> Array:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


_FLOAT_FUNCS = {
    "abs": np.abs, "erf": _erf, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh, "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
}


def _qnn_unary_ref(fn: object):  # noqa: ANN202 - a reference
    def ref(args: list, attrs: object) -> Array:
        q = np.asarray(args[0])
        real = _dequantize_ref(list(args[:3]), DequantizeAttrs())
        with np.errstate(all="ignore"):
            out = np.asarray(fn(real.astype(np.float64))).astype(np.float32)  # type: ignore
        return _quantize_ref([out, args[3], args[4]], QuantizeAttrs(out_dtype=q.dtype.name))
    return ref


for _name, _fn in _FLOAT_FUNCS.items():
    register_op(f"qnn.{_name}", num_inputs=5, arg_names=_UNARY_NAMES, support_level=10,
                relation=_qnn_unary_rel(f"qnn.{_name}"), reference=_qnn_unary_ref(_fn),
                doc=f"Quantized {_name}: dequantize the data with (input_scale, "
                    f"input_zero_point) to float32, apply {_name}, quantize with "
                    f"(output_scale, output_zero_point) to the data's dtype (TVM's "
                    f"canonical lowering).")


@dataclass(frozen=True, slots=True)
class QnnLeakyReluAttrs:
    alpha: float = 0.25


def _qnn_leaky_relu_ref(args: list, attrs: QnnLeakyReluAttrs) -> Array:
    q = np.asarray(args[0])
    zp_in, zp_out = _i64(args[2]), _i64(args[4])
    r = requantize(q, _f64(args[1], 0, -1), zp_in, _f64(args[3], 0, -1), zp_out, "UPWARD",
                   None)
    neg = _round(attrs.alpha * r + (1 - attrs.alpha) * zp_out, "UPWARD").astype(np.int64)
    return _saturate(np.where(q.astype(np.int64) < zp_in, neg, r), q.dtype.name)


register_op("qnn.leaky_relu", attrs=QnnLeakyReluAttrs, num_inputs=5, arg_names=_UNARY_NAMES,
            support_level=10, relation=_qnn_unary_rel("qnn.leaky_relu"),
            reference=_qnn_leaky_relu_ref,
            doc="Quantized leaky relu: r = requantize(data) to the output parameters; "
                "where data < input_zero_point, round(alpha * r + (1 - alpha) * "
                "output_zero_point), else r; saturated to the data's dtype. (TVM rounds the "
                "two products separately in fixed point: one unit apart on rare inputs.)")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import set_examples as _set_examples  # noqa: E402

_set_examples("qnn.dense", attrs=({"units": 4},), args=(
    (((2, 3), "int8"), ((4, 3), "int8"), ((), "int32"), ((), "int32"), ((), "float32"),
     ((), "float32")),))
_set_examples("qnn.conv2d", args=(
    (((1, 2, 4, 4), "int8"), ((2, 2, 1, 1), "int8"), ((), "int32"), ((), "int32"),
     ((), "float32"), ((), "float32")),))
