"""PartialEvaluate: an online partial evaluator over the whole language (TVM's
``partial_eval.cc``; Relay paper section 4, papers.md 1.6). Rules: spec/partial_eval.md.

The pass runs the definitional interpreter on *partially static values* (``PS``): a static
part (a tensor, a tuple, an ADT value, a closure, an operator, a reference cell) that may be
missing, and a dynamic part, an *atom* (variable, constant, global, operator, constructor)
naming the value in the residual program. Static operator calls are folded with the
operator's NumPy reference, static closures and globals are unfolded at their calls,
``if``/``match`` on static values pick their branch, and references live in a simulated
store (a cell's known content is read without a ``ref_read``). Whatever is not static is
emitted, in evaluation order, into a *let-list*, so the residual program is in A-normal
form: every dynamic expression is computed once and named, never duplicated.

Guarantee. For every module: the result type-checks, ``@main``'s type is unchanged, and the
result refines the input (the same value on every input where the input returns one; a
residual that no longer computes an unused failing operator may return where the input
failed). The pass terminates on every program. Effects (``ref``, ``ref_read``,
``ref_write``, calls of unknown functions) are emitted in the input's order and number;
the clean-up afterwards (``_Tidy``, and ``resolve_deferred`` dropping the writes of
deferred closures) only removes what cannot be observed: unused pure bindings, and cells
that are only ever written (after their reads were all resolved statically).

Invariants.
* Residual code is built from fresh variables only (the input's binders are never copied,
  except a global's own parameters), so every ``Var`` is bound once (the IR's binder rule).
* A ``PS``'s atom is valid only while the let-list it was bound in is open (``scope``);
  a static value is re-emitted (``reify``) when needed in a scope where it was not yet named.
* Deferred reification (Reify-Fn-Deferred): a closure written into a known cell gets a
  reserved binding and its residual function is made after the whole body, only if the
  residual program needs it (``resolve_deferred``); while it is made, an atom is valid
  only if bound before the reserved binding in a let-list open at the write (``limit``,
  ``PS.pos``), and the unfolding context is the write's. So the AD output's
  backpropagator closures, whose cell is only ever read statically, are never reified,
  and PE stays linear on it (each would unfold the whole ``%prev()`` chain).
* The store is rolled back after a residual branch or function body, and invalidated (all
  cells unknown) after anything that may run unknown code: a call of a dynamic function, a
  residual ``if``/``match``, a write through a dynamic reference (TVM's ``Store``).
* Termination (TVM's fuel): a call of a known function is unfolded only if its arguments
  make *progress* against that function's fuel on the current path: some argument (or the
  callee, a closure: its environment) is older (created earlier: a sub-term of an earlier
  argument) or is a smaller non-negative integer constant. Fuel strictly descends along a
  path, so unfolding stops; recursion on dynamic arguments is never unrolled (a dynamic
  argument is always newer). Two explicit bounds cap the output: ``MAX_UNFOLD_DEPTH``
  nested unfoldings of one function on a path, and ``UNFOLD_BUDGET`` unfoldings per global
  function.
* Types: residual code has the input's types. Annotations written into it (parameters of
  residual functions and of globals, bindings of constructor values whose fields do not
  fix their type, pattern variables, type arguments) are checked types instantiated at
  the use, never mentioning a type variable out of scope; an expression typed with ``?``
  whose residual code may be more precise is bound to a variable annotated with its
  checked type (PE-Retype).
* Graph bindings (a node reached by several edges) are evaluated once per activation, as
  in the interpreter (spec/semantics.md 2.3); the cost is linear in the nodes.
* Deep programs: let chains and static branches are followed in a loop, graph-form
  dataflow (operator calls, tuples, projections: the importers' ``%i = f(%i-1)`` chains)
  is walked with an explicit stack (``_PE.prefix``); the rest (nests of lets, functions
  and branches inside expressions) recurses, on a big-stack thread
  (``relay_ref.deepstack.run_deep``).

Not done (as in TVM): no partial matches (a ``match`` is either decided or residual with all
its clauses), no store join after a residual branch (it is invalidated), no escape
analysis (an unknown call invalidates every cell).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from relay_ref.deepstack import run_deep
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
    children,
    pattern_vars,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.sharing import sharing_plan
from relay_ref.ir.types import (
    FuncType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    free_type_vars,
    is_complete,
    substitute,
)
from relay_ref.ir.visitor import dataflow_operands, free_vars, post_order, shared_nodes
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.effects import STATEFUL_OPS
from relay_ref.passes.rewrite import fresh_copy, rewrite, with_children
from relay_ref.passes.to_a_normal_form import convert_function

#: Relax's constructs stay in the residual program: match_cast binds shape variables where
#: it stands (T-MatchCast), call_dps_packed/call_tir run a user's function at run time.
_NOT_FOLDED = frozenset({"match_cast", "call_dps_packed", "call_tir"})

#: Nested unfoldings of one function on one path (beyond that, calls stay residual).
MAX_UNFOLD_DEPTH = 64
#: Unfoldings of known functions while partially evaluating one global function.
UNFOLD_BUDGET = 4000
#: Nesting depth of the expressions that the clean-up builds by inlining bindings used once.
MAX_INLINE_DEPTH = 12

__all__ = ["MAX_UNFOLD_DEPTH", "UNFOLD_BUDGET", "PartialEvaluate", "partial_evaluate"]


# -- partially static values --------------------------------------------------------------
@dataclass(slots=True, eq=False)
class PS:
    """A partially static value: ``static`` (or None) and its residual atom ``dyn`` (None
    until the value is first needed in residual code), valid while ``scope`` is open
    (``scope`` None: an atom valid everywhere: constant, global, operator, constructor).
    ``time`` orders creation (the fuel); ``fill`` is 0.0 or 1.0 when the tensor is known to
    be all zeros or all ones (``zeros_like(%x)``), for the unit rules; ``pos`` is the index
    of ``dyn``'s binding in ``scope`` (-1: a parameter), for deferred reification."""

    static: object | None
    dyn: Expr | None
    scope: _LetList | None
    time: int
    fill: float | None = None
    pos: int = -1


@dataclass(slots=True, eq=False)
class STensor:
    data: np.ndarray


@dataclass(slots=True, eq=False)
class STuple:
    fields: tuple[PS, ...]


@dataclass(slots=True, eq=False)
class SCtor:
    ctor: Constructor
    fields: tuple[PS, ...]
    ty: Type | None = None  # its type where it was built (to annotate a residual binding)
    typed: bool | None = None  # do its fields fix its type (memo of ``_PE.self_typed``)


@dataclass(slots=True, eq=False)
class SRef:
    """A reference cell of the simulated store (identity is the location)."""


@dataclass(slots=True, eq=False)
class SClosure:
    """A function literal with the values of its free variables; ``rec`` is the ``let``
    variable that names it inside its own body (E-Let-Rec)."""

    func: Function
    env: dict[Var, PS]
    rec: Var | None
    tsubst: dict[TypeVar, Type]


@dataclass(slots=True, eq=False)
class SGlobal:
    name: str


@dataclass(slots=True, eq=False)
class SOp:
    op: Op


@dataclass(slots=True, eq=False)
class SCtorFn:
    ctor: Constructor


