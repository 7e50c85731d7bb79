"""Rich output: Relay values, types and errors as Jupyter MIME bundles.

Invariants:
* every bundle has ``text/plain`` (what consoles, tests and ``jupyter_kernel_test`` read);
  ``text/html`` is an addition, never the only form;
* HTML is self-contained (inline styles, Pygments ``noclasses``), so it survives nbconvert
  and notebook viewers without CSS;
* tensors larger than ``SUMMARY_THRESHOLD`` elements are summarised (edges + ``…``) in both
  forms, so a cell never floods the front end;
* user errors become ``{"ename", "evalue", "traceback"}`` whose traceback is the rendered
  diagnostic (``In[3]:1:5: error: ...``, the source line, carets; ANSI colours), with no
  Python frames, and, when it cites rules (``[T-App]``), a last line saying how to read
  them (``:rule T-App``): an error is one output, the same in every front end.
"""

from __future__ import annotations

import html
import re
import traceback as pytraceback
from typing import Any

import numpy as np

from relay_kernel.lexer import RelayLexer

SUMMARY_THRESHOLD = 1000
"""Tensors with more elements than this are shown summarised."""

EDGE_ITEMS = 3
"""Leading and trailing items kept per axis in a summarised tensor."""

TABLE_MAX = 12
"""Rows/columns of a 1-d/2-d tensor shown in full in the HTML table (else edges + ``⋯``)."""

TEXT_MAX = 20_000
"""ADT values, closures and tuples whose Relay text is longer than this are cut."""

SOURCE_LINE_MAX = 160
"""Source lines in error messages longer than this are shown around the carets only."""

MONO = "font-family: var(--jp-code-font-family, monospace);"


# -- highlighting ------------------------------------------------------------------------

def highlight_html(code: str) -> str:
    """Relay ``code`` as a highlighted, self-contained HTML ``<pre>`` block."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    body = highlight(code, RelayLexer(), HtmlFormatter(noclasses=True, nowrap=True,
                                                       style="default"))
    return f'<pre style="{MONO} margin: 0; background: transparent;">{body.rstrip()}</pre>'


def highlight_ansi(code: str) -> str:
    """Relay ``code`` with ANSI colours (for terminals and tracebacks)."""
    from pygments import highlight
    from pygments.formatters import TerminalFormatter

    return highlight(code, RelayLexer(), TerminalFormatter()).rstrip("\n")


# -- types -------------------------------------------------------------------------------

def type_text(ty: Any) -> str:
    """One-line Relay text of a type (``_`` for a missing one)."""
    from relay_ref.repl import type_text as type_to_text

    return type_to_text(ty)


def pretty_type(ty: Any, width: int = 88, indent: str = "") -> str:
    """Relay text of ``ty``, broken over lines when wider than ``width``.

    Function types put one argument per line, tuple types one field per line; the result
    parses back to the same type (line breaks are whitespace)."""
    from relay_ref.repl import FuncType, TupleType

    flat = type_text(ty)
    if len(indent) + len(flat) <= width:
        return flat
    inner = indent + "  "
    if isinstance(ty, FuncType):
        tps = ""
        if ty.type_params:
            tps = "[" + ", ".join(tp.name for tp in ty.type_params) + "]"
        args = ",\n".join(inner + pretty_type(a, width, inner) for a in ty.arg_types)
        ret = pretty_type(ty.ret_type, width, indent)
        return f"fn {tps}(\n{args}\n{indent}) -> {ret}"
    if isinstance(ty, TupleType) and len(ty.fields) > 1:
        fields = ",\n".join(inner + pretty_type(f, width, inner) for f in ty.fields)
        return f"(\n{fields}\n{indent})"
    return flat


def type_bundle(ty: Any, label: str | None = None) -> dict[str, str]:
    """A type as a MIME bundle; ``label`` (e.g. ``%x`` or ``@f``) is prefixed as ``label :``."""
    text = pretty_type(ty)
    if label:
        text = f"{label} : {text}"
    return {"text/plain": text, "text/html": highlight_html(text)}


# -- tensors -----------------------------------------------------------------------------

def tensor_type_text(arr: np.ndarray) -> str:
    """``Tensor[(2, 3), float32]`` (or ``float32`` for a 0-d tensor)."""
    from relay_ref.repl import TensorType

    return type_text(TensorType(tuple(int(d) for d in arr.shape), str(arr.dtype)))


def _scalar_text(x: Any, dtype: np.dtype) -> str:
    if dtype == np.bool_:
        return "True" if bool(x) else "False"
    if np.issubdtype(dtype, np.floating):
        return np.format_float_positional(x, precision=6, trim="-") if np.isfinite(x) \
            else str(x)
    return str(x)


def tensor_text(arr: np.ndarray) -> str:
    """Plain-text form: a scalar as a Relay literal; otherwise the type on the first line and
    NumPy's layout of the values below (summarised past ``SUMMARY_THRESHOLD`` elements)."""
    if arr.ndim == 0:
        return scalar_literal(arr)
    body = np.array2string(arr, threshold=SUMMARY_THRESHOLD, edgeitems=EDGE_ITEMS,
                           separator=", ", max_line_width=88)
    return f"{tensor_type_text(arr)}\n{body}"


