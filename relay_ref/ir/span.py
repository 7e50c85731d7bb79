"""Source locations.

Invariant: every IR node built by the parser carries a ``Span``; nodes built by passes may
carry ``None``. Spans never take part in equality or hashing of IR nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, eq=False)
class Source:
    """A named source text (a file, a notebook cell, ``<string>``). Compared by identity."""

    name: str
    text: str = field(repr=False)

    def line(self, lineno: int) -> str:
        """The 1-based line ``lineno`` without its newline ('' when out of range).

        Lines end at ``\n`` only, as the lexer counts them (``str.splitlines`` would also
        split at form feeds and U+2028 inside comments and strings, shifting every line)."""
        lines = self.text.split("\n")
        return lines[lineno - 1].removesuffix("\r") if 1 <= lineno <= len(lines) else ""


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a ``Source``: 1-based line and column, end exclusive on the last line."""

    source: Source = field(compare=False)
    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def name(self) -> str:
        return self.source.name

    def __str__(self) -> str:
        return f"{self.source.name}:{self.line}:{self.column}"

    def merge(self, other: Span | None) -> Span:
        """The smallest span covering ``self`` and ``other`` (same source assumed)."""
        if other is None:
            return self
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(self.source, start[0], start[1], end[0], end[1])