# -- let-lists, frames and the store ----------------------------------------------------
class _LetList:
    """Residual bindings of one scope, in evaluation order (TVM's ``LetList``)."""

    __slots__ = ("bindings", "open")

    def __init__(self) -> None:
        self.bindings: list[tuple[Var, Expr]] = []
        self.open = True

    def push(self, value: Expr, hint: str, ty: Type | None = None) -> Var:
        var = Var(hint, ty)
        self.bindings.append((var, value))
        return var

    def finish(self, result: Expr) -> Expr:
        self.open = False
        body = result
        for var, value in reversed(self.bindings):
            body = Let(var, value, body)
        return body


class _Frame:
    """Values of variables (and of shared nodes) in one activation; a residual branch gets
    a child frame, so what it binds is forgotten after it."""

    __slots__ = ("vars", "parent")

    def __init__(self, vars: dict | None = None, parent: _Frame | None = None) -> None:
        self.vars: dict = {} if vars is None else vars
        self.parent = parent

    def get(self, key: object) -> PS | None:
        frame: _Frame | None = self
        while frame is not None:
            got = frame.vars.get(key)
            if got is not None:
                return got
            frame = frame.parent
        return None


class _Store:
    """Cell -> known content, in frames: a residual branch pushes a frame and pops it after
    (rollback); ``invalidate`` pushes a frame that hides everything below it."""

    def __init__(self) -> None:
        self.frames: list[tuple[dict[SRef, PS], bool]] = [({}, True)]

    def lookup(self, cell: SRef) -> PS | None:
        for entries, history_valid in reversed(self.frames):
            got = entries.get(cell)
            if got is not None:
                return got
            if not history_valid:
                return None
        return None

    def insert(self, cell: SRef, value: PS) -> None:
        self.frames[-1][0][cell] = value

    def invalidate(self) -> None:
        self.frames.append(({}, False))

    @contextmanager
    def extend(self) -> Iterator[None]:
        depth = len(self.frames)
        self.frames.append(({}, True))
        try:
            yield
        finally:
            del self.frames[depth:]


@dataclass(slots=True, eq=False)
class _Deferred:
    """A closure written into a known cell whose reification waits (Reify-Fn-Deferred):
    its value, the let-list and index of its reserved binding, the let-lists open there
    with the number of their bindings in scope, and the unfolding context."""

    ps: PS
    s: SClosure
    ll: _LetList
    pos: int
    limit: dict[_LetList, int]
    tvars: frozenset[TypeVar]
    fuel: dict[Function, tuple[tuple[int, int], ...]]
    depth: Counter[Function]
    reifying: Counter[Function]


#: The value of a reserved binding until its deferred function is made (never in the output).
_RESERVED = Tuple(())


class _Unknown(Exception):
    """A pattern cannot be decided statically."""


# -- the unit rules (pattern, rewrite): an operator call that returns one argument -------
#: (op, position of the unit argument, its fill): the call is the *other* argument when that
#: argument has the call's (static) type.
_UNIT_RULES: tuple[tuple[str, int, float], ...] = (
    ("add", 0, 0.0),        # add(zeros, %x) -> %x
    ("add", 1, 0.0),        # add(%x, zeros) -> %x
    ("subtract", 1, 0.0),   # subtract(%x, zeros) -> %x
    ("multiply", 0, 1.0),   # multiply(ones, %x) -> %x
    ("multiply", 1, 1.0),   # multiply(%x, ones) -> %x
    ("divide", 1, 1.0),     # divide(%x, ones) -> %x
)
#: (op, argument): the call is that argument when the argument has the call's (static) type.
_IDENTITY_RULES: tuple[tuple[str, int], ...] = (
    ("collapse_sum_like", 0),   # collapse_sum_like(%x, %y) -> %x (nothing to sum)
    ("broadcast_to_like", 0),   # broadcast_to_like(%x, %y) -> %x (nothing to broadcast)
    ("reshape_like", 0),        # reshape_like(%x, %y) -> %x (same shape)
    ("cast_like", 0),           # cast_like(%x, %y) -> %x (same dtype)
)
#: Residual operator calls whose result is known to be all zeros or all ones.
_FILL_OPS = {"zeros_like": 0.0, "zeros": 0.0, "ones_like": 1.0, "ones": 1.0}


def _primitive(func: Function) -> bool:
    return bool(func.attr("Primitive", 0))


def _subst(ty: Type | None, m: dict[TypeVar, Type]) -> Type | None:
    """``ty`` with type variables replaced by ``m`` (``relay_ref.ir.types.substitute``)."""
    return None if ty is None else substitute(ty, m)


def _bind_types(pattern: Type, ty: Type, out: dict[TypeVar, Type]) -> None:
    """Extend ``out`` so that ``pattern`` (mentioning type parameters) becomes ``ty``.
    A polymorphic ``ty`` (a constructor or a polymorphic global used as a value: its type
    as declared, not as instantiated at this use) binds nothing: its type variables are
    not in scope at the use."""
    if type(ty) is FuncType and ty.type_params:
        return
    match pattern, ty:
        case TypeVar(), _:
            out.setdefault(pattern, ty)
        case TupleType(ps), TupleType(ts) if len(ps) == len(ts):
            for p, t in zip(ps, ts, strict=True):
                _bind_types(p, t, out)
        case FuncType(pa, pr), FuncType(ta, tr) if len(pa) == len(ta):
            for p, t in zip(pa, ta, strict=True):
                _bind_types(p, t, out)
            _bind_types(pr, tr, out)
        case RefType(p), RefType(t):
            _bind_types(p, t, out)
        case TypeCall(_, pa), TypeCall(_, ta) if len(pa) == len(ta):
            for p, t in zip(pa, ta, strict=True):
                _bind_types(p, t, out)


def _function_free_vars(roots: list[Function]) -> dict[Function, tuple[Var, ...]]:
    """The free variables of every function literal under ``roots``, in one traversal.

    ``fv(F)`` = the variables used directly in ``F`` (not under a nested function) and the
    free variables of its nested functions, less those ``F`` binds (parameters, ``let``s,
    pattern variables). Every node is visited once per innermost enclosing function (a
    node shared by several functions once for each), so the cost is the size of the
    program plus the size of the result, not ``free_vars`` once per function (quadratic on
    nested closures)."""
    out: dict[Function, tuple[Var, ...]] = {}
    uses: dict[Function, dict[Var, None]] = {}
    bound: dict[Function, set[Var]] = {}
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Expr, Function | None, bool]] = [(r, None, False) for r in roots]
    while stack:
        node, owner, done = stack.pop()
        if done:  # every node under the function ``node`` was visited
            fv = tuple(v for v in uses.pop(node) if v not in bound[node])
            del bound[node]
            out[node] = fv
            if owner is not None:
                uses[owner].update(dict.fromkeys(fv))
            continue
        key = (id(node), id(owner))
        if key in seen:
            continue
        seen.add(key)
        match node:
            case Var():
                if owner is not None:
                    uses[owner][node] = None
                continue
            case Function(params):
                got = out.get(node)
                if got is not None:  # reached again from another function
                    if owner is not None:
                        uses[owner].update(dict.fromkeys(got))
                    continue
                uses[node], bound[node] = {}, set(params)
                stack.append((node, owner, True))
                for kid in reversed(tuple(children(node))):
                    stack.append((kid, node, False))
                continue
            case Let(var) if owner is not None:
                bound[owner].add(var)
            case Match(_, clauses) if owner is not None:
                for clause in clauses:
                    bound[owner].update(pattern_vars(clause.lhs))
        for kid in reversed(tuple(children(node))):
            stack.append((kid, owner, False))
    return out


