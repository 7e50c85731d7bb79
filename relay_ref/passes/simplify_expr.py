"""SimplifyExpr (TVM's ``simplify_expr.cc``): algebraic simplifications, as a rule table.

Guarantee. The result type-checks with the same types and gives the same values (up to the
sign of a floating-point zero: ``x + 0`` with ``x = -0.0`` is ``0.0``, and ``-0.0 == 0.0``).
Every rule below rewrites one operator call into an expression of exactly the call's type
(shape and dtype), which each rule checks against the checked types: ``add(%x, 0f)`` is *not*
``%x`` when the ``0`` broadcasts ``%x`` to a larger shape. A rule never drops a
sub-expression that could have an effect (only constants, or values it keeps).

The rules (``RULES``; each is ``(name, rewrite)`` and fires on a call whose arguments have
already been simplified; a node is rewritten until no rule applies):

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

Cost: linear in the number of distinct nodes (each node is rewritten a bounded number of
times); types come from ``infer_types`` on the input (run if the module has none) and are
carried to rewritten nodes, since every rule keeps the node's type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import Call, Constant, Expr, Op, children
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.registry import make_attrs
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.effects import Effects
from relay_ref.passes.pin_types import Determinacy, annotate_params
from relay_ref.passes.rewrite import with_children
from relay_ref.typecheck.infer import infer_types

TypeOf = Callable[[Expr], Type | None]


class _Ctx:
    """What a rule may ask: types of (rewritten) nodes, and effects of the input's nodes."""

    def __init__(self, types: TypeOf, effects: Effects, det: Determinacy) -> None:
        self.type_of = types
        self.effects = effects
        self.det = det

    def droppable(self, node: Expr) -> bool:
        """May ``node`` go? No effect, and nothing else's type depends on it."""
        return not self.effects.stateful(node) and self.det.vars_fixed(node)


Rule = Callable[[Call, Type, _Ctx], Expr | None]


def _op(node: Expr, *names: str) -> bool:
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in names


def _static(ty: Type | None) -> TensorType | None:
    if isinstance(ty, TensorType) and all(isinstance(d, int) for d in ty.shape):
        return ty
    return None


def _is_fill(node: Expr, value: int) -> bool:
    """A constant all of whose elements are ``value``, or ``zeros``/``ones`` (no args)."""
    if isinstance(node, Constant):
        return node.data.size > 0 and bool(np.all(node.data == value))
    return _op(node, "zeros" if value == 0 else "ones") and not node.args  # type: ignore


