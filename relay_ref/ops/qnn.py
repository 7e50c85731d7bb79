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

from relay_ref.ir.shape import dims_compatible
from relay_ref.ir.types import TensorType, Type, has_hole
from relay_ref.ops.nn import (
    AvgPool2DAttrs,
    BatchMatmulAttrs,
    Conv2DAttrs,
    Conv2DTransposeAttrs,
    DenseAttrs,
    SoftmaxAttrs,
    avg_pool2d_ref,
    conv2d_ref,
    conv2d_rel,
    dense_rel,
    pool2d_rel,
)
from relay_ref.ops.registry import (
    NOT_YET,
    AttrError,
    OpRuntimeError,
    RelationError,
    get_op,
    register_op,
)
from relay_ref.ops.relations import (
    as_dtype,
    broadcast_shapes,
    check_arity,
    describe,
    is_float,
    is_int,
    normalize_axis,
    tensor_args,
    tuple_of_tensors,
)
from relay_ref.ops.transform import ConcatenateAttrs

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
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

EXAMPLES["qnn.dense"] = Examples(attrs=({"units": 4},), args=(
    (((2, 3), "int8"), ((4, 3), "int8"), ((), "int32"), ((), "int32"), ((), "float32"),
     ((), "float32")),))
EXAMPLES["qnn.conv2d"] = Examples(args=(
    (((1, 2, 4, 4), "int8"), ((2, 2, 1, 1), "int8"), ((), "int32"), ((), "int32"),
     ((), "float32"), ((), "float32")),))


# -- scalar parameters -------------------------------------------------------------------

def _check_scalar(op: str, t: TensorType, what: str) -> None:
    """TVM's ``IsScalarType``: a float32 scale or an int32 zero point, rank 0."""
    want = "float32" if what.endswith("scale") else "int32"
    if t.ndim != 0 or t.dtype != want:
        raise RelationError(f"{op}: {what} must be a {want} scalar, found {describe(t)}")


def _renamed(op: str, base: str, rel: object, args: list, attrs: object) -> TensorType:
    """Run the float op ``base``'s relation on ``args``; its messages name ``op``."""
    try:
        out = rel(args, attrs)  # type: ignore[operator]
    except RelationError as err:
        raise RelationError(str(err).replace(base, op, 1)) from None
    assert isinstance(out, TensorType)
    return out


# -- qnn.concatenate -------------------------------------------------------------------

_CONCAT_NAMES = ("data", "input_scales", "input_zero_points", "output_scale",
                 "output_zero_point")


def _qnn_concatenate_rel(arg_types: list[Type], attrs: ConcatenateAttrs) -> object:
    """TVM's ``QnnConcatenateRel``: tuples of float32 scales and int32 zero points, one per
    field (checked here; TVM's lowering indexes them), scalar output parameters, then
    ``concatenate``'s relation on the data tuple."""
    op = "qnn.concatenate"
    check_arity(op, arg_types, 5)
    tuples = [tuple_of_tensors(op, arg_types[i], _CONCAT_NAMES[i]) for i in range(3)]
    if any(t is NOT_YET for t in tuples) or any(has_hole(t) for t in arg_types[3:]):
        return NOT_YET
    fields, scales, zps = tuples
    for i in (3, 4):
        if not isinstance(arg_types[i], TensorType):
            raise RelationError(f"{op}: {_CONCAT_NAMES[i]} must be a tensor, found "
                                f"{describe(arg_types[i])}")
        _check_scalar(op, arg_types[i], _CONCAT_NAMES[i])  # type: ignore[arg-type]
    if not (len(fields) == len(scales) == len(zps)):
        raise RelationError(f"{op}: {len(fields)} tensors but {len(scales)} scales and "
                            f"{len(zps)} zero points")
    for s, z in zip(scales, zps, strict=True):
        _check_scalar(op, s, "input_scale")
        _check_scalar(op, z, "input_zero_point")
    for i, f in enumerate(fields):
        if f.dtype not in QDTYPES:
            raise RelationError(f"{op}: field {i} must be a quantized integer tensor, found "
                                f"{f.dtype}")
    return _renamed(op, "concatenate", get_op("concatenate").relation, [arg_types[0]], attrs)


