"""Rendering of located diagnostics (relay_ref.diagnostics)."""

from relay_ref.diagnostics import Diagnostic, Note, ParseError, RelayError, RelayRuntimeError
from relay_ref.ir.span import Source, Span

SRC = Source("prog.relay", "def @main() {\n  add(%x, 1)\n}\n")


def test_render_points_at_the_span():
    d = Diagnostic("error", "unbound local variable %x", Span(SRC, 2, 7, 2, 9))
    text = d.render()
    lines = text.splitlines()
    assert lines[0] == "prog.relay:2:7: error: unbound local variable %x"
    assert lines[1] == " 2 |   add(%x, 1)"
    assert lines[2] == "   |       ^^"


def test_notes_render_after_the_error():
    d = Diagnostic("error", "bad", Span(SRC, 2, 3, 2, 6),
                   (Note("defined here", Span(SRC, 1, 5, 1, 10)),))
    text = d.render()
    assert "prog.relay:1:5: note: defined here" in text
    assert text.index("error: bad") < text.index("note: defined here")


def test_colour_rendering_uses_ansi_and_keeps_the_message():
    d = Diagnostic("error", "bad", Span(SRC, 1, 1, 1, 4))
    coloured = d.render(colour=True)
    assert "\x1b[" in coloured and "bad" in coloured
    assert "\x1b[" not in d.render()


def test_errors_carry_diagnostics_and_location():
    err = ParseError("expected a type after ':'", Span(SRC, 1, 12, 1, 13))
    assert isinstance(err, RelayError)
    assert err.span.line == 1 and err.span.column == 12
    assert str(err).startswith("prog.relay:1:12: error: expected a type after ':'")


def test_runtime_error_keeps_relay_stack():
    err = RelayRuntimeError("no clause matched", None, relay_stack=("main", "nth"))
    assert err.relay_stack == ("main", "nth")
    assert err.render() == "error: no clause matched"


def test_source_lines_split_at_newlines_only():
    # A form feed or U+2028 in a comment made the caret sit under the wrong source line.
    src = Source("f.relay", "// a\u2028b \x0c c\r\ndef @main() { %y }")
    text = Diagnostic("error", "unbound local variable %y", Span(src, 2, 15, 2, 17)).render()
    assert text.splitlines()[1] == " 2 | def @main() { %y }"
    assert src.line(1) == "// a\u2028b \x0c c" and src.line(3) == ""


def test_a_very_long_source_line_is_quoted_as_a_window_around_the_span():
    import pytest

    import relay_ref as rr

    params = ", ".join(f"%p{i}: Tensor[(3), float32]" for i in range(300))
    with pytest.raises(rr.RelayTypeError) as info:
        rr.infer_types(rr.parse(f"def @main({params}) {{ add(%p0, 1) }}"))
    lines = info.value.render().splitlines()
    source, carets = lines[1], lines[2]
    assert len(source) < 200 and source.startswith(" 1 | …")
    column = carets.index("^")
    assert source[column:column + 10] == "add(%p0, 1"
