"""Diagnostics: errors are values with spans, rendered once.

A ``Diagnostic`` is what went wrong and where; a ``RelayError`` carries one or more of them.
Every user mistake that reaches the public API is a ``RelayError`` subclass; rendering
(``str(err)`` or ``render``) produces, per diagnostic::

    file.relay:3:14: error: cannot unify ...
       3 |   %x + %y
         |        ^^
    file.relay:1:8: note: parameter annotated here
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from relay_ref.ir.span import Span

ERROR = "error"
WARNING = "warning"
NOTE = "note"

_COLOURS = {ERROR: "\x1b[1;31m", WARNING: "\x1b[1;33m", NOTE: "\x1b[1;36m"}
_BOLD, _RESET, _GREEN = "\x1b[1m", "\x1b[0m", "\x1b[1;32m"


@dataclass(frozen=True, slots=True)
class Note:
    """A secondary message, optionally pointing at another location."""

    message: str
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One located message. ``level`` is ``"error"``, ``"warning"`` or ``"note"``."""

    level: str
    message: str
    span: Span | None = None
    notes: tuple[Note, ...] = field(default=())

    def render(self, colour: bool = False) -> str:
        parts = [_render_one(self.level, self.message, self.span, colour)]
        for note in self.notes:
            parts.append(_render_one(NOTE, note.message, note.span, colour))
        return "\n".join(parts)


def _render_one(level: str, message: str, span: Span | None, colour: bool) -> str:
    where = f"{span}: " if span is not None else ""
    if colour:
        head = f"{_BOLD}{where}{_RESET}{_COLOURS[level]}{level}:{_RESET} {_BOLD}{message}{_RESET}"
    else:
        head = f"{where}{level}: {message}"
    if span is None:
        return head
    text = span.source.line(span.line)
    if not text and span.line > 1 and span.column == 1:
        return head
    gutter = str(span.line)
    pad = " " * len(gutter)
    start = max(span.column - 1, 0)
    if span.end_line == span.line:
        end = start + max(span.end_column - span.column, 1)
    else:
        end = max(len(text), start + 1)
    # Columns count characters; the quoted line is shown with tabs expanded and the carets
    # placed by display width, so they line up under tabs and wide characters. A line
    # longer than _LINE_MAX (a printed model's parameter list) is cut to a window around
    # the span, "…" marking each cut, so one diagnostic never prints kilobytes.
    lo, hi = 0, len(text)
    if len(text) > _LINE_MAX:
        lo = max(0, min(start - _LINE_MAX // 4, len(text) - _LINE_MAX))
        hi = lo + _LINE_MAX
    left = "…" if lo > 0 else ""
    right = "…" if hi < len(text) else ""
    shown = left + text[lo:hi].replace("\t", " " * _TAB) + right
    indent = len(left) + _display_width(text[lo:max(start, lo)])
    width = max(_display_width(text[max(start, lo):min(end, hi)]), 1)
    carets = "^" * width
    if colour:
        carets = f"{_GREEN}{carets}{_RESET}"
    caret_line = " " * indent + carets
    return f"{head}\n {gutter} | {shown}\n {pad} | {caret_line}"


_TAB = 4  # columns a tab is shown as in quoted source lines
_LINE_MAX = 160  # characters of a quoted source line shown around the span


def _display_width(text: str) -> int:
    """Terminal columns of ``text`` as quoted: tabs ``_TAB`` wide, East Asian wide and
    full-width characters 2, combining marks 0, everything else 1."""
    width = 0
    for ch in text:
        if ch == "\t":
            width += _TAB
        elif ch.isascii():
            width += 1
        elif unicodedata.combining(ch):
            continue
        else:
            width += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return width


class RelayError(Exception):
    """Base of every user-facing error; ``diagnostics`` is non-empty."""

    kind = "error"

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic | str,
                 span: Span | None = None) -> None:
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(ERROR, diagnostics, span)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        super().__init__(self.render())

    @property
    def span(self) -> Span | None:
        """The location of the first diagnostic (None when it has none)."""
        return self.diagnostics[0].span if self.diagnostics else None

    @property
    def message(self) -> str:
        return self.diagnostics[0].message if self.diagnostics else ""

    def render(self, colour: bool = False) -> str:
        return "\n".join(d.render(colour) for d in self.diagnostics)

    def __str__(self) -> str:
        return self.render()


class ParseError(RelayError):
    """Bad syntax, unbound names, unknown operators or attributes."""

    kind = "parse"


class RelayTypeError(RelayError):
    """An ill-typed program (unification failure, relation failure, non-exhaustive match...)."""

    kind = "type"


class RelayRuntimeError(RelayError):
    """A failure while evaluating a well-typed program (no clause matched, division by zero,
    out-of-range index, shape mismatch on ``?`` dimensions...). ``relay_stack`` lists the
    Relay globals active when it happened, innermost last."""

    kind = "runtime"

    def __init__(self, diagnostics, span: Span | None = None,
                 relay_stack: tuple[str, ...] = ()) -> None:
        self.relay_stack = tuple(relay_stack)
        super().__init__(diagnostics, span)


class FrontendError(RelayError):
    """A model that a frontend cannot import: unsupported operators or attribute values
    (all of them listed in one error, before any conversion), a malformed graph, a file that
    is not a model."""

    kind = "frontend"