def _type_vars(ty: Type | None, out: set[TypeVar]) -> set[TypeVar]:
    """The type variables occurring free in ``ty`` (added to ``out``)."""
    out.update(free_type_vars(ty))
    return out


def _has_any(ty: Type | None) -> bool:
    """A ``?`` dimension anywhere in ``ty``: a residual value may have a more precise
    type than the expression it replaces (``@f(zeros((5, 3)))`` for ``@f: (?, 3)``)."""
    match ty:
        case TensorType():
            return not ty.is_static
        case TupleType(fields):
            return any(_has_any(f) for f in fields)
        case FuncType(args, ret):
            return any(_has_any(a) for a in args) or _has_any(ret)
        case RefType(value):
            return _has_any(value)
        case TypeCall(_, args):
            return any(_has_any(a) for a in args)
    return False




def _fill_of(data: np.ndarray) -> float | None:
    if data.dtype.kind not in "fiub" or data.size == 0:
        return None
    for fill in (0.0, 1.0):
        if bool(np.all(data == fill)):
            return fill
    return None


#: nodes whose ``visit_step`` visits their operands (``dataflow_operands``) and nothing else, in
#: the frame they are in (a call's callee is an atom: ``_ATOMS``)
_DATAFLOW = (Call, Tuple, TupleGetItem)
_ATOMS = (Var, Constant, GlobalVar, Op, Constructor)



