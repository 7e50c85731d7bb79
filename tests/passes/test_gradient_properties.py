"""AD on generated programs (spec/ad.md): float64 programs built from every differentiable
operator's signatures (the program generator's operator table, ``OpDef.differentiable is
True``, float32 signatures re-typed at float64 by the op's own relation), with ``let``,
tuples, ``if``, closures and references around them.

* The gradient in reverse (higher-order) and forward mode equals central finite
  differences, wherever the function is smooth there (an example where differences with
  two step sizes disagree, or any value is not finite, is discarded: a kink or a pole).
* check_pass-style: the gradient followed by PartialEvaluate + DeadCodeElimination gives
  the same values as the gradient itself.
"""

from __future__ import annotations

import functools

import numpy as np
from gradient_util import finite_differences, leaves
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.ir.expr import (
    Call,
    Constant,
    Function,
    If,
    Let,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    TupleGetItem,
    Var,
)
from relay_ref.ir.expr import Tuple as TupleExpr
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import FuncType, TensorType, TupleType
from relay_ref.ops.registry import NOT_YET, RelationError, all_ops
from relay_ref.testing.programs import op_table

SHAPES = ((), (3,), (2, 3))
TYPES = tuple(TensorType(s, "float64") for s in SHAPES)
#: stop_gradient's derivative is 0 by definition (finite differences see the identity);
#: the others cost too much for this test
SKIP = {"stop_gradient", "nn.batch_norm", "nn.conv2d_transpose"}
SETTINGS = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def _f64(ty: object) -> object:
    if isinstance(ty, TensorType):
        return TensorType(ty.shape, "float64" if ty.dtype == "float32" else ty.dtype)
    if isinstance(ty, TupleType):
        return TupleType(tuple(_f64(f) for f in ty.fields))
    return ty


@functools.cache
def signatures() -> dict[TensorType, list[tuple[str, tuple, object]]]:
    """Result type -> (op, argument types, attrs) of differentiable float64 calls."""
    ops = all_ops()
    out: dict[TensorType, list] = {}
    for name, sigs in op_table().by_op.items():
        op = ops[name]
        if op.differentiable is not True or name in SKIP:
            continue
        for sig in sigs:
            args = tuple(_f64(a) for a in sig.args)
            if not all(isinstance(a, TensorType) and a in TYPES for a in args):
                continue
            try:
                res = op.relation(list(args), sig.attrs)
            except RelationError:
                continue
            if res is not NOT_YET and res in TYPES:
                out.setdefault(res, []).append((name, args, sig.attrs))
    return out


class _Gen:
    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.params: list[Var] = []
        self.budget = 8

    def param(self, ty: TensorType) -> Var:
        same = [p for p in self.params if p.type_annotation == ty]
        if same and self.draw(st.booleans()):
            return self.draw(st.sampled_from(same))
        p = Var(f"p{len(self.params)}", ty)
        self.params.append(p)
        return p

    def expr(self, ty: TensorType, env: list[Var], depth: int) -> object:
        sigs = signatures().get(ty, [])
        if depth <= 0 or self.budget <= 0:
            local = [v for v in env if v.type_annotation == ty]
            if local and self.draw(st.booleans()):
                return self.draw(st.sampled_from(local))
            if self.draw(st.integers(0, 4)) == 0:
                return Constant(np.full(ty.shape, self.draw(st.sampled_from([0.5, -1.5, 2.0]))))
            return self.param(ty)
        self.budget -= 1
        form = self.draw(st.sampled_from(["op", "op", "op", "let", "if", "closure", "ref",
                                          "tuple"] if sigs else ["let", "if", "closure"]))
        if form == "op":
            name, args, attrs = self.draw(st.sampled_from(sigs))
            return Call(Op(name), tuple(self.expr(a, env, depth - 1) for a in args), attrs)
        if form == "let":
            vty = self.draw(st.sampled_from(TYPES))
            v = Var(f"v{self.budget}", vty)
            return Let(v, self.expr(vty, env, depth - 1), self.expr(ty, [*env, v], depth - 1))
        if form == "if":
            s = Call(Op("sum"), (self.expr(self.draw(st.sampled_from(TYPES)), env, 0),),
                     rr.parse_expr("sum(1f)").attrs)
            cond = Call(Op("greater"), (s, Constant(np.array(0.0))))
            return If(cond, self.expr(ty, env, depth - 1), self.expr(ty, env, depth - 1))
        if form == "closure":
            x = Var(f"z{self.budget}", ty)
            f = Var(f"f{self.budget}", FuncType((ty,), ty))
            fn = Function((x,), self.expr(ty, [*env, x], depth - 1), ty)
            arg = self.expr(ty, env, depth - 1)
            return Let(f, fn, Call(f, (Call(f, (arg,)),)))
        if form == "ref":
            r = Var(f"r{self.budget}")
            u = Var(f"u{self.budget}")
            cur = Var(f"c{self.budget}", ty)
            return Let(r, RefCreate(self.expr(ty, env, depth - 1)),
                       Let(cur, RefRead(r),
                           Let(u, RefWrite(r, self.expr(ty, [*env, cur], depth - 1)),
                               RefRead(r))))
        pair = TupleExpr((self.expr(ty, env, depth - 1), self.expr(ty, env, depth - 1)))
        return TupleGetItem(pair, self.draw(st.integers(0, 1)))


