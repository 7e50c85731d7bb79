"""SimplifyExpr (TVM's ``simplify_expr.cc``): algebraic simplifications, as a rule table.

Guarantee. The result type-checks with the same types and gives the same values (up to the
sign of a floating-point zero: ``x + 0`` with ``x = -0.0`` is ``0.0``, and ``-0.0 == 0.0``).
Every rule below rewrites one operator call into an expression of exactly the call's type
(shape and dtype), which each rule checks against the checked types: ``add(%x, 0f)`` is *not*
``%x`` when the ``0`` broadcasts ``%x`` to a larger shape. A rule never drops a
sub-expression that could have an effect (only constants, or values it keeps).

The rules (``RULES``, a rule table of the pattern language ``relay_ref.passes.pattern``: each
``Rule(doc, pattern, rewrite)`` fires on a call whose arguments have already been
simplified; a node is rewritten until no rule applies, and the program until a sweep
changes nothing):

* ``x + 0``, ``0 + x``, ``x - 0``, ``x * 1``, ``1 * x``, ``x / 1`` -> ``x`` when the result's
  type is ``x``'s (the 0 / 1 a constant, or ``zeros``/``ones`` of a static shape);
* ``negative(negative(x))`` -> ``x`` (exact, wrap-around included);
* ``cast(x, d)`` -> ``x`` when ``x`` already has dtype ``d`` (TVM's SimplifySameCast);
* ``cast(cast(x, a), b)`` -> ``cast(x, b)`` when ``x -> a`` loses nothing (TVM's
  SimplifyConsecutiveCast: never past a narrowing cast);
* ``transpose(transpose(x, p), q)`` -> ``transpose(x, p o q)``, and a transpose that permutes
  nothing -> ``x`` (TVM's SimplifyTranspose);
* reshape-like ops (``reshape``, ``squeeze``, ``expand_dims``, ``reshape_like``) of a
  reshape-like op -> one ``reshape`` to the static result shape, and a reshape-like op whose
  result type is its input's -> the input (TVM's SimplifyReshape; row-major data is unchanged
  by these ops, so only the final shape matters);
* ``zeros_like(x)`` / ``ones_like(x)`` -> ``zeros`` / ``ones`` of ``x``'s static type when
  ``x`` has no effect (TVM's ConcretizeLike): the data dependency on ``x`` goes.

Dropping an argument (``ones_like``'s, ``reshape_like``'s shape) could drop the only thing
that typed a variable (``def @main(%a) -> Tensor[(2, 2), int32] { add(ones_like(%a), 1) }``
types ``%a`` backwards): unannotated parameters get their checked types as annotations
first, and an argument is dropped only when every variable in it has a type fixed without
it (``relay_ref.passes.pin_types``).

Not taken from TVM: ``x * 0 -> 0`` (wrong for inf/nan), rules that need layouts or
rewrite into ops with broadcast semantics the type check would have to re-derive.

Cost: linear in the number of distinct nodes per sweep (each node is rewritten a bounded
number of times; a second sweep finds nothing left in practice); types come from
``infer_types`` on the input (run if the module has none) and are carried to rewritten
nodes, since every rule keeps the node's type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import Call, Expr, Op
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.registry import make_attrs
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.effects import Effects
from relay_ref.passes.pattern import (
    DFPattern,
    Match,
    Rewriter,
    Rule,
    RuleTable,
    is_constant,
    is_op,
    wildcard,
)
from relay_ref.passes.pin_types import Determinacy, annotate_params
from relay_ref.passes.shared_uses import SharedUses
from relay_ref.typecheck.infer import infer_types


class _Ctx:
    """What a rule may ask beyond the match: effects of nodes, and which variables have
    their type fixed without a given node."""

    def __init__(self, effects: Effects, det: Determinacy, shared: SharedUses) -> None:
        self.effects = effects
        self.det = det
        self.shared = shared

    def droppable(self, node: Expr) -> bool:
        """May ``node`` go? No effect, nothing else's type depends on it, and it holds no
        use of a stateful shared node used elsewhere (spec/partial_eval.md 0)."""
        return (not self.effects.stateful(node) and self.det.vars_fixed(node)
                and not self.shared.pins(node))


def _static(ty: Type | None) -> TensorType | None:
    if isinstance(ty, TensorType) and all(isinstance(d, int) for d in ty.shape):
        return ty
    return None


def _typed(fn: Callable[[Match, Call, Type, _Ctx], Expr | None]
           ) -> Callable[[Match], Expr | None]:
    """A rewrite of a call with a recorded type (every rule keeps that type)."""
    def rewrite(m: Match) -> Expr | None:
        ty = m.type_of(m.expr)
        if ty is None or not isinstance(m.expr, Call):
            return None
        return fn(m, m.expr, ty, m.ctx)  # type: ignore[arg-type]
    return rewrite


def _same_type_as_call(x: DFPattern) -> Callable[[Expr, Match], bool]:
    """The bound ``x`` has the matched call's type (the rule drops the call)."""
    def pred(e: Expr, m: Match) -> bool:
        ty = m.type_of(e)
        return ty is not None and m.type_of(m[x]) == ty
    return pred