def scalar_literal(arr: np.ndarray) -> str:
    """A 0-d tensor as Relay prints the literal (``3``, ``2i64``, ``1.5f``, ``True``)."""
    try:
        from relay_ref.repl import value_text as value_to_text

        return value_to_text(arr)
    except Exception:  # interpreter not available: our own rendering of the literal
        pass
    dtype = arr.dtype
    x = arr.item()
    if dtype == np.bool_:
        return "True" if x else "False"
    suffix = {"float32": "f", "float16": "f16", "float64": "f64", "int32": "",
              "int64": "i64", "int16": "i16", "int8": "i8"}.get(str(dtype), "")
    return _scalar_text(x, dtype) + suffix


def _stats(arr: np.ndarray) -> str:
    if arr.size == 0 or arr.dtype == np.bool_:
        if arr.dtype == np.bool_ and arr.size:
            return f"{int(arr.sum())} True"
        return ""
    if not (np.issubdtype(arr.dtype, np.number)):
        return ""
    with np.errstate(all="ignore"):
        lo, hi = arr.min(), arr.max()
        mean = arr.astype(np.float64).mean()
    return (f"min {_scalar_text(lo, arr.dtype)} · max {_scalar_text(hi, arr.dtype)} · "
            f"mean {np.format_float_positional(mean, precision=4, trim='-')}")


def _index_window(n: int) -> list[int | None]:
    """Indices shown along an axis of length ``n``; ``None`` marks the elided middle."""
    if n <= TABLE_MAX:
        return list(range(n))
    half = TABLE_MAX // 2
    return [*range(half), None, *range(n - half, n)]


def _td(content: str, head: bool = False, dim: bool = False) -> str:
    tag = "th" if head else "td"
    colour = " color: #888;" if dim or head else ""
    return (f'<{tag} style="{MONO} text-align: right; padding: 1px 8px;{colour}">'
            f"{content}</{tag}>")


def tensor_html(arr: np.ndarray) -> str:
    """HTML: a caption (type, size, min/max/mean) and the values -- a table for 1-d and 2-d
    tensors (summarised to ``TABLE_MAX`` rows/columns), NumPy's layout in ``<pre>`` else."""
    caption = html.escape(tensor_type_text(arr))
    facts = [f"{arr.size} element{'s' if arr.size != 1 else ''}"]
    stats = _stats(arr)
    if stats:
        facts.append(stats)
    head = (f'<div style="{MONO} margin-bottom: 4px;"><b>{caption}</b>'
            f' <span style="color: #888;">{html.escape(" · ".join(facts))}</span></div>')
    fmt = {"all": lambda x: _scalar_text(x, arr.dtype)}
    if arr.ndim == 0:
        body = f'<pre style="{MONO} margin: 0;">{html.escape(scalar_literal(arr))}</pre>'
    elif arr.ndim in (1, 2) and arr.size > 0:
        mat = arr.reshape(1, -1) if arr.ndim == 1 else arr
        rows = _index_window(mat.shape[0])
        cols = _index_window(mat.shape[1])
        lines = ["<tr>" + _td("", head=True)
                 + "".join(_td("⋯" if c is None else str(c), head=True) for c in cols)
                 + "</tr>"]
        for r in rows:
            cells = [_td("⋮" if r is None else str(r), head=True)]
            for c in cols:
                if r is None or c is None:
                    cells.append(_td("⋮" if r is None and c is not None else "⋯"
                                     if c is None and r is not None else "⋱", dim=True))
                else:
                    cells.append(_td(html.escape(_scalar_text(mat[r, c], arr.dtype))))
            lines.append("<tr>" + "".join(cells) + "</tr>")
        body = ('<table style="border-collapse: collapse; margin: 0;">'
                + "".join(lines) + "</table>")
    else:
        text = np.array2string(arr, threshold=SUMMARY_THRESHOLD, edgeitems=EDGE_ITEMS,
                               separator=", ", formatter=fmt, max_line_width=100)
        body = f'<pre style="{MONO} margin: 0;">{html.escape(text)}</pre>'
    return f'<div class="relay-tensor">{head}{body}</div>'


