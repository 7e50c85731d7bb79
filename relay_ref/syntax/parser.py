"""The Relay text-format parser (v0.0.5): text -> IR (spec/syntax.md).

Pipeline, each stage iterative so that deep programs never hit the recursion limit:

1. ``prescan`` (``syntax/prescan.py``; S-Comment, S-Metadata): blanks comments (``//``,
   nesting ``/* */``) with spaces, keeping every line and column, and cuts off the
   ``#[metadata]`` section. ``parse`` keeps the comments: the resolver records anchors and
   ``syntax/comments.py`` attaches each comment to one, in ``module.comments``
   (Pr-Comments).
2. Lark's LALR parser with the contextual lexer (``grammar/relay.lark``) builds a parse tree;
   the LALR driver loop is iterative. Lark exceptions become located ``ParseError``s with
   messages in Relay terms (``_syntax_error``).
3. ``_Resolver`` walks the tree with generator handlers run by a trampoline
   (``relay_ref.trampoline.run``), resolving names in lexical scopes and building IR nodes.

Invariants of the result: every node carries a ``Span``; each binder is a fresh ``Var``; a
graph variable ``%N`` refers to the very node object bound to it (S-Graph), so the IR is a DAG;
every operator call has a non-``None`` attrs object (``make_attrs``); no type checking is done.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from relay_ref.diagnostics import ERROR, Diagnostic, Note, ParseError
from relay_ref.ir import expr as E
from relay_ref.ir import shape as SH
from relay_ref.ir import types as T
from relay_ref.ir.dtype import canonical_dtype
from relay_ref.ir.module import IRModule, TypeData
from relay_ref.ir.span import Source, Span
from relay_ref.suggest import did_you_mean
from relay_ref.syntax.comments import Anchor, attach
from relay_ref.syntax.fallback import Fallback
from relay_ref.syntax.metadata import MetadataError, load_metadata, meta_object
from relay_ref.syntax.prescan import offset_span, prescan
from relay_ref.trampoline import no_gc, run

__all__ = ["Program", "parse", "parse_expr", "parse_program", "parse_type", "BINARY_OPS"]

VERSION = "0.0.5"

# S-BinOp: operator symbol -> Relay operator name (TVM's op_table.h).
BINARY_OPS: dict[str, str] = {
    "*": "multiply", "/": "divide", "+": "add", "-": "subtract",
    "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
    "==": "equal", "!=": "not_equal",
}

# TVM's op_table.h precedences (higher binds tighter).
_PRECEDENCE = {"*": 12, "/": 12, "+": 10, "-": 10, "<": 8, "<=": 8, ">": 8, ">=": 8,
               "==": 7, "!=": 7}

# S-DType: a bare type name with one of these prefixes is a dtype (TVM parser.cc, ParseType)
_DTYPE_PREFIXES = ("int", "uint", "float", "bool", "bfloat")
# The canonical dtypes relay_ref computes with: what a misspelt data type may have meant.
_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float16", "float32", "float64", "bfloat16")
_INT_RANGE = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}


@dataclass(frozen=True, slots=True)
class Program:
    """One cell of definitions and statements (``parse_program``).

    ``module`` holds ``base_module``'s definitions plus the new ones (and any ``fallback``
    definitions they use); ``bindings`` are the top-level ``let %x = e;`` statements (and
    anonymous ``e;`` statements, bound to a variable named ``_``) in order; ``expr`` is the
    trailing expression, or ``None``. ``expr`` and later binding values may refer to the
    variables of earlier bindings and of the ``scope`` passed in, as free variables."""

    module: IRModule
    expr: E.Expr | None
    bindings: tuple[tuple[E.Var, E.Expr], ...]


# ---- grammar loading ------------------------------------------------------------------------

def _grammar_path() -> Path:
    """The grammar inside an installed wheel, else the checkout's ``grammar/relay.lark``."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "grammar" / "relay.lark",
                      package.parent / "grammar" / "relay.lark"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("relay.lark not found next to relay_ref or in the checkout")


@functools.cache
def _lark() -> Lark:
    # S-Lex: the tokens are the grammar's terminals, read by Lark's contextual lexer.
    return Lark(_grammar_path().read_text(), parser="lalr", lexer="contextual",
                start=["start_module", "start_expr", "start_program", "start_type"],
                propagate_positions=False, maybe_placeholders=True)


@functools.cache
def _lark_positions() -> Lark:
    """The same parser recording every subtree's extent (closing brackets included), used
    only for texts with comments, which need the extents to attach them (Pr-Comments)."""
    return Lark(_grammar_path().read_text(), parser="lalr", lexer="contextual",
                start=["start_module"], propagate_positions=True, maybe_placeholders=True)


class _Trivia:
    """Comments of a text (Pr-Comments): their ``(start, end)`` offsets, found by
    ``prescan``, and the comment-free text the grammar saw."""

    __slots__ = ("spans", "clean")

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []
        self.clean = ""


# ---- public entry points --------------------------------------------------------------------

def _source(text: str, source_name: str) -> Source:
    """The source to parse; a leading byte-order mark (invisible, zero-width) is dropped."""
    return Source(source_name, text[1:] if text.startswith("\ufeff") else text)


def parse(text: str, source_name: str = "<string>", *, fallback: Fallback | None = None,
          base_module: IRModule | None = None,
          metadata: Mapping[str, Sequence[object]] | None = None) -> IRModule:
    """Parse a module. The version header is optional (when present it must be "0.0.5").

    Names already defined in ``base_module`` are visible, and the result holds its
    definitions plus the new ones (a redefinition replaces). Globals, types and constructors
    used but defined in neither come from ``fallback`` (``relay_ref.prelude`` supplies the
    prelude's), together with the transitive closure of what they use (``Fallback.closure``,
    S-Prelude).
    Raises ``ParseError``; never type-checks."""
    source = _source(text, source_name)
    trivia = _Trivia()
    with no_gc():
        tree, meta = _parse_tree(source, "start_module", trivia)
        meta = with_metadata(meta, metadata)  # S-MetaTable: `metadata` (a mapping from
        # type key to objects, see with_metadata) extends the #[metadata] section
        r = _Resolver(source, meta, fallback=fallback, base_module=base_module)
        if trivia.spans:  # Pr-Comments: anchors for attaching comments
            r.anchors = []
            r.clean = trivia.clean
        module = r.module_from(tree.children, [], None)[0]
        table = base_module.comments if base_module is not None else None
        if r.anchors is not None:
            for c in tree.children:
                if isinstance(c, Tree) and c.data == "header":
                    r.anchor(c, ("header",))
            new = attach(source.text, trivia.spans, r.anchors, len(trivia.clean))
            table = new if table is None else table.merged(new)
        if table is not None:
            module = replace(module, comments=table)
        return module


def parse_program(text: str, source_name: str = "<string>", *,
                  base_module: IRModule | None = None, scope: dict[str, E.Var] | None = None,
                  fallback: Fallback | None = None) -> Program:
    """Parse definitions followed by statements and an optional expression (a notebook cell).

    Definitions come first, then top-level ``let``s / graph bindings / ``e;`` statements,
    then an optional final expression (spec/syntax.md, S-Program)."""
    source = _source(text, source_name)
    with no_gc():
        tree, meta = _parse_tree(source, "start_program")
        r = _Resolver(source, meta, fallback=fallback, base_module=base_module, scope=scope)
        kids = [c for c in tree.children if not (isinstance(c, Tree) and c.data == "header")]
        defs = [c for c in kids if isinstance(c, Tree) and c.data in _DEF_RULES]
        rest = [c for c in kids if not (isinstance(c, Tree) and c.data in _DEF_RULES)]
        tail = None
        if rest and not (isinstance(rest[-1], Tree) and rest[-1].data in _STMT_RULES):
            tail = rest.pop()
        module, expr, bindings = r.module_from(defs, rest, tail)
    return Program(module, expr, tuple(bindings))


def parse_expr(text: str, source_name: str = "<string>", *,
               metadata: Mapping[str, Sequence[object]] | None = None,
               module: IRModule | None = None,
               scope: dict[str, E.Var] | None = None, fallback: Fallback | None = None
               ) -> E.Expr:
    """Parse one expression (a sequence of bindings and a result).

    ``module`` supplies globals, types and constructors (then ``fallback``); ``scope``
    pre-binds local names (``"x"`` -> the ``Var`` that ``%x`` denotes)."""
    source = _source(text, source_name)
    with no_gc():
        tree, meta = _parse_tree(source, "start_expr")
        meta = with_metadata(meta, metadata)  # S-MetaTable
        r = _Resolver(source, meta, fallback=fallback, base_module=module, scope=scope)
        r.free_globals = True  # S-FreeGlobal: TVM's parse_expr keeps an unknown @f
        seq = tree.children[-1]
        expr = run(r.expr(seq))
        r.check_globals()
        return expr


