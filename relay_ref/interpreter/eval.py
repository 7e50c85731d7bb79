"""The definitional interpreter: Relay's big-step semantics (spec/semantics.md), one case per
rule.

``Interpreter.eval(expr, env)`` is the judgement ``env ⊢ expr ⇒ value``: it applies the rule
for the expression's class, one method per rule (``e_var`` ... ``e_write``, in the grammar's
order, each citing its rule), picked from a table rather than by a ``match`` because a table
lookup is as cheap for the last class as for the first. Call-by-value, left to right.
Invariants:

* ``env`` is the frame of the current function activation: a dict from ``Var`` to value.
  ``let`` and ``match`` extend it in place (binders are distinct ``Var`` objects, so this
  is the same as extending a copy); a call starts a new frame from the closure's captured
  values (spec 2.1).
* The store of the semantics is the heap of ``RefValue`` cells: a cell's identity is its
  location, its ``value`` the store's content there (spec 2.2).
* A node reached through more than one edge (a graph binding ``%0 = e;`` used twice) is
  evaluated at its first use in each activation and its value reused, as if let-bound
  there (spec 2.3); it is remembered in the frame under the node itself.
* Rules whose conclusion is the value of a sub-expression evaluated in the same frame
  (E-Let, E-If-*, E-Match) continue the loop with that sub-expression instead of recursing,
  so long ``let`` chains do not deepen the Python stack. Calls do recurse; ``evaluate`` runs
  the interpreter on a thread with a large stack and a recursion limit sized for
  ``max_depth`` (default ``MAX_DEPTH`` = 10^6) nested calls; ``apply`` counts them and a
  deeper one is stuck at the call (Stuck-Depth, spec 4).
* Ill-typed programs (``evaluate(..., typecheck=False)``) get stuck, located, at the node
  that cannot proceed (Stuck-Proj, -App, -Arity, -If, -Match, -Ref, -Op; spec 4): the
  checks are type tests on values the rule already has in hand, except Stuck-Op, which
  checks operator arguments against the type relation only when ``checked`` is false.
* A stuck evaluation (no clause matched, an operator failing at run time, a shape that
  contradicts an annotation) raises ``RelayRuntimeError`` with the expression's span and
  the Relay call stack of globals; nothing else escapes ``evaluate`` for a well-typed
  program (except ``KeyboardInterrupt`` when interrupted).
"""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import ERROR, Diagnostic, Note, RelayRuntimeError
from relay_ref.interpreter.args import ArgumentError, convert_argument
from relay_ref.interpreter.values import (
    Closure,
    ConstructorValue,
    RecClosure,
    RefValue,
    Value,
    value_to_text,
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
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.span import Span
from relay_ref.ir.type_text import shape_to_text, type_to_text
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ir.visitor import free_vars, post_order

__all__ = ["MAX_DEPTH", "Interpreter", "checked_module", "evaluate", "param_types"]


class Stuck(Exception):
    """Evaluation cannot proceed (spec section 4). Internal: ``evaluate`` turns it into a
    ``RelayRuntimeError``. ``frames`` collects ``(global name, call-site span)`` pairs while
    the exception unwinds through calls of globals, innermost first."""

    def __init__(self, message: str, span: Span | None, notes: tuple[Note, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.notes = notes
        self.frames: list[tuple[str, Span | None]] = []


class Interrupted(Exception):
    """Raised inside the evaluation when a stop was requested (``request_stop``)."""


class _FnInfo:
    """What the interpreter precomputes once per ``Function`` node."""

    __slots__ = ("free_vars", "param_checks", "ret_check")

    def __init__(self, func: Function) -> None:
        self.free_vars = tuple(free_vars(func))
        self.param_checks = tuple((p, t) for p in func.params
                                  if (t := _static_tensor_type(p.type_annotation)))
        self.ret_check = _static_tensor_type(func.ret_type)


_MISSING = object()
_BUSY = object()  # a shared node whose evaluation is in progress in this frame


class Interpreter:
    """Evaluates expressions of ``module`` (globals, constructors). One instance per
    ``evaluate`` call; its caches are keyed by node identity."""

    tracing = False

    def __init__(self, module: IRModule | None = None, roots: tuple[Expr, ...] = (),
                 max_depth: int | None = None, checked: bool = True) -> None:
        self.module = module if module is not None else IRModule()
        #: Whether the program was type-checked; if not, operator calls check their
        #: arguments first (the other stuck states are cheap enough to check always).
        self.checked = checked
        #: Nesting of function applications (closures) now; at most ``max_depth``.
        self.calls = 0
        self.max_depth = MAX_DEPTH if max_depth is None else max_depth
        self.globals: dict[str, Closure] = {}
        self.fn_info: dict[Function, _FnInfo] = {}
        self.op_calls: dict[Expr, tuple[Callable[..., Any], object]] = {}
        self.shared: frozenset[Expr] = shared_nodes(self.module, roots)
        self.stop_requested = False

    def request_stop(self) -> None:
        """Ask a running evaluation to stop (it raises ``Interrupted`` at its next call)."""
        self.stop_requested = True

    def emit(self, rule: str, expr: Expr) -> None:
        """Record that ``rule`` was applied to ``expr`` (only when ``tracing``)."""

    # -- the judgement env ⊢ expr ⇒ value ------------------------------------------------
    def eval(self, expr: Expr, env: dict) -> Value:
        """The value of ``expr`` in frame ``env`` (which ``let``/``match`` may extend).

        The rule is chosen by the expression's class (the tables ``_RULES`` and ``_STEPS``
        after this class, in the grammar's order). A *step* (E-Let, E-If-*, E-Match) is a
        rule whose conclusion is the value of its last premise, evaluated in the same frame:
        it returns that sub-expression and the loop goes on with it. The other rules return
        the value."""
        shared = self.shared
        while True:
            if shared and expr in shared:                # Sharing (spec 2.3)
                known = env.get(expr, _MISSING)
                if known is _MISSING:
                    return self.eval_shared(expr, env)
                if known is not _BUSY:
                    return known
            rule = _RULES.get(type(expr))
            if rule is not None:
                return rule(self, expr, env)
            step = _STEPS.get(type(expr))
            if step is None:
                raise Stuck(f"cannot evaluate {type(expr).__name__}", _span(expr))
            expr = step(self, expr, env)
            if self.tracing:  # a trace shows the step's premise as a sub-derivation
                return self.eval(expr, env)

    # -- the rules (spec/semantics.md section 3), in the grammar's order ---------------------
    def e_var(self, expr: Var, env: dict) -> Value:
        """E-Var (3.1): the variable's value in the frame."""
        if self.tracing:
            self.emit("E-Var", expr)
        try:
            return env[expr]
        except KeyError:
            raise Stuck(f"unbound variable %{expr.name_hint}", expr.span) from None

    def e_global(self, expr: GlobalVar, env: dict) -> Value:
        """E-Global (3.2): the closure of the global's definition."""
        if self.tracing:
            self.emit("E-Global", expr)
        closure = self.globals.get(expr.name)
        return closure if closure is not None else self.global_closure(expr.name, expr.span)

    def e_const(self, expr: Constant, env: dict) -> Value:
        """E-Const (3.3): the constant's tensor."""
        if self.tracing:
            self.emit("E-Const", expr)
        return expr.data

    def e_tuple(self, expr: Tuple, env: dict) -> Value:
        """E-Tuple (3.4): the fields, left to right."""
        if self.tracing:
            self.emit("E-Tuple", expr)
        return tuple([self.eval(f, env) for f in expr.fields])

    def e_proj(self, expr: TupleGetItem, env: dict) -> Value:
        """E-Proj (3.5): a field of the tuple's value."""
        if self.tracing:
            self.emit("E-Proj", expr)
        value = self.eval(expr.tuple_value, env)
        if type(value) is tuple and expr.index < len(value):
            return value[expr.index]
        raise Stuck(f"cannot take field {expr.index} of "                 # Stuck-Proj (4)
                    f"{_short(value_to_text(value))}: not a tuple with that field", expr.span)

    def e_let(self, expr: Let, env: dict) -> Expr:
        """E-Let-Rec / E-Let (3.6), a step: bind the variable, continue with the body."""
        var, value = expr.var, expr.value
        if type(value) is Function:                      # E-Let-Rec (3.6)
            if self.tracing:
                self.emit("E-Let-Rec", expr)
            env[var] = RecClosure(self.make_closure(value, env, var), var)
        else:                                            # E-Let (3.6)
            if self.tracing:
                self.emit("E-Let", expr)
            env[var] = bound = self.eval(value, env)
            if var.type_annotation is not None:
                self.check_annotation(bound, var, var.type_annotation, value.span)
        return expr.body

    def e_fn(self, expr: Function, env: dict) -> Value:
        """E-Fn (3.7): a closure capturing the values of the free variables."""
        if self.tracing:
            self.emit("E-Fn", expr)
        return self.make_closure(expr, env)

    def e_app(self, expr: Call, env: dict) -> Value:
        """E-App-Op (3.9) for an operator callee; else E-App-* (3.8): the callee, then the
        arguments, then ``apply``."""
        callee = expr.op
        if type(callee) is Op:                           # E-App-Op (3.9)
            values = self.eval_args(expr.args, env)
            if self.tracing:
                self.emit("E-App-Op", expr)
            cached = self.op_calls.get(expr)             # the reference, once per node
            if cached is None:
                cached = self.op_calls[expr] = self.op_reference(callee.name, expr.attrs,
                                                                 expr)
            reference, attrs = cached
            try:
                return reference(values, attrs)
            except Exception as err:
                raise _op_failure(callee.name, err, expr) from None
        # E-App-* (3.8): the callee, then the arguments. A global, variable or constructor
        # callee is an atom (never shared): its rule is applied directly.
        kind = type(callee)
        fn_value = (self.eval(callee, env) if self.tracing else  # its own trace line
                    self.e_global(callee, env) if kind is GlobalVar else
                    self.e_var(callee, env) if kind is Var else
                    self.e_ctor(callee, env) if kind is Constructor else self.eval(callee, env))
        return self.apply(fn_value, self.eval_args(expr.args, env), expr)

    def e_op(self, expr: Op, env: dict) -> Value:
        """E-Op (3.10): an operator is a function value."""
        if self.tracing:
            self.emit("E-Op", expr)
        return expr

    def e_ctor(self, expr: Constructor, env: dict) -> Value:
        """E-Ctor (3.11): a constructor is a function value (nullary ones too)."""
        if self.tracing:
            self.emit("E-Ctor", expr)
        return expr

    def e_if(self, expr: If, env: dict) -> Expr:
        """E-If-True / E-If-False (3.12), a step: the condition (a bool scalar) picks the
        branch to continue with."""
        cond = self.eval(expr.cond, env)
        if type(cond) is not np.ndarray or cond.shape != () or cond.dtype.kind != "b":
            raise Stuck("the condition of `if` must be a bool scalar, got "
                        f"{_short(value_to_text(cond))}", expr.cond.span)
        if cond:                                         # E-If-True (3.12)
            if self.tracing:
                self.emit("E-If-True", expr)
            return expr.true_branch
        if self.tracing:                                 # E-If-False (3.12)
            self.emit("E-If-False", expr)
        return expr.false_branch

    def e_match(self, expr: Match, env: dict) -> Expr:
        """E-Match (3.13), a step: the first clause whose pattern matches the scrutinee
        binds its variables and is continued with; E-Match-Fail (3.14) if none does."""
        scrutinee = self.eval(expr.data, env)
        for clause in expr.clauses:
            if self.match_pattern(clause.lhs, scrutinee, env):
                if self.tracing:
                    self.emit("E-Match", expr)
                return clause.rhs
        raise Stuck("no match clause matched the value "
                    f"{_short(value_to_text(scrutinee))}", expr.span)

    def e_ref(self, expr: RefCreate, env: dict) -> Value:
        """E-Ref (3.15): a fresh cell holding the value."""
        cell = RefValue(self.eval(expr.value, env))
        if self.tracing:
            self.emit("E-Ref", expr)
        return cell

    def e_read(self, expr: RefRead, env: dict) -> Value:
        """E-Read (3.16): the cell's content."""
        cell = self.eval(expr.ref, env)
        if type(cell) is not RefValue:                                     # Stuck-Ref (4)
            raise _not_a_ref("ref_read", cell, expr)
        if self.tracing:
            self.emit("E-Read", expr)
        return cell.value

    def e_write(self, expr: RefWrite, env: dict) -> Value:
        """E-Write (3.17): the cell, then the value stored in it; unit."""
        cell = self.eval(expr.ref, env)
        if type(cell) is not RefValue:                                     # Stuck-Ref (4)
            raise _not_a_ref("ref_write", cell, expr)
        cell.value = self.eval(expr.value, env)
        if self.tracing:
            self.emit("E-Write", expr)
        return ()

    # -- helpers named by the rules --------------------------------------------------------
    def eval_args(self, args: tuple[Expr, ...], env: dict) -> list[Value]:
        """The premises of E-App-*: the values of ``args``, left to right. Variables and
        constants (most arguments) are looked up here as E-Var and E-Const say, saving a
        call of ``eval`` each; ``TracingInterpreter`` sends every argument through ``eval``
        so that the trace shows those rules."""
        values = []
        for arg in args:
            kind = type(arg)
            if kind is Var:                              # E-Var (3.1)
                try:
                    values.append(env[arg])
                except KeyError:
                    raise Stuck(f"unbound variable %{arg.name_hint}", arg.span) from None
            elif kind is Constant:                       # E-Const (3.3)
                values.append(arg.data)
            else:
                values.append(self.eval(arg, env))
        return values

    def eval_shared(self, expr: Expr, env: dict) -> Value:
        """Sharing (2.3): evaluate a shared node once in this frame and remember it."""
        env[expr] = _BUSY
        try:
            value = self.eval(expr, env)
        except BaseException:
            del env[expr]
            raise
        env[expr] = value
        return value

    def global_closure(self, name: str, span: Span | None) -> Closure:
        """E-Global: a global is the closure of its definition with an empty environment."""
        closure = self.globals.get(name)
        if closure is None:
            func = self.module.functions.get(name)
            if func is None:
                raise Stuck(f"undefined global @{name}", span)
            closure = self.globals[name] = Closure({}, func, name)
        return closure

    def info(self, func: Function) -> _FnInfo:
        info = self.fn_info.get(func)
        if info is None:
            info = self.fn_info[func] = _FnInfo(func)
        return info

    def make_closure(self, func: Function, env: dict, rec_var: Var | None = None) -> Closure:
        """E-Fn: capture the current values of ``func``'s free variables (but ``rec_var``,
        which E-App-Rec binds at each call)."""
        captured = {}
        for var in self.info(func).free_vars:
            if var is not rec_var:
                try:
                    captured[var] = env[var]
                except KeyError:
                    raise Stuck(f"unbound variable %{var.name_hint}", var.span) from None
        return Closure(captured, func)

    def apply(self, callee: Value, args: list[Value], call: Call | None) -> Value:
        """E-App-*: apply a function value to argument values."""
        if self.stop_requested:
            raise Interrupted()
        kind = type(callee)
        if kind is Closure:                              # E-App-Closure (3.8)
            func = callee.func
            frame = dict(callee.env)
            rule = "E-App-Closure"
        elif kind is RecClosure:                         # E-App-Rec (3.8)
            func = callee.closure.func
            frame = dict(callee.closure.env)
            frame[callee.var] = callee
            rule = "E-App-Rec"
        elif kind is Constructor:                        # E-App-Ctor (3.8)
            if len(args) != len(callee.inputs):          # Stuck-Arity (4)
                raise Stuck(f"{callee.name} takes {len(callee.inputs)} argument(s), "
                            f"got {len(args)}", _span(call))
            if self.tracing:
                self.emit("E-App-Ctor", call)
            return ConstructorValue(callee, tuple(args))
        elif kind is Op:                                 # E-App-Op (3.9), op as a value
            if self.tracing:
                self.emit("E-App-Op", call)
            return self.run_op(callee.name, args, None, call)
        elif isinstance(callee, Closure):                # E-App-Closure, a subclass (the
            func = callee.func                           # executor's compiled closures)
            frame = dict(callee.env)
            rule = "E-App-Closure"
        elif isinstance(callee, RecClosure):             # E-App-Rec, likewise
            func = callee.closure.func
            frame = dict(callee.closure.env)
            frame[callee.var] = callee
            rule = "E-App-Rec"
        else:                                            # Stuck-App (4)
            raise Stuck(f"cannot call {_short(value_to_text(callee))}: not a function",
                        _span(call))
        if self.tracing:
            self.emit(rule, call)
        depth = self.calls + 1
        if depth > self.max_depth:                       # Stuck-Depth (4)
            raise Stuck(f"recursion deeper than {self.max_depth} calls", _span(call))
        params = func.params
        if len(params) != len(args):                     # Stuck-Arity (4)
            raise Stuck(f"function expects {len(params)} arguments, got {len(args)}",
                        _span(call) or func.span)
        frame.update(zip(params, args, strict=True))  # lengths checked above
        info = self.fn_info.get(func) or self.info(func)
        for param, ty in info.param_checks:
            self.check_annotation(frame[param], param, ty, _span(call))
        name = callee.global_name if isinstance(callee, Closure) else None
        self.calls = depth
        try:
            result = self.eval(func.body, frame)
            if info.ret_check is not None:
                self.check_annotation(result, None, info.ret_check, func.body.span)
        except Stuck as stuck:
            if name is not None:
                stuck.frames.append((name, _span(call)))
            raise
        except RecursionError:                           # Stuck-Depth (4), Python's stack
            stuck = Stuck(f"evaluation nested too deeply for Python's stack at {depth} "
                          f"nested calls (the limit is {self.max_depth} calls; expressions "
                          "nested inside each call use the stack too)", _span(call))
            if name is not None:
                stuck.frames.append((name, _span(call)))
            raise stuck from None
        self.calls = depth - 1  # on a Stuck the evaluation is over: no need to restore
        return result

    def run_op(self, name: str, args: list[Value], attrs: object, call: Call | None) -> Value:
        reference, attrs = self.op_reference(name, attrs, call)
        try:
            return reference(args, attrs)
        except Exception as err:
            raise _op_failure(name, err, call) from None

    def op_reference(self, name: str, attrs: object,
                     call: Call | None) -> tuple[Callable[..., Any], object]:
        """The operator's NumPy reference and attributes (E-App-Op). For a program that was
        not type-checked the reference first checks its arguments against the operator's
        type relation (Stuck-Op): NumPy would happily add a tuple to a tensor."""
        reference, attrs = _op_reference(name, attrs, call)
        if self.checked:
            return reference, attrs
        from relay_ref.ops.registry import get_op

        opdef = get_op(name)

        def checked_reference(values: list[Value], attrs: object) -> Value:
            _check_op_arguments(opdef, values, attrs, call)
            return reference(values, attrs)

        return checked_reference, attrs

    def match_pattern(self, pattern: Pattern, value: Value, env: dict) -> bool:
        """Does ``value`` match ``pattern``? Binds the pattern's variables in ``env``."""
        match pattern:
            case PatternConstructor(constructor=ctor, patterns=pats):   # P-Ctor (3.13)
                if type(value) is not ConstructorValue:                 # Stuck-Match (4)
                    raise _no_match_shape(pattern, ctor.belong_to.name, value)
                vctor = value.constructor
                if vctor is not ctor:
                    if vctor.belong_to.name != ctor.belong_to.name:     # Stuck-Match (4)
                        raise _no_match_shape(pattern, ctor.belong_to.name, value)
                    if vctor.tag != ctor.tag:
                        return False
                if len(pats) != len(value.fields):                      # Stuck-Match (4)
                    raise Stuck(f"pattern {ctor.name} has {len(pats)} field(s), the value "
                                f"{len(value.fields)}", _span(pattern))
                for sub, field_value in zip(pats, value.fields, strict=True):
                    if type(sub) is PatternVar:          # P-Var, inlined (the usual case)
                        env[sub.var] = field_value
                    elif not self.match_pattern(sub, field_value, env):
                        return False
                return True
            case PatternVar(var=var):                                   # P-Var
                env[var] = value
                return True
            case PatternWildcard():                                     # P-Wild
                return True
            case PatternTuple(patterns=pats):                           # P-Tuple
                if type(value) is not tuple or len(value) != len(pats):  # Stuck-Match (4)
                    raise _no_match_shape(pattern, f"a {len(pats)}-tuple", value)
                for sub, field_value in zip(pats, value, strict=True):
                    if not self.match_pattern(sub, field_value, env):
                        return False
                return True
        raise Stuck(f"unknown pattern {type(pattern).__name__}", _span(pattern))

    def check_annotation(self, value: Value, var: Var | None, ty: Type,
                         span: Span | None) -> None:
        """Annotated static dimensions must hold of values whose type had ``?`` (spec 4)."""
        if type(ty) is not TensorType or not ty.shape or type(value) is not np.ndarray:
            return
        if value.ndim == len(ty.shape) and all(
                type(d) is not int or d == n for d, n in zip(ty.shape, value.shape,
                                                             strict=True)):
            return
        what = f"%{var.name_hint}" if var is not None else "the result"
        raise Stuck(f"shape mismatch: {what} is annotated {type_to_text(ty)} but the value "
                    f"has shape {shape_to_text(value.shape)}", span)


#: The rules that return a value, by expression class, in the grammar's order.
_RULES: dict[type, Callable[[Interpreter, Any, dict], Value]] = {
    Var: Interpreter.e_var,
    GlobalVar: Interpreter.e_global,
    Constant: Interpreter.e_const,
    Tuple: Interpreter.e_tuple,
    TupleGetItem: Interpreter.e_proj,
    Function: Interpreter.e_fn,
    Call: Interpreter.e_app,
    Op: Interpreter.e_op,
    Constructor: Interpreter.e_ctor,
    RefCreate: Interpreter.e_ref,
    RefRead: Interpreter.e_read,
    RefWrite: Interpreter.e_write,
}
#: The steps: rules that continue with a sub-expression in the same frame (tail positions).
_STEPS: dict[type, Callable[[Interpreter, Any, dict], Expr]] = {
    Let: Interpreter.e_let,
    If: Interpreter.e_if,
    Match: Interpreter.e_match,
}


class TracingInterpreter(Interpreter):
    """An ``Interpreter`` that records every rule applied (``relay_ref.interpreter.trace``).

    ``depth`` is the nesting of ``eval`` calls, i.e. of derivations: sub-expressions
    evaluated as premises are one deeper than the expression whose rule needs them."""

    tracing = True

    def __init__(self, module: IRModule | None = None, roots: tuple[Expr, ...] = (),
                 max_depth: int | None = None, checked: bool = True) -> None:
        from relay_ref.interpreter.trace import TraceEvent

        super().__init__(module, roots, max_depth, checked)
        self.events: list[TraceEvent] = []
        self.depth = 0
        self._slots: list[int] = []
        self._event = TraceEvent

    def emit(self, rule: str, expr: Expr) -> None:
        # The rule of the innermost ``eval`` fills the slot reserved when it began, so events
        # come in derivation order (a conclusion before its premises) even for rules chosen
        # only after their premises were evaluated (E-If-*, E-App-*, E-Match...).
        event = self._event(rule, expr, self.depth)
        slot = self._slots[-1] if self._slots else -1
        if slot >= 0 and self.events[slot] is None:
            self.events[slot] = event
        else:
            self.events.append(event)

    def eval_args(self, args: tuple[Expr, ...], env: dict) -> list[Value]:
        return [self.eval(a, env) for a in args]

    def eval(self, expr: Expr, env: dict) -> Value:
        self.depth += 1
        self._slots.append(len(self.events))
        self.events.append(None)  # type: ignore[arg-type]  # filled by emit
        try:
            return super().eval(expr, env)
        finally:
            self.depth -= 1
            slot = self._slots.pop()
            if self.events[slot] is None and slot == len(self.events) - 1:
                self.events.pop()  # nothing applied here (a shared value reused)

    def trace(self) -> list:
        """The events recorded so far, in derivation order."""
        return [e for e in self.events if e is not None]


# -- sharing, annotations, operators ---------------------------------------------------------

_ATOMS = (Var, GlobalVar, Op, Constant, Constructor)
_SHARED_CACHE: weakref.WeakKeyDictionary[IRModule, frozenset[Expr]] = (
    weakref.WeakKeyDictionary())


def shared_nodes(module: IRModule, roots: tuple[Expr, ...] = ()) -> frozenset[Expr]:
    """Non-atomic nodes with more than one incoming edge (graph-bound, spec 2.3)."""

    def count(exprs: list[Expr]) -> set[Expr]:
        seen: set[Expr] = set()
        shared: set[Expr] = set()
        for root in exprs:
            for node in post_order(root):
                for kid in children(node):
                    if isinstance(kid, _ATOMS):
                        continue
                    if kid in seen:
                        shared.add(kid)
                    seen.add(kid)
        return shared

    cached = _SHARED_CACHE.get(module)
    if cached is None:
        cached = frozenset(count(list(module.functions.values())))
        _SHARED_CACHE[module] = cached
    if not roots:
        return cached
    return cached | count(list(roots))


def _static_tensor_type(ty: Type | None) -> TensorType | None:
    """``ty`` when it is a tensor type with at least one dimension (worth checking)."""
    if type(ty) is TensorType and ty.shape:
        return ty
    return None


def _op_reference(name: str, attrs: object,
                  call: Call | None) -> tuple[Callable[..., Any], object]:
    from relay_ref.ops.registry import get_op

    try:
        opdef = get_op(name)
    except KeyError:
        raise Stuck(f"unknown operator {name}", _span(call)) from None
    if attrs is None:
        attrs = opdef.attrs()
    return opdef.reference, attrs


def _check_op_arguments(opdef: Any, values: list[Value], attrs: object,
                        call: Call | None) -> None:
    """Stuck-Op for unchecked programs: the argument values' types must satisfy the
    operator's arity and type relation (T-App-Op, checked at run time)."""
    from relay_ref.ops.registry import RelationError

    name = opdef.name
    if opdef.num_inputs >= 0 and len(values) != opdef.num_inputs:
        raise Stuck(f"operator {name} takes {opdef.num_inputs} argument(s), got "
                    f"{len(values)}", _span(call))
    types = []
    for v in values:
        ty = _value_type(v)
        if ty is None:
            raise Stuck(f"operator {name} cannot take {_short(value_to_text(v))}: its "
                        "arguments are tensors or tuples of tensors", _span(call))
        types.append(ty)
    try:
        opdef.relation(types, attrs)
    except RelationError as err:
        message = str(err)
        raise Stuck(message if message.startswith(name) else f"{name}: {message}",
                    _span(call)) from None
    except Exception as err:  # noqa: BLE001 - a relation failing on odd types is stuck
        raise Stuck(f"{name}: arguments of types "
                    f"{', '.join(type_to_text(t) for t in types)} are not accepted "
                    f"({type(err).__name__}: {err})", _span(call)) from None


def _value_type(value: Value) -> Type | None:
    """The type of a tensor or (nested) tuple of tensors; None for other values."""
    if type(value) is np.ndarray:
        return TensorType(tuple(value.shape), value.dtype.name)
    if type(value) is tuple:
        fields = [_value_type(v) for v in value]
        return None if any(f is None for f in fields) else TupleType(tuple(fields))
    return None


def _op_failure(name: str, err: Exception, call: Call | None) -> Exception:
    from relay_ref.ops.registry import OpRuntimeError

    if isinstance(err, Stuck | RecursionError):  # RecursionError: Stuck-Depth in apply
        return err
    message = str(err) if isinstance(err, OpRuntimeError) else f"{name}: {err}"
    if not message.startswith(name):
        message = f"{name}: {message}"
    return Stuck(message, _span(call))


def _span(node: object) -> Span | None:
    return getattr(node, "span", None)


def _not_a_ref(what: str, value: Value, expr: Expr) -> Stuck:
    return Stuck(f"{what} needs a reference, got {_short(value_to_text(value))}", expr.span)


def _no_match_shape(pattern: Pattern, expected: str, value: Value) -> Stuck:
    """Stuck-Match: a pattern met a value of another shape (only in ill-typed programs)."""
    return Stuck(f"the pattern expects {expected}, got {_short(value_to_text(value))}",
                 _span(pattern))


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- arguments (spec/semantics.md 4.1) -------------------------------------------------------

def _host_argument(arg: Any, ty: Type | None, module: IRModule, what: str,
                   span: Span | None, check_functions: bool = True) -> Value:
    """``arg`` converted by the argument rule (A-*, ``relay_ref.interpreter.args``); a
    violation is stuck at ``span`` (the parameter), ``what`` naming it."""
    try:
        return convert_argument(arg, ty, module, check_functions=check_functions)
    except ArgumentError as err:
        raise Stuck(f"{what}: {err.message}", span, err.notes) from None


# -- running -----------------------------------------------------------------------------------

_stack_lock = threading.Lock()


_gc_users = 0
_gc_saved: tuple[int, int, int] = (700, 10, 10)
#: Collector thresholds while evaluations run: evaluation allocates many small objects that
#: stay alive (list cells, frames); the default first threshold (700) makes the collector
#: re-scan them tens of thousands of times for a 100 000-element list.
GC_THRESHOLDS = (100_000, 50, 100)


def _relax_gc(delta: int) -> None:
    """Raise the GC thresholds while at least one evaluation runs; restore them after."""
    global _gc_users, _gc_saved
    with _stack_lock:
        if delta > 0 and _gc_users == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(*GC_THRESHOLDS)
        _gc_users += delta
        if delta < 0 and _gc_users == 0:
            gc.set_threshold(*_gc_saved)


def runtime_error(stuck: Stuck, source_name: str | None = None) -> RelayRuntimeError:
    """The user-facing error for a stuck evaluation, with the Relay call stack as notes.

    When the failing expression lies outside ``source_name`` (in the prelude, say) and a
    call from ``source_name`` led there, the innermost such call site becomes the primary
    location and the failing expression a note: the user's own code is what to fix."""
    stack = tuple(name for name, _ in reversed(stuck.frames))  # outermost first
    span, message, notes = stuck.span, stuck.message, list(stuck.notes)
    if span is not None and source_name is not None and span.source.name != source_name:
        for name, site in stuck.frames:
            if site is not None and site.source.name == source_name:
                notes.append(Note(f"{message} (in @{stuck.frames[0][0]})", span))
                span, message = site, f"call of @{name} failed: {message}"
                break
    if stack:
        notes.append(Note("Relay call stack (innermost last): " + _compress(stack)))
        shown: list[tuple[str, Span]] = []
        for name, site in stuck.frames:  # innermost first; distinct call sites only
            if site is not None and site != span and (name, site) not in shown:
                shown.append((name, site))
            if len(shown) == 4:
                break
        notes.extend(Note(f"@{name} called here", site) for name, site in shown)
    diag = Diagnostic(ERROR, message, span, tuple(notes))
    return RelayRuntimeError([diag], relay_stack=stack)


def _compress(names: tuple[str, ...], max_period: int = 8, max_parts: int = 24) -> str:
    """``@main -> @foldl (x99999) -> @hd``: a call stack as one short line.

    Consecutive repeats of a cycle of up to ``max_period`` globals are collapsed (direct
    recursion ``@f (x9999)``, mutual recursion ``(@g -> @h) (x5000)``), preferring the cycle
    that covers the most calls, then the shortest; if more than ``max_parts`` parts remain,
    the middle ones are elided with their count."""
    parts: list[str] = []
    i, n = 0, len(names)
    while i < n:
        best_p, best_reps = 1, 1
        for p in range(1, max_period + 1):
            if i + 2 * p > n:
                break
            if best_reps > 1 and p % best_p == 0:
                continue  # a multiple of a repeating cycle covers no more
            reps = 1
            while i + (reps + 1) * p <= n and \
                    names[i + reps * p: i + (reps + 1) * p] == names[i: i + p]:
                reps += 1
            if reps > 1 and reps * p > best_reps * best_p:
                best_p, best_reps = p, reps
        cycle = " -> ".join(f"@{name}" for name in names[i: i + best_p])
        if best_reps == 1:
            parts.append(cycle)
        else:
            parts.append((cycle if best_p == 1 else f"({cycle})") + f" (x{best_reps})")
        i += best_p * best_reps
    if len(parts) > max_parts:
        half = max_parts // 2
        parts = [*parts[:half], f"... ({len(parts) - 2 * half} more) ...", *parts[-half:]]
    return " -> ".join(parts)


#: Default of ``evaluate(..., max_depth=...)``: how many function applications may be nested
#: (Stuck-Depth, spec/semantics.md 4). Each nested Relay call keeps ~1.5 KB alive, so the
#: default allows ~1.5 GB of evaluation state before endless recursion is reported.
MAX_DEPTH = 1_000_000
#: Python frames allowed per nested Relay call: ``apply``, ``eval`` and the rule of each
#: expression the call sits in (3 for ``@f(%x)`` in tail position, 6 for the recursive call
#: of ``@map``). The evaluation thread's recursion limit is ``max_depth`` times this (plus
#: slack); a call nested inside more expressions than that may exhaust it first, and is then
#: reported as nested too deeply for Python's stack (still located, still Relay words).
FRAMES_PER_CALL = 8

_CHECKED: weakref.WeakKeyDictionary[IRModule, IRModule] = weakref.WeakKeyDictionary()


def checked_module(module: IRModule) -> IRModule:
    """``module`` type-checked (T-Module), once: a module returned by ``infer_types`` (every
    global has a recorded type) is already checked; otherwise the checked copy is cached
    on the module (weakly) so repeated evaluations do not check it again. Raises
    ``RelayTypeError``."""
    if module.functions.keys() <= module.global_types.keys() and (
            module.checked_types or not module.functions):
        return module
    checked = _CHECKED.get(module)
    if checked is None:
        from relay_ref.typecheck.infer import infer_types

        checked = _CHECKED[module] = infer_types(module)
    return checked


def _check_expression(expr: Expr, module: IRModule | None,
                      env: dict[Var, Value] | None) -> None:
    """Type-check an expression before it runs (raises ``RelayTypeError``).

    The context is ``module`` plus the prelude's ADTs (the parser resolves ``Nil`` or
    ``Cons`` in an expression to the prelude's constructors; a module's own ``List`` wins);
    a free variable has its annotation's type, else its tensor value's. Types nothing
    determines (``fn (%x) { %x }``, a free variable bound to a closure) stay unknown: the
    interpreter needs none, and a wrong use still gets stuck, located, at run time."""
    from dataclasses import replace

    from relay_ref.prelude import load_prelude
    from relay_ref.typecheck.infer import infer_expr

    base = module if module is not None else IRModule()
    types = {**load_prelude().type_definitions, **base.type_definitions}
    context = replace(base, type_definitions=types)
    var_types: dict[Var, Type] = {}
    for var, value in (env or {}).items():
        if not isinstance(var, Var):
            continue
        if var.type_annotation is not None:
            var_types[var] = var.type_annotation
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            var_types[var] = TensorType(tuple(value.shape), value.dtype.name)
    infer_expr(expr, context, var_types, allow_unknown=True)


def _require(value: Any, kinds: type | tuple[type, ...], name: str, expected: str) -> None:
    """A public argument of the wrong Python type is a ``TypeError`` naming it."""
    if not isinstance(value, kinds):
        raise TypeError(f"evaluate: {name} must be {expected}, not {type(value).__name__}")


def evaluate(program: IRModule | Expr, *args: Any, entry: str = "main",
             module: IRModule | None = None, env: dict[Var, Value] | None = None,
             trace: bool = False, typecheck: bool | str = True,
             max_depth: int | None = None) -> Any:
    """Evaluate ``program`` with the definitional interpreter.

    * A module: apply ``@entry`` to ``args``, each converted by the argument rule against
      the parameter's type (spec/semantics.md 4.1, ``relay_ref.interpreter.args``): Python
      ints, floats, bools and nested lists go to the parameter's dtype when it holds them
      exactly, arrays must already have its dtype and shape, tuples/ADTs/refs/functions are
      checked field by field (a closure is type-checked against a function type).
    * An expression: its value, with ``module`` supplying globals and constructors and
      ``env`` the values of free variables (a REPL's bindings; it is not modified). With
      ``args`` the value is then applied to them (converted against a closure's parameter
      annotations).

    With ``typecheck=True`` (the default) a module that was never type-checked is checked
    first (once: the result is cached on the module; a module from ``rr.infer_types`` is
    not checked again), and so is an expression. ``typecheck=False`` skips that; an
    ill-typed node then gets stuck at run time as a located ``RelayRuntimeError`` (operator
    calls check their arguments against the type relation, which costs about as much as
    the operator on small tensors). ``typecheck="done"``: the caller has already checked
    the program in the context it runs in (a REPL checks each cell with its bindings'
    types), so neither the check nor the run-time guards are repeated.
    ``max_depth`` (default ``MAX_DEPTH``, 10^6) bounds the nesting of function calls:
    deeper recursion is a ``RelayRuntimeError`` at the call, with the Relay call stack.

    Returns the value; with ``trace=True`` returns ``(value, events)``, the list of
    ``relay_ref.interpreter.trace.TraceEvent`` in the order the rules were applied.
    Raises ``RelayTypeError`` (an ill-typed program), ``RelayRuntimeError`` (an unknown
    entry, a wrong number of arguments, an argument that does not fit its parameter, a
    stuck evaluation), ``TypeError`` for parameters of the wrong Python type;
    ``KeyboardInterrupt`` stops it promptly."""
    _require(program, (IRModule, Expr), "program", "an IRModule or an Expr")
    _require(entry, str, "entry", "a str")
    _require(module, (IRModule, type(None)), "module", "an IRModule or None")
    _require(env, (dict, type(None)), "env", "a dict of Var to value or None")
    if typecheck not in (True, False, "done"):
        raise TypeError(f"evaluate: typecheck must be True, False or 'done', not {typecheck!r}")
    checked = bool(typecheck)  # True or "done": no run-time guards
    typecheck = typecheck is True
    if max_depth is not None and (type(max_depth) is not int or max_depth < 1):
        raise TypeError(f"evaluate: max_depth must be a positive int, not {max_depth!r}")
    cls = TracingInterpreter if trace else Interpreter
    if isinstance(program, IRModule):
        source_name = program.source_name
        func = program.functions.get(entry)
        if func is None:
            raise RelayRuntimeError(f"the module has no function @{entry}")
        if len(args) != len(func.params):
            raise RelayRuntimeError(f"@{entry} takes {len(func.params)} argument(s), "
                                    f"{len(args)} given", func.span)
        if typecheck:
            program = checked_module(program)
            func = program.functions[entry]
        interp = cls(program, max_depth=max_depth, checked=checked)
        types = param_types(program, entry, func)
        mod = program

        def job() -> Value:
            values = [_host_argument(arg, ty, mod, f"argument %{param.name_hint} of @{entry}",
                                     param.span)
                      for param, ty, arg in zip(func.params, types, args, strict=True)]
            return interp.apply(interp.global_closure(entry, func.span), values, None)
    else:
        source_name = module.source_name if module is not None else None
        if typecheck:
            module = checked_module(module) if module is not None else None
            _check_expression(program, module, env)
        interp = cls(module, (program,), max_depth=max_depth, checked=checked)
        ctx = interp.module

        def job() -> Value:
            frame = {var: _host_argument(v, var.type_annotation, ctx,
                                         f"free variable %{var.name_hint}", var.span,
                                         check_functions=False)
                     for var, v in (env or {}).items()}
            value = interp.eval(program, frame)
            if args:
                params: tuple[Var, ...] = ()
                if type(value) is Closure or type(value) is RecClosure:
                    fn = value.func if type(value) is Closure else value.closure.func
                    params = fn.params if len(fn.params) == len(args) else ()
                converted = [_host_argument(a, p.type_annotation, ctx,
                                            f"argument %{p.name_hint}", p.span)
                             for a, p in zip(args, params, strict=True)] if params else \
                    [_host_argument(a, None, ctx, f"argument {i + 1}", program.span)
                     for i, a in enumerate(args)]
                value = interp.apply(value, converted, None)
            return value

    # Errors with no single failing expression point at what was run (the entry's definition).
    where = func.span if isinstance(program, IRModule) else program.span

    def guarded() -> Value:
        try:
            return job()
        except Stuck as stuck:
            raise runtime_error(stuck, source_name) from None
        except RecursionError:
            raise RelayRuntimeError("evaluation nested too deeply for Python's stack",
                                    where) from None
        except MemoryError:
            raise RelayRuntimeError("evaluation ran out of memory", where) from None
        except Interrupted:
            raise KeyboardInterrupt from None
        except Exception as err:  # noqa: BLE001 - no internal exception may escape
            raise RelayRuntimeError(f"internal error in the interpreter ({type(err).__name__}"
                                    f": {err}); this is a bug in relay_ref", where) from err

    limit = interp.max_depth * FRAMES_PER_CALL + 100_000
    _relax_gc(+1)
    try:
        value = run_deep(guarded, on_interrupt=interp.request_stop, name="relay-eval",
                         recursion_limit=limit)
    finally:
        _relax_gc(-1)
    if trace:
        return value, interp.trace()  # type: ignore[attr-defined]
    return value


def param_types(module: IRModule, entry: str, func: Function) -> list[Type | None]:
    """The parameter types of ``@entry``: annotations, else the inferred types if any (the
    types host arguments are converted to, by ``evaluate`` and the executor)."""
    from relay_ref.ir.types import FuncType

    inferred = module.global_types.get(entry)
    out: list[Type | None] = []
    for i, param in enumerate(func.params):
        ty = param.type_annotation
        if (ty is None or type(ty) is not TensorType) and type(inferred) is FuncType:
            ty = inferred.arg_types[i]
        out.append(ty)
    return out