@st.composite
def cases(draw: st.DrawFn) -> tuple[IRModule, list[np.ndarray]]:
    gen = _Gen(draw)
    ty = draw(st.sampled_from(TYPES))
    body = gen.expr(ty, [], draw(st.integers(1, 3)))
    if not gen.params:
        gen.param(TYPES[0])
    mod = IRModule({"main": Function(tuple(gen.params), body, ty)})
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    args = [rng.uniform(-1.5, 1.5, p.type_annotation.shape) for p in gen.params]
    return rr.parse(rr.astext(mod)), args


def _finite(value: object) -> bool:
    return all(np.all(np.isfinite(x)) for x in leaves(value))


def _smooth_gradient(mod: IRModule, args: list[np.ndarray]) -> list[np.ndarray]:
    """Finite differences where they are trustworthy (else the example is discarded)."""
    try:
        assume(_finite(rr.evaluate(mod, *args)))
    except rr.RelayRuntimeError:
        assume(False)
    coarse = finite_differences(mod, args, 1e-4)
    fine = finite_differences(mod, args, 1e-6)
    for a, b in zip(coarse, fine, strict=True):
        assume(np.all(np.isfinite(a)) and np.all(np.isfinite(b)))
        assume(np.allclose(a, b, rtol=1e-3, atol=1e-4))
        assume(np.max(np.abs(b), initial=0.0) < 1e4)
    return fine


def test_signatures_cover_the_differentiable_ops() -> None:
    names = {name for sigs in signatures().values() for name, _, _ in sigs}
    assert {"add", "multiply", "tanh", "exp", "sum"} <= names, sorted(names)
    assert len(names) >= 20, sorted(names)


@SETTINGS
@given(cases(), st.sampled_from(["higher_order", "forward"]))
def test_gradient_matches_finite_differences(case, mode: str) -> None:
    mod, args = case
    expected = _smooth_gradient(mod, args)
    value, grads = rr.evaluate(rr.gradient(mod, mode), *args)
    for got, want in zip(leaves(value), leaves(rr.evaluate(mod, *args)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for got, want in zip(grads, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@SETTINGS
@given(cases())
def test_partial_evaluation_preserves_the_gradient(case) -> None:
    mod, args = case
    g = rr.gradient(mod)
    simple = rr.optimize(g, ["PartialEvaluate", "DeadCodeElimination"])
    assert simple.global_types["main"] == g.global_types["main"]
    try:
        want = rr.evaluate(g, *args)
    except rr.RelayRuntimeError:
        return  # the refinement guarantee says nothing where the input fails
    got = rr.evaluate(simple, *args)
    for a, b in zip(leaves(got), leaves(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True)
