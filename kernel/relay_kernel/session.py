"""Session semantics: what a sequence of Relay cells means, independent of Jupyter.

The rules (also shown by ``:help`` and written down in ``docs/kernel.md``):

1. A cell holds definitions (``def @f ...``, ``type T ...``), then top-level bindings
   (``let %x = e;`` with no body), then at most one trailing expression; any part may be
   missing, but they come in this order.
2. Definitions accumulate in the session module. Defining a name again replaces the old
   definition; the kernel says so in a note (and shows the old and new types). Defining a
   name the prelude defines shadows the prelude's, with a note too. A redefinition that
   breaks an earlier definition using the name is refused (with a note saying why); a type
   is not redefined while a definition the cell keeps uses its old constructors; bindings
   of a redefined type, or holding closures that call a global whose type changed, are
   forgotten (with a note).
3. ``let %x = e;`` at the top of a cell, with nothing after the ``;`` binding it, evaluates
   ``e`` and binds ``%x`` for later cells (its value and type are kept). Bindings are not
   visible in ``def``s (a clear error at the use). A binding of a bare operator (``let %f =
   add;``) stays polymorphic: every use of ``%f`` is the operator itself, instantiated
   afresh (spec/typing.md 3.10), so ``%f(1f, 2f)`` and ``%f(1, 2)`` both work, as in a file.
4. The trailing expression is type-checked and evaluated; its value is the cell's result
   (``Out[n]``).
5. The prelude (``List``, ``Option``, ``@map``, ``@foldl`` ...) is available: a name the
   session does not define is taken from the prelude. ``:prelude off`` stops that for later
   cells (what was already used stays); a definition of your own always wins.
6. Atomicity: a cell that fails to parse or type-check changes nothing. A cell that fails
   at run time (or is interrupted) keeps its definitions and the bindings evaluated before
   the failure.
7. Every cell's source is named ``In[n]`` (``n`` = its execution count), so errors read
   ``In[3]:2:7: error: ...``.
8. ``gradient(f)`` calls (spec/ad.md AD-Grad-Op) are expanded by the AD pass once the cell
   type-checks, as ``relay run`` and ``relay check`` expand a file's: in the cell's
   bindings and expression and in the session's definitions, with the same refusals (an
   operator without a gradient rule ...), which change nothing, as type errors. The
   definitions are kept as written (``:fmt`` shows them so); the globals and ADTs an
   expansion makes (``@f_grad``, ``@f_rev`` ...) are not names a cell can use, but those the
   session's values call after a cell are kept with them -- a binding's (``let %g =
   gradient(@f);`` works in later cells, computing the gradient of ``@f`` as it was then)
   or a closure a cell writes into a session ref -- and only while some value calls them.
   A cell that defines a name one of them uses, or has, drops it, and the bindings calling
   it are forgotten (rule 2).

Invariants of ``Session``: ``module`` is always type-checked (``infer_types`` succeeded on
it); ``scope`` maps each bound name to its ``Var``, and every such ``Var`` has an entry in
``env`` (its value) and ``var_types`` (its type); ``user_globals``/``user_types`` list the
names defined by cells (not pulled in from the prelude), in definition order; ``generated``
holds only globals and ADTs made by gradient expansions (rule 8), none named as one of
``module``'s, with their recorded types; the globals they call are among them, and after
a cell they are exactly those the values of ``scope``'s bindings reach (what their closures
call, through references and one another).
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relay_ref import IRModule


@dataclass
class CellOutcome:
    """What running a cell produced. ``has_value`` is False for cells without a trailing
    expression (then ``value``/``type`` are None)."""

    notes: list[str] = field(default_factory=list)
    has_value: bool = False
    value: Any = None
    type: Any = None
    defined: list[str] = field(default_factory=list)
    bound: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    trace: list[Any] | None = None
    # run(compiled=True): the executable the expression was compiled to and the arguments
    # (the values of its free variables) that the first call, giving ``value``, was made with
    executable: Any = None
    arguments: tuple[Any, ...] = ()


def _source_of(node: Any) -> str | None:
    span = getattr(node, "span", None)
    return span.source.name if span is not None else None


class Session:
    """The state of one kernel: the accumulated module and the top-level bindings."""

    def __init__(self, prelude: bool = True) -> None:
        self.prelude = prelude
        self.reset()

    # -- state -----------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every definition and binding (the prelude setting is kept)."""
        self.module: IRModule = IRModule(source_name="session")
        self.env: dict[Any, Any] = {}
        self.var_types: dict[Any, Any] = {}
        self.scope: dict[str, Any] = {}
        self.user_globals: list[str] = []
        self.user_types: list[str] = []
        self.sources: dict[str, str] = {}
        self.forgotten: dict[str, str] = {}  # binding name -> the cell that forgot it
        # `let %f = add;`: bindings of a bare operator stay polymorphic (rule 3): each use
        # of %f is the operator itself, instantiated afresh (spec/typing.md 3.10 T-Op)
        self.op_aliases: dict[Any, str] = {}
        # rule 8: what gradient expansions made that kept bindings' values call
        self.generated: IRModule = IRModule(source_name="gradient expansions")
        # the definitions (by identity) of the last expansion of a module, and its result
        self._expanded: tuple[Any, IRModule] | None = None

    @property
    def bindings(self) -> list[tuple[str, Any, Any]]:
        """``(name, type, value)`` of every top-level binding, in binding order."""
        return [(name, self.var_types.get(var), self.env.get(var))
                for name, var in self.scope.items()]

    def global_type(self, name: str) -> Any:
        """The inferred type of global ``@name`` in the session module (None if unknown)."""
        return self.module.global_types.get(name.lstrip("@"))

    # -- the pipeline ----------------------------------------------------------------------
    def parse(self, code: str, source_name: str) -> Any:
        """Parse a cell against the session; returns the parser's ``Program``."""
        from relay_ref.repl import Diagnostic, Note, ParseError, parse_program

        self.sources[source_name] = code
        try:
            return parse_program(code, source_name, module=self.module,
                                 scope=dict(self.scope), prelude=self.prelude)
        except ParseError as err:
            forgot = re.match(r"unbound local variable %(\w+)", err.message)
            if forgot and forgot.group(1) in self.forgotten:
                first = err.diagnostics[0]
                note = Note(f"%{forgot.group(1)} was forgotten by "
                            f"{self.forgotten[forgot.group(1)]}, which replaced a definition "
                            "it was made with; bind it again")
                raise ParseError([Diagnostic(first.level, first.message, first.span,
                                             (*first.notes, note)),
                                  *err.diagnostics[1:]]) from None
            span = err.span
            if span is None or span.line == 1 or span.source.name != source_name:
                raise
            lines = code.splitlines()
            line = lines[span.line - 1] if span.line <= len(lines) else ""
            if not re.match(r"\s*(def\s*@|type\s+\w|extern\s+type\b)", line):
                raise
            from relay_kernel.text_scan import scan_brackets

            still_open, _, _ = scan_brackets("\n".join(lines[: span.line - 1]))
            if still_open:  # inside an unclosed definition: a different mistake
                raise
            first = err.diagnostics[0]
            note = Note("definitions (def, type) come first in a cell, before its `let` "
                        "bindings and its expression; move this one up, or into a cell of "
                        "its own")
            raise ParseError([Diagnostic(first.level, first.message, first.span,
                                         (*first.notes, note)),
                              *err.diagnostics[1:]]) from None

    def parse_expr(self, code: str, source_name: str) -> Any:
        """Parse ``code`` as one expression in the session's scope (for ``:ast``)."""
        from relay_ref import parse_expr

        self.sources[source_name] = code
        return parse_expr(code, source_name, module=self.module, scope=dict(self.scope),
                          prelude=self.prelude)

    def parse_with_expr(self, code: str, source_name: str) -> Any:
        """``parse`` that insists on a trailing expression (for ``:type``)."""
        program = self.parse(code, source_name)
        if program.expr is None:
            from relay_ref.repl import ParseError

            raise ParseError("expected an expression")
        return program

    def _check_module(self, mod: IRModule) -> IRModule:
        if mod is self.module:
            return mod
        from relay_ref import infer_types

        return infer_types(mod)

    def _infer(self, expr: Any, mod: IRModule, var_types: dict[Any, Any]) -> Any:
        from relay_ref.repl import check_expr

        return check_expr(expr, mod, var_types)

    def _evaluate(self, expr: Any, mod: IRModule, trace: bool = False) -> Any:
        from relay_ref.repl import evaluate_checked

        # The cell was type-checked with the session's variable types (rule 6): no re-check.
        return evaluate_checked(expr, mod, self.env, trace=trace)

    def run(self, code: str, source_name: str, *, trace: bool = False,
            compiled: bool = False) -> CellOutcome:
        """Run one cell; see ``_run``."""
        with self._explaining_shadowed_prelude():
            return self._run(code, source_name, trace=trace, compiled=compiled)

    def _run(self, code: str, source_name: str, *, trace: bool = False,
             compiled: bool = False) -> CellOutcome:
        """Run one cell under the rules in the module docstring.

        With ``trace=True`` (``:trace``) the cell's bindings are folded into ``let``s around
        its expression -- so the trace shows them and they are not kept -- and
        ``CellOutcome.trace`` holds the interpreter's trace events.
        With ``compiled=True`` (``:time --compile``) the trailing expression, which the cell
        must have, is compiled with ``rr.compile`` after type checking (a failure changes
        nothing, as a type error) and called once on the values of its free variables;
        ``CellOutcome.executable`` and ``arguments`` let the caller call it again. The
        definitions and bindings are handled as in any cell (bindings by the interpreter).
        Raises ``RelayError`` (parse, type, compile or runtime) and lets
        ``KeyboardInterrupt`` through; the session is left as rule 6 says."""
        out = CellOutcome()
        t0 = time.perf_counter()
        program = self.parse(code, source_name)
        if compiled and program.expr is None:
            from relay_kernel.display import CommandError

            raise CommandError(":time --compile times the cell's trailing expression, and "
                               "this cell has none")
        self._reject_bindings_in_defs(program, code, source_name)
        if trace and program.expr is not None and program.bindings:
            program = _fold_bindings(program)
        t1 = time.perf_counter()
        stale = self._check_type_redefinitions(program.module, source_name)
        checked = self._check_module_noting(program.module, source_name)
        stale |= self._stale_closures(checked, source_name)
        dropped = self._generated_replaced(checked, source_name)
        if dropped:  # bindings whose values call what this cell's definitions replace
            stale |= {var for var in self.scope.values()
                      if _value_mentions(self.env.get(var)) & dropped}
        # Type-check the bindings and the expression before evaluating anything (rule 6).
        var_types = {v: t for v, t in self.var_types.items() if v not in stale}
        program, aliases = self._with_op_aliases(program)
        binding_types = []
        for var, expr in program.bindings:
            if var in aliases:
                ty = self._op_type(aliases[var])
            else:
                ty = self._infer(_let_of(var, expr), checked, var_types)
            var_types[var] = ty
            binding_types.append(ty)
        expr_type = None
        if program.expr is not None:
            expr_type = self._infer(program.expr, checked, var_types)
        # Rule 8: gradient calls expanded (what the AD pass refuses changes nothing); a
        # compiled expression is left to rr.compile, which expands and simplifies its own.
        lets = [_let_of(var, expr) for var, expr in program.bindings]
        body = [] if compiled or program.expr is None else [program.expr]
        run_module, expanded = self._expand(checked, dropped, lets + body, var_types)
        t2 = time.perf_counter()
        free: list[Any] = []
        if compiled:
            from dataclasses import replace

            from relay_ref.repl import compile_expr

            # the definitions as written (rr.compile expands and simplifies them) and the
            # globals the expansion of the bindings made, which their values will call
            to_compile = replace(run_module,
                                 functions={**run_module.functions, **checked.functions})
            out.executable, free = compile_expr(program.expr, to_compile, var_types)
        t_compiled = time.perf_counter()
        # Rule 8: whatever the cell does from here on (its bindings, a statement or its
        # expression writing a closure into a session ref, a run-time failure half way),
        # the generated globals that the session's values reach afterwards are kept, and
        # only those (`_collect_generated`).
        try:
            out.notes.extend(self._commit_module(checked, source_name, out))
            if stale:
                out.notes.append(self._forget(stale, source_name))
            for (var, _expr), ty, let in zip(program.bindings, binding_types,
                                             expanded[:len(lets)], strict=True):
                # As `let %x = e; %x`, so a recursive function (`let %f = fn ... { %f(...) }`)
                # gets its recursive closure (E-App-Rec), exactly as inside an expression.
                value = self._evaluate(let, run_module)
                if var.name_hint == "_":  # `e;` evaluated for its effect, not kept
                    continue
                self.env[var] = value
                self.var_types[var] = ty
                if var in aliases:
                    self.op_aliases[var] = aliases[var]
                else:
                    self.op_aliases.pop(var, None)
                old = self.scope.pop(var.name_hint, None)
                if old is not None and old is not var:  # shadowed: nothing can reach it
                    self.env.pop(old, None)
                    self.var_types.pop(old, None)
                    self.op_aliases.pop(old, None)
                self.scope[var.name_hint] = var
                self.forgotten.pop(var.name_hint, None)
                out.bound.append(var.name_hint)
            if compiled:
                out.arguments = tuple(self.env[var] for var in free)
                t_bound = time.perf_counter()
                out.has_value, out.value, out.type = True, out.executable(*out.arguments), \
                    expr_type
                t3 = time.perf_counter()
                # "eval": the bindings (by the interpreter); "call": the first compiled call
                out.timings = {"parse": t1 - t0, "check": t2 - t1, "compile": t_compiled - t2,
                               "eval": t_bound - t_compiled, "call": t3 - t_bound}
                return out
            if program.expr is not None:
                result = self._evaluate(expanded[-1], run_module, trace=trace)
                if trace:
                    result, out.trace = _split_trace(result)
                out.has_value, out.value, out.type = True, result, expr_type
            t3 = time.perf_counter()
            out.timings = {"parse": t1 - t0, "check": t2 - t1, "eval": t3 - t_compiled}
            return out
        finally:
            self._collect_generated(run_module, checked)

    def _with_op_aliases(self, program: Any) -> tuple[Any, dict[Any, str]]:
        """The program with every use of an operator alias (a binding ``let %f = add;`` of
        this or an earlier cell) replaced by the operator, and the aliases in force."""
        from dataclasses import replace

        from relay_ref.repl import Op, Var, with_operators

        aliases = dict(self.op_aliases)
        bindings = []
        for var, expr in program.bindings:
            expr = with_operators(expr, aliases)
            if isinstance(expr, Op):
                aliases[var] = expr.name
            elif isinstance(expr, Var) and expr in aliases:
                aliases[var] = aliases[expr]
            bindings.append((var, expr))
        body = None if program.expr is None else with_operators(program.expr, aliases)
        return replace(program, bindings=tuple(bindings), expr=body), aliases

    @staticmethod
    def _op_type(name: str) -> Any:
        from relay_ref.repl import op_value_type

        return op_value_type(name)

    # -- gradient(f): the AD expansion (rule 8, spec/ad.md AD-Grad-Op) ----------------------
    def _expand(self, checked: IRModule, dropped: set[str], exprs: list[Any],
                var_types: dict[Any, Any]) -> tuple[IRModule, list[Any]]:
        """The module a cell runs in -- ``checked`` with its gradient calls expanded, plus
        the generated globals of earlier cells that are not ``dropped`` -- and ``exprs``
        (type-checked with ``var_types``) with theirs expanded. Raises the AD pass's
        located ``RelayError`` for what it cannot differentiate."""
        from dataclasses import replace

        from relay_ref.repl import expand_gradient_calls

        module = self._with_generated(checked, dropped)
        # The definitions first: when they are the last expansion's (compared by
        # identity), its result is reused rather than made again (only the module's
        # source name and metadata are this cell's).
        key = (tuple(module.functions.items()), tuple(module.type_definitions.items()))
        if self._expanded is not None and self._expanded[0] == key:
            done = self._expanded[1]
            module = replace(module, functions=done.functions,
                             type_definitions=done.type_definitions,
                             checked_types=done.checked_types, global_types=done.global_types)
        else:
            expanded_defs, _ = expand_gradient_calls(module)
            if expanded_defs is not module:
                self._expanded = (key, expanded_defs)
            module = expanded_defs
        return expand_gradient_calls(module, exprs, var_types)

    def _with_generated(self, checked: IRModule, dropped: set[str]) -> IRModule:
        """``checked`` plus the kept generated globals and ADTs (rule 8) not in
        ``dropped``, which session values may call; their recorded types come along (they
        are not checked again until an expansion checks the whole module)."""
        from dataclasses import replace

        gen = _without(self.generated, dropped)
        if not gen.functions and not gen.type_definitions:
            return checked
        return replace(checked, functions={**gen.functions, **checked.functions},
                       type_definitions={**gen.type_definitions, **checked.type_definitions},
                       global_types={**gen.global_types, **checked.global_types})

    def _generated_replaced(self, checked: IRModule, source_name: str) -> set[str]:
        """The kept generated globals and ADTs that this cell's definitions make unusable:
        one named as a global, type or constructor the cell defines, or mentioning one (it
        was made against the old definition), and whatever uses those."""
        gen = self.generated
        if not gen.functions and not gen.type_definitions:
            return set()
        names = {n for n, fn in checked.functions.items() if _source_of(fn) == source_name}
        for name, td in checked.type_definitions.items():
            if _source_of(td) == source_name:
                names.add(name)
                names.update(c.name for c in td.constructors)
        if not names:
            return set()
        uses = {n: _mentioned(node) for n, node in
                [*gen.functions.items(), *gen.type_definitions.items()]}
        dropped = {n for n, used in uses.items() if n in names or used & names}
        while True:
            more = {n for n, used in uses.items() if n not in dropped and used & dropped}
            if not more:
                return dropped
            dropped |= more

    def _collect_generated(self, run_module: IRModule, checked: IRModule) -> None:
        """After a cell ran in ``run_module`` (``checked`` plus the generated globals and
        ADTs, the kept ones and the cell's own): make ``self.generated`` those of them that
        the session's values -- bindings, with what their references hold now -- call or
        use, directly or through one another (a mark from the values; the definitions are
        kept as written and name none of them). So a closure written into a session ref
        keeps what it calls, and rebinding a gradient drops what only the old value used."""
        from dataclasses import replace

        among = (run_module.functions.keys() - checked.functions.keys()) \
            | (run_module.type_definitions.keys() - checked.type_definitions.keys())
        if not among:
            if self.generated.functions or self.generated.type_definitions:
                self.generated = IRModule(source_name=self.generated.source_name)
            return
        used: set[str] = set()
        for var in self.scope.values():
            used |= _value_mentions(self.env.get(var)) & among
        keep = _reached(used, run_module, among)
        gen = self.generated
        if keep == gen.functions.keys() | gen.type_definitions.keys():
            return
        self.generated = replace(
            gen, functions={n: run_module.functions[n] for n in keep
                            if n in run_module.functions},
            type_definitions={n: run_module.type_definitions[n] for n in keep
                              if n in run_module.type_definitions},
            global_types={n: run_module.global_types[n] for n in keep
                          if n in run_module.global_types})

    # -- rules for definitions that meet the session's state ------------------------------
    def _reject_bindings_in_defs(self, program: Any, code: str, source_name: str) -> None:
        """A ``def`` cannot use a session binding (``let %x = ...;`` of an earlier cell):
        globals are closed, and a binding may be replaced later. Raise a ``ParseError`` at
        the use, with a note saying why."""
        if not self.scope:
            return
        bound = {id(v): name for name, v in self.scope.items()}
        used: list[str] = []
        for fn in program.module.functions.values():
            if _source_of(fn) != source_name:
                continue
            for node in _walk(fn):
                name = bound.get(id(node))
                if name is not None and name not in used:
                    used.append(name)
        if not used:
            return
        from relay_ref.repl import Diagnostic, Note, ParseError, parse_program

        why = (f"%{used[0]} is a session binding (a top-level `let` of an earlier cell); a "
               f"def cannot use session bindings -- pass %{used[0]} as a parameter, or make "
               "it a global (def @name() { ... })")
        try:
            parse_program(code, source_name, module=self.module, scope={},
                          prelude=self.prelude)
        except ParseError as err:
            first = err.diagnostics[0]
            diag = Diagnostic(first.level, first.message, first.span,
                              (*first.notes, Note(why, self.scope[used[0]].span)))
            raise ParseError([diag, *err.diagnostics[1:]]) from None
        raise ParseError(why, self.scope[used[0]].span)

    def _check_type_redefinitions(self, mod: IRModule, source_name: str) -> set[Any]:
        """For every type this cell redefines: refuse the cell if a global it does not
        redefine uses the old type's constructors (they would be confused with the new
        ones); return the session bindings whose type mentions a redefined type (they hold
        values of the old type and are forgotten when the cell is committed)."""
        old_types = self.module.type_definitions
        redefined = [name for name, td in mod.type_definitions.items()
                     if name in old_types and old_types[name] is not td
                     and _source_of(td) == source_name]
        if not redefined:
            return set()
        old_ctors = {id(c) for n in redefined for c in old_types[n].constructors}
        users = [(name, fn) for name, fn in mod.functions.items()
                 if _source_of(fn) != source_name
                 and any(id(node) in old_ctors for node in _walk(fn))]
        if users:
            from relay_ref.repl import Diagnostic, Note, RelayTypeError

            names = ", ".join(f"@{n}" for n, _ in users)
            what = ", ".join(redefined)
            td = mod.type_definitions[redefined[0]]
            notes = tuple(Note(f"@{n} uses the old {what} here", fn.span) for n, fn in users)
            notes += (Note(f"define {names} again in this cell, after the new type (or "
                           ":reset first); nothing was changed"),)
            raise RelayTypeError(Diagnostic(
                "error", f"cannot redefine type {what}: {names} still use"
                f"{'s' if len(users) == 1 else ''} its old constructors", td.span, notes))
        return {var for var in self.scope.values()
                if _mentions_type(self.var_types.get(var), set(redefined))}

    def _check_module_noting(self, mod: IRModule, source_name: str) -> IRModule:
        """``_check_module``; when the error lies in an earlier cell's definition (this cell
        redefined something it uses), add a note saying so."""
        from relay_ref.repl import Diagnostic, Note, RelayTypeError

        try:
            return self._check_module(mod)
        except RelayTypeError as err:
            first = err.diagnostics[0]
            span = first.span
            if span is None or span.source.name == source_name:
                raise
            mine = [f"@{n}" for n, fn in mod.functions.items()
                    if _source_of(fn) == source_name]
            mine += [n for n, td in mod.type_definitions.items()
                     if _source_of(td) == source_name]
            if not mine:
                raise
            note = Note(f"this error is in an earlier definition ({span.source.name}) that "
                        f"uses {', '.join(mine)}, which this cell (re)defines; the cell was "
                        "not run and the session is unchanged -- define both together in one "
                        "cell")
            diag = Diagnostic(first.level, first.message, first.span, (*first.notes, note))
            raise type(err)([diag, *err.diagnostics[1:]]) from None

    @contextlib.contextmanager
    def _explaining_shadowed_prelude(self) -> Any:
        """A type error that involves the prelude's text while the session shadows a prelude
        type (``type List ...``) gets a note: the prelude's functions and constructors are
        written against its own types and cannot be used with yours."""
        from relay_ref.repl import Diagnostic, Note, RelayTypeError

        try:
            yield
        except RelayTypeError as err:
            shadowed = [n for n in self.user_types if n in _prelude_types()]
            spans = [d.span for d in err.diagnostics] + [
                n.span for d in err.diagnostics for n in d.notes]
            if not shadowed or not any(
                    sp is not None and sp.source.name.endswith("prelude.relay") for sp in spans):
                raise
            names = ", ".join(shadowed)
            note = Note(f"your type{'s' if len(shadowed) > 1 else ''} {names} shadow"
                        f"{'' if len(shadowed) > 1 else 's'} the prelude's; the prelude's "
                        "functions and constructors (@map, Cons, Some, ...) are written for "
                        "its own types and cannot be used with yours -- define your own, "
                        "rename your type, or :reset")
            first = err.diagnostics[0]
            rest = list(err.diagnostics[1:])
            in_prelude = [d for d in rest
                          if d.span is not None and d.span.source.name.endswith("prelude.relay")]
            if in_prelude and first.span is not None \
                    and first.span.source.name.endswith("prelude.relay"):
                rest = [d for d in rest if d not in in_prelude]
                note = Note(f"{note.message} ({len(in_prelude)} more error"
                            f"{'s' if len(in_prelude) > 1 else ''} in the prelude not shown)")
            diag = Diagnostic(first.level, first.message, first.span, (*first.notes, note))
            raise RelayTypeError([diag, *rest]) from None

    def _forget(self, stale: set[Any], source_name: str) -> str:
        names = [name for name, var in self.scope.items() if var in stale]
        for name in names:
            self.forgotten[name] = source_name
            var = self.scope.pop(name)
            self.env.pop(var, None)
            self.var_types.pop(var, None)
            self.op_aliases.pop(var, None)
        listed = ", ".join(f"%{n}" for n in names)
        return (f"note: forgot {listed}: made with a definition this cell replaces (a type "
                "it redefines, a global whose type it changes, or one a gradient expansion "
                "made)")

    def _stale_closures(self, checked: IRModule, source_name: str) -> set[Any]:
        """Session bindings holding functions that call a global this cell redefines with a
        different type (a closure calls globals by name, so it would call the new one)."""
        old = self.module
        changed = {name for name, fn in checked.functions.items()
                   if _source_of(fn) == source_name and name in old.global_types
                   and old.global_types.get(name) != checked.global_types.get(name)}
        if not changed or not self.scope:
            return set()
        return {var for var in self.scope.values()
                if _value_calls(self.env.get(var), changed)}

    def _commit_module(self, checked: IRModule, source_name: str,
                       out: CellOutcome) -> list[str]:
        """Make ``checked`` the session module; notes for every redefinition."""
        notes: list[str] = []
        old = self.module
        for name, fn in checked.functions.items():
            if _source_of(fn) != source_name or old.functions.get(name) is fn:
                continue
            out.defined.append(f"@{name}")
            if name in old.functions:
                was, now = old.global_types.get(name), checked.global_types.get(name)
                what = "your earlier definition" if name in self.user_globals \
                    else "the prelude's definition"
                note = f"note: @{name} redefined (replaces {what})"
                if was is not None and now is not None and was != now:
                    from relay_ref.repl import type_text as type_to_text

                    note += f"; its type was {type_to_text(was)}, now {type_to_text(now)}"
                notes.append(note)
            elif name in _prelude_globals() and self.prelude:
                notes.append(f"note: @{name} shadows the prelude's @{name}")
            if name not in self.user_globals:
                self.user_globals.append(name)
        for name, td in checked.type_definitions.items():
            if _source_of(td) != source_name or old.type_definitions.get(name) is td:
                continue
            out.defined.append(name)
            if name in old.type_definitions:
                what = "your earlier definition" if name in self.user_types \
                    else "the prelude's definition"
                notes.append(f"note: type {name} redefined (replaces {what})")
            elif name in _prelude_types() and self.prelude:
                notes.append(f"note: type {name} shadows the prelude's {name}")
            if name not in self.user_types:
                self.user_types.append(name)
        self.module = checked
        return notes

    # -- queries used by commands ----------------------------------------------------------
    def type_of(self, code: str, source_name: str) -> Any:
        """The type of the cell's trailing expression, without evaluating or committing."""
        with self._explaining_shadowed_prelude():
            return self._type_of(code, source_name)

    def _type_of(self, code: str, source_name: str) -> Any:
        """A type, or for an operator (or an alias of one) the text of its
        relation-constrained type (``fn[t1, t2, t3](t1, t2) -> t3 where Broadcast(...)``)."""
        from relay_ref.repl import Op, op_info

        program, aliases = self._query_program(code, source_name)
        if isinstance(program.expr, Op):
            info = op_info(program.expr.name)
            if info is not None:
                return info.type_text
        checked, var_types = self._typing_context(program, aliases)
        ty = self._infer(program.expr, checked, var_types)
        _refuse_gradients(checked, [program.expr], var_types)  # rule 8
        return ty

    def derive_of(self, code: str, source_name: str) -> tuple[Any, Any]:
        """The typing derivation of the cell's trailing expression (``:derive``), checked as
        ``type_of`` checks it (the cell's own bindings are part of it: ``let %y = 2; %y``
        derives from T-Let), and the AD pass's ``RelayError`` when the expression types but a
        gradient call in it (or in a definition) cannot be expanded (rule 8), else None;
        nothing is evaluated or committed. The derivation's ``error`` is the
        ``RelayTypeError`` when the expression is ill-typed."""
        from relay_ref.repl import RelayError, derive_expr

        with self._explaining_shadowed_prelude():
            program, aliases = self._query_program(code, source_name)
            checked, var_types = self._typing_context(program, aliases)
            tree = derive_expr(program.expr, checked, var_types)
            if tree.error is not None:
                return tree, None
            try:
                _refuse_gradients(checked, [program.expr], var_types)
            except RelayError as err:
                return tree, err
            return tree, None

    def _query_program(self, code: str, source_name: str) -> tuple[Any, dict[Any, str]]:
        """A ``:type`` / ``:derive`` argument parsed, operator aliases replaced, and its own
        bindings folded into ``let``s around its expression (as ``:trace`` does), so that
        they are typed in context (``let %f = fn (%x) { %x }; %f(1)``) and shown; bindings
        of a bare operator stay aliases (polymorphic, session rule 3)."""
        from dataclasses import replace

        program = self.parse_with_expr(code, source_name)
        program, aliases = self._with_op_aliases(program)
        kept = tuple((v, e) for v, e in program.bindings if v not in aliases)
        program = replace(program, bindings=tuple(
            (v, e) for v, e in program.bindings if v in aliases))
        if kept:
            program = replace(program, expr=_fold_bindings(
                replace(program, bindings=kept)).expr)
        return program, aliases

    def _typing_context(self, program: Any, aliases: dict[Any, str]
                        ) -> tuple[IRModule, dict[Any, Any]]:
        """The checked module and the variable types (session bindings, then the
        program's remaining bindings) that ``program.expr`` is typed in."""
        checked = self._check_module(program.module)
        var_types = dict(self.var_types)
        for var, expr in program.bindings:
            var_types[var] = (self._op_type(aliases[var]) if var in aliases
                              else self._infer(_let_of(var, expr), checked, var_types))
        return checked, var_types

    def check(self, code: str | None, source_name: str) -> IRModule:
        """Type-check the session module (plus ``code``'s definitions, not committed), and
        ``code``'s gradient calls expanded as a cell's would be (rule 8; nothing kept)."""
        if not code or not code.strip():
            from relay_ref import infer_types

            return infer_types(self.module) if self.module.functions else self.module
        program = self.parse(code, source_name)
        checked = self._check_module(program.module)
        var_types = dict(self.var_types)
        for var, expr in program.bindings:
            var_types[var] = self._infer(_let_of(var, expr), checked, var_types)
        exprs = [_let_of(var, expr) for var, expr in program.bindings]
        if program.expr is not None:
            self._infer(program.expr, checked, var_types)
            exprs.append(program.expr)
        _refuse_gradients(checked, exprs, var_types)  # rule 8
        return checked

    def user_module(self) -> IRModule:
        """The definitions made by cells (not those drawn from the prelude)."""
        mod = self.module
        return IRModule(functions={n: mod.functions[n] for n in self.user_globals
                                   if n in mod.functions},
                        type_definitions={n: mod.type_definitions[n] for n in self.user_types
                                          if n in mod.type_definitions},
                        global_types={n: t for n, t in mod.global_types.items()
                                      if n in self.user_globals},
                        source_name="session")

    def load(self, path: str) -> CellOutcome:
        """Run a ``.relay`` file as a cell named by its path (``:load``)."""
        text = Path(path).expanduser().read_text()
        return self.run(text, str(path))


