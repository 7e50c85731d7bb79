"""The ``xla`` backend's operator table (spec/byoc.md BYOC-Support): each Relay operator it
compiles, as data, with the predicate the partitioning passes ask and its ``jax.numpy`` /
``jax.lax`` implementation.

``JAX_OPS[name]`` is a ``JaxOp(impl, dtypes, check)``:

* ``impl(info, *args)``: the operator on traced jax values (a Python tuple for a tuple-typed
  argument or result, as ``nn.batch_norm``'s 3-tuple). ``info`` is the call's
  ``CallInfo``: its ``attrs``, and its checked ``type`` and ``arg_types`` (static shapes),
  from which shape-only operators (``reshape``, ``squeeze``, pools' ``ceil_mode``) read the
  output shape instead of recomputing it.
* ``supports(info)``: every tensor in the arguments and the result has a static shape and a
  dtype jax keeps as it is with its default 32-bit mode (``JAX_DTYPES``: no int64, float64
  or float16), the arguments' dtypes are among ``dtypes``, and ``check(info)`` (attribute
  conditions) holds.

Semantics: each ``impl`` computes what the operator's NumPy reference in ``relay_ref/ops``
computes (the reference is the definition), up to float32 rounding; the dtype sets and
checks leave out what would differ in more than rounding (integer division by zero, a
``take`` out of range in ``fast`` mode, reductions over an empty extent, integer
convolutions, a float cast to an integer: XLA saturates what is out of range, -1.5 to
uint8 or 300.7 to int8, where the reference wraps).
Matrix products and convolutions ask for ``Precision.HIGHEST`` (no TF32 on a GPU).

jax is not imported here: ``jnp`` and ``lax`` are imported on first use (when a region is
traced), so that registering the backend works, and costs nothing, without jax.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from relay_ref.ir.shape import is_any
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.layout import perm
from relay_ref.ops.nn import pad4
from relay_ref.ops.relations import reduce_axes
from relay_ref.passes.compiler_support import CallInfo

__all__ = ["JAX_DTYPES", "JAX_OPS", "JaxOp", "tensor_types"]


class _LazyModule:
    """A module imported at its first attribute access (dunder probes, from ``hasattr``
    or documentation tools, import nothing)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)


jnp: Any = _LazyModule("jax.numpy")
lax: Any = _LazyModule("jax.lax")

FLOAT = frozenset({"float32"})
INT = frozenset({"int8", "int16", "int32", "uint8", "uint16", "uint32"})
NUMERIC = FLOAT | INT
BOOL = frozenset({"bool"})
#: the dtypes jax computes in unchanged without ``jax_enable_x64`` (float16 left out: the
#: references round every step to float16, XLA may not)
JAX_DTYPES = NUMERIC | BOOL


def tensor_types(ty: Type | None) -> list[TensorType] | None:
    """The tensors in ``ty`` (tuples flattened); None when ``ty`` is unknown or holds
    anything but tensors and tuples."""
    out: list[TensorType] = []
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TensorType):
            out.append(t)
        elif isinstance(t, TupleType):
            stack.extend(t.fields)
        else:
            return None
    return out


def _static(t: TensorType) -> bool:
    return all(not is_any(d) and type(d) is int for d in t.shape)


@dataclass(frozen=True, slots=True)
class JaxOp:
    """One operator of the ``xla`` backend (see the module docstring)."""

    impl: Callable[..., Any]
    dtypes: frozenset[str] = JAX_DTYPES
    check: Callable[[CallInfo], bool] | None = None

    def supports(self, info: CallInfo) -> bool:
        """Whether this backend compiles the call ``info`` describes."""
        args = [tensor_types(t) for t in info.arg_types]
        out = tensor_types(info.type)
        if out is None or any(a is None for a in args):
            return False
        flat = [t for a in args for t in a]
        if not all(_static(t) for t in flat + out):
            return False
        if any(t.dtype not in self.dtypes for t in flat):
            return False
        if any(t.dtype not in JAX_DTYPES for t in out):
            return False
        return self.check is None or bool(self.check(info))


def _out_shape(info: CallInfo) -> tuple[int, ...]:
    return tuple(info.type.shape)  # type: ignore[union-attr]  # a tensor: supports() checked


def _dtype(info: CallInfo) -> str:
    return info.type.dtype  # type: ignore[union-attr]


