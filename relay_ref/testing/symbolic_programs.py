"""Generator of well-typed programs with *symbolic shapes* (spec/typing.md Shape-*,
spec/syntax.md S-SymDim, S-MatchCast, S-DPS, S-Dataflow), for the round-trip, soundness and
``check_pass`` properties on programs the ordinary generators never produce.

``symbolic_cases()`` is a hypothesis strategy of ``SymbolicCase``: a module whose ``@main``
takes tensors with symbolic shapes, with what the generator derived about it:

* parameters ``%x: Tensor[(n, C), float32]`` (``n`` shared by several parameters), maybe
  ``%y: Tensor[(m, C), float32]`` (a second variable), ``%z: Tensor[(n * 2, C), float32]``
  (an expression dimension: ``n`` is bound bare by ``%x``, Shape-Scope), a bias
  ``Tensor[(C), float32]`` and a dense weight ``Tensor[(D, C), float32]``;
* a let chain of operator calls whose output shapes are arithmetic on the inputs':
  elementwise unary and binary ops on operands of *the same* type, broadcasting against the
  bias or a scalar, ``reshape`` to ``(-1,)`` (``n * C``) and back to ``(-1, C)``,
  ``concatenate`` on axis 0 (``n + m``) and axis 1 (``C1 + C2``), ``nn.dense``,
  ``transpose``, ``sum`` (with and without keepdims), ``expand_dims`` / ``squeeze``, and
  pooling of an optional image ``Tensor[(n, C, h, h), float32]`` (output sizes
  ``floordiv(h - 1, 2) + 1`` and friends);
* ``match_cast`` to a fresh variable (``Tensor[(k0, C), float32]``, binding ``k0``) or to
  the type the value already has; ``call_dps_packed`` / ``call_tir`` of the packed
  functions registered here (``relay_ref.testing.double``, ``relay_ref.testing.add``);
* ``dataflow { ... }`` blocks holding a run of pure operator calls (no match_cast, no
  packed calls inside: Shape-Dataflow), whose output the rest of the chain uses.

Every combination the generator makes is decidable: two operands are combined only when
their types are equal (canonically), so no program needs a run-time shape check to be
well typed, and every dimension of ``@main``'s result is derived here (``ret_type``), with
the dimension each ``match_cast`` variable equals at run time (``cast_dims``).

Invariants: every binder is annotated except lets (their types follow from their values);
``@main``'s result type is annotated only when it mentions parameter shape variables only
(a variable bound by a ``match_cast`` inside the body is not in scope in the signature);
no node is shared; every ``Var`` is bound once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from relay_ref.ir.expr import Call, Constant, Expr, Function, Let, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.shape import eval_shape, floordiv, floormod, shape_vars, substitute_shape, sym
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.registry import make_attrs
from relay_ref.ops.symbolic import DPSAttrs, MatchCastAttrs, register_packed

__all__ = ["FEATURES", "PACKED", "SymbolicCase", "symbolic_cases", "symbolic_programs"]

F32 = "float32"
#: what a program may use (``SymbolicCase.features``)
FEATURES = ("unary", "binary", "broadcast", "scalar", "reshape", "unreshape", "concat0",
            "concat1", "dense", "transpose", "sum", "expand", "squeeze", "pool", "match_cast",
            "match_cast_same", "dps", "tir", "dataflow", "expr_param", "two_vars")
UNARY = ("nn.relu", "negative", "tanh", "abs", "sigmoid")
BINARY = ("add", "subtract", "multiply", "maximum", "minimum")


def _double(x: np.ndarray, out: np.ndarray) -> None:
    out[...] = x * 2


def _add(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    out[...] = x + y


#: the packed functions the generated programs call (registered on import; replace=True
#: keeps a re-import harmless)
PACKED = {"relay_ref.testing.double": _double, "relay_ref.testing.add": _add}
for _name, _fn in PACKED.items():
    register_packed(_name, _fn, replace=True)


@dataclass(frozen=True, repr=False)
class SymbolicCase:
    """A generated program. ``ret_type``: the type of ``@main``'s result as derived here
    (match_cast variables included); ``param_vars``: the shape variables ``@main``'s
    parameters bind; ``cast_dims``: for each match_cast variable, the dimension (over the
    parameter variables) it equals at run time."""

    module: IRModule
    ret_type: Type
    param_vars: tuple[str, ...]
    cast_dims: dict[str, object] = field(default_factory=dict, hash=False)
    features: frozenset[str] = frozenset()

    def text(self) -> str:
        from relay_ref.syntax.printer import astext

        return astext(self.module)

    def __repr__(self) -> str:  # a failing case reads as its program text
        return f"SymbolicCase(features={sorted(self.features)}, module=\n{self.text()})"

    def _repr_pretty_(self, p: object, cycle: bool) -> None:  # hypothesis's pretty-printer
        p.text(repr(self))  # type: ignore[attr-defined]

    def arguments(self, env: dict[str, int], seed: int = 0) -> list[np.ndarray]:
        """Arguments for ``@main`` when its shape variables take the values of ``env``
        (small float32 values from ``seed``)."""
        rng = np.random.default_rng(seed)
        out = []
        for p in self.module["main"].params:
            ty = p.type_annotation
            assert isinstance(ty, TensorType)
            shape = eval_shape(ty.shape, env)
            out.append(rng.uniform(-2, 2, size=shape).astype(F32))
        return out

    def expected_shapes(self, env: dict[str, int]) -> list[tuple[int, ...]]:
        """The concrete shapes of ``@main``'s result (its fields, for a tuple) at ``env``."""
        full = dict(env)
        for name, dim in self.cast_dims.items():
            full[name] = eval_shape((dim,), env)[0]
        fields = self.ret_type.fields if isinstance(self.ret_type, TupleType) \
            else (self.ret_type,)
        return [eval_shape(f.shape, full) for f in fields]  # type: ignore[union-attr]