def _prelude_globals() -> dict[str, str]:
    from relay_kernel.text_scan import prelude_names

    return prelude_names()[0]


def _prelude_types() -> dict[str, str]:
    from relay_kernel.text_scan import prelude_names

    return prelude_names()[1]


def _walk(root: Any):
    """Every IR node reachable from ``root`` (dataclass fields, tuples, lists), each once;
    iterative, so deep programs are fine."""
    import dataclasses

    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if isinstance(obj, (tuple, list)):
            stack.extend(obj)
            continue
        if not dataclasses.is_dataclass(obj) or isinstance(obj, type) or id(obj) in seen:
            continue
        seen.add(id(obj))
        yield obj
        for f in dataclasses.fields(obj):
            if f.name != "span":
                stack.append(getattr(obj, f.name, None))


def _value_parts(value: Any):
    """The closures (``Closure``) in ``value`` and the names of the ADTs its constructor
    values are of, walking tuples, ADT fields, references (what they hold now) and captured
    environments, each once; iterative, so deep values are fine."""
    import numpy as np

    seen: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if v is None or isinstance(v, np.ndarray) or id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, (tuple, list)):
            stack.extend(v)
            continue
        kind = type(v).__name__
        if kind == "ConstructorValue":
            yield v.constructor.belong_to.name
            stack.extend(v.fields)
        elif kind == "RefValue":
            stack.append(v.value)
        elif kind == "RecClosure":
            stack.append(v.closure)
        elif kind == "Closure":
            yield v
            stack.extend(v.env.values())


