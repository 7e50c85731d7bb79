"""Keeping a program's types determined while a pass drops or moves code.

Relay infers types from constraints, in both directions: ``def @main(%a) -> Tensor[(2, 2),
int32] { add(ones_like(%a), 1) }`` types ``%a`` only backwards through the relations, and
``let %e: List[float32] = Nil`` fixes ``Nil``'s type argument only through the annotation.
A pass that removes the only thing that fixed a type (drops ``ones_like(%a)``, drops the
``let``, or puts a bare ``Nil`` where ``%e`` was) outputs a program that no longer
type-checks ("cannot infer the type of %a"). The passes that remove bindings or rewrite their
uses (DeadCodeElimination, ToGraphNormalForm, SimplifyExpr) avoid that with two tools:

* ``annotate_params(mod)``: on a type-checked module, every function parameter (of global
  and local functions) without an annotation gets its checked type as annotation, the form
  TVM's frontends produce anyway. A parameter's type is then fixed whatever code is dropped.
  The module's checked types are carried over to the rebuilt nodes (the types are the same),
  so a pass may go on reading them; nothing changes when every parameter is annotated.
* ``Determinacy(mod)``: a conservative analysis of the (type-checked) module's expressions.
  ``determined(e)``: ``e``'s type follows from ``e`` itself, given the types of its free
  variables that are fixed independently (an annotated variable, a parameter after
  ``annotate_params``; a ``let`` variable whose value is determined; a pattern variable of a
  determined scrutinee). Then an annotation on ``e`` adds no constraint, so a pass may drop
  it (ToGraphNormalForm substitutes ``%e``'s value for it only then). ``vars_fixed(e)``:
  every variable occurring in ``e`` has an independently fixed type, so dropping ``e``
  loses no constraint on what remains (DCE and ToGraphNormalForm drop an unused binding,
  SimplifyExpr drops ``ones_like``'s argument, only then).

The rules of ``determined`` (each says "yes" only when the type is forced; "no" only costs
an optimisation): constants; annotated variables and the variables above; monomorphic
globals; a constructor of an ADT without type parameters; an operator call whose arguments
are determined (type relations compute the output from the inputs and attrs); a constructor
call whose determined arguments' field types mention every type parameter of its ADT
(``Cons(1, Nil)``: ``1`` fixes ``A``; not ``Nil``); a call of a monomorphic global (its
return type is fixed), of a polymorphic one with explicit type arguments or determined
arguments whose parameter types mention all its type parameters; a call of another
determined, monomorphic callee; tuples of determined fields and projections of a determined
tuple; a function with annotated parameters and an annotated return type or determined
body; ``let`` by its body; ``if`` and ``match`` when one branch is determined; references
by their contents (``ref_write`` is ``()``). Operators as values are never determined
(``add``'s type needs its call).

A node with several users (a graph binding, as ToGraphNormalForm makes) is a variable in
disguise: ``vars_fixed`` accepts it only when it is ``determined`` (in ``%0 = Nil;
let %u = Cons(1, %0); match (%0) {..}`` dropping ``%u`` would leave ``%0`` untyped). Nodes
built by a pass after the analysis started count as having one user; operators,
constructors and globals are instantiated afresh at each use (and printed at each), so
sharing them links nothing.

Cost: linear in the number of distinct nodes (memoised by identity; recursion runs on the
caller's deep stack, as the passes run under ``run_deep``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

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
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import (
    FuncType,
    Type,
    TypeVar,
    free_type_vars,
    is_complete,
)


def annotate_params(mod: IRModule) -> IRModule:
    """``mod`` with every unannotated function parameter annotated with its checked type
    (see the module docstring). Type-checks ``mod`` first when it has no recorded types
    (an ill-typed module is returned as it is: it has no types to keep)."""
    from relay_ref.ir.visitor import post_order
    from relay_ref.passes.rewrite import rewrite_with_origin

    def missing(fn: Function) -> bool:
        return any(p.type_annotation is None for p in fn.params)

    if not any(missing(f) or any(isinstance(n, Function) and missing(n)
                                 for n in post_order(f.body))
               for f in mod.functions.values()):
        return mod
    if not mod.checked_types:
        from relay_ref.diagnostics import RelayTypeError
        from relay_ref.typecheck.infer import infer_types

        try:
            mod = infer_types(mod)
        except RelayTypeError:
            return mod  # an ill-typed module has no types to keep
    types = mod.checked_types
    renamed: dict[Var, Var] = {}
    new_types: dict[Expr, Type] = {}

    def pin(fn: Function) -> None:
        for p in fn.params:
            ty = types.get(p)
            if p.type_annotation is None and is_complete(ty):
                renamed[p] = Var(p.name_hint, ty, p.span)

    def rule(orig: Expr, node: Expr) -> Expr | None:
        out: Expr | None = None
        match node:
            case Var() if node in renamed:
                out = renamed[node]
            case Function(params) if any(p in renamed for p in params):
                out = replace(node, params=tuple(renamed.get(p, p) for p in params))
        ty = types.get(orig)
        if ty is not None:
            new_types[out if out is not None else node] = ty
        return out

    functions = {}
    for name, f in mod.functions.items():
        pin(f)
        for n in post_order(f.body):
            if isinstance(n, Function):
                pin(n)
        functions[name] = rewrite_with_origin(f, rule)
    for old, new in renamed.items():
        if old in types:
            new_types[new] = types[old]
    return replace(mod, functions=functions, checked_types=new_types,
                   global_types=mod.global_types)


class Determinacy:
    """``determined`` / ``vars_fixed`` over one type-checked module (module docstring).

    Binders are found by a pre-pass over every function; nodes built later (a pass's
    rewritten nodes) may be asked about too, as long as they use the same binders."""

    def __init__(self, mod: IRModule) -> None:
        from relay_ref.ir.visitor import post_order

        self.mod = mod
        self.types = mod.checked_types
        self.binding: dict[Var, Expr] = {}  # let variable -> value; pattern var -> scrutinee
        self.params: set[Var] = set()
        self.adt_params = {td.header.name: set(td.type_vars)
                           for td in mod.type_definitions.values()}
        self.memo: dict[int, bool] = {}
        self.vars_memo: dict[int, bool] = {}
        self.busy: set[int] = set()
        self.keep: list[Expr] = []
        uses: dict[int, int] = {}
        for f in mod.functions.values():
            self.params.update(f.params)
            for n in post_order(f.body):
                for k in children(n):
                    uses[id(k)] = uses.get(id(k), 0) + 1
                match n:
                    case Let(var, value):
                        self.binding[var] = value
                    case Function(params):
                        self.params.update(params)
                    case Match(data, clauses):
                        for c in clauses:
                            for v in _pattern_vars(c.lhs):
                                self.binding[v] = data
        #: nodes with several users (graph bindings): variables in disguise
        self.shared = {k for k, n in uses.items() if n > 1}

    # -- queries -------------------------------------------------------------------------
    def determined(self, expr: Expr) -> bool:
        """Does ``expr``'s type follow from ``expr`` alone? (conservative: False = maybe not)"""
        key = id(expr)
        got = self.memo.get(key)
        if got is not None:
            return got
        if key in self.busy:
            return False  # a cycle (recursive let): conservative
        self.busy.add(key)
        try:
            out = self._determined(expr)
        finally:
            self.busy.discard(key)
        self.memo[key] = out
        self.keep.append(expr)
        return out

    def vars_fixed(self, expr: Expr) -> bool:
        """Has every variable (and shared node) in ``expr`` a type fixed without it?"""
        key = id(expr)
        got = self.vars_memo.get(key)
        if got is not None:
            return got
        if isinstance(expr, Var):
            out = self.var_fixed(expr)
        elif (key in self.shared and not isinstance(expr, Op | Constructor | GlobalVar)
              and not self.determined(expr)):  # (those are instantiated at each use)
            out = False  # its other users may need what this use fixes
        else:
            out = all(self.vars_fixed(k) for k in children(expr))
        self.vars_memo[key] = out
        self.keep.append(expr)
        return out

    def var_fixed(self, var: Var) -> bool:
        if var.type_annotation is not None:
            return True
        if var in self.params:
            return False  # unannotated parameter: only its uses fix it
        bound = self.binding.get(var)
        return bound is not None and self.determined(bound)

    # -- the rules -------------------------------------------------------------------------
    def _determined(self, expr: Expr) -> bool:
        det = self.determined
        match expr:
            case Constant():
                return True
            case Var():
                return self.var_fixed(expr)
            case GlobalVar(name):
                return self._monomorphic_global(name)
            case Op():
                return False
            case Constructor():
                return not self.adt_params.get(expr.belong_to.name, set())
            case Call(op, args, _attrs, type_args):
                return self._call(op, args, type_args)
            case Tuple(fields):
                return all(det(f) for f in fields)
            case TupleGetItem(tup):
                return det(tup)
            case Function(params, body, ret):
                return (all(p.type_annotation is not None for p in params)
                        and (ret is not None or det(body)))
            case Let(_, _, body):
                return det(body)
            case If(_, then, else_):
                return det(then) or det(else_)
            case Match(_, clauses):
                return any(det(c.rhs) for c in clauses)
            case RefCreate(value):
                return det(value)
            case RefRead(ref):
                return det(ref)
            case RefWrite():
                return True
        return False

    def _monomorphic_global(self, name: str) -> bool:
        fn = self.mod.functions.get(name)
        if fn is None or fn.type_params:
            return False
        ty = self.mod.global_types.get(name)
        return not (isinstance(ty, FuncType) and ty.type_params)

    def _call(self, op: Expr, args: tuple[Expr, ...], type_args: tuple[Type, ...]) -> bool:
        det = self.determined
        match op:
            case Op():
                return all(det(a) for a in args)
            case Constructor(_, inputs, belong_to):
                return self.adt_params.get(belong_to.name, set()) <= self._fixed_by(
                    inputs, args)
            case GlobalVar(name):
                if self._monomorphic_global(name) or type_args:
                    return True
                fn = self.mod.functions.get(name)
                if fn is None or any(p.type_annotation is None for p in fn.params):
                    return False
                return set(fn.type_params) <= self._fixed_by(
                    [p.type_annotation for p in fn.params], args)
        ty = self.types.get(op)
        return (det(op) and isinstance(ty, FuncType) and not ty.type_params
                and all(det(a) for a in args))


    def _fixed_by(self, field_types: Sequence[Type | None],
                  args: tuple[Expr, ...]) -> set[TypeVar]:
        """Type variables of the ``field_types`` whose argument is determined (the others
        are then fixed by unification with the instantiated field type)."""
        fixed: set[TypeVar] = set()
        if len(field_types) != len(args):
            return fixed
        for t, a in zip(field_types, args, strict=True):
            if t is not None and self.determined(a):
                fixed.update(free_type_vars(t))
        return fixed


def _pattern_vars(p: Pattern) -> list[Var]:
    match p:
        case PatternVar(var):
            return [var]
        case PatternConstructor(_, pats) | PatternTuple(pats):
            return [v for q in pats for v in _pattern_vars(q)]
    return []
