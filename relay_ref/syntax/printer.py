"""The Relay text printer: IR -> canonical v0.0.5 text in TVM's style (spec/syntax.md, P-*).

Invariants (checked by tests/syntax):
* ``parse(astext(m))`` is alpha-equal to ``m`` and ``astext`` is a fixed point after one
  round (Pr-RoundTrip).
* A non-atomic node object referenced more than once is printed once, as a graph binding
  ``%N = e;`` placed in the body where it is first reached (or, for a node evaluated at an
  anchor, spec/semantics.md 2.3, just before the anchor's line: in its scope's body, not
  inside the first ``fn`` or branch that uses it), and referred to as ``%N`` after;
  so is an operator call that is an argument of another operator call, as TVM prints
  dataflow graphs (Pr-Graph). Everything else is printed inline. Let chains print flat
  (Pr-Let); every match arm is braced and followed by a comma (Pr-Match); operator calls
  print as calls
  (``add(%x, %y)``), with their non-default attributes after the arguments in schema order
  (Pr-Attrs); scalar constants print as literals (``1``, ``1i64``, ``1f``, ``1f16``,
  ``1f64``, ``True``) and other constants as ``meta[relay.Constant][i]`` with a trailing
  ``#[metadata]`` section in TVM's JSON format (Pr-Meta).
* A function's parameter list prints on its line when that line fits in ``LINE_WIDTH``
  (100) columns, else one parameter per line, one level deeper (Pr-Width); the choice is
  made when the text is flattened, where the column is known, so it depends only on the
  line's own text and ``astext(parse(astext(m)))`` makes the same one.
* Local names are made unique per definition (``%x``, ``%x1``, ...), so printed scopes never
  capture.
* Comments recorded by the parser (``module.comments``) print next to the construct they
  were attached to (Pr-Comments, ``relay_ref/syntax/comments.py``): leading ones on the lines
  before it, trailing ones at the end of its last line, ``semi`` ones before a statement's
  ``;``, end ones before a closing ``}``. Each key's comments print once, at the first place
  that asks; a definition's comments that found no place print before it, so no comment of
  a printed definition is lost. Look-ups are dict look-ups by node identity.
* Output is produced into nested fragment lists by generator handlers run by a trampoline,
  and flattened once at the end: linear time, constant Python stack depth.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.ir import expr as E
from relay_ref.ir import types as T
from relay_ref.ir.expr import children
from relay_ref.ir.module import IRModule, TypeData
from relay_ref.ir.sharing import sharing_plan
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.visitor import free_vars
from relay_ref.syntax.comments import Attached, CommentTable
from relay_ref.syntax.metadata import dump_metadata
from relay_ref.trampoline import no_gc, run

__all__ = ["astext", "scalar_text", "attr_value_text"]

_MAX_INDENT = 64  # deeper bodies stop indenting further (keeps output linear in size)
LINE_WIDTH = 100  # the project's columns: a longer signature breaks (Pr-Width)
_LOCAL_OK = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:/[A-Za-z0-9_]+)*")


def astext(node: IRModule | E.Expr | T.Type, *, show_types: bool = False,
           omit: IRModule | None = None) -> str:
    """Canonical text of a module (starting with ``#[version = "0.0.5"]``), an expression
    or a type. ``show_types`` adds ``/* ty=... */`` after calls and constants whose types
    ``module.checked_types`` records. ``omit`` (a fallback module, the prelude for
    ``rr.astext(..., omit_prelude=True)``) leaves out the definitions that are ``omit``'s own
    objects, i.e. those the module picked up from it (re-parsing with that fallback restores
    them); a definition of the same name that the module made itself is printed."""
    try:
        return _astext(node, show_types, omit)
    except RecursionError:
        # Types print recursively (type_to_text); a type nested thousands deep gets a big
        # stack (DESIGN.md 4, Depth). Expressions themselves print iteratively.
        return run_deep(lambda: _astext(node, show_types, omit))


def _astext(node: IRModule | E.Expr | T.Type, show_types: bool, omit: IRModule | None
            ) -> str:
    if isinstance(node, T.Type):
        return type_to_text(node)
    printer = _Printer(show_types)
    with no_gc():
        if isinstance(node, IRModule):
            return printer.module(node, omit)
        if isinstance(node, E.Expr):
            return printer.top_expr(node)
    raise TypeError(f"astext expects an IRModule, an Expr or a Type, not {type(node).__name__}")


def graph_names(node: IRModule | E.Expr) -> dict[int, str]:
    """The ``%N`` names Pr-Graph gives the shared nodes of ``node`` (each global of a module
    numbered from ``%0``, as ``astext`` prints it), keyed by ``id(node)``: a node used more
    than once. (An operator call bound to ``%N`` only because it is an operator's argument
    is not shared and not included.) Linear in the size of ``node``; empty if it cannot be
    printed. Summaries (``short_text``) name shared nodes by these names."""
    printer = _Printer(show_types=False)
    out: dict[int, str] = {}

    def keep() -> None:
        out.update((k, v) for k, v in printer.graph.items() if printer.refs.get(k, 0) > 1)

    try:
        with no_gc():
            if isinstance(node, IRModule):
                for name, fn in node.functions.items():
                    printer._reset()
                    printer._count(fn)
                    run(printer.def_(name, fn))
                    keep()
            else:
                printer.top_expr(node)
                keep()
    except Exception:  # noqa: BLE001 - names are optional: summaries fall back to text
        return out
    return out


# ---- literals ------------------------------------------------------------------------------

_INT_SUFFIX = {"int32": "", "int64": "i64", "int16": "i16", "int8": "i8", "uint8": "u8",
               "uint16": "u16", "uint32": "u32", "uint64": "u64"}
_FLOAT_SUFFIX = {"float32": "f", "float16": "f16", "float64": "f64"}


def _float_digits(value: float, dtype: str) -> str:
    """Shortest decimal that reads back to the same ``dtype`` value (no suffix)."""
    if dtype == "float64":
        text = repr(float(value))
    else:
        text = str(np.array(value, dtype=dtype)[()])
    if text.endswith(".0"):
        text = text[:-2]
    return text


def scalar_text(data: np.ndarray) -> str | None:
    """Literal text of a 0-d array (TVM's forms, Pr-Literal), or None if it has no literal
    form."""
    if data.ndim != 0:
        return None
    dtype = str(data.dtype)
    value = data.item()
    if dtype == "bool":
        return "True" if value else "False"
    if dtype in _INT_SUFFIX:
        return f"{value}{_INT_SUFFIX[dtype]}"
    if dtype in _FLOAT_SUFFIX:
        suffix = _FLOAT_SUFFIX[dtype]
        if math.isnan(value):
            return "nan" + suffix
        if math.isinf(value):
            return ("-inf" if value < 0 else "inf") + suffix
        return _float_digits(value, dtype) + suffix
    return None


def attr_value_text(value: object) -> str:
    """Text of an attribute value (S-Attrs): the parser reads it back to an equal value."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return ("-inf" if value < 0 else "inf") + "f64" if not math.isnan(value) \
                else "nanf64"
        text = repr(value)
        with np.errstate(over="ignore"):
            fits = bool(np.isfinite(np.float32(value)))
        return text + ("f" if fits else "f64")
    if isinstance(value, str):
        if '"' in value:
            raise ValueError(f"attribute string {value!r} contains '\"', which the text "
                             f"format cannot write")
        return f'"{value}"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(attr_value_text(v) for v in value) + "]"
    return f'"{value}"'


# ---- the printer ---------------------------------------------------------------------------

class _Body:
    """A sequence context: its lines (fragment lists) and indentation level. For comments
    (Pr-Comments): ``pending``, comment lines waiting to print before the next line; ``open``,
    the lines being printed, innermost last, each ``[comments, span, lead printed, inlined]``
    where ``inlined`` holds ``(span, texts)`` of graph bindings printed inside that line."""

    __slots__ = ("level", "indent", "lines", "pending", "open")

    def __init__(self, level: int) -> None:
        self.level = level
        self.indent = "  " * min(level, _MAX_INDENT)
        self.lines: list[Any] = []
        self.pending: list[Any] = []
        self.open: list[list[Any]] = []


# ---- comments (Pr-Comments) -------------------------------------------------------------------

def _lead(dst: list[Any], texts: list[str], indent: str) -> None:
    """Comment lines (``""``: a blank line) appended to ``dst``."""
    for t in texts:
        dst.append(indent + t + "\n" if t else "\n")


def _line_end(line: list[Any], texts: list[str]) -> list[str]:
    """Append comments to the end of a line while they can share it: a ``//`` comment, or
    one spanning lines, must be the last. Returns the ones that cannot; the caller prints
    them as leading the same construct (where a re-parse puts them too)."""
    for i, t in enumerate(texts):
        line.append(" " + t)
        if t.startswith("//") or "\n" in t:
            return texts[i + 1:]
    return []


def _close(line: list[Any], a: Attached, term: str) -> list[str]:
    """End ``line`` with ``a``'s semi comments, ``term`` (``;`` or ``,``), its trailing
    comments and a newline; returns the comments that must lead the line instead. Block
    semi comments stay before ``term`` (TVM's ``%0 = f(%x) /* ty=... */;``); a ``//`` one
    cannot, so it moves after ``term``."""
    ends = a.trail
    if a.semi:
        block = [t for t in a.semi if not t.startswith("//")]
        if block:
            line.append(" " + " ".join(block))
        ends = [t for t in a.semi if t.startswith("//")] + a.trail
    line.append(term)
    rest = _line_end(line, ends)
    line.append("\n")
    return rest


def _is_atomic(e: E.Expr) -> bool:
    if isinstance(e, E.Var | E.GlobalVar | E.Op | E.Constructor | E.Constant):
        return True
    return isinstance(e, E.Call) and isinstance(e.op, E.Constructor) and not e.args \
        and not e.type_args


class _Printer:
    def __init__(self, show_types: bool) -> None:
        self.show_types = show_types
        self.cm: dict[Any, Attached] = {}
        self.by_def: dict[Any, list[Any]] = {}
        self.done: set[Any] = set()
        self.checked: dict[E.Expr, T.Type] = {}
        self.meta: list[np.ndarray] = []
        self.meta_index: dict[int, int] = {}
        self.meta_keep: list[E.Constant] = []
        self.meta_objects: dict[str, list[E.MetaObject]] = {}
        self._reset()

    def _reset(self) -> None:
        self.names: dict[E.Var, str] = {}
        self.used: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.graph: dict[int, str] = {}
        self.counter = 0
        self.refs: dict[int, int] = {}
        self.anchors: Mapping[E.Expr, tuple[E.Expr, ...]] = {}
        self.tnames: dict[T.TypeVar, str] = {}
        self.tused: set[str] = set()

    def ty(self, t: T.Type | None) -> str:
        # Pr-SymDim: symbolic dimensions in their canonical text (shape.dim_text)
        return type_to_text(t, self.tnames)

    # -- comments (Pr-Comments) ---------------------------------------------------------------
    def take(self, key: Any) -> Attached | None:
        """``key``'s comments, the first time they are asked for (then never again)."""
        a = self.cm.get(key)
        if a is None or key in self.done:
            return None
        self.done.add(key)
        return a

    def gather(self, keys: list[Any]) -> Attached | None:
        """The comments of several keys as one (a flattened nest of sequences)."""
        found = [a for a in map(self.take, keys) if a is not None]
        if len(found) <= 1:
            return found[0] if found else None
        out = Attached()
        for a in found:
            out.lead += a.lead
            out.trail += a.trail
            out.semi += a.semi
            out.end += a.end
        return out

    def leftovers(self, def_key: Any) -> list[str]:
        """Comments attached inside a definition that no printed construct took."""
        texts: list[str] = []
        for key in self.by_def.get(def_key, ()):
            a = self.take(key)
            if a is not None:
                texts += a.texts()
        return texts

    def put(self, body: _Body, line: list[Any], a: Attached | None, term: str,
            lead_done: bool = False, inlined: list[Any] | None = None) -> None:
        """Append a line (``term``, its terminator, not yet written) to ``body``, with any
        pending comment lines, ``a``'s leading comments (unless ``lead_done``) and the
        comments of graph bindings printed inside the line (``inlined``, in source order)
        before it and its trailing ones after it."""
        lines = body.lines
        if body.pending:
            lines.extend(body.pending)
            body.pending = []
        if inlined:
            inlined.sort(key=lambda item: item[0])
            for _, texts in inlined:
                _lead(lines, texts, body.indent)
        if a is None:
            line.append(term + "\n")
        else:
            rest = _close(line, a, term)
            _lead(lines, rest if lead_done else a.lead + rest, body.indent)
        lines.append(line)

    def begin(self, body: _Body, a: Attached | None, node: E.Expr) -> list[Any] | None:
        """Open the line of statement ``node`` (comments ``a``) before printing it. A graph
        binding printed for a part of it (``enter``) first takes its leading comments, so
        they stay above all the lines the statement prints."""
        if not self.cm:
            return None
        if body.open:
            self.enter(body, node)
        entry = [a, node.span, False, []]
        body.open.append(entry)
        return entry

    def enter(self, body: _Body, node: E.Expr) -> None:
        top = body.open[-1]
        a, span = top[0], top[1]
        if a is None or top[2] or not a.lead:
            return
        inner = node.span
        if span is not None and inner is not None and (inner.line, inner.column) >= (
                span.line, span.column):  # part of the statement's own text
            _lead(body.lines, a.lead, body.indent)
            top[2] = True

    def end(self, body: _Body, line: list[Any], entry: list[Any] | None, term: str) -> None:
        """Close the line ``begin`` opened."""
        if entry is None:
            line.append(term + "\n")
            body.lines.append(line)
            return
        body.open.pop()
        self.put(body, line, entry[0], term, entry[2], entry[3])

    def tparams(self, tvs: tuple[T.TypeVar, ...]) -> str:
        """``[A, B]`` for binders, renaming one that would shadow a name already in use."""
        out = []
        for tv in tvs:
            name = self.tnames.get(tv)
            if name is None:
                name, k = tv.name, 1
                while name in self.tused:
                    name = f"{tv.name}{k}"
                    k += 1
                self.tused.add(name)
                self.tnames[tv] = name
            out.append(name)
        return "[" + ", ".join(out) + "]"

    # -- entry points ----------------------------------------------------------------------
    def module(self, mod: IRModule, omit: IRModule | None) -> str:
        if self.show_types:
            self.checked = mod.checked_types
        if isinstance(mod.comments, CommentTable):
            self.cm = mod.comments.attached
            self.by_def = mod.comments.by_def
        out: list[Any] = []  # Pr-Module: the header, type definitions, then the defs
        header = self.take(("header",)) if self.cm else None
        if header is None:
            out.append('#[version = "0.0.5"]\n')
        else:
            line: list[Any] = ['#[version = "0.0.5"]']
            rest = _line_end(line, header.trail)
            _lead(out, header.lead + rest, "")
            out += line
            out.append("\n")
        for name, td in mod.type_definitions.items():
            if omit is not None and omit.type_definitions.get(name) is td:
                continue
            out.append(self.type_def(td))
        for name, fn in mod.functions.items():
            if omit is not None and omit.functions.get(name) is fn:
                continue
            self._reset()
            self._count(fn)
            out.append(run(self.def_(name, fn)))
        tail = self.take(("module",)) if self.cm else None
        if tail is not None:
            _lead(out, tail.end, "")
        return self._finish(out)

    def top_expr(self, e: E.Expr) -> str:
        self._count(e)
        body = _Body(0)
        for var in free_vars(e):
            body.lines.append(["free_var ", self.binder(var), ";\n"])
        run(self.body_into(e, body))
        return self._finish([body.lines])

    def _finish(self, out: list[Any]) -> str:
        if self.meta or self.meta_objects:
            out.append("#[metadata]\n" + dump_metadata(self.meta, self.meta_objects) + "\n")
        return _flatten(out).rstrip("\n")

    def _count(self, root: E.Expr) -> None:
        """Reference counts of every node reachable from ``root`` (edges, by identity)."""
        refs = self.refs
        stack = [root]
        seen = {id(root)}
        shared = False
        while stack:
            node = stack.pop()
            for kid in children(node):
                k = id(kid)
                refs[k] = refs.get(k, 0) + 1
                if k not in seen:
                    seen.add(k)
                    stack.append(kid)
                elif not shared and not _is_atomic(kid):
                    shared = True
        if shared:  # Pr-Graph: a node evaluated at an anchor is bound there (spec 2.3)
            self.anchors = sharing_plan(root).anchors

    # -- names (Pr-Names) ------------------------------------------------------------------
    def name_of(self, var: E.Var) -> str:
        name = self.names.get(var)
        if name is not None:
            return name
        base = var.name_hint if _LOCAL_OK.fullmatch(var.name_hint or "") else \
            re.sub(r"[^A-Za-z0-9_]", "_", var.name_hint or "") or "x"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "v" + base
        name = base
        k = self.next_suffix.get(base, 1)  # suffixes below k are taken: linear, not n^2
        while name in self.used:
            name = f"{base}{k}"
            k += 1
        self.next_suffix[base] = k
        self.used.add(name)
        self.names[var] = "%" + name
        return "%" + name

    def binder(self, var: E.Var) -> str:
        name = self.name_of(var)
        if var.type_annotation is None:
            return name
        return f"{name}: {self.ty(var.type_annotation)}"

    # -- definitions -----------------------------------------------------------------------
    def type_def(self, td: TypeData) -> str:
        tps = "[" + ", ".join(tv.name for tv in td.type_vars) + "]" if td.type_vars else ""
        a = self.take(("type", td)) if self.cm else None
        lines: list[Any] = []
        if td.is_extern:
            lines.append(f"extern type {td.name}{tps}")
        else:
            lines.append(f"type {td.name}{tps} {{\n")
            for ctor in td.constructors:
                fields = ""
                if ctor.inputs:
                    fields = "(" + ", ".join(type_to_text(t) for t in ctor.inputs) + ")"
                line: list[Any] = [f"  {ctor.name}{fields}"]
                ca = self.take(("ctor", ctor)) if self.cm else None
                if ca is None:
                    line.append(",\n")
                else:
                    rest = _close(line, ca, ",")
                    _lead(lines, ca.lead + rest, "  ")
                lines.append(line)
            if a is not None:
                _lead(lines, a.end, "  ")
            lines.append("}")
        lead: list[str] = []
        if a is not None:
            lead = a.lead + _line_end(lines, a.trail)
        lines.append("\n\n")
        head: list[Any] = []
        if self.cm:
            _lead(head, lead + self.leftovers(("type", td)), "")
        return _flatten([head, lines])

    def def_(self, name: str, fn: E.Function) -> Any:
        head: list[Any] = []
        out: list[Any] = [head, f"def @{name}"]
        body = _Body(1)
        frees = free_vars(fn)
        yield self.fn_rest(fn, out, body, frees)
        if self.cm:
            a = self.take(("def", fn))
            lead = [] if a is None else a.lead + _line_end(out, a.trail)
            _lead(head, lead + self.leftovers(("def", fn)), "")
        out.append("\n\n")
        return out

    def fn_rest(self, fn: E.Function, out: list[Any], outer: _Body,
                frees: list[E.Var] = ()) -> Any:  # type: ignore[assignment]
        """``[A](params, attrs) -> R { body }`` of a function; the body one level deeper."""
        if fn.type_params:
            out.append(self.tparams(fn.type_params))
        elif out and out[-1] in ("fn", "(fn"):
            out.append(" ")
        items = [self.binder(p) for p in fn.params]
        items += [f"{k}={self.attr_text(v)}" for k, v in fn.attrs]
        close = "  " * min(outer.level - 1, _MAX_INDENT)
        ret = "" if fn.ret_type is None else " -> " + self.ty(fn.ret_type)
        inner = _Body(outer.level)
        notes = [self.take(("param", p)) for p in fn.params] if self.cm else []
        end = self.take(("params", fn)) if self.cm else None
        if end is not None or any(notes):
            # Pr-Comments: parameters with comments print one per line.
            notes += [None] * len(fn.attrs)
            plist = _Body(outer.level)
            plist.lines.append("(\n")
            for i, (item, a) in enumerate(zip(items, notes, strict=True)):
                sep = "," if i < len(items) - 1 else ""
                self.put(plist, [plist.indent, item], a, sep)
            if end is not None:
                _lead(plist.lines, end.end, plist.indent)
            plist.lines.append(close + ")")
            out.append(plist.lines)
            out.append(ret + " {")
        elif items:  # Pr-Width: one line if it fits, else one parameter per line
            indent = "  " * min(outer.level, _MAX_INDENT)
            broken = ["(\n", *(indent + item + ("," if i < len(items) - 1 else "") + "\n"
                               for i, item in enumerate(items)), close + ")" + ret + " {"]
            out.append(_Fit("(" + ", ".join(items) + ")" + ret + " {", broken))
        else:
            out.append("()" + ret + " {")
        out.append("\n")
        for var in frees:
            a = self.take(("free", var)) if self.cm else None
            self.put(inner, [inner.indent, "free_var ", self.binder(var)], a, ";")
        yield self.body_into(fn.body, inner, owner=fn)
        out.append(inner.lines)
        out.append(close + "}")

    # -- bodies (Pr-Let) ----------------------------------------------------------------------
    def body_into(self, e: E.Expr, body: _Body, own: bool = False, owner: Any = None) -> Any:
        """Print ``e`` as a sequence into ``body``: flat let chain, then the result.
        ``own``: ``e`` is a let being printed as the right-hand side of its own graph
        binding, so it prints as a chain even though it is shared. ``owner``: the body's key
        for comments (Pr-Comments); the results and ends of ``{ let ...; e }`` blocks that
        the chain flattens print with this body's."""
        ind = body.indent
        owners = [owner]
        while isinstance(e, E.Let) and (own or self.refs.get(id(e), 0) <= 1):
            own = False
            if self.cm and e is not owner and (("result", e) in self.cm
                                               or ("body", e) in self.cm):
                owners.append(e)
            var = e.var
            if self.anchors and e in self.anchors:
                yield self.bind_anchored(e, body)
            line: list[Any] = [ind]
            entry = self.begin(body, self.take(e), e) if self.cm else None
            if var.name_hint == "_" and self.refs.get(id(var), 0) == 0 \
                    and var.type_annotation is None:
                yield self.expr(e.value, line, body, "stmt")  # S-Seq
            else:
                line.append("let " + self.binder(var) + " = ")
                yield self.expr(e.value, line, body, "arg")
            self.end(body, line, entry, ";")
            e = e.body
        line = [ind]
        if not self.cm:
            yield self.expr(e, line, body, "arg")
            line.append("\n")
            body.lines.append(line)
            return
        entry = self.begin(body, self.gather([("result", o) for o in owners]), e)
        yield self.expr(e, line, body, "arg")
        self.end(body, line, entry, "")
        for o in reversed(owners):
            a = self.take(("body", o))
            if a is not None:
                _lead(body.lines, a.end, ind)

    def nested_body(self, e: E.Expr, out: list[Any], body: _Body, owner: Any = None) -> Any:
        """``{`` newline, ``e`` as a body one level deeper, closing ``}``."""
        inner = _Body(body.level + 1)
        out.append("{\n")
        yield self.body_into(e, inner, owner=owner)
        out.append(inner.lines)
        out.append(body.indent + "}")

    # -- expressions -------------------------------------------------------------------------
    def expr(self, e: E.Expr, out: list[Any], body: _Body, pos: str) -> Any:
        """Append ``e``'s text to ``out``. ``pos``: "arg" (any expression), "oparg" (an
        argument of an operator call: a nested operator call there is bound to ``%N`` first,
        Pr-Graph, as TVM prints dataflow), "stmt" (an expression statement: as "arg"),
        "postfix" (callee or projection base)."""
        if self.anchors and e in self.anchors:
            yield self.bind_anchored(e, body)
        if (self.refs.get(id(e), 0) > 1 and not _is_atomic(e)) or (
                pos == "oparg" and isinstance(e, E.Call) and isinstance(e.op, E.Op)):
            name = self.graph.get(id(e))
            if name is None:  # Pr-Graph: bind at first use, in the current body
                name = yield self.graph_binding(e, body)
            out.append(name)
            return None
        if self.cm and not isinstance(e, E.Let):
            a = self.take(e)  # a graph binding printed inline: comments before the line
            if a is not None and body.open:  # ... of the statement printing it
                span = e.span
                body.open[-1][3].append(((span.line, span.column) if span else (0, 0),
                                         a.texts()))
            elif a is not None:
                _lead(body.pending, a.texts(), body.indent)
        return (yield self.inner(e, out, body, pos))

    def graph_binding(self, e: E.Expr, body: _Body) -> Any:
        """Print ``%N = e;`` into ``body`` (before the line being built) and return
        ``%N`` (Pr-Graph)."""
        frags: list[Any] = []
        # a `%N = e;` statement's comments
        entry = self.begin(body, self.take(e), e) if self.cm else None
        yield self.inner(e, frags, body, "arg")
        name = f"%{self.counter}"
        self.counter += 1
        self.end(body, [body.indent, name, " = ", frags], entry, ";")
        self.graph[id(e)] = name
        return name

    def bind_anchored(self, e: E.Expr, body: _Body) -> Any:
        """The shared nodes evaluated just before ``e`` enters a sub-scope (its anchors,
        ``relay_ref.ir.sharing``) not printed yet: bound in ``body`` before ``e``'s line,
        so a binding whose scope is outside a ``fn`` (or branch) prints outside it."""
        for n in self.anchors[e]:
            if id(n) not in self.graph:
                yield self.graph_binding(n, body)

    def inner(self, e: E.Expr, out: list[Any], body: _Body, pos: str) -> Any:
        match e:
            case E.Var():
                out.append(self.name_of(e))
            case E.GlobalVar(name):
                out.append("@" + name)
            case E.Op(name):
                out.append(name)
            case E.Constructor(name):
                out.append(name)
            case E.Constant(data):
                text = scalar_text(data)
                if text is None:
                    text = self.meta_ref(e)
                elif pos == "postfix":
                    text = f"({text})"
                out.append(text)
                self.type_comment(e, out)
            case E.Tuple(fields):
                out.append("(")
                for i, f in enumerate(fields):
                    if i:
                        out.append(", ")
                    yield self.expr(f, out, body, "arg")
                out.append(",)" if len(fields) == 1 else ")")
            case E.TupleGetItem(tup, index):
                paren = isinstance(tup, E.TupleGetItem) and self.refs.get(id(tup), 0) <= 1
                out.append("(" if paren else "")
                yield self.expr(tup, out, body, "postfix")
                out.append(f").{index}" if paren else f".{index}")
            case E.Let():
                out.append("(\n")
                inner = _Body(body.level + 1)
                yield self.body_into(e, inner, own=True, owner=e)
                out.append(inner.lines)
                out.append(body.indent + ")")
            case E.Call(E.Op(name), args, attrs, ()) if relax_call_form(name, args, attrs):
                yield self.relax_call(e, name, out, body)
            case E.Call(op, args, attrs, type_args):  # Pr-Call
                if isinstance(op, E.Constructor) and not args and not type_args:
                    out.append(op.name)
                    return None
                yield self.expr(op, out, body, "postfix")
                if type_args:
                    out.append("[" + ", ".join(self.ty(t) for t in type_args) + "]")
                out.append("(")
                arg_pos = "oparg" if isinstance(op, E.Op) else "arg"
                for i, a in enumerate(args):
                    if i:
                        out.append(", ")
                    yield self.expr(a, out, body, arg_pos)
                for i, (key, value) in enumerate(_call_attr_items(op, attrs)):
                    out.append(", " if args or i else "")
                    out.append(f"{key}={self.attr_text(value)}")
                out.append(")")
                self.type_comment(e, out)
            case E.Function():
                paren = pos == "postfix"
                frags: list[Any] = ["(fn" if paren else "fn"]
                yield self.fn_rest(e, frags, _Body(body.level + 1))
                out.append(frags)
                if paren:
                    out.append(")")
            case E.If(cond, then, else_):
                out.append("if (")
                yield self.expr(cond, out, body, "arg")
                out.append(") ")
                yield self.nested_body(then, out, body, (e, 0))
                out.append(" else ")
                yield self.nested_body(else_, out, body, (e, 1))
            case E.Match(data, clauses, complete):
                paren = pos == "postfix"
                out.append("(" if paren else "")
                out.append("match (" if complete else "match? (")
                if isinstance(data, E.Tuple) and self.refs.get(id(data), 0) <= 1 \
                        and len(data.fields) != 1:
                    fields = data.fields
                    for i, f in enumerate(fields):
                        if i:
                            out.append(", ")
                        yield self.expr(f, out, body, "arg")
                else:
                    yield self.expr(data, out, body, "arg")
                out.append(") {\n")
                arm = _Body(body.level + 1)
                for clause in clauses:
                    a = self.take(("clause", clause)) if self.cm else None
                    line: list[Any] = [arm.indent, self.pattern(clause.lhs), " => "]
                    yield self.nested_body(clause.rhs, line, arm, clause)
                    if a is None:
                        line.append(",\n")
                    else:
                        rest = _close(line, a, ",")
                        _lead(out, a.lead + rest, arm.indent)
                    out.append(line)
                end = self.take(("match", e)) if self.cm else None
                if end is not None:
                    _lead(out, end.end, arm.indent)
                out.append(body.indent + "}")
                out.append(")" if paren else "")
            case E.RefCreate(value):
                out.append("ref(")
                yield self.expr(value, out, body, "arg")
                out.append(")")
            case E.RefRead(ref):
                out.append("ref_read(")
                yield self.expr(ref, out, body, "arg")
                out.append(")")
            case E.RefWrite(ref, value):
                out.append("ref_write(")
                yield self.expr(ref, out, body, "arg")
                out.append(", ")
                yield self.expr(value, out, body, "arg")
                out.append(")")
            case _:
                raise TypeError(f"cannot print {type(e).__name__}")
        return None

    def relax_call(self, e: E.Call, name: str, out: list[Any], body: _Body) -> Any:
        """Pr-Relax: ``match_cast(e, T)``, ``call_dps_packed("f", (args), T)`` /
        ``call_tir(...)`` and ``dataflow { ... }`` in their own syntax (S-MatchCast, S-DPS,
        S-Dataflow), which the parser reads back to the same calls."""
        arg = e.args[0]
        if name == "dataflow":
            out.append("dataflow ")
            yield self.nested_body(arg, out, body, e)
        elif name == "match_cast":
            out.append("match_cast(")
            yield self.expr(arg, out, body, "oparg")
            out.append(", " + self.ty(e.attrs.type) + ")")
        else:
            out.append(f"{name}({_string_text(e.attrs.func_name)}, ")
            yield self.expr(arg, out, body, "oparg")
            out.append(", " + self.ty(e.attrs.out_type) + ")")
        self.type_comment(e, out)

    def type_comment(self, e: E.Expr, out: list[Any]) -> None:
        if self.show_types:  # Pr-Types
            ty = self.checked.get(e)
            if ty is not None:
                out.append(f" /* ty={self.ty(ty)} */")

    def attr_text(self, value: object) -> str:
        """An attribute value's text; an opaque metadata object (a function's
        ``virtual_device``) is written ``meta[key][i]`` and goes to the metadata section."""
        if isinstance(value, E.MetaObject):
            table = self.meta_objects.setdefault(value.type_key, [])
            if value not in table:
                table.append(value)
            return f"meta[{value.type_key}][{table.index(value)}]"
        if isinstance(value, tuple | list) and any(isinstance(v, E.MetaObject) for v in value):
            return "[" + ", ".join(self.attr_text(v) for v in value) + "]"
        return attr_value_text(value)

    def meta_ref(self, c: E.Constant) -> str:
        index = self.meta_index.get(id(c))
        if index is None:
            index = len(self.meta)
            self.meta.append(c.data)
            self.meta_keep.append(c)
            self.meta_index[id(c)] = index
        return f"meta[relay.Constant][{index}]"

    # -- patterns (Pr-Match) ------------------------------------------------------------------
    def pattern(self, p: E.Pattern) -> str:
        parts: list[str] = []
        stack: list[Any] = [p]
        while stack:
            q = stack.pop()
            match q:
                case str():
                    parts.append(q)
                case E.PatternWildcard():
                    parts.append("_")
                case E.PatternVar(var):
                    parts.append(self.binder(var))
                case E.PatternConstructor(ctor, pats):
                    parts.append(ctor.name)
                    if pats:
                        stack.append(")")
                        stack.extend(_interleave(pats))
                        stack.append("(")
                case E.PatternTuple(pats):
                    stack.append(",)" if len(pats) == 1 else ")")
                    stack.extend(_interleave(pats))
                    stack.append("(")
        return "".join(parts)


def relax_call_form(name: str, args: tuple[E.Expr, ...], attrs: object) -> bool:
    """Whether a call of one of the Relax ops prints in its own syntax (Pr-Relax): one
    argument and attributes of the op's own class (a hand-built call with anything else
    prints as a generic call, which the parser then refuses with a located error)."""
    if name not in ("match_cast", "call_dps_packed", "call_tir", "dataflow") or len(args) != 1:
        return False
    from relay_ref.ops.symbolic import DPSAttrs, MatchCastAttrs

    if name == "dataflow":
        from relay_ref.ops.registry import NoAttrs

        return isinstance(attrs, NoAttrs)
    if name == "match_cast":
        return isinstance(attrs, MatchCastAttrs) and isinstance(attrs.type, T.Type)
    return isinstance(attrs, DPSAttrs) and isinstance(attrs.out_type, T.Type) \
        and '"' not in attrs.func_name and bool(attrs.func_name)


def _string_text(s: str) -> str:
    return '"' + s + '"'


def _call_attr_items(op: E.Expr, attrs: object) -> list[tuple[str, object]]:
    """A call's attributes in printing order (Pr-Attrs): an operator's non-default ones in
    schema order; a non-operator's in source order, then ``attrs_type_key`` (as TVM)."""
    if isinstance(attrs, E.CallAttrs):
        return [*attrs.items, ("attrs_type_key", attrs.type_key)]
    if isinstance(op, E.Op) and attrs is not None:
        from relay_ref.ops.registry import attrs_items

        return attrs_items(attrs)
    return []


def _interleave(pats: tuple[E.Pattern, ...]) -> list[Any]:
    """Items to push on the pattern stack (reversed), with ", " separators."""
    items: list[Any] = []
    for i, p in enumerate(pats):
        if i:
            items.append(", ")
        items.append(p)
    items.reverse()
    return items


class _Fit:
    """Text whose form depends on its column (Pr-Width): ``flat``, one line ending a line
    of the output, when the line fits in ``LINE_WIDTH`` columns, else the fragments
    ``broken`` (several lines). ``_flatten`` chooses, knowing the column."""

    __slots__ = ("broken", "flat")

    def __init__(self, flat: str, broken: list[Any]) -> None:
        self.flat, self.broken = flat, broken


def _flatten(frags: list[Any]) -> str:
    out: list[str] = []
    column = 0  # of the end of the text so far (for _Fit)
    stack: list[Any] = [iter(frags)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, str):
                out.append(item)
                newline = item.rfind("\n")
                column = column + len(item) if newline < 0 else len(item) - newline - 1
            elif isinstance(item, _Fit):
                fits = column + len(item.flat) <= LINE_WIDTH
                stack.append(iter([item.flat] if fits else item.broken))
                break
            else:
                stack.append(iter(item))
                break
        else:
            stack.pop()
    return "".join(out)
