"""Running the definitional interpreter: ``evaluate`` and what surrounds the rules.

The rules are ``relay_ref.interpreter.eval``; this module is the driver around them:

* type checking first (``checked_module``, once per module; ``_check_expression``);
* host arguments converted by the argument rule (A-*, spec/semantics.md 4.1;
  ``relay_ref.interpreter.args``) against ``param_types``;
* the evaluation run on a thread with a big stack and a recursion limit sized for
  ``max_depth`` nested calls (``relay_ref.deepstack.run_deep``), with the garbage
  collector's thresholds raised meanwhile (``_relax_gc``);
* a stuck state rendered as a located ``RelayRuntimeError`` with the Relay call stack
  (``relay_ref.interpreter.stuck.runtime_error``); nothing else escapes ``evaluate`` for a
  well-typed program (except ``KeyboardInterrupt`` when interrupted);
* with ``trace=True`` / ``trace="values"``, the tracing layer
  (``relay_ref.interpreter.trace.TracingInterpreter``) instead of the plain interpreter; a
  stuck traced evaluation's error carries the trace up to the stuck step (``err.trace``).
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import RelayRuntimeError
from relay_ref.interpreter.args import ArgumentError, convert_argument
from relay_ref.interpreter.eval import MAX_DEPTH, Interpreter
from relay_ref.interpreter.shapes import SHAPE_ENV, bind_params, type_mentions_shape_vars
from relay_ref.interpreter.stuck import Interrupted, Stuck, runtime_error
from relay_ref.interpreter.values import Closure, RecClosure, Value
from relay_ref.ir.expr import Expr, Function, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.span import Span
from relay_ref.ir.types import TensorType, Type

__all__ = ["FRAMES_PER_CALL", "MAX_DEPTH", "checked_module", "evaluate", "param_types"]

#: Python frames allowed per nested Relay call: the rule of each expression the call sits
#: in, ``eval`` and ``e_app_closure`` (3 for ``@f(%x)`` in tail position, 6 for the
#: recursive call of ``@map``; one more through E-App-Rec). The evaluation thread's
#: recursion limit is ``max_depth`` times this (plus slack); a call nested inside more
#: expressions than that may exhaust it first, and is then reported as nested too deeply for
#: Python's stack (still located, still Relay words).
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


def _host_argument(arg: Any, ty: Type | None, module: IRModule, what: str,
                   span: Span | None, check_functions: bool = True) -> Value:
    """``arg`` converted by the argument rule (A-*, ``relay_ref.interpreter.args``); a
    violation is stuck at ``span`` (the parameter), ``what`` naming it."""
    try:
        return convert_argument(arg, ty, module, check_functions=check_functions)
    except ArgumentError as err:
        raise Stuck(f"{what}: {err.message}", span, err.notes) from None


def _require(value: Any, kinds: type | tuple[type, ...], name: str, expected: str) -> None:
    """A public argument of the wrong Python type is a ``TypeError`` naming it."""
    if not isinstance(value, kinds):
        raise TypeError(f"evaluate: {name} must be {expected}, not {type(value).__name__}")


def evaluate(program: IRModule | Expr, *args: Any, entry: str = "main",
             module: IRModule | None = None, env: dict[Var, Value] | None = None,
             trace: bool | str = False, typecheck: bool | str = True,
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
    ``relay_ref.interpreter.trace.TraceEvent`` in derivation order (``format_trace``
    prints them); with ``trace="values"`` the events also hold each judgement's value,
    the environment a closure captured, the store a reference rule touched and the
    pattern-matching rules of each ``match`` (``format_trace`` prints those too). When a
    traced evaluation gets stuck, the ``RelayRuntimeError`` it raises has a ``trace``
    attribute: the events up to the stuck step, the last one naming the stuck rule
    (``E-Match-Fail``, ``Stuck-Depth`` ...; ``relay_ref.interpreter.trace``).
    Raises ``RelayTypeError`` (an ill-typed program), ``RelayRuntimeError`` (an unknown
    entry, a wrong number of arguments, an argument that does not fit its parameter, a
    stuck evaluation), ``TypeError`` for parameters of the wrong Python type;
    ``KeyboardInterrupt`` stops it promptly."""
    _require(program, (IRModule, Expr), "program", "an IRModule or an Expr")
    _require(entry, str, "entry", "a str")
    entry = entry.removeprefix("@")  # "@main" and "main" name the same global
    _require(module, (IRModule, type(None)), "module", "an IRModule or None")
    _require(env, (dict, type(None)), "env", "a dict of Var to value or None")
    if typecheck not in (True, False, "done"):
        raise TypeError(f"evaluate: typecheck must be True, False or 'done', not {typecheck!r}")
    if trace not in (True, False, "values"):
        raise TypeError(f"evaluate: trace must be True, False or 'values', not {trace!r}")
    checked = bool(typecheck)  # True or "done": no run-time guards
    typecheck = typecheck is True
    if max_depth is not None and (type(max_depth) is not int or max_depth < 1):
        raise TypeError(f"evaluate: max_depth must be a positive int, not {max_depth!r}")

    def make(mod: IRModule | None, roots: tuple[Expr, ...] = ()) -> Interpreter:
        if not trace:
            return Interpreter(mod, roots, max_depth=max_depth, checked=checked)
        from relay_ref.interpreter.trace import TracingInterpreter

        return TracingInterpreter(mod, roots, max_depth=max_depth, checked=checked,
                                  values=trace == "values")

    if isinstance(program, IRModule):
        source_name = program.source_name
        func = program.functions.get(entry)
        if func is None:
            from relay_ref.suggest import did_you_mean

            raise RelayRuntimeError(f"the module has no function @{entry}"
                                    + did_you_mean(entry, program.functions, sigil="@"))
        if len(args) != len(func.params):
            raise RelayRuntimeError(f"@{entry} takes {len(func.params)} argument(s), "
                                    f"{len(args)} given", func.span)
        if typecheck:
            program = checked_module(program)
            func = program.functions[entry]
        interp = make(program)
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
        interp = make(module, (program,))
        ctx = interp.module

        def job() -> Value:
            frame = {var: _host_argument(v, var.type_annotation, ctx,
                                         f"free variable %{var.name_hint}", var.span,
                                         check_functions=False)
                     for var, v in (env or {}).items()}
            _bind_free_shapes(frame)
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
    except RelayRuntimeError as err:
        if trace:  # the derivation up to the stuck step, which it ends with
            err.trace = interp.trace()  # type: ignore[attr-defined]
        raise
    finally:
        _relax_gc(-1)
    if trace:
        return value, interp.trace()  # type: ignore[attr-defined]
    return value