def _arg(info: CallInfo, i: int = 0) -> TensorType:
    return info.arg_types[i]  # type: ignore[return-value]


def _to_canonical(x: Any, layout: str, canonical: str) -> Any:
    return x if layout == canonical else jnp.transpose(x, perm(layout, canonical))


def _from_canonical(x: Any, layout: str, canonical: str) -> Any:
    return x if layout == canonical else jnp.transpose(x, perm(canonical, layout))


def _along(vec: Any, ndim: int, axis: int) -> Any:
    shape = [1] * ndim
    shape[axis] = -1
    return jnp.reshape(vec, shape)


def _scalar(value: float, dtype: str) -> Any:
    return np.asarray(value, dtype=dtype)


# -- elementwise -------------------------------------------------------------------------

def _binary(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    return lambda info, a, b: fn(a, b)


def _unary(fn: Callable[[Any], Any]) -> Callable[..., Any]:
    return lambda info, x: fn(x)


def _floor_divide(a: Any, b: Any) -> Any:
    return jnp.floor(jnp.true_divide(a, b))


def _floor_mod(a: Any, b: Any) -> Any:
    return a - jnp.floor(jnp.true_divide(a, b)) * b


def _sigmoid(x: Any) -> Any:
    return 1 / (1 + jnp.exp(-x))


def _rsqrt(x: Any) -> Any:
    return 1 / jnp.sqrt(x)


def _erf(x: Any) -> Any:
    return lax.erf(x)


def _bound(value: float, dtype: str) -> Any:
    """A clip bound in ``dtype`` (integers saturate, as the reference's)."""
    if dtype in INT:
        info = np.iinfo(dtype)
        return np.asarray(int(np.trunc(min(max(value, info.min), info.max))), dtype)
    return np.asarray(value, dtype)


def _clip(info: CallInfo, x: Any) -> Any:
    lo = _bound(info.attrs.a_min, _dtype(info))
    hi = _bound(info.attrs.a_max, _dtype(info))
    return jnp.maximum(jnp.minimum(x, hi), lo)


# -- nn: convolution, dense ---------------------------------------------------------------

def _same_out_dtype(info: CallInfo) -> bool:
    out = getattr(info.attrs, "out_dtype", "")
    return out in ("", _arg(info).dtype)


def _conv2d(info: CallInfo, data: Any, weight: Any) -> Any:
    a: Any = info.attrs
    x = _to_canonical(data, a.data_layout, "NCHW")
    w = _to_canonical(weight, a.kernel_layout, "OIHW")
    pt, pl, pb, pr = pad4(a.padding)
    out = lax.conv_general_dilated(
        x, w, window_strides=tuple(a.strides), padding=((pt, pb), (pl, pr)),
        rhs_dilation=tuple(a.dilation), dimension_numbers=("NCHW", "OIHW", "NCHW"),
        feature_group_count=a.groups, precision=lax.Precision.HIGHEST)
    return _from_canonical(out, a.out_layout or a.data_layout, "NCHW")


def _matmul(a: Any, b: Any, ta: bool, tb: bool) -> Any:
    """``a @ b`` with the transposes; two matrices contract in place (``dot_general``):
    a ``swapaxes`` of a weight argument would be a copy on every call (220 ms for a
    4096x9216 dense, against 10 ms)."""
    if a.ndim == 2 and b.ndim == 2:
        dims = (((0 if ta else 1,), (1 if tb else 0,)), ((), ()))
        return lax.dot_general(a, b, dims, precision=lax.Precision.HIGHEST)
    if ta:
        a = jnp.swapaxes(a, -1, -2)
    if tb:
        b = jnp.swapaxes(b, -1, -2)
    return jnp.matmul(a, b, precision=lax.Precision.HIGHEST)


def _dense(info: CallInfo, data: Any, weight: Any) -> Any:
    if weight.ndim == 2:  # data (..., K) . weight (N, K) -> (..., N), no transpose
        dims = (((data.ndim - 1,), (1,)), ((), ()))
        return lax.dot_general(data, weight, dims, precision=lax.Precision.HIGHEST)
    return _matmul(data, weight, False, True)


def _nn_matmul(info: CallInfo, a: Any, b: Any) -> Any:
    return _matmul(a, b, info.attrs.transpose_a, info.attrs.transpose_b)


def _bias_add(info: CallInfo, x: Any, bias: Any) -> Any:
    return x + _along(bias, x.ndim, info.attrs.axis % x.ndim)


def _leaky_relu(info: CallInfo, x: Any) -> Any:
    alpha = _scalar(info.attrs.alpha, _dtype(info))
    return jnp.where(x > 0, x, x * alpha)


def _prelu(info: CallInfo, x: Any, alpha: Any) -> Any:
    return jnp.where(x > 0, x, x * _along(alpha, x.ndim, info.attrs.axis % x.ndim))


def _softmax(info: CallInfo, x: Any) -> Any:
    axis = info.attrs.axis
    e = jnp.exp(x - jnp.max(x, axis=axis, keepdims=True))
    return e / jnp.sum(e, axis=axis, keepdims=True)


def _log_softmax(info: CallInfo, x: Any) -> Any:
    axis = info.attrs.axis
    shifted = x - jnp.max(x, axis=axis, keepdims=True)
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True))


