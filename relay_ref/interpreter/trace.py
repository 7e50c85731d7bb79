"""Evaluation traces for teaching: which rule derived each judgement, and with what values.

``rr.evaluate(prog, trace=True)`` returns ``(value, events)``; each ``TraceEvent`` holds the
rule's name (as in spec/semantics.md: ``E-Let``, ``E-App-Rec``, ``E-Match`` ...), the
expression it was applied to and its depth in the derivation. With ``trace="values"`` each
event also holds the value of its judgement ``ρ; σ ⊢ e ⇒ v; σ'`` and what the rule did to
the environment or the store (``detail``), and each ``match`` is followed by the
pattern-matching rules (P-Ctor, P-Tuple, P-Var, P-Wild) that chose its clause.

**Trace order** (spec/semantics.md section 5 says the same). A trace lists the derivation
tree in pre-order: each judgement's line comes before the lines of its premises, which are
indented one level deeper and listed in the order they are evaluated (left to right, the
store threaded in that order). The body of a ``let``, the branch an ``if`` takes, the body
of the clause a ``match`` takes (after the pattern-matching rules that chose it) and the
body of a called function are premises too. A rule that is chosen only once some premises
are evaluated (E-If-True or E-If-False by the condition's value; E-App-Closure, E-App-Rec
or E-App-Ctor by the callee's value; E-Match by the first clause that matches) is still
listed above those premises: a line is written where its judgement starts and names the
rule that concluded it. The plain trace leaves E-Shared out (a shared node's first use
shows the rule for its form, one level deeper; a later use shows nothing); the value trace
shows E-Shared at both. In the value trace a ``match`` lists, before the pattern rules of
the clause it takes, each clause that failed by its first failing step (a ``P-Ctor`` whose
constructor differs from the value's).

**Stuck evaluations.** When evaluation gets stuck the trace stops there: the judgements it
was deriving (none concluded) keep their lines, naming the rule they were applying and, in
the value trace, ``⇒ stuck``; the last line, one level below the judgement that got stuck,
names the stuck rule (``E-Match-Fail``, ``Stuck-Depth``, ``Stuck-Op`` ...; the rule of that
judgement when the spec names none) and its message. A ``match`` that no clause matches is
itself written ``E-Match-Fail``. The ``RelayRuntimeError`` carries these events as
``err.trace``.

``format_trace`` renders events one per line, indented by depth (plain)::

    E-App-Closure  @main(...)
      E-Let  let %x = 1; ...
        E-Const  1

and, for a value trace, each line with the value and the detail::

    E-Let  let %x = 1; %x + 2 ⇒ 3   ρ[%x ↦ 1]
      E-Const  1 ⇒ 1
      E-App-Op  %x + 2 ⇒ 3

``trace_html`` is the same text for Jupyter, each rule name a tag whose tooltip is the rule
as the spec writes it (``relay_ref.rules.rule_html``). Both are linear in the number of
events and bounded per line: expressions and values are elided past a width, tensors of
more than a few elements show their type, environments past a few entries a count.

``TracingInterpreter`` is the layer that records them, around the rules of
``relay_ref.interpreter.eval``, which know nothing of it: it re-implements only ``eval``'s
dispatch (each premise becomes a node of the derivation), sends every premise through
``eval`` (``eval_call``, ``eval_args``), and names each node's rule from the method that
derived it or, for E-If-True/E-If-False, from the condition's value.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay_ref.interpreter import eval as _eval
from relay_ref.interpreter.eval import BUSY, MISSING, Interpreter
from relay_ref.interpreter.shapes import SHAPE_ENV
from relay_ref.interpreter.stuck import Stuck
from relay_ref.interpreter.values import (
    Closure,
    ConstructorValue,
    RecClosure,
    RefValue,
    Value,
    tensor_to_text,
)
from relay_ref.ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.type_text import shape_to_text
from relay_ref.syntax.short_text import EXPR_WIDTH, graph_names, pattern_text, short_text

__all__ = ["STUCK", "TraceEvent", "TracingInterpreter", "format_trace", "short_text",
           "trace_html"]

_NO_VALUE: Any = None  # an event of a plain trace holds no value


class _StuckValue:
    """The value of a judgement that got stuck (``STUCK``): it has none."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "STUCK"


