"""Pass specs: the text that names a configured pass, as ``relay opt --passes`` and
``rr.optimize`` read it (``relay_ref.passes.manager`` builds the passes).

Grammar: ``specs := spec ("," spec)*`` and ``spec := NAME [ "(" arguments ")" ]`` where
``arguments`` is a Python argument list whose values are Python literals
(``FuseOps(max_depth=8)``, ``AnnotateTarget(targets=["ort"])``): commas inside brackets and
strings do not split specs. Values are read with ``ast.literal_eval``: nothing is evaluated,
so a spec can never run code. Names are checked against the registry later (by the manager).

Errors are ``PassSpecError`` (a ``ValueError``) carrying the character range of the mistake in
the text given, so the command line can point at it. Every malformed text is one, however
long or deeply nested (never a ``RecursionError`` or ``MemoryError`` from Python's parser):
a pass list is at most ``MAX_TEXT`` characters and its brackets nest at most
``MAX_NESTING`` deep.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_NESTING", "MAX_TEXT", "PassSpec", "PassSpecError", "parse_spec", "parse_specs",
           "split_specs"]

_OPEN, _CLOSE = "([{", ")]}"

#: The longest pass list read (characters) and the deepest nesting of its brackets.
MAX_TEXT = 10_000
MAX_NESTING = 32


class PassSpecError(ValueError):
    """A malformed pass spec or a bad option. ``text``: the whole text read; ``start`` /
    ``end``: the offending character range in it (0-based, end exclusive)."""

    def __init__(self, message: str, text: str = "", start: int = 0, end: int = 0) -> None:
        super().__init__(message)
        self.message, self.text = message, text
        self.start, self.end = start, max(end, start + 1)


@dataclass(frozen=True)
class PassSpec:
    """One parsed spec: the pass ``name``, positional ``args`` and keyword ``options``
    (literal values); ``text`` is the spec as written, at ``start`` in ``source`` (the
    whole text read)."""

    name: str
    args: tuple[Any, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    start: int = 0
    source: str = ""

    def at(self, sub: str = "") -> tuple[str, int, int]:
        """``(source, start, end)`` of ``sub``'s first occurrence in the spec (the whole
        spec when ``sub`` is empty or absent), for ``PassSpecError``."""
        source = self.source or self.text
        i = self.text.find(sub) if sub else -1
        if i < 0:
            return source, self.start, self.start + len(self.text)
        return source, self.start + i, self.start + i + len(sub)


def split_specs(text: str) -> list[tuple[str, int]]:
    """``text`` cut at the commas outside brackets and string literals: ``(piece, offset)``
    pairs, each piece stripped and non-empty (empty pieces are skipped, as ``"A,,B"``
    names two passes). Unbalanced brackets, an open string, a text longer than
    ``MAX_TEXT`` or brackets nested deeper than ``MAX_NESTING`` are a ``PassSpecError``."""
    _check_length(text)
    pieces: list[tuple[str, int]] = []
    stack: list[tuple[str, int]] = []  # open brackets and where
    quote, quote_at = "", 0
    begin = i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote, quote_at = ch, i
        elif ch in _OPEN:
            stack.append((ch, i))
            if len(stack) > MAX_NESTING:
                raise PassSpecError(f"the pass options nest brackets more than {MAX_NESTING} "
                                    "deep", text, i, i + 1)
        elif ch in _CLOSE:
            if not stack or _OPEN.index(stack[-1][0]) != _CLOSE.index(ch):
                raise PassSpecError(f"unbalanced {ch!r} in the pass list", text, i, i + 1)
            stack.pop()
        elif ch == "," and not stack:
            _add(pieces, text, begin, i)
            begin = i + 1
        i += 1
    if quote:
        raise PassSpecError("unclosed string in the pass list", text, quote_at, quote_at + 1)
    if stack:
        at = stack[-1][1]
        raise PassSpecError(f"unclosed {text[at]!r} in the pass list", text, at, at + 1)
    _add(pieces, text, begin, len(text))
    return pieces


def _check_length(text: str) -> None:
    if len(text) > MAX_TEXT:
        raise PassSpecError(f"the pass list is too long ({len(text)} characters; at most "
                            f"{MAX_TEXT})", text, MAX_TEXT, len(text))


def _add(pieces: list[tuple[str, int]], text: str, begin: int, end: int) -> None:
    raw = text[begin:end]
    piece = raw.strip()
    if piece:
        pieces.append((piece, begin + len(raw) - len(raw.lstrip())))


def parse_spec(piece: str, text: str | None = None, offset: int = 0) -> PassSpec:
    """One spec (``Name`` or ``Name(args)``); ``text`` / ``offset``: where ``piece`` sits in
    the whole text, for error ranges."""
    whole = piece if text is None else text
    if text is None:
        split_specs(piece)  # length, nesting, balance: located errors before Python's parser
    name, paren, rest = piece.partition("(")
    name = name.strip()
    if not name.isidentifier():
        raise PassSpecError(f"{piece!r} is not a pass name (a name, optionally followed "
                            "by options in parentheses: FuseOps(max_depth=8))", whole,
                            offset, offset + len(piece))
    if not paren:
        return PassSpec(name, text=piece, start=offset, source=whole)
    if not rest.rstrip().endswith(")"):
        raise PassSpecError(f"{name}: the options must end with ')'", whole, offset,
                            offset + len(piece))
    inner_at = offset + piece.index("(") + 1
    try:
        call = ast.parse(f"f({rest}", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # deep '-' chains too
        raise PassSpecError(f"{name}: cannot read the options ({_short(rest.rstrip()[:-1])}: "
                            "write name=value with Python literal values)", whole,
                            inner_at, offset + len(piece) - 1) from None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise PassSpecError(f"{name}: cannot read the options (one parenthesised list of "
                            "name=value)", whole, inner_at, offset + len(piece))
    args: list[Any] = []
    options: dict[str, Any] = {}
    for node in call.args:
        args.append(_literal(name, node, whole, inner_at))
    for kw in call.keywords:
        if kw.arg is None:
            raise PassSpecError(f"{name}: '**' is not allowed in pass options", whole,
                                *_range(kw.value, inner_at))
        if kw.arg in options:
            raise PassSpecError(f"{name}: option {kw.arg!r} given twice", whole,
                                *_range(kw.value, inner_at))
        options[kw.arg] = _literal(name, kw.value, whole, inner_at)
    return PassSpec(name, tuple(args), options, piece, offset, whole)


def _range(node: ast.AST, inner_at: int) -> tuple[int, int]:
    """``node``'s character range in the whole text (it was parsed after ``f(``)."""
    start = inner_at + getattr(node, "col_offset", 2) - 2
    end = inner_at + (getattr(node, "end_col_offset", None) or start + 1) - 2
    return start, end


def _literal(name: str, node: ast.expr, text: str, inner_at: int) -> Any:
    if isinstance(node, ast.Starred):
        raise PassSpecError(f"{name}: '*' is not allowed in pass options", text,
                            *_range(node, inner_at))
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        start, end = _range(node, inner_at)
        raise PassSpecError(f"{name}: option values must be Python literals (numbers, "
                            f"strings, booleans, None, lists, tuples, dicts), not "
                            f"{_short(text[start:end])}", text, start, end) from None


def _short(text: str, limit: int = 60) -> str:
    """``repr(text)``, cut to ``limit`` characters with ``...`` (messages stay one line)."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def parse_specs(text: str) -> list[PassSpec]:
    """Every spec of a comma-separated list (``"FuseOps(max_depth=8),FoldConstant"``)."""
    return [parse_spec(piece, text, at) for piece, at in split_specs(text)]