def _nonempty(info: CallInfo) -> bool:
    return all(d > 0 for d in _arg(info).shape)


# -- nn: pooling ----------------------------------------------------------------------

def _pool_geometry(info: CallInfo) -> tuple:
    """(NCHW input shape, (oh, ow), the (H, W) paddings with the ceil_mode extra rows, and
    the extras (eh, ew)); the output size is the checked type's."""
    a: Any = info.attrs
    n, c, h, w = (_arg(info).shape[i] for i in perm(a.layout, "NCHW"))
    oshape = _out_shape(info)
    _, _, oh, ow = (oshape[i] for i in perm(a.out_layout or a.layout, "NCHW"))
    pt, pl, pb, pr = pad4(a.padding)
    (kh, kw), (sh, sw), (dh, dw) = a.pool_size, a.strides, a.dilation
    eh = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - (h + pt + pb))
    ew = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - (w + pl + pr))
    return (n, c, h, w), (oh, ow), ((pt, pb + eh), (pl, pr + ew)), (eh, ew)


def _window(info: CallInfo, x: Any, init: Any, fn: Callable[..., Any]) -> Any:
    a: Any = info.attrs
    _, (oh, ow), (ph, pw), _ = _pool_geometry(info)
    out = lax.reduce_window(x, init, fn, (1, 1) + tuple(a.pool_size),
                            (1, 1) + tuple(a.strides), ((0, 0), (0, 0), ph, pw),
                            window_dilation=(1, 1) + tuple(a.dilation))
    return out[:, :, :oh, :ow]


def _lowest(dtype: str) -> Any:
    return np.asarray(-np.inf if dtype in FLOAT else np.iinfo(dtype).min, dtype)


def _max_pool2d(info: CallInfo, data: Any) -> Any:
    a: Any = info.attrs
    x = _to_canonical(data, a.layout, "NCHW")
    out = _window(info, x, _lowest(_dtype(info)), lax.max)
    return _from_canonical(out, a.out_layout or a.layout, "NCHW")


def _avg_counts(info: CallInfo) -> np.ndarray:
    """The (OH, OW) divisors of an average pool, as the reference counts them: the
    window's real input positions, plus its explicit padding with ``count_include_pad``
    (never the ceil_mode extra), at least 1."""
    a: Any = info.attrs
    (_, _, h, w), (oh, ow), (ph, pw), (eh, ew) = _pool_geometry(info)
    if a.count_include_pad:
        region = np.pad(np.ones((h + ph[0] + ph[1] - eh, w + pw[0] + pw[1] - ew), np.int64),
                        ((0, eh), (0, ew)))
    else:
        region = np.pad(np.ones((h, w), np.int64), (ph, pw))
    (kh, kw), (sh, sw), (dh, dw) = a.pool_size, a.strides, a.dilation
    view = sliding_window_view(region, ((kh - 1) * dh + 1, (kw - 1) * dw + 1))
    counts = view[::sh, ::sw, ::dh, ::dw][:oh, :ow].sum(axis=(2, 3))
    return np.maximum(counts, 1)


def _avg_pool2d(info: CallInfo, data: Any) -> Any:
    a: Any = info.attrs
    x = _to_canonical(data, a.layout, "NCHW")
    total = _window(info, x, _scalar(0, _dtype(info)), lax.add)
    out = total / _avg_counts(info).astype(_dtype(info))
    return _from_canonical(out, a.out_layout or a.layout, "NCHW")


