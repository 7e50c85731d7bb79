"""Robustness: whatever the parser accepts, ``infer_types`` returns or raises
``RelayTypeError`` — never another exception (spec/typing.md 6.4)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import relay_ref as rr

PROGRAMS = sorted((Path(__file__).parents[1] / "programs").rglob("*.relay"))
_TOKEN = re.compile(r"%\w+|@\w+|[A-Za-z_][\w.]*|\d+(?:\.\d+)?[a-z0-9]*|\?|[()\[\],:;{}]")
REPLACEMENTS = ["int32", "int64", "float32", "bool", "?", "1", "2f", "0", "(", ")", ",",
                "Nil", "Cons", "_", "List[int32]", "Tensor[(2, 3), float32]", "fn (int32)",
                "()", "add", "%x", "ref(1)", "match", "match?", "if"]


@pytest.mark.skipif(not PROGRAMS, reason="no golden programs")
@given(st.sampled_from(PROGRAMS or [Path("/dev/null")]), st.data())
def test_mutated_programs_raise_only_type_errors(path: Path, data) -> None:
    text = path.read_text()
    tokens = list(_TOKEN.finditer(text))
    if not tokens:
        return
    for _ in range(data.draw(st.integers(1, 3))):
        tokens = list(_TOKEN.finditer(text))
        tok = data.draw(st.sampled_from(tokens))
        choices = REPLACEMENTS + [t.group() for t in tokens[:200]]
        new = data.draw(st.sampled_from(choices))
        text = text[:tok.start()] + new + text[tok.end():]
    try:
        mod = rr.parse(text, "<fuzz>")
    except rr.ParseError:
        return
    try:
        rr.infer_types(mod)
    except rr.RelayTypeError as err:
        assert err.diagnostics and all(d.message for d in err.diagnostics)


def _syntax_modules():
    from relay_ref.testing.strategies import modules

    return modules()


@given(st.deferred(_syntax_modules))
def test_syntactically_valid_programs_raise_only_type_errors(mod) -> None:
    # Mostly ill-typed programs of every syntactic form (relay_ref.testing.strategies).
    try:
        out = rr.infer_types(mod)
    except rr.RelayTypeError as err:
        assert err.diagnostics
        assert not any("internal error" in d.message for d in err.diagnostics), err.render()
    else:
        assert set(out.global_types) == set(mod.functions)
