"""CPU kernels (``OpDef.kernels["cpu"]``, named in ``relay_ref/ops/kernels.py``) for the
BLAS ops, softmax, layer norm, reductions and layout ops.

Each function follows the kernel protocol of ``registry.KernelRef``: ``fn(args, attrs,
out=None)`` computes what the op's NumPy reference computes, writes ``out`` when given and
returns it. Each reads the attributes, sends the cases it speeds up to a
``relay_ref.compute.cpu`` kernel and hands everything else (other dtypes, empty tensors,
out-of-range attributes, errors) to the op's reference, copying into ``out``; so every
function is correct wherever the reference is, and fails where and as it does.

What is sped up:

* ``nn.dense`` / ``nn.matmul`` / ``nn.batch_matmul``: float32/float64 operands of one dtype
  (``out_dtype`` empty or equal) through NumPy's BLAS (``compute/cpu/blas.py``); integers
  and mixed dtypes run the reference.
* ``nn.softmax`` / ``nn.log_softmax`` over any axis, ``nn.layer_norm`` over the last axis:
  float32/float64 numba row kernels (``compute/cpu/softmax.py``).
* ``sum`` / ``mean`` / ``max`` / ``min``: NumPy's ufunc reductions with ``out=`` (bit-equal to
  the references), numba float sums over one run of consecutive axes
  (``compute/cpu/reduce.py``); integer ``mean`` and empty extents run the reference.
* ``reshape`` / ``transpose`` / ``squeeze`` / ``expand_dims`` / ``nn.batch_flatten`` return
  NumPy *views* of their argument where NumPy allows (``returns_view = True``; the executor
  never passes them ``out``). Invariant: a view shares memory with the argument, so neither
  the argument nor the view may ever be written afterwards (kernels never mutate their
  arguments, and the executor never hands a kernel's ``out`` a buffer that is still read
  through a view). ``concatenate`` writes straight into ``out``.

numba loads when the first softmax / layer norm / float sum runs (the compute modules are
imported inside the functions), never when this module is imported.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from relay_ref.ops.registry import RelationError, get_op
from relay_ref.ops.relations import normalize_axis, reduce_axes
from relay_ref.ops.transform import reshape_shape

Array = np.ndarray
_FLOATS = (np.dtype("float32"), np.dtype("float64"))


def _fallback(op: str, args: list, attrs: object, out: Array | None) -> object:
    """The op's NumPy reference, copied into ``out`` when given."""
    res = get_op(op).reference(args, attrs)
    if out is None:
        return res
    np.copyto(out, res)
    return out


@functools.cache
def _blas() -> object:
    """``relay_ref.compute.cpu.blas``, imported once on first use (see above)."""
    from relay_ref.compute.cpu import blas

    return blas


def _is_float(x: object) -> bool:
    return type(x) is np.ndarray and x.dtype in _FLOATS


# -- BLAS ----------------------------------------------------------------------------------

def _blas_dtype_ok(a: object, b: object, attrs: object) -> bool:
    """Both operands float32/float64 of one dtype, non-empty, no other output dtype. (The
    order of the tests is the cheap-first one: this runs on every call of a small dense,
    an RNN step's, where it used to cost more than the product.)"""
    out_dtype = attrs.out_dtype  # type: ignore[attr-defined]
    return (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype in _FLOATS
            and b.dtype == a.dtype and a.size > 0 and b.size > 0
            and (not out_dtype or out_dtype == a.dtype.name))


def dense(args: list, attrs: object, out: Array | None = None) -> object:
    """``nn.dense``: (..., K) x (N, K) -> (..., N) through BLAS."""
    x, w = args
    if _blas_dtype_ok(x, w, attrs) and w.ndim == 2 and x.ndim >= 1 and x.shape[-1] == w.shape[1]:
        return _blas().dense(x, w, out)
    return _fallback("nn.dense", args, attrs, out)


def matmul(args: list, attrs: object, out: Array | None = None) -> object:
    """``nn.matmul``: op(a) (..., K) x op(b) (K, N) -> (..., N) through BLAS."""
    a, b = args
    ta, tb = attrs.transpose_a, attrs.transpose_b  # type: ignore[attr-defined]
    if (_blas_dtype_ok(a, b, attrs) and b.ndim == 2 and a.ndim >= (2 if ta else 1)
            and a.shape[-2 if ta else -1] == b.shape[1 if tb else 0]):
        from relay_ref.compute.cpu import blas
        return blas.matmul(a, b, ta, tb, out)
    return _fallback("nn.matmul", args, attrs, out)


