"""The definitional interpreter: Relay's big-step semantics (spec/semantics.md section 3), one
method per rule, and nothing else.

``Interpreter.eval(expr, env)`` is the judgement ``ρ; σ ⊢ e ⇒ v; σ'``: ``env`` is ρ and the
store σ is the heap of ``RefValue`` cells. It applies the rule for the expression's class,
one method per rule (``e_var`` ... ``e_shared``, in the order of spec section 3, each citing
its rule), picked from a table rather than by a ``match`` because a table lookup is as cheap
for the last class as for the first. Call-by-value, left to right. Running a program
(arguments from the host, type checking first, a deep stack, errors as ``RelayError``) is
``relay_ref.interpreter.driver``; the trace of the rules applied is
``relay_ref.interpreter.trace``, a layer around these rules. Invariants:

* ``env`` is the frame of the current function activation: a dict from ``Var`` to value.
  ``let`` and ``match`` extend it in place (binders are distinct ``Var`` objects, so this
  is the same as extending a copy); a call starts a new frame from the closure's captured
  values (spec 2.1).
* The store of the semantics is the heap of ``RefValue`` cells: a cell's identity is its
  location, its ``value`` the store's content there (spec 2.2).
* A shared node (a graph binding ``%0 = e;`` used twice) is evaluated once per activation
  of its scope, the lowest scope common to its uses (TVM's rule: ``relay_ref.ir.sharing``),
  and its value reused (E-Shared, spec 2.3, 3.18); it is remembered in the frame under the
  node itself. It is evaluated at its first use, or, when that is inside a sub-scope (a
  ``fn`` literal, a branch, a clause, a ``let``), just before the node of its scope that
  enters that sub-scope (``force_anchored``); a closure captures the shared nodes of outer
  scopes that its body uses (``make_closure``).
* Rules whose conclusion is the value of a sub-expression evaluated in the same frame
  (E-Let, E-Let-Rec, E-If-*, E-Match) are *steps*: they return that sub-expression and
  ``eval`` continues its loop with it instead of recursing, so long ``let`` chains do not
  deepen the Python stack. Calls do recurse (the driver runs the interpreter on a big
  stack); ``e_app_closure`` counts them, and one deeper than ``max_depth`` is stuck at the
  call (Stuck-Depth, spec 4).
* Ill-typed programs (``evaluate(..., typecheck=False)``) get stuck, located, at the node
  that cannot proceed (Stuck-Proj, -App, -Arity, -If, -Match, -Ref, -Op; spec 4): the
  checks are type tests on values the rule already has in hand, except Stuck-Op, which
  checks operator arguments against the type relation only when ``checked`` is false.
  A stuck rule raises ``Stuck`` (``relay_ref.interpreter.stuck``) with the node's span.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relay_ref.interpreter.casts import (
    CastClosure,
    CastMemo,
    arg_cast,
    cast_value,
    result_cast,
)
from relay_ref.interpreter.operators import (
    check_op_arguments,
    checked_reference,
    op_failure,
    op_reference,
    short,
)
from relay_ref.interpreter.shapes import (
    SHAPE_ENV,
    bind_params,
    check_result,
    type_mentions_shape_vars,
)
from relay_ref.interpreter.stuck import Interrupted, Stuck
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
    pattern_vars,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.sharing import module_sharing_plan, plan_of_function, sharing_plan
from relay_ref.ir.span import Span
from relay_ref.ir.symdim import SymDim
from relay_ref.ir.type_text import shape_to_text, type_to_text
from relay_ref.ir.types import TensorType, Type
from relay_ref.ir.visitor import free_vars, shared_nodes

__all__ = ["MAX_DEPTH", "Interpreter", "Interrupted", "Stuck"]

#: Default of ``evaluate(..., max_depth=...)``: how many function applications may be nested
#: (Stuck-Depth, spec/semantics.md 4). Each nested Relay call keeps ~1.5 KB alive, so the
#: default allows ~1.5 GB of evaluation state before endless recursion is reported.
MAX_DEPTH = 1_000_000


class _FnInfo:
    """What the interpreter precomputes once per ``Function`` node."""

    __slots__ = ("free_vars", "param_checks", "ret_check", "shape_checks", "shape_ret")

    def __init__(self, func: Function) -> None:
        self.free_vars = tuple(free_vars(func))
        self.param_checks = tuple((p, t) for p in func.params
                                  if (t := _static_tensor_type(p.type_annotation)))
        self.ret_check = _static_tensor_type(func.ret_type)
        #: Shape-Bind: the parameters whose types mention shape variables (empty for
        #: almost every function: then the activation does nothing for shape variables)
        self.shape_checks = tuple((p, p.type_annotation) for p in func.params
                                  if type_mentions_shape_vars(p.type_annotation))
        self.shape_ret = func.ret_type if type_mentions_shape_vars(func.ret_type) else None


MISSING = object()
BUSY = object()  # a shared node whose evaluation is in progress in this frame


class Interpreter:
    """Evaluates expressions of ``module`` (globals, constructors). One instance per
    evaluation; its caches are keyed by node identity."""

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
        plan = module_sharing_plan(self.module, roots) if self.shared else None
        #: E-Shared (3.18): node -> the shared nodes evaluated just before it enters a
        #: sub-scope; fn literal -> the shared nodes of outer scopes its closure captures
        self.anchors = plan.anchors if plan is not None else {}
        self.captures = plan.captures if plan is not None else {}
        #: the per-root plans followed (a closure from another evaluation adds its own)
        self.adopted: set[int] = {id(p) for p in plan.parts} if plan is not None else set()
        self.stop_requested = False
        #: The checker's cast points (spec/semantics.md 4, Stuck-Cast), None without any:
        #: then no rule looks further (a program without ``?`` runs as before).
        self.casts = getattr(self.module, "casts", None)
        #: the tuples and ADT values this evaluation's casts have checked (casts.CastMemo)
        self.cast_memo: CastMemo = {}
        self.clause: Any = None  # the clause E-Match took last

    def request_stop(self) -> None:
        """Ask a running evaluation to stop (it raises ``Interrupted`` at its next call)."""
        self.stop_requested = True

    # -- the judgement ρ; σ ⊢ e ⇒ v; σ' ------------------------------------------------------
    def eval(self, expr: Expr, env: dict) -> Value:
        """The value of ``expr`` in frame ``env`` (which ``let``/``match`` may extend).

        The rule is chosen by the expression's class (the tables ``_RULES`` and ``_STEPS``
        after this class, in the spec's order). A *step* (E-Let, E-Let-Rec, E-If-*,
        E-Match) is a rule whose conclusion is the value of its last premise, evaluated in
        the same frame: it returns that sub-expression and the loop goes on with it. The
        other rules return the value. A shared node is E-Shared's first.

        The shape variables a branch or clause binds (``match_cast``) are its own
        (Shape-MatchCast): once a step of E-If-* or E-Match was taken, the frame's shape
        environment is put back as it was before it when the value is returned."""
        shared = self.shared
        branched = False
        shapes = None
        while True:
            if shared and expr in shared:                # E-Shared (3.18)
                known = env.get(expr, MISSING)
                if known is MISSING:
                    value = self.e_shared(expr, env)
                    break
                if known is not BUSY:
                    value = known                        # a later use: the value
                    break
            rule = _RULES.get(type(expr))
            if rule is not None:
                value = rule(self, expr, env)
                break
            step = _STEPS.get(type(expr))
            if step is None:
                raise Stuck(f"cannot evaluate {type(expr).__name__}", _span(expr))
            if type(expr) is not Let:                    # E-If-*, E-Match: a branch
                if not branched:
                    branched, shapes = True, env.get(SHAPE_ENV)
                if self.casts is not None:
                    value = self.cast_step(expr, step(self, expr, env), env)
                    break
            expr = step(self, expr, env)
        if branched and env.get(SHAPE_ENV) is not shapes:  # Shape-MatchCast: scoped
            if shapes is None:
                del env[SHAPE_ENV]
            else:
                env[SHAPE_ENV] = shapes
        return value

    # -- the rules (spec/semantics.md section 3), in its order -------------------------------
    def e_var(self, expr: Var, env: dict) -> Value:
        """E-Var (3.1): the variable's value in the frame."""
        try:
            return env[expr]
        except KeyError:                                                   # Stuck-Var (4)
            raise Stuck(f"unbound variable %{expr.name_hint}", expr.span,
                        rule="Stuck-Var") from None

    def e_global(self, expr: GlobalVar, env: dict) -> Value:
        """E-Global (3.2): the closure of the global's definition, with an empty
        environment (made once per evaluation)."""
        closure = self.globals.get(expr.name)
        return closure if closure is not None else self.global_closure(expr.name, expr.span)

    def e_const(self, expr: Constant, env: dict) -> Value:
        """E-Const (3.3): the constant's tensor."""
        return expr.data

    def e_tuple(self, expr: Tuple, env: dict) -> Value:
        """E-Tuple (3.4): the fields, left to right."""
        return tuple([self.eval(f, env) for f in expr.fields])

    def e_proj(self, expr: TupleGetItem, env: dict) -> Value:
        """E-Proj (3.5): a field of the tuple's value."""
        value = self.eval(expr.tuple_value, env)
        if type(value) is tuple and expr.index < len(value):
            return value[expr.index]
        raise Stuck(f"cannot take field {expr.index} of "                 # Stuck-Proj (4)
                    f"{short(value_to_text(value))}: not a tuple with that field", expr.span,
                    rule="Stuck-Proj")

    def e_let(self, expr: Let, env: dict) -> Expr:
        """E-Let (3.6), a step: bind the variable to the value, continue with the body. A
        function literal's ``let`` is E-Let-Rec."""
        value = expr.value
        if type(value) is Function:
            return self.e_let_rec(expr, env)
        var = expr.var
        if self.anchors and expr in self.anchors:        # E-Shared (3.18), hoisted
            self.force_anchored(expr, env)
        env[var] = bound = self.eval(value, env)
        if self.casts is not None and (cast := self.casts.at(expr)) is not None:
            env[var] = bound = self.cast_value(bound, cast, frame=env)  # T-Let's cast
        if var.type_annotation is not None:
            self.check_annotation(bound, var, var.type_annotation, value.span, env)
        return expr.body

    def e_let_rec(self, expr: Let, env: dict) -> Expr:
        """E-Let-Rec (3.6), a step: bind the variable to a recursive closure of the
        function (which does not capture the variable itself), continue with the body."""
        var = expr.var
        if self.anchors and expr in self.anchors:        # E-Shared (3.18), hoisted
            self.force_anchored(expr, env)
        env[var] = RecClosure(self.make_closure(expr.value, env, var), var)
        if self.casts is not None and (cast := self.casts.at(expr)) is not None:
            env[var] = self.cast_value(env[var], cast, frame=env)   # T-Let's cast
        return expr.body

    def e_fn(self, expr: Function, env: dict) -> Value:
        """E-Fn (3.7): a closure capturing the values of the free variables."""
        return self.make_closure(expr, env)

    def e_app(self, expr: Call, env: dict) -> Value:
        """E-App (3.8): the callee, then the arguments, left to right; the callee's value
        picks the rule: E-App-Closure for a closure, E-App-Rec for a recursive closure,
        E-App-Ctor for a constructor (anything else: ``apply``). An operator callee is
        E-App-Op (3.9)."""
        if type(expr.op) is Op:
            return self.e_app_op(expr, env)
        fn, args = self.eval_call(expr, env)
        if self.casts is not None and (casts := self.casts.args(expr)) is not None:
            args = [a if c is None else self.cast_value(a, c, frame=env)  # T-App's casts
                    for a, c in zip(args, casts, strict=False)]
        kind = type(fn)
        if kind is Closure:
            return self.e_app_closure(fn, args, expr)
        if kind is RecClosure:
            return self.e_app_rec(fn, args, expr)
        if kind is Constructor:
            return self.e_app_ctor(fn, args, expr)
        return self.apply(fn, args, expr)

    def e_app_closure(self, fn: Closure, args: list[Value], call: Call | None,
                      frame: dict | None = None) -> Value:
        """E-App-Closure (3.8): the body, in the captured environment extended with the
        parameters bound to the arguments (``frame``: that environment, given by
        E-App-Rec). Annotated static dimensions are checked (spec 4)."""
        if self.stop_requested:
            raise Interrupted()
        func = fn.func
        if frame is None:
            frame = dict(fn.env)
        depth = self.calls + 1
        if depth > self.max_depth:                       # Stuck-Depth (4)
            raise Stuck(f"recursion deeper than {self.max_depth} calls", _span(call),
                        rule="Stuck-Depth")
        params = func.params
        if len(params) != len(args):                     # Stuck-Arity (4)
            raise Stuck(f"function expects {len(params)} arguments, got {len(args)}",
                        _span(call) or func.span, rule="Stuck-Arity")
        frame.update(zip(params, args, strict=True))  # lengths checked above
        info = self.fn_info.get(func)
        if info is None:
            if fn.global_name is None or self.module.functions.get(fn.global_name) is not func:
                self.adopt(func, fn.env)  # maybe made by another evaluation
            info = self.info(func)
        for param, ty in info.param_checks:
            self.check_annotation(frame[param], param, ty, _span(call))
        if info.shape_checks:                            # Shape-Bind
            self.bind_shape_vars(fn, info, frame, call)
        name = fn.global_name
        self.calls = depth
        try:
            result = self.eval(func.body, frame)
            if self.casts is not None and (cast := self.casts.at(func)) is not None:
                result = self.cast_value(result, cast, frame=frame)  # T-Fn's cast
            if info.ret_check is not None:
                self.check_annotation(result, None, info.ret_check, func.body.span)
            if info.shape_ret is not None:               # Shape-Bind, the result
                problem = check_result(info.shape_ret, result, frame.get(SHAPE_ENV) or {})
                if problem is not None:
                    raise Stuck(f"{_callee(fn)} returned a value that does not have its "
                                f"return type: {problem}", func.body.span, rule="Shape-Bind")
        except Stuck as stuck:
            if name is not None:
                stuck.frames.append((name, _span(call)))
            raise
        except RecursionError:                           # Stuck-Depth (4), Python's stack
            stuck = Stuck(f"evaluation nested too deeply for Python's stack at {depth} "
                          f"nested calls (the limit is {self.max_depth} calls; expressions "
                          "nested inside each call use the stack too)", _span(call),
                          rule="Stuck-Depth")
            if name is not None:
                stuck.frames.append((name, _span(call)))
            raise stuck from None
        self.calls = depth - 1  # on a Stuck the evaluation is over: no need to restore
        return result

    def e_app_rec(self, fn: RecClosure, args: list[Value], call: Call | None) -> Value:
        """E-App-Rec (3.8): E-App-Closure of the closure inside, whose environment also
        binds the recursive variable to ``fn`` itself."""
        frame = dict(fn.closure.env)
        frame[fn.var] = fn
        return self.e_app_closure(fn.closure, args, call, frame)

    def e_app_ctor(self, fn: Constructor, args: list[Value], call: Call | None) -> Value:
        """E-App-Ctor (3.8): the ADT value of the constructor and the arguments."""
        if len(args) != len(fn.inputs):                  # Stuck-Arity (4)
            raise Stuck(f"{fn.name} takes {len(fn.inputs)} argument(s), got {len(args)}",
                        _span(call), rule="Stuck-Arity")
        return ConstructorValue(fn, tuple(args))

    def e_app_op(self, expr: Call, env: dict) -> Value:
        """E-App-Op (3.9): the arguments, then the operator's NumPy reference on them with
        the call's attributes (looked up once per call node)."""
        values = self.eval_args(expr.args, env)
        cached = self.op_calls.get(expr)
        if cached is None:
            cached = self.op_calls[expr] = (
                (None, expr.attrs) if expr.op.name in _SHAPE_OPS  # they need the frame
                else self.op_reference(expr.op.name, expr.attrs, expr))
        reference, attrs = cached
        if reference is None:
            result = self.shape_op(expr, values, env)
        else:
            try:
                result = reference(values, attrs)
            except Exception as err:
                raise op_failure(expr.op.name, err, expr) from None
        if self.casts is not None and (cast := self.casts.at(expr)) is not None:
            return self.cast_value(result, cast, frame=env)     # T-Rel's cast
        return result

    def shape_op(self, expr: Call, values: list[Value], env: dict) -> Value:
        """E-App-Op for the three Relax constructs, which see the frame's shape
        environment (spec/semantics.md Symbolic shapes): ``match_cast`` checks its value
        and binds the new shape variables of its type in the frame (Shape-MatchCast, copying
        the environment: closures made before keep theirs); ``call_dps_packed`` and
        ``call_tir`` allocate their outputs with the frame's variables and call the packed
        function (Shape-DPS); ``dataflow`` is the value of its body (Shape-Dataflow)."""
        from relay_ref.ops.registry import OpRuntimeError
        from relay_ref.ops.symbolic import call_packed, match_value

        name, attrs = expr.op.name, expr.attrs
        if not self.checked and name not in ("match_cast", "dataflow"):  # Stuck-Op (4);
            from relay_ref.ops.registry import get_op  # match_cast's check is its own

            check_op_arguments(get_op(name), values, attrs, expr)
        if name == "dataflow":                           # Shape-Dataflow
            return values[0]
        shapes = env.get(SHAPE_ENV)
        if name == "match_cast":                         # Shape-MatchCast
            bound = dict(shapes) if shapes else {}
            try:
                match_value(values[0], attrs.type, bound)
            except OpRuntimeError as err:
                raise Stuck(str(err), expr.span, rule="Shape-MatchCast") from None
            if len(bound) != (len(shapes) if shapes else 0):
                env[SHAPE_ENV] = bound
            return values[0]
        args = values[0] if type(values[0]) is tuple else (values[0],)
        try:                                             # Shape-DPS
            return call_packed(name, attrs, args, shapes or {})
        except OpRuntimeError as err:
            raise Stuck(str(err), expr.span, rule="Shape-DPS") from None
        except Exception as err:  # noqa: BLE001 - e.g. allocating a negative extent
            raise Stuck(f"{name}: {type(err).__name__}: {err}", expr.span,
                        rule="Shape-DPS") from None

    def e_op(self, expr: Op, env: dict) -> Value:
        """E-Op (3.10): an operator is a function value."""
        if self.casts is not None and (cast := self.casts.at(expr)) is not None:
            return self.cast_value(expr, cast, frame=env)       # T-Rel's cast
        return expr

    def e_ctor(self, expr: Constructor, env: dict) -> Value:
        """E-Ctor (3.11): a constructor is a function value (nullary ones too)."""
        return expr

    def e_if(self, expr: If, env: dict) -> Expr:
        """E-If-True / E-If-False (3.12), a step: the condition (a bool scalar) picks the
        branch to continue with."""
        cond = self.eval(expr.cond, env)
        if self.anchors and expr in self.anchors:        # E-Shared (3.18), hoisted
            self.force_anchored(expr, env)
        if type(cond) is not np.ndarray or cond.shape != () or cond.dtype.kind != "b":
            raise Stuck("the condition of `if` must be a bool scalar, got "  # Stuck-If (4)
                        f"{short(value_to_text(cond))}", expr.cond.span, rule="Stuck-If")
        if cond:
            return expr.true_branch                      # E-If-True (3.12)
        return expr.false_branch                         # E-If-False (3.12)

    def e_match(self, expr: Match, env: dict) -> Expr:
        """E-Match (3.13), a step: the first clause whose pattern matches the scrutinee
        binds its variables (``match_pattern``) and is continued with; E-Match-Fail (3.14)
        if none does."""
        scrutinee = self.eval(expr.data, env)
        if self.anchors and expr in self.anchors:        # E-Shared (3.18), hoisted
            self.force_anchored(expr, env)
        for clause in expr.clauses:
            if self.match_pattern(clause.lhs, scrutinee, env):
                self.clause = clause  # the clause taken (its casts: cast_step)
                return clause.rhs
        raise Stuck("no match clause matched the value "                 # E-Match-Fail
                    f"{short(value_to_text(scrutinee))}", expr.span, rule="E-Match-Fail")

    def match_pattern(self, pattern: Pattern, value: Value, env: dict) -> bool:
        """``value ▷ pattern ⊣ θ`` (3.13): does ``value`` match ``pattern``? Binds θ in
        ``env``; false when no pattern rule applies (the next clause is tried)."""
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
                                f"{len(value.fields)}", _span(pattern), rule="Stuck-Match")
                for sub, field_value in zip(pats, value.fields, strict=True):
                    if type(sub) is PatternVar:          # P-Var, inlined (the usual case)
                        env[sub.var] = field_value
                    elif not self.match_pattern(sub, field_value, env):
                        return False
                return True
            case PatternVar(var=var):                                   # P-Var (3.13)
                env[var] = value
                return True
            case PatternWildcard():                                     # P-Wild (3.13)
                return True
            case PatternTuple(patterns=pats):                           # P-Tuple (3.13)
                if type(value) is not tuple or len(value) != len(pats):  # Stuck-Match (4)
                    raise _no_match_shape(pattern, f"a {len(pats)}-tuple", value)
                for sub, field_value in zip(pats, value, strict=True):
                    if not self.match_pattern(sub, field_value, env):
                        return False
                return True
        raise Stuck(f"unknown pattern {type(pattern).__name__}", _span(pattern))

    def e_ref(self, expr: RefCreate, env: dict) -> Value:
        """E-Ref (3.15): a fresh cell (location) holding the value."""
        return RefValue(self.eval(expr.value, env))

    def e_read(self, expr: RefRead, env: dict) -> Value:
        """E-Read (3.16): the cell's content."""
        cell = self.eval(expr.ref, env)
        if type(cell) is not RefValue:                                     # Stuck-Ref (4)
            raise _not_a_ref("ref_read", cell, expr)
        return cell.value

    def e_write(self, expr: RefWrite, env: dict) -> Value:
        """E-Write (3.17): the cell, then the value stored in it; unit."""
        cell = self.eval(expr.ref, env)
        if type(cell) is not RefValue:                                     # Stuck-Ref (4)
            raise _not_a_ref("ref_write", cell, expr)
        value = self.eval(expr.value, env)
        if self.casts is not None and (cast := self.casts.at(expr)) is not None:
            value = self.cast_value(value, cast, frame=env)     # T-WriteRef's cast
        cell.value = value
        return ()

    def e_shared(self, expr: Expr, env: dict) -> Value:
        """E-Shared (3.18), first use in this activation: the node's value by the rule for
        its form, remembered in the frame under the node for the later uses (which
        ``eval`` answers from the frame)."""
        env[expr] = BUSY
        try:
            value = self.eval(expr, env)
        except BaseException:
            del env[expr]
            raise
        env[expr] = value
        return value

    def cast_step(self, expr: Expr, taken: Expr, env: dict) -> Value:
        """E-If-* or E-Match in a program with cast points: the branch or clause ``taken``
        is evaluated here (not continued with) when its value has a cast (T-If's on the
        else-branch, T-Match's per clause); the values bound by annotated pattern variables
        of the clause are cast first; Stuck-Cast if one fails."""
        casts = self.casts
        cast = None
        if type(expr) is If:
            if taken is expr.false_branch:
                cast = casts.at(expr)
        elif type(expr) is Match:
            clause = self.clause
            cast = casts.at(clause)
            for var in pattern_vars(clause.lhs):            # annotated pattern variables
                if (bound := casts.at(var)) is not None:
                    env[var] = self.cast_value(env[var], bound, frame=env)
        value = self.eval(taken, env)
        return value if cast is None else self.cast_value(value, cast, frame=env)

    def cast_value(self, value: Value, cast: Any, span: Span | None = None,
                   frame: dict | None = None) -> Value:
        """E-Cast (``interpreter/casts.py``) with this evaluation's memo; the target's shape
        variables bound in ``frame`` are checked too (the others are not)."""
        shapes = frame.get(SHAPE_ENV) if frame is not None else None
        return cast_value(value, cast, self.module, span, memo=self.cast_memo,
                          shape_env=shapes)

    def e_app_cast(self, fn: CastClosure, args: list[Value], call: Call | None) -> Value:
        """E-Cast-App (spec/semantics.md 4): a function that crossed a cast point is
        applied with its arguments cast to its own parameter types and its result cast to
        the type it was given (Stuck-Cast at the call when one fails)."""
        cast = fn.cast
        assert cast is not None
        span = _span(call)
        args = [a if (c := arg_cast(cast, i)) is None else
                self.cast_value(a, c, span) for i, a in enumerate(args)]
        result = self.apply(fn.inner, args, call)
        ret = result_cast(cast)
        return result if ret is None else self.cast_value(result, ret, span)

    def force_anchored(self, expr: Expr, env: dict) -> None:
        """E-Shared (3.18) for the shared nodes whose first use is inside a sub-scope of
        ``expr`` (its ``fn`` body, branches, clauses, or ``let``) but whose scope is
        ``expr``'s: evaluated now, in the order first reached, unless already known."""
        for node in self.anchors[expr]:
            if node not in env:
                self.eval(node, env)

    # -- what the rules share ----------------------------------------------------------------
    def apply(self, fn: Value, args: list[Value], call: Call | None) -> Value:
        """E-App (3.8) for a callee value in hand (a host call when ``call`` is None): the
        rule picked by the value as in ``e_app``; an operator value runs by E-App-Op with
        its default attributes; anything else is Stuck-App."""
        if type(fn) is CastClosure:                      # E-Cast-App (4)
            return self.e_app_cast(fn, args, call)
        if isinstance(fn, Closure):                      # E-App-Closure, also the
            return self.e_app_closure(fn, args, call)    # executor's compiled closures
        if isinstance(fn, RecClosure):                   # E-App-Rec
            return self.e_app_rec(fn, args, call)
        kind = type(fn)
        if kind is Constructor:                          # E-App-Ctor
            return self.e_app_ctor(fn, args, call)
        if kind is Op:                                   # E-App-Op (3.9), op as a value
            return self.run_op(fn.name, args, None, call)
        raise Stuck(f"cannot call {short(value_to_text(fn))}: not a function",  # Stuck-App
                    _span(call), rule="Stuck-App")

    def eval_call(self, expr: Call, env: dict) -> tuple[Value, list[Value]]:
        """The premises of E-App: the callee's value, then the arguments' (``eval_args``).
        A global, variable or constructor callee (never shared) gets its rule directly,
        saving a call of ``eval``."""
        callee = expr.op
        kind = type(callee)
        fn = (self.e_global(callee, env) if kind is GlobalVar else
              self.e_var(callee, env) if kind is Var else
              self.e_ctor(callee, env) if kind is Constructor else self.eval(callee, env))
        return fn, self.eval_args(expr.args, env)

    def eval_args(self, args: tuple[Expr, ...], env: dict) -> list[Value]:
        """The argument premises of E-App and E-App-Op: the values of ``args``, left to
        right. Variables and constants (most arguments) are looked up here as E-Var and
        E-Const say, saving a call of ``eval`` each. (The tracer sends every premise
        through ``eval``, so that its trace shows those rules.)"""
        values = []
        for arg in args:
            kind = type(arg)
            if kind is Var:                              # E-Var (3.1)
                try:
                    values.append(env[arg])
                except KeyError:
                    raise Stuck(f"unbound variable %{arg.name_hint}", arg.span,
                                rule="Stuck-Var") from None
            elif kind is Constant:                       # E-Const (3.3)
                values.append(arg.data)
            else:
                values.append(self.eval(arg, env))
        return values

    def global_closure(self, name: str, span: Span | None) -> Closure:
        """E-Global: a global is the closure of its definition with an empty environment."""
        closure = self.globals.get(name)
        if closure is None:
            func = self.module.functions.get(name)
            if func is None:                                               # Stuck-Var (4)
                raise Stuck(f"undefined global @{name}", span, rule="Stuck-Var")
            closure = self.globals[name] = Closure({}, func, name)
        return closure

    def adopt(self, func: Function, env: dict) -> None:
        """E-Shared (3.18) for a closure made by another evaluation (a host argument): follow
        the sharing plan of the program it was made in (else of its own function), and
        reuse the shared nodes it captured."""
        plan = plan_of_function(func)
        if plan is None:  # its program is gone: its own function's plan
            plan = sharing_plan(func)
        if id(plan) in self.adopted:
            return
        self.adopted.add(id(plan))
        captured = frozenset(k for k in env if type(k) is not Var)
        if not plan.shared and not captured:
            return
        self.shared = self.shared | plan.shared | captured
        if plan.anchors:
            self.anchors = {**plan.anchors, **self.anchors}
        if plan.captures:
            self.captures = {**plan.captures, **self.captures}

    def info(self, func: Function) -> _FnInfo:
        info = self.fn_info.get(func)
        if info is None:
            info = self.fn_info[func] = _FnInfo(func)
        return info

    def make_closure(self, func: Function, env: dict, rec_var: Var | None = None) -> Closure:
        """E-Fn: capture the current values of ``func``'s free variables (but ``rec_var``,
        which E-App-Rec binds at each call)."""
        captured = {}
        if self.anchors and func in self.anchors:        # E-Shared (3.18), hoisted
            self.force_anchored(func, env)
        for node in self.captures.get(func, ()) if self.captures else ():
            value = env.get(node, MISSING)               # E-Shared (3.18): captured
            captured[node] = value if value is not MISSING and value is not BUSY \
                else self.eval(node, env)
        for var in self.info(func).free_vars:
            if var is not rec_var:
                try:
                    captured[var] = env[var]
                except KeyError:                                           # Stuck-Var (4)
                    raise Stuck(f"unbound variable %{var.name_hint}", var.span,
                                rule="Stuck-Var") from None
        shapes = env.get(SHAPE_ENV)
        if shapes is not None:  # Shape-Bind: the variables bound so far, lexically
            captured[SHAPE_ENV] = shapes
        return Closure(captured, func)

    def bind_shape_vars(self, fn: Closure, info: _FnInfo, frame: dict,
                        call: Call | None) -> None:
        """Shape-Bind: a fresh shape environment for this activation (the captured one
        extended), binding the shape variables of the parameter types from the
        arguments' shapes in parameter order; a mismatch is stuck at the call."""
        outer = frame.get(SHAPE_ENV)
        shapes = dict(outer) if outer else {}
        problem = bind_params(info.shape_checks, frame, shapes)
        if problem is not None:  # at the call; from the host, at the parameter
            param, message = problem
            raise Stuck(f"call of {_callee(fn)}: argument {message}",
                        _span(call) or param.span or fn.func.span, rule="Shape-Bind")
        frame[SHAPE_ENV] = shapes

    def run_op(self, name: str, args: list[Value], attrs: object, call: Call | None) -> Value:
        """E-App-Op for an operator applied as a value."""
        reference, attrs = self.op_reference(name, attrs, call)
        try:
            return reference(args, attrs)
        except Exception as err:
            raise op_failure(name, err, call) from None

    def op_reference(self, name: str, attrs: object,
                     call: Call | None) -> tuple[Callable[..., Any], object]:
        """The operator's NumPy reference and attributes (E-App-Op), checking its
        arguments first (Stuck-Op) when the program was not type-checked."""
        reference, attrs = op_reference(name, attrs, call)
        if self.checked:
            return reference, attrs
        return checked_reference(name, reference, call), attrs

    def check_annotation(self, value: Value, var: Var | None, ty: Type,
                         span: Span | None, frame: dict | None = None) -> None:
        """Annotated static dimensions must hold of values whose type had ``?``: the cast
        point of a static tensor annotation (Stuck-Cast, spec/semantics.md 4.2). With
        ``frame``, symbolic dimensions whose shape variables it binds are checked too
        (Shape-Bind; the others are not: never a false failure)."""
        if type(ty) is not TensorType or not ty.shape or type(value) is not np.ndarray:
            return
        symbolic = False
        if value.ndim == len(ty.shape):
            for d, n in zip(ty.shape, value.shape, strict=True):
                if type(d) is int:
                    if d != n:
                        break
                elif type(d) is SymDim:
                    symbolic = True
            else:
                if not symbolic or frame is None:
                    return
                problem = check_result(ty, value, frame.get(SHAPE_ENV) or {})
                if problem is None:
                    return
        what = f"%{var.name_hint}" if var is not None else "the result"
        raise Stuck(f"shape mismatch: {what} is annotated {type_to_text(ty)} but the value "
                    f"has shape {shape_to_text(value.shape)}", span, rule="Stuck-Cast")


