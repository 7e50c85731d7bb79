"""Dimension arithmetic (relay_ref.ir.shape), ``?`` included, against NumPy's rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relay_ref.ir.shape import (
    ANY,
    AnyDim,
    DimMismatch,
    broadcast_dim,
    broadcast_shapes,
    dim_map,
    dim_text,
    dims_compatible,
    is_any,
    is_known,
    is_static,
    shape_prod,
    shape_text,
)
from relay_ref.ir.types import ANY as TYPES_ANY
from relay_ref.ir.types import TensorType


def test_one_dimension_type() -> None:
    assert TYPES_ANY is ANY and isinstance(ANY, AnyDim)
    assert is_any(ANY) and not is_any(3)
    assert is_known(3) and not is_known(ANY)
    assert is_static((2, 3)) and not is_static((2, ANY)) and is_static(())
    assert TensorType((2, 3), "float32").is_static
    assert not TensorType((ANY, 3), "float32").is_static


def test_broadcast_dim_matches_numpy_on_known_dimensions() -> None:
    for a, b in itertools.product((1, 2, 3), repeat=2):
        try:
            want = np.broadcast_shapes((a,), (b,))[0]
        except ValueError:
            with pytest.raises(DimMismatch, match=f"{a} vs {b}"):
                broadcast_dim(a, b)
        else:
            assert broadcast_dim(a, b) == want


def test_broadcast_dim_with_any() -> None:
    assert broadcast_dim(ANY, ANY) is ANY
    assert broadcast_dim(ANY, 1) is ANY and broadcast_dim(1, ANY) is ANY
    assert broadcast_dim(ANY, 5) == 5 and broadcast_dim(5, ANY) == 5


def test_broadcast_shapes_right_aligned() -> None:
    assert broadcast_shapes((4, 1, 3), (2, 1)) == (4, 2, 3)
    assert broadcast_shapes((), (ANY, 2)) == (ANY, 2)
    assert broadcast_shapes((ANY, 1), (3,)) == (ANY, 3)
    with pytest.raises(DimMismatch):
        broadcast_shapes((2, 3), (4, 3))


def test_dim_map_shape_prod_and_compatibility_propagate_any() -> None:
    assert dim_map(lambda a, b: a * b, 3, 4) == 12
    assert dim_map(lambda a, b: a * b, 3, ANY) is ANY
    assert shape_prod((2, 3, 4)) == 24 and shape_prod(()) == 1
    assert shape_prod((2, ANY)) is ANY
    assert dims_compatible(3, 3) and dims_compatible(ANY, 3) and dims_compatible(3, ANY)
    assert not dims_compatible(3, 4)


def test_text() -> None:
    assert dim_text(ANY) == "?" and dim_text(7) == "7"
    assert shape_text((2, ANY)) == "(2, ?)" and shape_text((3,)) == "(3)"
    assert shape_text(()) == "()"


def test_relations_and_unification_use_the_one_helper_set() -> None:
    from relay_ref.ops.registry import RelationError
    from relay_ref.ops.relations import broadcast_shapes as rel_broadcast
    from relay_ref.typecheck.unify import Unifier, UnifyError

    assert rel_broadcast("add", (ANY, 3), (2, 1, 3)) == (2, ANY, 3)
    with pytest.raises(RelationError, match=r"add: shapes \(2\) and \(3\) cannot be "
                                            r"broadcast together \(2 vs 3\)"):
        rel_broadcast("add", (2,), (3,))
    u = Unifier()
    u.unify(TensorType((ANY, 3), "float32"), TensorType((5, 3), "float32"))
    with pytest.raises(UnifyError, match=r"dimension 1 differs \(3 vs 4\)"):
        u.unify(TensorType((ANY, 3), "float32"), TensorType((5, 4), "float32"))
