"""The parser's pre-pass (spec/syntax.md S-Comment, S-Metadata): blank comments and cut off
the ``#[metadata]`` section before the grammar sees the text.

``prescan`` keeps every line and column (a comment becomes spaces, its newlines stay), so
spans computed on the blanked text are spans of the source. The parser calls it first;
``comments.py`` uses the comment offsets it collects. It imports nothing of the parser, so
both can import it (no cycle between parser and comments).
"""

from __future__ import annotations

import re

from relay_ref.diagnostics import ERROR, Diagnostic, Note, ParseError
from relay_ref.ir.span import Source, Span

_INTERESTING = re.compile(r'["/#]')
_METADATA = re.compile(r"#\[\s*metadata\s*\]")
_NEST = re.compile(r"/\*|\*/")


def prescan(source: Source, found: list[tuple[int, int]] | None = None
            ) -> tuple[str, str | None, Span | None]:
    """Blank comments (keeping newlines) and split off ``#[metadata]``.

    Returns (text for the grammar, metadata text or None, span of the ``#[metadata]`` line).
    Strings are skipped, so ``"//"`` inside a string is not a comment. Each comment's
    ``(start, end)`` offsets are appended to ``found`` when given (Pr-Comments)."""
    text = source.text
    pieces: list[str] = []
    start = 0  # text[start:] is not yet copied to pieces
    pos = 0
    n = len(text)
    while True:
        m = _INTERESTING.search(text, pos)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c == '"':
            j = text.find('"', i + 1)
            if j < 0:
                break  # the lexer reports the unterminated string
            pos = j + 1
        elif c == "#":
            mm = _METADATA.match(text, i)
            if mm is None:
                pos = i + 1
                continue
            pieces.append(text[start:i])
            span = offset_span(source, i, mm.end())
            return "".join(pieces), text[mm.end():], span
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            pieces.append(text[start:i])
            pieces.append(" " * (j - i))
            if found is not None:
                found.append((i, j))
            start = pos = j
        elif text.startswith("/*", i):
            depth = 0
            k = i
            while True:
                mm = _NEST.search(text, k)
                if mm is None:
                    span = offset_span(source, i, i + 2)
                    raise ParseError(Diagnostic(ERROR, "unterminated comment", span, (
                        Note("a '/*' comment must be closed by '*/' (comments nest)"),)))
                depth += 1 if mm.group() == "/*" else -1
                k = mm.end()
                if depth == 0:
                    break
            pieces.append(text[start:i])
            pieces.append(re.sub(r"[^\n]", " ", text[i:k]))
            if found is not None:
                found.append((i, k))
            start = pos = k
        else:
            pos = i + 1
    pieces.append(text[start:])
    return "".join(pieces), None, None


def offset_span(source: Source, start: int, end: int) -> Span:
    """The span of ``source.text[start:end]`` (1-based lines and columns)."""
    text = source.text
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    end_line = text.count("\n", 0, end) + 1
    end_col = end - (text.rfind("\n", 0, end) + 1) + 1
    return Span(source, line, col, end_line, end_col)