def _qnn_concatenate_ref(args: list, attrs: ConcatenateAttrs) -> Array:
    os_, oz = _f64(args[3], 0, -1), _i64(args[4])
    parts = [requantize(np.asarray(q), _f64(s, 0, -1), _i64(z), os_, oz, "UPWARD",
                        np.asarray(q).dtype.name)
             for q, s, z in zip(args[0], args[1], args[2], strict=True)]
    return np.concatenate(parts, axis=attrs.axis)


register_op("qnn.concatenate", attrs=ConcatenateAttrs, num_inputs=5,
            arg_names=_CONCAT_NAMES, support_level=10, relation=_qnn_concatenate_rel,
            reference=_qnn_concatenate_ref,
            doc="Concatenate quantized tensors along ``axis``: each field is first "
                "requantized from its (scale, zero point) to (output_scale, "
                "output_zero_point) in its own dtype (rounding UPWARD; a no-op when they "
                "are equal), as TVM's canonicalization does.")


# -- qnn.batch_matmul ------------------------------------------------------------------

_BMM_NAMES = ("x", "y", "x_zero_point", "y_zero_point", "x_scale", "y_scale")


def _qnn_batch_matmul_rel(arg_types: list[Type], attrs: BatchMatmulAttrs) -> object:
    """TVM's ``QnnBatchMatmulRel``: int8/uint8 operands, out_dtype int32 (\"\" = int32),
    scalar parameters, then ``nn.batch_matmul``'s relation."""
    op = "qnn.batch_matmul"
    args = tensor_args(op, arg_types, 6, _BMM_NAMES)
    if args is NOT_YET:
        return NOT_YET
    for t, what in zip(args[:2], _BMM_NAMES, strict=False):
        if t.dtype not in ("int8", "uint8"):
            raise RelationError(f"{op}: {what} must be int8 or uint8, found {t.dtype}")
    if attrs.out_dtype not in ("", "int32"):
        raise RelationError(f"{op}: out_dtype must be int32, found {attrs.out_dtype}")
    for t, what in zip(args[2:], _BMM_NAMES[2:], strict=True):
        _check_scalar(op, t, what)
    out = _renamed(op, "nn.batch_matmul", get_op("nn.batch_matmul").relation, args[:2],
                   dataclasses.replace(attrs, out_dtype="int32"))
    return TensorType(out.shape, "int32")


def _qnn_batch_matmul_ref(args: list, attrs: BatchMatmulAttrs) -> Array:
    xs = np.asarray(args[0]).astype(np.int64) - _i64(args[2])
    ys = np.asarray(args[1]).astype(np.int64) - _i64(args[3])
    out = get_op("nn.batch_matmul").reference(
        [xs, ys], dataclasses.replace(attrs, out_dtype="int64"))
    return np.asarray(out).astype(np.int32)


register_op("qnn.batch_matmul", attrs=BatchMatmulAttrs, num_inputs=6, arg_names=_BMM_NAMES,
            support_level=10, relation=_qnn_batch_matmul_rel, reference=_qnn_batch_matmul_ref,
            doc="nn.batch_matmul of (x - x_zero_point) and (y - y_zero_point) (by default y "
                "transposed: (B, M, K) x (B, N, K) -> (B, M, N)) accumulated in int32. The "
                "scales only describe the output (x_scale * y_scale).")


# -- qnn.conv2d_transpose --------------------------------------------------------------

def _qnn_conv2d_transpose_rel(arg_types: list[Type], attrs: Conv2DTransposeAttrs) -> object:
    """TVM's ``QnnConv2DTransposeRel``: (u)int8/(u)int16 data, (u)int8 weight, out_dtype
    int16/int32/int64 (\"\" = int32), scalar input parameters, kernel parameters scalar or
    per output channel (the kernel layout's O axis), then ``nn.conv2d_transpose``'s
    relation."""
    op = "qnn.conv2d_transpose"
    args = tensor_args(op, arg_types, 6, ("data", "weight") + _MM_NAMES)
    if args is NOT_YET:
        return NOT_YET
    data, weight = args[0], args[1]
    if data.dtype not in ("int8", "uint8", "int16", "uint16"):
        raise RelationError(f"{op}: data must be int8, uint8, int16 or uint16, found "
                            f"{data.dtype}")
    if weight.dtype not in ("int8", "uint8"):
        raise RelationError(f"{op}: weight must be int8 or uint8, found {weight.dtype}")
    if attrs.out_dtype not in ("", "int16", "int32", "int64"):
        raise RelationError(f"{op}: out_dtype must be int16, int32 or int64, found "
                            f"{attrs.out_dtype}")
    if weight.ndim != 4:
        raise RelationError(f"{op}: weight must have rank 4, found {describe(weight)}")
    _check_mm_params(op, args, attrs.kernel_layout.index("O"))
    out = _renamed(op, "nn.conv2d_transpose", get_op("nn.conv2d_transpose").relation,
                   args[:2], attrs)
    return TensorType(out.shape, attrs.out_dtype or "int32")


