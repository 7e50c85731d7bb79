"""Comments as trivia: attached to constructs by the parser, printed back by the printer
(spec/syntax.md, Pr-Comments).

The parser's pre-pass finds every comment (``//`` and nesting ``/* */``, never inside a
string) and blanks it; when a module's text has comments, the resolver also records an
*anchor* for each construct a comment can sit next to: definitions, type constructors,
parameters, statements of a sequence (``let``, ``%N = e;``, ``e;``, ``free_var``), the result
of a sequence, match arms, and the containers they live in (module, parameter list, body,
type definition, match). ``attach`` then gives each comment one place, like a code formatter:

* innermost anchor containing the comment = the *enclosing* one; among its children, the one
  ending just before the comment is *preceding*, the one starting just after is *following*;
* a comment starting on the line where the preceding item ends is *trailing* it;
* a comment after a statement's value and before its ``;`` stays before the ``;`` (TVM's
  ``%0 = f(%x) /* ty=... */;``);
* otherwise it is *leading* the following item; with none, it is at the *end* of the
  container (before its ``}``, or the end of the file);
* a comment inside an item that prints on one line (inside an expression) leads the nearest
  enclosing item, so it prints on the line before that statement.

The result is a ``CommentTable`` stored on ``IRModule.comments``: a side table keyed by node
identity (IR nodes use identity hashing), never part of a node, so ``alpha_equal`` and
``structural_hash`` cannot see comments. Keys: a statement's node itself (the ``Let``, or the
value of a graph binding), and tuples ``("def", fn)``, ``("type", typedata)``,
``("ctor", ctor)``, ``("param", var)``, ``("params", fn)``, ``("free", var)``,
``("clause", clause)``, ``("match", match)``, ``("body", owner)``, ``("result", owner)``,
``("header",)``, ``("module",)``, where a body's owner is its ``Function``, its ``Clause``,
``(if_node, 0 or 1)``, or the first ``Let`` of a ``{ ... }``/``( ... )`` sequence.

Attaching is O((anchors + comments) log) and the printer's look-ups are dict look-ups, so
printing stays linear in program size.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Anchor", "Attached", "CommentTable", "attach", "comment_texts"]


class Attached:
    """The comments of one key. ``lead``: lines printed before the construct (``""`` is a
    blank line kept from the source); ``trail``: after it on its last line; ``semi``: after a
    statement's value, before its ``;``; ``end``: before a container's closing ``}``."""

    __slots__ = ("lead", "trail", "semi", "end")

    def __init__(self) -> None:
        self.lead: list[str] = []
        self.trail: list[str] = []
        self.semi: list[str] = []
        self.end: list[str] = []

    def texts(self) -> list[str]:
        """Every comment text, in source order of roles (no blank-line markers)."""
        return [t for t in self.lead + self.semi + self.trail + self.end if t]


@dataclass(frozen=True, slots=True, eq=False)
class CommentTable:
    """Comments of a parsed text: ``attached`` maps a key (see the module docstring) to its
    comments; ``by_def`` maps a definition's key to the keys attached inside it, so the
    printer can put any comment it found no place for before that definition."""

    attached: dict[Any, Attached] = field(default_factory=dict)
    by_def: dict[Any, list[Any]] = field(default_factory=dict)

    def merged(self, newer: CommentTable | None) -> CommentTable:
        if newer is None:
            return self
        attached = dict(self.attached)
        attached.update(newer.attached)
        by_def = dict(self.by_def)
        by_def.update(newer.by_def)
        return CommentTable(attached, by_def)


class Anchor:
    """A construct comments can attach to: ``[start, end)`` character offsets; ``item``
    constructs take leading/trailing comments, containers (``has_end``) take end comments;
    ``vend`` is where a statement's value ends (comments between it and ``;`` stay there).
    ``key`` is filled in by the resolver (None drops the anchor)."""

    __slots__ = ("start", "end", "key", "item", "has_end", "vend", "kids", "top", "sline",
                 "eline")

    def __init__(self, start: int, end: int, key: Any, *, item: bool, has_end: bool = False,
                 vend: int | None = None) -> None:
        self.start = start
        self.end = end
        self.key = key
        self.item = item
        self.has_end = has_end
        self.vend = vend
        self.kids: list[Anchor] = []
        self.top: Any = None
        self.sline = 0
        self.eline = 0


class _Lines:
    """Line numbers (1-based) of character offsets, by binary search."""

    def __init__(self, text: str) -> None:
        starts = [0]
        find = text.find
        i = find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = find("\n", i + 1)
        self.starts = starts

    def line(self, offset: int) -> int:
        return bisect_right(self.starts, offset)


class _Comment:
    __slots__ = ("start", "end", "text", "sline", "eline")

    def __init__(self, start: int, end: int, text: str, lines: _Lines) -> None:
        self.start = start
        self.end = end
        self.text = text
        self.sline = lines.line(start)
        self.eline = lines.line(max(end - 1, start))


def attach(text: str, spans: list[tuple[int, int]], anchors: list[Anchor],
           length: int) -> CommentTable:
    """Give each comment (``spans``: its offsets in ``text``) one place among ``anchors``
    (the rules of the module docstring). ``length``: where the program text ends."""
    lines = _Lines(text)
    comments = [_Comment(s, e, text[s:e], lines) for s, e in spans]
    root = Anchor(0, max(length, len(text)), ("module",), item=False, has_end=True)
    keep = [a for a in anchors if a.key is not None]
    for a in keep:
        a.sline = lines.line(a.start)
        a.eline = lines.line(max(a.end - 1, a.start))
    # Pre-order: by start, outer (longer) first; an item encloses a container of equal span.
    keep.sort(key=lambda a: (a.start, -a.end, not a.item))
    stack = [root]
    for a in keep:
        while stack[-1].end < a.end:
            stack.pop()
        parent = stack[-1]
        parent.kids.append(a)
        a.top = a.key if parent is root else parent.top
        stack.append(a)
    roles: dict[Any, dict[str, list[_Comment]]] = {}
    tops: dict[Any, Any] = {}
    slines: dict[Any, int] = {}

    def put(anchor: Anchor, role: str, c: _Comment) -> None:
        slot = roles.get(anchor.key)
        if slot is None:
            slot = roles[anchor.key] = {"lead": [], "trail": [], "semi": [], "end": []}
            tops[anchor.key] = anchor.top
            slines[anchor.key] = anchor.sline
        slot[role].append(c)

    stack = [root]
    i = 0
    for c in sorted(comments, key=lambda c: c.start):
        while i < len(keep) and keep[i].start <= c.start:
            a = keep[i]
            i += 1
            while stack[-1].end < a.end:
                stack.pop()
            stack.append(a)
        while stack[-1].end <= c.start:
            stack.pop()
        enclosing = stack[-1]
        kids = enclosing.kids
        k = bisect_left(kids, c.start, key=lambda a: a.start)
        prev = kids[k - 1] if k > 0 else None
        nxt = kids[k] if k < len(kids) else None
        if prev is not None and prev.item and prev.eline == c.sline:
            put(prev, "trail", c)
        elif enclosing.vend is not None and c.start >= enclosing.vend:
            put(enclosing, "semi", c)
        elif nxt is not None and nxt.item:
            put(nxt, "lead", c)
        elif nxt is None and enclosing.has_end:
            put(enclosing, "end", c)
        else:
            owner = next((a for a in reversed(stack) if a.item), None)
            if owner is None:
                put(root, "end", c)
            else:
                put(owner, "lead", c)
    table = CommentTable()
    for key, slot in roles.items():
        at = Attached()
        at.lead = _with_blanks(slot["lead"], slines[key])
        at.trail = [c.text for c in slot["trail"]]
        at.semi = [c.text for c in slot["semi"]]
        at.end = _with_blanks(slot["end"], None)
        table.attached[key] = at
        top = tops[key]
        table.by_def.setdefault(top, []).append(key)
    return table


def _with_blanks(cs: list[_Comment], next_line: int | None) -> list[str]:
    """Comment texts with ``""`` where the source had a blank line between two of them, or
    between the last one and the construct they lead (which starts on ``next_line``)."""
    out: list[str] = []
    for j, c in enumerate(cs):
        if j and c.sline > cs[j - 1].eline + 1:
            out.append("")
        out.append(c.text)
    if cs and next_line is not None and next_line > cs[-1].eline + 1:
        out.append("")
    return out


def comment_texts(text: str) -> list[str]:
    """Every comment of a Relay text, in order (the pre-pass's scan; for tests and tools)."""
    from relay_ref.ir.span import Source
    from relay_ref.syntax.prescan import prescan

    found: list[tuple[int, int]] = []
    prescan(Source("<string>", text), found)
    return [text[s:e] for s, e in found]