def _value_calls(value: Any, names: set[str]) -> bool:
    """Whether ``value`` holds a function (closure) whose code mentions a global in
    ``names`` (see ``_value_parts``)."""
    from relay_ref.repl import GlobalVar

    return any(not isinstance(part, str) and (
        part.global_name in names
        or any(isinstance(node, GlobalVar) and node.name in names for node in _walk(part.func)))
        for part in _value_parts(value))


def _refuse_gradients(checked: IRModule, exprs: list[Any], var_types: dict[Any, Any]
                      ) -> None:
    """Raise the AD pass's located ``RelayError`` when the gradient calls of ``checked`` or
    of ``exprs`` (type-checked with ``var_types``) cannot be expanded (rule 8): the checks
    that do not run a cell (``:check``, ``:type``, ``:derive``) refuse what a cell would."""
    from relay_ref.repl import expand_gradient_calls

    expand_gradient_calls(checked, exprs, var_types)


def _mentioned(node: Any) -> set[str]:
    """The names of the globals, types and constructors that the IR ``node`` (a function, a
    type definition) mentions."""
    from relay_ref.repl import GlobalTypeVar, GlobalVar

    names: set[str] = set()
    for n in _walk(node):
        if isinstance(n, GlobalVar | GlobalTypeVar):
            names.add(n.name)
        elif type(n).__name__ == "Constructor":
            names.add(n.name)
    return names