# -- values ------------------------------------------------------------------------------

def value_text(value: Any) -> str:
    """Relay text of any value (tensor, tuple, ADT value, closure, reference), as the
    interpreter's ``value_to_text`` writes it (``[[1f, 2f], [3f, 4f]]``, ``Cons(1, Nil)``)."""
    try:
        from relay_ref.repl import value_text as value_to_text

        return value_to_text(value)
    except ImportError:  # no interpreter: NumPy's layout, or the repr
        if isinstance(value, np.ndarray):
            return tensor_text(value) if value.ndim else scalar_literal(value)
        return repr(value)


def _tensors_in(value: Any) -> bool:
    return isinstance(value, np.ndarray) or (
        isinstance(value, tuple) and any(_tensors_in(v) for v in value))


def value_bundle(value: Any, ty: Any = None) -> dict[str, str]:
    """A value as a MIME bundle. ``ty`` (the inferred type, optional) is shown in the HTML.

    Tensors get a table; a tuple of tensors one table per field; everything else (ADT
    values, closures, references) its Relay text, highlighted."""
    plain = value_text(value)
    if len(plain) > TEXT_MAX and not isinstance(value, np.ndarray):
        plain = (plain[:TEXT_MAX] + f" … ({len(plain) - TEXT_MAX} more characters; "
                 "bind the value with `let` and take it apart to see the rest)")
    type_line = ""
    if ty is not None:
        type_line = (f'<div style="{MONO} color: #888;">: '
                     f"{html.escape(type_text(ty))}</div>")
    if isinstance(value, np.ndarray) and value.ndim > 0:
        if value.size > SUMMARY_THRESHOLD:  # summarised: say what was summarised
            plain = f"{tensor_type_text(value)}\n{plain}"
        return {"text/plain": plain, "text/html": tensor_html(value)}
    if isinstance(value, tuple) and value and _tensors_in(value) \
            and all(isinstance(v, np.ndarray) for v in value):
        parts = [f'<div style="{MONO} color: #888;">tuple of {len(value)}</div>']
        for i, v in enumerate(value):
            parts.append(f'<div style="margin: 4px 0 4px 12px;"><span style="{MONO} '
                         f'color: #888;">.{i}</span> {tensor_html(v)}</div>')
        return {"text/plain": plain, "text/html": "".join(parts)}
    return {"text/plain": plain, "text/html": highlight_html(plain) + type_line}


def text_bundle(text: str, relay: bool = False) -> dict[str, str]:
    """Plain text (``relay=True``: highlighted as Relay in the HTML form)."""
    if relay:
        return {"text/plain": text, "text/html": highlight_html(text)}
    return {"text/plain": text}