STUCK: Any = _StuckValue()


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """Rule ``rule`` was applied to ``expr`` at derivation depth ``depth`` (1 = outermost).

    In a value trace ``value`` is the judgement's value and ``detail`` what the rule shows
    besides it, a tuple whose first item says what: ``("bind", ((var, value), ...))`` the
    variables bound (E-Let, E-App-Closure, E-App-Rec, P-Var), ``("captured", env)`` a
    closure's environment (E-Fn, E-Let-Rec: also ``var``), ``("store", ℓ, v)`` σ[ℓ ↦ v]
    (E-Ref, E-Write), ``("load", ℓ, v)`` σ(ℓ) = v (E-Read), ``("clause", k, n)`` the
    clause taken (E-Match), ``("first",)`` / ``("reused",)`` (E-Shared), ``("fail", k, n)``
    the first failing step of clause ``k`` of ``n`` (P-Ctor), ``("stuck", message)`` the
    stuck rule that ends a stuck trace (in plain traces too). A pattern rule's ``expr`` is
    the pattern and ``value`` the value it matched. A judgement that got stuck has the value
    ``STUCK`` (value traces). Store contents are the values at the time of the rule (values
    are immutable; a reference inside one is shown by its location's name)."""

    rule: str
    expr: Expr | Pattern | None
    depth: int
    value: Value = _NO_VALUE
    detail: tuple = ()
    #: The printer's ``%N`` names of the program's shared nodes (``graph_names``), one
    #: mapping for the whole trace: summaries write a shared node by its name.
    names: Mapping[int, str] | None = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        """A one-line summary of the expression (at most 70 characters;
        ``relay_ref.syntax.short_text``)."""
        return short_text(self.expr, EXPR_WIDTH, self.names)

    def __str__(self) -> str:
        return f"{self.rule}  {self.text}"


# -- the tracing layer ---------------------------------------------------------------------------

class _Node:
    """A judgement being derived: its event's slot, the values of its premises so far (in
    evaluation order), the rule once known, and the value trace's detail."""

    __slots__ = ("depth", "detail", "expr", "premises", "rule", "slot")

    def __init__(self, slot: int, expr: Expr | None, depth: int) -> None:
        self.slot = slot
        self.expr = expr
        self.depth = depth
        self.premises: list[Value] = []
        self.rule: str | None = None
        self.detail: tuple = ()