class _Ctx:
    """The values in scope (variable, type) and what was used; ``fresh`` names."""

    def __init__(self) -> None:
        self.pool: list[tuple[Var, TensorType]] = []
        self.features: set[str] = set()
        self.casts: dict[str, object] = {}  # match_cast variable -> its value's dimension
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"


def _op(name: str, args: tuple[Expr, ...], **attrs: object) -> Call:
    return Call(Op(name), args, make_attrs(name, attrs))


def _real_dim(d: object, casts: dict[str, object]) -> object:
    """``d`` with match_cast variables replaced by the dimension they equal."""
    return substitute_shape((d,), casts)[0] if casts else d


def _step(draw: st.DrawFn, ctx: _Ctx, pool: list[tuple[Var, TensorType]], pure: bool,
          consts: dict[str, object]) -> tuple[Expr, TensorType] | None:
    """One binding's value (and type) from the values in ``pool``; ``pure``: operator
    calls only (inside a dataflow block)."""
    kinds = ["unary", "binary", "broadcast", "scalar", "reshape", "concat0", "concat1",
             "dense", "transpose", "sum", "expand", "squeeze", "pool"]
    if not pure:
        kinds += ["match_cast", "match_cast_same", "dps", "tir"]
    kinds = [k for k in kinds if any(_fits(k, t, consts) for _, t in pool)]
    kind = draw(st.sampled_from(kinds))
    var, ty = draw(st.sampled_from([(v, t) for v, t in pool if _fits(kind, t, consts)]))
    made = _make(draw, ctx, kind, var, ty, pool, consts)
    if made is not None:
        ctx.features.add(kind)
    return made


#: what a kind needs of its (first) operand's shape; the others take any tensor
_NEEDS = {"reshape": lambda s, c: len(s) == 2 or (len(s) == 1 and _divisible(s[0], c)),
          "concat0": lambda s, c: len(s) == 2, "concat1": lambda s, c: len(s) == 2,
          "transpose": lambda s, c: len(s) == 2, "sum": lambda s, c: len(s) == 2,
          "expand": lambda s, c: len(s) == 2, "broadcast": lambda s, c: s[-1:] == (c,),
          "dense": lambda s, c: len(s) == 2 and s[1] == c,
          "squeeze": lambda s, c: len(s) == 3 and s[0] == 1,
          "pool": lambda s, c: len(s) == 4}


def _fits(kind: str, ty: TensorType, consts: dict[str, object]) -> bool:
    need = _NEEDS.get(kind)
    return need is None or bool(need(ty.shape, consts["C"]))