def parse_type(text: str, source_name: str = "<string>", *, module: IRModule | None = None,
               fallback: Fallback | None = None) -> T.Type:
    """Parse a type. Free type-variable names become fresh ``TypeVar``s (one per name); type
    names come from ``module``, then ``fallback``."""
    source = _source(text, source_name)
    tree, meta = _parse_tree(source, "start_type")
    r = _Resolver(source, meta, fallback=fallback, base_module=module)
    r.free_type_vars = {}
    return run(r.type(tree.children[0]))


_DEF_RULES = {"func_def", "type_def", "extern_type"}


def with_metadata(meta: dict[str, list], metadata: Mapping[str, Sequence[object]] | None
                  ) -> dict[str, list]:
    """S-MetaTable: the metadata table of a parse, as TVM's ``init_meta_table``: the
    ``#[metadata]`` section's entries first, then ``metadata``'s appended under each type key
    (so ``meta[relay.Constant][0]`` is the section's first constant, if it has any).

    ``metadata`` maps a type key to a list of objects: for ``"relay.Constant"`` NumPy arrays
    (or anything ``numpy.asarray`` takes, or ``Constant`` nodes), which become ``Constant``
    nodes, one per entry; for attributes keys (``"relay.attrs.Conv2DAttrs"``) an operator's
    attrs object or a dict of its attributes (``meta[relay.attrs.Conv2DAttrs][0]`` as a
    call's last argument); for any other key (``"VirtualDevice"``, ``"tir.Var"``) opaque
    values (a ``MetaObject``, a dict of attributes, or any value kept as its text): an
    ``IntImm`` or integer entry used as a shape dimension is that size, any other is ``?``.
    Raises ``TypeError`` when ``metadata`` is not such a mapping."""
    if not metadata:
        return meta
    if not isinstance(metadata, Mapping):
        raise TypeError(f"parse: metadata must be a mapping from type key to a list of "
                        f"objects, not {type(metadata).__name__}")
    table = {k: list(v) for k, v in meta.items()}
    for key, values in metadata.items():
        if not isinstance(key, str) or isinstance(values, str | bytes) \
                or not isinstance(values, Sequence | np.ndarray):
            raise TypeError(f"parse: metadata[{key!r}] must be a list of objects under a "
                            f"str type key")
        items = table.setdefault(key, [])
        for value in values:
            if key == "relay.Constant" and not isinstance(value, E.Constant):
                try:
                    value = E.Constant(np.asarray(value))
                except (TypeError, ValueError) as err:
                    raise TypeError(f"parse: metadata['relay.Constant'] holds a value that "
                                    f"is not an array: {err}") from None
            elif key != "relay.Constant" and not _is_attrs_key(key) \
                    and not isinstance(value, E.Expr):
                value = meta_object(key, value)
            items.append(value)
    return table
_STMT_RULES = {"let_stmt", "graph_stmt", "free_var_stmt", "expr_stmt"}


def _parse_tree(source: Source, start: str, trivia: _Trivia | None = None
                ) -> tuple[Tree, dict[str, list]]:
    clean, meta_text, meta_span = prescan(source, None if trivia is None else trivia.spans)
    try:
        if trivia is not None and trivia.spans:
            trivia.clean = clean
            tree = _lark_positions().parse(clean, start=start)
        else:
            tree = _lark().parse(clean, start=start)
    except UnexpectedInput as err:
        raise _syntax_error(source, clean, err) from None
    except LarkError as err:  # pragma: no cover - defensive: any other Lark failure
        raise ParseError(f"syntax error: {err}", Span(source, 1, 1, 1, 2)) from None
    _check_header(source, tree)
    meta: dict[str, list] = {}
    if meta_text is not None:
        try:
            meta = load_metadata(meta_text)
        except MetadataError as err:
            span = meta_span
            if err.offset is not None:  # e.g. a JSON syntax error: point at it
                at = len(source.text) - len(meta_text) + err.offset
                span = offset_span(source, at, min(at + 1, len(source.text)))
            raise ParseError(f"bad #[metadata] section: {err}", span) from None
    return tree, meta


# ---- friendly syntax errors ------------------------------------------------------------------

_PUNCT = {
    "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "LBRACE": "'{'",
    "RBRACE": "'}'", "COMMA": "','", "SEMICOLON": "';'", "COLON": "':'", "EQUAL": "'='",
    "DOT": "'.'", "QMARK": "'?'", "$END": "end of input",
}
_NAMED = {
    "NAME": "a name", "LOCAL": "a local variable (%x)", "GLOBAL": "a global (@f)",
    "GRAPH": "a graph variable (%0)", "NUMBER": "a number", "NAT": "a tuple index",
    "STRING": "a string", "META": "a meta[...] reference", "BINOP": "an operator",
}
_EXPR_START = {"LOCAL", "NUMBER", "GLOBAL", "FN"}
_TYPE_START = {"TENSOR", "UNDERSCORE"}
_CONTINUE = {"BINOP", "DOT", "LPAR", "LSQB"}


def _terminal_text(name: str) -> str:
    if name in _PUNCT:
        return _PUNCT[name]
    if name in _NAMED:
        return _NAMED[name]
    for term in _lark().terminals:
        if term.name == name and term.pattern.type == "str":
            return f"'{term.pattern.value}'"
    return name.lower()


def _describe_expected(expected: set[str]) -> str:
    if _EXPR_START <= expected:
        return "an expression"
    if _TYPE_START <= expected and "LOCAL" not in expected:
        return "a type"
    if {"UNDERSCORE", "LOCAL", "NAME"} <= expected and "NUMBER" not in expected:
        return "a pattern"
    if {"NUMBER", "STRING", "LSQB"} <= expected:
        return "an attribute value"
    more = ""
    if "BINOP" in expected and expected - _CONTINUE:
        # The expression so far is complete: name what may follow it, plus "an operator".
        expected = expected - _CONTINUE
        more = "an operator"
    names = sorted({_terminal_text(e) for e in expected})
    if more:
        names.append(more)
    if len(names) > 6:
        names = names[:6] + ["..."]
    return " or ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " or " + names[-1]


#: S-MatchCast, S-DPS, S-Dataflow: the forms, shown when a syntax error is inside one
_RELAX_FORMS = {
    "match_cast": "match_cast(value, Type), e.g. match_cast(%x, Tensor[(n, 4), float32])",
    "call_dps_packed": 'call_dps_packed("name", (args...), OutType), e.g. '
                       'call_dps_packed("f", (%x,), Tensor[(n), float32])',
    "call_tir": 'call_tir("name", (args...), OutType), e.g. '
                'call_tir("f", (%x, %y), Tensor[(n), float32])',
}


def _relax_form_note(clean: str, pos: int | None) -> tuple[Note, ...]:
    """A note showing the form of the Relax construct whose parentheses enclose ``pos``
    (the innermost unclosed ``(`` before it, preceded by the keyword), else none."""
    if pos is None or pos > len(clean):
        return ()
    depth, i = 0, pos - 1
    while i >= 0:
        c = clean[i]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth == 0:
                if c != "(":
                    return ()
                m = re.search(r"(match_cast|call_dps_packed|call_tir)\s*$", clean[:i])
                if m is None or (m.start() > 0 and (clean[m.start() - 1].isalnum()
                                                    or clean[m.start() - 1] in "_.%@/")):
                    return ()
                return (Note(f"the form is {_RELAX_FORMS[m.group(1)]}"),)
            depth -= 1
        i -= 1
    return ()


def _previous_token(text: str, line: int, col: int) -> str | None:
    lines = text.split("\n")
    offset = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1
    i = offset - 1
    while i >= 0 and text[i] in " \t\r\n\f":
        i -= 1
    if i < 0:
        return None
    if text[i].isalnum() or text[i] in "_%@/.?":
        j = i
        while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_%@/."):
            j -= 1
        return text[j: i + 1]
    if i > 0 and text[i - 1: i + 1] in ("->", "=>", "==", "!=", "<=", ">=", "#["):
        return text[i - 1: i + 1]
    return text[i]


_BRACKETS = {"}": "{", ")": "(", "]": "["}


def _unclosed_bracket(clean: str) -> int | None:
    """Offset of the innermost bracket that ``clean`` (comments blanked) opens and never
    closes, or None. Strings are skipped; a mismatched closer pops nothing."""
    stack: list[int] = []
    i, n = 0, len(clean)
    while i < n:
        c = clean[i]
        if c == '"':
            j = clean.find('"', i + 1)
            if j < 0:
                break
            i = j
        elif c in "{([":
            stack.append(i)
        elif c in _BRACKETS and stack and clean[stack[-1]] == _BRACKETS[c]:
            stack.pop()
        i += 1
    return stack[-1] if stack else None


