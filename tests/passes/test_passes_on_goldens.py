"""Every registered pass on every golden program of ``tests/programs/eval`` and
``tests/programs/typecheck`` that type-checks and whose ``@main`` takes tensors (or
nothing): the result type-checks with ``@main``'s type unchanged and gives the same value
as the input (where the input gives one: passes may only refine). Arguments are fixed,
deterministic tensors of the parameters' static types. A pass registered later, or a golden
program added later, is covered without touching this file. No pair is skipped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.interpreter.values import value_to_text
from relay_ref.ir.types import TensorType
from relay_ref.passes import get_pass, pass_names

ROOT = Path(__file__).resolve().parent.parent / "programs"
PROGRAMS = sorted(p for d in ("eval", "typecheck") for p in (ROOT / d).glob("*.relay")
                  if not p.name.endswith(".expected.relay"))

#: (pass, program relative to tests/programs) -> why it is skipped for now.
def _args(mod: rr.IRModule) -> tuple | None:
    """Deterministic arguments for ``@main``, or None when a parameter is not a tensor of a
    static type."""
    out = []
    for i, param in enumerate(mod.functions["main"].params):
        ty = param.type_annotation
        if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
            return None
        size = int(np.prod(ty.shape, dtype=np.int64))
        if ty.dtype == "bool":
            data = (np.arange(size) + i) % 2 == 0
        else:
            data = ((np.arange(size) + i + 1) % 4).astype(ty.dtype)  # small, >= 0
        out.append(np.asarray(data).reshape(ty.shape))
    return tuple(out)


def _load(path: Path) -> tuple[rr.IRModule, tuple] | None:
    try:
        mod = rr.infer_types(rr.parse(path.read_text(), source_name=str(path)))
    except rr.RelayError:
        return None
    if "main" not in mod.functions:
        return None
    args = _args(mod)
    return None if args is None else (mod, args)


def _same(a: object, b: object) -> bool:
    if isinstance(a, rr.Closure | rr.RecClosure):
        return isinstance(b, rr.Closure | rr.RecClosure)  # functions are not compared
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return (a.shape == b.shape and a.dtype == b.dtype
                and bool(np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, rr.ConstructorValue) and isinstance(b, rr.ConstructorValue):
        return a.constructor.name == b.constructor.name and _same(tuple(a.fields),
                                                                  tuple(b.fields))
    if isinstance(a, rr.RefValue) and isinstance(b, rr.RefValue):
        return _same(a.value, b.value)
    return value_to_text(a) == value_to_text(b)


_LOADED = {p: _load(p) for p in PROGRAMS}
CASES = [(name, p) for name in pass_names() for p in PROGRAMS if _LOADED[p] is not None]


@pytest.mark.parametrize(("name", "path"), CASES,
                         ids=[f"{n}-{p.parent.name}/{p.stem}" for n, p in CASES])
def test_pass_keeps_types_and_values_of_golden_program(name: str, path: Path) -> None:
    mod, args = _LOADED[path]  # type: ignore[misc]
    out = rr.infer_types(get_pass(name)(mod))
    assert rr.alpha_equal(out.global_types["main"], mod.global_types["main"])
    try:
        before = rr.evaluate(mod, *args)
    except rr.RelayRuntimeError:
        return  # the input fails: any outcome refines it
    after = rr.evaluate(out, *args)
    assert _same(before, after), (value_to_text(before), value_to_text(after),
                                  rr.astext(out))


def test_the_goldens_cover_the_language() -> None:
    """The selection is not empty by accident (a path or a loader broke)."""
    assert sum(v is not None for v in _LOADED.values()) >= 30
    assert "ToANormalForm" in pass_names()