def _fill(value: int) -> DFPattern:
    """A constant all of whose elements are ``value``, or ``zeros()`` / ``ones()``."""
    const = is_constant().where(
        lambda e, m: e.data.size > 0 and bool(np.all(e.data == value)),  # type: ignore
        f"every element is {value}")
    return const | is_op("zeros" if value == 0 else "ones")()


# -- x op unit -> x ----------------------------------------------------------------------

def _identity(op: str, unit: int) -> Rule:
    """``x op unit`` -> ``x`` when the result's type is ``x``'s (``add`` and ``multiply``
    also match ``unit op x``: the matcher's commutative matching)."""
    x = wildcard()
    pattern = is_op(op)(x, _fill(unit)).where(_same_type_as_call(x), "x has the type")
    name = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}[op]
    doc = f"x {name} {unit} -> x" + (f", {unit} {name} x -> x" if op in (
        "add", "multiply") else "")
    return Rule(doc, pattern, lambda m: m[x])


# -- -(-x) -> x --------------------------------------------------------------------------

_NEG_X = wildcard()
_DOUBLE_NEGATIVE = is_op("negative")(is_op("negative")(_NEG_X))


# -- casts -------------------------------------------------------------------------------

_CAST_X = wildcard()
_SAME_CAST = is_op("cast")(_CAST_X).where(_same_type_as_call(_CAST_X), "x has dtype d")


def _lossless(src: str, dst: str) -> bool:
    """Every value of dtype ``src`` is exactly representable in ``dst``."""
    try:
        a, b = np.dtype(src), np.dtype(dst)
    except TypeError:
        return False
    if a == b or a.kind == "b":
        return True
    if a.kind == b.kind and a.kind in "iuf":
        return b.itemsize >= a.itemsize
    if a.kind == "u" and b.kind == "i":
        return b.itemsize > a.itemsize
    if a.kind in "iu" and b.kind == "f":
        return {2: 11, 4: 24, 8: 53}.get(b.itemsize, 0) >= 8 * a.itemsize - (a.kind == "i")
    return False


def _widening(e: Expr, m: Match) -> bool:
    x_ty, mid = m.type_of(m[_CAST2_X]), m.type_of(e)
    return (isinstance(x_ty, TensorType) and isinstance(mid, TensorType)
            and _lossless(x_ty.dtype, mid.dtype))


_CAST2_X = wildcard()
_CONSECUTIVE_CAST = is_op("cast")(
    is_op("cast")(_CAST2_X).where(_widening, "x -> inner dtype loses nothing"))


