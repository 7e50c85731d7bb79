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
  the interpreter on a thread with a large stack so 100 000 nested calls are fine.
* A stuck evaluation (no clause matched, an operator failing at run time, a shape that
  contradicts an annotation) raises ``RelayRuntimeError`` with the expression's span and
  the Relay call stack of globals; nothing else escapes ``evaluate`` for a well-typed
  program (except ``KeyboardInterrupt`` when interrupted).
"""

from __future__ import annotations

import gc
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import ERROR, Diagnostic, Note, RelayRuntimeError
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

__all__ = ["Interpreter", "evaluate"]


class Stuck(Exception):
    """Evaluation cannot proceed (spec section 4). Internal: ``evaluate`` turns it into a
    ``RelayRuntimeError``. ``frames`` collects ``(global name, call-site span)`` pairs while
    the exception unwinds through calls of globals, innermost first."""

    def __init__(self, message: str, span: Span | None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
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

    def __init__(self, module: IRModule | None = None, roots: tuple[Expr, ...] = ()) -> None:
        self.module = module if module is not None else IRModule()
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
        return self.eval(expr.tuple_value, env)[expr.index]

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
                cached = self.op_calls[expr] = _op_reference(callee.name, expr.attrs)
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
        if self.tracing:
            self.emit("E-Read", expr)
        return cell.value

    def e_write(self, expr: RefWrite, env: dict) -> Value:
        """E-Write (3.17): the cell, then the value stored in it; unit."""
        cell = self.eval(expr.ref, env)
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
            if self.tracing:
                self.emit("E-App-Ctor", call)
            return ConstructorValue(callee, tuple(args))
        elif kind is Op:                                 # E-App-Op (3.9), op as a value
            if self.tracing:
                self.emit("E-App-Op", call)
            return self.run_op(callee.name, args, None, call)
        else:
            raise Stuck(f"cannot call {_short(value_to_text(callee))}: not a function",
                        _span(call))
        if self.tracing:
            self.emit(rule, call)
        params = func.params
        if len(params) != len(args):
            raise Stuck(f"function expects {len(params)} arguments, got {len(args)}",
                        _span(call) or func.span)
        frame.update(zip(params, args, strict=True))  # lengths checked above
        info = self.fn_info.get(func) or self.info(func)
        for param, ty in info.param_checks:
            self.check_annotation(frame[param], param, ty, _span(call))
        name = callee.global_name if type(callee) is Closure else None
        try:
            result = self.eval(func.body, frame)
            if info.ret_check is not None:
                self.check_annotation(result, None, info.ret_check, func.body.span)
        except Stuck as stuck:
            if name is not None:
                stuck.frames.append((name, _span(call)))
            raise
        return result

    def run_op(self, name: str, args: list[Value], attrs: object, call: Call | None) -> Value:
        reference, attrs = _op_reference(name, attrs)
        try:
            return reference(args, attrs)
        except Exception as err:
            raise _op_failure(name, err, call) from None

    def match_pattern(self, pattern: Pattern, value: Value, env: dict) -> bool:
        """Does ``value`` match ``pattern``? Binds the pattern's variables in ``env``."""
        match pattern:
            case PatternConstructor(constructor=ctor, patterns=pats):   # P-Ctor (3.13)
                if value.constructor.tag != ctor.tag:
                    return False
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

    def __init__(self, module: IRModule | None = None, roots: tuple[Expr, ...] = ()) -> None:
        from relay_ref.interpreter.trace import TraceEvent

        super().__init__(module, roots)
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


def _op_reference(name: str, attrs: object) -> tuple[Callable[..., Any], object]:
    from relay_ref.ops.registry import get_op

    try:
        opdef = get_op(name)
    except KeyError:
        raise Stuck(f"unknown operator {name}", None) from None
    if attrs is None:
        attrs = opdef.attrs()
    return opdef.reference, attrs


def _op_failure(name: str, err: Exception, call: Call | None) -> Stuck:
    from relay_ref.ops.registry import OpRuntimeError

    if isinstance(err, Stuck):
        return err
    message = str(err) if isinstance(err, OpRuntimeError) else f"{name}: {err}"
    if not message.startswith(name):
        message = f"{name}: {message}"
    return Stuck(message, _span(call))


def _span(node: object) -> Span | None:
    return getattr(node, "span", None)


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- arguments ---------------------------------------------------------------------------------

def to_value(arg: Any, ty: Type | None) -> Value:
    """A Python argument as a Relay value: scalars and lists become arrays of ``ty``'s dtype
    (int32 / float32 / bool by default), tuples convert field by field, values pass."""
    if isinstance(arg, bool | int | float | np.generic | list):
        if type(ty) is TensorType:
            dtype = ty.dtype
        elif isinstance(arg, np.generic):
            dtype = arg.dtype
        else:
            sample = arg
            while isinstance(sample, list) and sample:
                sample = sample[0]
            dtype = ("bool" if isinstance(sample, bool | np.bool_) else
                     "int32" if isinstance(sample, int) else "float32")
        return np.asarray(arg, dtype=dtype)
    if isinstance(arg, tuple):
        fields = ty.fields if type(ty) is TupleType and len(ty.fields) == len(arg) else None
        return tuple(to_value(a, fields[i] if fields else None) for i, a in enumerate(arg))
    return arg


