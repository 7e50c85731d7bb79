"""Kernel commands: a cell whose first line starts with ``:`` is a command.

``%`` starts Relay locals, so commands use ``:`` (as evcxr does); no Relay cell can start
with ``:``. The first word after ``:`` names the command; everything after it (the rest of
the line and any following lines) is its argument. ``?name`` is ``:doc name`` shown in the
front end's pager (as IPython's ``name?``).

The table of commands (names, usage, help: ``command_table.py``) sits below the editor,
which completes and describes commands from it; this module holds each command's handler
(``HANDLERS``, by ``@handles(name)``) and sits above the editor and the session.

Invariant: a command reports through ``Output`` only, raises ``CommandError`` for misuse and
``RelayError`` for mistakes in the Relay text it was given; it changes the session only where
its help says so (``:reset``, ``:prelude``, ``:load``, ``:time``).
"""

from __future__ import annotations

import dataclasses
import html
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from relay_kernel.command_table import (
    ALIASES,
    COMMANDS,
    PAGE,
    TIME_BUDGET,
)
from relay_kernel.command_table import split_command as split_command  # re-exported
from relay_kernel.display import (
    CommandError,
    pretty_type,
    text_bundle,
    trace_bundle,
    type_bundle,
    value_bundle,
)
from relay_kernel.session import CellOutcome, Session


class Output(Protocol):
    """Where command (and cell) output goes; the kernel implements it with IOPub messages."""

    def stream(self, text: str, name: str = "stdout") -> None: ...

    def display(self, bundle: dict[str, str]) -> None: ...

    def result(self, bundle: dict[str, str]) -> None: ...

    def page(self, text: str) -> None: ...


@dataclass(frozen=True)
class Context:
    """What a command runs against: the session, the cell's source name, the output."""

    session: Session
    source_name: str
    out: Output


HANDLERS: dict[str, Callable[[Context, str], None]] = {}


def handles(name: str):
    """Register the decorated function as the handler of ``:name`` (a ``COMMANDS`` entry of
    ``command_table``, or ``page``)."""

    def register(fn: Callable[[Context, str], None]) -> Callable[[Context, str], None]:
        HANDLERS[name] = fn
        return fn

    return register


def run_command(ctx: Context, name: str, arg: str) -> None:
    """Run ``:name arg``; unknown names and missing arguments raise ``CommandError``."""
    cmd = PAGE if name == "page" else COMMANDS.get(name)
    if not name:
        raise CommandError("a command name must follow ':' (:help lists the commands)")
    if cmd is None:
        known = " ".join(":" + c for c in COMMANDS)
        raise CommandError(f"unknown command :{name}{_near_command(name)} (commands: {known}; "
                           ":help explains them)")
    if cmd.needs_arg and not arg:
        if cmd is PAGE:
            raise CommandError("usage: ?NAME (or :doc NAME)")
        raise CommandError(f"usage: :{cmd.name} {cmd.usage}")
    HANDLERS[cmd.name](ctx, arg)


def _near_command(name: str) -> str:
    """``; did you mean :derive?`` for a misspelt command name (or alias), else ``""``."""
    from relay_ref.repl import did_you_mean

    return did_you_mean(name, [*COMMANDS, *ALIASES], sigil=":")


def _near_option(option: str, options: list[str]) -> str:
    """``; did you mean --values?`` for a misspelt option of a command, else ``""``."""
    from relay_ref.repl import did_you_mean

    return did_you_mean(option, options)


# -- help --------------------------------------------------------------------------------

RULES = """\
Cells hold Relay text (the TVM v0.0.5 text format; the #[version] header is optional):

  1. definitions -- `def @f(...) { ... }`, `type T[A] { C(A), ... }` -- accumulate in the
     session; defining a name again replaces it (a note says so);
  2. top-level bindings -- `let %x = e;` with nothing after the `;` -- evaluate `e` and keep
     %x (its value and type) for later cells' bindings and expressions (not for defs:
     pass a value to a def as a parameter);
  3. a trailing expression is type-checked and evaluated; its value is the cell's Out[n].
Any of the three may be missing; those present come in this order. The prelude (List,
Option, Tree, nat, @map, @foldl, @nth, ...) is available unless `:prelude off`; a
definition of your own wins over the prelude's.
A cell that fails to parse or type-check changes nothing; one that fails at run time (or is
interrupted) keeps its definitions and the bindings made before the failure.
`gradient(@f)` calls are expanded as `relay run` expands a file's; what the AD pass refuses
changes nothing, as a type error does. A bound gradient (`let %g = gradient(@f);`) works in
later cells, differentiating @f as it was defined when %g was bound.
Errors point into the cell as In[n]:line:column. Tab completes names; Shift-Tab (or ?name)
shows the type and documentation of the op, global, constructor or binding under the cursor.
"""


