"""Text-level scans the session and the editor share, below both: bracket depth of a cell
(``scan_brackets``) and the prelude's names with their doc comments (``prelude_names``).

Neither parses: both work on partial or ill-formed text and never raise.
"""

from __future__ import annotations

import functools
import re

_CLOSERS = {")": "(", "]": "[", "}": "{"}


def scan_brackets(code: str) -> tuple[list[str], bool, bool]:
    """``(open brackets, unmatched closer seen, inside a comment/string at the end)``.

    Skips ``//`` comments, nested ``/* */`` comments and ``"..."`` strings."""
    stack: list[str] = []
    bad = False
    i, n = 0, len(code)
    while i < n:
        ch = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            i = n if j < 0 else j
            continue
        if code.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if code.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif code.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            if depth:
                return stack, bad, True
            continue
        if ch == '"':
            j = code.find('"', i + 1)
            if j < 0:
                return stack, bad, True
            i = j + 1
            continue
        if ch in "([{":
            stack.append(ch)
        elif ch in _CLOSERS:
            if stack and stack[-1] == _CLOSERS[ch]:
                stack.pop()
            else:
                bad = True
        i += 1
    return stack, bad, False


@functools.lru_cache(maxsize=1)
def prelude_names() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """``(globals, types, constructors)`` of the prelude, each name -> doc comment (the
    ``//`` lines just above its definition). Read from the prelude's text, so it works even
    when the prelude cannot be parsed."""
    try:
        from relay_ref.repl import prelude_text

        text = prelude_text()
    except (ImportError, OSError, TypeError):
        return {}, {}, {}
    globals_: dict[str, str] = {}
    types: dict[str, str] = {}
    ctors: dict[str, str] = {}
    doc: list[str] = []
    in_type: str | None = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("//"):
            doc.append(s[2:].strip())
            continue
        if m := re.match(r"def\s+@(\w+)", s):
            globals_[m.group(1)] = " ".join(doc)
        elif m := re.match(r"type\s+(\w+)", s):
            types[m.group(1)] = " ".join(doc)
            in_type = m.group(1) if "}" not in s else None
            for c in re.findall(r"[{,]\s*([A-Z_a-z]\w*)", s):
                ctors[c] = f"constructor of {m.group(1)}"
        elif in_type and (m := re.match(r"([A-Za-z_]\w*)\s*(\(|,|$)", s)):
            ctors[m.group(1)] = f"constructor of {in_type}"
        if s.startswith("}"):
            in_type = None
        if s and not s.startswith("//"):
            doc = []
    return globals_, types, ctors
