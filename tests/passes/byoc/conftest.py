"""Shared fixtures of the BYOC pass tests: a test backend's support table, registered for
one test and forgotten after it (the registry is global), and ``refines``: the check that a
pass's output equals its input in value on random arguments and survives the text round
trip."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.ir.module import IRModule
from relay_ref.passes.compiler_support import (
    Composite,
    Support,
    register_support,
    unregister_support,
)

MakeBackend = Callable[..., Support]


@pytest.fixture
def backend() -> Iterator[MakeBackend]:
    """``backend(name, ops, patterns=(), **cost)`` registers a ``Support`` table (``ops`` a
    collection of op names or a mapping to predicates; ``patterns`` ``Composite``s or
    ``(name, pattern[, check])``) and unregisters it when the test ends."""
    made: list[str] = []

    def make(name: str, ops: object = (), patterns: tuple = (), **cost: object) -> Support:
        table = dict(ops) if isinstance(ops, dict) else dict.fromkeys(ops)  # type: ignore
        comps = tuple(p if isinstance(p, Composite) else Composite(*p) for p in patterns)
        support = register_support(Support(name, table, comps, **cost), replace=True)
        made.append(name)
        return support

    yield make
    for name in made:
        unregister_support(name)


@pytest.fixture
def test_backend(backend: MakeBackend) -> Support:
    """Backend ``"test"``: supports nn.relu, add, concatenate and tanh (no patterns)."""
    return backend("test", ("nn.relu", "add", "concatenate", "tanh"))


def _random_args(mod: IRModule, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        ty = p.type_annotation
        out.append(rng.standard_normal(tuple(int(d) for d in ty.shape)).astype(ty.dtype))
    return out


def _refines(before: IRModule, after: IRModule, seed: int = 0) -> None:
    args = _random_args(before, seed)
    want = rr.evaluate(before, *args)
    got = rr.evaluate(after, *args)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    assert rr.alpha_equal(rr.parse(rr.astext(after)), after)
    rr.infer_types(after)


@pytest.fixture
def refines() -> Callable[..., None]:
    """``refines(before, after)``: equal values of ``@main`` on random arguments (shapes
    from its parameter annotations), ``after`` parses back alpha-equal and type-checks."""
    return _refines