def _global_pool(kind: str) -> Callable[..., Any]:
    def impl(info: CallInfo, data: Any) -> Any:
        a: Any = info.attrs
        x = _to_canonical(data, a.layout, "NCHW")
        if kind == "max":
            out = jnp.max(x, axis=(2, 3), keepdims=True)
        else:
            out = jnp.mean(x, axis=(2, 3), keepdims=True)
        return _from_canonical(out, a.out_layout or a.layout, "NCHW")
    return impl


def _nonempty_hw(info: CallInfo) -> bool:
    shape = _arg(info).shape
    layout = info.attrs.layout
    return shape[layout.index("H")] * shape[layout.index("W")] > 0


# -- nn: normalisation, dropout, lrn, pad -------------------------------------------------

def _batch_norm(info: CallInfo, x: Any, gamma: Any, beta: Any, mean: Any, var: Any) -> Any:
    a: Any = info.attrs
    axis = a.axis % x.ndim
    eps = _scalar(a.epsilon, _arg(info).dtype)
    out = (x - _along(mean, x.ndim, axis)) / jnp.sqrt(_along(var, x.ndim, axis) + eps)
    if a.scale:
        out = out * _along(gamma, x.ndim, axis)
    if a.center:
        out = out + _along(beta, x.ndim, axis)
    return out, mean, var


def _layer_norm(info: CallInfo, x: Any, gamma: Any, beta: Any) -> Any:
    a: Any = info.attrs
    axis = a.axis % x.ndim
    mean = jnp.mean(x, axis=axis, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=axis, keepdims=True)
    out = (x - mean) / jnp.sqrt(var + _scalar(a.epsilon, _dtype(info)))
    if a.scale:
        out = out * _along(gamma, x.ndim, axis)
    if a.center:
        out = out + _along(beta, x.ndim, axis)
    return out


def _lrn(info: CallInfo, x: Any) -> Any:
    """The window along ``axis`` is [c - size//2, c - size//2 + size), as the reference."""
    a: Any = info.attrs
    axis = a.axis % x.ndim
    size, half = a.size, a.size // 2
    dims = [1] * x.ndim
    dims[axis] = size
    pads = [(0, 0)] * x.ndim
    pads[axis] = (half, size - 1 - half)
    total = lax.reduce_window(x * x, _scalar(0, _dtype(info)), lax.add, tuple(dims),
                              (1,) * x.ndim, tuple(pads))
    dt = _dtype(info)
    scale = _scalar(a.alpha / size, dt)
    return x / (_scalar(a.bias, dt) + scale * total) ** _scalar(a.beta, dt)


def _dropout(info: CallInfo, x: Any) -> Any:
    return x, jnp.ones_like(x)


def _pad(info: CallInfo, x: Any, *value: Any) -> Any:
    a: Any = info.attrs
    widths = [tuple(p) for p in a.pad_width]
    if a.pad_mode != "constant":
        return jnp.pad(x, widths, mode=a.pad_mode)
    fill = value[0] if value else _scalar(a.pad_value or 0, _dtype(info))
    return jnp.pad(x, widths, constant_values=jnp.asarray(fill).astype(x.dtype))


# -- transforms -----------------------------------------------------------------------

def _to_out_shape(info: CallInfo, x: Any) -> Any:
    """``reshape``, ``squeeze``, ``expand_dims``, ``batch_flatten``: row-major, to the
    checked output shape (so Relay's reshape codes need no second reading)."""
    return jnp.reshape(x, _out_shape(info))


def _transpose(info: CallInfo, x: Any) -> Any:
    axes = info.attrs.axes
    if not axes:
        return jnp.transpose(x)
    return jnp.transpose(x, [a % x.ndim for a in axes])


def _concatenate(info: CallInfo, parts: tuple) -> Any:
    return jnp.concatenate(parts, axis=info.attrs.axis)


def _stack(info: CallInfo, parts: tuple) -> Any:
    return jnp.stack(parts, axis=info.attrs.axis)


def _split(info: CallInfo, x: Any) -> Any:
    axis = info.attrs.axis % x.ndim
    bounds, at = [], 0
    for field in info.type.fields[:-1]:
        at += field.shape[axis]
        bounds.append(at)
    return tuple(jnp.split(x, bounds, axis=axis))