def help_text() -> str:
    """The whole ``:help`` text: the session rules, then one line per command."""
    width = max(len(f":{c.name} {c.usage}") for c in COMMANDS.values())
    lines = [RULES, "Commands (a cell starting with `:`; the rest of the cell is the argument):"]
    for c in COMMANDS.values():
        lines.append(f"  {f':{c.name} {c.usage}'.ljust(width)}  {c.help.splitlines()[0]}")
    lines.append(f"  {'?NAME'.ljust(width)}  Same as :doc NAME, shown in the pager.")
    return "\n".join(lines)


@handles("help")
def _help(ctx: Context, arg: str) -> None:
    if arg:
        name = ALIASES.get(arg.lstrip(":"), arg.lstrip(":"))
        cmd = COMMANDS.get(name)
        if cmd is None:
            raise CommandError(f"no command :{name}{_near_command(name)}")
        ctx.out.display(text_bundle(f":{cmd.name} {cmd.usage}\n\n{cmd.help}"))
        return
    text = help_text()
    ctx.out.display({"text/plain": text,
                     "text/html": f"<pre style='margin:0'>{html.escape(text)}</pre>"})


# -- inspection commands -----------------------------------------------------------------

@handles("type")
def _type(ctx: Context, arg: str) -> None:
    ty = ctx.session.type_of(arg, ctx.source_name)
    label = arg.strip() if "\n" not in arg.strip() and len(arg.strip()) <= 40 else None
    if isinstance(ty, str):  # an operator: its relation-constrained type, as text
        ctx.out.result({"text/plain": f"{label} : {ty}" if label else ty})
        return
    ctx.out.result(type_bundle(ty, label))


@handles("derive")
def _derive(ctx: Context, arg: str) -> None:
    from relay_ref.repl import derivation_html, derivation_text

    tree, refusal = ctx.session.derive_of(arg, ctx.source_name)
    ctx.out.display({"text/plain": derivation_text(tree), "text/html": derivation_html(tree)})
    if tree.error is not None:
        raise tree.error
    if refusal is not None:  # well-typed, but the AD pass cannot expand a gradient call
        raise refusal


@handles("ast")
def _ast(ctx: Context, arg: str) -> None:
    expr = ctx.session.parse_expr(arg, ctx.source_name)
    ctx.out.result({"text/plain": ast_text(expr)})


@handles("fmt")
def _fmt(ctx: Context, arg: str) -> None:
    from relay_ref import astext

    if arg:
        program = ctx.session.parse(arg, ctx.source_name)
        parts = []
        user = _cell_defs(program.module, ctx.source_name)
        if user.functions or user.type_definitions:
            parts.append(astext(user).strip())
        for var, expr in program.bindings:
            parts.append(f"let %{var.name_hint} = {astext(expr).strip()};")
        if program.expr is not None:
            bound = {v.name_hint for v, _ in program.bindings} | set(ctx.session.scope)
            parts.append("\n".join(
                line for line in astext(program.expr).strip().splitlines()
                if not (m := re.match(r"free_var %(\w+)", line)) or m.group(1) not in bound))
        text = "\n".join(parts)
    else:
        mod = ctx.session.user_module()
        if not mod.functions and not mod.type_definitions:
            ctx.out.stream("(no definitions yet)\n")
            return
        text = astext(mod).strip()
    ctx.out.result(text_bundle(text, relay=True))


def _cell_defs(mod: Any, source_name: str) -> Any:
    from relay_ref import IRModule

    def here(node: Any) -> bool:
        span = getattr(node, "span", None)
        return span is not None and span.source.name == source_name

    return IRModule(functions={n: f for n, f in mod.functions.items() if here(f)},
                    type_definitions={n: t for n, t in mod.type_definitions.items()
                                      if here(t)})


@handles("check")
def _check(ctx: Context, arg: str) -> None:
    mod = ctx.session.check(arg or None, ctx.source_name)
    names = [n for n in mod.functions
             if n in ctx.session.user_globals or _defined_in(mod.functions[n], ctx.source_name)]
    lines = [f"@{n} : {pretty_type(mod.global_types.get(n))}" for n in names]
    lines.insert(0, f"ok: {len(names)} global{'s' if len(names) != 1 else ''} type-checked")
    ctx.out.result(text_bundle("\n".join(lines), relay=True))


def _defined_in(node: Any, source_name: str) -> bool:
    span = getattr(node, "span", None)
    return span is not None and span.source.name == source_name


