"""The whole pipeline on hostile input (DESIGN.md 4, "Errors are values").

For generated modules and for golden programs mutated at random (bytes deleted, tokens
inserted, spans duplicated), ``parse -> astext -> parse -> infer_types -> evaluate`` either
succeeds or raises a ``RelayError`` whose first diagnostic is located; no other exception
escapes, and whatever parses round-trips through the printer."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.testing.strategies import modules
from relay_ref.testing.typed_strategies import well_typed_modules

PROGRAMS = sorted((Path(__file__).parent / "programs").rglob("*.relay"))
SOURCES = [p.read_text() for p in PROGRAMS]

# Tokens that tend to reach unusual paths: bad literals, attrs, dtypes, shapes, metadata.
TOKENS = [
    "(", ")", "{", "}", "[", "]", ",", ";", ":", "=", "%x", "%0", "@main", "fn", "let", "if",
    "else", "match", "match?", "ref", "ref_read", "ref_write", "-1", "0", "2147483648",
    "99999999999999999999", "1.5f", "1e400f", "2i64", "255u8", "True", "Cons", "Nil", "_",
    "=>", "->", ".0", ".7", "add", "nn.conv2d", "take", "axis=-9", 'axis="a"', "axis=[[0]]",
    "strides=[0, 0]", "groups=0", "newshape=[-1, -1]", "begin=[5]", "Tensor[(?, 0), int8]",
    "Tensor[(), float16]", "bool", "uint8", "float64", "List[", "<A>", "meta[relay.Constant][0]",
    '#[version = "0.0.4"]', "#[metadata]", "/*", "//", "\r\n", "\t", "é", "\x00", '"s"',
]


@st.composite
def mutated_sources(draw) -> str:
    text = list(draw(st.sampled_from(SOURCES)))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "copy"]))
        if kind == "delete":
            del text[i:i + draw(st.integers(1, 12))]
        elif kind == "insert":
            text[i:i] = " " + draw(st.sampled_from(TOKENS)) + " "
        elif text:
            j = draw(st.integers(0, len(text) - 1))
            text[i:i] = text[j:j + draw(st.integers(1, 24))]
    return "".join(text)


def _check_located(err: rr.RelayError) -> None:
    assert err.diagnostics, f"{type(err).__name__} without diagnostics"
    assert err.diagnostics[0].span is not None, err.render()
    err.render()


def _check_pipeline(mod: rr.IRModule, run: bool) -> None:
    again = rr.parse(rr.astext(mod), "<printed>")
    assert rr.alpha_equal(mod, again), rr.astext(mod)
    typed = rr.infer_types(mod)
    if run and "main" in typed.functions and not typed["main"].params:
        rr.evaluate(typed)


def _no_self_calls(text: str) -> bool:
    """Runs only programs calling no user global: a mutation can make recursion endless."""
    defined = set(re.findall(r"def\s+@([\w.]+)", text))
    called = set(re.findall(r"@([\w.]+)", text)) - {"main"}
    return not (defined & called)


@given(mutated_sources())
def test_mutated_golden_programs_raise_only_located_relay_errors(text: str) -> None:
    try:
        mod = rr.parse(text, "mutated.relay")
        _check_pipeline(mod, run=_no_self_calls(text))
    except rr.RelayError as err:
        _check_located(err)


@given(modules(max_depth=3))
def test_generated_modules_raise_only_located_relay_errors(mod: rr.IRModule) -> None:
    try:
        _check_pipeline(mod, run=False)  # generated globals may recurse without end
    except rr.RelayError as err:
        # Generated nodes carry no spans; the error must still be a RelayError.
        assert err.diagnostics and err.render()


@given(well_typed_modules())
def test_well_typed_modules_survive_the_whole_pipeline(case) -> None:
    mod, _ = case
    _check_pipeline(mod, run=True)