def _value_mentions(value: Any) -> set[str]:
    """The names of the globals, types and constructors that ``value`` may call or holds
    values of: its closures' code (``_mentioned``) and global names, its ADT values' types
    (see ``_value_parts``)."""
    names: set[str] = set()
    for part in _value_parts(value):
        if isinstance(part, str):
            names.add(part)
            continue
        if part.global_name is not None:
            names.add(part.global_name)
        names |= _mentioned(part.func)
    return names


def _reached(roots: set[str], mod: IRModule, among: set[str]) -> set[str]:
    """The names of ``among`` (globals and ADTs of ``mod``) in ``roots`` or mentioned,
    directly or not, by one of those."""
    todo = list(roots & among)
    reached: set[str] = set()
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        node = mod.functions.get(name) or mod.type_definitions[name]
        todo.extend(_mentioned(node) & among)
    return reached


def _without(gen: IRModule, names: set[str]) -> IRModule:
    """``gen`` (``Session.generated``) without the globals and ADTs named in ``names``."""
    from dataclasses import replace

    if not names & (gen.functions.keys() | gen.type_definitions.keys()):
        return gen
    return replace(gen, functions={n: f for n, f in gen.functions.items() if n not in names},
                   type_definitions={n: t for n, t in gen.type_definitions.items()
                                     if n not in names},
                   global_types={n: t for n, t in gen.global_types.items() if n not in names})


def _mentions_type(ty: Any, names: set[str]) -> bool:
    """Whether the type ``ty`` mentions an ADT named in ``names``."""
    from relay_ref.repl import GlobalTypeVar

    return ty is not None and any(isinstance(node, GlobalTypeVar) and node.name in names
                                  for node in _walk(ty))


def _split_trace(result: Any) -> tuple[Any, list[Any]]:
    """Split what ``evaluate(..., trace=True)`` returns into ``(value, events)``."""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], list):
        return result[0], result[1]
    return result, []


def _let_of(var: Any, value: Any) -> Any:
    """``let %var = value; %var``."""
    from relay_ref.repl import Let

    return Let(var, value, var, span=getattr(value, "span", None))


def _fold_bindings(program: Any) -> Any:
    """The program whose expression is ``let %x = e; ...; expr`` and has no bindings."""
    from dataclasses import replace

    from relay_ref.repl import Let

    body = program.expr
    for var, value in reversed(program.bindings):
        span = var.span.merge(body.span) if var.span is not None else body.span
        body = Let(var, value, body, span=span)
    return replace(program, expr=body, bindings=())
