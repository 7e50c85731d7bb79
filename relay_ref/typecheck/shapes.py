"""Shape variables in types: scoping, deduction at calls, dataflow blocks (spec/typing.md 5.3).

The checker (``infer.py``) asks this module three things:

* which shape variables a type mentions (``type_vars``), and which it mentions *bare*, alone as
  a dimension (``bare_vars``): only a bare occurrence can bind a variable (T-ShapeScope);
* at a call of a function with shape variables of its own (T-ShapeCall): the values of those
  variables deduced from the argument types (``deduce``), and the callee's types with them
  substituted, every variable left undeduced becoming ``?`` (``substitute_type``);
* whether a ``dataflow`` block's body is pure straight-line code (``dataflow_violation``,
  T-Dataflow).

Invariants: shape variables are identified by name (``relay_ref.ir.symdim``); every walk is
iterative or memoised by type object (types are DAGs), so the cost is linear in the size of
the types; a type without shape variables is returned as it is (the static path costs one
walk, and ``type_vars`` results are cached by the checker where it matters).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

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
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.shape import ANY, SymDim, dim_vars, prove_equal, substitute_dim, var_name
from relay_ref.ir.types import (
    FuncType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    subterms,
    type_children,
)

__all__ = ["Conflict", "PureGlobals", "bare_vars", "dataflow_violation", "deduce", "in_env",
           "substitute_type", "type_vars"]


def type_vars(ty: Type | None) -> frozenset[str]:
    """The shape variables mentioned anywhere in ``ty`` (empty for ``None``)."""
    if ty is None:
        return frozenset()
    out: set[str] = set()
    for t in subterms(ty):
        if type(t) is TensorType:
            for d in t.shape:
                if type(d) is SymDim:
                    out |= dim_vars(d)
    return frozenset(out)


def bare_vars(ty: Type | None) -> frozenset[str]:
    """The shape variables occurring alone as a dimension somewhere in ``ty``."""
    if ty is None:
        return frozenset()
    out: set[str] = set()
    for t in subterms(ty):
        if type(t) is TensorType:
            for d in t.shape:
                if type(d) is SymDim:
                    name = var_name(d)
                    if name is not None:
                        out.add(name)
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class Conflict:
    """T-ShapeCall: shape variable ``name`` is ``first`` by argument ``first_arg`` and, provably
    differently, ``second`` by argument ``second_arg``."""

    name: str
    first: object
    first_arg: int
    second: object
    second_arg: int


def deduce(params: tuple[Type, ...], args: list[Type], own: frozenset[str]
           ) -> tuple[dict[str, object], list[Conflict]]:
    """T-ShapeCall's deduction: walk each (resolved) parameter type against its argument's
    type, in parameter order; a bare variable of ``own`` in a parameter dimension is bound to
    the argument's dimension the first time it is met (a ``?`` binds nothing). A later
    occurrence whose dimension provably differs is a ``Conflict``; an undecidable one is left
    to unification (gradual) and the run-time check. Returns (bindings, conflicts)."""
    binding: dict[str, object] = {}
    where: dict[str, int] = {}
    conflicts: list[Conflict] = []
    for index, (p, a) in enumerate(zip(params, args, strict=False)):
        seen: set[tuple[int, int]] = set()
        stack = [(p, a)]
        while stack:
            pt, at = stack.pop()
            if (id(pt), id(at)) in seen:
                continue
            seen.add((id(pt), id(at)))
            match pt, at:
                case TensorType(), TensorType() if len(pt.shape) == len(at.shape):
                    for pd, ad in zip(pt.shape, at.shape, strict=True):
                        name = var_name(pd) if type(pd) is SymDim else None
                        if name is None or name not in own or ad is ANY:
                            continue
                        if name not in binding:
                            binding[name], where[name] = ad, index
                        elif prove_equal(binding[name], ad) is False:
                            conflicts.append(Conflict(name, binding[name], where[name], ad,
                                                      index))
                case ((TupleType(), TupleType()) | (TypeCall(), TypeCall())
                      | (RefType(), RefType()) | (FuncType(), FuncType())):
                    stack.extend(zip(type_children(pt), type_children(at), strict=False))
    return binding, conflicts


def substitute_type(ty: Type, mapping: Mapping[str, object]) -> Type:
    """``ty`` with shape variables replaced by ``mapping``'s images (a dimension, or ``?``,
    which makes a whole dimension mentioning the variable ``?``); canonical; unchanged
    subterms kept (memoised by object)."""
    if not mapping:
        return ty
    memo: dict[int, Type] = {}

    def go(t: Type) -> Type:
        got = memo.get(id(t))
        if got is not None:
            return got
        out = t
        match t:
            case TensorType(shape, dtype):
                if any(type(d) is SymDim for d in shape):
                    new = tuple(substitute_dim(d, mapping) for d in shape)
                    if new != shape:
                        out = TensorType(new, dtype, t.span)
            case TupleType(fields):
                new_f = tuple(go(f) for f in fields)
                if any(x is not y for x, y in zip(new_f, fields, strict=True)):
                    out = TupleType(new_f, t.span)
            case FuncType(arg_types, ret, params):
                new_a = tuple(go(x) for x in arg_types)
                new_r = go(ret)
                if new_r is not ret or any(x is not y for x, y in
                                           zip(new_a, arg_types, strict=True)):
                    out = FuncType(new_a, new_r, params, t.span)
            case TypeCall(func, targs):
                new_t = tuple(go(x) for x in targs)
                if any(x is not y for x, y in zip(new_t, targs, strict=True)):
                    out = TypeCall(func, new_t, t.span)
            case RefType(value):
                new_v = go(value)
                if new_v is not value:
                    out = RefType(new_v, t.span)
        memo[id(t)] = out
        return out

    return go(ty)


def in_env(ty: Type, env: Mapping[str, int]) -> Type:
    """``ty`` at run time: every dimension whose shape variables all have values in ``env``
    evaluated to its number, every other symbolic dimension ``?`` (a cast to it then checks
    only what it can: spec/typing.md 5.3). ``ty`` itself when it has no shape variables."""
    names = type_vars(ty)
    if not names:
        return ty
    mapping: dict[str, object] = {n: ANY for n in names if n not in env}
    mapping.update((n, env[n]) for n in names if n in env)
    return substitute_type(ty, mapping)


def _pure_op(op: Op) -> bool:
    # Every registered operator is pure: Relay's only effects are on references, which are
    # IR nodes, not operators (the effect analysis, passes/effects.py, classifies calls of
    # ops the same way; its STATEFUL_OPS is empty and sits in a layer above the checker).
    # call_dps_packed's function is assumed pure, as in Relax.
    return op.name != "dataflow"


def _call_text(callee: Expr) -> str:
    match callee:
        case GlobalVar(name):
            return f"a call of the global @{name}"
        case Var():
            return f"a call of the function %{callee.name_hint}"
        case Constructor():
            return f"a call of the constructor {callee.name}"
    return "a call of a function value"


class PureGlobals:
    """Which global functions are pure (T-Dataflow: Relax's functions are pure unless they
    say otherwise; here a function is pure when its body, and every global it calls, has
    no reference operation and calls no function value whose body is unknown -- a
    parameter, a let-bound closure). Control flow inside a callee is fine: the block only
    needs the call itself to be free of effects. Recursion is assumed pure (a greatest
    fixpoint: a cycle adds no effect). Memoised; iterative over each body."""

    def __init__(self, functions: Mapping[str, Function]) -> None:
        self.functions = functions
        self.known: dict[str, bool] = {}

    def __call__(self, name: str) -> bool:
        if name in self.known:
            return self.known[name]
        self.known[name] = True  # in progress: a cycle is pure
        fn = self.functions.get(name)
        pure = fn is not None and self._body_pure(fn.body)
        self.known[name] = pure
        return pure

    def _body_pure(self, body: Expr) -> bool:
        seen: set[int] = set()
        stack: list[Expr] = [body]
        while stack:
            e = stack.pop()
            if id(e) in seen:
                continue
            seen.add(id(e))
            if isinstance(e, (RefCreate, RefRead, RefWrite)):
                return False
            if isinstance(e, Call):
                callee = e.op
                if isinstance(callee, GlobalVar):
                    if not self(callee.name):
                        return False
                elif not isinstance(callee, (Op, Constructor, Function)):
                    return False
            stack.extend(children(e))
        return True


def dataflow_violation(body: Expr,
                       pure_global: Callable[[str], bool] | None = None
                       ) -> tuple[Expr, str] | None:
    """T-Dataflow: the first node of a dataflow block's ``body`` that is not pure
    straight-line code, with what it is, or None. Allowed: ``let`` bindings, calls of pure
    operators (``match_cast`` and ``call_dps_packed`` included), tuples, projections,
    constants, variables. Refused: ``if``, ``match``, references, function literals, calls
    of anything but an operator (a global, a closure, a constructor), a nested block.
    Iterative; each node once."""
    seen: set[int] = set()
    stack: list[Expr] = [body]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        match e:
            case Let(_, value, rest):
                stack.extend((rest, value))
            case Call(op=Op() as op, args=args):
                if not _pure_op(op):
                    what = ("a nested dataflow block" if op.name == "dataflow"
                            else f"a call of the stateful operator {op.name}")
                    return e, what
                stack.extend(reversed(args))
            case Call(op=Function() as prim, args=args) if prim.attr("Primitive") is not None:
                # a FuseOps group (or BYOC region) is operator calls only: still pure
                # straight-line code, as Relax allows call_tir of a fused function there
                stack.extend(reversed(args))
                stack.append(prim.body)
            case Call(op=GlobalVar(name), args=args) if pure_global and pure_global(name):
                stack.extend(reversed(args))  # a pure function's call: no effect here
            case Call(op=callee):
                return e, _call_text(callee)
            case Tuple(fields):
                stack.extend(reversed(fields))
            case TupleGetItem(tup):
                stack.append(tup)
            case Constant() | Var():
                pass
            case If():
                return e, "an if"
            case Match():
                return e, "a match"
            case RefCreate() | RefRead() | RefWrite():
                return e, "a reference operation"
            case Function():
                return e, "a function literal"
            case _:
                return e, f"{type(e).__name__.lower()}"
    return None