class TracingInterpreter(Interpreter):
    """An ``Interpreter`` that records the derivation: one ``TraceEvent`` per judgement.

    ``eval`` opens a node (reserving its event's slot, so events come in pre-order), derives
    the judgement by the same rule tables as ``Interpreter.eval`` but evaluates a step's
    continuation as a premise (a sub-derivation) instead of looping, and closes the node
    with its rule and value. ``values`` selects the value trace."""

    def __init__(self, module: IRModule | None = None, roots: tuple[Expr, ...] = (),
                 max_depth: int | None = None, checked: bool = True,
                 values: bool = False) -> None:
        super().__init__(module, roots, max_depth, checked)
        self.values = values
        self.events: list[TraceEvent | None] = []
        self.depth = 0
        self._nodes: list[_Node] = []
        self._matching = False
        self._stuck: Stuck | None = None  # the stuck state already written, if any
        #: The printer's %N names of the shared nodes (none: no names needed).
        self.names: dict[int, str] | None = _shared_names(self.module, roots) \
            if self.shared else None

    def trace(self) -> list[TraceEvent]:
        """The events recorded so far, in derivation order."""
        return [e for e in self.events if e is not None]

    # -- nodes of the derivation ------------------------------------------------------------
    def _open(self, expr: Expr | None, depth: int) -> _Node:
        node = _Node(len(self.events), expr, depth)
        self.events.append(None)  # filled when the node concludes
        self._nodes.append(node)
        return node

    def _conclude(self, node: _Node, value: Value, env: dict | None) -> None:
        """Record ``node``'s event and hand its value to the enclosing node as a premise."""
        nodes = self._nodes
        nodes.pop()
        if nodes:
            nodes[-1].premises.append(value)
        rule = node.rule or _rule_of(node)
        if rule == "E-Shared" and not self.values:
            return  # the plain trace shows the rule for the node's form only
        if self.values:
            detail = node.detail or _detail(rule, node, value, env)
            self.events[node.slot] = TraceEvent(rule, node.expr, node.depth, value, detail,
                                                self.names)
        else:
            self.events[node.slot] = TraceEvent(rule, node.expr, node.depth, names=self.names)

    def _fail(self, node: _Node, stuck: Stuck, env: dict | None) -> None:
        """``node``'s judgement did not conclude: ``stuck`` unwinds through it. The innermost
        such node (the first to see ``stuck``) is followed by the stuck rule's event, one
        level deeper, after its premises; every such node gets its line (its rule, value
        ``STUCK``, a binding detail when its premises made one)."""
        self._nodes.pop()
        innermost = self._stuck is not stuck
        rule = node.rule or _open_rule(node)
        if innermost:
            self._stuck = stuck
            if stuck.rule == "E-Match-Fail" and type(node.expr) is Match:
                rule = "E-Match-Fail"
            self.events.append(TraceEvent(stuck.rule or rule, node.expr, node.depth + 1,
                                          STUCK if self.values else _NO_VALUE,
                                          ("stuck", stuck.message), self.names))
        if rule == "E-Shared" and not self.values:
            return
        if not self.values:
            self.events[node.slot] = TraceEvent(rule, node.expr, node.depth, names=self.names)
            return
        detail = _detail(rule, node, STUCK, env) if rule in _BINDING_RULES else ()
        self.events[node.slot] = TraceEvent(rule, node.expr, node.depth, STUCK, detail,
                                            self.names)

    def _name(self, rule: str) -> None:
        """The innermost node's rule is ``rule``, unless a more specific rule named it."""
        node = self._nodes[-1] if self._nodes else None
        if node is not None and node.rule is None:
            node.rule = rule

    # -- eval: each premise a node ----------------------------------------------------------
    def eval(self, expr: Expr, env: dict) -> Value:
        self.depth += 1
        node = self._open(expr, self.depth)
        try:
            value = self._derive(expr, env, node)
        except Stuck as stuck:
            self._fail(node, stuck, env)
            raise
        except BaseException:
            self._nodes.pop()
            raise
        finally:
            self.depth -= 1
        self._conclude(node, value, env)
        return value

    def _derive(self, expr: Expr, env: dict, node: _Node) -> Value:
        """``Interpreter.eval``'s dispatch, with a step's continuation as a premise."""
        if self.shared and expr in self.shared:          # E-Shared (3.18)
            known = env.get(expr, MISSING)
            if known is MISSING:
                node.rule, node.detail = "E-Shared", ("first",)
                return self.e_shared(expr, env)
            if known is not BUSY:
                node.rule, node.detail = "E-Shared", ("reused",)
                return known
        rule = _eval._RULES.get(type(expr))
        if rule is not None:
            return rule(self, expr, env)
        step = _eval._STEPS.get(type(expr))
        if step is None:
            raise Stuck(f"cannot evaluate {type(expr).__name__}", getattr(expr, "span", None))
        if type(expr) is Let:
            return self.eval(step(self, expr, env), env)
        shapes = env.get(SHAPE_ENV)                      # a branch's shape variables are
        value = self.eval(step(self, expr, env), env)    # its own (Shape-MatchCast)
        if env.get(SHAPE_ENV) is not shapes:
            if shapes is None:
                del env[SHAPE_ENV]
            else:
                env[SHAPE_ENV] = shapes
        return value

    def eval_call(self, expr: Call, env: dict) -> tuple[Value, list[Value]]:
        return self.eval(expr.op, env), [self.eval(a, env) for a in expr.args]

    def eval_args(self, args: tuple[Expr, ...], env: dict) -> list[Value]:
        return [self.eval(a, env) for a in args]

    # -- the rules whose name the dispatch does not tell ------------------------------------
    def e_let_rec(self, expr: Let, env: dict) -> Expr:
        self._name("E-Let-Rec")
        return super().e_let_rec(expr, env)

    def e_app_rec(self, fn: RecClosure, args: list[Value], call: Call | None) -> Value:
        self._name("E-App-Rec")  # before E-App-Closure, which it applies
        return super().e_app_rec(fn, args, call)

    def e_app_closure(self, fn: Closure, args: list[Value], call: Call | None,
                      frame: dict | None = None) -> Value:
        self._name("E-App-Closure")
        return super().e_app_closure(fn, args, call, frame)

    def e_app_ctor(self, fn: Constructor, args: list[Value], call: Call | None) -> Value:
        self._name("E-App-Ctor")
        return super().e_app_ctor(fn, args, call)

    def e_app_op(self, expr: Call, env: dict) -> Value:
        self._name("E-App-Op")
        return super().e_app_op(expr, env)

    def run_op(self, name: str, args: list[Value], attrs: object, call: Call | None) -> Value:
        self._name("E-App-Op")
        return super().run_op(name, args, attrs, call)

    def apply(self, fn: Value, args: list[Value], call: Call | None) -> Value:
        if call is not None:
            return super().apply(fn, args, call)
        # A call from the host (``@main``'s): a judgement of its own, at the current depth.
        node = self._open(None, self.depth)
        node.premises = [fn, *args]
        try:
            value = super().apply(fn, args, None)
        except Stuck as stuck:
            self._fail(node, stuck, None)
            raise
        except BaseException:
            self._nodes.pop()
            raise
        self._conclude(node, value, None)
        return value

    def match_pattern(self, pattern: Pattern, value: Value, env: dict) -> bool:
        if not self.values or self._matching:
            return super().match_pattern(pattern, value, env)
        self._matching = True  # sub-patterns: the walk below lists them
        try:
            matched = super().match_pattern(pattern, value, env)
        finally:
            self._matching = False
        node = self._nodes[-1]
        if type(node.expr) is not Match:
            return matched
        clauses = node.expr.clauses
        k = next(i for i, c in enumerate(clauses) if c.lhs is pattern)
        if matched:
            node.detail = ("clause", k + 1, len(clauses))
            self.events.extend(_pattern_events(pattern, value, env, node.depth + 1))
        else:
            pat, val = _first_failure(pattern, value)
            self.events.append(TraceEvent("P-Ctor", pat, node.depth + 1, val,
                                          ("fail", k + 1, len(clauses))))
        return matched


