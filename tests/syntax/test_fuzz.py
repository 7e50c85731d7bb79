"""Fuzzing: random byte and token mutations of the golden programs never make rr.parse raise
anything but rr.ParseError."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import relay_ref as rr

PROGRAMS = sorted((Path(__file__).parent.parent / "programs").rglob("*.relay"))
TEXTS = [p.read_text() for p in PROGRAMS]
TOKENS = ["(", ")", "{", "}", "[", "]", ",", ";", ":", "=", "=>", "->", "%x", "%0", "@main",
          "let", "fn", "if", "else", "match", "match?", "def", "type", "extern", "free_var",
          "ref", "Cons", "Nil", "_", "?", "1", "-1", "1.5", "1f", "1e400f", "9" * 30, "i64",
          '"s"', '"', "/*", "*/", "//", "#[", "#[metadata]", "meta[relay.Constant][0]",
          "Tensor", "int32", "+", "*", "==", "nn.conv2d", "units=None", "\n", " ", "\x00",
          "é", "%", "@", ".", ".0", "meta"]
_TOKEN_RE = re.compile(r"\s+|[A-Za-z_%@][\w/.]*|\d+\w*|.", re.S)


def _check_parse_raises_only_parse_errors(text: str) -> None:
    try:
        rr.parse(text, "fuzz.relay")
    except rr.ParseError as err:
        assert err.diagnostics and err.render()


@settings(max_examples=150)
@given(st.sampled_from(range(len(TEXTS))), st.data())
def test_byte_mutations(index: int, data: st.DataObject) -> None:
    text = bytearray(TEXTS[index].encode())
    for _ in range(data.draw(st.integers(1, 4))):
        if not text:
            break
        pos = data.draw(st.integers(0, len(text) - 1))
        op = data.draw(st.sampled_from(["flip", "delete", "insert", "dup"]))
        if op == "flip":
            text[pos] = data.draw(st.integers(0, 255))
        elif op == "delete":
            del text[pos: pos + data.draw(st.integers(1, 8))]
        elif op == "insert":
            text[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
        else:
            text[pos:pos] = text[pos: pos + data.draw(st.integers(1, 16))]
    _check_parse_raises_only_parse_errors(text.decode("utf-8", errors="replace"))


@settings(max_examples=150)
@given(st.sampled_from(range(len(TEXTS))), st.data())
def test_token_mutations(index: int, data: st.DataObject) -> None:
    tokens = _TOKEN_RE.findall(TEXTS[index])
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, max(len(tokens) - 1, 0)))
        op = data.draw(st.sampled_from(["replace", "delete", "insert", "swap"]))
        if op == "replace" and tokens:
            tokens[pos] = data.draw(st.sampled_from(TOKENS))
        elif op == "delete" and tokens:
            del tokens[pos]
        elif op == "insert":
            tokens.insert(pos, data.draw(st.sampled_from(TOKENS)))
        elif tokens:
            other = data.draw(st.integers(0, len(tokens) - 1))
            tokens[pos], tokens[other] = tokens[other], tokens[pos]
    _check_parse_raises_only_parse_errors("".join(tokens))


def test_golden_error_programs_raise_parse_errors_only() -> None:
    for text in TEXTS:
        _check_parse_raises_only_parse_errors(text)
