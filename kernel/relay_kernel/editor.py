"""Editor support: ``is_complete``, completion and inspection (Shift-Tab, ``?name``).

All three work on partial, possibly ill-formed cell text and never raise: a cell being typed
is the normal case, not an error.

* ``is_complete``: a lexer-level scan (comments and strings skipped) counts brackets; open
  brackets or an open block comment mean ``incomplete``, a closing bracket without its
  opener means ``invalid``; otherwise a parse attempt decides -- an error at the end of the
  text (after its last non-blank character) means ``incomplete`` (``let %x =``), an
  error anywhere else ``invalid``.
* ``complete``: the word before the cursor with its sigil (``%x``, ``@f``, ``:ty``, ``nn.co``)
  against session bindings and ``%`` names in the cell, globals (session + prelude), ops,
  constructors, type names, keywords and dtypes, commands.
* ``inspect``: the type and documentation of the op, global, constructor, type, binding,
  keyword or command under the cursor.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from relay_kernel.command_table import COMMANDS, split_command
from relay_kernel.lexer import KEYWORDS
from relay_kernel.text_scan import prelude_names, scan_brackets

if TYPE_CHECKING:  # pragma: no cover
    from relay_kernel.session import Session

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")

KEYWORD_DOCS = {
    "fn": "fn (%x: T, ...) -> R { body }: a function literal (a closure).",
    "def": "def @name[TypeParams](%x: T, ...) -> R { body }: a global function definition.",
    "let": "let %x = value; body: binds %x in body. At the top of a cell, `let %x = e;` with "
           "nothing after it binds %x for later cells.",
    "if": "if (cond) { then } else { otherwise }: cond is a bool scalar.",
    "else": "if (cond) { then } else { otherwise }",
    "type": "type Name[A, ...] { Ctor(T, ...), ... }: an algebraic data type.",
    "match": "match (e) { Pattern => expr, ... }: must cover every case; match? may be partial.",
    "extern": "extern type Name[A]: an ADT declared without constructors.",
    "free_var": "free_var %x: T: declares a free variable (no value).",
    "ref": "ref(e): a new mutable reference cell holding e.",
    "ref_read": "ref_read(r): the value in reference r.",
    "ref_write": "ref_write(r, v): stores v in reference r; evaluates to ().",
}

_WORD = re.compile(r"(?:[%@]|:)?[A-Za-z_][A-Za-z0-9_.]*$|[%@:]$")
_WORD_AT = re.compile(r"[%@:]?[A-Za-z_0-9][A-Za-z0-9_.]*")
# -- is_complete -------------------------------------------------------------------------

def _end_position(code: str) -> tuple[int, int]:
    """(line, column) just past the last non-blank character (1-based)."""
    stripped = code.rstrip()
    lines = stripped.splitlines() or [""]
    return len(lines), len(lines[-1]) + 1


def is_complete(code: str, session: Session | None = None) -> dict[str, str]:
    """The ``is_complete_reply`` content for ``code`` (see the module docstring)."""
    if not code.strip() or split_command(code) is not None:
        return {"status": "complete"}
    stack, bad, unterminated = scan_brackets(code)
    if bad:
        return {"status": "invalid"}
    if unterminated or stack:
        return {"status": "incomplete", "indent": "  " * len(stack)}
    if session is None:
        return {"status": "complete"}
    from relay_ref.repl import ParseError

    try:
        session.parse(code, "<is_complete>")
    except ParseError as err:
        span = err.span
        end_line, end_col = _end_position(code)
        if span is not None and (span.line, span.column) >= (end_line, end_col) \
                or "found end of input" in err.message:
            return {"status": "incomplete", "indent": ""}
        return {"status": "invalid"}
    except Exception:  # a bug elsewhere must not break typing in the editor
        return {"status": "unknown"}
    return {"status": "complete"}


# -- names -------------------------------------------------------------------------------

def op_names() -> list[str]:
    """Every registered operator name (empty when the op library cannot load)."""
    try:
        from relay_ref.repl import op_names as registered

        return registered()
    except Exception:
        return []


def _op(name: str) -> Any:
    try:
        from relay_ref.repl import op_info

        return op_info(name)
    except Exception:
        return None


def candidates(session: Session | None, code: str, word: str) -> list[str]:
    """Every completion candidate for a word starting like ``word`` (sigil included)."""
    pglobals, ptypes, pctors = prelude_names() if session is None or session.prelude \
        else ({}, {}, {})
    if word.startswith(":"):
        return [":" + c for c in COMMANDS]
    if word.startswith("%"):
        names = set(re.findall(r"%([A-Za-z_]\w*)", code))
        if session is not None:
            names.update(session.scope)
        return ["%" + n for n in sorted(names)]
    if word.startswith("@"):
        names = set(pglobals)
        if session is not None:
            names.update(session.module.functions)
        return ["@" + n for n in sorted(names)]
    bare: set[str] = set(KEYWORDS) | set(DTYPES) | {"Tensor", "True", "False"}
    bare.update(op_names())
    bare.update(ptypes)
    bare.update(pctors)
    if session is not None:
        bare.update(session.module.type_definitions)
        bare.update(session.module.constructors)
    return sorted(bare)


def complete(code: str, cursor_pos: int, session: Session | None) -> dict[str, Any]:
    """The ``complete_reply`` content: matches for the word ending at ``cursor_pos``."""
    m = _WORD.search(code[:cursor_pos])
    word = m.group(0) if m else ""
    if word.startswith(":") and code[: cursor_pos - len(word)].strip():
        word = word[1:]  # a `:` inside code (a type annotation), not a command
    start = cursor_pos - len(word)
    attrs = _attr_candidates(code[:cursor_pos], word)
    if attrs is not None:
        return {"status": "ok", "matches": attrs, "cursor_start": start,
                "cursor_end": cursor_pos, "metadata": {}}
    matches = [c for c in candidates(session, code, word) if c.startswith(word) and c != word] \
        if word else []
    if word and not matches:
        matches = [c for c in candidates(session, code, word) if c == word]
    return {"status": "ok", "matches": matches, "cursor_start": start,
            "cursor_end": cursor_pos, "metadata": {}}


def _attr_candidates(before: str, word: str) -> list[str] | None:
    """``name=`` for the attributes of the operator whose call's argument list the cursor is
    in (``nn.conv2d(%x, %w, pad|`` -> ``padding=``), when the word being typed is a bare
    name (or nothing, right after ``(`` or ``,``); None when that is not the situation."""
    import dataclasses

    if word and not re.fullmatch(r"[A-Za-z_]\w*", word):
        return None
    prefix = before[: len(before) - len(word)]
    if word == "" and not re.search(r"[(,]\s*$", prefix):
        return None
    depth, i = 0, len(prefix) - 1
    while i >= 0:  # find the unclosed `(` of the innermost call
        ch = prefix[i]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                if ch != "(":
                    return None
                break
            depth -= 1
        i -= 1
    if i < 0:
        return None
    m = re.search(r"([A-Za-z_][\w.]*)\s*$", prefix[:i])
    op = _op(m.group(1)) if m else None
    if op is None or not dataclasses.is_dataclass(op.attrs):
        return None
    given = set(re.findall(r"(\w+)\s*=", prefix[i:]))
    names = [f.name for f in dataclasses.fields(op.attrs)
             if f.name.startswith(word) and f.name not in given]
    return [n + "=" for n in names] or None


# -- inspect -----------------------------------------------------------------------------

def word_at(code: str, cursor_pos: int) -> str:
    """The name (with sigil) under or just before the cursor ('' when none)."""
    for m in _WORD_AT.finditer(code):
        if m.start() <= cursor_pos <= m.end():
            return m.group(0).rstrip(".")
    return ""


def describe(word: str, session: Session | None) -> str | None:
    """Plain-text documentation of ``word``, or None when nothing is known about it."""
    from relay_kernel.display import pretty_type, type_text, value_text

    if not word:
        return None
    if word.startswith(":"):
        cmd = COMMANDS.get(word[1:])
        return f":{word[1:]} {cmd.usage}\n\n{cmd.help}" if cmd else None
    pglobals, ptypes, pctors = prelude_names()
    if word.startswith("@"):
        name = word[1:]
        ty = session.global_type(name) if session is not None else None
        lines = []
        if ty is not None:
            lines.append(f"@{name} : {pretty_type(ty)}")
        elif name in pglobals:
            lines.append(f"@{name} (prelude)")
        else:
            return None
        if name in pglobals and (session is None or name not in session.user_globals):
            if pglobals[name]:
                lines += ["", pglobals[name]]
        elif session is not None and name in session.module.functions:
            try:
                from relay_ref import astext

                lines += ["", _strip_header(astext(session.module.functions[name]))]
            except Exception:
                pass
        return "\n".join(lines)
    if word.startswith("%"):
        if session is None or word[1:] not in session.scope:
            return None
        var = session.scope[word[1:]]
        text = f"{word} : {pretty_type(session.var_types.get(var))}"
        value = value_text(session.env.get(var))
        if len(value) > 400:
            value = value[:400] + " …"
        return f"{text}\n\n= {value}"
    if word in KEYWORD_DOCS:
        return f"{word} (keyword)\n\n{KEYWORD_DOCS[word]}"
    if _op(word) is not None:
        from relay_ref.repl import op_doc

        return op_doc(word)  # the same text as `relay doc`
    if session is not None:
        ctors = session.module.constructors
        if word in ctors:
            ctor = ctors[word]
            fields = ", ".join(type_text(t) for t in ctor.inputs)
            td = session.module.type_definitions.get(ctor.belong_to.name)
            params = ""
            if td is not None and td.type_vars:
                params = "[" + ", ".join(tv.name for tv in td.type_vars) + "]"
            sig = f"{word}({fields})" if ctor.inputs else word
            return f"{sig} : {ctor.belong_to.name}{params}\n\nconstructor of " \
                   f"{ctor.belong_to.name} (tag {ctor.tag})"
        if word in session.module.type_definitions:
            try:
                from relay_ref import astext

                return _strip_header(astext(_module_with_type(session, word)))
            except Exception:
                return f"type {word}"
    if word in pctors:
        return f"{word}: {pctors[word]} (prelude)"
    if word in ptypes:
        return f"type {word} (prelude)\n\n{ptypes[word]}".rstrip()
    if word in DTYPES:
        return f"{word}: a scalar type, short for Tensor[(), {word}]"
    if word == "Tensor":
        return "Tensor[(d1, ..., dn), dtype]: an n-dimensional tensor type; ? is a dynamic dim"
    return None


def _strip_header(text: str) -> str:
    """Relay text without the ``#[version = "0.0.5"]`` line ``astext`` puts on modules."""
    lines = text.strip().splitlines()
    if lines and lines[0].startswith("#[version"):
        lines = lines[1:]
    return "\n".join(lines).strip()


def _module_with_type(session: Session, name: str) -> Any:
    from relay_ref import IRModule

    return IRModule(type_definitions={name: session.module.type_definitions[name]})


def inspect(code: str, cursor_pos: int, session: Session | None) -> dict[str, Any]:
    """The ``inspect_reply`` content for the word at ``cursor_pos``; on a rule name
    (``T-App`` in a comment or an error message pasted in), the rule as spec/ writes it."""
    word = word_at(code, cursor_pos)
    try:
        doc = _rule_at(code, cursor_pos) or describe(word, session)
    except Exception:
        doc = None
    if doc is None:
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}
    return {"status": "ok", "found": True, "data": {"text/plain": doc}, "metadata": {}}


def _rule_at(code: str, cursor_pos: int) -> str | None:
    """The text of the spec rule whose name (``E-App-Closure``) is under the cursor."""
    from relay_ref.repl import RULE_NAME_RE, rule_text, select_rules

    for m in RULE_NAME_RE.finditer(code):
        if m.start() <= cursor_pos <= m.end():
            found = select_rules(m.group(0))
            return rule_text(found[0]) if found else None
    return None