# -- the partial evaluator -------------------------------------------------------------
class _PE:
    """Partially evaluates the functions of one (type-checked) module."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.types = mod.checked_types
        self.shared = shared_nodes(mod)
        self.clock = itertools.count()
        self.fuel: dict[Function, tuple[tuple[int, int], ...]] = {}
        self.depth: Counter[Function] = Counter()
        self.reifying: Counter[Function] = Counter()
        self.budget = UNFOLD_BUDGET
        self.store = _Store()
        self.ll = _LetList()
        self.tsubst: dict[TypeVar, Type] = {}
        self.tvars: frozenset[TypeVar] = frozenset()  # type parameters in scope here
        self.fv_cache = _function_free_vars(list(mod.functions.values()))
        self.chain: list[_LetList] = []  # the open let-lists, outermost first
        self.limit: dict[_LetList, int] = {}  # while resolving a deferred function
        self.pending: dict[Var, _Deferred] = {}
        # the dataflow prefix (``prefix``): values of operands computed ahead of their
        # parent, and nodes whose prefix walk stopped, by (node, frame) identity
        self.pre: dict[tuple[int, int], PS] = {}
        self.blocked: set[tuple[int, int]] = set()

    # -- values ----------------------------------------------------------------------------
    def mk(self, static: object, dyn: Expr | None = None, scope: _LetList | None = None,
           fill: float | None = None) -> PS:
        pos = len(scope.bindings) - 1 if scope is not None else -1  # just bound there
        return PS(static, dyn, scope, next(self.clock), fill, pos)

    def emit(self, value: Expr, hint: str = "x", fill: float | None = None) -> PS:
        """A dynamic value: ``value`` bound to a fresh variable in the current let-list."""
        var = self.ll.push(value, hint)
        return PS(None, var, self.ll, next(self.clock), fill, len(self.ll.bindings) - 1)

    def tensor(self, data: np.ndarray, node: Constant | None = None) -> PS:
        data = np.asarray(data)
        return self.mk(STensor(data), node if node is not None else Constant(data), None,
                       _fill_of(data))

    def reify(self, ps: PS, typed: bool = False) -> Expr:
        """The atom of ``ps`` in the current scope, emitting its construction if needed
        (Reify-* rules, spec/partial_eval.md 3). ``typed``: the use fixes the value's type
        (a field of a constructor whose type is fixed), so no annotation is needed."""
        if self.in_scope(ps):
            return ps.dyn  # type: ignore[return-value]
        s = ps.static
        scope: _LetList | None = self.ll
        match s:
            case STensor(data):                                          # Reify-Const
                atom: Expr = Constant(data)
                scope = None
            case STuple(fields):                                         # Reify-Tuple
                atom = self.ll.push(Tuple(tuple(self.reify(f) for f in fields)), "t")
            case SCtor(ctor, fields, ty):                                # Reify-Ctor
                # ``Nil`` alone: only an annotation fixes its type arguments
                ann = None if typed or self.self_typed(s) else self.annotation(ty)
                atom = self.ll.push(Call(ctor, tuple(self.reify(f, True) for f in fields)),
                                    ctor.name.lower(), ann)
            case SClosure():                                             # Reify-Fn
                return self.reify_closure(ps, s)
            case SGlobal(name):
                atom, scope = GlobalVar(name), None
            case SOp(op):
                atom, scope = op, None
            case SCtorFn(ctor):
                atom, scope = ctor, None
            case _:
                raise AssertionError("partial_eval: a value used outside its scope")
        ps.dyn, ps.scope = atom, scope
        if scope is not None:
            ps.pos = len(scope.bindings) - 1
        return atom

    def in_scope(self, ps: PS) -> bool:
        """Is ``ps``'s atom bound here? Its let-list is open, or (a deferred reification,
        Reify-Fn-Deferred) it is bound before the deferred function in one of the let-lists
        that were open there (``self.limit``)."""
        if ps.dyn is None:
            return False
        scope = ps.scope
        if scope is None:
            return True
        limit = self.limit.get(scope)
        if limit is not None:
            return ps.pos < limit
        return scope.open

    def reflect(self, ps: PS) -> object | None:
        """The NumPy value of a static tensor (or tuple of them), else None."""
        s = ps.static
        if type(s) is STensor:
            return s.data
        if type(s) is STuple:
            out = [self.reflect(f) for f in s.fields]
            return None if any(v is None for v in out) else tuple(out)
        return None

    def from_value(self, value: object) -> PS | None:
        if isinstance(value, np.ndarray | np.generic):
            return self.tensor(np.asarray(value))
        if type(value) is tuple:
            fields = [self.from_value(v) for v in value]
            if any(f is None for f in fields):
                return None
            return self.mk(STuple(tuple(fields)))  # type: ignore[arg-type]
        return None

    def type_of(self, node: Expr) -> Type | None:
        ty = self.types.get(node)
        if ty is None and type(node) is Var:
            ty = node.type_annotation
        return _subst(ty, self.tsubst)

    def annotation(self, ty: Type | None) -> Type | None:
        """``ty`` if it may be written into the residual program here: complete, and its
        type variables in scope (never a callee's or an ADT's own parameter); else None."""
        if ty is None or not is_complete(ty) or not _type_vars(ty, set()) <= self.tvars:
            return None
        return ty

    def retyped(self, ps: PS, want: Type | None) -> PS:
        """PE-Retype: ``ps`` as a value of type ``want`` (an expression's checked type with
        ``?`` dimensions), bound to a variable annotated so, since its residual code may
        have a more precise type (a static shape) that would change the program's type."""
        ann = self.annotation(want) if _has_any(want) else None
        if ann is None:
            return ps
        var = self.ll.push(self.reify(ps), "a", ann)
        return PS(None, var, self.ll, next(self.clock), None, len(self.ll.bindings) - 1)

    def type_args(self, type_args: tuple[Type, ...]) -> tuple[Type, ...]:
        """Explicit type arguments of a residual call, instantiated here; none at all (the
        checker infers them) when one cannot be written in this scope."""
        out = tuple(self.annotation(_subst(t, self.tsubst)) for t in type_args)
        return () if any(t is None for t in out) else out  # type: ignore[return-value]

    def self_typed(self, s: SCtor) -> bool:
        """Do the fields of a static ADT value fix its type arguments (``Cons(1, Nil)``
        does, ``Nil`` and ``Cons(Nil, Nil)`` do not)? Fields that are not ADT values
        count as typed (atoms are typed by their bindings); memoised on ``s``."""
        if s.typed is None:
            td = self.mod.type_definitions.get(s.ctor.belong_to.name)
            need = set(td.type_vars) if td is not None else set()
            pending = []
            for t, f in zip(s.ctor.inputs, s.fields, strict=True):
                if type(f.static) is SCtor:
                    pending.append((t, f.static))
                else:
                    need.difference_update(_type_vars(t, set()))
            for t, f in pending:
                if not need:
                    break
                if self.self_typed(f):
                    need.difference_update(_type_vars(t, set()))
            s.typed = not need
        return s.typed

    def free_vars_of(self, func: Function) -> tuple[Var, ...]:
        got = self.fv_cache.get(func)
        if got is None:
            got = self.fv_cache[func] = tuple(free_vars(func))
        return got

    def closure(self, func: Function, frame: _Frame, rec: Var | None) -> PS:
        """PE-Fn: a static closure (its residual function is made only if it escapes)."""
        env = {}
        for v in self.free_vars_of(func):
            if v is not rec:
                got = frame.get(v)
                if got is None:
                    raise AssertionError(f"partial_eval: unbound variable %{v.name_hint}")
                env[v] = got
        return self.mk(SClosure(func, env, rec, dict(self.tsubst)))

    # -- the rules ------------------------------------------------------------------------
    def visit(self, expr: Expr, frame: _Frame) -> PS:
        """The partially static value of ``expr`` in ``frame``; residual code goes to
        ``self.ll``. Let bodies and decided branches are continued in the loop."""
        while True:
            if expr in self.shared:                                      # PE-Shared
                got = frame.get(expr)
                if got is None:
                    got = self.visit_step(expr, frame)
                    if isinstance(got, tuple):
                        got = self.visit(got[0], got[1])
                    frame.vars[expr] = got
                return got
            if type(expr) in _DATAFLOW and (type(expr) is not Call
                                            or isinstance(expr.op, _ATOMS)):
                key = (id(expr), id(frame))
                got = self.pre.pop(key, None)
                if got is not None:
                    return got
                if key not in self.blocked:
                    self.prefix(expr, frame)
            out = self.visit_step(expr, frame)
            if not isinstance(out, tuple):
                return out
            expr, frame = out

    def prefix(self, root: Expr, frame: _Frame) -> None:
        """Evaluate the operands under ``root`` (not ``root``) in the order ``visit``
        reaches them (post-order, left to right), iteratively, while they are operator
        calls, tuples and projections (``_DATAFLOW``): a 10 000-node graph-form chain needs
        no deep stack. Values go to ``self.pre`` (shared nodes to the frame, as ``visit``
        puts them), for their parent's ``visit_step`` to take. The walk stops at the first
        other node (a ``let``, a function, an ``if``...), leaving it and what follows to
        the recursion, so the residual code comes out in the same order; the nodes above
        the stop are ``blocked`` (not walked again: linear)."""
        fid = id(frame)
        stack: list[tuple[Expr, bool]] = [(c, False) for c in reversed(dataflow_operands(root))]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                if node in self.shared:
                    self.visit(node, frame)
                else:
                    got = self.visit_step(node, frame)
                    assert not isinstance(got, tuple), "a dataflow node is one step"
                    self.pre[(id(node), fid)] = got
                continue
            if isinstance(node, _ATOMS) or (node in self.shared and frame.get(node)
                                            is not None):
                continue
            if type(node) not in _DATAFLOW or (
                    type(node) is Call and not isinstance(node.op, _ATOMS)):
                self.blocked.update((id(n), fid) for n, done in stack if done)
                return
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(dataflow_operands(node)))

    def visit_step(self, expr: Expr, frame: _Frame) -> PS | tuple[Expr, _Frame]:
        """One rule: a value, or (for a step) the expression to continue with."""
        match expr:
            case Var():                                                  # PE-Var
                got = frame.get(expr)
                if got is None:
                    raise AssertionError(f"partial_eval: unbound variable %{expr.name_hint}")
                return got
            case GlobalVar(name):                                        # PE-Global
                return self.mk(SGlobal(name), expr)
            case Constant(data):                                         # PE-Const
                return self.tensor(data, expr)
            case Tuple(fields):                                          # PE-Tuple
                return self.mk(STuple(tuple(self.visit(f, frame) for f in fields)))
            case TupleGetItem(tup, index):
                ps = self.visit(tup, frame)
                if type(ps.static) is STuple:                            # PE-Proj-Static
                    return ps.static.fields[index]
                return self.emit(TupleGetItem(self.reify(ps), index), "p")  # PE-Proj-Dyn
            case Let(var, value, body):                                  # PE-Let, PE-Let-Rec
                if type(value) is Function and value not in self.shared:
                    frame.vars[var] = self.closure(value, frame, var)
                else:
                    got = self.visit(value, frame)
                    if var.type_annotation is not None:
                        want = self.type_of(var)
                        if want != self.type_of(value):
                            got = self.retyped(got, want)
                    frame.vars[var] = got
                return body, frame
            case Function():                                             # PE-Fn
                return self.closure(expr, frame, None)
            case Call(op, args):
                callee = self.visit(op, frame)
                values = [self.visit(a, frame) for a in args]
                return self.call(expr, callee, values)
            case Op():
                return self.mk(SOp(expr), expr)
            case Constructor():
                return self.mk(SCtorFn(expr), expr)
            case If(cond, then, else_):
                c = self.visit(cond, frame)
                if type(c.static) is STensor:                            # PE-If-Static
                    chosen = then if bool(c.static.data) else else_
                    if _has_any(self.type_of(expr)):
                        return self.retyped(self.visit(chosen, frame), self.type_of(expr))
                    return chosen, frame
                atom = self.reify(c)                                     # PE-If-Dyn
                t = self.branch(then, _Frame(parent=frame))
                f = self.branch(else_, _Frame(parent=frame))
                self.store.invalidate()
                return self.emit(If(atom, t, f), "r")
            case Match(data, clauses):
                d = self.visit(data, frame)
                for clause in clauses:
                    binds: list[tuple[Var, PS]] = []
                    try:
                        matched = self.match(clause.lhs, d, binds)
                    except _Unknown:
                        break
                    if matched:                                          # PE-Match-Static
                        for var, ps in binds:
                            frame.vars[var] = ps
                        if _has_any(self.type_of(expr)):
                            return self.retyped(self.visit(clause.rhs, frame),
                                                self.type_of(expr))
                        return clause.rhs, frame
                return self.residual_match(expr, d, frame)               # PE-Match-Dyn
            case RefCreate(value):                                       # PE-Ref
                v = self.visit(value, frame)
                cell = SRef()
                self.store.insert(cell, v)
                atom = self.ll.push(RefCreate(self.reify(v)), "ref")
                return self.mk(cell, atom, self.ll)
            case RefRead(ref):
                r = self.visit(ref, frame)
                if type(r.static) is SRef:
                    known = self.store.lookup(r.static)
                    if known is not None:                                # PE-Read-Known
                        return known
                out = self.emit(RefRead(self.reify(r)), "v")             # PE-Read-Dyn
                if type(r.static) is SRef:
                    self.store.insert(r.static, out)
                return out
            case RefWrite(ref, value):
                r = self.visit(ref, frame)
                v = self.visit(value, frame)
                target = self.reify(r)
                if type(r.static) is SRef and self.deferrable(v):     # Reify-Fn-Deferred
                    atom = self.defer_closure(v)
                else:
                    atom = self.reify(v)
                self.ll.push(RefWrite(target, atom), "_")
                if type(r.static) is SRef:                               # PE-Write-Static
                    self.store.insert(r.static, v)
                else:                                                    # PE-Write-Dyn
                    self.store.invalidate()
                return self.mk(STuple(()))
        raise AssertionError(f"partial_eval: cannot evaluate {type(expr).__name__}")

    def branch(self, expr: Expr, frame: _Frame, extra: dict | None = None) -> Expr:
        """Residual code of ``expr`` in a new scope (a branch): store rolled back after."""
        outer = self.ll
        self.ll = _LetList()
        self.chain.append(self.ll)
        if extra:
            frame.vars.update(extra)
        try:
            with self.store.extend():
                atom = self.reify(self.visit(expr, frame))
            return self.ll.finish(atom)
        finally:
            self.ll.open = False
            self.ll = outer
            self.chain.pop()

    # -- calls ------------------------------------------------------------------------------
    def call(self, node: Call | None, callee: PS, args: list[PS]) -> PS:
        s = callee.static
        attrs = node.attrs if node is not None else None
        type_args = node.type_args if node is not None else ()
        pure = False
        if type(s) is SOp:
            return self.call_op(node, s.op, args)
        if type(s) is SCtorFn:                                           # PE-App-Ctor
            ty = self.type_of(node) if node is not None else None
            return self.mk(SCtor(s.ctor, tuple(args), ty))
        if type(s) is SClosure or type(s) is SGlobal:
            func = s.func if type(s) is SClosure else self.mod[s.name]
            if _primitive(func):
                pure = True  # a primitive function: operators only
            else:
                out = self.unfold(node, callee, func, args)              # PE-App-Unfold
                if out is not None:
                    return out
        fn = self.reify(callee)                                          # PE-App-Dyn
        out = self.emit(Call(fn, tuple(self.reify(a) for a in args), attrs,
                             self.type_args(type_args)), "c")
        if not pure:
            self.store.invalidate()
        return out

    def call_op(self, node: Call | None, op: Op, args: list[PS]) -> PS:
        from relay_ref.ops.registry import get_op

        attrs = node.attrs if node is not None else None
        opdef = get_op(op.name)
        if attrs is None:  # an operator called as a value: its default attributes
            try:
                attrs = opdef.attrs()
            except Exception:  # noqa: BLE001 - attributes without defaults
                attrs = None
        values = [self.reflect(a) for a in args]
        if op.name not in STATEFUL_OPS and op.name not in _NOT_FOLDED \
                and all(v is not None for v in values):
            try:                                                         # PE-App-Op-Fold
                out = self.from_value(opdef.reference(values, attrs))
            except Exception:  # a run-time failure stays in the residual program
                out = None
            if out is not None:
                return out if node is None else self.retyped(out, self.type_of(node))
        if node is not None and len(args) == 2:                          # PE-App-Op-Unit
            for name, pos, fill in _UNIT_RULES:
                if name == op.name and args[pos].fill == fill:
                    other = 1 - pos
                    want, got = self.type_of(node), self.type_of(node.args[other])
                    if (type(want) is TensorType and want.is_static and want == got):
                        return args[other]
        if node is not None:                                             # PE-App-Op-Id
            for name, pos in _IDENTITY_RULES:
                if name == op.name and pos < len(args):
                    want, got = self.type_of(node), self.type_of(node.args[pos])
                    if type(want) is TensorType and want.is_static and want == got:
                        return args[pos]
        call = Call(op, tuple(self.reify(a) for a in args), attrs,       # PE-App-Op-Dyn
                    node.type_args if node is not None else ())
        return self.emit(call, "x", _FILL_OPS.get(op.name))

    def fuel_of(self, args: list[PS], callee: PS | None = None
                ) -> tuple[tuple[int, int], ...]:
        """The fuel of a call (spec/partial_eval.md 4): (creation time, static counter) of
        each argument, after that of the callee when it is a closure (its environment is
        an argument too: a call of an older closure of the same function, as in a chain of
        backpropagators ``fn () { ..; %prev() }``, makes progress); 0 for a global."""
        time = callee.time if callee is not None and type(callee.static) is SClosure else 0
        out = [(time, 0)]
        for a in args:
            value = 0
            s = a.static
            if type(s) is STensor and s.data.shape == () and s.data.dtype.kind in "iu":
                value = max(0, int(s.data))
            out.append((a.time, value))
        return tuple(out)

    def unfold(self, node: Call | None, callee: PS, func: Function, args: list[PS]
               ) -> PS | None:
        """PE-App-Unfold: the body of a known function on the arguments, if the fuel makes
        progress (spec/partial_eval.md 4) and the bounds allow; else None."""
        if len(args) != len(func.params):
            return None
        new = self.fuel_of(args, callee)
        old = self.fuel.get(func)
        if old is None:
            met = new
        else:
            met = tuple((min(a, c), min(b, d)) for (a, b), (c, d) in zip(old, new, strict=True))
            if met == old:
                return None  # no progress: the call stays (no unrolling of this recursion)
        if self.depth[func] >= MAX_UNFOLD_DEPTH or self.budget <= 0:
            return None
        self.budget -= 1
        s = callee.static
        if type(s) is SClosure:
            frame = _Frame(dict(s.env))
            if s.rec is not None:
                frame.vars[s.rec] = callee
            tsubst = dict(s.tsubst)
        else:
            frame = _Frame()
            tsubst = {}
        if func.type_params and node is not None:
            inst: dict[TypeVar, Type] = {}
            header = self.types.get(func)
            ret = header.ret_type if type(header) is FuncType else func.ret_type
            want = self.type_of(node)  # the instantiated result type at this call
            if ret is not None and want is not None:
                _bind_types(ret, want, inst)
            for p, a in zip(func.params, node.args, strict=True):
                pt, at = self.types.get(p, p.type_annotation), self.type_of(a)
                if pt is not None and at is not None:
                    _bind_types(pt, at, inst)
            tsubst.update(inst)
        for p, a in zip(func.params, args, strict=True):
            frame.vars[p] = a
        saved = self.tsubst, old
        self.tsubst = tsubst
        self.fuel[func] = met
        self.depth[func] += 1
        try:
            out = self.visit(func.body, frame)
        finally:
            self.depth[func] -= 1
            self.tsubst = saved[0]
            if saved[1] is None:
                del self.fuel[func]
            else:
                self.fuel[func] = saved[1]
        return out if node is None else self.retyped(out, self.type_of(node))

    def reify_closure(self, ps: PS, s: SClosure) -> Expr:
        """Reify-Fn: the residual function of a closure that escapes, its body partially
        evaluated with dynamic parameters, in its own scope (store invalidated)."""
        func = s.func
        var = Var(s.rec.name_hint if s.rec is not None else "f")
        # its own body names it by ``var`` (letrec); bound next in this let-list
        ps.dyn, ps.scope, ps.pos = var, self.ll, len(self.ll.bindings)
        if _primitive(func) or self.reifying[func] >= MAX_UNFOLD_DEPTH:
            value = self.copy_closure(s, var)
        else:
            value = self.closure_function(ps, s)
        self.ll.bindings.append((var, value))
        return var

    def closure_function(self, ps: PS, s: SClosure) -> Function:
        """The body of Reify-Fn: ``s``'s function partially evaluated with dynamic
        parameters in a new let-list, under a rolled-back, invalidated store; inside, the
        function names itself by ``ps``'s atom."""
        func = s.func
        saved_tsubst, self.tsubst = self.tsubst, s.tsubst
        saved_tvars, self.tvars = self.tvars, self.tvars.union(func.type_params)
        # Parameters annotated with their checked types (an unannotated one may be
        # typed only by code that partial evaluation removes).
        params = tuple(Var(p.name_hint, self.annotation(self.type_of(p)))
                       for p in func.params)
        outer, self.ll = self.ll, _LetList()
        self.chain.append(self.ll)
        frame = _Frame(dict(s.env))
        if s.rec is not None:
            frame.vars[s.rec] = ps
        args = []
        for p, q in zip(func.params, params, strict=True):
            frame.vars[p] = a = PS(None, q, self.ll, next(self.clock))
            args.append(a)
        old_fuel = self.fuel.get(func)
        self.fuel[func] = self.fuel_of(args, ps)
        self.reifying[func] += 1
        try:
            with self.store.extend():
                self.store.invalidate()
                body = self.ll.finish(self.reify(self.visit(func.body, frame)))
        finally:
            self.reifying[func] -= 1
            if old_fuel is None:
                del self.fuel[func]
            else:
                self.fuel[func] = old_fuel
            self.ll.open = False
            self.ll = outer
            self.chain.pop()
            self.tsubst = saved_tsubst
            self.tvars = saved_tvars
        return Function(params, body, None, func.type_params, func.attrs, func.span)

    # -- deferred reification (Reify-Fn-Deferred, spec/partial_eval.md 3) ------------------
    def deferrable(self, ps: PS) -> bool:
        """A closure without an atom here, whose residual function would be partially
        evaluated (not copied): its reification may wait."""
        s = ps.static
        return (type(s) is SClosure and not self.in_scope(ps) and not _primitive(s.func)
                and self.reifying[s.func] < MAX_UNFOLD_DEPTH)

    def defer_closure(self, ps: PS) -> Var:
        """Reify-Fn-Deferred: the atom of a closure written into a known cell, its residual
        function left to ``resolve_deferred`` (made only if the residual program needs it:
        the write is not to a cell that Tidy-Dead-Ref removes). The binding's place is
        reserved now, with what the reification needs: the let-lists open here (and how
        many of their bindings precede it) and the unfolding context."""
        s = ps.static
        assert type(s) is SClosure
        var = Var(s.rec.name_hint if s.rec is not None else "f")
        ll = self.ll
        limit = {scope: self.limit.get(scope, len(scope.bindings)) for scope in self.chain}
        limit[ll] = len(ll.bindings) + 1  # with the function itself (letrec)
        ps.dyn, ps.scope, ps.pos = var, ll, len(ll.bindings)
        ll.bindings.append((var, _RESERVED))
        self.pending[var] = _Deferred(ps, s, ll, ps.pos, limit, self.tvars, dict(self.fuel),
                                      self.depth.copy(), self.reifying.copy())
        return var

    def resolve_one(self, var: Var) -> Function:
        """The residual function of the deferred closure bound by ``var``, made as
        Reify-Fn would have made it at the write (same scope, same unfolding context)."""
        d = self.pending[var]
        saved = (self.ll, self.chain, self.limit, self.tvars, self.fuel, self.depth,
                 self.reifying)
        self.ll, self.chain, self.limit = d.ll, list(d.limit), d.limit
        self.tvars, self.fuel = d.tvars, dict(d.fuel)
        self.depth, self.reifying = d.depth.copy(), d.reifying.copy()
        d.ps.dyn, d.ps.scope, d.ps.pos = var, d.ll, d.pos
        try:
            return self.closure_function(d.ps, d.s)
        finally:
            (self.ll, self.chain, self.limit, self.tvars, self.fuel, self.depth,
             self.reifying) = saved

    def resolve_deferred(self, body: Expr) -> Expr:
        """The deferred functions the residual program needs, made; the others dropped
        with their writes. A deferred ``%f`` is needed when it is used other than as the
        value written into a cell ``ref_write(%r, %f)``, or when such a cell is used other
        than as a write target (it is read or escapes). Made functions add uses (and more
        deferred functions): a worklist to the fixpoint, each piece of code scanned once.
        The cells left with only write uses are unobservable (Tidy-Dead-Ref), so a write
        of a dropped function into one is ``()``."""
        count: Counter[Var] = Counter()      # uses (edges)
        writes: Counter[Var] = Counter()     # uses as a ref_write target
        values: Counter[Var] = Counter()     # uses of a deferred var as a written value
        targets: dict[Var, list[Var]] = {}   # deferred var -> cells it is written into
        writers: dict[Var, list[Var]] = {}   # cell -> deferred vars written into it
        cells: set[Var] = set()
        live: set[Var] = set()
        made: dict[Var, Function] = {}
        queue: list[Var] = []

        def scan(expr: Expr) -> None:
            touched: set[Var] = set()
            for node in post_order(expr):
                for kid in children(node):
                    if type(kid) is Var:
                        count[kid] += 1
                        touched.add(kid)
                if type(node) is RefWrite and type(node.ref) is Var:
                    writes[node.ref] += 1
                    if type(node.value) is Var and node.value in self.pending:
                        values[node.value] += 1
                        targets.setdefault(node.value, []).append(node.ref)
                        writers.setdefault(node.ref, []).append(node.value)
                elif type(node) is Let and type(node.value) is RefCreate:
                    cells.add(node.var)
            for v in touched:
                if v in self.pending:
                    if v not in made and (count[v] > values[v] or any(
                            c not in cells or c in live for c in targets.get(v, ()))):
                        queue.append(v)
                elif v in cells and v not in live and count[v] > writes[v]:
                    live.add(v)
                    queue.extend(writers.get(v, ()))

        scan(body)
        while queue:
            var = queue.pop()
            if var not in made:
                made[var] = fn = self.resolve_one(var)
                scan(fn)

        def fill(node: Expr) -> Expr | None:
            if type(node) is Let and node.var in self.pending:
                fn = made.get(node.var)
                if fn is None:
                    return node.body
                return Let(node.var, rewrite(fn, fill), node.body)
            if (type(node) is RefWrite and type(node.value) is Var
                    and node.value in self.pending and node.value not in made):
                return _UNIT  # a write into a cell nothing reads (Tidy-Dead-Ref)
            return None

        return rewrite(body, fill)

    def copy_closure(self, s: SClosure, var: Var) -> Function:
        """The closure's function copied as it is (fresh binders), its free variables
        replaced by their atoms: for primitive functions and past the reification bound."""
        atoms = {v: self.reify(p) for v, p in s.env.items()}
        if s.rec is not None:
            atoms[s.rec] = var
        copied = rewrite(s.func, lambda n: atoms.get(n) if type(n) is Var else None)
        return fresh_copy(copied)  # type: ignore[return-value]

    # -- match --------------------------------------------------------------------------------
    def match(self, pattern: Pattern, ps: PS, binds: list[tuple[Var, PS]]) -> bool:
        """Does ``ps`` match ``pattern``? Raises ``_Unknown`` when that is not static."""
        match pattern:
            case PatternWildcard():
                return True
            case PatternVar(var):
                binds.append((var, ps))
                return True
            case PatternConstructor(ctor, pats):
                s = ps.static
                if type(s) is not SCtor:
                    raise _Unknown
                if s.ctor.tag != ctor.tag:
                    return False
                return self.match_all(pats, s.fields, binds)
            case PatternTuple(pats):
                s = ps.static
                if type(s) is not STuple:
                    raise _Unknown
                return self.match_all(pats, s.fields, binds)
        raise _Unknown

    def match_all(self, pats: tuple[Pattern, ...], fields: tuple[PS, ...],
                  binds: list[tuple[Var, PS]]) -> bool:
        unknown = False
        for p, f in zip(pats, fields, strict=True):
            try:
                if not self.match(p, f, binds):
                    return False  # a definite mismatch anywhere decides
            except _Unknown:
                unknown = True
        if unknown:
            raise _Unknown
        return True

    def residual_match(self, node: Match, d: PS, frame: _Frame) -> PS:
        atom = self.reify(d)
        clauses = []
        for clause in node.clauses:
            renamed: dict = {}
            lhs = self.fresh_pattern(clause.lhs, renamed)
            body = self.branch(clause.rhs, _Frame(parent=frame), renamed)
            clauses.append(Clause(lhs, body, clause.span))
        self.store.invalidate()
        return self.emit(Match(atom, tuple(clauses), node.complete, node.span), "m")

    def fresh_pattern(self, pattern: Pattern, renamed: dict) -> Pattern:
        match pattern:
            case PatternVar(var):
                new = Var(var.name_hint,
                          self.annotation(_subst(var.type_annotation, self.tsubst)))
                renamed[var] = PS(None, new, None, next(self.clock))
                return PatternVar(new)
            case PatternConstructor(ctor, pats):
                return PatternConstructor(ctor, tuple(self.fresh_pattern(p, renamed)
                                                      for p in pats))
            case PatternTuple(pats):
                return PatternTuple(tuple(self.fresh_pattern(p, renamed) for p in pats))
        return PatternWildcard()

    # -- globals ------------------------------------------------------------------------------
    def global_function(self, func: Function) -> Function:
        """A global with dynamic parameters (TVM's ``VisitFuncDynamic``): its own
        parameters, type parameters, return type and attributes are kept."""
        if _primitive(func):
            return func
        self.budget = UNFOLD_BUDGET
        self.store = _Store()
        self.ll = _LetList()
        self.tvars = frozenset(func.type_params)
        self.tsubst = {}
        frame = _Frame()
        args = []
        params = []
        for p in func.params:
            if p.type_annotation is None:  # its checked type, which the body may not fix
                ann = self.annotation(self.types.get(p))
                if ann is not None:
                    p = Var(p.name_hint, ann, p.span)
            params.append(p)
        for p, q in zip(func.params, params, strict=True):
            frame.vars[p] = a = PS(None, q, None, next(self.clock))
            args.append(a)
        self.fuel = {func: self.fuel_of(args)}
        self.depth.clear()
        self.chain = [self.ll]
        self.pending = {}
        body = self.ll.finish(self.reify(self.visit(func.body, frame)))
        if self.pending:
            body = self.resolve_deferred(body)
        for inline in (False, False, True, True):  # deaths first (a read dies, then its cell)
            body = _Tidy.run(body, inline, func.ret_type is not None)
        return replace(func, params=tuple(params), body=body)