def _shared_names(module: IRModule, roots: tuple[Expr, ...]) -> dict[int, str]:
    """The ``%N`` names ``astext`` gives the shared nodes of ``module`` and of ``roots``
    (expressions evaluated outside it), for summaries (``short_text``)."""
    names = graph_names(module)
    for root in roots:
        names.update(graph_names(root))
    return names


def _rule_of(node: _Node) -> str:
    """The rule of a node no method named: by the expression's class; E-If-True/False by the
    condition's value (the first premise)."""
    expr = node.expr
    kind = type(expr)
    if kind is If:
        return "E-If-True" if node.premises and node.premises[0] else "E-If-False"
    return _RULE_NAMES.get(kind, kind.__name__)


def _open_rule(node: _Node) -> str:
    """The rule a judgement that did not conclude was applying: as ``_rule_of``, but an
    ``if`` whose condition has no value yet is ``E-If-*`` (either)."""
    if type(node.expr) is If and not node.premises:
        return "E-If-*"
    return _rule_of(node)


#: Rules whose value-trace detail is a binding made from their premises (a stuck judgement
#: shows it too: the environment its stuck premise was evaluated in).
_BINDING_RULES = frozenset({"E-Let", "E-Let-Rec", "E-App-Closure", "E-App-Rec"})


_RULE_NAMES: dict[type, str] = {
    Var: "E-Var", GlobalVar: "E-Global", Constant: "E-Const", Tuple: "E-Tuple",
    TupleGetItem: "E-Proj", Let: "E-Let", Function: "E-Fn", Call: "E-App", Op: "E-Op",
    Constructor: "E-Ctor", Match: "E-Match", RefCreate: "E-Ref", RefRead: "E-Read",
    RefWrite: "E-Write",
}