def batch_matmul(args: list, attrs: object, out: Array | None = None) -> object:
    """``nn.batch_matmul``: (B, M, K) x (B, N, K) -> (B, M, N) by default (TVM's
    ``transpose_b=True``), through BLAS; a batch of 1 broadcasts."""
    x, y = args
    ta, tb = attrs.transpose_a, attrs.transpose_b  # type: ignore[attr-defined]
    if (_blas_dtype_ok(x, y, attrs) and x.ndim == 3 and y.ndim == 3
            and x.shape[1 if ta else 2] == y.shape[2 if tb else 1]
            and (x.shape[0] == y.shape[0] or 1 in (x.shape[0], y.shape[0]))):
        from relay_ref.compute.cpu import blas
        return blas.batch_matmul(x, y, ta, tb, out)
    return _fallback("nn.batch_matmul", args, attrs, out)


# -- softmax, layer norm ---------------------------------------------------------------------

def _split(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """(outer, n, inner) around ``axis``."""
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _softmax(op: str, args: list, attrs: object, out: Array | None, log: bool) -> object:
    x = args[0]
    axis = attrs.axis  # type: ignore[attr-defined]
    if not (_is_float(x) and x.size > 0 and -x.ndim <= axis < x.ndim):
        return _fallback(op, args, attrs, out)
    from relay_ref.compute.cpu import softmax as kernels
    outer, n, inner = _split(x.shape, axis % x.ndim)
    xc = np.ascontiguousarray(x)
    if out is None:
        out = np.empty(x.shape, x.dtype)
    if inner == 1:
        kernels.softmax_rows(xc.reshape(outer, n), out.reshape(outer, n), log)
    else:
        kernels.softmax_mid(xc.reshape(outer, n, inner), out.reshape(outer, n, inner), log)
    return out


def softmax(args: list, attrs: object, out: Array | None = None) -> object:
    """``nn.softmax`` over any axis (float32/float64 in numba)."""
    return _softmax("nn.softmax", args, attrs, out, False)


def log_softmax(args: list, attrs: object, out: Array | None = None) -> object:
    """``nn.log_softmax`` over any axis (float32/float64 in numba)."""
    return _softmax("nn.log_softmax", args, attrs, out, True)


def layer_norm(args: list, attrs: object, out: Array | None = None) -> object:
    """``nn.layer_norm`` over the last axis (float32/float64 in numba); other axes run the
    reference."""
    x, gamma, beta = args
    if not (_is_float(x) and x.size > 0 and attrs.axis in (-1, x.ndim - 1)  # type: ignore[attr-defined]
            and type(gamma) is np.ndarray and type(beta) is np.ndarray
            and gamma.dtype == x.dtype and beta.dtype == x.dtype
            and gamma.shape == (x.shape[-1],) and beta.shape == (x.shape[-1],)):
        return _fallback("nn.layer_norm", args, attrs, out)
    from relay_ref.compute.cpu import softmax as kernels
    n = x.shape[-1]
    if out is None:
        out = np.empty(x.shape, x.dtype)
    kernels.layer_norm_rows(np.ascontiguousarray(x).reshape(-1, n), np.ascontiguousarray(gamma),
                            np.ascontiguousarray(beta), float(attrs.epsilon),  # type: ignore[attr-defined]
                            bool(attrs.center), bool(attrs.scale),  # type: ignore[attr-defined]
                            out.reshape(-1, n))
    return out


# -- reductions --------------------------------------------------------------------------

@functools.lru_cache(maxsize=1024)
def _axes(op: str, ndim: int, attrs: object) -> tuple[int, ...]:
    """The reduced axes (sorted); ``RelationError`` when the attributes do not fit."""
    return tuple(reduce_axes(op, ndim, attrs.axis, attrs.exclude))  # type: ignore[attr-defined]


def _reduce(op: str, args: list, attrs: object, out: Array | None) -> object:
    x = args[0]
    if type(x) is not np.ndarray:
        return _fallback(op, args, attrs, out)
    try:
        axes = _axes(op, x.ndim, attrs)
    except (RelationError, TypeError):  # TypeError: unhashable attrs (not from make_attrs)
        return _fallback(op, args, attrs, out)  # raises the reference's OpRuntimeError
    if not axes or (op == "mean" and x.dtype.kind not in "f"):
        return _fallback(op, args, attrs, out)
    from relay_ref.compute.cpu import reduce as kernels
    if op in ("max", "min"):
        if any(x.shape[a] == 0 for a in axes):
            return _fallback(op, args, attrs, out)
        fn = kernels.reduce_max if op == "max" else kernels.reduce_min
    else:
        fn = kernels.reduce_sum if op == "sum" else kernels.reduce_mean
    return fn(x, axes, attrs.keepdims, out)  # type: ignore[attr-defined]


def reduce_sum(args: list, attrs: object, out: Array | None = None) -> object:
    """``sum`` (the table's ``sum``)."""
    return _reduce("sum", args, attrs, out)


def reduce_mean(args: list, attrs: object, out: Array | None = None) -> object:
    """``mean`` (the table's ``mean``); integer means run the reference."""
    return _reduce("mean", args, attrs, out)


def reduce_max(args: list, attrs: object, out: Array | None = None) -> object:
    """``max`` (the table's ``max``)."""
    return _reduce("max", args, attrs, out)


def reduce_min(args: list, attrs: object, out: Array | None = None) -> object:
    """``min`` (the table's ``min``)."""
    return _reduce("min", args, attrs, out)


# -- layout (views) -------------------------------------------------------------------------

def _viewing(fn):  # type: ignore[no-untyped-def]
    """``fn(args, attrs)`` as a kernel that returns views (``returns_view``); given ``out``
    anyway, it copies there. (Not ``functools.wraps``: its ``__wrapped__`` would make
    ``inspect.signature`` report ``fn``'s two parameters.)"""
    def kernel(args: list, attrs: object, out: Array | None = None) -> object:
        res = fn(args, attrs)
        if out is None:
            return res
        np.copyto(out, res)
        return out
    kernel.__name__ = kernel.__qualname__ = fn.__name__
    kernel.__doc__ = fn.__doc__
    kernel.returns_view = True  # type: ignore[attr-defined]
    return kernel


@functools.lru_cache(maxsize=1024)
def _reshape_to(shape: tuple[int, ...], attrs: object) -> tuple[int, ...]:
    return reshape_shape("reshape", shape, attrs.newshape, attrs.allowzero)  # type: ignore[attr-defined]


# The shape rules below restate transform.py's (its helpers are private to it); any
# attribute they reject goes to the reference, which raises its own error.

@functools.lru_cache(maxsize=1024)
def _transpose_perm(ndim: int, attrs: object) -> tuple[int, ...]:
    axes = attrs.axes  # type: ignore[attr-defined]
    if not axes:
        return tuple(range(ndim))[::-1]
    perm = tuple(normalize_axis("transpose", a, ndim) for a in axes)
    if sorted(perm) != list(range(ndim)):
        raise RelationError("transpose: axes are not a permutation")
    return perm


@functools.lru_cache(maxsize=1024)
def _squeeze_to(shape: tuple[int, ...], attrs: object) -> tuple[int, ...]:
    axis = attrs.axis  # type: ignore[attr-defined]
    if axis is None:
        return tuple(d for d in shape if d != 1)
    drop = {normalize_axis("squeeze", a, len(shape)) for a in axis}
    if any(shape[k] != 1 for k in drop):
        raise RelationError("squeeze: an axis to drop is not of size 1")
    return tuple(d for i, d in enumerate(shape) if i not in drop)


@functools.lru_cache(maxsize=1024)
def _expand_to(shape: tuple[int, ...], attrs: object) -> tuple[int, ...]:
    axis = normalize_axis("expand_dims", attrs.axis, len(shape) + 1)  # type: ignore[attr-defined]
    return shape[:axis] + (1,) * attrs.num_newaxis + shape[axis:]  # type: ignore[attr-defined]


def _view_or_reference(op: str, args: list, attrs: object, shape_of) -> object:  # type: ignore[no-untyped-def]
    """``args[0]`` reshaped to ``shape_of(x)`` (a view where NumPy can), or the reference's
    result (and its error) when the shape is invalid."""
    x = args[0]
    if type(x) is np.ndarray:
        try:
            return x.reshape(shape_of(x))
        except (RelationError, TypeError):  # TypeError: unhashable attrs
            pass
    return get_op(op).reference(args, attrs)


@_viewing
def reshape(args: list, attrs: object) -> object:
    """``reshape``: a view where NumPy can."""
    return _view_or_reference("reshape", args, attrs, lambda x: _reshape_to(x.shape, attrs))


@_viewing
def squeeze(args: list, attrs: object) -> object:
    """``squeeze``: a view."""
    return _view_or_reference("squeeze", args, attrs, lambda x: _squeeze_to(x.shape, attrs))


@_viewing
def expand_dims(args: list, attrs: object) -> object:
    """``expand_dims``: a view."""
    return _view_or_reference("expand_dims", args, attrs,
                              lambda x: _expand_to(x.shape, attrs))


def bias_add(args: list, attrs: object, out: Array | None = None) -> object:
    """``nn.bias_add``: ``data + bias`` along ``axis``, one ``np.add`` with the bias as a
    broadcasting view (float data and a 1-d bias of its dtype and length; bit-equal to the
    reference, which adds the same values in the same dtype). The rest: the reference."""
    x, b = args
    if _is_float(x) and type(b) is np.ndarray and b.dtype == x.dtype and b.ndim == 1:
        axis = attrs.axis % x.ndim  # type: ignore[attr-defined]
        if b.shape[0] == x.shape[axis]:
            view = b.reshape((-1,) + (1,) * (x.ndim - 1 - axis))
            return np.add(x, view) if out is None else np.add(x, view, out=out)
    return _fallback("nn.bias_add", args, attrs, out)


@_viewing
def batch_flatten(args: list, attrs: object) -> object:
    """``nn.batch_flatten``: (N, ...) -> (N, prod(...)), a view where NumPy can."""
    x = args[0]
    if type(x) is np.ndarray and x.ndim >= 1:
        return x.reshape(x.shape[0], math.prod(x.shape[1:]))
    return get_op("nn.batch_flatten").reference(args, attrs)


@_viewing
def transpose(args: list, attrs: object) -> object:
    """``transpose``: always a view (strides permuted)."""
    x = args[0]
    if type(x) is np.ndarray:
        try:
            return np.transpose(x, _transpose_perm(x.ndim, attrs))
        except (RelationError, TypeError):  # TypeError: unhashable attrs
            pass
    return get_op("transpose").reference(args, attrs)


def concatenate(args: list, attrs: object, out: Array | None = None) -> object:
    """``concatenate`` of a tuple of tensors, written straight into ``out`` when given.
    A part that already *is* its slice of ``out`` (same memory, shape and strides: the
    memory plan placed it there, ``relay_ref.executor.inplace_concat``) is not copied;
    a part overlapping ``out`` any other way makes the whole result go through a copy."""
    parts = args[0]
    if out is not None and isinstance(parts, tuple | list) and parts and all(
            type(p) is np.ndarray and p.dtype == out.dtype for p in parts):
        try:
            shared = [np.may_share_memory(p, out) for p in parts]  # bounds only: cheap
            if True not in shared:
                return np.concatenate(parts, axis=attrs.axis, out=out)  # type: ignore[attr-defined]
            return _concatenate_placed(parts, shared, attrs.axis, out)  # type: ignore[attr-defined]
        except (ValueError, np.exceptions.AxisError):
            pass
    return _fallback("concatenate", args, attrs, out)


def _concatenate_placed(parts: list[Array], shared: list[bool], axis: int,
                        out: Array) -> Array:
    """``concatenate`` into ``out`` when the parts flagged ``shared`` may overlap it: each
    such part that is exactly its slice of ``out`` (the same first byte, the same strides
    on every axis longer than 1: a stride on an axis of extent 1 is never used, and the
    memory plan's part, a reshaped run of the buffer, differs from the slice there) is left
    where it is, the others are copied; any other overlap computes the result apart first
    (never reading what was overwritten)."""
    ndim = out.ndim
    if not -ndim <= axis < ndim:
        raise ValueError("concatenate: axis out of range")
    axis %= ndim
    base = out.__array_interface__["data"][0]
    step = out.strides[axis]
    copies = []
    start = 0
    for p, maybe in zip(parts, shared, strict=True):
        if p.ndim != ndim:
            raise ValueError("concatenate: ranks differ")
        n = p.shape[axis]
        d = out[(slice(None),) * axis + (slice(start, start + n),)]
        if d.shape != p.shape:  # other extents differ: the reference's error
            raise ValueError("concatenate: shapes do not match")
        if not maybe:
            copies.append((d, p))
        elif p.__array_interface__["data"][0] != base + start * step or (
                p.strides != d.strides and any(
                    a != b for a, b, e in zip(p.strides, d.strides, p.shape, strict=True)
                    if e > 1)):
            np.copyto(out, np.concatenate(parts, axis=axis))  # misplaced: read all first
            return out
        start += n
    if start != out.shape[axis]:
        raise ValueError("concatenate: extents do not add up")
    for d, p in copies:
        np.copyto(d, p)
    return out


# The table's names (``BUILTIN_CPU_KERNELS``); bound here so that the builtins stay usable
# in this module's functions above.
sum = reduce_sum
mean = reduce_mean
max = reduce_max
min = reduce_min
