"""Errors point where the user looks (issue 9, part 5): in the user's file rather than the
prelude, at the bracket an unexpected end of input leaves open, with carets under tabs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import relay_ref as rr
from relay_ref.diagnostics import Diagnostic
from relay_ref.ir.span import Source, Span


def _type_error(text: str, name: str = "user.relay") -> rr.RelayError:
    with pytest.raises(rr.RelayError) as info:
        rr.infer_types(rr.parse(text, name))
    return info.value


@pytest.mark.parametrize("body, where", [
    ("Cons(1, Cons)", (2, 3)),                       # a constructor as a wrong argument
    ("let %f = Cons;\n  %f(1, Cons)", (3, 3)),       # through a variable callee
    ("Some(1, Nil)", (2, 3)),                         # wrong arity of a prelude constructor
    ("@map(Cons, Cons(1, Nil))", (2, 3)),             # a constructor as a function argument
])
def test_prelude_constructor_misuse_is_reported_in_the_users_file(
        body: str, where: tuple[int, int]) -> None:
    err = _type_error(f"def @main() {{\n  {body}\n}}\n")
    first = err.diagnostics[0]
    assert first.span is not None and first.span.source.name == "user.relay"
    assert (first.span.line, first.span.column) == where
    # The prelude's definition, when mentioned, is a note, not the error's location.
    for note in first.notes:
        if note.span is not None and note.span.source.name != "user.relay":
            assert "defined here" in note.message or "declared here" in note.message


def test_prelude_constructor_definition_is_a_note() -> None:
    err = _type_error("def @main() {\n  Cons(1, Cons)\n}\n")
    notes = err.diagnostics[0].notes
    assert any("constructor Cons is defined here" in n.message and n.span is not None
               and n.span.source.name.endswith("prelude.relay") for n in notes)
    assert len({n.message for n in notes}) == len(notes)  # no duplicated notes


def test_user_constructor_misuse_is_reported_at_the_use() -> None:
    text = "type T { A(int32) }\n\ndef @main() {\n  A(A)\n}\n"
    err = _type_error(text)
    span = err.diagnostics[0].span
    assert (span.line, span.column) == (4, 3)


@pytest.mark.parametrize("text, opener", [
    ("def @main() {\n  let %x = 1;\n  if (True) {\n    %x\n", (3, 13)),
    ("def @main() {\n  %x\n", (1, 13)),
    ("def @main() {\n  (1, 2", (2, 3)),
    ('def @main(%x: Tensor[(1), float32]) {\n  /* { */ let %y = layout_transform(%x, '
     'src_layout="{", dst_layout="(");  // }\n  %y\n', (1, 37)),  # strings, comments skip
    ("def @main(%x: Tensor[(1, 2", (1, 22)),
])
def test_unexpected_end_of_input_points_at_the_unclosed_bracket(
        text: str, opener: tuple[int, int]) -> None:
    with pytest.raises(rr.ParseError) as info:
        rr.parse(text, "open.relay")
    diag = info.value.diagnostics[0]
    assert "end of input" in diag.message
    notes = [n for n in diag.notes if "never closed" in n.message]
    assert len(notes) == 1
    assert (notes[0].span.line, notes[0].span.column) == opener


def test_balanced_input_gets_no_unclosed_note() -> None:
    with pytest.raises(rr.ParseError) as info:
        rr.parse("def @main() { 1 }\ndef @f(", "open.relay")
    notes = info.value.diagnostics[0].notes
    assert [n.span.column for n in notes if "never closed" in n.message] == [7]


def _caret_column(rendered: str) -> tuple[str, int, int]:
    """(quoted line, display column of the first caret, number of carets)."""
    lines = rendered.splitlines()
    quoted = lines[1].split(" | ", 1)[1]
    carets = lines[2].split(" | ", 1)[1]
    return quoted, carets.index("^"), carets.count("^")


@pytest.mark.parametrize("line", [
    "\t\tadd(%x, 1f)",
    "  \t add(%x, 1f)",
    "\t日本 add(%x, 1f)",
])
def test_carets_line_up_under_tabs_and_wide_characters(relay, line: str) -> None:
    src = Source("t.relay", f"def @main() {{\n{line}\n}}\n")
    col = line.index("add") + 1
    diag = Diagnostic("error", "bad", Span(src, 2, col, 2, col + len("add(%x, 1f)")))
    quoted, at, count = _caret_column(diag.render())
    assert "\t" not in quoted
    # The caret's display column is where "add" is displayed in the quoted line.
    prefix = quoted[: quoted.index("add")]
    wide = sum(2 if ch in "日本" else 1 for ch in prefix)
    assert at == wide
    assert count == len("add(%x, 1f)")


def _relay_check(relay, prog: Path, text: str) -> tuple[Path, subprocess.CompletedProcess]:
    """Write ``text`` to ``prog`` and run ``relay check`` on it in a subprocess (``relay``:
    the conftest fixture)."""
    prog.write_text(text)
    return prog, relay("check", prog)


def test_type_error_on_a_tab_indented_line_lines_up(relay, tmp_path: Path) -> None:
    _, proc = _relay_check(relay, tmp_path / "tab.relay",
                           "def @main(%x: int32) {\n\t\tadd(%x, 1f)\n}\n")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    at = next(i for i, ln in enumerate(lines) if "dtypes differ" in ln)
    quoted = lines[at + 1].split(" | ", 1)[1]
    carets = lines[at + 2].split(" | ", 1)[1]
    assert carets.index("^") == quoted.index("add")


def test_cli_reports_prelude_misuse_in_the_users_file(relay, tmp_path: Path) -> None:
    prog, proc = _relay_check(relay, tmp_path / "ctor.relay", "def @main() {\n  Cons(1, Cons)\n}\n")
    assert proc.returncode == 1
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"{prog}:2:3: error:")
    assert "Traceback" not in proc.stderr
