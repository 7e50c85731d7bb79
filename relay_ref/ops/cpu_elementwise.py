"""CPU kernels of the plain elementwise operators: one NumPy ufunc call, no checks.

For an operator that ``tensor.plain_ufunc`` says is exactly a ufunc on same-dtype arrays
(``add``, ``multiply``, ``maximum``, the comparisons, ``exp``, ``tanh`` ...), the kernel
calls the ufunc directly when the arguments are arrays of one dtype of the kinds it names,
and the op's reference otherwise (bool arithmetic, mixed inputs: the reference's errors).
The reference does the same computation inside ``np.errstate`` plus argument checks, about
3-5 us per call on small tensors; this is about 1 us, which matters for the op-by-op
groups of small tensors (a 64-wide RNN step) and the per-call cost of a tiny program.

Invariants: the executor runs compiled code under ``np.errstate(all="ignore")``, as the
references do, so IEEE warnings stay silent; a 0-d result is returned as a 0-d array (a
ufunc gives a NumPy scalar), as the kernel protocol (``registry.KernelRef``) asks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relay_ref.ops.registry import get_op
from relay_ref.ops.tensor import plain_ufunc

__all__ = ["KERNELS", "kernel_for"]

Array = np.ndarray


def _reference(reference: Callable[..., object], args: list, attrs: object,
               out: Array | None) -> object:
    """Off the fast path: the op's reference, copied into ``out`` when given."""
    r = reference(args, attrs)
    if out is None:
        return r
    np.copyto(out, r)
    return out


def _binary(name: str, fn: np.ufunc, kinds: str) -> Callable[..., object]:
    reference = get_op(name).reference

    def kernel(args: list, attrs: object, out: Array | None = None) -> object:
        a, b = args
        if type(a) is Array and type(b) is Array and a.dtype == b.dtype and \
                a.dtype.kind in kinds:
            r = fn(a, b, out=out) if out is not None else fn(a, b)
            return r if type(r) is Array else np.asarray(r)
        return _reference(reference, args, attrs, out)

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _unary(name: str, fn: np.ufunc, kinds: str) -> Callable[..., object]:
    reference = get_op(name).reference

    def kernel(args: list, attrs: object, out: Array | None = None) -> object:
        x = args[0]
        if type(x) is Array and x.dtype.kind in kinds:
            r = fn(x, out=out) if out is not None else fn(x)
            return r if type(r) is Array else np.asarray(r)
        return _reference(reference, args, attrs, out)

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


#: op name -> kernel, for every op ``plain_ufunc`` knows (ops/kernels.py names them)
KERNELS: dict[str, Callable[..., object]] = {}


def kernel_for(name: str) -> Callable[..., object]:
    """The kernel of ``name`` (built on first use; ``KeyError`` for an op without one)."""
    known = KERNELS.get(name)
    if known is None:
        found = plain_ufunc(name)
        if found is None:
            raise KeyError(name)
        fn, kinds = found
        build = _binary if get_op(name).num_inputs == 2 else _unary
        known = KERNELS[name] = build(name, fn, kinds)
    return known


def __getattr__(attr: str) -> Callable[..., object]:
    """``cpu_elementwise.add`` etc.: the names ``ops/kernels.py`` refers to."""
    try:
        return kernel_for(attr.replace("__", "."))
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no kernel {attr!r}") from None