def _qnn_conv2d_transpose_ref(args: list, attrs: Conv2DTransposeAttrs) -> Array:
    xs = np.asarray(args[0]).astype(np.int64) - _i64(args[2])
    ws = np.asarray(args[1]).astype(np.int64) - _i64(args[3], 4, attrs.kernel_layout.index("O"))
    out = get_op("nn.conv2d_transpose").reference(
        [xs, ws], dataclasses.replace(attrs, out_dtype="int64"))
    return np.asarray(out).astype(attrs.out_dtype or "int32")


register_op("qnn.conv2d_transpose", attrs=Conv2DTransposeAttrs, num_inputs=6,
            arg_names=("data", "weight") + _MM_NAMES, support_level=10,
            relation=_qnn_conv2d_transpose_rel, reference=_qnn_conv2d_transpose_ref,
            doc="nn.conv2d_transpose of (data - input_zero_point) and (weight - "
                "kernel_zero_point) accumulated in ``out_dtype`` (\"\" = int32), as TVM's "
                "legalization does; kernel_zero_point may be per output channel.")


# -- qnn.avg_pool2d --------------------------------------------------------------------

_QPOOL_REL = pool2d_rel("qnn.avg_pool2d")


def _qnn_avg_pool2d_rel(arg_types: list[Type], attrs: AvgPool2DAttrs) -> object:
    """TVM's ``QnnAvgPool2DRel``: int8/uint8 data, four scalar parameters, the shape of
    ``nn.avg_pool2d``, the data's dtype."""
    op = "qnn.avg_pool2d"
    args = tensor_args(op, arg_types, 5, _UNARY_NAMES)
    if args is NOT_YET:
        return NOT_YET
    if args[0].dtype not in ("int8", "uint8"):
        raise RelationError(f"{op}: data must be int8 or uint8, found {args[0].dtype}")
    for t, what in zip(args[1:], _UNARY_NAMES[1:], strict=True):
        _check_scalar(op, t, what)
    return _QPOOL_REL([args[0]], attrs)  # type: ignore[operator]


def _qnn_avg_pool2d_ref(args: list, attrs: AvgPool2DAttrs) -> Array:
    q = np.asarray(args[0])
    r = requantize(q, _f64(args[1], 0, -1), _i64(args[2]), _f64(args[3], 0, -1),
                   _i64(args[4]), "UPWARD", "int32")
    return _saturate(avg_pool2d_ref([r], attrs), q.dtype.name)


register_op("qnn.avg_pool2d", attrs=AvgPool2DAttrs, num_inputs=5, arg_names=_UNARY_NAMES,
            support_level=10, relation=_qnn_avg_pool2d_rel, reference=_qnn_avg_pool2d_ref,
            doc="Quantized average pooling (TVM's canonicalization): requantize the data to "
                "(output_scale, output_zero_point) in int32 (rounding UPWARD), nn.avg_pool2d "
                "in int32 (padding is 0 there; the mean rounds towards zero), saturate to the "
                "data's dtype.")


# -- qnn.simulated_quantize / qnn.simulated_dequantize -----------------------------------

#: TOPI's ``SQNN_DTYPE_TO_CODE``: the value of the ``out_dtype`` / ``in_dtype`` argument.
SQNN_CODES = {0: "disable", 1: "int8", 2: "uint8", 3: "int32"}


@dataclass(frozen=True, slots=True)
class SimulatedQuantizeAttrs:
    axis: int = -1


def _simulated_rel(op: str, names: tuple[str, ...]):  # noqa: ANN202 - a relation
    """TVM's ``SimulatedQuantizeRel`` / ``SimulatedDequantizeRel`` (result: the data's
    type), plus what the computation needs: float data, a scalar integer dtype code, float
    scales and integer zero points, each a scalar or per channel along ``axis``."""
    def rel(arg_types: list[Type], attrs: SimulatedQuantizeAttrs) -> object:
        args = tensor_args(op, arg_types, 4, names)
        if args is NOT_YET:
            return NOT_YET
        data, code = args[0], args[1]
        if not is_float(data.dtype):
            raise RelationError(f"{op}: data must be a float tensor, found {data.dtype}")
        if not is_int(code.dtype) or not (code.ndim == 0 or (
                code.ndim == 1 and dims_compatible(code.shape[0], 1))):
            raise RelationError(f"{op}: {names[1]} must be an integer scalar (a dtype code), "
                                f"found {describe(code)}")
        for t, what in zip(args[2:], names[2:], strict=True):
            _check_param(op, t, what, data, attrs.axis)
        return TensorType(data.shape, data.dtype)
    return rel