@_typed
def _consecutive_cast(m: Match, node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
    return Call(node.op, (m[_CAST2_X],), node.attrs)


# -- transposes --------------------------------------------------------------------------

def _axes(attrs: object, rank: int) -> tuple[int, ...]:
    axes = getattr(attrs, "axes", None)
    if axes is None:
        return tuple(reversed(range(rank)))
    return tuple(a % rank if rank else a for a in axes)


def _rank(m: Match, x: Expr) -> int | None:
    ty = m.type_of(x)
    return len(ty.shape) if isinstance(ty, TensorType) else None


_T_X = wildcard()
_T_IDENTITY = is_op("transpose")(_T_X).where(
    lambda e, m: (r := _rank(m, m[_T_X])) is not None
    and _axes(e.attrs, r) == tuple(range(r)),  # type: ignore[attr-defined]
    "the permutation is the identity")

_T_INNER_X = wildcard()
_T_INNER = is_op("transpose")(_T_INNER_X)
_T_TWICE = is_op("transpose")(_T_INNER)


@_typed
def _compose_transposes(m: Match, node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
    inner = m[_T_INNER]
    rank = _rank(m, inner)
    if rank is None:
        return None
    outer_axes = _axes(node.attrs, rank)
    inner_axes = _axes(inner.attrs, rank)  # type: ignore[attr-defined]
    axes = tuple(inner_axes[i] for i in outer_axes)
    if axes == tuple(range(rank)):
        return m[_T_INNER_X]
    return Call(node.op, (m[_T_INNER_X],), make_attrs("transpose", {"axes": axes}))


# -- reshape-like ops --------------------------------------------------------------------

_RESHAPE_LIKE = ("reshape", "squeeze", "expand_dims", "reshape_like")


def _reshape_like(data: DFPattern) -> DFPattern:
    """A call of a reshape-like op on ``data`` (``reshape_like`` has a shape argument)."""
    out: DFPattern = is_op("reshape_like")(data, wildcard())
    for name in _RESHAPE_LIKE[:-1]:
        out = is_op(name)(data) | out
    return out


_R_X = wildcard()
_R_NOOP = _reshape_like(_R_X).where(
    lambda e, m: m.type_of(m[_R_X]) == m.type_of(e) and m.type_of(e) is not None and (
        e.op.name != "reshape_like" or m.ctx.droppable(e.args[1])),  # type: ignore
    "the result type is x's (and a shape argument may go)")

_R_INNER_X = wildcard()
_R_INNER = _reshape_like(_R_INNER_X)
_R_TWICE = _reshape_like(_R_INNER)


@_typed
def _merge_reshapes(m: Match, node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
    static = _static(ty)
    inner_x = m[_R_INNER_X]
    if static is None or _static(m.type_of(inner_x)) is None:
        return None
    dropped = [*m[_R_INNER].args[1:], *node.args[1:]]  # type: ignore[attr-defined]
    if not all(ctx.droppable(d) for d in dropped):
        return None  # reshape_like's shape argument: keep it if it does or types something
    if m.type_of(inner_x) == ty:
        return inner_x
    return Call(Op("reshape"), (inner_x,), make_attrs("reshape", {"newshape": static.shape}))


# -- *_like ops --------------------------------------------------------------------------

def _concretize(like: str, target: str) -> Rule:
    """``zeros_like(x)`` -> ``zeros(shape, dtype)`` for a static, effect-free ``x``."""
    x = wildcard()

    @_typed
    def rewrite(m: Match, node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
        static = _static(ty)
        if static is None or not ctx.droppable(m[x]):
            return None
        attrs = make_attrs(target, {"shape": tuple(static.shape), "dtype": static.dtype})
        return Call(Op(target), (), attrs)

    return Rule(f"{like}(x) -> {target}(static shape of x)", is_op(like)(x), rewrite)


#: The rules, tried in order at each call (after its arguments are simplified); the first
#: whose pattern matches and whose rewrite gives an expression wins.
RULES = RuleTable((
    _identity("add", 0),  # x + 0 -> x, 0 + x -> x (same type)
    _identity("subtract", 0),  # x - 0 -> x
    _identity("multiply", 1),  # x * 1 -> x, 1 * x -> x
    _identity("divide", 1),  # x / 1 -> x
    Rule("-(-x) -> x", _DOUBLE_NEGATIVE, _typed(lambda m, n, t, c: m[_NEG_X])),
    Rule("cast(x: d, d) -> x", _SAME_CAST, _typed(lambda m, n, t, c: m[_CAST_X])),
    Rule("cast(cast(x, wider), d) -> cast(x, d)", _CONSECUTIVE_CAST, _consecutive_cast),
    Rule("transpose(x, identity) -> x", _T_IDENTITY, _typed(lambda m, n, t, c: m[_T_X])),
    Rule("transpose(transpose(x, p), q) -> transpose(x, p.q)", _T_TWICE,
         _compose_transposes),
    Rule("reshape-like(x) of x's type -> x", _R_NOOP, _typed(lambda m, n, t, c: m[_R_X])),
    Rule("reshape-like(reshape-like(x)) -> reshape(x)", _R_TWICE, _merge_reshapes),
    _concretize("zeros_like", "zeros"),  # the data dependency on x goes
    _concretize("ones_like", "ones"),  # likewise
))

_MAX_REWRITES = 8  # per node: a rule's result may be simplified again


@register_pass
class SimplifyExpr(Pass):
    """Algebraic simplification by the rule table ``RULES`` (see the module docstring)."""

    name = "SimplifyExpr"
    idempotent = True
    opt_level = 0

    def __call__(self, mod: IRModule) -> IRModule:
        original = mod
        mod = annotate_params(mod if mod.checked_types else infer_types(mod))
        effects = Effects(mod)
        rewriter = Rewriter(RULES, types=mod.checked_types, keep_types=True,
                            ctx=_Ctx(effects, Determinacy(mod),
                                     SharedUses(mod.functions.values(), effects)),
                            max_local=_MAX_REWRITES)
        functions = {}
        for n, f in mod.functions.items():
            body = run_deep(lambda f=f: rewriter.run(f.body))
            functions[n] = f if body is f.body else replace(f, body=body)
        if all(functions[n] is f for n, f in mod.functions.items()):
            return original  # nothing simplified: no annotations added either
        return replace(mod, functions=functions, checked_types={}, global_types={})