# -- the clean-up ---------------------------------------------------------------------------
_PURE, _READ, _EFFECT = 0, 1, 2
_INLINABLE = (Call, Tuple, TupleGetItem, RefCreate, RefRead, RefWrite)
_UNIT = Tuple(())


class _Tidy:
    """Clean-up of a residual body in A-normal form (spec/partial_eval.md 5):

    * Tidy-Dead-Ref: a cell (``let %r = ref(..)``) whose every use is ``ref_write(%r, ..)``
      is never read: the cell and its writes go (writes become ``()``).
    * Tidy-Dead-Let: an unused binding whose value has no effect (operators, constructors,
      tuples, projections, functions, ``ref``, ``ref_read``) goes.
    * Tidy-Inline: a binding used once, at a position evaluated eagerly (not under a
      function, branch or clause), is substituted there when that keeps the order of
      effects: its value is pure, or the use is in the next binding with only pure code
      evaluated before it there. Only operator,
      constructor and tuple code is inlined (never functions, ``if``, ``match``), at most
      ``MAX_INLINE_DEPTH`` deep.
    * Tidy-Tail: ``let %v = e; %v`` is ``e`` (any ``e``), unless ``%v`` is annotated and
      nothing else fixes the type there (a function's declared return type, the annotation
      of the binding whose value this is).

    A binding with an annotation (``let %nil: List[int32] = Nil``) is never inlined: the
    annotation may be the only thing that fixes its value's type.

    Counts are of uses (edges); one traversal counts, one rebuilds: linear."""

    def __init__(self, body: Expr) -> None:
        self.count: Counter[Var] = Counter()
        writes: Counter[Var] = Counter()
        for node in post_order(body):
            for kid in children(node):
                if type(kid) is Var:
                    self.count[kid] += 1
            if type(node) is RefWrite and type(node.ref) is Var:
                writes[node.ref] += 1
        self.dead_refs = {node.var for node in post_order(body)
                          if type(node) is Let and type(node.value) is RefCreate
                          and self.count[node.var] == writes[node.var]}
        self.effects: dict[int, int] = {}
        self.keep: list[Expr] = []
        self.inlining = True

    @staticmethod
    def run(body: Expr, inline: bool = True, typed: bool = False) -> Expr:
        """One round; ``typed``: the context fixes the type of ``body``."""
        tidy = _Tidy(body)
        tidy.inlining = inline
        return tidy.clean(body, typed)

    def effect(self, expr: Expr) -> int:
        got = self.effects.get(id(expr))
        if got is not None:
            return got
        for node in post_order(expr):
            if id(node) in self.effects:
                continue
            match node:
                case Function() | Var() | Constant() | GlobalVar() | Op() | Constructor():
                    e = _PURE
                case Call(op) if not (type(op) is Constructor or (
                        type(op) is Op and op.name not in STATEFUL_OPS)):
                    e = _EFFECT
                case RefWrite():
                    e = _EFFECT
                case RefRead():
                    e = max([_READ] + [self.effects[id(k)] for k in children(node)])
                case _:
                    e = max([_PURE] + [self.effects[id(k)] for k in children(node)])
            self.effects[id(node)] = e
            self.keep.append(node)
        return self.effects[id(expr)]

    def forget(self, expr: Expr) -> None:
        """``expr`` is removed: its uses of variables no longer count."""
        if type(expr) is Var:
            self.count[expr] -= 1
            return
        for node in post_order(expr):
            for kid in children(node):
                if type(kid) is Var:
                    self.count[kid] -= 1

    def clean(self, expr: Expr, typed: bool = False) -> Expr:
        """``expr`` cleaned; ``typed``: its context fixes its type (Tidy-Tail may drop an
        annotation then)."""
        match expr:
            case Let():
                bindings = []
                while type(expr) is Let:
                    bindings.append((expr.var, expr.value))
                    expr = expr.body
                result = self.clean(expr, typed)
                kept = []
                for var, value in reversed(bindings):
                    if self.count[var] == 0 and self.effect(value) <= _READ:
                        self.forget(value)                               # Tidy-Dead-Let
                        continue
                    if (type(value) is RefWrite and value.ref in self.dead_refs
                            and self.count[var] == 0                     # Tidy-Dead-Ref
                            and self.effect(value.value) > _READ):
                        self.count[value.ref] -= 1  # the write goes; its value's effects stay
                        value = value.value
                    value = self.clean(value, var.type_annotation is not None)
                    if self.count[var] == 0 and self.effect(value) <= _READ:
                        self.forget(value)
                        continue
                    kept.append((var, value))
                kept.reverse()
                if self.inlining:
                    return self.inline(kept, result, typed)
                for var, value in reversed(kept):
                    result = Let(var, value, result)
                return result
            case Function(_, body):
                new = self.clean(body, expr.ret_type is not None)
                return expr if new is body else replace(expr, body=new)
            case If(_, then, else_):
                return replace(expr, true_branch=self.clean(then, typed),
                               false_branch=self.clean(else_, typed))
            case Match(_, clauses):
                return replace(expr, clauses=tuple(replace(c, rhs=self.clean(c.rhs, typed))
                                                   for c in clauses))
            case RefWrite(ref, value) if ref in self.dead_refs:          # Tidy-Dead-Ref
                if self.effect(value) <= _READ:
                    self.forget(expr)
                    return _UNIT
                self.count[ref] -= 1  # the value's effects stay (an inlined call)
                return Let(Var("_"), value, _UNIT)
        return expr

    def inline(self, kept: list[tuple[Var, Expr]], result: Expr, typed: bool) -> Expr:
        """Tidy-Inline over one let chain (``kept`` bindings, then ``result``)."""
        where: dict[Var, int] = {}   # binding (or len(kept): the result) using it eagerly
        first: set[Var] = set()      # ... where only pure code is evaluated before it
        for j, value in enumerate([v for _, v in kept] + [result]):
            pure_so_far = True
            for kid in _eager(value):
                if type(kid) is Var:
                    where[kid] = j
                    if pure_so_far:
                        first.add(kid)
                pure_so_far = pure_so_far and self.effect(kid) == _PURE
        if type(result) is Var:
            where[result] = len(kept)
            first.add(result)
        inlined: dict[Var, tuple[Expr, int]] = {}

        def substitute(value: Expr) -> tuple[Expr, int]:
            if type(value) is Var and value in inlined:
                return inlined.pop(value)
            depth = 0
            if not any(type(k) is Var and k in inlined for k in _eager(value)):
                return value, 0
            kids = []
            eager = set(map(id, _eager(value)))
            for kid in children(value):
                got = inlined.pop(kid, None) if (type(kid) is Var and id(kid) in eager) \
                    else None
                if got is None:
                    kids.append(kid)
                else:
                    kids.append(got[0])
                    depth = max(depth, got[1])
            return with_children(value, kids), depth

        out = []
        for i, (var, value) in enumerate(kept):
            value, depth = substitute(value)
            j = where.get(var)
            if (self.count[var] == 1 and j is not None and isinstance(value, _INLINABLE)
                    and var.type_annotation is None  # a typed binding keeps its type
                    and depth < MAX_INLINE_DEPTH
                    and (self.effect(value) == _PURE or (j == i + 1 and var in first))):
                inlined[var] = (value, depth + 1)
                continue
            out.append((var, value))
        body, _ = substitute(result)
        if (out and body is out[-1][0] and self.count[body] == 1        # Tidy-Tail
                and (body.type_annotation is None or typed)):
            body = out.pop()[1]
        for var, value in reversed(out):
            body = Let(var, value, body)
        return body