def trace_bundle(text: str) -> dict[str, str]:
    """An evaluation trace (``RULE  expr`` lines, indented by depth): rule names bold and
    linked to their text in spec/ (``relay_ref.repl.rule_html``, a tooltip), the
    expressions highlighted as Relay."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    from relay_ref.repl import rule_html

    fmt = HtmlFormatter(noclasses=True, nowrap=True, style="default")
    rows = []
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        indent = line[: len(line) - len(stripped)]
        rule, sep, rest = stripped.partition("  ")
        code = highlight(rest, RelayLexer(), fmt).rstrip("\n") if sep else ""
        tag = rule_html(rule)  # the escaped text when it names no rule
        rows.append(f'{indent}<b style="color: #7a3e9d;">{tag}</b>{sep}{code}')
    body = "\n".join(rows)
    return {"text/plain": text,
            "text/html": f'<pre style="{MONO} margin: 0; background: transparent;">{body}</pre>'}


# -- errors ------------------------------------------------------------------------------

def error_content(err: BaseException) -> dict[str, Any]:
    """``ename``/``evalue``/``traceback`` for a Jupyter ``error`` message.

    A ``RelayError`` renders its diagnostics (ANSI colours, ``In[n]:L:C`` locations) with no
    Python frames; a ``KeyboardInterrupt`` is one line; anything else is a bug in relay_ref
    and keeps its Python traceback (below a line saying so)."""
    from relay_ref.repl import RelayError

    if isinstance(err, RelayError):
        lines = _window_long_lines(err.render(colour=True).splitlines())
        hint = rule_hint(err)
        if hint is not None:
            lines.append(f"\x1b[2m{hint}\x1b[0m")
        return {"ename": type(err).__name__, "evalue": err.message, "traceback": lines}
    if isinstance(err, KeyboardInterrupt):
        return {"ename": "KeyboardInterrupt", "evalue": "interrupted",
                "traceback": ["\x1b[1;31mKeyboardInterrupt\x1b[0m: evaluation interrupted; "
                              "the session is unchanged by the interrupted cell's expression"]}
    if isinstance(err, CommandError):
        return {"ename": "CommandError", "evalue": str(err),
                "traceback": [f"\x1b[1;31merror:\x1b[0m {err}"]}
    if isinstance(err, RecursionError):
        return {"ename": "RecursionError", "evalue": str(err),
                "traceback": ["\x1b[1;31merror:\x1b[0m the program recursed too deeply "
                              f"for the interpreter ({err})"]}
    tb = pytraceback.format_exception(type(err), err, err.__traceback__)
    head = ("\x1b[1;35minternal error\x1b[0m: this is a bug in relay_ref, not in your "
            "program; please report it with the cell that caused it")
    return {"ename": type(err).__name__, "evalue": str(err),
            "traceback": [head, *"".join(tb).splitlines()]}


def rule_hint(err: BaseException) -> str | None:
    """For a ``RelayError`` whose messages cite rules (``[T-App]``): the line that ends its
    traceback, naming the ``:rule`` command that prints them (Jupyter renders a traceback
    as text only, so it cannot link them; the error text already carries each tag). None
    when nothing is cited, or when spec/ is missing (``known_rules`` is empty then: the
    error shows alone rather than fail)."""
    from relay_ref.repl import RULE_NAME_RE, RelayError, known_rules

    if not isinstance(err, RelayError):
        return None
    cited = dict.fromkeys(m.group(0) for m in RULE_NAME_RE.finditer(err.render(colour=False)))
    known = known_rules()
    names = [n for n in cited if n in known]
    if not names:
        return None
    if len(names) == 1:
        return f"(:rule {names[0]} prints the rule this error cites)"
    return f"(:rule NAME prints a rule this error cites: {', '.join(names)})"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SOURCE_LINE = re.compile(r"^( +\d+ \| )(.*)$")
_CARET_LINE = re.compile(r"^( +\| )(.*)$")


def _window_long_lines(lines: list[str]) -> list[str]:
    """Diagnostic lines with each over-long quoted source line (and its caret line) cut to a
    window of ``SOURCE_LINE_MAX`` characters around the carets, ``…`` marking the cuts."""
    out = list(lines)
    for i in range(len(out) - 1):
        src, car = _SOURCE_LINE.match(out[i]), _CARET_LINE.match(_ANSI.sub("", out[i + 1]))
        if not src or not car or len(src.group(2)) <= SOURCE_LINE_MAX:
            continue
        text, carets = src.group(2), car.group(2)
        first = len(carets) - len(carets.lstrip(" "))
        width = len(carets.strip())
        lo = max(0, min(first - 40, len(text) - SOURCE_LINE_MAX))
        hi = min(len(text), lo + SOURCE_LINE_MAX)
        left = "…" if lo > 0 else ""
        right = "…" if hi < len(text) else ""
        shown = min(width, hi - first)
        out[i] = src.group(1) + left + text[lo:hi] + right
        out[i + 1] = (car.group(1) + " " * (len(left) + first - lo)
                      + "\x1b[1;32m" + "^" * max(shown, 1) + "\x1b[0m")
    return out


class CommandError(Exception):
    """A mistake in a ``:``-command (unknown command, missing argument, unreadable file)."""