def _syntax_error(source: Source, clean: str, err: UnexpectedInput) -> ParseError:
    line, col = err.line, err.column
    if line is None or line < 1:
        line, col = 1, 1
    length = 1
    notes: tuple[Note, ...] = ()
    if isinstance(err, UnexpectedToken):
        tok = err.token
        expected = set(getattr(err, "accepts", None) or ()) or set(err.expected)
        found = "end of input" if tok.type == "$END" else f"'{tok.value}'"
        if tok.type == "$END":
            lines = clean.split("\n")
            line = len(lines)
            col = len(lines[-1]) + 1
            opener = _unclosed_bracket(clean)
            if opener is not None:
                notes = (Note(f"this '{clean[opener]}' is never closed",
                              offset_span(source, opener, opener + 1)),)
        else:
            length = max(len(str(tok.value)), 1)
        what = _describe_expected(expected)
        prev = _previous_token(clean, line, col)
        message = f"expected {what}"
        if prev is not None:
            message += f" after '{prev}'"
        message += f", found {found}"
        if tok.type == "NUMBER" and prev in ("%", "@"):
            message = "a sigil must be directly followed by a name"
        if tok.type == "NAT" and "NUMBER" in expected:  # S-Literal: `1f.0`, `0x1F`, `1_000`
            word = re.match(r"[A-Za-z0-9_.+-]*", clean[tok.start_pos:]).group()  # type: ignore
            length = max(len(word), 1)
            message = f"malformed number '{word}'"
            notes = (Note("numbers are written 1, -2, 1i64, 1.5f, 5.f, 1e-3f, 2f64: digits "
                          "first, a float with an 'f' suffix, nothing glued after"),)
        if tok.type == "__ANON_0" or str(tok.value) == "#[":
            message = "the version header #[version = \"0.0.5\"] must come first"
        if "BINOP" in expected and str(tok.value) == "=" and prev is not None:
            notes = (Note("bindings are written `let %x = e;` or `%0 = e;`"),)
        if str(tok.value) == "/" and "BINOP" not in expected:  # S-SymDim: `n / 2`
            notes = (Note("in a dimension, a quotient is written floordiv(n, 2)"),)
        if tok.type == "NUMBER" and "BINOP" in expected and str(tok.value).startswith("-"):
            notes = (Note("write a space after '-' for subtraction: `%x - 1`"),)
    elif isinstance(err, UnexpectedCharacters):
        ch = clean[err.pos_in_stream] if err.pos_in_stream < len(clean) else ""
        if ch == '"':
            message = "unterminated string literal"
        elif ch == "#":
            message = ("unknown attribute: only #[version = \"0.0.5\"] and #[metadata] are "
                       "allowed")
        elif ch in "%@":
            message = f"'{ch}' must be directly followed by a name"
            if ch == "%":  # S-SymDim: `n % 2` in a dimension
                notes = (Note("in a dimension, a remainder is written floormod(n, 2)"),)
        else:
            message = f"unexpected character {ch!r}"
    else:  # pragma: no cover - LALR raises only the two kinds above
        message = "syntax error"
    if not notes:
        notes = _relax_form_note(clean, getattr(err, "pos_in_stream", None))
    span = Span(source, line, col, line, col + length)
    return ParseError(Diagnostic(ERROR, message, span, notes))


def _check_cast_type(res: Any, ty: T.Type, at: Any, what: str) -> None:
    """S-MatchCast, S-DPS: the type is a tensor type or a tuple of tensor types."""
    fields = ty.fields if isinstance(ty, T.TupleType) else (ty,)
    if not all(isinstance(f, T.TensorType) for f in fields):
        from relay_ref.ir.type_text import type_to_text

        raise res.error(f"{what} needs a tensor type or a tuple of tensor types, found "
                        f"{type_to_text(ty)}", at)


# ---- literals (S-Literal) --------------------------------------------------------------------

_NUM = re.compile(r"(-*)(?:(inf|nan)f([0-9]*)|([0-9]+(?:\.[0-9]*)?"
                  r"(?:[eE][+-]?[0-9]+)?)([fiu][0-9]*)?)")


def literal_value(text: str) -> tuple[Any, str]:
    """(Python value, dtype) of a numeric literal's text; raises ValueError (plain words)."""
    m = _NUM.fullmatch(text)
    if m is None:
        raise ValueError(f"malformed number '{text}'")
    negative = len(m.group(1)) % 2 == 1
    if m.group(2):
        bits = m.group(3) or "32"
        if bits not in ("16", "32", "64"):
            raise ValueError(f"unknown float width '{bits}' (use f16, f32 or f64)")
        value = float("inf") if m.group(2) == "inf" else float("nan")
        return (-value if negative else value), f"float{bits}"
    mant, suffix = m.group(4), m.group(5)
    is_decimal = "." in mant or "e" in mant or "E" in mant
    if suffix is None:
        if is_decimal:
            raise ValueError(f"a float literal needs an 'f' suffix: write {text}f")
        value = int(mant)
        value = -value if negative else value
        lo, hi = _INT_RANGE["int32"]
        if lo <= value <= hi:
            return value, "int32"
        lo, hi = _INT_RANGE["int64"]
        if lo <= value <= hi:
            return value, "int64"
        raise ValueError(f"integer literal {value} does not fit int64")
    kind, bits = suffix[0], suffix[1:]
    if kind == "f":
        bits = bits or "32"
        if bits not in ("16", "32", "64"):
            raise ValueError(f"unknown float width 'f{bits}' (use f16, f32 or f64)")
        dtype = f"float{bits}"
        fvalue = float(mant)
        fvalue = -fvalue if negative else fvalue
        with np.errstate(over="ignore"):
            if np.isfinite(fvalue) and not np.isfinite(np.array(fvalue, dtype)):
                raise ValueError(f"float literal {text} does not fit {dtype}")
        if not np.isfinite(fvalue):
            raise ValueError(f"float literal {text} does not fit {dtype}")
        top = np.finfo(dtype).max  # TVM (support/scalars.cc): |value| <= the largest finite,
        if abs(fvalue) > max(float(top), float(str(top))):  # up to how it prints
            raise ValueError(f"float literal {text} does not fit {dtype}")
        return fvalue, dtype
    if is_decimal:
        raise ValueError(f"an integer literal cannot have a fraction or exponent: {text}")
    if kind == "i" and not bits:
        bits = "32"  # TVM: a bare `i` suffix is int32 (`-42i`)
    dtype = ("int" if kind == "i" else "uint") + bits
    if dtype not in _INT_RANGE:
        raise ValueError(f"unknown integer suffix '{suffix}' (use i8/i16/i32/i64 or "
                         f"u8/u16/u32/u64)")
    value = int(mant)
    value = -value if negative else value
    lo, hi = _INT_RANGE[dtype]
    if not lo <= value <= hi:
        raise ValueError(f"integer literal {value} does not fit {dtype}")
    return value, dtype


# ---- the resolver ----------------------------------------------------------------------------