def _eager(value: Expr) -> tuple[Expr, ...]:
    """Sub-expressions of a residual value evaluated first, before anything delayed."""
    match value:
        case If(cond):
            return (cond,)
        case Match(data):
            return (data,)
        case Function() | Let():
            return ()
    return tuple(children(value))


# -- the pass -------------------------------------------------------------------------------
def _explicit_sharing(mod: IRModule) -> IRModule:
    """PE-Shared: the globals where a shared node is evaluated elsewhere than at its first
    use in its activation (``relay_ref.ir.sharing``: anchored before a sub-scope, or
    captured by a closure) are first converted by ToANormalForm, which binds each such node
    where E-Shared evaluates it; the others keep their graph form (first use per
    activation, which ``visit`` implements)."""
    changed = {name: f for name, f in mod.functions.items() if sharing_plan(f).hoists}
    if not changed:
        return mod
    converted = run_deep(lambda: {name: convert_function(f) for name, f in changed.items()})
    return replace(mod, functions={**mod.functions, **converted}, checked_types={},
                   global_types={})


def partial_evaluate(mod: IRModule) -> IRModule:
    """``PartialEvaluate()(mod)``."""
    mod = _explicit_sharing(mod)
    if not mod.checked_types:
        from relay_ref.typecheck.infer import infer_types

        mod = infer_types(mod)

    def job() -> dict[str, Function]:
        pe = _PE(mod)
        return {name: pe.global_function(f) for name, f in mod.functions.items()}

    functions = run_deep(job)
    return replace(mod, functions=functions, checked_types={}, global_types={})


@register_pass
class PartialEvaluate(Pass):
    """Online partial evaluation of every global function (see the module docstring):
    static computation is done at compile time, the rest is residual A-normal-form code."""

    name = "PartialEvaluate"
    opt_level = 3

    def __call__(self, mod: IRModule) -> IRModule:
        return partial_evaluate(mod)
