"""CUDA kernels of the operators: the ``kernels["cuda"]`` entries (named in
``relay_ref/ops/kernels.py``) over ``relay_ref.compute.cuda``.

The CUDA kernel protocol (the CUDA executor's, ``relay_ref.executor.cuda_plan``):

* ``fn.supports(arg_types, attrs, out_type) -> bool`` is asked once, at compile time, with
  the call's checked types (all static tensor types). True promises that
  ``fn(args, attrs, out)`` computes what the op's reference computes (within float
  rounding) for every argument of those types; False sends the call to the host (its CPU
  kernel or reference, with explicit copies counted in ``exe.plan``).
* ``fn(args, attrs, out)``: ``args`` are C-contiguous device arrays, ``out`` a device array
  of the result's type, written and returned; arguments are never written.
* ``fn.returns_view = True``: ``fn(args, attrs, shape)`` returns a view of ``args[0]`` with
  the result's ``shape`` (no kernel launch); ``fn.launches``: kernel launches per call.

What runs on the device: float32/float64 ``nn.dense``, ``nn.matmul`` (2-d),
``nn.batch_matmul`` (3-d, a batch of 1 broadcast), ``nn.conv2d`` (NCHW / OIHW, any strides,
padding, dilation, groups), max / avg pooling and global pooling (NCHW), ``nn.softmax`` /
``nn.log_softmax`` (any axis), ``sum`` / ``mean`` / ``max`` / ``min`` over one run of
consecutive axes; ``reshape`` / ``squeeze`` / ``expand_dims`` / ``nn.batch_flatten`` as
views of any dtype. Elementwise ops run in generated fused kernels, not here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relay_ref.ir.types import TensorType
from relay_ref.ops.nn import pad4
from relay_ref.ops.relations import normalize_axis, reduce_axes

_FLOATS = ("float32", "float64")


def _static(t: object) -> bool:
    return type(t) is TensorType and all(type(d) is int for d in t.shape)


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _floats(arg_types: list, out_type: object, out_dtype: str = "") -> bool:
    """Static, non-empty tensors of one float dtype (arguments and result)."""
    types = [*arg_types, out_type]
    if not all(_static(t) and _size(t.shape) > 0 for t in types):
        return False
    dtype = types[0].dtype
    return dtype in _FLOATS and all(t.dtype == dtype for t in types) and \
        out_dtype in ("", dtype)


def _kernel(supports: Callable[..., bool], *, launches: int = 1,
            returns_view: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.supports = supports  # type: ignore[attr-defined]
        fn.launches = launches  # type: ignore[attr-defined]
        fn.returns_view = returns_view  # type: ignore[attr-defined]
        return fn
    return mark


# -- GEMMs ------------------------------------------------------------------------------------

def _dense_ok(arg_types: list, attrs: Any, out_type: Any) -> bool:
    return _floats(arg_types, out_type, attrs.out_dtype) and len(arg_types[1].shape) == 2 \
        and len(arg_types[0].shape) >= 1


@_kernel(_dense_ok)
def dense(args: list, attrs: Any, out: Any) -> Any:
    """``data (..., K) @ weight (N, K).T``."""
    from relay_ref.compute.cuda.gemm import gemm

    data, weight = args
    n, k = weight.shape
    m = _size(tuple(data.shape[:-1]))
    return gemm(data, weight, out, m, n, k, (0, k, 1), (0, 1, k), (0, n, 1))


def _matmul_ok(arg_types: list, attrs: Any, out_type: Any) -> bool:
    return _floats(arg_types, out_type, attrs.out_dtype) and \
        len(arg_types[0].shape) == 2 and len(arg_types[1].shape) == 2


def _operand_strides(shape: tuple[int, ...], transposed: bool
                     ) -> tuple[int, int, int, int, int]:
    """(rows, cols, batch stride, row stride, col stride) of the logical operand (``A`` as
    (M, K) or ``B`` as (K, N)) stored C-contiguously as ``shape`` (its last two axes
    swapped when ``transposed``)."""
    r, c = shape[-2], shape[-1]
    batch = r * c if len(shape) == 3 and shape[0] > 1 else 0
    if not transposed:
        return r, c, batch, c, 1
    return c, r, batch, 1, c


@_kernel(_matmul_ok)
def matmul(args: list, attrs: Any, out: Any) -> Any:
    """``op(A) @ op(B)``, ``op`` transposing as ``transpose_a`` / ``transpose_b`` say."""
    from relay_ref.compute.cuda.gemm import gemm

    a, b = args
    m, k, _, sam, sak = _operand_strides(tuple(a.shape), attrs.transpose_a)
    _, n, _, sbk, sbn = _operand_strides(tuple(b.shape), attrs.transpose_b)
    return gemm(a, b, out, m, n, k, (0, sam, sak), (0, sbk, sbn), (0, n, 1))


def _batch_matmul_ok(arg_types: list, attrs: Any, out_type: Any) -> bool:
    if not _floats(arg_types, out_type, attrs.out_dtype):
        return False
    a, b = arg_types[0].shape, arg_types[1].shape
    return len(a) == 3 and len(b) == 3 and (a[0] == b[0] or 1 in (a[0], b[0]))


@_kernel(_batch_matmul_ok)
def batch_matmul(args: list, attrs: Any, out: Any) -> Any:
    """Per batch ``op(A[b]) @ op(B[b])``; an operand with a batch of 1 is broadcast."""
    from relay_ref.compute.cuda.gemm import gemm

    a, b = args
    m, k, sab, sam, sak = _operand_strides(tuple(a.shape), attrs.transpose_a)
    _, n, sbb, sbk, sbn = _operand_strides(tuple(b.shape), attrs.transpose_b)
    batch = max(a.shape[0], b.shape[0])
    return gemm(a, b, out, m, n, k, (sab, sam, sak), (sbb, sbk, sbn), (m * n, n, 1),
                batch=batch)


# -- conv2d -----------------------------------------------------------------------------------

def _conv2d_ok(arg_types: list, attrs: Any, out_type: Any) -> bool:
    return (_floats(arg_types, out_type, attrs.out_dtype) and attrs.data_layout == "NCHW"
            and attrs.kernel_layout == "OIHW" and attrs.out_layout in ("", "NCHW")
            and len(arg_types[0].shape) == 4 and len(arg_types[1].shape) == 4)


@_kernel(_conv2d_ok)
def conv2d(args: list, attrs: Any, out: Any) -> Any:
    """``nn.conv2d`` NCHW x OIHW as an implicit GEMM."""
    from relay_ref.compute.cuda.conv import conv2d_nchw

    top, left, _, _ = pad4(attrs.padding)
    return conv2d_nchw(args[0], args[1], out, tuple(attrs.strides), (top, left),
                       tuple(attrs.dilation), attrs.groups)


# -- pooling ----------------------------------------------------------------------------------

def _pool_ok(arg_types: list, attrs: Any, out_type: Any) -> bool:
    return (_floats(arg_types, out_type) and attrs.layout == "NCHW"
            and attrs.out_layout in ("", "NCHW") and len(arg_types[0].shape) == 4)


def _pool(args: list, attrs: Any, out: Any, is_max: bool) -> Any:
    from relay_ref.compute.cuda.pool import pool2d_nchw

    return pool2d_nchw(args[0], out, tuple(attrs.pool_size), tuple(attrs.strides),
                       tuple(attrs.dilation), pad4(attrs.padding), is_max,
                       getattr(attrs, "count_include_pad", False))


@_kernel(_pool_ok)
def max_pool2d(args: list, attrs: Any, out: Any) -> Any:
    """``nn.max_pool2d`` (NCHW)."""
    return _pool(args, attrs, out, True)


@_kernel(_pool_ok)
def avg_pool2d(args: list, attrs: Any, out: Any) -> Any:
    """``nn.avg_pool2d`` (NCHW)."""
    return _pool(args, attrs, out, False)


def _global(args: list, out: Any, op: str) -> Any:
    from relay_ref.compute.cuda.reduce import reduce_rows

    n, c, h, w = args[0].shape
    return reduce_rows(args[0], out, n * c, h * w, 1, op)


@_kernel(_pool_ok)
def global_avg_pool2d(args: list, attrs: Any, out: Any) -> Any:
    """``nn.global_avg_pool2d`` (NCHW): a mean per (n, c) row."""
    return _global(args, out, "mean")


@_kernel(_pool_ok)
def global_max_pool2d(args: list, attrs: Any, out: Any) -> Any:
    """``nn.global_max_pool2d`` (NCHW): a max per (n, c) row."""
    return _global(args, out, "max")


# -- rows: softmax and reductions -------------------------------------------------------------

def _around(shape: tuple[int, ...], first: int, last: int) -> tuple[int, int, int]:
    """(outer, n, inner) of ``shape`` around axes ``first..last``."""
    return _size(shape[:first]), _size(shape[first:last + 1]), _size(shape[last + 1:])


def _softmax_ok(arg_types: list, attrs: Any, out_type: Any) -> bool:
    return _floats(arg_types, out_type) and len(arg_types[0].shape) >= 1


def _softmax(args: list, attrs: Any, out: Any, log: bool) -> Any:
    from relay_ref.compute.cuda.softmax import softmax_rows

    shape = tuple(args[0].shape)
    axis = normalize_axis("nn.softmax", attrs.axis, len(shape))
    return softmax_rows(args[0], out, *_around(shape, axis, axis), log=log)


@_kernel(_softmax_ok)
def softmax(args: list, attrs: Any, out: Any) -> Any:
    """``nn.softmax`` over ``axis``."""
    return _softmax(args, attrs, out, False)


@_kernel(_softmax_ok)
def log_softmax(args: list, attrs: Any, out: Any) -> Any:
    """``nn.log_softmax`` over ``axis``."""
    return _softmax(args, attrs, out, True)


def _run(axes: list[int]) -> tuple[int, int] | None:
    """(first, last) when ``axes`` (sorted) are one run of consecutive axes."""
    if not axes or axes != list(range(axes[0], axes[-1] + 1)):
        return None
    return axes[0], axes[-1]


def _reduce_ok(op: str) -> Callable[..., bool]:
    def ok(arg_types: list, attrs: Any, out_type: Any) -> bool:
        if not _floats(arg_types[:1], out_type):
            return False
        shape = arg_types[0].shape
        try:
            axes = reduce_axes(op, len(shape), attrs.axis, attrs.exclude)
        except Exception:  # noqa: BLE001 - the relation rejects it: the host reports it
            return False
        return _run(axes) is not None
    return ok


def _reduce(op: str) -> Callable[..., Any]:
    @_kernel(_reduce_ok(op))
    def fn(args: list, attrs: Any, out: Any) -> Any:
        from relay_ref.compute.cuda.reduce import reduce_rows

        shape = tuple(args[0].shape)
        first, last = _run(reduce_axes(op, len(shape), attrs.axis, attrs.exclude))
        return reduce_rows(args[0], out, *_around(shape, first, last), op)

    fn.__name__ = fn.__qualname__ = f"reduce_{op}"
    fn.__doc__ = f"``{op}`` over one run of consecutive axes."
    return fn


reduce_sum = _reduce("sum")
reduce_mean = _reduce("mean")
reduce_max = _reduce("max")
reduce_min = _reduce("min")


# -- views ------------------------------------------------------------------------------------

def _view_ok(arg_types: list, attrs: Any, out_type: Any) -> bool:
    return _static(arg_types[0]) and _static(out_type)


@_kernel(_view_ok, launches=0, returns_view=True)
def view(args: list, attrs: Any, shape: tuple[int, ...]) -> Any:
    """``reshape`` / ``squeeze`` / ``expand_dims`` / ``nn.batch_flatten`` of a C-contiguous
    array: the same elements in a new ``shape`` (a view)."""
    return args[0].reshape(shape)