class _Resolver:
    """Turns a parse tree into IR, resolving names. Handlers are generators run by ``run``.

    Scopes: ``scopes`` is a stack of dicts for local variables (innermost last), ``free``
    holds ``free_var`` declarations (consulted after every scope), ``outer`` the caller's
    pre-bound names; ``graph`` is one flat table of ``%N`` bindings per definition (S-Graph);
    ``type_scopes`` a stack of type-parameter dicts."""

    def __init__(self, source: Source, meta: dict[str, list], *, fallback: Fallback | None,
                 base_module: IRModule | None, scope: dict[str, E.Var] | None = None) -> None:
        self.source = source
        self.meta = meta
        self.base = base_module
        self.fallback = fallback
        self.scopes: list[dict[str, E.Var]] = []
        self.outer: dict[str, E.Var] = dict(scope or {})
        self.free: dict[str, E.Var] = {}
        self.graph: dict[str, E.Expr] = {}
        self.type_scopes: list[dict[str, T.TypeVar]] = []
        self.free_type_vars: dict[str, T.TypeVar] | None = None
        # Definitions of the text being parsed.
        self.local_types: dict[str, T.GlobalTypeVar] = {}
        self.local_ctors: dict[str, E.Constructor] = {}
        self.local_globals: set[str] = set()
        # Names taken from the fallback, and global references to check at the end.
        self.fallback_names: set[str] = set()  # "@f" for globals, "T" for types
        self.global_uses: dict[str, Span] = {}
        self.free_globals = False  # S-FreeGlobal: unknown @f stay free (parse_expr)
        self._first: dict[int, Token | None] = {}
        self._last: dict[int, Token | None] = {}
        # Pr-Comments: anchors for attaching comments (only when the text has comments).
        self.anchors: list[Anchor] | None = None
        self.clean = ""
        self._seqs: dict[int, tuple[Anchor, Anchor]] = {}
        self.handlers = {name[3:]: getattr(self, name) for name in dir(self) if
                         name.startswith("_e_")}
        self.type_handlers = {name[3:]: getattr(self, name) for name in dir(self) if
                              name.startswith("_t_")}

    # -- helpers ----------------------------------------------------------------------------
    def span(self, node: Tree | Token | None) -> Span | None:
        """The span from the first to the last token under ``node`` (punctuation that the
        grammar drops, like a closing parenthesis, is not included)."""
        if isinstance(node, Tree):
            first = self._edge(node, 0, self._first)
            last = self._edge(node, -1, self._last)
            if first is None or last is None:
                return None
            return Span(self.source, first.line, first.column, last.end_line, last.end_column)
        if isinstance(node, Token):
            return Span(self.source, node.line or 1, node.column or 1,
                        node.end_line or node.line or 1, node.end_column or node.column or 1)
        return None

    def _edge(self, node: Tree, end: int, memo: dict[int, Token | None]) -> Token | None:
        """The first (``end=0``) or last (``end=-1``) token under ``node``, memoised per
        tree so that spans of a long left-nested chain cost linear time in total."""
        path: list[Tree] = []
        found: Token | None = None
        cur: Any = node
        while True:
            if isinstance(cur, Token):
                found = cur
                break
            key = id(cur)
            if key in memo:
                found = memo[key]
                break
            path.append(cur)
            kids = [c for c in cur.children if c is not None]
            if not kids:
                break
            # A child without tokens (an all-None subtree) is skipped by taking the next.
            cur = kids[end]
        for t in path:
            memo[id(t)] = found
        return found

    # -- comment anchors (Pr-Comments) --------------------------------------------------------
    def anchor(self, t: Tree, key: Any, *, item: bool = True, has_end: bool = False,
               value: Any = None, extent: tuple[int, int] | None = None) -> Anchor | None:
        """Record construct ``t`` (Lark extent, or ``extent``) as a place for comments;
        ``value``: a statement's value tree, whose end is where ``semi`` comments start."""
        if self.anchors is None:
            return None
        start, end = extent or (t.meta.start_pos, t.meta.end_pos)
        vend = value.meta.end_pos if isinstance(value, Tree) else None
        a = Anchor(start, end, key, item=item, has_end=has_end, vend=vend)
        self.anchors.append(a)
        return a

    def _around(self, t: Tree, pairs: tuple[str, ...]) -> tuple[int, int]:
        """``t``'s extent, widened to the brackets directly around it (one of ``pairs``,
        like ``"{}"``) if there are any."""
        text = self.clean
        i = t.meta.start_pos - 1
        while i >= 0 and text[i] in " \t\r\n\f":
            i -= 1
        j = t.meta.end_pos
        while j < len(text) and text[j] in " \t\r\n\f":
            j += 1
        if i >= 0 and j < len(text) and text[i] + text[j] in pairs:
            return i, j + 1
        return t.meta.start_pos, t.meta.end_pos

    def own(self, seq: Tree, owner: Any) -> None:
        """Anchor sequence ``seq`` as the body ``("body", owner)`` with its result
        ``("result", owner)`` (a later call, from the construct around it, wins)."""
        if self.anchors is None:
            return
        pair = self._seqs.get(id(seq))
        if pair is None:
            body = self.anchor(seq, None, item=False, has_end=True,
                               extent=self._around(seq, ("{}", "()")))
            result = self.anchor(seq.children[-1], None)
            assert body is not None and result is not None
            pair = self._seqs[id(seq)] = (body, result)
        pair[0].key = ("body", owner)
        pair[1].key = ("result", owner)

    def error(self, message: str, node: Tree | Token | Span | None,
              *notes: Note) -> ParseError:
        span = node if isinstance(node, Span) else self.span(node)
        return ParseError(Diagnostic(ERROR, message, span, tuple(notes)))

    # -- name lookup: this text, then base_module, then the fallback --------------------------
    def lookup_type(self, name: str) -> T.GlobalTypeVar | None:
        if name in self.local_types:
            return self.local_types[name]
        if self.base is not None and name in self.base.type_definitions:
            return self.base.type_definitions[name].header
        fallback = self.fallback
        if fallback is not None and name in fallback.module.type_definitions:
            self.fallback_names.add(name)
            return fallback.module.type_definitions[name].header
        return None

    def lookup_ctor(self, name: str) -> E.Constructor | None:
        if name in self.local_ctors:
            return self.local_ctors[name]
        if self.base is not None:
            ctor = self.base.constructors.get(name)
            if ctor is not None and ctor.belong_to.name not in self.local_types:
                return ctor
        if self.fallback is not None:
            ctor = self.fallback.constructors.get(name)
            if ctor is not None and ctor.belong_to.name not in self.local_types:
                self.fallback_names.add(ctor.belong_to.name)
                return ctor
        return None

    # -- names a misspelt one may have meant ("did you mean", relay_ref.suggest) -------------
    def type_names(self) -> list[str]:
        """ADT names (this text, ``base_module``, the fallback), type variables in scope and
        the canonical dtypes: what a misspelt type name may have meant."""
        names = [*self.local_types, *(tv for scope in self.type_scopes for tv in scope)]
        if self.base is not None:
            names += self.base.type_definitions
        if self.fallback is not None:
            names += self.fallback.module.type_definitions
        return names + list(_DTYPE_NAMES)

    def ctor_names(self) -> list[str]:
        """Constructor names of this text, ``base_module`` and the fallback."""
        names = list(self.local_ctors)
        if self.base is not None:
            names += self.base.constructors
        if self.fallback is not None:
            names += self.fallback.constructors
        return names

    def global_names(self) -> list[str]:
        """Global function names of this text, ``base_module`` and the fallback."""
        names = list(self.local_globals)
        if self.base is not None:
            names += self.base.functions
        if self.fallback is not None:
            names += self.fallback.module.functions
        return names

    def local_names(self) -> list[str]:
        """The ``%`` names in scope, innermost first."""
        return [*(n for scope in reversed(self.scopes) for n in scope), *self.free,
                *self.outer]

    def global_ref(self, tok: Token) -> E.GlobalVar:
        name = str(tok)[1:]
        self.global_uses.setdefault(name, self.span(tok))  # type: ignore[arg-type]
        return E.GlobalVar(name, self.span(tok))

    def check_globals(self) -> None:
        """Every ``@f`` used is defined here, in ``base_module`` or in the fallback."""
        fallback = self.fallback
        for name, span in self.global_uses.items():
            if name in self.local_globals or (self.base is not None and name in self.base):
                continue
            if fallback is not None and name in fallback.module.functions:
                self.fallback_names.add("@" + name)
                continue
            if not self.free_globals:
                raise self.error(f"undefined global function @{name}"
                                 f"{did_you_mean(name, self.global_names(), sigil='@')}", span)

    def lookup_local(self, tok: Token) -> E.Var:
        name = str(tok)[1:]
        for scope in reversed(self.scopes):
            var = scope.get(name)
            if var is not None:
                return var
        var = self.free.get(name) or self.outer.get(name)
        if var is not None:
            return var
        raise self.error(f"unbound local variable %{name}"
                         f"{did_you_mean(name, self.local_names(), sigil='%')}", tok)

    def new_var(self, tok: Token, ann: Tree | Token | None) -> Iterator[Any]:
        ty = None if ann is None else (yield self.type(ann))
        return E.Var(str(tok)[1:], ty, self.span(tok))

    # -- module (S-Module) --------------------------------------------------------------------
    def module_from(self, defs: list[Any], stmts: list[Any], tail: Any
                    ) -> tuple[IRModule, E.Expr | None, list[tuple[E.Var, E.Expr]]]:
        defs = [d for d in defs if isinstance(d, Tree) and d.data != "header"]
        # Pass 1: declare every name, so definitions may refer to each other in any order.
        func_names: dict[str, Tree] = {}
        for d in defs:
            if d.data == "func_def":
                name = str(d.children[1])[1:]
                if name in func_names:
                    raise self.error(f"@{name} is defined twice", d.children[1],
                                     Note("first definition here",
                                          self.span(func_names[name].children[1])))
                func_names[name] = d
            else:
                name_tok = d.children[1]
                name = str(name_tok)
                if name in self.local_types:
                    raise self.error(f"type {name} is defined twice", name_tok)
                self.local_types[name] = T.GlobalTypeVar(name, span=self.span(name_tok))
        self.local_globals = set(func_names)
        # Pass 2: ADTs (S-TypeDef, S-Extern): constructors before any function body.
        type_datas: list[TypeData] = []
        for d in defs:
            if d.data != "func_def":
                type_datas.append(run(self.type_def(d)))
        # Pass 3: functions (S-Def).
        functions: dict[str, E.Function] = {}
        for name, d in func_names.items():
            self.graph = {}
            self.free = {}
            functions[name] = run(self.func_def(d))
            self.anchor(d, ("def", functions[name]))
        # Statements and the trailing expression (parse_program only, S-Program).
        bindings: list[tuple[E.Var, E.Expr]] = []
        expr = None
        self.graph = {}
        self.free = {}
        if stmts or tail is not None:
            self.scopes.append({})
            for st in stmts:
                kind, var, value = run(self.stmt(st))
                if kind == "let":
                    bindings.append((var, value))
            if tail is not None:
                expr = run(self.expr(tail))
            self.scopes.pop()
        self.check_globals()
        # Assemble: base definitions, then the fallback's closure, then the new ones.
        out_types: dict[str, TypeData] = {}
        out_funcs: dict[str, E.Function] = {}
        metadata: dict[str, list] = {}
        if self.base is not None:
            out_types.update(self.base.type_definitions)
            out_funcs.update(self.base.functions)
            metadata.update(self.base.metadata)
        if self.fallback is not None and self.fallback_names:
            p_types, p_funcs = self.fallback.closure(frozenset(self.fallback_names))
            for td in p_types:
                if td.name not in self.local_types and td.name not in out_types:
                    out_types[td.name] = td
            for name, fn in p_funcs:
                if name not in func_names and name not in out_funcs:
                    out_funcs[name] = fn
        for td in type_datas:
            out_types[td.name] = td
        for name, fn in functions.items():
            out_funcs[name] = fn
        metadata.update(self.meta)
        module = IRModule(out_funcs, out_types, metadata, source_name=self.source.name)
        return module, expr, bindings

    def type_def(self, d: Tree) -> Iterator[Any]:
        header = self.local_types[str(d.children[1])]
        tparams = d.children[2]
        tvars = self.type_params(tparams, kind=T.Kind.Type)
        self.type_scopes.append({tv.name: tv for tv in tvars})
        ctors: list[E.Constructor] = []
        if d.data == "type_def":
            ctor_defs = d.children[3]
            for tag, cd in enumerate(ctor_defs.children if ctor_defs is not None else ()):
                name_tok, tlist = cd.children
                name = str(name_tok)
                if name in self.local_ctors:
                    raise self.error(f"constructor {name} is defined twice", name_tok)
                inputs = []
                if tlist is not None:
                    for t in tlist.children:
                        inputs.append((yield self.type(t)))
                ctor = E.Constructor(name, tuple(inputs), header, tag, self.span(name_tok))
                self.local_ctors[name] = ctor
                ctors.append(ctor)
        self.type_scopes.pop()
        td = TypeData(header, tuple(tvars), tuple(ctors), d.data == "extern_type",
                      self.span(d))
        if self.anchors is not None:
            self.anchor(d, ("type", td), has_end=d.data == "type_def")
            ctor_defs = d.children[3] if d.data == "type_def" else None
            for cd, ctor in zip(ctor_defs.children if ctor_defs is not None else (), ctors,
                                strict=True):
                self.anchor(cd, ("ctor", ctor))
        return td

    def type_params(self, tree: Tree | None, kind: T.Kind = T.Kind.Type) -> list[T.TypeVar]:
        if tree is None:
            return []
        seen: set[str] = set()
        out = []
        for tok in tree.children:
            if str(tok) in seen:
                raise self.error(f"type parameter {tok} is declared twice", tok)
            seen.add(str(tok))
            out.append(T.TypeVar(str(tok), kind, span=self.span(tok)))
        return out

    def func_def(self, d: Tree) -> Iterator[Any]:
        _, _, tparams, params, ret, body = d.children
        return (yield self.function(d, tparams, params, ret, body))

    def function(self, node: Tree, tparams: Tree | None, params: Tree | None,
                 ret: Tree | None, body: Tree) -> Iterator[Any]:
        """S-Fn: type parameters scope over the signature and body; parameters over the
        body; function attributes (``key=value``) follow the parameters."""
        tvars = self.type_params(tparams)
        # A scope only for a function with type parameters: name lookups walk the scopes,
        # so pushing empty ones made 16 000 nested fn literals quadratic to parse.
        if tvars:
            self.type_scopes.append({tv.name: tv for tv in tvars})
        vars_: list[E.Var] = []
        attrs: list[tuple[str, object]] = []
        scope: dict[str, E.Var] = {}
        param_trees: list[Tree] = []
        for p in params.children if params is not None else ():
            if p.data == "param":
                if attrs:
                    raise self.error("function attributes must follow the parameters", p)
                tok, pattrs, ann = p.children
                if pattrs is not None:  # S-Fn: a parameter's {virtual_device=...} is read
                    for kw in pattrs.children:  # and dropped (no device placement here)
                        if kw is not None:
                            yield self.kwarg(kw)
                if str(tok)[1:] in scope:
                    raise self.error(f"parameter {tok} is declared twice", tok)
                var = yield self.new_var(tok, ann)
                scope[var.name_hint] = var
                vars_.append(var)
                param_trees.append(p)
            else:
                key, value = yield self.kwarg(p)
                attrs.append((key, value))
        ret_type = None if ret is None else (yield self.type(ret.children[0]))
        self.scopes.append(scope)
        result = yield self.expr(body)
        self.scopes.pop()
        if tvars:
            self.type_scopes.pop()
        fn = E.Function(tuple(vars_), result, ret_type, tuple(tvars), tuple(attrs),
                        self.span(node))
        if self.anchors is not None:
            self.own(body, fn)
            if params is not None:
                self.anchor(params, ("params", fn), item=False, has_end=True,
                            extent=self._around(params, ("()",)))
                for p, var in zip(param_trees, vars_, strict=True):
                    self.anchor(p, ("param", var))
        return fn

    # -- statements and sequences (S-Seq, S-Let, S-Graph, S-FreeVar) --------------------------
    def stmt(self, st: Tree) -> Iterator[Any]:
        """Resolve one statement in the current scope; returns (kind, var, value)."""
        if st.data == "let_stmt":
            _, tok, ann, value_tree = st.children
            var = yield self.new_var(tok, ann)
            recursive = _is_fn(value_tree)
            if recursive:  # a let-bound function may call itself (S-Let-Rec)
                self.scopes[-1][var.name_hint] = var
            value = yield self.expr(value_tree)
            self.scopes[-1][var.name_hint] = var
            return "let", var, value
        if st.data == "graph_stmt":
            tok, value_tree = st.children
            value = yield self.expr(value_tree)
            self.graph[str(tok)] = value
            return "graph", None, value
        if st.data == "free_var_stmt":
            _, tok, ann = st.children
            var = yield self.new_var(tok, ann)
            self.free[var.name_hint] = var
            return "free", var, None
        # expr_stmt: S-Seq, `e1; e2` is `let %_ = e1; e2`.
        value = yield self.expr(st.children[0])
        return "let", E.Var("_", None, self.span(st)), value

    def _e_seq(self, t: Tree) -> Iterator[Any]:
        kids = t.children
        self.scopes.append({})
        lets: list[tuple[E.Var, E.Expr, Span | None]] = []
        marks = [] if self.anchors is not None and len(kids) > 1 else None
        for st in kids[:-1]:
            kind, var, value = yield self.stmt(st)
            if kind == "let":
                lets.append((var, value, self.span(st)))
            if marks is not None:  # Pr-Comments: a let's key (its Let) is filled in below
                key = None if kind == "let" else value if kind == "graph" else ("free", var)
                a = self.anchor(st, key, value=None if kind == "free" else st.children[-1])
                if kind == "let":
                    marks.append(a)
        result = yield self.expr(kids[-1])
        self.scopes.pop()
        end = self.span(kids[-1])
        for var, value, span in reversed(lets):
            result = E.Let(var, value, result, span.merge(end) if span else end)
            if marks:
                marks.pop().key = result
        if marks is not None and lets:
            self.own(t, result)  # a `{ let ...; e }` block: owned by its first Let
        return result

    # -- expressions ---------------------------------------------------------------------------
    def expr(self, t: Any) -> Any:
        """A generator (or a finished value) for the expression tree ``t``."""
        if isinstance(t, Tree):
            return self.handlers[t.data](t)
        raise self.error("expected an expression", t)  # pragma: no cover

    def _e_paren(self, t: Tree) -> Any:
        return self.expr(t.children[0])

    def _e_block(self, t: Tree) -> Any:
        return self.expr(t.children[0])

    def _e_number(self, t: Tree) -> E.Constant:
        tok = t.children[0]
        try:
            value, dtype = literal_value(str(tok))
        except ValueError as err:
            raise self.error(str(err), tok) from None
        return E.Constant(np.array(value, dtype=dtype), self.span(tok))

    def _e_bool_lit(self, t: Tree) -> E.Constant:
        tok = t.children[0]
        return E.Constant(np.array(str(tok) == "True", dtype="bool"), self.span(tok))

    def _e_local(self, t: Tree) -> E.Var:
        return self.lookup_local(t.children[0])

    def _e_graph_ref(self, t: Tree) -> E.Expr:
        tok = t.children[0]
        node = self.graph.get(str(tok))
        if node is None:
            raise self.error(f"graph variable {tok} is not defined", tok,
                             Note("graph variables are bound by `%0 = e;` before their use"))
        return node

    def _e_global_ref(self, t: Tree) -> E.GlobalVar:
        return self.global_ref(t.children[0])

    def _e_name_ref(self, t: Tree, callee: bool = False) -> E.Expr:
        tok = t.children[0]
        name = str(tok)
        ctor = self.lookup_ctor(name)
        span = self.span(tok)
        if ctor is not None:
            if not callee and not ctor.inputs:
                # S-Ctor0: a field-less constructor written alone is a call (`Nil`).
                return E.Call(ctor, (), None, (), span)
            return ctor
        from relay_ref.ops.registry import has_op

        if has_op(name):  # S-Names: a constructor (above), else a registered operator
            return E.Op(name, span)
        if self.lookup_type(name) is not None:
            raise self.error(f"'{name}' is a type, not a constructor or operator", tok)
        if name[:1].isupper():
            raise self.error(f"unknown constructor '{name}'"
                             f"{did_you_mean(name, self.ctor_names())}", tok)
        if name in self.local_names():  # `add(x, 1)` for `add(%x, 1)`
            hint = f"; did you mean %{name}?"
        else:
            from relay_ref.ops.registry import all_ops

            hint = did_you_mean(name, all_ops())
            if not hint and "." not in name:
                hint = " (maybe a local variable missing its '%'?)"
        raise self.error(f"unknown operator '{name}'{hint}", tok)

    def meta_item(self, tok: Token) -> tuple[str, object]:
        """S-Metadata: (type key, object) of ``meta[key][i]`` in the metadata table (the
        ``#[metadata]`` section, then what ``parse(..., metadata=...)`` appended)."""
        m = re.fullmatch(r"meta\[([A-Za-z0-9_.]+)\]\[([0-9]+)\]", str(tok))
        assert m is not None
        key, index = m.group(1), int(m.group(2))
        table = self.meta.get(key)
        if table is None:
            hint = Note("the text has no #[metadata] section (printers may omit it)") \
                if not self.meta else Note(f"the metadata table has no {key} entries")
            raise self.error(f"cannot resolve {tok}", tok, hint)
        if index >= len(table):
            raise self.error(f"{tok} is out of range: the metadata has {len(table)} "
                             f"{key} entries", tok)
        return key, table[index]

    def _e_meta_ref(self, t: Tree) -> E.Expr:
        tok = t.children[0]
        _, node = self.meta_item(tok)
        if not isinstance(node, E.Expr):
            raise self.error(f"{tok} is not an expression", tok)
        if isinstance(node, E.Constant):
            dtype = getattr(node.data, "dtype", None)
            try:  # S-Metadata: a constant's elements are of a Relay data type
                canonical_dtype(str(dtype))
            except ValueError:
                raise self.error(f"{tok} is an array of {dtype}, which Relay has no data type "
                                 "for", tok, Note("Relay's data types: bool, int8/16/32/64, "
                                                  "uint8/16/32/64, float16/32/64")) from None
        return node

    def meta_attrs(self, callee: E.Expr, tok: Token) -> object:
        """S-MetaAttrs: ``f(args, meta[relay.attrs.Conv2DAttrs][0])``, a call's attributes as
        one metadata object: for an operator an instance of its attrs class or a dict of its
        attributes (checked like key=value ones); for any other callee a dict (-> CallAttrs,
        the table's key as the attrs type)."""
        key, obj = self.meta_item(tok)
        if isinstance(callee, E.Op):
            from relay_ref.ops.registry import get_op

            cls = get_op(callee.name).attrs
            if isinstance(obj, cls):
                return obj
            if isinstance(obj, dict):
                return self.op_attrs(callee.name, dict(obj), {}, tok)
        elif isinstance(obj, dict):
            return E.CallAttrs(key, tuple((str(k), v) for k, v in obj.items()))
        want = "a dict of attributes" if not isinstance(callee, E.Op) else \
            f"{get_op(callee.name).attrs.__name__} or a dict of its attributes"
        notes = (Note("attribute objects read from a #[metadata] section are not decoded: "
                      "write the attributes as key=value, or pass them with "
                      "parse(..., metadata=...)"),) if isinstance(obj, E.MetaObject) else ()
        raise self.error(f"{tok} cannot be the attributes of this call (expected {want})",
                         tok, *notes)

    def meta_dim(self, tok: Token) -> T.Dim:
        """S-MetaDim: a ``meta[...]`` shape dimension. An integer object (a Python int, an
        integer scalar constant, TVM's ``IntImm`` node) is that size; anything else (a
        ``tir.Var``: a symbolic size, which relay_ref does not represent) is ``?``."""
        _, obj = self.meta_item(tok)
        value: object = obj
        if isinstance(obj, E.Constant) and obj.data.ndim == 0:
            value = obj.data.item()
        elif isinstance(obj, E.MetaObject) and obj.type_key == "IntImm":
            text = json.loads(obj.node).get("attrs", {}).get("value")
            value = int(text) if isinstance(text, str) and text.lstrip("-").isdigit() else None
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            if value < 0:
                raise self.error(f"{tok} is a negative dimension ({value})", tok)
            return int(value)
        return T.ANY

    def _e_tuple(self, t: Tree) -> Iterator[Any]:
        fields = []
        for c in t.children:
            if isinstance(c, Tree):
                fields.append((yield self.expr(c)))
        return E.Tuple(tuple(fields), self.span(t))

    def _e_proj(self, t: Tree) -> Iterator[Any]:  # S-Proj (chains `%t.0.1` too)
        base = yield self.expr(t.children[0])
        return E.TupleGetItem(base, int(t.children[1]), self.span(t))

    def _e_binexpr(self, t: Tree) -> Iterator[Any]:
        """S-BinOp: operands ``x0 op1 x1 op2 x2 ...`` grouped by precedence (all operators
        left-associative); ``a + b`` is ``add(a, b)`` with the operator's default attrs."""
        kids = t.children
        operands: list[tuple[E.Expr, Span | None]] = [
            ((yield self.expr(kids[0])), self.span(kids[0]))]
        ops: list[Token] = []
        for i in range(1, len(kids), 2):
            op_tok = kids[i]
            prec = _PRECEDENCE[str(op_tok)]
            while ops and _PRECEDENCE[str(ops[-1])] >= prec:
                self._reduce_binop(operands, ops)
            ops.append(op_tok)
            operands.append(((yield self.expr(kids[i + 1])), self.span(kids[i + 1])))
        while ops:
            self._reduce_binop(operands, ops)
        return operands[0][0]

    def _reduce_binop(self, operands: list[tuple[E.Expr, Span | None]],
                      ops: list[Token]) -> None:
        op_tok = ops.pop()
        rhs, rspan = operands.pop()
        lhs, lspan = operands.pop()
        name = BINARY_OPS[str(op_tok)]
        attrs = self.op_attrs(name, {}, {}, op_tok)
        span = lspan.merge(rspan) if lspan is not None else self.span(op_tok)
        operands.append((E.Call(E.Op(name, self.span(op_tok)), (lhs, rhs), attrs, (), span),
                         span))

    def op_attrs(self, name: str, items: dict[str, object], key_toks: dict[str, Token],
                 at: Any) -> object:
        import dataclasses

        from relay_ref.ops.registry import AttrError, all_ops, get_op, has_op, make_attrs

        if not has_op(name):
            raise self.error(f"unknown operator '{name}'{did_you_mean(name, all_ops())}", at)
        items = {k: _dtype_attr(k, v) for k, v in items.items()}
        try:
            return make_attrs(name, items)
        except AttrError as err:
            where = key_toks.get(err.key, at) if err.key else at
            message = str(err)
            known = [f.name for f in dataclasses.fields(get_op(name).attrs)]
            if err.key and err.key not in known:  # a misspelt attribute name: the hint
                # follows the name, before the registry's "(its attributes: ...)"
                head, sep, tail = message.partition(" (its attributes:")
                message = head + did_you_mean(err.key, known) + sep + tail
            raise self.error(message, where) from None
        except (TypeError, ValueError) as err:
            raise self.error(f"invalid attributes for {name}: {err}", at) from None

    def _e_call(self, t: Tree) -> Iterator[Any]:
        # S-Call, S-TypeArgs: callee(args, key=value, ...); callee[T, ...](args).
        kids = t.children
        callee_t = kids[0]
        targs_t = kids[1] if len(kids) == 3 else None
        args_t = kids[-1]
        if isinstance(callee_t, Tree) and callee_t.data == "name_ref":
            callee = self._e_name_ref(callee_t, callee=True)
        else:
            callee = yield self.expr(callee_t)
        type_args: list[T.Type] = []
        if targs_t is not None:
            for ty in targs_t.children:
                type_args.append((yield self.type(ty)))
        args: list[E.Expr] = []
        kwargs: dict[str, object] = {}
        key_toks: dict[str, Token] = {}
        arg_trees = list(args_t.children) if args_t is not None else []
        meta_tok = _meta_attrs_token(arg_trees[-1]) if arg_trees else None
        if meta_tok is not None:  # S-MetaAttrs: a last lone meta[...] naming attributes
            key, _ = self.meta_item(meta_tok)
            if not _is_attrs_key(key):
                meta_tok = None
            else:
                arg_trees.pop()
        for a in arg_trees:
            if isinstance(a, Tree) and a.data == "kwarg":
                key, value = yield self.kwarg(a)
                if key in kwargs:
                    raise self.error(f"attribute '{key}' is given twice", a.children[0])
                kwargs[key] = value
                key_toks[key] = a.children[0]
            else:
                if kwargs:
                    raise self.error("positional arguments must come before attributes", a)
                args.append((yield self.expr(a)))
        span = self.span(t)
        if meta_tok is not None:
            if kwargs:
                raise self.error("a call's attributes are either key=value pairs or one "
                                 "meta[...] object, not both", meta_tok)
            attrs = self.meta_attrs(callee, meta_tok)
            return E.Call(callee, tuple(args), attrs, tuple(type_args), span)
        if isinstance(callee, E.Op):
            attrs = self.op_attrs(callee.name, kwargs, key_toks, callee_t)
            return E.Call(callee, tuple(args), attrs, tuple(type_args), span)
        if isinstance(callee, E.Constructor) and len(args) != len(callee.inputs):
            raise self.error(f"constructor {callee.name} expects {len(callee.inputs)} "
                             f"argument(s), found {len(args)}", t)
        attrs = None
        if kwargs:  # S-CallAttrs: a non-operator call names its attributes' type (TVM)
            type_key = kwargs.pop("attrs_type_key", None)
            if not isinstance(type_key, str):
                first = next(iter(key_toks.values()))
                raise self.error("attributes of a call of a non-operator need "
                                 "attrs_type_key=\"...\" (the attributes' type)", first)
            if type_key:  # TVM drops the attributes when the key is empty
                attrs = E.CallAttrs(type_key, tuple(kwargs.items()))
        return E.Call(callee, tuple(args), attrs, tuple(type_args), span)

    def kwarg(self, t: Tree) -> Iterator[Any]:
        key_tok, value_t = t.children
        value = yield self.attr_value(value_t)
        return str(key_tok), value

    def attr_value(self, t: Tree) -> Iterator[Any]:
        """S-Attrs: numbers, strings, booleans, None/nullptr, [lists] and (tuples)."""
        kind = t.data
        if kind == "av_number":
            tok = t.children[0]
            try:
                value, dtype = literal_value(str(tok))
            except ValueError as err:
                try:
                    return float(str(tok))  # S-Attrs: a bare decimal (`alpha=0.5`) is a float
                except ValueError:
                    raise self.error(str(err), tok) from None
            return float(value) if dtype.startswith("float") else int(value)
        if kind == "av_string":
            return str(t.children[0])[1:-1]
        if kind == "av_bool":
            return str(t.children[0]) == "True"
        if kind == "av_meta":  # S-Attrs: an opaque metadata object (virtual_device=meta[...])
            tok = t.children[0]
            _, obj = self.meta_item(tok)
            if not isinstance(obj, E.MetaObject):
                raise self.error(f"{tok} cannot be an attribute value (only opaque metadata "
                                 "objects such as a VirtualDevice can)", tok)
            return obj
        if kind == "av_name":
            tok = t.children[0]
            if str(tok) in ("None", "nullptr"):
                return None
            raise self.error(f"expected an attribute value, found the name '{tok}'", tok,
                             Note("strings are written in double quotes: \"NCHW\""))
        items_t = t.children[1]
        items = []
        for c in items_t.children if items_t is not None else ():
            items.append((yield self.attr_value(c)))
        if kind == "av_tuple" and len(items) == 1:
            return items[0]
        return tuple(items)

    def _e_fn(self, t: Tree) -> Iterator[Any]:
        _, tparams, params, ret, body = t.children
        return (yield self.function(t, tparams, params, ret, body))

    def _e_if_expr(self, t: Tree) -> Iterator[Any]:
        _, c, a, b = t.children
        cond = yield self.expr(c)
        then = yield self.expr(a)
        else_ = yield self.expr(b)
        node = E.If(cond, then, else_, self.span(t))
        if self.anchors is not None:
            self.own(a, (node, 0))
            self.own(b, (node, 1))
        return node

    def _e_ref_new(self, t: Tree) -> Iterator[Any]:
        return E.RefCreate((yield self.expr(t.children[1])), self.span(t))

    def _e_ref_read(self, t: Tree) -> Iterator[Any]:
        return E.RefRead((yield self.expr(t.children[1])), self.span(t))

    def _e_ref_write(self, t: Tree) -> Iterator[Any]:
        ref = yield self.expr(t.children[1])
        value = yield self.expr(t.children[2])
        return E.RefWrite(ref, value, self.span(t))

    # -- the Relax constructs (S-MatchCast, S-DPS, S-Dataflow): calls of the ops of
    # relay_ref/ops/symbolic.py, with their own syntax since their attributes hold a type
    def _e_match_cast(self, t: Tree) -> Iterator[Any]:
        """S-MatchCast: ``match_cast(e, T)`` is ``Call(Op("match_cast"), (e,), {type=T})``."""
        from relay_ref.ops.symbolic import MatchCastAttrs

        kw, value_t, type_t = t.children
        value = yield self.expr(value_t)
        ty = yield self.type(type_t)
        _check_cast_type(self, ty, type_t, "match_cast")
        return E.Call(E.Op("match_cast", self.span(kw)), (value,), MatchCastAttrs(ty), (),
                      self.span(t))

    def _e_dps_call(self, t: Tree) -> Iterator[Any]:
        """S-DPS: ``call_dps_packed("f", (args), T)`` (and ``call_tir``) is
        ``Call(Op(kw), (Tuple(args),), {func_name="f", out_type=T})``; the arguments may
        also be one expression holding a tuple (``%t``)."""
        from relay_ref.ops.symbolic import DPSAttrs

        kw, name_tok, args_t, type_t = t.children
        name = str(name_tok)[1:-1]
        if not name:
            raise self.error(f"{kw} needs the name of a registered function", name_tok)
        args = yield self.expr(args_t)
        ty = yield self.type(type_t)
        _check_cast_type(self, ty, type_t, str(kw))
        return E.Call(E.Op(str(kw), self.span(kw)), (args,), DPSAttrs(name, ty), (),
                      self.span(t))

    def _e_dataflow(self, t: Tree) -> Iterator[Any]:
        """S-Dataflow: ``dataflow { let %a = ...; e }`` is ``Call(Op("dataflow"), (body,))``."""
        kw, body_t = t.children
        body = yield self.expr(body_t)
        attrs = self.op_attrs("dataflow", {}, {}, kw)  # as a generic call's: NoAttrs()
        node = E.Call(E.Op("dataflow", self.span(kw)), (body,), attrs, (), self.span(t))
        if self.anchors is not None:
            self.own(body_t, node)
        return node

    def _e_match_expr(self, t: Tree) -> Iterator[Any]:
        # S-Match: each clause's pattern variables scope over its right-hand side.
        kw, data_t, clauses_t = t.children
        data = yield self.expr(data_t)
        clauses = []
        for c in clauses_t.children if clauses_t is not None else ():
            pat_t, rhs_t = c.children
            scope: dict[str, E.Var] = {}
            pat = yield self.pattern(pat_t, scope)
            self.scopes.append(scope)
            rhs = yield self.expr(rhs_t)
            self.scopes.pop()
            clauses.append(E.Clause(pat, rhs, self.span(c)))
            if self.anchors is not None:
                self.anchor(c, ("clause", clauses[-1]))
                if rhs_t.data == "block":
                    self.own(rhs_t.children[0], clauses[-1])
                else:
                    self.anchor(rhs_t, ("result", clauses[-1]))
        node = E.Match(data, tuple(clauses), str(kw) == "match", self.span(t))
        self.anchor(t, ("match", node), item=False, has_end=True)
        return node

    # -- patterns (S-Pattern) -----------------------------------------------------------------
    def pattern(self, t: Tree, scope: dict[str, E.Var]) -> Iterator[Any]:
        kind = t.data
        span = self.span(t)
        if kind == "pwild":
            return E.PatternWildcard(span)
        if kind == "pvar":
            tok, ann = t.children
            var = yield self.new_var(tok, ann)
            if var.name_hint in scope:
                raise self.error(f"pattern variable {tok} is bound twice in one pattern", tok)
            scope[var.name_hint] = var
            return E.PatternVar(var, span)
        sub_t = t.children[1]
        subs = []
        for c in sub_t.children if sub_t is not None else ():
            subs.append((yield self.pattern(c, scope)))
        if kind == "ptuple":
            return E.PatternTuple(tuple(subs), span)
        tok = t.children[0]
        ctor = self.lookup_ctor(str(tok))
        if ctor is None:
            raise self.error(f"unknown constructor '{tok}' in pattern"
                             f"{did_you_mean(str(tok), self.ctor_names())}", tok)
        if len(subs) != len(ctor.inputs) and not (sub_t is None and not ctor.inputs):
            raise self.error(f"constructor {ctor.name} has {len(ctor.inputs)} field(s), "
                             f"the pattern gives {len(subs)}", t)
        return E.PatternConstructor(ctor, tuple(subs), span)

    # -- types (S-Type) ------------------------------------------------------------------------
    def type(self, t: Any) -> Any:
        return self.type_handlers[t.data](t)

    def _t_paren_type(self, t: Tree) -> Any:
        return self.type(t.children[0])

    def _t_tuple_type(self, t: Tree) -> Iterator[Any]:
        fields = []
        kids = t.children[1:]
        if kids:
            fields.append((yield self.type(kids[0])))
            if kids[1] is not None:
                for c in kids[1].children:
                    fields.append((yield self.type(c)))
        return T.TupleType(tuple(fields), self.span(t))

    def _t_func_type(self, t: Tree) -> Iterator[Any]:
        _, tparams, args_t, ret_t = t.children
        tvars = self.type_params(tparams)
        if tvars:  # as in ``function``: no empty scopes
            self.type_scopes.append({tv.name: tv for tv in tvars})
        args = []
        for c in args_t.children if args_t is not None else ():
            args.append((yield self.type(c)))
        ret = yield self.type(ret_t)
        if tvars:
            self.type_scopes.pop()
        return T.FuncType(tuple(args), ret, tuple(tvars), self.span(t))

    def _t_tensor_type(self, t: Tree) -> T.TensorType:
        _, shape_t, dtype_tok = t.children
        if isinstance(shape_t.children[0], Token) and shape_t.children[0].type == "LPAR":
            dim_nodes = shape_t.children[1].children if shape_t.children[1] is not None else []
        else:
            dim_nodes = shape_t.children
        dims: list[T.Dim] = []
        for d in dim_nodes:
            if isinstance(d, Token) and d.type == "QMARK":
                dims.append(T.ANY)
            elif isinstance(d, Token) and d.type == "META":
                dims.append(self.meta_dim(d))
            else:
                value = self.dim(d)
                if isinstance(value, int) and value < 0:
                    raise self.error(f"a dimension must be a non-negative integer, a shape "
                                     f"expression or '?', found {value}", d)
                dims.append(value)
        return T.TensorType(tuple(dims), self.dtype(dtype_tok), self.span(t))

    def _t_tensor_ndim_type(self, t: Tree) -> T.TensorType:
        """S-NDim: ``Tensor[ndim=2, float32]``, a tensor of known rank and unknown, unrelated
        dimensions: the same type as ``Tensor[(?, ?), float32]``."""
        _, key, num, dtype_tok = t.children
        if str(key) != "ndim":
            raise self.error(f"expected a shape or 'ndim=' in a tensor type, found "
                             f"'{key}='", key)
        try:
            value, dtype = literal_value(str(num))
        except ValueError as err:
            raise self.error(str(err), num) from None
        if not dtype.startswith(("int", "uint")) or value < 0:
            raise self.error(f"ndim must be a non-negative integer, found {num}", num)
        return T.TensorType((T.ANY,) * int(value), self.dtype(dtype_tok), self.span(t))

    _DIM_CALLS = {"floordiv": SH.floordiv, "floormod": SH.floormod,
                  "min": SH.dim_min, "max": SH.dim_max}

    def dim(self, d: Tree | Token) -> SH.Dim:
        """S-SymDim: a dimension expression to its canonical value (``int`` or ``SymDim``).
        Iterative over the expression's binary tree (a long sum nests deeply)."""
        out: dict[int, SH.Dim] = {}
        stack: list[tuple[Tree | Token, bool]] = [(d, False)]
        while stack:
            node, done = stack.pop()
            if isinstance(node, Token):
                out[id(node)] = self._dim_leaf(node)
                continue
            kids = node.children[1:] if node.data == "dim_call" else node.children
            if not done:
                stack.append((node, True))
                stack.extend((k, False) for k in kids)
                continue
            vals = [out[id(k)] for k in kids]
            if node.data == "dim_add":
                out[id(node)] = vals[0] + vals[1]
            elif node.data == "dim_sub":
                out[id(node)] = vals[0] - vals[1]
            elif node.data == "dim_mul":
                out[id(node)] = vals[0] * vals[1]
            elif node.data == "dim_call":
                name_tok = node.children[0]
                fn = self._DIM_CALLS.get(str(name_tok))
                if fn is None:
                    hint = did_you_mean(str(name_tok), sorted(self._DIM_CALLS))
                    raise self.error(f"unknown function '{name_tok}' in a dimension; a "
                                     f"dimension may use floordiv, floormod, min and max{hint}",
                                     name_tok)
                try:
                    out[id(node)] = fn(vals[0], vals[1])
                except ZeroDivisionError:
                    raise self.error(f"{name_tok} by zero in a dimension", name_tok) from None
            else:  # a parenthesised expression keeps its one child
                out[id(node)] = vals[0]
        return out[id(d)]

    def _dim_leaf(self, tok: Token) -> SH.Dim:
        if tok.type == "NAME":
            name = str(tok)
            if not name.isidentifier():
                notes = (Note("a quotient is written floordiv(n, 2)"),) if "/" in name \
                    else ()
                raise self.error(f"a shape variable is a plain name, found '{name}'", tok,
                                 *notes)
            return SH.sym(name)
        if tok.type != "NUMBER":
            raise self.error(f"unexpected {tok} in a dimension", tok)
        try:
            value, dtype = literal_value(str(tok))
        except ValueError as err:
            raise self.error(str(err), tok) from None
        if not dtype.startswith(("int", "uint")):
            raise self.error(f"a dimension must be a non-negative integer, a shape expression "
                             f"or '?', found {tok}", tok)
        return int(value)

    def dtype(self, tok: Token) -> str:
        """S-DType: the canonical name of a dtype token (``float`` -> ``float32``)."""
        try:
            return canonical_dtype(str(tok))
        except ValueError as err:
            hint = did_you_mean(str(tok), _DTYPE_NAMES) if "unknown" in str(err) else ""
            raise self.error(f"{err}{hint}", tok) from None

    def _t_named_type(self, t: Tree) -> Iterator[Any]:
        tok, args_t = t.children
        name = str(tok)
        span = self.span(t)
        if args_t is None:
            for scope in reversed(self.type_scopes):
                if name in scope:
                    return scope[name]
            if name.startswith(_DTYPE_PREFIXES):  # S-DType: `int`, `float16x4`, `bool`
                return T.TensorType((), self.dtype(tok), span)
        gtv = self.lookup_type(name)
        if gtv is None:
            if args_t is None and self.free_type_vars is not None:
                if name not in self.free_type_vars:
                    self.free_type_vars[name] = T.TypeVar(name, span=span)
                return self.free_type_vars[name]
            raise self.error(f"unknown type '{name}'"
                             f"{did_you_mean(name, self.type_names())}", tok)
        args = []
        for c in args_t.children if args_t is not None else ():
            args.append((yield self.type(c)))
        return T.TypeCall(gtv, tuple(args), span)

    def _t_empty_type_call(self, t: Tree) -> T.TypeCall:
        # `T[]`: TVM prints an ADT with no type parameters applied to nothing this way.
        tok = t.children[0]
        gtv = self.lookup_type(str(tok))
        if gtv is None:
            raise self.error(f"unknown type '{tok}'"
                             f"{did_you_mean(str(tok), self.type_names())}", tok)
        return T.TypeCall(gtv, (), self.span(t))

    def _t_hole_type(self, t: Tree) -> T.IncompleteType:
        return T.IncompleteType(span=self.span(t))

    def _t_ref_type(self, t: Tree) -> Iterator[Any]:
        return T.RefType((yield self.type(t.children[1])), self.span(t))


