"""Round trip (Pr-RoundTrip): parse(astext(m)) is alpha-equal to m, and astext is a fixed
point after one round -- on every golden program and on generated programs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

import relay_ref as rr
from relay_ref import parse, parse_expr
from relay_ref.syntax.printer import astext
from relay_ref.testing import strategies

PROGRAMS = Path(__file__).parent.parent / "programs"
GOLDEN = sorted(p for p in PROGRAMS.rglob("*.relay") if "expect-error: parse" not in
                p.read_text())
EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.relay"))


@pytest.mark.parametrize("path", GOLDEN + EXAMPLES, ids=lambda p: str(p.name))
def test_golden_round_trip(path: Path) -> None:
    mod = parse(path.read_text(), str(path))
    text = astext(mod)
    again = parse(text, "printed")
    assert rr.alpha_equal(mod, again), text
    assert rr.structural_hash(mod) == rr.structural_hash(again)
    assert astext(again) == text


def _check_module(mod: rr.IRModule) -> None:
    text = astext(mod)
    again = parse(text, "printed", prelude=False)
    assert rr.alpha_equal(mod, again), text
    assert rr.structural_hash(mod) == rr.structural_hash(again)
    assert astext(again) == text


@settings(max_examples=150)
@given(strategies.modules())
def test_generated_modules_round_trip(mod: rr.IRModule) -> None:
    _check_module(mod)


@settings(max_examples=100)
@given(strategies.exprs())
def test_generated_exprs_round_trip(expr) -> None:
    text = astext(expr)
    again = parse_expr(text, "printed", prelude=False)
    assert rr.alpha_equal(expr, again), text
    assert astext(again) == text


@given(strategies.types())
def test_generated_types_round_trip(ty) -> None:
    from relay_ref.prelude import prelude_fallback
    from relay_ref.syntax.parser import parse_type

    assert rr.alpha_equal(parse_type(astext(ty), fallback=prelude_fallback()), ty)