#: The operators whose E-App-Op reads or extends the frame's shape environment
#: (``Interpreter.shape_op``).
_SHAPE_OPS = frozenset({"match_cast", "call_dps_packed", "call_tir", "dataflow"})

#: The rules that return a value, by expression class, in the spec's order.
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


# -- small helpers of the rules ------------------------------------------------------------------

def _static_tensor_type(ty: Type | None) -> TensorType | None:
    """``ty`` when it is a tensor type with at least one dimension (worth checking)."""
    if type(ty) is TensorType and ty.shape:
        return ty
    return None


def _span(node: object) -> Span | None:
    return getattr(node, "span", None)


def _callee(fn: Closure) -> str:
    """How messages name the function of an activation."""
    return f"@{fn.global_name}" if fn.global_name else "a function"


def _not_a_ref(what: str, value: Value, expr: Expr) -> Stuck:
    return Stuck(f"{what} needs a reference, got {short(value_to_text(value))}", expr.span,
                 rule="Stuck-Ref")


def _no_match_shape(pattern: Pattern, expected: str, value: Value) -> Stuck:
    """Stuck-Match: a pattern met a value of another shape (only in ill-typed programs)."""
    return Stuck(f"the pattern expects {expected}, got {short(value_to_text(value))}",
                 _span(pattern), rule="Stuck-Match")