def _make(draw: st.DrawFn, ctx: _Ctx, kind: str, var: Var, ty: TensorType,
          pool: list[tuple[Var, TensorType]], consts: dict[str, object]
          ) -> tuple[Expr, TensorType] | None:
    same = [(v, t) for v, t in pool if t == ty]
    c = consts["C"]
    match kind:
        case "unary":
            return _op(draw(st.sampled_from(UNARY)), (var,)), ty
        case "binary":
            other, _ = draw(st.sampled_from(same))
            return _op(draw(st.sampled_from(BINARY)), (var, other)), ty
        case "broadcast" if ty.shape[-1:] == (c,):
            bias = consts["bias"]
            args = (var, bias) if draw(st.booleans()) else (bias, var)
            return _op(draw(st.sampled_from(("add", "multiply"))), args), ty
        case "scalar":
            k = Constant(np.array(draw(st.sampled_from((0.5, 2.0, -1.0))), F32))
            return _op(draw(st.sampled_from(("add", "multiply"))), (var, k)), ty
        case "transpose" if len(ty.shape) == 2:
            return _op("transpose", (var,), axes=(1, 0)), \
                TensorType((ty.shape[1], ty.shape[0]), F32)
        case "sum" if len(ty.shape) == 2:
            axis, keep = draw(st.integers(0, 1)), draw(st.booleans())
            shape = ty.shape[:axis] + ((1,) if keep else ()) + ty.shape[axis + 1:]
            return _op("sum", (var,), axis=(axis,), keepdims=keep), TensorType(shape, F32)
        case "expand" if len(ty.shape) == 2:
            expanded = _op("expand_dims", (var,), axis=0)
            if draw(st.booleans()):  # squeezed back at once (a nested call)
                ctx.features.add("squeeze")
                return _op("squeeze", (expanded,), axis=(0,)), ty
            return expanded, TensorType((1, *ty.shape), F32)
        case "squeeze" if len(ty.shape) == 3 and ty.shape[0] == 1:
            return _op("squeeze", (var,), axis=(0,)), TensorType(ty.shape[1:], F32)
        case "pool" if len(ty.shape) == 4:
            # output sizes floordiv(h + 2p - k, s) + 1 (Relax / TVM), canonical
            nb, ch, h, w = ty.shape
            form = draw(st.sampled_from(("max", "avg", "global")))
            if form == "max":  # pool 1, stride 2: floordiv(h + 1, 2)
                return _op("nn.max_pool2d", (var,), pool_size=(1, 1), strides=(2, 2)), \
                    TensorType((nb, ch, floordiv(h - 1, 2) + 1, floordiv(w - 1, 2) + 1), F32)
            if form == "avg":  # pool 3, padding 1, stride 1: the same size
                return _op("nn.avg_pool2d", (var,), pool_size=(3, 3), padding=(1, 1)), \
                    TensorType((nb, ch, h + 2 - 3 + 1, w + 2 - 3 + 1), F32)
            return _op("nn.global_avg_pool2d", (var,)), TensorType((nb, ch, 1, 1), F32)
        case "reshape" if len(ty.shape) == 2:
            return _op("reshape", (var,), newshape=(-1,)), \
                TensorType((ty.shape[0] * ty.shape[1],), F32)
        case "reshape" if len(ty.shape) == 1 and _divisible(ty.shape[0], c):
            ctx.features.add("unreshape")

            return _op("reshape", (var,), newshape=(-1, c)), \
                TensorType((floordiv(ty.shape[0], c), c), F32)
        case "concat0" if len(ty.shape) == 2:
            others = [(v, t) for v, t in pool if len(t.shape) == 2 and t.shape[1] == ty.shape[1]]
            other, oty = draw(st.sampled_from(others))
            return _op("concatenate", (Tuple((var, other)),), axis=0), \
                TensorType((ty.shape[0] + oty.shape[0], ty.shape[1]), F32)
        case "concat1" if len(ty.shape) == 2:
            others = [(v, t) for v, t in pool if len(t.shape) == 2 and t.shape[0] == ty.shape[0]]
            other, oty = draw(st.sampled_from(others))
            return _op("concatenate", (Tuple((var, other)),), axis=1), \
                TensorType((ty.shape[0], ty.shape[1] + oty.shape[1]), F32)
        case "dense" if len(ty.shape) == 2 and ty.shape[1] == c:
            w = consts["weight"]
            return _op("nn.dense", (var, w)), TensorType((ty.shape[0], consts["D"]), F32)
        case "match_cast":
            name = ctx.fresh("k")
            i = draw(st.integers(0, len(ty.shape) - 1))
            ctx.casts[name] = _real_dim(ty.shape[i], ctx.casts)
            target = TensorType(ty.shape[:i] + (sym(name),) + ty.shape[i + 1:], F32)
            return Call(Op("match_cast"), (var,), MatchCastAttrs(target)), target
        case "match_cast_same":
            return Call(Op("match_cast"), (var,), MatchCastAttrs(ty)), ty
        case "dps":
            return Call(Op("call_dps_packed"), (Tuple((var,)),),
                        DPSAttrs("relay_ref.testing.double", ty)), ty
        case "tir":
            other, _ = draw(st.sampled_from(same))
            return Call(Op("call_tir"), (Tuple((var, other)),),
                        DPSAttrs("relay_ref.testing.add", ty)), ty
    return None  # the drawn kind does not apply to the drawn value


