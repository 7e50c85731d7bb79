"""Dimensions and shapes: the one home of dimension arithmetic (spec/typing.md 1, 5.1, 5.2).

A dimension (``Dim``) is a non-negative ``int``, a symbolic expression over shape variables
(``SymDim``: ``n``, ``n * 4``, ``floordiv(h + 2, 2) + 1``; the algebra lives in ``symdim.py``)
or ``ANY`` (``?``, TVM's ``tir::Any``): unknown until run time and unrelated to every other
dimension. A shape is a tuple of
dimensions. Type relations (``relay_ref.ops``), unification (``relay_ref.typecheck``) and the
printers all test and combine dimensions through the helpers here, never by ``isinstance``
themselves, so that a richer dimension (a symbolic expression) changes this module only.

Invariants of the helpers:

* arithmetic propagates ``?``: a result depending on an unknown dimension is ``?``;
* arithmetic on symbolic dimensions stays symbolic and canonical (``n * 4 == 4 * n``); where a
  helper would have to decide something undecidable about them it answers ``?`` (``dim_map``)
  or "could be" (``dims_compatible``), never a silent ``False``;
* a comparison involving ``?`` is never a silent ``False``: ``dims_compatible`` answers
  "could these be equal", ``broadcast_dim`` keeps what is known and leaves the rest to run
  time (relay.md 2.4).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from relay_ref.ir.symdim import (
    Bounds,
    SymDim,
    UndecidableDim,
    bounds_of,
    dim_max,
    dim_min,
    dim_to_text,
    dim_vars,
    eval_dim,
    floordiv,
    floormod,
    prove_equal,
    prove_le,
    prove_lt,
    substitute_dim,
    sym,
    var_name,
)

__all__ = [
    "ANY", "AnyDim", "Bounds", "Dim", "DimMismatch", "Shape", "ShapeBindError", "SymDim",
    "UndecidableDim", "bind_shape", "bounds_of", "broadcast_dim", "broadcast_shapes",
    "dim_divisible", "dim_eq", "dim_le", "dim_lt", "dim_known_or_sym",
    "dim_map", "dim_max", "dim_min", "dim_text", "dim_vars", "dims_compatible", "eval_dim",
    "eval_shape", "floordiv", "floormod", "is_any", "is_known", "is_static", "is_symbolic",
    "prove_equal", "prove_le", "prove_lt", "shape_prod", "shape_text", "shape_vars",
    "substitute_dim", "substitute_shape", "sym", "var_name",
]


@dataclass(frozen=True, slots=True)
class AnyDim:
    """The dynamic dimension ``?`` (TVM's ``tir::Any``): unknown until run time."""

    def __repr__(self) -> str:
        return "?"


ANY = AnyDim()
Dim = int | SymDim | AnyDim
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


def is_symbolic(d: object) -> bool:
    """Whether ``d`` is a symbolic dimension (``n``, ``n * 4``), neither a number nor ``?``."""
    return isinstance(d, SymDim)


def is_static(shape: Sequence[object]) -> bool:
    """Whether every dimension of ``shape`` is a number (no ``?``, no shape variable)."""
    return all(isinstance(d, int) for d in shape)


def dim_text(d: object) -> str:
    """A dimension as Relay writes it: ``3``, ``?`` or ``n * 4``."""
    return "?" if isinstance(d, AnyDim) else dim_to_text(d)


def shape_text(shape: Sequence[object]) -> str:
    """A shape as Relay writes it: ``(2, 3)``, ``(3)`` for one dimension, ``()``, ``(?, 4)``."""
    return "(" + ", ".join(dim_text(d) for d in shape) + ")"


def dim_map(fn: Callable[..., int], *dims: Dim) -> Dim:
    """``fn(*dims)`` if no dimension is ``?``, else ``ANY``. Symbolic dimensions go through
    ``fn``'s arithmetic (``+ - * // %`` stay symbolic); if ``fn`` must decide something about
    them that is not provable (a comparison, ``int(n)``), the answer is ``ANY``."""
    if any(isinstance(d, AnyDim) for d in dims):
        return ANY
    try:
        return fn(*dims)
    except UndecidableDim:
        return ANY


def shape_prod(shape: Sequence[Dim]) -> Dim:
    """The number of elements of ``shape`` (``1`` for ``()``; symbolic if a dimension is),
    ``ANY`` if any is ``?``."""
    total: Dim = 1
    for d in shape:
        if isinstance(d, AnyDim):
            return ANY
        total = total * d
    return total


def dims_compatible(a: Dim, b: Dim) -> bool:
    """Could ``a`` and ``b`` be the same dimension? (``?`` could be anything; two symbolic
    dimensions could unless they provably differ.)"""
    if isinstance(a, AnyDim) or isinstance(b, AnyDim) or a == b:
        return True
    if isinstance(a, SymDim) or isinstance(b, SymDim):
        return prove_equal(a, b) is not False
    return False


def dim_eq(a: Dim, b: Dim) -> bool | None:
    """Three-valued ``a == b``: ``True`` when provably equal, ``False`` when provably
    different, ``None`` when it depends on run time (``?``, or undecidable expressions).
    Relations reject only on ``False`` and leave ``None`` to the run-time check (Shape-Rel)."""
    if isinstance(a, AnyDim) or isinstance(b, AnyDim):
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return prove_equal(a, b)


def dim_le(a: Dim, b: Dim) -> bool | None:
    """Three-valued ``a <= b`` (``None``: unknown statically; see ``dim_eq``)."""
    if isinstance(a, AnyDim) or isinstance(b, AnyDim):
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a <= b
    return prove_le(a, b)


def dim_lt(a: Dim, b: Dim) -> bool | None:
    """Three-valued ``a < b`` (``None``: unknown statically; see ``dim_eq``)."""
    if isinstance(a, AnyDim) or isinstance(b, AnyDim):
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a < b
    return prove_lt(a, b)


def dim_divisible(d: Dim, k: Dim) -> bool | None:
    """Three-valued "``k`` divides ``d``" for ``k != 0``: ``floormod(d, k) == 0`` decided
    where it simplifies (``n * 4`` by 2: ``True``; ``2 * n + 1`` by 2: ``False``), ``None``
    otherwise (``n`` by 2, or a ``?``)."""
    if isinstance(d, AnyDim) or isinstance(k, AnyDim):
        return None
    if isinstance(k, int) and k == 0:
        return None
    rem = floormod(d, k)
    if isinstance(rem, int):
        return rem == 0
    lo, hi = bounds_of(rem)
    return False if lo > 0 else None


def dim_known_or_sym(a: Dim, b: Dim) -> Dim:
    """Of two dimensions that must be equal (checked by the caller), the more informative
    one: a number over an expression over ``?``; ``a`` when equally informative."""
    rank = lambda d: 0 if isinstance(d, int) else (1 if isinstance(d, SymDim) else 2)  # noqa: E731
    return b if rank(b) < rank(a) else a


def broadcast_dim(a: Dim, b: Dim) -> Dim:
    """One output dimension of NumPy broadcasting, ``?`` as relay.md 2.4: ``? , ?`` is ``?``;
    ``?`` with ``1`` is ``?``; ``?`` with ``n != 1`` is ``n`` (the ``?`` must be ``1`` or
    ``n`` at run time; a symbolic ``n`` only when provably at least 2, else ``?``: a symbol
    that may be 1 is broadcast instead). Raises ``DimMismatch`` for two known dimensions
    that differ and are both not ``1``."""
    if isinstance(a, AnyDim) and isinstance(b, AnyDim):
        return ANY
    if isinstance(a, AnyDim):
        return b if _at_least_two(b) else ANY
    if isinstance(b, AnyDim):
        return a if _at_least_two(a) else ANY
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    if isinstance(a, SymDim) or isinstance(b, SymDim):
        # Shape-Broadcast: not provably equal and neither is 1. A number c against a
        # symbol: the symbol must be c or 1 at run time, the result is c. Provably different
        # with both at least 2: an error. Otherwise unknown until run time (checked there).
        if prove_equal(a, b) is False and prove_le(2, a) and prove_le(2, b):
            raise DimMismatch(a, b)
        if isinstance(a, int):
            return a
        if isinstance(b, int):
            return b
        return ANY
    raise DimMismatch(a, b)


def _at_least_two(d: Dim) -> bool:
    """Whether ``d`` is provably at least 2: then a ``?`` broadcast against it is ``1`` or
    ``d``, and the result is ``d``. A symbol that may be ``1`` (or ``0``) could be broadcast
    to the ``?``'s size instead, so the result is unknown (Shape-Broadcast)."""
    if isinstance(d, int):
        return d != 1
    return prove_le(2, d) is True


def broadcast_shapes(sa: Shape, sb: Shape) -> Shape:
    """Right-aligned NumPy broadcasting of two shapes (``broadcast_dim`` per dimension;
    raises ``DimMismatch`` at the first pair that cannot broadcast)."""
    n = max(len(sa), len(sb))
    pa = (1,) * (n - len(sa)) + tuple(sa)
    pb = (1,) * (n - len(sb)) + tuple(sb)
    return tuple(broadcast_dim(a, b) for a, b in zip(pa, pb, strict=True))


def shape_vars(shape: Sequence[object]) -> frozenset[str]:
    """The shape variables a shape mentions."""
    out: frozenset[str] = frozenset()
    for d in shape:
        out |= dim_vars(d)
    return out


def substitute_shape(shape: Sequence[object], mapping: Mapping[str, object]) -> Shape:
    """``shape`` with shape variables replaced (``substitute_dim`` per dimension)."""
    return tuple(substitute_dim(d, mapping) for d in shape)  # type: ignore[misc]


def eval_shape(shape: Sequence[object], env: Mapping[str, int]) -> tuple[int, ...]:
    """The concrete shape when every variable has a value in ``env`` (``KeyError`` names a
    missing one; ``?`` raises ``KeyError('?')``)."""
    out = []
    for d in shape:
        if isinstance(d, AnyDim):
            raise KeyError("?")
        out.append(eval_dim(d, env))
    return tuple(out)


class ShapeBindError(ValueError):
    """A concrete shape does not match a symbolic one (Shape-Bind): ``index`` is the
    dimension (``None`` for a rank difference), ``expected`` the symbolic dimension,
    ``actual`` the number found, ``env`` the variables bound so far."""

    def __init__(self, index: int | None, expected: object, actual: object,
                 env: Mapping[str, int]) -> None:
        if index is None:
            msg = f"expected rank {expected}, got rank {actual}"
        else:
            name = var_name(expected)
            vals = ", ".join(f"{v} = {env[v]}" for v in sorted(dim_vars(expected)) if v in env)
            if name is not None:
                msg = f"dimension {index}: {name} is {env.get(name)} but the value has {actual}"
            else:
                where = f" (with {vals})" if vals else ""
                got = eval_dim(expected, env) if dim_vars(expected) <= env.keys() else None
                shown = f" = {got}" if got is not None and not isinstance(expected, int) else ""
                msg = (f"dimension {index}: expected {dim_text(expected)}{shown}{where}, "
                       f"got {actual}")
        super().__init__(msg)
        self.index = index
        self.expected = expected
        self.actual = actual
        self.env = dict(env)


def bind_shape(pattern: Sequence[object], actual: Sequence[int], env: dict[str, int]) -> None:
    """Match a concrete shape against a symbolic one (spec/semantics.md Shape-Bind), in place:
    first each bare variable not yet in ``env`` is bound to its dimension (left to right),
    then every dimension whose variables are all bound is checked (``?`` matches anything;
    a dimension with a variable still unbound is not checked). Raises ``ShapeBindError`` on
    the first mismatch (``env`` then holds the bindings made so far)."""
    if len(pattern) != len(actual):
        raise ShapeBindError(None, len(pattern), len(actual), env)
    for d, n in zip(pattern, actual, strict=True):
        name = var_name(d)
        if name is not None and name not in env:
            env[name] = int(n)
    for i, (d, n) in enumerate(zip(pattern, actual, strict=True)):
        if isinstance(d, AnyDim):
            continue
        if isinstance(d, int):
            if d != n:
                raise ShapeBindError(i, d, int(n), env)
            continue
        if dim_vars(d) <= env.keys() and eval_dim(d, env) != n:
            raise ShapeBindError(i, d, int(n), env)
