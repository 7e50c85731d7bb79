"""The exporter table: Relay operator name -> ``Exporter`` (ops as data; ``export.py``
walks the program, this module says what each operator becomes in ONNX).

Each ``supports`` predicate accepts exactly the attribute values the emitted ONNX nodes
compute the same way (Relay's semantics, ``relay_ref/ops``): e.g. ``nn.conv2d`` only in
NCHW/OIHW, ``nn.lrn`` with an odd window, ``divide`` on floats only (integer division
rounds differently). Shapes are static (``export.py`` checks), so shape-changing
operators (reshape, squeeze, expand_dims, batch_flatten) become a ``Reshape`` to the
checked output shape.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relay_ref.frontend.onnx.export_graph import Exporter, OnnxGraph, Value, onnx_dtype
from relay_ref.ir.call_info import CallInfo
from relay_ref.ir.types import TensorType
from relay_ref.ops.nn import pad4

__all__ = ["EXPORTERS"]

EXPORTERS: dict[str, Exporter] = {}

_FLOATS = ("float16", "float32", "float64")


def _reg(op: str, emit: Callable[[OnnxGraph, CallInfo, list[Value]], Value],
         supports: Callable[[CallInfo], bool] | None = None) -> None:
    EXPORTERS[op] = Exporter(emit, supports)


def _t(info: CallInfo, i: int | None = None) -> TensorType:
    t = info.type if i is None else info.arg_types[i]
    assert isinstance(t, TensorType)
    return t


def _shape(info: CallInfo, i: int | None = None) -> tuple[int, ...]:
    return tuple(int(d) for d in _t(info, i).shape)


def _ndim(info: CallInfo, i: int = 0) -> int:
    return len(_t(info, i).shape)


def _float_args(info: CallInfo) -> bool:
    return all(isinstance(t, TensorType) and t.dtype in _FLOATS for t in info.arg_types)


def _same_out(info: CallInfo) -> bool:
    out = getattr(info.attrs, "out_dtype", "")
    return not out or out == _t(info, 0).dtype


def _attr(info: CallInfo, name: str, default: object = None) -> object:
    return getattr(info.attrs, name, default)


# -- elementwise --------------------------------------------------------------------------

def _simple(onnx_op: str, **attrs: object) -> Callable[[OnnxGraph, CallInfo, list[Value]],
                                                        Value]:
    def emit(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
        return g.node(onnx_op, list(ins), **attrs)
    return emit


for _op, _onnx in {"nn.relu": "Relu", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
                   "tanh": "Tanh", "sigmoid": "Sigmoid", "erf": "Erf", "floor": "Floor",
                   "ceil": "Ceil", "sin": "Sin", "cos": "Cos"}.items():
    _reg(_op, _simple(_onnx), _float_args)
for _op, _onnx in {"negative": "Neg", "abs": "Abs", "copy": "Identity"}.items():
    _reg(_op, _simple(_onnx))
for _op, _onnx in {"add": "Add", "subtract": "Sub", "multiply": "Mul", "maximum": "Max",
                   "minimum": "Min", "equal": "Equal", "less": "Less", "greater": "Greater",
                   "less_equal": "LessOrEqual", "greater_equal": "GreaterOrEqual",
                   "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor",
                   "logical_not": "Not", "where": "Where"}.items():
    _reg(_op, _simple(_onnx))
_reg("divide", _simple("Div"), _float_args)
_reg("power", _simple("Pow"), _float_args)


def _rsqrt(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    return g.node("Reciprocal", [g.node("Sqrt", ins)])


def _not_equal(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    return g.node("Not", [g.node("Equal", ins)])


def _clip(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    dtype = _t(info, 0).dtype
    lo, hi = g.const(info.attrs.a_min, dtype), g.const(info.attrs.a_max, dtype)
    # TVM: max(min(x, a_max), a_min) (a_min wins when a_min > a_max)
    return g.node("Max", [g.node("Min", [ins[0], hi]), lo])


def _leaky_relu(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    return g.node("LeakyRelu", ins, alpha=float(info.attrs.alpha))


def _cast(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    return g.node("Cast", ins, to=onnx_dtype(_t(info).dtype, info.expr))


_reg("rsqrt", _rsqrt, _float_args)
_reg("not_equal", _not_equal)
_reg("clip", _clip, lambda i: _t(i, 0).dtype in _FLOATS)
_reg("nn.leaky_relu", _leaky_relu, _float_args)
_reg("cast", _cast)


# -- shape --------------------------------------------------------------------------------

def _to_shape(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    return g.node("Reshape", [ins[0], g.ints(_shape(info))])


for _op in ("reshape", "squeeze", "expand_dims", "nn.batch_flatten", "reshape_like"):
    _reg(_op, _to_shape)


def _transpose(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    axes = info.attrs.axes
    n = _ndim(info)
    perm = list(range(n))[::-1] if axes is None else [int(a) % n for a in axes]
    return g.node("Transpose", ins, perm=perm)


def _concat(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    return g.node("Concat", list(ins[0]), axis=int(info.attrs.axis) % len(_shape(info)))


def _split(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    shape = _shape(info, 0)
    axis = int(info.attrs.axis) % len(shape)
    outs = info.type.fields  # type: ignore[union-attr]
    sizes = [int(t.shape[axis]) for t in outs]
    names = g.node("Split", [ins[0], g.ints(sizes)], outputs=len(sizes), axis=axis)
    return names if isinstance(names, tuple) else (names,)


def _take_ok(info: CallInfo) -> bool:
    if int(info.attrs.batch_dims) != 0 or info.attrs.mode not in ("clip", "fast", "wrap"):
        return False
    # "wrap" over an empty dimension raises in the reference; Mod by 0 does not
    return info.attrs.mode != "wrap" or _take_extent(info) > 0


def _take_extent(info: CallInfo) -> int:
    shape = _shape(info, 0)
    axis = info.attrs.axis
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    return shape[int(axis) % len(shape)]


def _take(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    data, idx = ins
    shape = _shape(info, 0)
    axis = info.attrs.axis
    if axis is None:
        data = g.node("Reshape", [data, g.ints([-1])])
        n, axis = int(np.prod(shape, dtype=np.int64)), 0
    else:
        axis = int(axis) % len(shape)
        n = shape[axis]
    idx = g.node("Cast", [idx], to=7)  # int64
    # the modes as relay_ref's take: "clip" clamps to [0, n-1], "wrap" is Python's modulo
    # (Mod with fmod=0 takes the divisor's sign), "fast" lets Gather take [-n, n) as the
    # reference does (idx + n for a negative one) and fail on any other index as it does
    if info.attrs.mode == "clip":
        idx = g.node("Clip", [idx, g.ints(0), g.ints(max(n - 1, 0))])
    elif info.attrs.mode == "wrap":
        idx = g.node("Mod", [idx, g.ints(n)], fmod=0)
    return g.node("Gather", [data, idx], axis=axis)


def _strided_ok(info: CallInfo) -> bool:
    return info.attrs.slice_mode == "end" and _slices(info) is not None


def _slices(info: CallInfo) -> list[tuple[int, int, int, int]] | None:
    """(axis, start, end, step) per sliced axis, computed from Relay's clamping rules;
    None when the result disagrees with the checked output shape."""
    shape, out = _shape(info, 0), _shape(info)
    a = info.attrs
    axes = list(a.axes) if a.axes is not None else list(range(len(a.begin)))
    strides = list(a.strides) if a.strides else [1] * len(axes)
    if len(strides) == 1 and len(axes) > 1:
        strides = strides * len(axes)
    result = []
    for k, ax in enumerate(axes):
        ax = int(ax) % len(shape)
        n = shape[ax]
        b = int(a.begin[k])
        e = int(a.end[k]) if k < len(a.end) else (n if strides[k] > 0 else -n - 1)
        s = int(strides[k]) if k < len(strides) else 1
        if s == 0:
            return None
        picked = np.arange(n)[slice(b, e, s)] if not (s < 0 and e < -n) else \
            np.arange(n)[slice(b, None, s)]
        if len(picked) != out[ax]:
            return None
        if len(picked) == 0:
            result.append((ax, 0, 0, 1))
            continue
        end = int(picked[-1]) + s
        result.append((ax, int(picked[0]), end if end >= 0 else -(2**62), s))
    return result


def _strided_slice(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    sl = _slices(info) or []
    if not sl:
        return g.node("Identity", ins)
    cols = list(zip(*sl, strict=True))
    return g.node("Slice", [ins[0], g.ints(cols[1]), g.ints(cols[2]), g.ints(cols[0]),
                            g.ints(cols[3])])


def _pad_ok(info: CallInfo) -> bool:
    return info.attrs.pad_mode == "constant"


def _pad(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    widths = [tuple(int(v) for v in p) for p in info.attrs.pad_width]
    pads = [p[0] for p in widths] + [p[1] for p in widths]
    dtype = _t(info, 0).dtype
    if len(ins) > 1:
        value = g.node("Cast", [ins[1]], to=_dtype_code(dtype))
    else:
        fill = info.attrs.pad_value
        value = g.const(0 if fill is None else fill, dtype)
    return g.node("Pad", [ins[0], g.ints(pads), value], mode="constant")


def _dtype_code(dtype: str) -> int:
    return onnx_dtype(dtype)


def _full(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    out = _t(info)
    fill = g.node("Cast", [ins[0]], to=_dtype_code(out.dtype))
    return g.node("Expand", [fill, g.ints(_shape(info))])


def _init(value: int) -> Callable[[OnnxGraph, CallInfo, list[Value]], Value]:
    def emit(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
        return g.node("Expand", [g.const(value, _t(info).dtype), g.ints(_shape(info))])
    return emit


_reg("transpose", _transpose)
_reg("concatenate", _concat)
_reg("split", _split)
_reg("take", _take, _take_ok)
_reg("strided_slice", _strided_slice, _strided_ok)
_reg("nn.pad", _pad, _pad_ok)
_reg("full", _full)
_reg("zeros", _init(0))
_reg("ones", _init(1))


# -- reductions ---------------------------------------------------------------------------

def _reduce(onnx_op: str) -> Callable[[OnnxGraph, CallInfo, list[Value]], Value]:
    def emit(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
        n = _ndim(info)
        a = info.attrs
        axes = set(range(n)) if a.axis is None else {int(x) % n for x in a.axis}
        if a.exclude:
            axes = set(range(n)) - axes
        if not axes:
            return g.node("Identity", ins)
        keep = int(bool(a.keepdims))
        ordered = sorted(axes)
        if onnx_op == "ReduceSum" or g.opset >= 18:
            return g.node(onnx_op, [ins[0], g.ints(ordered)], keepdims=keep)
        return g.node(onnx_op, ins, axes=ordered, keepdims=keep)
    return emit


for _op, _onnx in {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax",
                   "min": "ReduceMin", "prod": "ReduceProd"}.items():
    _reg(_op, _reduce(_onnx), lambda i: _ndim(i) > 0)


# -- neural network -----------------------------------------------------------------------

def _conv_ok(info: CallInfo) -> bool:
    a = info.attrs
    return (a.data_layout == "NCHW" and a.kernel_layout == "OIHW"
            and a.out_layout in ("", "NCHW") and _same_out(info) and _float_args(info))


def _conv2d(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    a = info.attrs
    kernel = list(_shape(info, 1)[2:])
    return g.node("Conv", ins, kernel_shape=kernel, strides=list(a.strides),
                  dilations=list(a.dilation), pads=list(pad4(a.padding)), group=int(a.groups))


def _pool_ok(info: CallInfo) -> bool:
    a = info.attrs
    return a.layout == "NCHW" and a.out_layout in ("", "NCHW") and _float_args(info) \
        and not a.ceil_mode


def _max_pool(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    a = info.attrs
    return g.node("MaxPool", ins, kernel_shape=list(a.pool_size), strides=list(a.strides),
                  dilations=list(a.dilation), pads=list(pad4(a.padding)))


def _avg_pool_ok(info: CallInfo) -> bool:
    return _pool_ok(info) and tuple(info.attrs.dilation) == (1, 1)


def _avg_pool(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    a = info.attrs
    return g.node("AveragePool", ins, kernel_shape=list(a.pool_size),
                  strides=list(a.strides), pads=list(pad4(a.padding)),
                  count_include_pad=int(bool(a.count_include_pad)))


def _global_ok(info: CallInfo) -> bool:
    return info.attrs.layout == "NCHW" and _float_args(info)


def _batch_norm_ok(info: CallInfo) -> bool:
    return int(info.attrs.axis) % _ndim(info, 0) == 1 and _ndim(info, 0) >= 2 \
        and _float_args(info)


def _batch_norm(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    a = info.attrs
    x, gamma, beta, mean, var = ins
    dtype = _t(info, 1).dtype
    c = _shape(info, 1)
    if not a.scale:
        gamma = g.const(np.ones(c, dtype))
    if not a.center:
        beta = g.const(np.zeros(c, dtype))
    out = g.node("BatchNormalization", [x, gamma, beta, mean, var],
                 epsilon=float(a.epsilon))
    return (out, g.node("Identity", [mean]), g.node("Identity", [var]))


def _bias_add(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    n = _ndim(info, 0)
    axis = int(info.attrs.axis) % n
    c = _shape(info, 1)[0]
    bias = g.node("Reshape", [ins[1], g.ints([c] + [1] * (n - axis - 1))])
    return g.node("Add", [ins[0], bias])


def _dense(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    if _ndim(info, 0) == 2:
        return g.node("Gemm", ins, transB=1)
    return g.node("MatMul", [ins[0], g.node("Transpose", [ins[1]], perm=[1, 0])])


def _matmul(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    a, b = ins
    if info.attrs.transpose_a:
        a = g.node("Transpose", [a], perm=[1, 0])
    if info.attrs.transpose_b:
        b = g.node("Transpose", [b], perm=[1, 0])
    return g.node("MatMul", [a, b])


def _batch_matmul(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    a, b = ins
    if info.attrs.transpose_a:
        a = g.node("Transpose", [a], perm=[0, 2, 1])
    if info.attrs.transpose_b:
        b = g.node("Transpose", [b], perm=[0, 2, 1])
    return g.node("MatMul", [a, b])


def _softmax(onnx_op: str) -> Callable[[OnnxGraph, CallInfo, list[Value]], Value]:
    def emit(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
        return g.node(onnx_op, ins, axis=int(info.attrs.axis))
    return emit


def _lrn_ok(info: CallInfo) -> bool:
    return int(info.attrs.axis) % _ndim(info, 0) == 1 and info.attrs.size % 2 == 1 \
        and _ndim(info, 0) >= 3 and _float_args(info)


def _lrn(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    a = info.attrs
    return g.node("LRN", ins, size=int(a.size), alpha=float(a.alpha), beta=float(a.beta),
                  bias=float(a.bias))


def _dropout(g: OnnxGraph, info: CallInfo, ins: list[Value]) -> Value:
    return (g.node("Identity", ins),
            g.node("Expand", [g.const(1, _t(info, 0).dtype), g.ints(_shape(info, 0))]))


_reg("nn.conv2d", _conv2d, _conv_ok)
_reg("nn.max_pool2d", _max_pool, _pool_ok)
_reg("nn.avg_pool2d", _avg_pool, _avg_pool_ok)
_reg("nn.global_avg_pool2d", _simple("GlobalAveragePool"), _global_ok)
_reg("nn.global_max_pool2d", _simple("GlobalMaxPool"), _global_ok)
_reg("nn.batch_norm", _batch_norm, _batch_norm_ok)
_reg("nn.bias_add", _bias_add)
_reg("nn.dense", _dense, lambda i: _same_out(i) and _float_args(i))
_reg("nn.matmul", _matmul,
     lambda i: _same_out(i) and _float_args(i) and _ndim(i) == _ndim(i, 1) == 2)
_reg("nn.batch_matmul", _batch_matmul,
     lambda i: _same_out(i) and _float_args(i) and _ndim(i, 0) == 3 and _ndim(i, 1) == 3)
_reg("nn.softmax", _softmax("Softmax"), _float_args)
_reg("nn.log_softmax", _softmax("LogSoftmax"), _float_args)
_reg("nn.lrn", _lrn, _lrn_ok)
_reg("nn.dropout", _dropout)