WHO_MAX_BINDINGS = 200
""":who lists at most this many bindings (the most recent)."""


@handles("who")
def _who(ctx: Context, arg: str) -> None:
    s = ctx.session
    lines: list[str] = []
    for name in s.user_types:
        td = s.module.type_definitions.get(name)
        if td is None:
            continue
        params = "[" + ", ".join(tv.name for tv in td.type_vars) + "]" if td.type_vars else ""
        ctors = ", ".join(c.name for c in td.constructors)
        lines.append(f"type {name}{params} {{ {ctors} }}")
    for name in s.user_globals:
        lines.append(f"@{name} : {pretty_type(s.global_type(name))}")
    from relay_kernel.display import value_text

    bindings = s.bindings
    if len(bindings) > WHO_MAX_BINDINGS:
        lines.append(f"... {len(bindings) - WHO_MAX_BINDINGS} earlier bindings not shown")
        bindings = bindings[-WHO_MAX_BINDINGS:]
    for name, ty, value in bindings:
        shown = " ".join(value_text(value).split())
        if len(shown) > 60:
            shown = shown[:57] + "..."
        lines.append(f"%{name} : {pretty_type(ty)} = {shown}")
    if not lines:
        lines = ["(nothing defined yet)"]
    lines.append(f"prelude: {'on' if s.prelude else 'off'}")
    ctx.out.result(text_bundle("\n".join(lines), relay=True))


@handles("doc")
def _doc(ctx: Context, arg: str) -> None:
    ctx.out.display(text_bundle(_describe(ctx, arg)))


def _describe(ctx: Context, arg: str) -> str:
    from relay_kernel.editor import candidates, describe
    from relay_ref.repl import close_names, suggestion_hint

    word = arg.strip()
    doc = describe(word, ctx.session)
    if doc is None:
        # names of the same kind (the sigil's: `@`, `%`, `:`, else ops, constructors, types,
        # keywords), as completion offers them, that have documentation
        near = [n for n in close_names(word, candidates(ctx.session, "", word), limit=3)
                if describe(n, ctx.session) is not None]
        raise CommandError(f"nothing known about {word!r}{suggestion_hint(near)}")
    return doc


@handles("page")
def _page(ctx: Context, arg: str) -> None:
    """``?NAME``: ``:doc NAME`` sent to the front end's pager (a reply payload)."""
    ctx.out.page(_describe(ctx, arg))


# -- evaluation commands -----------------------------------------------------------------

def show_outcome(ctx: Context, outcome: CellOutcome) -> None:
    """Notes as stream output, then the value (if any) as the cell's result."""
    for note in outcome.notes:
        ctx.out.stream(note + "\n")
    if outcome.has_value:
        ctx.out.result(value_bundle(outcome.value, outcome.type))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


TIME_MAX_CALLS = 10_000


@handles("time")
def _time(ctx: Context, arg: str) -> None:
    compiled, code = _time_options(arg)
    if not compiled:
        t0 = time.perf_counter()
        outcome = ctx.session.run(code, ctx.source_name)
        total = time.perf_counter() - t0
        show_outcome(ctx, outcome)
        t = outcome.timings
        ctx.out.stream(f"time: {_ms(total)} (parse {_ms(t.get('parse', 0))}, check "
                       f"{_ms(t.get('check', 0))}, eval {_ms(t.get('eval', 0))})\n")
        return
    t0 = time.perf_counter()
    outcome = ctx.session.run(code, ctx.source_name, compiled=True)
    total = time.perf_counter() - t0
    t = outcome.timings
    calls, failure = _repeat_calls(outcome.executable, outcome.arguments, t["call"])
    show_outcome(ctx, outcome)
    bindings = f", bindings {_ms(t['eval'])}" if outcome.bound else ""
    ctx.out.stream(f"time: {_ms(total)} (parse {_ms(t['parse'])}, check {_ms(t['check'])}, "
                   f"compile {_ms(t['compile'])}{bindings}, first call {_ms(t['call'])})\n")
    if calls:
        calls.sort()
        ctx.out.stream(f"per call: {_short(calls[len(calls) // 2])} (median of {len(calls)} "
                       f"calls after the first; best {_short(calls[0])})\n")
    elif failure is None:
        ctx.out.stream(f"per call: {_short(t['call'])} (1 call: it took longer than the "
                       f"{TIME_BUDGET:g} s budget)\n")
    if failure is not None:
        ctx.out.stream(f"note: call {len(calls) + 2} failed, so timing stopped there (do "
                       f"the expression's effects change what it computes?): "
                       f"{failure.message}\n")