def _code(x: object) -> str:
    """The dtype a TOPI dtype code names (\"disable\" for 0 and unknown codes)."""
    c = np.asarray(x).reshape(-1)
    return SQNN_CODES.get(int(c[0]), "disable") if c.size else "disable"


def _simulated_quantize_ref(args: list, attrs: SimulatedQuantizeAttrs) -> Array:
    x = np.asarray(args[0])
    dtype = _code(args[1])
    if dtype == "disable":
        return x.copy()
    scale = _param(args[2], x.ndim, attrs.axis).astype(x.dtype)
    zp = _param(args[3], x.ndim, attrs.axis).astype(x.dtype)
    info = np.iinfo(dtype)
    with np.errstate(all="ignore"):
        q = _round(x / scale, "TONEAREST") + zp
    return as_dtype(np.clip(q, info.min, info.max), x.dtype)


def _simulated_dequantize_ref(args: list, attrs: DequantizeAttrs) -> Array:
    x = np.asarray(args[0])
    if _code(args[1]) == "disable":
        return x.copy()
    scale = _param(args[2], x.ndim, attrs.axis).astype(x.dtype)
    zp = _param(args[3], x.ndim, attrs.axis).astype(x.dtype)
    with np.errstate(all="ignore"):
        return as_dtype((x - zp) * scale, x.dtype)


_SQ_NAMES = ("data", "out_dtype", "output_scale", "output_zero_point")
_SDQ_NAMES = ("data", "in_dtype", "input_scale", "input_zero_point")
register_op("qnn.simulated_quantize", attrs=SimulatedQuantizeAttrs, num_inputs=4,
            arg_names=_SQ_NAMES, support_level=10,
            relation=_simulated_rel("qnn.simulated_quantize", _SQ_NAMES),
            reference=_simulated_quantize_ref,
            doc="qnn.quantize kept in float (TOPI's simulated_quantize): with out_dtype code "
                "1 (int8), 2 (uint8) or 3 (int32), clip(round(data / output_scale) + "
                "output_zero_point) to that dtype's range, in the data's float dtype; any "
                "other code (0 = disable) passes the data through. round = half away from "
                "zero; parameters per channel along ``axis``.")
register_op("qnn.simulated_dequantize", attrs=DequantizeAttrs, num_inputs=4,
            arg_names=_SDQ_NAMES, support_level=10,
            relation=_simulated_rel("qnn.simulated_dequantize", _SDQ_NAMES),
            reference=_simulated_dequantize_ref,
            doc="qnn.dequantize on float data (TOPI's simulated_dequantize): with in_dtype "
                "code 1, 2 or 3, (data - input_zero_point) * input_scale in the data's dtype; "
                "any other code passes the data through. ``out_dtype`` is ignored (TVM's "
                "DequantizeAttrs, reused).")


# -- qnn.softmax -----------------------------------------------------------------------

def _qnn_softmax_rel(arg_types: list[Type], attrs: SoftmaxAttrs) -> object:
    """TVM's ``QnnSoftmaxRel``: int8 data, four scalar parameters, the data's type."""
    op = "qnn.softmax"
    args = tensor_args(op, arg_types, 5, _UNARY_NAMES)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    if data.dtype != "int8":
        raise RelationError(f"{op}: data must be int8, found {data.dtype}")
    for t, what in zip(args[1:], _UNARY_NAMES[1:], strict=True):
        _check_scalar(op, t, what)
    normalize_axis(op, attrs.axis, data.ndim)
    return TensorType(data.shape, data.dtype)


_I32_MIN, _I32_MAX = -(2 ** 31), 2 ** 31 - 1


def _int32_checked(x: Array) -> Array:
    if x.size and (x.min() < _I32_MIN or x.max() > _I32_MAX):
        raise OpRuntimeError("qnn.softmax: an intermediate of TVM's int32 lowering overflows "
                             "(too many elements along the axis for this input_scale)")
    return x