def _bind_free_shapes(frame: dict) -> None:
    """Shape-Bind for an evaluated expression: the annotations of its free variables bind
    their shape variables, as a function's parameters would (the checker reads them so)."""
    checks = tuple((var, var.type_annotation) for var in frame
                   if type_mentions_shape_vars(var.type_annotation))
    if not checks:
        return
    shapes: dict[str, int] = {}
    problem = bind_params(checks, frame, shapes)
    if problem is not None:
        var, message = problem
        raise Stuck(f"free variable {message}", var.span, rule="Shape-Bind")
    frame[SHAPE_ENV] = shapes


# -- the garbage collector while evaluations run ---------------------------------------------

_gc_lock = threading.Lock()
_gc_users = 0
_gc_saved: tuple[int, int, int] = (700, 10, 10)
#: Collector thresholds while evaluations run: evaluation allocates many small objects that
#: stay alive (list cells, frames); the default first threshold (700) makes the collector
#: re-scan them tens of thousands of times for a 100 000-element list.
GC_THRESHOLDS = (100_000, 50, 100)


def _relax_gc(delta: int) -> None:
    """Raise the GC thresholds while at least one evaluation runs; restore them after."""
    global _gc_users, _gc_saved
    with _gc_lock:
        if delta > 0 and _gc_users == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(*GC_THRESHOLDS)
        _gc_users += delta
        if delta < 0 and _gc_users == 0:
            gc.set_threshold(*_gc_saved)
