"""Every registered pass whose class declares itself idempotent (``Pass.idempotent``, which
the pass manager trusts: it does not rerun such a pass on its own output) is idempotent on
every golden program under ``tests/programs`` that parses and type-checks: run again on
its own output, it returns an alpha-equal module. A pass declared later, or a golden
program added later, is covered without touching this file."""

from __future__ import annotations

from pathlib import Path

import pytest

import relay_ref as rr
from relay_ref.diagnostics import RelayError
from relay_ref.passes import get_pass, pass_class, pass_names
from relay_ref.prelude import prelude_fallback
from relay_ref.syntax.parser import parse
from relay_ref.typecheck.infer import infer_types

ROOT = Path(__file__).resolve().parent.parent / "programs"
DECLARED = [n for n in pass_names() if vars(pass_class(n)).get("idempotent") is True]


def _load(path: Path) -> rr.IRModule | None:
    try:
        return infer_types(parse(path.read_text(), str(path), fallback=prelude_fallback()))
    except RelayError:
        return None


_PROGRAMS = {p: _load(p) for p in sorted(ROOT.rglob("*.relay"))}
PROGRAMS = {p: m for p, m in _PROGRAMS.items() if m is not None}


@pytest.mark.parametrize("name", DECLARED)
def test_a_declared_idempotent_pass_is_idempotent_on_the_goldens(name: str) -> None:
    for path, mod in PROGRAMS.items():
        once = get_pass(name)(mod)
        once = once if once.checked_types else infer_types(once)
        twice = get_pass(name)(once)
        assert rr.alpha_equal(once, twice), (path.name, rr.astext(once), rr.astext(twice))


def test_the_selection_is_not_empty_by_accident() -> None:
    assert len(PROGRAMS) >= 100
    assert {"FoldConstant", "FoldScaleAxis", "DeadCodeElimination"} <= set(DECLARED)
    assert "PartialEvaluate" not in DECLARED and "BindParams" not in DECLARED