def _qnn_softmax_ref(args: list, attrs: SoftmaxAttrs) -> Array:
    q = np.asarray(args[0])
    scale = np.float32(np.asarray(args[1]))
    if not 0 < scale <= 1:
        raise OpRuntimeError(f"qnn.softmax: input_scale must be in (0, 1] for TVM's integer "
                             f"lowering, found {scale}")
    if q.size == 0:
        return q.copy()
    axis = attrs.axis % q.ndim
    x0 = int(_round(np.float32(1) / scale, "TONEAREST"))  # int32(round(1 / scale))
    qd = q.astype(np.int64) - _i64(args[2])
    x = qd - qd.max(axis=axis, keepdims=True)  # <= 0
    xp = x + (x >> 1) - (x >> 4)  # x * log2(e), approximately
    k = np.clip((-xp) // x0, 0, 20)  # x_p / -x_0 rounded towards zero (both signs agree)
    r = xp + k * x0  # x_p = -k * x_0 + r
    exps = _int32_checked(((r >> 1) + x0) << (k.max(axis=axis, keepdims=True) - k))
    sums = _int32_checked(exps.sum(axis=axis, keepdims=True))
    out = _int32_checked(((1 << 30) // sums) * exps) >> (30 - 7)  # sums > 0
    return requantize(out, np.float64(1 / 128), np.int64(0), _f64(args[3], 0, -1),
                      _i64(args[4]), "UPWARD", "int8")


register_op("qnn.softmax", attrs=SoftmaxAttrs, num_inputs=5, arg_names=_UNARY_NAMES,
            support_level=10, relation=_qnn_softmax_rel, reference=_qnn_softmax_ref,
            doc="Quantized softmax as TVM's canonicalization computes it: the integer-only "
                "approximation of arXiv 2207.01405 (Algorithm 1): exponentials as shifted "
                "powers of two (q = 20 at most), 2^30 / sum fixed point, an int8 result at "
                "scale 1/128 requantized to (output_scale, output_zero_point) (rounding "
                "UPWARD). It approximates softmax to a few output units; it is not the float "
                "softmax. input_scale must be in (0, 1]; an int32 overflow in the lowering "
                "is a run-time error.")


# -- test-generation hints for the ops above (relay_ref.testing.programs) ------------------
_F, _I = ((), "float32"), ((), "int32")
EXAMPLES["qnn.concatenate"] = Examples(attrs=({"axis": 1}, {"axis": -1}), args=(
    ([((2, 3), "int8"), ((1, 3), "int8")], [_F, _F], [_I, _I], _F, _I),
    ([((2, 3), "uint8"), ((2, 3), "uint8"), ((2, 1), "uint8")], [_F, _F, _F], [_I, _I, _I],
     _F, _I),
    ([((2, 3), "int8")], [_F], [_I], _F, _I)))
EXAMPLES["qnn.batch_matmul"] = Examples(attrs=({"transpose_b": False},), args=(
    (((2, 2, 3), "int8"), ((2, 4, 3), "int8"), _I, _I, _F, _F),
    (((1, 2, 3), "uint8"), ((1, 3, 2), "uint8"), _I, _I, _F, _F)))
EXAMPLES["qnn.conv2d_transpose"] = Examples(attrs=(
    {"strides": (2, 2)}, {"strides": (2, 2), "output_padding": (1, 1)}, {"padding": (1, 1)},
    {"groups": 2}, {"out_dtype": "int16"}), args=(
    (((1, 2, 3, 3), "int8"), ((2, 2, 2, 2), "int8"), _I, _I, _F, _F),
    (((1, 2, 3, 3), "uint8"), ((2, 1, 2, 2), "uint8"), _I, ((1,), "int32"), _F,
     ((1,), "float32"))))
EXAMPLES["qnn.avg_pool2d"] = Examples(attrs=(
    {"pool_size": (2, 2)}, {"pool_size": (2, 2), "strides": (2, 2)},
    {"pool_size": (3, 3), "padding": (1, 1), "count_include_pad": True},
    {"pool_size": (2, 2), "ceil_mode": True, "strides": (2, 2)},
    {"pool_size": (2, 2), "layout": "NHWC"}), args=(
    (((1, 2, 5, 5), "int8"), _F, _I, _F, _I), (((1, 4, 4, 2), "uint8"), _F, _I, _F, _I)))