def _take(info: CallInfo, data: Any, indices: Any) -> Any:
    a: Any = info.attrs
    if a.axis is None:
        data, axis = jnp.reshape(data, (-1,)), 0
    else:
        axis = a.axis % data.ndim
    n = data.shape[axis]
    if a.mode == "clip":
        idx = jnp.clip(indices, 0, n - 1)
    else:  # wrap
        idx = jnp.mod(indices, n)
    return jnp.take(data, idx, axis=axis)


def _take_check(info: CallInfo) -> bool:
    a: Any = info.attrs
    if a.mode == "fast" or a.batch_dims != 0:
        return False
    data, indices = _arg(info, 0), _arg(info, 1)
    if indices.dtype not in INT:
        return False
    n = (int(np.prod(data.shape)) if a.axis is None
         else data.shape[a.axis % max(data.ndim, 1)])
    return n > 0


def _strided_slice(info: CallInfo, x: Any) -> Any:
    """Static slicing; per axis the begin and stride the reference canonicalises to, the
    length from the checked type."""
    a: Any = info.attrs
    ndim = x.ndim
    axes = (range(len(a.begin)) if a.axes is None
            else [ax % ndim for ax in a.axes])
    strides = a.strides or ()
    out = _out_shape(info)
    for j, ax in enumerate(axes):
        d, n = x.shape[ax], out[ax]
        stride = 1
        if a.slice_mode == "end" and strides:
            stride = strides[j] if j < len(strides) else (strides[0] if len(strides) == 1
                                                          else 1)
        b = a.begin[j]
        b = b + d if b < 0 else b
        b = min(max(b, 0), d) if stride > 0 else min(max(b, -1), d - 1)
        if n == 0:
            x = lax.slice_in_dim(x, 0, 0, 1, ax)
        elif stride > 0:
            x = lax.slice_in_dim(x, b, b + (n - 1) * stride + 1, stride, ax)
        else:  # descending: reverse, then slice ascending
            r = d - 1 - b
            x = lax.slice_in_dim(jnp.flip(x, ax), r, r + (n - 1) * -stride + 1, -stride, ax)
    return x


def _cast(info: CallInfo, x: Any) -> Any:
    dtype = _dtype(info)
    return x != 0 if dtype == "bool" else x.astype(dtype)


def _cast_check(info: CallInfo) -> bool:
    """Not float -> integer: XLA saturates out-of-range values (-1.5 -> 0 as uint8,
    300.7 -> 127 as int8) where the reference, NumPy and onnxruntime wrap (255, 44)."""
    return not (_arg(info).dtype.startswith("float")
                and _dtype(info).startswith(("int", "uint")))


def _full(info: CallInfo, fill: Any) -> Any:
    return jnp.broadcast_to(_cast(info, jnp.asarray(fill)), _out_shape(info))


def _init(value: int) -> Callable[..., Any]:
    return lambda info, *args: jnp.full(_out_shape(info), value, _dtype(info))


def _full_like(info: CallInfo, data: Any, fill: Any) -> Any:
    return jnp.broadcast_to(_cast(info, jnp.asarray(fill)), _out_shape(info))


def _where(info: CallInfo, cond: Any, x: Any, y: Any) -> Any:
    return jnp.where(cond != 0 if cond.dtype != bool else cond, x, y)


def _broadcast_to(info: CallInfo, x: Any, *rest: Any) -> Any:
    return jnp.broadcast_to(x, _out_shape(info))


# -- reductions ---------------------------------------------------------------------

def _reduce(kind: str) -> Callable[..., Any]:
    def impl(info: CallInfo, x: Any) -> Any:
        a: Any = info.attrs
        axes = tuple(reduce_axes(kind, x.ndim, a.axis, a.exclude))
        keep = a.keepdims
        if kind == "sum":
            return jnp.sum(x, axis=axes, keepdims=keep, dtype=x.dtype)
        if kind == "prod":
            return jnp.prod(x, axis=axes, keepdims=keep, dtype=x.dtype)
        if kind == "mean":
            count = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
            total = jnp.sum(x, axis=axes, keepdims=keep, dtype=x.dtype)
            return total / _scalar(count, x.dtype.name)
        return {"max": jnp.max, "min": jnp.min, "all": jnp.all, "any": jnp.any}[kind](
            x, axis=axes, keepdims=keep)
    return impl