def _time_options(arg: str) -> tuple[bool, str]:
    """``(compiled, code)`` from ``:time``'s argument (``--compile`` first, if at all)."""
    head, _, rest = arg.partition("\n")
    first, _, tail = head.strip().partition(" ")
    if not first.startswith("--"):
        return False, arg
    if first != "--compile":
        raise CommandError(f"unknown option {first}{_near_option(first, ['--compile'])} "
                           "(usage: :time [--compile] CODE)")
    code = (tail + ("\n" + rest if rest else "")).strip()
    if not code:
        raise CommandError("usage: :time --compile CODE")
    return True, code


def _repeat_calls(exe: Any, args: tuple[Any, ...], first: float
                  ) -> tuple[list[float], Any]:
    """Seconds per call of ``exe(*args)``, called until ``TIME_BUDGET`` (with the first
    call's ``first`` seconds) is spent; and the ``RelayError`` that stopped it, if one did."""
    from relay_ref import RelayError

    times: list[float] = []
    spent = first
    while spent < TIME_BUDGET and len(times) < TIME_MAX_CALLS:
        start = time.perf_counter()
        try:
            exe(*args)
        except RelayError as err:
            return times, err
        took = time.perf_counter() - start
        times.append(took)
        spent += took
    return times, None


def _short(seconds: float) -> str:
    """A duration that may be microseconds (``12.3 µs``), else as ``_ms``."""
    return f"{seconds * 1e6:.3g} µs" if seconds < 1e-3 else _ms(seconds)


TRACE_LIMIT = 400
"""At most this many trace lines are shown (then a count of the rest)."""


@handles("trace")
def _trace(ctx: Context, arg: str) -> None:
    from relay_ref.repl import RelayError

    parts = arg.split(None, 1)
    option = parts[0] if parts and parts[0].startswith("--") else None
    if option is not None and option != "--values":
        raise CommandError(f":trace: unknown option {option}"
                           f"{_near_option(option, ['--values'])} (:trace [--values] EXPR)")
    values = option == "--values"
    rest = parts[1] if values and len(parts) > 1 else ""
    if values and not rest.strip():
        raise CommandError(":trace --values needs an expression: :trace --values EXPR")
    try:
        outcome = ctx.session.run(rest if values else arg, ctx.source_name,
                                  trace="values" if values else True)
    except RelayError as err:  # stuck: the trace up to the stuck rule, then the error
        _show_trace(ctx, getattr(err, "trace", None) or [], values)
        raise
    _show_trace(ctx, outcome.trace or [], values)
    show_outcome(ctx, outcome)


def _show_trace(ctx: Context, events: list[Any], values: bool) -> None:
    from relay_ref.repl import format_trace, trace_html

    text = format_trace(events, limit=TRACE_LIMIT)
    if text and values:
        ctx.out.display({"text/plain": text, "text/html": trace_html(events, TRACE_LIMIT)})
    elif text:
        ctx.out.display(trace_bundle(text))


@handles("rule")
def _rule(ctx: Context, arg: str) -> None:
    from relay_ref import repl

    words = arg.split()
    try:
        if words[0] == "--list":
            for prefix in words[1:]:  # all or nothing: check every prefix first
                if not repl.rules_starting(prefix):
                    raise CommandError(f"no rule starts with {prefix}"
                                       f"{repl.rule_did_you_mean(prefix)} (families: "
                                       f"{', '.join(repl.RULE_FAMILIES)})")
            ctx.out.display({"text/plain": repl.rule_index(words[1:])})
            return
        found = []
        for name in words:
            if name.startswith("--"):
                raise CommandError(f"unknown option {name}{_near_option(name, ['--list'])} "
                                   "(:rule takes rule names, or --list and prefixes)")
            rules = repl.select_rules(name)
            if not rules:
                raise CommandError(f"no rule {name} in spec/{repl.rule_did_you_mean(name)} "
                                   "(:rule --list lists them)")
            found.extend(rules)
    except FileNotFoundError as err:  # an install without its spec
        raise CommandError(str(err)) from None
    for rule, names in repl.shared_rules(found):  # a block defining several rules once
        ctx.out.display({"text/plain": repl.rule_text(rule, names),
                         "text/html": repl.rule_block_html(rule, names)})


# -- session commands --------------------------------------------------------------------

@handles("reset")
def _reset(ctx: Context, arg: str) -> None:
    ctx.session.reset()
    ctx.out.stream("session reset: no definitions, no bindings\n")