def _identity(commutes: bool, unit: int) -> Rule:
    """``x op unit`` (and ``unit op x`` when ``commutes``) -> ``x`` if the type is ``x``'s."""
    def rule(node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
        if len(node.args) != 2:
            return None
        x, u = node.args
        if _is_fill(u, unit) and ctx.type_of(x) == ty:
            return x
        if commutes and _is_fill(x, unit) and ctx.type_of(u) == ty:
            return u
        return None
    return rule


def _double_negative(node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
    inner = node.args[0]
    return inner.args[0] if _op(inner, "negative") else None  # type: ignore[attr-defined]


def _same_cast(node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
    x = node.args[0]
    return x if ctx.type_of(x) == ty else None


_KIND = {"i": "int", "u": "uint", "f": "float", "b": "bool"}


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


def _consecutive_cast(node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
    inner = node.args[0]
    if not _op(inner, "cast"):
        return None
    x = inner.args[0]  # type: ignore[attr-defined]
    x_ty, mid = ctx.type_of(x), ctx.type_of(inner)
    if not (isinstance(x_ty, TensorType) and isinstance(mid, TensorType)):
        return None
    if not _lossless(x_ty.dtype, mid.dtype):
        return None
    return Call(node.op, (x,), node.attrs)


def _axes(attrs: object, rank: int) -> tuple[int, ...]:
    axes = getattr(attrs, "axes", None)
    if axes is None:
        return tuple(reversed(range(rank)))
    return tuple(a % rank if rank else a for a in axes)


def _transpose(node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
    x = node.args[0]
    x_ty = ctx.type_of(x)
    if not isinstance(x_ty, TensorType):
        return None
    rank = len(x_ty.shape)
    outer = _axes(node.attrs, rank)
    if outer == tuple(range(rank)):
        return x  # a transpose that permutes nothing
    if not _op(x, "transpose"):
        return None
    inner_x = x.args[0]  # type: ignore[attr-defined]
    inner = _axes(x.attrs, rank)  # type: ignore[attr-defined]
    axes = tuple(inner[i] for i in outer)
    if axes == tuple(range(rank)):
        return inner_x
    return Call(node.op, (inner_x,), make_attrs("transpose", {"axes": axes}))


_RESHAPE_LIKE = ("reshape", "squeeze", "expand_dims", "reshape_like")


def _reshape(node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
    x = node.args[0]
    if ctx.type_of(x) == ty and (node.op.name != "reshape_like"  # type: ignore[attr-defined]
                                 or ctx.droppable(node.args[1])):
        return x  # a reshape that changes nothing
    if not _op(x, *_RESHAPE_LIKE):
        return None
    static = _static(ty)
    inner_x = x.args[0]  # type: ignore[attr-defined]
    if static is None or _static(ctx.type_of(inner_x)) is None:
        return None
    dropped = [*x.args[1:], *node.args[1:]]  # type: ignore[attr-defined]
    if not all(ctx.droppable(d) for d in dropped):
        return None  # reshape_like's shape argument: keep it if it does or types something
    if ctx.type_of(inner_x) == ty:
        return inner_x
    return Call(Op("reshape"), (inner_x,), make_attrs("reshape", {"newshape": static.shape}))


def _concretize(target: str) -> Rule:
    """``zeros_like(x)`` -> ``zeros(shape, dtype)`` for a static, effect-free ``x``."""
    def rule(node: Call, ty: Type, ctx: _Ctx) -> Expr | None:
        static = _static(ty)
        if static is None or not ctx.droppable(node.args[0]):
            return None
        attrs = make_attrs(target, {"shape": tuple(static.shape), "dtype": static.dtype})
        return Call(Op(target), (), attrs)
    return rule


#: ``op name -> rules`` (tried in order; the first that returns an expression wins).
RULES: dict[str, list[tuple[str, Rule]]] = {
    "add": [("x + 0 -> x, 0 + x -> x", _identity(True, 0))],
    "subtract": [("x - 0 -> x", _identity(False, 0))],
    "multiply": [("x * 1 -> x, 1 * x -> x", _identity(True, 1))],
    "divide": [("x / 1 -> x", _identity(False, 1))],
    "negative": [("-(-x) -> x", _double_negative)],
    "cast": [("cast(x: d, d) -> x", _same_cast),
             ("cast(cast(x, wider), d) -> cast(x, d)", _consecutive_cast)],
    "transpose": [("transpose(transpose(x, p), q) -> transpose(x, p.q); identity -> x",
                   _transpose)],
    **{name: [("reshape-like(reshape-like(x)) -> reshape(x); no-op -> x", _reshape)]
       for name in _RESHAPE_LIKE},
    "zeros_like": [("zeros_like(x) -> zeros(static shape)", _concretize("zeros"))],
    "ones_like": [("ones_like(x) -> ones(static shape)", _concretize("ones"))],
}

_MAX_REWRITES = 8  # per node: a rule's result may be simplified again


class _Simplifier:
    def __init__(self, mod: IRModule, effects: Effects) -> None:
        self.types = mod.checked_types
        self.new_types: dict[int, Type] = {}
        self.ctx = _Ctx(self.type_of, effects, Determinacy(mod))
        self.memo: dict[int, Expr] = {}
        self.keep: list[Expr] = []

    def type_of(self, node: Expr) -> Type | None:
        got = self.new_types.get(id(node))
        return got if got is not None else self.types.get(node)

    def visit(self, node: Expr) -> Expr:
        # Iterative post-order (deep let chains and long graphs).
        stack: list[tuple[Expr, bool]] = [(node, False)]
        memo = self.memo
        while stack:
            cur, expanded = stack.pop()
            if id(cur) in memo:
                continue
            if not expanded:
                stack.append((cur, True))
                stack.extend((k, False) for k in children(cur) if id(k) not in memo)
                continue
            out = with_children(cur, [memo[id(k)] for k in children(cur)])
            ty = self.types.get(cur)
            if ty is not None:
                if out is not cur:
                    self.new_types[id(out)] = ty
                out = self.simplify(out, ty)
            memo[id(cur)] = out
            self.keep.append(cur)
        return memo[id(node)]

    def simplify(self, node: Expr, ty: Type) -> Expr:
        for _ in range(_MAX_REWRITES):
            if not (isinstance(node, Call) and isinstance(node.op, Op)):
                return node
            for _name, rule in RULES.get(node.op.name, ()):
                out = rule(node, ty, self.ctx)
                if out is not None:
                    break
            else:
                return node
            if self.type_of(out) is None:
                self.new_types[id(out)] = ty
                self.keep.append(out)
            node = out
        return node


@register_pass
class SimplifyExpr(Pass):
    """Algebraic simplification by the rule table ``RULES`` (see the module docstring)."""

    name = "SimplifyExpr"
    opt_level = 0

    def __call__(self, mod: IRModule) -> IRModule:
        original = mod
        mod = annotate_params(mod if mod.checked_types else infer_types(mod))
        simplifier = _Simplifier(mod, Effects(mod))
        functions = {}
        for n, f in mod.functions.items():
            body = run_deep(lambda f=f: simplifier.visit(f.body))
            functions[n] = f if body is f.body else replace(f, body=body)
        if all(functions[n] is f for n, f in mod.functions.items()):
            return original  # nothing simplified: no annotations added either
        return replace(mod, functions=functions, checked_types={}, global_types={})