def _reduced_nonempty(info: CallInfo) -> bool:
    a: Any = info.attrs
    data = _arg(info)
    axes = reduce_axes("max", data.ndim, a.axis, a.exclude)
    return all(data.shape[i] > 0 for i in axes)


# -- the table ------------------------------------------------------------------------

JAX_OPS: dict[str, JaxOp] = {
    # elementwise binary (NumPy broadcasting)
    "add": JaxOp(_binary(lambda a, b: a + b), NUMERIC),
    "subtract": JaxOp(_binary(lambda a, b: a - b), NUMERIC),
    "multiply": JaxOp(_binary(lambda a, b: a * b), NUMERIC),
    "divide": JaxOp(_binary(lambda a, b: jnp.true_divide(a, b)), FLOAT),
    "floor_divide": JaxOp(_binary(_floor_divide), FLOAT),
    "floor_mod": JaxOp(_binary(_floor_mod), FLOAT),
    "mod": JaxOp(_binary(lambda a, b: jnp.fmod(a, b)), FLOAT),
    "power": JaxOp(_binary(lambda a, b: jnp.power(a, b)), FLOAT),
    "maximum": JaxOp(_binary(lambda a, b: jnp.maximum(a, b)), NUMERIC),
    "minimum": JaxOp(_binary(lambda a, b: jnp.minimum(a, b)), NUMERIC),
    "logical_and": JaxOp(_binary(lambda a, b: jnp.logical_and(a, b)), BOOL),
    "logical_or": JaxOp(_binary(lambda a, b: jnp.logical_or(a, b)), BOOL),
    "logical_xor": JaxOp(_binary(lambda a, b: jnp.logical_xor(a, b)), BOOL),
    "bitwise_and": JaxOp(_binary(lambda a, b: a & b), INT | BOOL),
    "bitwise_or": JaxOp(_binary(lambda a, b: a | b), INT | BOOL),
    "bitwise_xor": JaxOp(_binary(lambda a, b: a ^ b), INT | BOOL),
    "equal": JaxOp(_binary(lambda a, b: a == b)),
    "not_equal": JaxOp(_binary(lambda a, b: a != b)),
    "less": JaxOp(_binary(lambda a, b: a < b)),
    "less_equal": JaxOp(_binary(lambda a, b: a <= b)),
    "greater": JaxOp(_binary(lambda a, b: a > b)),
    "greater_equal": JaxOp(_binary(lambda a, b: a >= b)),
    # elementwise unary: float math (the references compute integers in float64)
    "exp": JaxOp(_unary(lambda x: jnp.exp(x)), FLOAT),
    "fast_exp": JaxOp(_unary(lambda x: jnp.exp(x)), FLOAT),
    "log": JaxOp(_unary(lambda x: jnp.log(x)), FLOAT),
    "log2": JaxOp(_unary(lambda x: jnp.log2(x)), FLOAT),
    "log10": JaxOp(_unary(lambda x: jnp.log10(x)), FLOAT),
    "sqrt": JaxOp(_unary(lambda x: jnp.sqrt(x)), FLOAT),
    "rsqrt": JaxOp(_unary(_rsqrt), FLOAT),
    "sigmoid": JaxOp(_unary(_sigmoid), FLOAT),
    "tanh": JaxOp(_unary(lambda x: jnp.tanh(x)), FLOAT),
    "fast_tanh": JaxOp(_unary(lambda x: jnp.tanh(x)), FLOAT),
    "erf": JaxOp(_unary(_erf), FLOAT),
    "fast_erf": JaxOp(_unary(_erf), FLOAT),
    "sin": JaxOp(_unary(lambda x: jnp.sin(x)), FLOAT),
    "cos": JaxOp(_unary(lambda x: jnp.cos(x)), FLOAT),
    "tan": JaxOp(_unary(lambda x: jnp.tan(x)), FLOAT),
    "sinh": JaxOp(_unary(lambda x: jnp.sinh(x)), FLOAT),
    "cosh": JaxOp(_unary(lambda x: jnp.cosh(x)), FLOAT),
    "floor": JaxOp(_unary(lambda x: jnp.floor(x)), FLOAT),
    "ceil": JaxOp(_unary(lambda x: jnp.ceil(x)), FLOAT),
    "round": JaxOp(_unary(lambda x: jnp.round(x)), FLOAT),  # ties to even, as np.round
    "trunc": JaxOp(_unary(lambda x: jnp.trunc(x)), FLOAT),
    "isnan": JaxOp(_unary(lambda x: jnp.isnan(x)), FLOAT),
    "isinf": JaxOp(_unary(lambda x: jnp.isinf(x)), FLOAT),
    "isfinite": JaxOp(_unary(lambda x: jnp.isfinite(x)), FLOAT),
    # elementwise unary: exact on integers too
    "abs": JaxOp(_unary(lambda x: jnp.abs(x)), NUMERIC),
    "negative": JaxOp(_unary(lambda x: -x), NUMERIC),
    "sign": JaxOp(_unary(lambda x: jnp.sign(x)), NUMERIC),
    "copy": JaxOp(_unary(lambda x: x)),
    "logical_not": JaxOp(_unary(lambda x: jnp.logical_not(x)), BOOL),
    "clip": JaxOp(_clip, NUMERIC),
    # nn
    "nn.conv2d": JaxOp(_conv2d, FLOAT, _same_out_dtype),
    "nn.dense": JaxOp(_dense, FLOAT, _same_out_dtype),
    "nn.matmul": JaxOp(_nn_matmul, FLOAT, _same_out_dtype),
    "nn.batch_matmul": JaxOp(_nn_matmul, FLOAT, _same_out_dtype),
    "nn.bias_add": JaxOp(_bias_add, NUMERIC),
    "nn.relu": JaxOp(_unary(lambda x: jnp.maximum(x, jnp.zeros((), x.dtype))), NUMERIC),
    "nn.leaky_relu": JaxOp(_leaky_relu, FLOAT),
    "nn.prelu": JaxOp(_prelu, FLOAT),
    "nn.softmax": JaxOp(_softmax, FLOAT, _nonempty),
    "nn.fast_softmax": JaxOp(_softmax, FLOAT, _nonempty),
    "nn.log_softmax": JaxOp(_log_softmax, FLOAT, _nonempty),
    "nn.max_pool2d": JaxOp(_max_pool2d, NUMERIC),
    "nn.avg_pool2d": JaxOp(_avg_pool2d, FLOAT),
    "nn.global_avg_pool2d": JaxOp(_global_pool("avg"), FLOAT, _nonempty_hw),
    "nn.global_max_pool2d": JaxOp(_global_pool("max"), NUMERIC, _nonempty_hw),
    "nn.batch_norm": JaxOp(_batch_norm, FLOAT),
    "nn.layer_norm": JaxOp(_layer_norm, FLOAT, _nonempty),
    "nn.dropout": JaxOp(_dropout),
    "nn.lrn": JaxOp(_lrn, FLOAT),
    "nn.pad": JaxOp(_pad),
    "nn.batch_flatten": JaxOp(_to_out_shape),
    # shapes and data movement
    "reshape": JaxOp(_to_out_shape),
    "squeeze": JaxOp(_to_out_shape),
    "expand_dims": JaxOp(_to_out_shape),
    "transpose": JaxOp(_transpose),
    "concatenate": JaxOp(_concatenate),
    "stack": JaxOp(_stack),
    "split": JaxOp(_split),
    "take": JaxOp(_take, JAX_DTYPES, _take_check),
    "strided_slice": JaxOp(_strided_slice),
    "broadcast_to": JaxOp(_broadcast_to),
    "cast": JaxOp(_cast, JAX_DTYPES, _cast_check),
    "full": JaxOp(_full),
    "zeros": JaxOp(_init(0)),
    "ones": JaxOp(_init(1)),
    "zeros_like": JaxOp(lambda info, x: jnp.zeros_like(x)),
    "ones_like": JaxOp(lambda info, x: jnp.ones_like(x)),
    "full_like": JaxOp(_full_like),
    "where": JaxOp(_where),
    # reductions (axis / keepdims / exclude)
    "sum": JaxOp(_reduce("sum"), NUMERIC),
    "prod": JaxOp(_reduce("prod"), NUMERIC),
    "mean": JaxOp(_reduce("mean"), FLOAT),
    "max": JaxOp(_reduce("max"), NUMERIC, _reduced_nonempty),
    "min": JaxOp(_reduce("min"), NUMERIC, _reduced_nonempty),
    "all": JaxOp(_reduce("all"), BOOL),
    "any": JaxOp(_reduce("any"), BOOL),
}
