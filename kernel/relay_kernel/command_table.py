"""The kernel's command table: every ``:name`` command's name, usage and help, the aliases,
and ``split_command`` (is a cell a command?).

Data only, below the editor (completion and Shift-Tab read it) and below ``commands.py``
(whose ``HANDLERS`` run each command, one per entry here; it checks that at import). It
imports nothing of the kernel, so editor, session and commands never import each other in a
circle.

``%`` starts Relay locals, so commands use ``:`` (as evcxr does); no Relay cell can start
with ``:``. ``?name`` is ``:doc name`` shown in the front end's pager (as IPython's
``name?``).
"""

from __future__ import annotations

from dataclasses import dataclass

TIME_BUDGET = 0.5
""":time --compile calls the compiled expression again until about this many seconds are
spent (first call included), at most ``commands.TIME_MAX_CALLS`` times."""


@dataclass(frozen=True, slots=True)
class Command:
    """One ``:name ARG`` command: ``usage`` names its argument, ``help`` is the text
    ``:help`` and ``:doc :name`` show (first line: the summary)."""

    name: str
    usage: str
    help: str
    needs_arg: bool = False


COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("help", "", "Show the session rules and these commands."),
    Command("type", "EXPR", "Show the type of EXPR without evaluating it.\n\n"
            "EXPR is checked in the session (globals, bindings, prelude); nothing is kept.",
            needs_arg=True),
    Command("derive", "EXPR", "Show the typing derivation of EXPR (Δ; Γ ⊢ e : τ) without "
            "evaluating it.\n\n"
            "Each node names its rule (spec/typing.md), the expression and its type; below it, "
            "the holes the rule made and what solved them, and each run of a type relation with "
            "its answer (T-Rel, 'not yet' included). Deep derivations are elided with a count.",
            needs_arg=True),
    Command("ast", "EXPR", "Show the abstract syntax tree the parser builds for EXPR.",
            needs_arg=True),
    Command("fmt", "[CODE]",
            "Print the session's definitions (or CODE) as canonical Relay text.\n\n"
            "Without an argument: every def and type made by cells so far, in definition order."),
    Command("check", "[CODE]",
            "Type-check the session (or CODE against it) and list the types.\n\n"
            "With CODE nothing is kept: it is a dry run of a cell without evaluation."),
    Command("who", "", "List the globals, types and bindings defined in this session."),
    Command("doc", "NAME",
            "Show the type and documentation of NAME (also ?NAME, Shift-Tab).\n\n"
            "NAME is an op, @global, constructor, type, %binding, keyword or :command.",
            needs_arg=True),
    Command("time", "[--compile] CODE", "Run CODE as a cell and report the time taken.\n\n"
            "The report splits parsing, type checking and evaluation.\n"
            "With --compile only the cell's trailing expression is compiled with rr.compile "
            "(the fast executor; its free variables, the session's bindings, become "
            "parameters) and timed: it is called once for the cell's value, then again for "
            f"about {TIME_BUDGET:g} s, and every call's effects happen (a session reference "
            "it writes ends with the last call's write: `ref_write(%r, ref_read(%r) + 1)` "
            "adds 1 per call, the report says how many calls). The report shows the compile "
            "time, the first call, and the median time per call. Definitions, bindings and "
            "`e;` statements before the expression are handled as in any cell: the "
            "interpreter runs them once, before the first call, so their effects happen "
            "once.", needs_arg=True),
    Command("trace", "[--values] EXPR", "Evaluate EXPR and list the evaluation rules applied "
            "(--values: with each step's value).\n\n"
            "Rules are named as in spec/semantics.md (E-Let, E-App, E-Match ...). With --values "
            "each step also shows its value (ρ; σ ⊢ e ⇒ v; σ'), the environment a closure "
            "captures, the store a reference rule reads or writes, and for `match` the clauses "
            "that failed, the clause taken and the pattern rules (P-Ctor, P-Var ...) with their "
            "bindings. A stuck evaluation shows the trace up to the stuck rule (E-Match-Fail, "
            "Stuck-Depth ...), then the error.",
            needs_arg=True),
    Command("rule", "NAME...",
            "Show rules of the spec as spec/ writes them (T-App, E-Let ...).\n\n"
            "The rule names are the ones errors, traces and derivations cite; a name ending in "
            "`*` shows every rule starting with it (`:rule E-If-*`). `:rule --list` lists them "
            "all, by family; `:rule --list T` the T family, `:rule --list E-App` E-App and the "
            "E-App-... rules.", needs_arg=True),
    Command("reset", "", "Forget every definition and binding of this session."),
    Command("prelude", "on|off",
            "Turn the prelude on or off for later cells (no argument: show).\n\n"
            "Definitions already drawn from the prelude stay; :reset starts clean."),
    Command("load", "FILE.relay",
            "Run a .relay file as a cell: its definitions join the session.\n\n"
            "Errors point into the file (FILE:line:column).", needs_arg=True),
)}
ALIASES = {"t": "type", "vars": "who", "clear": "reset", "timing": "time", "h": "help"}
# ``?NAME``: ``:doc NAME`` in the pager (not listed by ``:help``).
PAGE = Command("page", "NAME", "Show :doc NAME in the pager.", needs_arg=True)


def split_command(code: str) -> tuple[str, str] | None:
    """``(name, argument)`` when ``code`` is a command cell, else None.

    ``?add`` is ``("page", "add")`` (``:doc`` shown in the pager); aliases are resolved
    (``:t`` is ``:type``)."""
    lines = code.lstrip().splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("//")):
        lines.pop(0)  # comment lines above a command
    text = "\n".join(lines).lstrip()
    if text.startswith("?"):
        return "page", text[1:].strip()
    if not text.startswith(":"):
        return None
    head, _, rest = text[1:].partition("\n")
    name, _, arg = head.strip().partition(" ")
    arg = (arg + ("\n" + rest if rest else "")).strip()
    return ALIASES.get(name, name), arg
