"""What every CPU kernel adapter (``relay_ref/ops/cpu_*.py``) does at its edges, in one place:
fall back to the op's reference, pick where to compute, hand the result back through
``out`` (the kernel protocol, ``registry.KernelRef``: write into ``out`` when given and
return it; never return a view of an argument)."""

from __future__ import annotations

import numpy as np

from relay_ref.ops.registry import get_op

Array = np.ndarray


def reference(op: str, args: list, attrs: object, out: Array | None) -> Array:
    """The op's NumPy reference, copied into ``out`` when given."""
    result = get_op(op).reference(args, attrs)
    if out is None:
        return result  # type: ignore[return-value]
    np.copyto(out, result)
    return out


def target(out: Array | None, shape: tuple[int, ...], dtype: np.dtype) -> Array:
    """Where to compute: ``out`` when it is what the protocol promises (C-contiguous, of the
    result's shape and dtype), else a new array."""
    if (out is not None and out.shape == shape and out.dtype == dtype
            and out.flags.c_contiguous):
        return out
    return np.empty(shape, dtype)


def finish(result: Array, out: Array | None) -> Array:
    """``result`` as the protocol returns it: ``out`` (filled) when one was given."""
    if out is None or result is out:
        return result
    np.copyto(out, result)
    return out
