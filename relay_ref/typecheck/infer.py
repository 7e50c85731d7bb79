"""Type inference for Relay: one case per typing rule of spec/typing.md.

``infer_types(mod)`` checks every global of a module (rule T-Module, spec 4) and returns the
module annotated with the type of every expression node; ``infer_expr(expr, mod, var_types)``
infers one expression in the context of a module (the Jupyter kernel's cells).

How it works (spec 6): ``_Checker.infer`` walks an expression once, in the grammar's order,
giving each node a type. Unknown types are holes (``IncompleteType``) that the ``Unifier``
fills; checks that need information not yet known (operator type relations, projections
from a tuple of unknown type) are ``Constraint``s queued in the ``Solver`` and re-run when a
hole they wait on is filled. At the end every node's type is resolved; a hole left anywhere
is an error ("cannot infer the type of this expression; add an annotation").

Invariants:
* Variables are unique objects, so the typing environment Γ is one flat map
  ``var_types: Var -> Type`` (a binder is entered when its scope is checked and never
  leaves: no two scopes share a ``Var``).
* ``types`` maps every visited node (by identity) to its type; a node reached twice (a graph
  binding shared by several uses) is checked once.
* Errors never stop the walk: a failing rule reports a ``Diagnostic`` naming the rule and
  continues with the best type it has; holes created as error recovery are *poisoned* and
  never reported again as "cannot infer". All diagnostics are raised together as one
  ``RelayTypeError``; nothing else escapes (an internal failure becomes a located
  ``RelayTypeError`` too).
* Depth: let chains are walked iteratively; everything else recurses on a worker thread with
  a 512 MiB stack (``run_deep``), so deep graphs do not hit ``RecursionError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import TypeVar as _PyTypeVar

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import ERROR, Diagnostic, Note, RelayTypeError
from relay_ref.ir.expr import (
    Call,
    Clause,
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
from relay_ref.ir.module import IRModule, TypeData
from relay_ref.ir.shape import ANY, dim_text
from relay_ref.ir.span import Span
from relay_ref.ir.types import (
    BOOL,
    UNIT,
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    substitute,
)
from relay_ref.ir.visitor import free_vars
from relay_ref.ops.registry import NOT_YET, NoAttrs, OpDef, RelationError, Solved, get_op
from relay_ref.trampoline import no_gc
from relay_ref.typecheck.casts import Site, cast_table
from relay_ref.typecheck.exhaustiveness import missing_case
from relay_ref.typecheck.kinds import check_kind
from relay_ref.typecheck.shapes import (
    PureGlobals,
    bare_vars,
    dataflow_violation,
    deduce,
    substitute_type,
    type_vars,
)
from relay_ref.typecheck.solver import Constraint, Failure, Solver
from relay_ref.typecheck.unify import Unifier, UnifyError, show

__all__ = ["TypeMap", "infer_expr", "infer_types"]


# -- the result map ---------------------------------------------------------------------

class TypeMap(MutableMapping[Expr, Type]):
    """A map from expression nodes to types keyed by node *identity*.

    (``GlobalVar`` and ``Op`` nodes compare by name, so a plain dict would merge the
    different uses of one global or operator.) Iteration follows insertion order."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[int, tuple[Expr, Type]] = {}

    def __getitem__(self, expr: Expr) -> Type:
        return self._items[id(expr)][1]

    def __setitem__(self, expr: Expr, ty: Type) -> None:
        self._items[id(expr)] = (expr, ty)

    def __delitem__(self, expr: Expr) -> None:
        del self._items[id(expr)]

    def __contains__(self, expr: object) -> bool:
        return id(expr) in self._items

    def __iter__(self) -> Iterator[Expr]:
        return (expr for expr, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def get(self, expr: Expr, default: Type | None = None) -> Type | None:  # type: ignore[override]
        item = self._items.get(id(expr))
        return default if item is None else item[1]

    def pairs(self) -> Iterator[tuple[Expr, Type]]:
        """(expression, type) in insertion order (faster than ``items()``)."""
        return iter(self._items.values())

    def __repr__(self) -> str:
        return f"<TypeMap of {len(self)} expressions>"


_R = _PyTypeVar("_R")


# -- public API ---------------------------------------------------------------------------

def infer_types(mod: IRModule) -> IRModule:
    """Infer and check every global of ``mod`` (rule T-Module).

    Returns ``mod.with_types(checked_types, global_types)``: ``checked_types`` maps every
    expression node (by identity) to its fully resolved type, ``global_types`` each global
    name to its ``FuncType`` (with ``type_params`` for polymorphic definitions). Raises
    ``RelayTypeError`` carrying every diagnostic found; never any other exception.
    The cyclic collector is paused meanwhile (``no_gc``): checking allocates objects that
    stay alive to the end, and repeated full collections over them cost more than the
    checking itself on programs of thousands of nodes."""
    with no_gc():
        return run_deep(lambda: _guarded(lambda c: c.check_module(mod), _Checker(mod)))


def infer_expr(expr: Expr, mod: IRModule | None = None,
               var_types: dict[Var, Type] | None = None, *,
               allow_unknown: bool = False) -> tuple[Type, TypeMap]:
    """Infer the type of ``expr`` using the globals and ADTs of ``mod``; free variables take
    their types from ``var_types`` (else their annotation, else they are inferred).

    Returns (the resolved type of ``expr``, the types of all its nodes). Globals of ``mod``
    have the types in ``mod.global_types`` when it was checked, else their annotations.
    ``allow_unknown``: types nothing determines (``fn (%x) { %x }``) are left as holes
    instead of being reported (spec 6.3); the interpreter needs no types to run.
    Raises ``RelayTypeError`` only."""
    checker = _Checker(mod if mod is not None else IRModule(), free_vars_ok=True)
    return run_deep(lambda: _guarded(
        lambda c: c.check_expr(expr, var_types or {}, allow_unknown), checker))


def _guarded(body: Callable[[_Checker], _R], checker: _Checker) -> _R:
    """``body(checker)``, turning any internal failure into a located ``RelayTypeError``."""
    try:
        return body(checker)
    except RelayTypeError:
        raise
    except RecursionError:
        span = _span(checker.current)
        raise RelayTypeError(Diagnostic(
            ERROR, "the program is nested too deeply for the type checker", span)) from None
    except Exception as err:  # noqa: BLE001 - no internal exception may escape
        span = _span(checker.current)
        raise RelayTypeError(Diagnostic(
            ERROR, f"internal error in the type checker ({type(err).__name__}: {err}); "
            "this is a bug in relay_ref", span)) from err


def _span(node: object) -> Span | None:
    span = getattr(node, "span", None)
    return span if isinstance(span, Span) else None


def _result_of(expr: Expr) -> Expr:
    """The expression whose value ``expr`` returns: the final body of a let chain."""
    while isinstance(expr, Let):
        expr = expr.body
    return expr


def _use_span(node: object, parent: object) -> Span | None:
    """Where ``node`` is used: a variable's node is its binder (a constructor's its
    definition), so use ``parent``'s span."""
    if isinstance(node, Var | Constructor):
        return _span(parent) or _span(node)
    return _span(node)


# -- constraints -------------------------------------------------------------------------

class _OpRelation(Constraint):
    """T-App-Op: the operator's relation, a predicate over the argument types and the
    result type ``out`` (spec 3.9); each ``run`` is one T-Rel step (spec 6.2: an answer
    applied by unification, "not yet", or a failure), re-run when one of its holes is filled.
    ``use`` is the call, or the operator node when the op is used as a value (T-Op)."""

    def __init__(self, call: Expr, op: OpDef, attrs: object, args: list[Type], out: Type,
                 owner: str | None) -> None:
        self.expr, self.op, self.attrs, self.args, self.out = call, op, attrs, args, out
        self.owner = owner
        #: where its errors are reported: the use, or for a let-bound operator ``%f`` the
        #: call ``%f(...)`` whose arguments the relation refuses (``infer_op_value``)
        self.at: Expr = call
        #: the checker's cast sites (T-Rel: an answer consistent but not equal, spec 5.1)
        self.sites: list[Site] | None = None

    def run(self, unifier: Unifier) -> list[IncompleteType] | None:
        # A predicate that assigned something but is not done runs again at once when no
        # hole is left to wait on; a third such answer is a bug in the predicate.
        for _ in range(3):
            types = [unifier.resolve(t) for t in (*self.args, self.out)]
            answer = self._ask(types)
            if answer is NOT_YET:
                return [h for t in types for h in unifier.holes(t)]
            for index, ty in answer.assign:
                self._assign(unifier, index, ty)
            if answer.done:
                return None
            holes = [h for t in (*self.args, self.out) for h in unifier.holes(t)]
            if holes:
                return holes
        raise Failure(_diag(f"the type relation of operator {self.op.name} does not decide "
                            "on known types", "T-App-Op", self.at))

    def _ask(self, types: list[Type]) -> Solved | object:
        try:
            answer = self.op.solve(types, self.attrs)
        except RelationError as err:
            raise Failure(_diag(f"{err}", "T-App-Op", self.at)) from None
        except Exception as err:  # noqa: BLE001 - a buggy relation is still a located error
            raise Failure(_diag(f"the type relation of operator {self.op.name} failed "
                                f"({type(err).__name__}: {err})", "T-App-Op",
                                self.at)) from None
        if answer is not NOT_YET and not (
                isinstance(answer, Solved)
                and all(isinstance(t, Type) and 0 <= i < len(types) for i, t in answer.assign)):
            raise Failure(_diag(f"the type relation of operator {self.op.name} returned "
                                f"{answer!r}, not a type", "T-App-Op", self.at))
        return answer

    def _assign(self, unifier: Unifier, index: int, ty: Type) -> None:
        target = self.out if index == len(self.args) else self.args[index]
        try:
            unifier.unify(ty, target)
            if self.sites is not None:
                # T-Rel's cast: the call's value, or the result of the op used as a value
                result = self.out if isinstance(self.expr, Call) else \
                    FuncType(tuple(self.args), self.out)
                self.sites.append(Site(self.expr, -1, ty, target, "T-Rel", result))
        except UnifyError as err:
            what = ("the result" if index == len(self.args)
                    else f"{self.op.arg_names[index] if index < len(self.op.arg_names) else ''}"
                         f" (argument {index})".lstrip())
            raise Failure(_diag(
                f"{what} of {self.op.name}: cannot unify {show(ty)} with "
                f"{show(unifier.resolve(target))}: {err.reason}", "T-App-Op",
                self.at)) from None

    def describe(self) -> str:
        if isinstance(self.expr, Op):
            return (f"cannot infer the type of operator {self.op.name} used as a value: "
                    "call it, or annotate the function it is bound to")
        return (f"cannot infer the type of this call to {self.op.name}: its type relation "
                "needs the argument types; add an annotation")

    def pending_types(self) -> list[Type]:
        return [self.out, *self.args]


class _Projection(Constraint):
    """T-Proj on a tuple whose type was not known when the projection was reached."""

    def __init__(self, proj: TupleGetItem, tuple_type: Type, out: Type,
                 owner: str | None) -> None:
        self.expr, self.tuple_type, self.out, self.owner = proj, tuple_type, out, owner

    def run(self, unifier: Unifier) -> list[IncompleteType] | None:
        ty = unifier.find(self.tuple_type)
        if isinstance(ty, IncompleteType):
            return [ty]
        field = _project(unifier, ty, self.expr)
        try:
            unifier.unify(field, self.out)
        except UnifyError as err:
            raise Failure(_diag(f"cannot unify {show(unifier.resolve(field))} with "
                                f"{show(unifier.resolve(self.out))}: {err.reason}",
                                "T-Proj", self.expr)) from None
        return None

    def describe(self) -> str:
        return ("cannot infer the type of the tuple projected here; add an annotation")

    def pending_types(self) -> list[Type]:
        return [self.out, self.tuple_type]


class _ShapeInstance(Constraint):
    """T-ShapeCall on a callee whose return type was still a hole at the call (a global
    checked later, or a recursive call without a return annotation): once it is known, the
    call's type ``out`` is it with the deduced shape variables substituted (``mapping``), so
    the callee's own variable names never reach the caller."""

    rule = "T-ShapeCall"

    def __init__(self, call: Call, ret: Type, mapping: dict[str, object], out: Type,
                 owner: str | None) -> None:
        self.expr, self.ret, self.mapping, self.out, self.owner = call, ret, mapping, out, owner

    def run(self, unifier: Unifier) -> list[IncompleteType] | None:
        ret = unifier.resolve(self.ret)
        holes = unifier.holes(ret)
        if holes:
            return holes
        result = substitute_type(ret, self.mapping)
        try:
            unifier.unify(result, self.out)
        except UnifyError as err:
            raise Failure(_diag(f"the result of this call has type {show(result)}, but "
                                f"{show(unifier.resolve(self.out))} is required here: "
                                f"{err.reason}", "T-ShapeCall", self.expr)) from None
        return None

    def describe(self) -> str:
        return "cannot infer the result type of this call; annotate the callee's return type"

    def pending_types(self) -> list[Type]:
        return [self.out, self.ret]


class _Erase(Constraint):
    """T-ShapeScope on a scope's result whose type was still a hole when the scope ended
    (a function body, an ``if`` branch, a ``match`` clause that bound shape variables by
    ``match_cast``): once it is known, ``out`` is it with those variables (``mapping``, all
    to ``?``) erased, so they never reach a type outside their scope."""

    rule = "T-ShapeScope"

    def __init__(self, where: Expr, ty: Type, mapping: dict[str, object], out: Type,
                 owner: str | None) -> None:
        self.expr, self.ty, self.mapping, self.out, self.owner = where, ty, mapping, out, owner

    def run(self, unifier: Unifier) -> list[IncompleteType] | None:
        ty = unifier.resolve(self.ty)
        holes = unifier.holes(ty)
        if holes:
            return holes
        result = substitute_type(ty, self.mapping)
        try:
            unifier.unify(result, self.out)
        except UnifyError as err:
            raise Failure(_diag(f"this value has type {show(result)} outside the scope of "
                                f"its match_cast, but {show(unifier.resolve(self.out))} is "
                                f"required here: {err.reason}", "T-ShapeScope",
                                self.expr)) from None
        return None

    def describe(self) -> str:
        return "cannot infer the type of this expression; add an annotation"

    def pending_types(self) -> list[Type]:
        return [self.out, self.ty]


def _project(unifier: Unifier, ty: Type, proj: TupleGetItem) -> Type:
    """Field ``proj.index`` of the (non-hole) type ``ty``, or raise ``Failure``."""
    if not isinstance(ty, TupleType):
        raise Failure(_diag(f"cannot take field {proj.index} of a value of type "
                            f"{show(unifier.resolve(ty))}: it is not a tuple", "T-Proj", proj))
    if not 0 <= proj.index < len(ty.fields):
        n = len(ty.fields)
        raise Failure(_diag(f"index {proj.index} is out of range for a tuple of {n} "
                            f"field{'s' if n != 1 else ''} ({show(unifier.resolve(ty))})",
                            "T-Proj", proj))
    return ty.fields[proj.index]


def _diag(message: str, rule: str, where: object, notes: tuple[Note, ...] = ()) -> Diagnostic:
    return Diagnostic(ERROR, f"{message} [{rule}]", _span(where), notes)


# -- the checker -------------------------------------------------------------------------

class _Checker:
    """The state of one inference run (see the module docstring for its invariants)."""

    def __init__(self, mod: IRModule, free_vars_ok: bool = False) -> None:
        self.mod = mod
        self._pure: PureGlobals | None = None  # T-Dataflow's purity of globals, on demand
        self.adts: dict[str, TypeData] = dict(mod.type_definitions)
        self.unifier = Unifier()
        self.solver = Solver(self.unifier, self._constraint_failed)
        self.types = TypeMap()
        self.var_types: dict[Var, Type] = {}          # Γ
        self.let_functions: dict[Var, Function] = {}  # let-bound function literals (notes)
        self.op_vars: dict[int, Op] = {}  # id(%f) -> op for `let %f = op;` (T-Let)
        self.callee_of: Call | None = None  # the call whose callee is being inferred
        self.headers: dict[str, Type] = {}             # global name -> its declared type
        self.fn_headers: dict[int, FuncType] = {}      # id(Function) -> its declared type
        self.scope: set[int] = set()                   # uids of type parameters in scope
        #: T-ShapeScope: the shape variables in scope (the enclosing functions' implicit
        #: ones, and those bound by a match_cast met so far in them); rigid inside
        self.shape_scope: frozenset[str] = frozenset()
        #: id(Function) -> the shape variables its parameters bind (its own, T-ShapeScope)
        self.own_shape_vars: dict[int, frozenset[str]] = {}
        #: ids of the functions whose bodies are being checked (a call of one is recursive)
        self.in_progress: set[int] = set()
        #: id(FuncType of a global) -> (it, the shape variables of its parameters)
        self.global_shape_vars: dict[int, tuple[FuncType, frozenset[str]]] = {}
        self.diagnostics: list[Diagnostic] = []
        self.poisoned: set[int] = set()
        self.owner: str | None = None
        self.current: Expr | None = None
        self.free_vars_ok = free_vars_ok
        #: value flows whose types were only required to be consistent (spec/typing.md
        #: 5.1); the ones needing a run-time check become ``IRModule.casts``
        self.cast_sites: list[Site] = []

    # -- reporting ------------------------------------------------------------------------
    def error(self, where: object, message: str, rule: str,
              notes: tuple[Note, ...] = (), parent: object | None = None) -> None:
        """Report at ``where``. A variable or a constructor has no span of its own at a use
        (its node is its binder, or its definition, possibly in the prelude), so an error
        about one is reported at ``parent``, the expression using it, with a note at the
        binder or definition."""
        if isinstance(where, Var | Constructor) and parent is not None \
                and _span(parent) is not None:
            note = (Note(f"%{where.name_hint} is declared here", _span(where))
                    if isinstance(where, Var) else
                    Note(f"constructor {where.name} is defined here", _span(where)))
            if note not in notes:
                notes = (*notes, note)
            where = parent
        self.diagnostics.append(_diag(message, rule, where, notes))

    def _constraint_failed(self, constraint: Constraint, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)

    def poison(self) -> IncompleteType:
        """A hole standing for the type of an ill-typed expression (never reported)."""
        hole = self.unifier.fresh()
        self.poisoned.add(hole.uid)
        return hole

    def unify(self, found: Type, expected: Type, where: object, rule: str, what: str = "",
              notes: tuple[Note, ...] = (), parent: object | None = None) -> bool:
        """Unify, reporting a failure at ``where`` (see ``error``) as
        "<what>cannot unify F with E: why"."""
        try:
            self.unifier.unify(found, expected)
            return True
        except UnifyError as err:
            f, e = show(self.unifier.resolve(found)), show(self.unifier.resolve(expected))
            self.error(where, f"{what}cannot unify {f} with {e}: {err.reason}", rule, notes,
                       parent)
            return False

    def cast_site(self, node: Expr, index: int, found: Type, expected: Type,
                  rule: str) -> None:
        """Record that ``rule`` moved a value of type ``found`` where ``expected`` is
        required, the two unified (consistent, spec 5.1): a cast point if, once resolved,
        ``found`` is less precise (``relay_ref.typecheck.casts``). Cheap (one tuple): what
        the cast is called and where it is located is worked out only for the cast points
        (``cast_place``). A hook: the derivation recorder shows the consistency premise at
        the rule's node."""
        if found is not expected:
            self.cast_sites.append(Site(node, index, found, expected, rule))

    def cast_place(self, site: Site) -> tuple[str, Span | None, bool]:
        """What the value at ``site`` is called, the span of the expression whose static
        type a failed check violates, and whether the run-time annotation check already
        performs this cast (a static tensor annotation of the parameter, the ``let`` or
        the return type: spec/semantics.md 4.2), by the rule that recorded it."""
        node, index, rule = site.node, site.index, site.rule
        if rule == "T-App" and isinstance(node, Call):
            fn = self.function_of(node.op) if isinstance(node.op, GlobalVar | Function) \
                else None
            covered = fn is not None and index < len(fn.params) \
                and _checked_annotation(fn.params[index].type_annotation)
            return (f"argument {index} of {_callee_name(node.op)}",
                    _use_span(node.args[index], node), covered)
        if rule == "T-Fn" and isinstance(node, Function):
            return ("the function's result", _use_span(_result_of(node.body), node),
                    _checked_annotation(node.ret_type))
        if rule == "T-Let" and isinstance(node, Let):
            return (f"the value of %{node.var.name_hint}", _use_span(node.value, node),
                    _checked_annotation(node.var.type_annotation))
        if rule == "T-If" and isinstance(node, If):
            return "the else-branch's value", _use_span(node.false_branch, node), False
        if rule == "T-Match" and isinstance(node, Clause):
            return "the clause's value", _use_span(node.rhs, node), False
        if rule == "TP-Var" and isinstance(node, Var):
            return f"the pattern variable %{node.name_hint}", _span(node), False
        if rule == "T-WriteRef" and isinstance(node, RefWrite):
            return "the value written", _use_span(node.value, node), False
        if isinstance(node, Call) and isinstance(node.op, Op):  # T-Rel
            return f"the result of {node.op.name}", _span(node), False
        if isinstance(node, Op):  # T-Rel of an operator used as a value (T-Op)
            return f"the result of operator {node.name} used as a value", _span(node), False
        return "the value", _span(node), False

    def casts(self) -> object | None:
        """The cast table of this run (after ``finish``), None when no ``?`` met a known
        dimension (then no cast point can exist: zero cost)."""
        if not self.unifier.gradual:
            return None
        return cast_table(self.cast_sites, self.unifier.resolve, self.cast_place)

    def relation(self, use: Expr, op: OpDef, attrs: object, args: list[Type],
                 out: Type) -> _OpRelation:
        """The constraint of one operator use (T-App-Op, T-Op). A hook: the derivation
        recorder (``derive.py``) returns a subclass that records each run (T-Rel)."""
        rel = _OpRelation(use, op, attrs, args, out, self.owner)
        rel.sites = self.cast_sites
        return rel

    def projection(self, proj: TupleGetItem, tuple_type: Type, out: Type) -> _Projection:
        """The constraint of a deferred projection (T-Proj); a hook, as ``relation``."""
        return _Projection(proj, tuple_type, out, self.owner)

    def annotation(self, ty: Type, where: object) -> Type:
        """A written type after kind checking (K-*); a poisoned hole if ill-kinded."""
        problems = check_kind(ty, self.scope, self.adts, _span(where))
        for message, span in problems:
            self.diagnostics.append(Diagnostic(ERROR, message, span))
        if problems:
            return self.poison()
        self.check_shape_scope(ty, where)
        return ty

    def check_shape_scope(self, ty: Type, where: object) -> None:
        """T-ShapeScope: every shape variable of a written type is in scope (bound by a
        parameter of an enclosing function or by a match_cast before it); else a located
        error per variable (the type keeps it, as a rigid variable)."""
        unbound = type_vars(ty) - self.shape_scope
        for name in sorted(unbound):
            self.diagnostics.append(_diag(
                f"shape variable {name} is not bound by a parameter or a match_cast "
                "(a parameter's type must use it alone as a dimension, e.g. Tensor[(n), "
                "float32])", "T-ShapeScope", ty if _span(ty) is not None else where))

    def bind_var(self, var: Var, ty: Type) -> None:
        self.var_types[var] = ty
        self.types[var] = ty

    # -- entry points ----------------------------------------------------------------------
    def check_module(self, mod: IRModule) -> IRModule:
        """T-Module (spec 4): ADT definitions, then every global's declared type, then each
        body against its declared type; finally the fixpoint and the resolution."""
        for td in self.adts.values():  # K-ADT
            self.scope = {tv.uid for tv in td.type_vars}
            for ctor in td.constructors:
                for field in ctor.inputs:
                    self.annotation(field, ctor)
        self.scope = set()
        for name, fn in mod.functions.items():
            self.owner = name
            self.headers[name] = self.header_of(fn)
        for name, fn in mod.functions.items():
            self.owner = name
            self.infer_function(fn, self.header_of(fn))
            self.solver.solve()
        self.owner = None
        self.finish()
        global_types = {name: self.unifier.resolve(t) for name, t in self.headers.items()}
        return mod.with_types(self.types, global_types,  # type: ignore[arg-type]
                              self.casts())

    def check_expr(self, expr: Expr, var_types: dict[Var, Type],
                   allow_unknown: bool = False) -> tuple[Type, TypeMap]:
        """Infer one expression (``infer_expr``)."""
        for name, fn in self.mod.functions.items():
            known = self.mod.global_types.get(name)
            self.headers[name] = known if known is not None else self.header_of(fn)
        for var, ty in var_types.items():
            self.bind_var(var, ty)
            self.shape_scope |= bare_vars(ty)  # T-ShapeScope: given types bind, as params
        if self.free_vars_ok:  # and so do the free variables' annotations, from the start
            self.shape_scope = self.shape_scope.union(
                *(bare_vars(v.type_annotation) for v in free_vars(expr)
                  if v not in var_types))
        ty = self.infer(expr)
        self.finish(report_unknowns=not allow_unknown)
        return self.unifier.resolve(ty), self.types

    def finish(self, report_unknowns: bool = True) -> None:
        """Reach the fixpoint, resolve every node's type, report what is still unknown
        (spec 6.3, unless ``report_unknowns`` is off) and raise if anything went wrong."""
        self.solver.solve()
        self.resolve_all()
        if not self.diagnostics and report_unknowns:
            self.report_unknowns()
        if self.diagnostics:
            raise RelayTypeError(self.diagnostics)

    def report_unknowns(self) -> None:
        """One diagnostic per hole left, at the first node whose type mentions it."""
        reported: set[int] = set(self.poisoned)
        for constraint in self.solver.unsolved():
            holes = [h.uid for t in constraint.pending_types() for h in self.unifier.holes(t)]
            if any(uid not in reported for uid in holes) or not holes:
                rule = (getattr(constraint, "rule", None)
                        or ("T-Proj" if not isinstance(constraint, _OpRelation)
                            else "T-Op" if isinstance(constraint.expr, Op) else "T-App-Op"))
                self.error(constraint.expr, constraint.describe(), rule)
            reported.update(holes)
        walked: dict[int, Type] = {}  # type objects whose holes are all in ``reported``
        for expr, ty in self.types.pairs():
            if type(ty) is TensorType:
                continue  # resolved tensor types hold no holes
            if len(self.diagnostics) >= 20:
                return
            holes = [h.uid for h in self.unifier.holes(ty, walked) if h.uid not in reported]
            if holes:
                reported.update(holes)
                what = f"%{expr.name_hint}" if isinstance(expr, Var) else "this expression"
                self.error(expr, f"cannot infer the type of {what} (it is "
                           f"{show(self.unifier.resolve(ty))}); add an annotation",
                           "T-Resolve")

    def resolve_all(self) -> None:
        """Replace every node's type by its resolution (in place: same keys)."""
        items = self.types._items
        resolve = self.unifier.resolve
        for key, (expr, ty) in items.items():
            if type(ty) is not TensorType:
                items[key] = (expr, resolve(ty))

    # -- functions ---------------------------------------------------------------------------
    def header_of(self, fn: Function) -> FuncType:
        """The type a function declares: annotations, holes where there are none."""
        header = self.fn_headers.get(id(fn))
        if header is not None:
            return header
        saved, saved_shapes = self.scope, self.shape_scope
        self.scope = saved | {tp.uid for tp in fn.type_params}
        # T-ShapeScope: the function's own shape variables are those its parameter types
        # use alone as a dimension and no enclosing function binds.
        own = frozenset().union(*(bare_vars(p.type_annotation) for p in fn.params)) \
            - saved_shapes
        self.own_shape_vars[id(fn)] = own
        self.shape_scope = saved_shapes | own
        args = tuple(self.annotation(p.type_annotation, p) if p.type_annotation is not None
                     else self.unifier.fresh() for p in fn.params)
        ret = (self.annotation(fn.ret_type, fn) if fn.ret_type is not None
               else self.unifier.fresh())
        self.scope, self.shape_scope = saved, saved_shapes
        header = FuncType(args, ret, tuple(fn.type_params), fn.span)
        self.fn_headers[id(fn)] = header
        return header

    def erase_scoped(self, ty: Type, before: frozenset[str], scope: Expr) -> Type:
        """T-ShapeScope: ``ty``, the value of a scope (a function body, an ``if`` branch, a
        ``match`` clause) that is ending, with the shape variables its ``match_cast`` s bound
        (those in scope now but not in ``before``, the scope it returns to) replaced by
        ``?``: a value leaving their scope forgets them (as Relax erases a function's
        result to its parameters' variables). Free when nothing was bound (the common
        case: the scope set is the same object). Deferred (``_Erase``) while ``ty`` has
        holes."""
        if self.shape_scope is before:
            return ty
        new = self.shape_scope - before
        if not new:
            return ty
        mapping: dict[str, object] = dict.fromkeys(new, ANY)
        resolved = self.unifier.resolve(ty)
        if not self.unifier.holes(resolved):
            return substitute_type(resolved, mapping)
        out = self.unifier.fresh()
        self.solver.add(_Erase(_result_of(scope), resolved, mapping, out, self.owner))
        self.solver.solve()
        return out

    def infer_function(self, fn: Function, header: FuncType) -> FuncType:
        """T-Fn (spec 3.7): the body, with the parameters bound to the header's types,
        has the declared return type; type parameters are rigid inside."""
        saved, saved_shapes = self.scope, self.shape_scope
        self.scope = saved | {tp.uid for tp in fn.type_params}
        # T-ShapeScope: its own shape variables are in scope (rigid) in its body, with those
        # of the enclosing functions; a match_cast inside adds to them until the end.
        self.shape_scope = inside = saved_shapes | self.own_shape_vars.get(id(fn),
                                                                          frozenset())
        for param, ty in zip(fn.params, header.arg_types, strict=True):
            self.bind_var(param, ty)
        # T-ShapeScope: the result forgets the variables bound by the body's match_casts
        self.in_progress.add(id(fn))
        body = self.erase_scoped(self.infer(fn.body), inside, fn.body)
        self.in_progress.discard(id(fn))
        notes = ()
        if fn.ret_type is not None:
            notes = (Note("the return type is declared here", _span(fn.ret_type) or
                          _span(fn)),)
        if self.unify(body, header.ret_type, _result_of(fn.body), "T-Fn",
                      "the body does not have the declared return type: ", notes, parent=fn):
            # T-Fn's consistency premise body ~ return type: a cast point (spec 3.7)
            self.cast_site(fn, -1, body, header.ret_type, "T-Fn")
        self.scope, self.shape_scope = saved, saved_shapes
        self.types[fn] = header
        return header

    # -- expressions -------------------------------------------------------------------------
    def infer(self, expr: Expr) -> Type:
        """The type of ``expr`` (memoised per node: a shared node is checked once, T-Shared
        spec/typing.md 3.18)."""
        known = self.types._items.get(id(expr))
        if known is not None:
            if self.op_vars and id(expr) in self.op_vars:  # T-Let (3.6): T-Op per use
                call = self.callee_of  # its errors are the call's, as for ``add(...)``
                at = call if call is not None and call.op is expr else expr
                return self.infer_op_value(self.op_vars[id(expr)], at)
            return known[1]
        self.current = expr
        ty = self.infer_rule(expr)
        self.types[expr] = ty
        return ty

    def infer_rule(self, expr: Expr) -> Type:
        """One case per typing rule, in the order of spec/typing.md section 3."""
        match expr:
            case Var():  # T-Var (spec/typing.md 3.1)
                return self.infer_var(expr)
            case GlobalVar(name):  # T-Global (spec/typing.md 3.2)
                header = self.headers.get(name)
                if header is None:
                    self.error(expr, f"no global function @{name} in this module",
                               "T-Global")
                    return self.poison()
                if type(header) is FuncType and not (
                        self.callee_of is not None and self.callee_of.op is expr):
                    return self.global_as_value(expr, header)
                return header
            case Constant(data):  # T-Const (spec/typing.md 3.3)
                return self.infer_constant(expr, data)
            case Tuple(fields):  # T-Tuple (spec/typing.md 3.4)
                return TupleType(tuple(self.infer(f) for f in fields))
            case TupleGetItem(tup):  # T-Proj (spec/typing.md 3.5)
                return self.infer_projection(expr, self.infer(tup))
            case Let():  # T-Let (spec/typing.md 3.6)
                return self.infer_let(expr)
            case Function():  # T-Fn (spec/typing.md 3.7)
                return self.infer_function(expr, self.header_of(expr))
            case Call(op=callee) if not isinstance(callee, Op):  # T-App (spec/typing.md 3.8)
                return self.infer_call(expr)
            case Call():  # T-App-Op (spec/typing.md 3.9): the callee is an operator
                return self.infer_op_call(expr)
            case Op():  # T-Op (spec/typing.md 3.10): an operator used as a value
                return self.infer_op_value(expr)
            case Constructor():  # T-Constructor (spec/typing.md 3.11)
                return self.constructor_type(expr)
            case If(cond, then, else_):  # T-If (spec/typing.md 3.12)
                c = self.infer(cond)
                self.unify(c, BOOL, cond, "T-If",
                           "the condition of if must be a boolean scalar: ", parent=expr)
                # T-MatchCast: a branch's match_cast binds for that branch only
                # and its value forgets them outside the branch (T-ShapeScope)
                shapes = self.shape_scope
                t = self.erase_scoped(self.infer(then), shapes, then)
                self.shape_scope = shapes
                f = self.erase_scoped(self.infer(else_), shapes, else_)
                self.shape_scope = shapes
                if self.unify(f, t, else_, "T-If", "the branches of if have different types: ",
                              (Note(f"the then-branch has type "
                                    f"{show(self.unifier.resolve(t))}",
                                    _use_span(then, expr)),), parent=expr):
                    # T-If's consistency premise: a cast point on the else-branch (3.12)
                    self.cast_site(expr, -1, f, t, "T-If")
                return t
            case Match():  # T-Match (spec/typing.md 3.13), T-Match-Complete (3.14)
                return self.infer_match(expr)
            case RefCreate(value):  # T-Ref (spec/typing.md 3.15)
                return RefType(self.infer(value))
            case RefRead(ref):  # T-ReadRef (spec/typing.md 3.16)
                r = self.unifier.find(self.infer(ref))
                if isinstance(r, RefType):
                    return r.value
                value = self.unifier.fresh()
                if not self.unify(r, RefType(value), ref, "T-ReadRef",
                                  "ref_read needs a reference: ", parent=expr):
                    return self.poison()
                return value
            case RefWrite(ref, value):  # T-WriteRef (spec/typing.md 3.17)
                r = self.unifier.find(self.infer(ref))
                v = self.infer(value)
                if isinstance(r, RefType):
                    if self.unify(v, r.value, value, "T-WriteRef",
                                  "the value written does not fit the reference: ",
                                  (Note(f"the reference has type "
                                        f"{show(self.unifier.resolve(r))}",
                                        _span(ref)),), parent=expr):
                        # T-WriteRef's consistency premise: a cast point (spec 3.17)
                        self.cast_site(expr, -1, v, r.value, "T-WriteRef")
                else:
                    self.unify(r, RefType(v), ref, "T-WriteRef",
                               "ref_write needs a reference: ", parent=expr)
                return UNIT
        self.error(expr, f"not a Relay expression: {type(expr).__name__}", "T-Expr")
        return self.poison()

    def infer_var(self, var: Var) -> Type:
        """T-Var: Γ(%x). Unbound variables are errors, except the free variables of an
        expression given to ``infer_expr`` (annotation, else a hole to infer)."""
        if self.free_vars_ok:
            # a free variable's annotation binds its bare shape variables (T-ShapeScope), as
            # a parameter's would: the expression is checked as a function body
            self.shape_scope |= bare_vars(var.type_annotation)
            ty = (self.annotation(var.type_annotation, var)
                  if var.type_annotation is not None else self.unifier.fresh())
            self.bind_var(var, ty)
            return ty
        self.error(var, f"variable %{var.name_hint} is not bound here", "T-Var")
        return self.poison()

    def infer_constant(self, expr: Constant, data: object) -> Type:
        """T-Const: a literal has the tensor type of its data."""
        arr = data if isinstance(data, np.ndarray) else np.asarray(data)
        dtype = arr.dtype.name
        if arr.dtype.kind not in "biuf":
            self.error(expr, f"constant of unsupported element type {dtype}", "T-Const")
            return self.poison()
        return TensorType(tuple(int(d) for d in arr.shape), dtype)

    def infer_projection(self, expr: TupleGetItem, tup: Type) -> Type:
        """T-Proj: field ``i`` of a tuple type; deferred while the tuple type is a hole."""
        ty = self.unifier.find(tup)
        if isinstance(ty, IncompleteType):
            out = self.unifier.fresh()
            self.solver.add(self.projection(expr, ty, out))
            self.solver.solve()
            return out
        try:
            return _project(self.unifier, ty, expr)
        except Failure as failure:
            self.diagnostics.append(failure.diagnostic)
            return self.poison()

    def infer_let(self, expr: Let) -> Type:
        """T-Let, iteratively along a chain of lets: each binding's value has the variable's
        type (its annotation when present); a function literal is checked with the
        variable already bound (local recursion). The chain's type is its final body's."""
        chain: list[Let] = []
        node: Expr = expr
        while isinstance(node, Let) and node not in self.types:
            chain.append(node)
            self.current = node
            self.bind_let(node)
            node = node.body
        body = self.infer(node)
        for let in chain:
            self.types[let] = body
        return body

    def bind_let(self, let: Let) -> None:
        var, value = let.var, let.value
        notes: tuple[Note, ...] = ()
        declared: Type | None = None
        if var.type_annotation is not None:
            declared = self.annotation(var.type_annotation, var)
            notes = (Note(f"%{var.name_hint} is declared here as {show(declared)}",
                          _span(var.type_annotation) or _span(var)),)
        if isinstance(value, Function):
            header = self.header_of(value)
            self.bind_var(var, header)
            self.let_functions[var] = value
            if declared is not None and self.unify(
                    header, declared, value, "T-Let",
                    f"the value of %{var.name_hint} does not have its declared type: ", notes):
                # T-Let's consistency premise: a cast point (spec 3.6)
                self.cast_site(let, -1, header, declared, "T-Let")
            self.current = value
            self.types[value] = self.infer_function(value, header)
            return
        if isinstance(value, Op) and declared is None:  # T-Let, operator value (spec/typing.md 3.6)
            scheme = self.op_scheme(value)
            if scheme is not None:
                self.types[value] = scheme
                self.bind_var(var, scheme)
                self.op_vars[id(var)] = value
                return
        ty = self.infer(value)
        if declared is None:
            self.bind_var(var, ty)
            return
        self.bind_var(var, declared)
        if self.unify(ty, declared, value, "T-Let",
                      f"the value of %{var.name_hint} does not have its declared type: ",
                      notes, parent=let):
            # T-Let's consistency premise: a cast point (spec 3.6)
            self.cast_site(let, -1, ty, declared, "T-Let")

    def infer_call(self, call: Call) -> Type:
        """T-App: instantiate the callee's type parameters (explicit type arguments or fresh
        holes), then each argument must have its parameter's type."""
        self.callee_of = call
        callee = self.infer(call.op)
        self.callee_of = None
        args = [self.infer(arg) for arg in call.args]
        fn = self.unifier.find(callee)
        who = _callee_name(call.op)
        if isinstance(fn, IncompleteType):
            if call.type_args:
                self.error(call, f"cannot give type arguments to {who}: its type is not "
                           "known here; annotate it", "T-App")
            ret = self.unifier.fresh()
            if not self.unify(fn, FuncType(tuple(args), ret), call.op, "T-App",
                              f"calling {who}: ", parent=call):
                return self.poison()
            return ret
        if not isinstance(fn, FuncType):
            self.error(call.op, f"cannot call {who}: it has type "
                       f"{show(self.unifier.resolve(fn))}, not a function type", "T-App",
                       parent=call)
            return self.poison()
        type_args: tuple[Type, ...] | None = None
        if call.type_args:
            if len(call.type_args) != len(fn.type_params):
                n = len(fn.type_params)
                self.error(call, f"{who} takes {n} type argument{'s' if n != 1 else ''}, "
                           f"found {len(call.type_args)}", "T-App", self.definition_notes(call))
            else:
                type_args = tuple(self.annotation(t, call) for t in call.type_args)
        inst = self.unifier.instantiate(fn, type_args)
        if len(args) != len(inst.arg_types):
            n = len(inst.arg_types)
            self.error(call, f"{who} takes {n} argument{'s' if n != 1 else ''}, found "
                       f"{len(args)}", "T-App", self.definition_notes(call))
            return inst.ret_type
        own = self.callee_shape_vars(call.op, fn)
        if own:
            shaped = self.instantiate_shapes(call, inst, args, own)
            if shaped is None:
                return self.poison()
            inst = shaped
        for i, (arg, found, expected) in enumerate(zip(call.args, args, inst.arg_types,
                                                       strict=True)):
            if self.unify(found, expected, arg, "T-App", f"argument {i} of {who}: ",
                          self.param_notes(call.op, i), parent=call):
                # T-App's consistency premise: a cast point (spec 3.8)
                self.cast_site(call, i, found, expected, "T-App")
        if not own and self.shape_scope and (isinstance(call.op, GlobalVar)
                                             or id(self.function_of(call.op)) in self.in_progress) \
                and self.unifier.holes(fn.ret_type):
            # T-ShapeScope: the callee's own result type, still a hole (a global checked
            # later, a recursive call), is not unified with the caller's types, whose
            # match_cast variables would leak into it: the call's type is a copy of it once
            # it is known (as T-ShapeCall's instances are). Only where the caller has shape
            # variables to leak: elsewhere a use still fixes the callee's types (T-App).
            out = self.unifier.fresh()
            self.solver.add(_ShapeInstance(call, inst.ret_type, {}, out, self.owner))
            self.solver.solve()
            return out
        return inst.ret_type

    def global_as_value(self, gv: GlobalVar, header: FuncType) -> Type:
        """T-ShapeScope: a global used as a value, not called, has its own shape variables
        replaced by ``?`` (they are instantiated per call, and a value has no call to deduce
        them from; the run-time binding still checks each call of it)."""
        own = self.callee_shape_vars(gv, header)
        if not own:
            return header
        return substitute_type(self.unifier.resolve(header), dict.fromkeys(own, ANY))

    def callee_shape_vars(self, callee: Expr, fn: FuncType) -> frozenset[str]:
        """T-ShapeCall: the shape variables a call instantiates afresh: all those of a
        global's parameters (a global's are its own, recursion included), a function
        literal's own ones (T-ShapeScope), else those of the parameter types not in scope."""
        if isinstance(callee, GlobalVar):
            hit = self.global_shape_vars.get(id(fn))
            if hit is None or hit[0] is not fn:
                hit = (fn, frozenset().union(*(type_vars(t) for t in fn.arg_types)))
                self.global_shape_vars[id(fn)] = hit
            return hit[1]
        literal = self.function_of(callee)
        if literal is not None and id(literal) in self.own_shape_vars:
            return self.own_shape_vars[id(literal)]
        params = self.unifier.resolve(FuncType(fn.arg_types, UNIT))
        return frozenset().union(*(type_vars(t) for t in params.arg_types)) \
            - self.shape_scope

    def instantiate_shapes(self, call: Call, inst: FuncType, args: list[Type],
                           own: frozenset[str]) -> FuncType | None:
        """T-ShapeCall: ``inst`` with the callee's shape variables ``own`` replaced by the
        values deduced from the argument types (a bare variable in a parameter's dimension
        takes the argument's dimension, first occurrence first), the undeduced ones by
        ``?``; the other dimensions are then compared by unification (T-App). None after
        reporting a variable deduced to provably different values."""
        resolve = self.unifier.resolve
        params = tuple(resolve(t) for t in inst.arg_types)
        binding, conflicts = deduce(params, [resolve(a) for a in args], own)
        who = _callee_name(call.op)
        for c in conflicts:
            self.error(call, f"shape variable {c.name} of {who} is {dim_text(c.first)} by "
                       f"argument {c.first_arg} and {dim_text(c.second)} by argument "
                       f"{c.second_arg}", "T-ShapeCall", self.definition_notes(call))
        if conflicts:
            return None
        mapping = {name: binding.get(name, ANY) for name in own}
        ret = resolve(inst.ret_type)
        if self.unifier.holes(ret):  # known later: substituted then (_ShapeInstance)
            out = self.unifier.fresh()
            self.solver.add(_ShapeInstance(call, ret, mapping, out, self.owner))
            self.solver.solve()
            ret = out
        else:
            ret = substitute_type(ret, mapping)
        return FuncType(tuple(substitute_type(p, mapping) for p in params), ret, (),
                        inst.span)

    def shape_construct(self, call: Call, name: str, attrs: object) -> None:
        """The scoping side of the Relax constructs (their relations give their types):
        T-MatchCast binds the target's new shape variables for the rest of the enclosing
        function; T-DPS's output type uses only variables in scope; T-Dataflow's body is
        pure straight-line code."""
        if name == "match_cast":  # T-MatchCast
            target = getattr(attrs, "type", None)
            if not isinstance(target, Type):
                return
            new = type_vars(target) - self.shape_scope
            for v in sorted(new - bare_vars(target)):
                self.error(call, f"match_cast cannot bind the shape variable {v}: it must "
                           "appear alone as a dimension of the target type",
                           "T-MatchCast")
            if new:
                self.shape_scope |= new
            self.annotation(target, call)
        elif name in ("call_dps_packed", "call_tir"):  # T-DPS
            out = getattr(attrs, "out_type", None)
            if isinstance(out, Type):
                for v in sorted(type_vars(out) - self.shape_scope):
                    self.error(call, f"the output type of {name} uses the shape variable "
                               f"{v}, which is not bound by a parameter or a match_cast",
                               "T-DPS")
        elif name == "dataflow" and call.args:  # T-Dataflow
            if self._pure is None:
                self._pure = PureGlobals(self.mod.functions)
            bad = dataflow_violation(call.args[0], self._pure)
            if bad is not None:
                node, what = bad
                self.error(node if _span(node) is not None else call,
                           f"{what} is not allowed inside a dataflow block (only let "
                           "bindings of operator calls, tuples, projections, constants "
                           "and variables)", "T-Dataflow")

    def infer_op_call(self, call: Call) -> Type:
        """T-App-Op: the arguments' types feed the operator's type relation, queued with the
        call's attributes; the call's type is a hole the relation fills."""
        op = call.op
        assert isinstance(op, Op)
        try:
            opdef = get_op(op.name)
        except KeyError:
            self.error(op, f"unknown operator {op.name}", "T-App-Op")
            for arg in call.args:
                self.infer(arg)
            return self.poison()
        args = [self.infer(arg) for arg in call.args]
        if opdef.num_inputs >= 0 and len(args) != opdef.num_inputs:
            self.error(call, f"operator {op.name} takes {opdef.num_inputs} argument"
                       f"{'s' if opdef.num_inputs != 1 else ''}, found {len(args)}",
                       "T-App-Op")
            return self.poison()
        if call.type_args:
            self.error(call, f"operator {op.name} takes no type arguments", "T-App-Op")
        attrs = call.attrs if call.attrs is not None else _default_attrs(opdef)
        if op.name in _SHAPE_CONSTRUCTS:
            self.shape_construct(call, op.name, attrs)
        out = self.unifier.fresh()
        self.types[op] = FuncType(tuple(args), out)
        self.solver.add(self.relation(call, opdef, attrs, args, out))
        self.solver.solve()
        return out

    def op_scheme(self, op: Op) -> FuncType | None:
        """T-Let with an operator value: the scheme ``fn[t1…tn, t](t1…tn) -> t`` (its
        relation left out, as the text format writes it) of an operator bound by
        ``let %f = op;``; each use of ``%f`` is then a fresh T-Op instance (``infer``).
        None (reported) if the operator cannot be a value."""
        usable = self.op_value_def(op)
        if usable is None:
            return None
        params = tuple(TypeVar(f"t{i + 1}") for i in range(usable[0].num_inputs + 1))
        return FuncType(params[:-1], params[-1], params)

    def op_value_def(self, op: Op) -> tuple[OpDef, object] | None:
        """The definition and default attributes of an operator used as a value (T-Op), or
        None, reported, where it can only be called."""
        try:
            opdef = get_op(op.name)
        except KeyError:
            self.error(op, f"unknown operator {op.name}", "T-Op")
            return None
        attrs = _default_attrs(opdef)
        if attrs is None and opdef.attrs is not NoAttrs:
            self.error(op, f"operator {op.name} has attributes without defaults, so it can "
                       f"only be called (with them), not used as a value", "T-Op")
            return None
        if opdef.num_inputs < 0:
            self.error(op, f"operator {op.name} takes a variable number of arguments, so it "
                       "can only be called, not used as a value", "T-Op")
            return None
        return opdef, attrs

    def infer_op_value(self, op: Op, at: Expr | None = None) -> Type:
        """T-Op: ``op : fn[t1…tn, t](t1…tn) -> t where R_op(t1…tn, t)`` with the op's default
        attributes, instantiated here with fresh holes (each use of the op gets its own),
        the relation queued over them like a call's (T-App-Op); its errors are reported at
        ``at`` (the use: the call of a let-bound ``%f``), else at ``op``."""
        usable = self.op_value_def(op)
        if usable is None:
            return self.poison()
        opdef, attrs = usable
        args = [self.unifier.fresh() for _ in range(opdef.num_inputs)]
        out = self.unifier.fresh()
        rel = self.relation(op, opdef, attrs, args, out)
        rel.at = at if at is not None else op
        self.solver.add(rel)
        self.solver.solve()
        return FuncType(tuple(args), out)

    def constructor_type(self, ctor: Constructor) -> Type:
        """T-Constructor: ``C : fn[vars](fields) -> Adt[vars]``."""
        td = self.adts.get(ctor.belong_to.name)
        if td is None:
            self.error(ctor, f"constructor {ctor.name} belongs to {ctor.belong_to.name}, "
                       "which this module does not define", "T-Constructor")
            return self.poison()
        return FuncType(tuple(ctor.inputs), TypeCall(td.header, tuple(td.type_vars)),
                        tuple(td.type_vars))

    def infer_match(self, expr: Match) -> Type:
        """T-Match: every clause's pattern fits the scrutinee's type (TP-* rules) and every
        clause's body has one common type; a ``match`` (not ``match?``) must be exhaustive
        (T-Match-Complete)."""
        data = self.infer(expr.data)
        result: Type | None = None
        first: Clause | None = None
        patterns_ok = True
        shapes = self.shape_scope
        for clause in expr.clauses:
            patterns_ok &= self.check_pattern(clause.lhs, data, clause)
            # T-MatchCast: a clause's bindings stay in it; its value forgets them
            # (T-ShapeScope)
            rhs = self.erase_scoped(self.infer(clause.rhs), shapes, clause.rhs)
            self.shape_scope = shapes
            if result is None:
                result, first = rhs, clause
                continue
            assert first is not None
            if self.unify(rhs, result, clause.rhs, "T-Match",
                          "the clauses of match have different types: ",
                          (Note(f"the first clause has type "
                                f"{show(self.unifier.resolve(result))}",
                                _use_span(first.rhs, first)),),
                          parent=clause if _span(clause) is not None else expr):
                # T-Match's consistency premise: a cast point per clause (spec 3.13)
                self.cast_site(clause, -1, rhs, result, "T-Match")
        if expr.complete and patterns_ok:
            self.check_exhaustive(expr, data)
        return result if result is not None else self.unifier.fresh()

    def check_exhaustive(self, expr: Match, data: Type) -> None:
        """T-Match-Complete (spec 3.14)."""
        if not expr.clauses:
            ty = self.unifier.find(data)
            if isinstance(ty, TypeCall):
                td = self.adts.get(ty.func.name)
                if td is not None and not td.constructors and not td.is_extern:
                    return  # an empty ADT has no values
        missing = missing_case([c.lhs for c in expr.clauses], self.constructors_of)
        if missing is not None:
            self.error(expr, f"match is not exhaustive: no clause matches {missing} "
                       "(add a clause, or write match? for a partial match)",
                       "T-Match-Complete")

    def constructors_of(self, ctor: Constructor) -> tuple[Constructor, ...] | None:
        td = self.adts.get(ctor.belong_to.name)
        return None if td is None else td.constructors

    def check_pattern(self, pattern: Pattern, expected: Type, clause: Clause) -> bool:
        """TP-* rules (spec 3.13): ``pattern`` matches values of type ``expected`` and binds
        its variables. Returns False after reporting an error."""
        where = pattern if _span(pattern) is not None else clause
        match pattern:
            case PatternWildcard():  # TP-Wild
                return True
            case PatternVar(var):  # TP-Var
                if var.type_annotation is None:
                    self.bind_var(var, expected)
                    return True
                declared = self.annotation(var.type_annotation, var)
                self.bind_var(var, declared)
                if not self.unify(expected, declared, where, "TP-Var",
                                  f"the pattern variable %{var.name_hint}: "):
                    return False
                # TP-Var's consistency premise: a cast point on the bound value (3.13)
                self.cast_site(var, -1, expected, declared, "TP-Var")
                return True
            case PatternConstructor(ctor, subpatterns):  # TP-Ctor
                td = self.adts.get(ctor.belong_to.name)
                if td is None:
                    self.error(where, f"constructor {ctor.name} belongs to "
                               f"{ctor.belong_to.name}, which this module does not define",
                               "TP-Ctor")
                    self.bind_poisoned(pattern)
                    return False
                holes = tuple(self.unifier.fresh() for _ in td.type_vars)
                mapping = dict(zip(td.type_vars, holes, strict=True))
                ok = self.unify(expected, TypeCall(td.header, holes), where, "TP-Ctor",
                                f"the pattern {ctor.name} matches {td.name} values, but the "
                                "scrutinee is different: ")
                if len(subpatterns) != len(ctor.inputs):
                    n = len(ctor.inputs)
                    self.error(where, f"constructor {ctor.name} has {n} field"
                               f"{'s' if n != 1 else ''}, the pattern gives "
                               f"{len(subpatterns)}", "TP-Ctor")
                    self.bind_poisoned(pattern)
                    return False
                for sub, field in zip(subpatterns, ctor.inputs, strict=True):
                    ok &= self.check_pattern(sub, substitute(field, mapping), clause)
                return ok
            case PatternTuple(subpatterns):  # TP-Tuple
                holes = tuple(self.unifier.fresh() for _ in subpatterns)
                ok = self.unify(expected, TupleType(holes), where, "TP-Tuple",
                                f"the pattern is a {len(holes)}-tuple, but the scrutinee "
                                "is different: ")
                for sub, hole in zip(subpatterns, holes, strict=True):
                    ok &= self.check_pattern(sub, hole, clause)
                return ok
        # No TP-* rule applies to a node of another class: T-Match's premise fails.
        self.error(where, f"not a pattern: {type(pattern).__name__}", "T-Match")
        return False

    def bind_poisoned(self, pattern: Pattern) -> None:
        for var in pattern_vars(pattern):
            self.bind_var(var, self.poison())

    # -- notes pointing at definitions --------------------------------------------------------
    def function_of(self, callee: Expr) -> Function | None:
        match callee:
            case GlobalVar(name):
                return self.mod.functions.get(name)
            case Var():
                return self.let_functions.get(callee)
            case Function():
                return callee
        return None

    def definition_notes(self, call: Call) -> tuple[Note, ...]:
        fn = self.function_of(call.op)
        if fn is not None and _span(fn) is not None:
            return (Note("the function is defined here", _span(fn)),)
        if isinstance(call.op, Constructor) and _span(call.op) is not None:
            return (Note(f"constructor {call.op.name} is defined here", _span(call.op)),)
        return ()

    def param_notes(self, callee: Expr, index: int) -> tuple[Note, ...]:
        fn = self.function_of(callee)
        if fn is not None and index < len(fn.params):
            param = fn.params[index]
            span = _span(param.type_annotation) or _span(param)
            if span is not None:
                return (Note(f"parameter %{param.name_hint} is declared here", span),)
        if isinstance(callee, Constructor) and _span(callee) is not None:
            return (Note(f"constructor {callee.name} is defined here", _span(callee)),)
        return ()


# The checker's parts that extend it (the derivation recorder, typecheck/derive.py): a
# subclass of ``Checker`` wraps its rule dispatch; ``OpRelation`` / ``Projection`` are the
# constraints its ``relation`` / ``projection`` hooks return; ``guarded`` runs a body as the
# public entry points do (internal failures become a located RelayTypeError).
Checker = _Checker
OpRelation = _OpRelation
Projection = _Projection
guarded = _guarded


def _checked_annotation(ty: Type | None) -> bool:
    """Whether ``ty`` is an annotation that the interpreter and the executor already check
    on entry or exit (a tensor type of static, non-empty shape: the annotation check of
    spec/semantics.md 4), so that a cast point to it would check the same thing twice."""
    return type(ty) is TensorType and bool(ty.shape) and all(type(d) is int for d in ty.shape)


#: The operators whose typing also has a scoping side (``shape_construct``, spec 5.3).
_SHAPE_CONSTRUCTS = frozenset({"match_cast", "call_dps_packed", "call_tir", "dataflow"})


def _callee_name(callee: Expr) -> str:
    match callee:
        case GlobalVar(name):
            return f"@{name}"
        case Var():
            return f"%{callee.name_hint}"
        case Constructor():
            return f"constructor {callee.name}"
    return "this function"


def _default_attrs(opdef: OpDef) -> object:
    """The op's attrs with every default (for IR built without attrs), or None."""
    try:
        return opdef.attrs()
    except Exception:  # noqa: BLE001 - attrs without defaults: the relation gets None
        return None