def _detail(rule: str, node: _Node, value: Value, env: dict | None) -> tuple:
    """What the value trace shows for ``rule`` besides the value (see ``TraceEvent``)."""
    premises = node.premises
    if rule == "E-Let" and premises:
        return ("bind", ((node.expr.var, premises[0]),))
    if rule == "E-Let-Rec" and env is not None:
        rec = env.get(node.expr.var)
        if type(rec) is RecClosure:
            return ("captured", _vars_only(rec.closure.env), node.expr.var, rec)
    if rule == "E-Fn" and isinstance(value, Closure):
        return ("captured", _vars_only(value.env))
    if rule in ("E-App-Closure", "E-App-Rec") and premises:
        fn = premises[0]
        if isinstance(fn, RecClosure):  # E-App-Rec: ρ'[y ↦ r][xi ↦ vi]
            params = tuple(zip(fn.closure.func.params, premises[1:], strict=False))
            return ("bind", ((fn.var, fn), *params))
        if isinstance(fn, Closure):
            return ("bind", tuple(zip(fn.func.params, premises[1:], strict=False)))
        return ()
    if rule == "E-Ref":
        return ("store", value, premises[0] if premises else None)
    if rule == "E-Read" and premises:
        return ("load", premises[0], value)
    if rule == "E-Write" and len(premises) >= 2:
        return ("store", premises[0], premises[1])
    return ()


def _vars_only(env: dict) -> dict:
    """A closure's captured variables (not the shared nodes it captures, E-Shared 3.18)."""
    return {k: v for k, v in env.items() if type(k) is Var and k is not SHAPE_ENV}


def _first_failure(pattern: Pattern, value: Value) -> tuple[Pattern, Value]:
    """The first step, in pre-order, at which ``value`` fails to match ``pattern``: a
    constructor pattern meeting a value of another constructor (no rule applies), with the
    value there (the whole pattern and value if no such step is found)."""
    stack: list[tuple[Pattern, Value]] = [(pattern, value)]
    while stack:
        pat, val = stack.pop()
        kind = type(pat)
        if kind is PatternConstructor:
            if type(val) is not ConstructorValue or val.constructor.tag != pat.constructor.tag:
                return pat, val
            stack.extend(reversed(list(zip(pat.patterns, val.fields, strict=False))))
        elif kind is PatternTuple and type(val) is tuple:
            stack.extend(reversed(list(zip(pat.patterns, val, strict=False))))
    return pattern, value


def _pattern_events(pattern: Pattern, value: Value, env: dict,
                    depth: int) -> list[TraceEvent]:
    """The pattern-matching derivation ``value ▷ pattern ⊣ θ`` of a pattern that matched,
    one event per rule (P-Ctor, P-Tuple, P-Var, P-Wild) in pre-order; P-Var's binding is
    read from ``env``, where matching put it."""
    out: list[TraceEvent] = []
    stack: list[tuple[Pattern, Value, int]] = [(pattern, value, depth)]
    while stack:
        pat, val, d = stack.pop()
        kind = type(pat)
        if kind is PatternConstructor:
            out.append(TraceEvent("P-Ctor", pat, d, val))
            fields = val.fields if type(val) is ConstructorValue else ()
            stack.extend(reversed([(p, f, d + 1) for p, f in zip(pat.patterns, fields,
                                                                   strict=False)]))
        elif kind is PatternTuple:
            out.append(TraceEvent("P-Tuple", pat, d, val))
            fields = val if type(val) is tuple else ()
            stack.extend(reversed([(p, f, d + 1) for p, f in zip(pat.patterns, fields,
                                                                   strict=False)]))
        elif kind is PatternVar:
            out.append(TraceEvent("P-Var", pat, d, val, ("bind", ((pat.var, env.get(
                pat.var, val)),))))
        else:
            out.append(TraceEvent("P-Wild", pat, d, val))
    return out


# -- rendering -----------------------------------------------------------------------------------

MAX_INDENT = 40
"""Depth levels shown as indentation in ``format_trace``; deeper ones are numbered."""
VALUE_EXPR_WIDTH = 50
"""Characters of an expression's summary in a value trace (the value follows)."""
VALUE_WIDTH = 40
"""Characters of a value in a value trace (bindings and store contents: ``ENTRY_WIDTH``)."""
ENTRY_WIDTH = 32
MAX_ENTRIES = 4
"""Entries of an environment or a binding list shown; the rest are counted."""
SMALL_TENSOR = 6
"""Tensors of at most this many elements are written out; larger ones show their type."""
STUCK_WIDTH = 120
"""Characters of a stuck state's message on the line that ends a stuck trace."""


