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

import pytest

import relay_ref as rr
from relay_ref.testing.check import values_equal
from relay_ref.testing.goldens import load_golden

ROOT = Path(__file__).resolve().parent.parent / "programs"
PROGRAMS = sorted(p for p in ROOT.rglob("*.relay") if not p.name.endswith(".expected.relay"))


_LOADED = {p: load_golden(p) for p in PROGRAMS}
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
    assert values_equal(exe(*args), expected, rtol=1e-4, atol=1e-5)
    # a second call: buffers reused, nothing stale
    assert values_equal(exe(*args), expected, rtol=1e-4, atol=1e-5)