def _divisible(d: object, c: int) -> bool:
    """``d`` is ``c`` times a polynomial (every coefficient a multiple of ``c``)."""
    return floormod(d, c) == 0  # type: ignore[arg-type]


def _chain(draw: st.DrawFn, ctx: _Ctx, pool: list[tuple[Var, TensorType]], steps: int,
           pure: bool, consts: dict[str, object], depth: int
           ) -> list[tuple[Var, Expr, TensorType]]:
    """``steps`` bindings (a dataflow block is one), each from the values bound before."""
    out: list[tuple[Var, Expr, TensorType]] = []
    pool = list(pool)
    tries = 0
    while len(out) < steps and tries < 6 * steps:
        tries += 1
        if not pure and depth > 0 and draw(st.integers(0, 4)) == 0:
            inner = _chain(draw, ctx, pool, draw(st.integers(1, 3)), True, consts, depth - 1)
            if not inner:
                continue
            last_var, _, last_ty = inner[-1]
            body: Expr = last_var
            for v, value, _ in reversed(inner):
                body = Let(v, value, body)
            value: Expr = Call(Op("dataflow"), (body,), make_attrs("dataflow", {}))
            ty = last_ty
            ctx.features.add("dataflow")
        else:
            made = _step(draw, ctx, pool, pure, consts)
            if made is None:
                continue
            value, ty = made
        var = Var(ctx.fresh("v"))
        out.append((var, value, ty))
        pool.append((var, ty))
    return out


@st.composite
def symbolic_cases(draw: st.DrawFn, max_steps: int = 6) -> SymbolicCase:
    """A ``SymbolicCase`` (see the module docstring)."""
    ctx = _Ctx()
    c = draw(st.sampled_from((2, 3)))
    d = draw(st.sampled_from((2, 4)))
    n, m = sym("n"), sym("m")
    params: list[Var] = []

    def param(name: str, shape: tuple) -> Var:
        v = Var(name, TensorType(shape, F32))
        params.append(v)
        return v

    pool: list[tuple[Var, TensorType]] = []
    x = param("x", (n, c))
    pool.append((x, x.type_annotation))  # type: ignore[arg-type]
    if draw(st.booleans()):
        x2 = param("x2", (n, c))
        pool.append((x2, x2.type_annotation))  # type: ignore[arg-type]
    names = ["n"]
    if draw(st.booleans()):
        y = param("y", (m, c))
        pool.append((y, y.type_annotation))  # type: ignore[arg-type]
        names.append("m")
        ctx.features.add("two_vars")
    if draw(st.integers(0, 3)) == 0:  # an image: pooling output sizes over h
        img = param("img", (n, c, sym("h"), sym("h")))
        pool.append((img, img.type_annotation))  # type: ignore[arg-type]
        names.append("h")
    if draw(st.booleans()):
        z = param("z", (n * 2, c))
        pool.append((z, z.type_annotation))  # type: ignore[arg-type]
        ctx.features.add("expr_param")
    consts = {"C": c, "D": d, "bias": param("bias", (c,)), "weight": param("w", (d, c))}
    chain = _chain(draw, ctx, pool, draw(st.integers(1, max_steps)), False, consts, 1)
    bound = pool + [(v, t) for v, _, t in chain]
    if draw(st.booleans()) and len(bound) >= 2:
        (a, ta), (b, tb) = bound[-1], draw(st.sampled_from(bound[:-1]))
        result: Expr = Tuple((a, b))
        ret: Type = TupleType((ta, tb))
        if draw(st.booleans()):  # a projection of the tuple, sometimes
            result, ret = TupleGetItem(Tuple((a, b)), 1), tb
    else:
        result, ret = bound[-1]
    body = result
    for v, value, _ in reversed(chain):
        body = Let(v, value, body)
    fields = ret.fields if isinstance(ret, TupleType) else (ret,)
    in_scope = all(shape_vars(f.shape) <= set(names) for f in fields)  # type: ignore[union-attr]
    annotate = in_scope and draw(st.booleans())
    main = Function(tuple(params), body, ret if annotate else None)
    return SymbolicCase(IRModule({"main": main}), ret, tuple(names), dict(ctx.casts),
                        frozenset(ctx.features))


def symbolic_programs(max_steps: int = 6) -> st.SearchStrategy[IRModule]:
    """The modules of ``symbolic_cases`` (for ``check_pass(..., programs=...)``)."""
    return symbolic_cases(max_steps).map(lambda case: case.module)
