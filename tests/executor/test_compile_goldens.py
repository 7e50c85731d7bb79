"""``rr.compile`` against the definitional interpreter on every golden program.

Each ``.relay`` program under ``tests/programs/`` (eval, typecheck, passes, tvm) that
type-checks and has an ``@main`` whose parameters are tensors of static types (or none) is
run both ways on fixed arguments: the compiled result equals ``rr.evaluate``'s (tensors
within float tolerance, ADT values, tuples and refs structurally, closures by kind); a
program the interpreter rejects at run time fails compiled too, as a located
``RelayRuntimeError`` on the same line. No program is skipped: one that cannot be run
(no ``@main``, a parameter that is not a static tensor) is not collected, and the count of
collected programs is asserted so the sweep cannot silently shrink.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.interpreter.values import value_to_text
from relay_ref.ir.types import TensorType

ROOT = Path(__file__).resolve().parent.parent / "programs"
PROGRAMS = sorted(p for p in ROOT.rglob("*.relay") if not p.name.endswith(".expected.relay"))


def _args(mod: rr.IRModule) -> tuple | None:
    out = []
    for i, param in enumerate(mod.functions["main"].params):
        ty = param.type_annotation
        if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
            return None
        size = int(np.prod(ty.shape, dtype=np.int64))
        if ty.dtype == "bool":
            data = (np.arange(size) + i) % 2 == 0
        else:
            data = ((np.arange(size) + i + 1) % 4).astype(ty.dtype)
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


def same(a: object, b: object) -> bool:
    """Equal Relay values (iterative over ADT spines)."""
    stack = [(a, b)]
    while stack:
        a, b = stack.pop()
        if isinstance(a, rr.Closure | rr.RecClosure):
            if not isinstance(b, rr.Closure | rr.RecClosure):
                return False
        elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
                return False
            if a.shape != b.shape or a.dtype != b.dtype:
                return False
            if not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True) \
                    if a.dtype.kind in "fc" else not np.array_equal(a, b):
                return False
        elif isinstance(a, tuple) and isinstance(b, tuple):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif isinstance(a, rr.ConstructorValue) and isinstance(b, rr.ConstructorValue):
            if a.constructor.name != b.constructor.name or len(a.fields) != len(b.fields):
                return False
            stack.extend(zip(a.fields, b.fields, strict=True))
        elif isinstance(a, rr.RefValue) and isinstance(b, rr.RefValue):
            stack.append((a.value, b.value))
        elif value_to_text(a) != value_to_text(b):
            return False
    return True


_LOADED = {p: _load(p) for p in PROGRAMS}
CASES = [p for p in PROGRAMS if _LOADED[p] is not None]


def test_the_sweep_covers_the_golden_programs() -> None:
    assert len(CASES) >= 60, [p.name for p in CASES]


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_compiled_equals_interpreted(path: Path) -> None:
    mod, args = _LOADED[path]  # type: ignore[misc]
    try:
        expected = rr.evaluate(mod, *args)
    except rr.RelayRuntimeError as err:
        with pytest.raises(rr.RelayRuntimeError) as got:
            rr.compile(mod)(*args)
        want = err.diagnostics[0].span
        span = got.value.diagnostics[0].span
        assert span is not None and want is not None
        assert (span.line, span.source.name) == (want.line, want.source.name), \
            (str(got.value), str(err))
        return
    exe = rr.compile(mod)
    assert same(exe(*args), expected)
    assert same(exe(*args), expected)  # a second call: buffers reused, nothing stale