def _check_argument(value: Value, param: Var, ty: Type | None, entry: str,
                    module: IRModule) -> None:
    """Arguments from the host must inhabit the parameter's type: tensors the annotated dtype
    and shape (``?`` matches any), tuples, ADT values, functions and refs field by field."""
    if type(ty) is not TensorType:
        from relay_ref.testing.soundness import value_conforms

        if ty is not None and not value_conforms(value, ty, module):
            raise Stuck(f"argument %{param.name_hint} of @{entry} has type "
                        f"{type_to_text(ty)}, got {_short(value_to_text(value))}", param.span)
        return
    if not isinstance(value, np.ndarray):
        raise Stuck(f"argument %{param.name_hint} of @{entry} must be a tensor of type "
                    f"{type_to_text(ty)}, got {_short(value_to_text(value))}", param.span)
    ok = value.dtype.name == ty.dtype and value.ndim == len(ty.shape) and all(
        type(d) is not int or d == n for d, n in zip(ty.shape, value.shape, strict=True))
    if not ok:
        raise Stuck(f"argument %{param.name_hint} of @{entry} has type {type_to_text(ty)}, "
                    f"got a tensor of shape {shape_to_text(value.shape)} and dtype "
                    f"{value.dtype.name}", param.span)


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
    span, message, notes = stuck.span, stuck.message, []
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


def _compress(names: tuple[str, ...]) -> str:
    """``@main -> @foldl (x99999) -> @hd``: runs of one name collapsed."""
    parts: list[str] = []
    i = 0
    while i < len(names):
        j = i
        while j < len(names) and names[j] == names[i]:
            j += 1
        parts.append(f"@{names[i]}" + (f" (x{j - i})" if j - i > 1 else ""))
        i = j
    return " -> ".join(parts)


def evaluate(program: IRModule | Expr, *args: Any, entry: str = "main",
             module: IRModule | None = None, env: dict[Var, Value] | None = None,
             trace: bool = False) -> Any:
    """Evaluate ``program`` with the definitional interpreter.

    * A module: apply ``@entry`` to ``args`` (NumPy arrays, Python scalars -- converted to
      0-d arrays of the parameter's annotated dtype, else int32/float32/bool -- tuples or
      values). Tensor arguments must match the annotated dtype and static dimensions.
    * An expression: its value, with ``module`` supplying globals and constructors and
      ``env`` the values of free variables (a REPL's bindings; it is not modified). With
      ``args`` the value is then applied to them.

    Returns the value; with ``trace=True`` returns ``(value, events)``, the list of
    ``relay_ref.interpreter.trace.TraceEvent`` in the order the rules were applied.
    Raises ``RelayRuntimeError`` when evaluation gets stuck; ``KeyboardInterrupt``
    stops it promptly."""
    cls = TracingInterpreter if trace else Interpreter
    source_name = program.source_name if isinstance(program, IRModule) else (
        module.source_name if module is not None else None)
    if isinstance(program, IRModule):
        interp = cls(program)
        func = program.functions.get(entry)
        if func is None:
            raise RelayRuntimeError(f"the module has no function @{entry}")
        if len(args) != len(func.params):
            raise RelayRuntimeError(f"@{entry} takes {len(func.params)} argument(s), "
                                    f"{len(args)} given", func.span)
        param_types = _param_types(program, entry, func)

        def job() -> Value:
            values = []
            for param, ty, arg in zip(func.params, param_types, args, strict=True):
                value = to_value(arg, ty)
                _check_argument(value, param, ty, entry, program)
                values.append(value)
            return interp.apply(interp.global_closure(entry, func.span), values, None)
    else:
        interp = cls(module, (program,))
        frame = {var: to_value(v, var.type_annotation) for var, v in (env or {}).items()}

        def job() -> Value:
            value = interp.eval(program, frame)
            if args:
                value = interp.apply(value, [to_value(a, None) for a in args], None)
            return value

    # Errors with no single failing expression point at what was run (the entry's definition).
    where = func.span if isinstance(program, IRModule) else program.span

    def guarded() -> Value:
        try:
            return job()
        except Stuck as stuck:
            raise runtime_error(stuck, source_name) from None
        except RecursionError:
            raise RelayRuntimeError("evaluation nested too deeply (Python recursion limit "
                                    f"{sys.getrecursionlimit()} reached)", where) from None
        except MemoryError:
            raise RelayRuntimeError("evaluation ran out of memory", where) from None
        except Interrupted:
            raise KeyboardInterrupt from None

    _relax_gc(+1)
    try:
        value = run_deep(guarded, on_interrupt=interp.request_stop, name="relay-eval")
    finally:
        _relax_gc(-1)
    if trace:
        return value, interp.trace()  # type: ignore[attr-defined]
    return value


def _param_types(module: IRModule, entry: str, func: Function) -> list[Type | None]:
    """The parameter types of ``@entry``: annotations, else the inferred types if any."""
    from relay_ref.ir.types import FuncType

    inferred = module.global_types.get(entry)
    out: list[Type | None] = []
    for i, param in enumerate(func.params):
        ty = param.type_annotation
        if (ty is None or type(ty) is not TensorType) and type(inferred) is FuncType:
            ty = inferred.arg_types[i]
        out.append(ty)
    return out