@handles("prelude")
def _prelude(ctx: Context, arg: str) -> None:
    word = arg.strip().lower()
    if word in ("on", "off"):
        ctx.session.prelude = word == "on"
    elif word:
        raise CommandError("usage: :prelude on|off")
    ctx.out.stream(f"prelude: {'on' if ctx.session.prelude else 'off'}\n")


@handles("load")
def _load(ctx: Context, arg: str) -> None:
    path = arg.strip().strip('"').strip("'")
    try:
        outcome = ctx.session.load(path)
    except FileNotFoundError:
        raise CommandError(f"no such file: {path}") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as err:
        raise CommandError(f"cannot read {path}: {err}") from None
    show_outcome(ctx, outcome)
    defined = ", ".join(outcome.defined) or "nothing"
    ctx.out.stream(f"loaded {path}: {defined}\n")


# -- the AST view --------------------------------------------------------------------------

def ast_text(node: Any, max_nodes: int = 2000, max_chars: int = 100_000) -> str:
    """An indented tree of the IR node's dataclass fields (spans omitted; iterative).

    Expressions show their class and fields; types, ops and globals are shown inline in
    Relay text; tensors as their literal. At most ``max_nodes`` nodes and about
    ``max_chars`` characters are printed (a deeply nested tree is mostly indentation)."""
    import numpy as np

    from relay_kernel.display import scalar_literal, type_text
    from relay_ref.repl import GlobalVar, Op, TensorType, Type, Var

    lines: list[str] = []
    used = 0
    stack: list[tuple[str, str, Any]] = [("", "", node)]
    while stack:
        indent, label, obj = stack.pop()
        if len(lines) >= max_nodes or used > max_chars:
            lines.append(f"... (cut: more than {max_nodes} nodes or {max_chars} characters)")
            break
        used += len(lines[-1]) + 1 if lines else 0
        prefix = f"{indent}{label}: " if label else indent
        if isinstance(obj, Type):
            lines.append(prefix + type_text(obj))
        elif isinstance(obj, Op):
            lines.append(prefix + f"Op({obj.name})")
        elif isinstance(obj, GlobalVar):
            lines.append(prefix + f"GlobalVar(@{obj.name})")
        elif isinstance(obj, Var):
            ann = f": {type_text(obj.type_annotation)}" if obj.type_annotation else ""
            lines.append(prefix + f"Var(%{obj.name_hint}{ann})")
        elif type(obj).__name__ == "Constant" and isinstance(getattr(obj, "data", None),
                                                             np.ndarray):
            data = obj.data
            lit = scalar_literal(data) if data.ndim == 0 else \
                f"<{type_text(TensorType(tuple(data.shape), str(data.dtype)))}>"
            lines.append(prefix + f"Constant({lit})")
        elif isinstance(obj, np.ndarray):
            lit = scalar_literal(obj) if obj.ndim == 0 else f"<{obj.dtype}{list(obj.shape)}>"
            lines.append(prefix + lit)
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            fields = [f for f in dataclasses.fields(obj) if f.name != "span"]
            name = type(obj).__name__
            if getattr(obj, "name", None) and type(obj).__name__ == "Constructor":
                lines.append(prefix + f"Constructor({obj.name})")
                continue
            simple = all(not _is_node(getattr(obj, f.name)) for f in fields)
            if simple:
                inner = ", ".join(f"{f.name}={getattr(obj, f.name)!r}" for f in fields)
                lines.append(prefix + f"{name}({inner})")
                continue
            lines.append(prefix + name)
            for f in reversed(fields):
                stack.append((indent + "  ", f.name, getattr(obj, f.name)))
        elif isinstance(obj, tuple):
            if not obj:
                lines.append(prefix + "()")
                continue
            if all(not _is_node(x) for x in obj):
                lines.append(prefix + repr(obj))
                continue
            lines.append(prefix.rstrip() if label else indent + "[...]")
            for i, item in reversed(list(enumerate(obj))):
                stack.append((indent + "  ", f"[{i}]", item))
        else:
            lines.append(prefix + repr(obj))
    return "\n".join(lines)


def _is_node(obj: Any) -> bool:
    import numpy as np

    return (dataclasses.is_dataclass(obj) and not isinstance(obj, type)) \
        or isinstance(obj, np.ndarray) or (isinstance(obj, tuple)
                                           and any(_is_node(x) for x in obj))


# Every command of the table has exactly one handler here, and nothing else does.
if set(HANDLERS) != {*COMMANDS, PAGE.name}:  # pragma: no cover - a programming error
    raise RuntimeError(f"kernel commands without a handler or handlers without a command: "
                       f"{sorted(set(HANDLERS) ^ {*COMMANDS, PAGE.name})}")