def format_trace(events: list[TraceEvent], limit: int | None = None,
                 values: bool | None = None, colour: bool = False) -> str:
    """One line per event, indented two spaces per depth level; at most ``limit`` lines
    (then a line saying how many were left out, and, for a stuck trace, its last line: the
    stuck rule). Beyond ``MAX_INDENT`` levels the depth is
    written as a number (``[depth 812]``) instead, so the output stays linear in the
    number of events however deep the derivation. ``values`` (default: whether the events
    hold values, ``trace="values"``) adds each judgement's value and detail; ``colour``
    writes rule names in bold (ANSI, for a terminal)."""
    return "\n".join(_lines(events, limit, values, _ansi_line if colour else _plain_line))


def trace_html(events: list[TraceEvent], limit: int | None = None,
               values: bool | None = None) -> str:
    """``format_trace``'s text as HTML for Jupyter: a ``<pre>`` block whose rule names are
    ``relay_ref.rules.rule_html`` tags (the rule's text as a tooltip)."""
    from relay_ref.rules import rule_html

    def line(indent: str, rule: str, rest: str) -> str:
        return f"{html.escape(indent)}{rule_html(rule)}{html.escape(rest)}"

    body = "\n".join(_lines(events, limit, values, line))
    return f'<pre class="relay-trace" style="margin: 0;">{body}</pre>'


def _plain_line(indent: str, rule: str, rest: str) -> str:
    return f"{indent}{rule}{rest}"


def _ansi_line(indent: str, rule: str, rest: str) -> str:
    return f"{indent}\x1b[1;35m{rule}\x1b[0m{rest}"


def _lines(events: list[TraceEvent], limit: int | None, values: bool | None,
           line: Any) -> list[str]:
    cut = limit is not None and len(events) > limit
    stuck = events[-1] if cut and _is_stuck(events[-1]) else None
    shown = events[:limit] if cut else events
    if values is None:
        values = any(e.value is not _NO_VALUE or (e.detail and not _is_stuck(e))
                     for e in shown[:64])
    base = min((e.depth for e in shown), default=0)
    names = _Locations()
    out = []

    def write(e: TraceEvent) -> None:
        if _is_stuck(e):
            rest = f"  stuck: {_cut(e.detail[1], STUCK_WIDTH)}"
        else:
            rest = _value_text(e, names) if values else f"  {e.text}"
        out.append(line(_indent(e.depth - base), e.rule, rest))

    for e in shown:
        write(e)
    if cut:
        out.append(f"... {len(events) - limit - (stuck is not None)} more steps")
    if stuck is not None:  # a stuck trace ends with its stuck rule, however long
        write(stuck)
    return out


def _is_stuck(e: TraceEvent) -> bool:
    return bool(e.detail) and e.detail[0] == "stuck"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _indent(depth: int) -> str:
    if depth <= MAX_INDENT:
        return "  " * depth
    return "  " * MAX_INDENT + f"[depth {depth}] "


def _value_text(e: TraceEvent, names: _Locations) -> str:
    """What follows the rule name on a value trace's line."""
    expr = e.expr
    if isinstance(expr, Pattern):                      # v ▷ p ⊣ θ
        text = f"  {short_value(e.value, names)} ▷ {pattern_text(expr, EXPR_WIDTH)}"
        if e.detail and e.detail[0] == "fail":       # no rule applies: the clause fails
            ctor = (f"{e.value.constructor.name} is not {expr.constructor.name}"
                    if type(e.value) is ConstructorValue and type(expr) is PatternConstructor
                    else "no rule applies")
            text += f"   fails: {ctor} (clause {e.detail[1]} of {e.detail[2]})"
        elif e.detail:
            text += " ⊣ " + _bindings(e.detail[1], names, braces=True)
        return text
    summary = short_text(expr, VALUE_EXPR_WIDTH, e.names, cut="…")
    text = f"  {summary} ⇒ {short_value(e.value, names)}"
    detail = e.detail
    if not detail:
        return text
    what = detail[0]
    if what == "bind":
        if detail[1]:
            prime = "'" if e.rule in ("E-App-Closure", "E-App-Rec") else ""
            text += f"   ρ{prime}[{_bindings(detail[1], names)}]"
    elif what == "captured":
        if len(detail) > 3:  # E-Let-Rec: the variable, bound to the recursive closure
            text += f"   ρ[{_bindings(((detail[2], detail[3]),), names)}]"
        text += f"   captured {_bindings(tuple(detail[1].items()), names, braces=True)}"
    elif what == "store":
        text += f"   σ[{names.name(detail[1])} ↦ {short_value(detail[2], names, ENTRY_WIDTH)}]"
    elif what == "load":
        text += f"   σ({names.name(detail[1])}) = {short_value(detail[2], names, ENTRY_WIDTH)}"
    elif what == "clause":
        text += f"   clause {detail[1]} of {detail[2]}"
    elif what == "first":
        text += "   first use: evaluated, remembered"
    elif what == "reused":
        text += "   reused"
    return text


