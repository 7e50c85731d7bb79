"""Data layouts (TVM ``include/tvm/tir/data_layout.h``): the helpers every spatial op family
shares, for plain layouts and for blocked ones.

A *plain* layout names each axis once with an upper-case letter: ``NCHW``, ``NHWC``, ``OIHW``.
A spatial op fixes a *canonical* order (``NCHW`` for 2-d data, ``OIHW`` for 2-d kernels) and
accepts any permutation of it; its relation reads shapes with ``shape_to`` and writes them
with ``shape_from``, its reference moves arrays with ``to_canonical`` / ``from_canonical``.

A *blocked* layout also splits an axis into an outer part (upper case) and an inner block of a
fixed size (lower case with its factor): ``NCHW8c`` is (N, C / 8, H, W, 8). ``parse_layout``
reads one into ``LayoutAxis`` items; ``blocked_shape`` / ``unblocked_shape`` compute shapes and
``to_primal`` / ``from_primal`` move arrays between a blocked layout and its *primal* (plain)
layout, which lists the upper-case axes in the order they appear.

Every helper that judges a layout raises ``AttrError`` (a bad attribute) or, for shapes,
``RelationError`` (the argument types can never fit); none raises anything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import Dim, dim_divisible, dim_map, is_any, shape_text
from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import AttrError, RelationError

Array = np.ndarray


# -- plain layouts -------------------------------------------------------------------

def check_layout(layout: str, letters: str, what: str) -> None:
    """``layout`` must be a permutation of ``letters`` (``AttrError`` naming ``what``)."""
    if sorted(layout) != sorted(letters):
        raise AttrError(f"{what} must be a permutation of {letters!r}, found {layout!r}",
                        what)


def perm(layout: str, canonical: str) -> list[int]:
    """Axes of ``layout`` in ``canonical`` order: ``x.transpose(perm)`` is canonical."""
    return [layout.index(c) for c in canonical]


def shape_to(shape: Sequence, layout: str, canonical: str) -> tuple:
    """A shape written in ``layout`` reordered to ``canonical`` order."""
    return tuple(shape[i] for i in perm(layout, canonical))


def shape_from(shape: Sequence, layout: str, canonical: str) -> tuple:
    """Inverse of ``shape_to``: a canonical-order shape written in ``layout``."""
    return tuple(shape[canonical.index(c)] for c in layout)


def to_canonical(x: Array, layout: str, canonical: str) -> Array:
    """``x`` (in ``layout``) transposed to ``canonical`` (a view; ``x`` itself if equal)."""
    return x if layout == canonical else np.transpose(x, perm(layout, canonical))


def from_canonical(x: Array, layout: str, canonical: str) -> Array:
    """Inverse of ``to_canonical``: a canonical-order array transposed to ``layout``."""
    if layout == canonical:
        return x
    return np.transpose(x, [canonical.index(c) for c in layout])


def along(vec: Array, ndim: int, axis: int) -> Array:
    """A 1-d array reshaped to broadcast along ``axis`` of an ``ndim`` tensor."""
    shape = [1] * ndim
    shape[axis] = -1
    return vec.reshape(shape)


def check_rank(op: str, t: TensorType, n: int, what: str) -> None:
    """``t`` must have rank ``n`` (``RelationError`` naming ``op`` and ``what``)."""
    if t.ndim != n:
        raise RelationError(f"{op}: {what} must have rank {n}, found shape "
                            f"{shape_text(t.shape)}")


# -- blocked layouts -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class LayoutAxis:
    """One axis of a layout: ``name`` is upper case; ``factor`` is 0 for a primal (outer)
    axis and the block size for a sub-axis (written lower case, ``8c``)."""

    name: str
    factor: int = 0

    @property
    def is_block(self) -> bool:
        return self.factor > 0


def parse_layout(layout: str, what: str = "layout") -> tuple[LayoutAxis, ...]:
    """Parse ``NCHW8c`` into its axes. Invariants (else ``AttrError``): each upper-case
    letter at most once; each block ``<factor><letter>`` has factor >= 1 and its letter's
    primal axis somewhere in the layout, and at most one block per letter."""
    axes: list[LayoutAxis] = []
    i = 0
    while i < len(layout):
        j = i
        while j < len(layout) and layout[j].isdigit():
            j += 1
        if j == len(layout) or not layout[j].isalpha() or not layout[j].isascii():
            raise AttrError(f"{what} {layout!r} is not a layout (expected letters, each "
                            f"lower-case one preceded by its block size)", what)
        ch = layout[j]
        if j > i:
            if not ch.islower():
                raise AttrError(f"{what} {layout!r}: a block size must precede a lower-case "
                                f"axis, found {layout[i:j + 1]!r}", what)
            factor = int(layout[i:j])
            if factor < 1:
                raise AttrError(f"{what} {layout!r}: block size must be >= 1", what)
            axes.append(LayoutAxis(ch.upper(), factor))
        elif ch.islower():
            raise AttrError(f"{what} {layout!r}: the sub-axis {ch!r} needs a block size "
                            f"(e.g. 8{ch})", what)
        else:
            axes.append(LayoutAxis(ch))
        i = j + 1
    primal = [a.name for a in axes if not a.is_block]
    blocks = [a.name for a in axes if a.is_block]
    for names, kind in ((primal, "axis"), (blocks, "block")):
        for n in names:
            if names.count(n) > 1:
                raise AttrError(f"{what} {layout!r} repeats the {kind} {n}", what)
    for n in blocks:
        if n not in primal:
            raise AttrError(f"{what} {layout!r} splits {n} but has no {n} axis", what)
    return tuple(axes)


def primal(axes: Sequence[LayoutAxis]) -> str:
    """The plain layout of a parsed layout: its upper-case axes in order (``NCHW8c`` ->
    ``NCHW``)."""
    return "".join(a.name for a in axes if not a.is_block)


def block_factors(axes: Sequence[LayoutAxis]) -> dict[str, int]:
    """The block size of each split axis (``NCHW8c`` -> ``{"C": 8}``)."""
    return {a.name: a.factor for a in axes if a.is_block}


def blocked_shape(op: str, plain: Sequence[Dim], axes: Sequence[LayoutAxis]) -> tuple:
    """The shape in layout ``axes`` of a tensor whose primal-layout shape is ``plain``.

    A split axis of size ``n`` becomes ``n // factor`` and ``factor``; ``n`` must be a
    multiple of the factor (``RelationError``); ``?`` stays ``?`` (its block is known)."""
    names = primal(axes)
    factors = block_factors(axes)
    out = []
    for a in axes:
        if a.is_block:
            out.append(a.factor)
            continue
        n = plain[names.index(a.name)]
        f = factors.get(a.name, 1)
        if dim_divisible(n, f) is False:
            raise RelationError(f"{op}: axis {a.name} has size {n}, not a multiple of the "
                                f"block size {f}")
        out.append(dim_map(lambda n, f=f: n // f, n))
    return tuple(out)


def unblocked_shape(shape: Sequence[Dim], axes: Sequence[LayoutAxis]) -> tuple:
    """The primal-layout shape of a tensor of ``shape`` in layout ``axes`` (outer size
    times block size for each split axis)."""
    factors = block_factors(axes)
    out = []
    for a, n in zip(axes, shape, strict=True):
        if not a.is_block:
            f = factors.get(a.name, 1)
            out.append(ANY if is_any(n) else n * f)
    return tuple(out)


def to_primal(x: Array, axes: Sequence[LayoutAxis]) -> Array:
    """A (new) array in the primal layout of ``axes`` from ``x`` in layout ``axes``: each
    block axis is moved next to its outer axis and merged into it."""
    names = primal(axes)
    order: list[int] = []
    merged: list[int] = []
    for name in names:
        outer = next(i for i, a in enumerate(axes) if a.name == name and not a.is_block)
        inner = [i for i, a in enumerate(axes) if a.name == name and a.is_block]
        order += [outer] + inner
        merged.append(x.shape[outer] * (x.shape[inner[0]] if inner else 1))
    return np.transpose(x, order).reshape(merged).copy()


def from_primal(x: Array, axes: Sequence[LayoutAxis]) -> Array:
    """Inverse of ``to_primal``: split each blocked axis of the primal-layout ``x`` (its
    size a multiple of the block) and order the pieces as ``axes``."""
    names = primal(axes)
    factors = block_factors(axes)
    split: list[int] = []
    pieces: list[tuple[str, bool]] = []
    for name, n in zip(names, x.shape, strict=True):
        f = factors.get(name)
        if f is None:
            split.append(n)
            pieces.append((name, False))
        else:
            split += [n // f, f]
            pieces += [(name, False), (name, True)]
    order = [pieces.index((a.name, a.is_block)) for a in axes]
    return np.transpose(x.reshape(split), order).copy()
