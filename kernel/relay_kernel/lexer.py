"""Pygments lexer for the Relay text format (v0.0.5) and the kernel's ``:``-commands.

Registered as the ``relay`` lexer by the ``pygments.lexers`` entry point in ``pyproject.toml``
(so nbconvert, ``pygmentize -l relay`` and ``rich.syntax.Syntax(code, "relay")`` find it).
Token classes follow TVM's tokenizer (``src/relay/parser/tokenizer.h``):

* keywords ``fn def let if else type match match? extern free_var ref ref_read ref_write``;
* ``%x`` / ``%0`` locals (``Name.Variable``), ``@f`` globals (``Name.Function``);
* capitalised names (ADTs and constructors: ``List``, ``Cons``) are ``Name.Class``;
  other bare names (operators such as ``add``, ``nn.conv2d``) are ``Name.Builtin``;
  ``key=`` in a call's attributes is ``Name.Attribute``;
* ``Tensor`` and dtypes (``float32``, ``int64``, ``bool``, ``uint8x4``) are ``Keyword.Type``;
* literals ``1``, ``2i64``, ``1.5f``, ``2f16``, ``inff``, ``True``/``False``, ``"str"``;
* ``//`` line comments and *nested* ``/* */`` block comments;
* ``#[version = "0.0.5"]`` attributes and ``meta[relay.Constant][0]`` references.

Invariant: the lexer never produces ``Error`` tokens for text the Relay parser accepts.
"""

from __future__ import annotations

from typing import ClassVar

from pygments.lexer import RegexLexer, bygroups, include, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

KEYWORDS = ("fn", "def", "let", "if", "else", "type", "match", "extern", "free_var",
            "ref", "ref_read", "ref_write")
"""Relay's reserved words (``match?`` is ``match`` followed directly by ``?``)."""

DTYPE_RE = r"(?:bool|u?int(?:1|8|16|32|64)|b?float(?:16|32|64))(?:x\d+)?"
"""A dtype name: a scalar type on its own or the element type of a ``Tensor``."""

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


class RelayLexer(RegexLexer):
    """Relay IR text (``.relay``) with TVM's token classes; see the module docstring."""

    name = "Relay"
    aliases: ClassVar[list[str]] = ["relay"]
    filenames: ClassVar[list[str]] = ["*.relay", "*.rly"]
    mimetypes: ClassVar[list[str]] = ["text/x-relay"]
    url = "https://tvm.apache.org/docs/reference/langref/relay_expr.html"

    tokens: ClassVar[dict] = {
        "root": [
            # a kernel command at the start of a line: `:type %x`
            (r"^(:)([a-z]+)\b", bygroups(Punctuation, Keyword.Pseudo)),
            include("relay"),
        ],
        "relay": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*", Comment.Multiline, "comment"),
            (r"#\[metadata\][\s\S]*", Comment.Preproc),
            (r"#\[[^\]]*\]", Comment.Preproc),
            (r"(match)(\?)", bygroups(Keyword, Keyword)),
            (words(("fn", "def", "type", "extern"), suffix=r"\b"), Keyword.Declaration),
            (words(("let", "if", "else", "match", "free_var", "ref", "ref_read",
                    "ref_write"), suffix=r"\b"), Keyword),
            (r"\b(True|False|None|nullptr)\b", Keyword.Constant),
            (r"\bTensor\b", Keyword.Type),
            (DTYPE_RE + r"\b", Keyword.Type),
            (r"meta\[[^\]]*\]\[\d+\]", Name.Constant),
            (r"@" + _IDENT, Name.Function),
            (r"%(?:" + _IDENT + r"|\d+)", Name.Variable),
            # numbers: floats need an `f` suffix in Relay; `inff` is infinity
            (r"-?inff(?:16|32|64)?\b", Number.Float),
            (r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?f(?:16|32|64)?\b", Number.Float),
            (r"-?\d+\.\d+(?:[eE][+-]?\d+)?", Number.Float),
            (r"-?\d+(?:i(?:8|16|32|64)|u(?:8|16|32|64))?\b", Number.Integer),
            (r'"[^"\n]*"', String.Double),
            (r"\b_\b", Keyword.Pseudo),
            (r"(" + _IDENT + r")(\s*)(=)(?!=|>)",
             bygroups(Name.Attribute, Whitespace, Operator)),
            (r"[A-Z][A-Za-z0-9_]*", Name.Class),
            (_IDENT + r"(?:\." + _IDENT + r")*", Name.Builtin),
            (r"->|=>|==|!=|<=|>=|[-+*/<>=?]", Operator),
            (r"[()\[\]{},;:.]", Punctuation),
            (r".", Text),
        ],
        "comment": [  # Relay block comments nest
            (r"/\*", Comment.Multiline, "#push"),
            (r"\*/", Comment.Multiline, "#pop"),
            (r"[^/*]+|[/*]", Comment.Multiline),
        ],
    }
