"""Dimensions and shapes: the one home of dimension arithmetic (spec/typing.md 1, 5.1).

A dimension (``Dim``) is a non-negative ``int`` or ``ANY`` (``?``, TVM's ``tir::Any``):
unknown until run time and unrelated to every other dimension. A shape is a tuple of
dimensions. Type relations (``relay_ref.ops``), unification (``relay_ref.typecheck``) and the
printers all test and combine dimensions through the helpers here, never by ``isinstance``
themselves, so that a richer dimension (a symbolic expression) changes this module only.

Invariants of the helpers:

* arithmetic propagates ``?``: a result depending on an unknown dimension is ``?``;
* a comparison involving ``?`` is never a silent ``False``: ``dims_compatible`` answers
  "could these be equal", ``broadcast_dim`` keeps what is known and leaves the rest to run
  time (relay.md 2.4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AnyDim:
    """The dynamic dimension ``?`` (TVM's ``tir::Any``): unknown until run time."""

    def __repr__(self) -> str:
        return "?"


ANY = AnyDim()
Dim = int | AnyDim
Shape = tuple[Dim, ...]


class DimMismatch(ValueError):
    """Two known dimensions that cannot be broadcast together (``a`` vs ``b``). The layer
    that knows the operator (a type relation) turns it into its own located error."""

    def __init__(self, a: Dim, b: Dim) -> None:
        super().__init__(f"{dim_text(a)} vs {dim_text(b)}")
        self.a = a
        self.b = b


def is_any(d: object) -> bool:
    """Whether ``d`` is the unknown dimension ``?``."""
    return isinstance(d, AnyDim)


def is_known(d: object) -> bool:
    """Whether ``d`` is a known dimension (an ``int``, not ``?``)."""
    return isinstance(d, int)


def is_static(shape: Sequence[object]) -> bool:
    """Whether every dimension of ``shape`` is known (no ``?``)."""
    return all(isinstance(d, int) for d in shape)


def dim_text(d: object) -> str:
    """A dimension as Relay writes it: ``3`` or ``?``."""
    return "?" if isinstance(d, AnyDim) else str(d)


def shape_text(shape: Sequence[object]) -> str:
    """A shape as Relay writes it: ``(2, 3)``, ``(3)`` for one dimension, ``()``, ``(?, 4)``."""
    return "(" + ", ".join(dim_text(d) for d in shape) + ")"


def dim_map(fn: Callable[..., int], *dims: Dim) -> Dim:
    """``fn(*dims)`` if every dimension is known, else ``ANY``."""
    if any(isinstance(d, AnyDim) for d in dims):
        return ANY
    return fn(*dims)


def shape_prod(shape: Sequence[Dim]) -> Dim:
    """The number of elements of ``shape`` (``1`` for ``()``), ``ANY`` if any is ``?``."""
    total = 1
    for d in shape:
        if isinstance(d, AnyDim):
            return ANY
        total *= d
    return total


def dims_compatible(a: Dim, b: Dim) -> bool:
    """Could ``a`` and ``b`` be the same dimension? (``?`` could be anything.)"""
    return isinstance(a, AnyDim) or isinstance(b, AnyDim) or a == b


def broadcast_dim(a: Dim, b: Dim) -> Dim:
    """One output dimension of NumPy broadcasting, ``?`` as relay.md 2.4: ``? , ?`` is ``?``;
    ``?`` with ``1`` is ``?``; ``?`` with ``n != 1`` is ``n`` (the ``?`` must be ``1`` or
    ``n`` at run time). Raises ``DimMismatch`` for two known dimensions that differ and are
    both not ``1``."""
    if isinstance(a, AnyDim) and isinstance(b, AnyDim):
        return ANY
    if isinstance(a, AnyDim):
        return ANY if b == 1 else b
    if isinstance(b, AnyDim):
        return ANY if a == 1 else a
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    raise DimMismatch(a, b)


def broadcast_shapes(sa: Shape, sb: Shape) -> Shape:
    """Right-aligned NumPy broadcasting of two shapes (``broadcast_dim`` per dimension;
    raises ``DimMismatch`` at the first pair that cannot broadcast)."""
    n = max(len(sa), len(sb))
    pa = (1,) * (n - len(sa)) + tuple(sa)
    pb = (1,) * (n - len(sb)) + tuple(sb)
    return tuple(broadcast_dim(a, b) for a, b in zip(pa, pb, strict=True))