def _meta_attrs_token(t: Any) -> Token | None:
    """The META token when argument tree ``t`` is a lone ``meta[...][i]``, else None."""
    while isinstance(t, Tree) and t.data == "seq" and len(t.children) == 1:
        t = t.children[0]
    if isinstance(t, Tree) and t.data == "meta_ref":
        return t.children[0]
    return None


def _is_attrs_key(key: str) -> bool:
    """Metadata type keys of attributes objects (TVM: ``relay.attrs.Conv2DAttrs``,
    ``attrs.TestAttrs``, ``DictAttrs``)."""
    return key.startswith(("relay.attrs.", "attrs.")) or key.endswith("Attrs")


def _dtype_attr(key: str, value: object) -> object:
    """S-DType in attributes: a dtype-valued attribute (``dtype``, ``out_dtype``, ...) given
    as a shorthand is stored under its canonical name (``"float"`` -> ``"float32"``); other
    values are left to the operator's own check (``""`` means "the input's dtype")."""
    if isinstance(value, str) and value and (key == "dtype" or key.endswith("_dtype")):
        try:
            return canonical_dtype(value)
        except ValueError:
            return value
    return value


def _is_fn(t: Any) -> bool:
    while isinstance(t, Tree) and t.data in ("paren", "block") and len(t.children) == 1:
        inner = t.children[0]
        if isinstance(inner, Tree) and inner.data == "seq" and len(inner.children) == 1:
            t = inner.children[0]
        else:
            return False
    return isinstance(t, Tree) and t.data == "fn"


# ---- header check ----------------------------------------------------------------------------

def _check_header(source: Source, tree: Tree) -> None:
    for c in tree.children:
        if isinstance(c, Tree) and c.data == "header":
            key, value = c.children
            span = Span(source, key.line, key.column, key.end_line, key.end_column)
            if str(key) != "version":
                raise ParseError(f"unknown attribute '{key}': the header is "
                                 f"#[version = \"{VERSION}\"]", span)
            if str(value)[1:-1] != VERSION:
                vspan = Span(source, value.line, value.column, value.end_line, value.end_column)
                raise ParseError(f"version must be \"{VERSION}\", found {value}", vspan)
