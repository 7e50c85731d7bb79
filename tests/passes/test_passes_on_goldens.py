"""Every registered pass on every golden program of ``tests/programs/eval`` and
``tests/programs/typecheck`` that type-checks and whose ``@main`` takes tensors (or
nothing): the result type-checks with ``@main``'s type unchanged and gives the same value
as the input (where the input gives one: passes may only refine). Arguments are fixed,
deterministic tensors of the parameters' static types. A pass registered later, or a golden
program added later, is covered without touching this file. No pair is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import relay_ref as rr
from relay_ref.interpreter.values import value_to_text
from relay_ref.passes import get_pass, pass_names
from relay_ref.testing.check import values_equal
from relay_ref.testing.goldens import load_golden

ROOT = Path(__file__).resolve().parent.parent / "programs"
PROGRAMS = sorted(p for d in ("eval", "typecheck") for p in (ROOT / d).glob("*.relay")
                  if not p.name.endswith(".expected.relay"))

_LOADED = {p: load_golden(p) for p in PROGRAMS}
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
    assert values_equal(before, after), (value_to_text(before), value_to_text(after),
                                  rr.astext(out))


def test_the_goldens_cover_the_language() -> None:
    """The selection is not empty by accident (a path or a loader broke)."""
    assert sum(v is not None for v in _LOADED.values()) >= 30
    assert "ToANormalForm" in pass_names()