def _bindings(pairs: tuple, names: _Locations, braces: bool = False) -> str:
    """``%x ↦ 1, %y ↦ 2, … (3 more)``: at most ``MAX_ENTRIES`` entries."""
    parts = [f"%{var.name_hint} ↦ {short_value(val, names, ENTRY_WIDTH)}"
             for var, val in pairs[:MAX_ENTRIES]]
    if len(pairs) > MAX_ENTRIES:
        parts.append(f"… ({len(pairs) - MAX_ENTRIES} more)")
    text = ", ".join(parts)
    return "{" + text + "}" if braces else text


class _Locations:
    """Names of store locations, ``ℓ0``, ``ℓ1`` ..., by first appearance in the output."""

    def __init__(self) -> None:
        self.names: dict[RefValue, str] = {}

    def name(self, cell: Any) -> str:
        if type(cell) is not RefValue:
            return "?"
        found = self.names.get(cell)
        if found is None:
            found = self.names[cell] = f"ℓ{len(self.names)}"
        return found


def short_value(value: Value, names: _Locations | None = None,
                width: int = VALUE_WIDTH) -> str:
    """``value`` in Relay syntax, cut to ``width`` characters (``…``), in time bounded by
    ``width`` whatever its size: tensors of more than ``SMALL_TENSOR`` elements show their
    type, references their location's name (``ℓ0``), functions a short signature."""
    names = names if names is not None else _Locations()
    out: list[str] = []
    size = 0
    stack: list[Any] = [value]
    while stack and size <= width:
        item = stack.pop()
        if type(item) is str:
            piece = item
        elif isinstance(item, np.ndarray | np.generic):
            arr = np.asarray(item)
            # one line: NumPy breaks the rows of a matrix ([[0f, 1f],\n [2f, 3f]])
            piece = (" ".join(tensor_to_text(arr, threshold=SMALL_TENSOR).split())
                     if arr.size <= SMALL_TENSOR
                     else f"<Tensor[{shape_to_text(arr.shape)}, {arr.dtype.name}]>")
        elif type(item) is tuple:
            piece = "(" if item else "()"
            if item:
                parts: list[Any] = []
                for i, f in enumerate(item):
                    parts.extend((", ", f) if i else (f,))
                parts.append(",)" if len(item) == 1 else ")")
                stack.extend(reversed(parts))
        elif type(item) is ConstructorValue:
            piece = item.constructor.name
            if item.fields:
                parts = ["("]
                for i, f in enumerate(item.fields):
                    parts.extend((", ", f) if i else (f,))
                parts.append(")")
                stack.extend(reversed(parts))
        elif type(item) is RefValue:
            piece = names.name(item)
        elif isinstance(item, RecClosure):
            piece = f"<closure %{item.var.name_hint} = {_signature(item.closure.func)}>"
        elif isinstance(item, Closure):
            piece = (f"<closure @{item.global_name}>" if item.global_name
                     else f"<closure {_signature(item.func)}>")
        elif type(item) is Constructor:
            piece = f"<constructor {item.name}>"
        elif type(item) is Op:
            piece = f"<operator {item.name}>"
        elif item is None:
            piece = "?"
        elif item is STUCK:
            piece = "stuck"
        else:
            piece = f"<{type(item).__name__}>"
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    if stack or len(text) > width:
        text = text[: width - 1] + "…"
    return text


def _signature(func: Function) -> str:
    return "fn (" + ", ".join(f"%{p.name_hint}" for p in func.params) + ")"
