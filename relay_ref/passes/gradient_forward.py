"""Forward-mode AD with dual numbers (spec/ad.md section 6; the thesis's second mode).

Every tensor ``t`` becomes a pair ``(t, t')`` of the value and its tangent (AD-Fwd-Type);
an operator call computes the value on the primal parts and the tangent with the op's
forward rule (``OpDef.tangent``, AD-Fwd-App-Op); the rest of the language is transformed
as in reverse mode (``ReverseAD``, which this class reuses), without a backpropagator:
global functions keep their parameters.

The wrapper (AD-Fwd-Grad) gives TVM's shape ``fn(T1..Tn) -> (O, (T1..Tn))`` by one
forward pass per element of each float input: the transformed body is a closure of the
tangents; a loop over the rows of an identity matrix passes each basis tangent and adds
``(sum of the result's tangents) * basis`` into the input's gradient. Inputs are tensors
and tuples of tensors of static shapes, the result tensors and tuples of tensors.

Invariant: the transformed program never duplicates or reorders effects (the same
A-normal form as reverse mode); a tangent has its value's type.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from relay_ref.ir.types import FuncType, TensorType, TupleType, Type, is_complete
from relay_ref.ir.visitor import free_vars
from relay_ref.ops.grad_common import op as make_call
from relay_ref.ops.registry import GradientUnsupported, get_op
from relay_ref.passes.gradient_common import (
    Block,
    TypeMap,
    ad_error,
    has_float,
    is_float,
    type_text,
)
from relay_ref.passes.gradient_reverse import ReverseAD

__all__ = ["ForwardAD"]


def _fwd_tensor(t: TensorType) -> Type:
    return TupleType((t, t))


@dataclass
class ForwardAD(ReverseAD):
    """The forward transform of one type-checked module (see the module docstring)."""

    suffix: str = "fwd"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.types = TypeMap(self.mod, _fwd_tensor, self.suffix)

    def bp_args(self, bp: Var) -> tuple[Var, ...]:
        return ()  # no backpropagator

    def lift(self, ty: Type, v: Expr, where: Expr) -> Expr:
        """A value paired with a zero tangent (AD-Fwd-Const)."""
        match ty:
            case TensorType():
                return Tuple((v, make_call("zeros_like", v)))
            case TupleType(fields):
                return Tuple(tuple(self.lift(f, TupleGetItem(v, i), where)
                                   for i, f in enumerate(fields)))
        raise ad_error(f"a value of type {type_text(ty)} cannot be differentiated", where,
                       "AD-Fwd-Const")

    def tangent(self, ty: Type, a: Expr) -> Expr:
        match ty:
            case TensorType():
                return TupleGetItem(a, 1)
            case TupleType(fields):
                return Tuple(tuple(self.tangent(f, TupleGetItem(a, i))
                                   for i, f in enumerate(fields)))
        raise ad_error(f"no tangent for type {type_text(ty)}", a, "AD-Fwd-App-Op")

    def pair(self, ty: Type, v: Expr, t: Expr) -> Expr:
        match ty:
            case TensorType():
                return Tuple((v, t))
            case TupleType(fields):
                return Tuple(tuple(self.pair(f, TupleGetItem(v, i), TupleGetItem(t, i))
                                   for i, f in enumerate(fields)))
        raise ad_error(f"no dual number of type {type_text(ty)}", v, "AD-Fwd-App-Op")

    def _op_call(self, e: Call, o: Op, args: tuple[Expr, ...], env: dict[Var, Expr],
                 bp: Var, blk: Block, memo: dict[int, Expr]) -> Expr:
        """AD-Fwd-App-Op: the value on the primal parts, the tangent by the op's rule."""
        opdef = get_op(o.name)
        if o.name == "gradient":
            raise ad_error("gradient(...) must be expanded before differentiating", e,
                           "AD-Grad")
        arg_types = [self.type_of(a) for a in args]
        out_type = self.type_of(e)
        if out_type is None or any(t is None for t in arg_types):
            raise ad_error(f"no type recorded for this call of {o.name}", e, "AD-Fwd-App-Op")
        duals = [self.tr(a, env, bp, blk, memo) for a in args]
        xs, ts = [], []
        for a, t in zip(duals, arg_types, strict=True):
            x = blk.push(self.primal(t, a), "x", t if is_complete(t) else None)
            dx = blk.push(self.tangent(t, a), "dx", t if is_complete(t) else None)
            self.extra_types[x] = self.extra_types[dx] = t
            xs.append(x)
            ts.append(dx)
        call = Call(o, tuple(xs), e.attrs, e.type_args)
        self.extra_types[call] = out_type
        v = blk.push(call, "v", out_type if is_complete(out_type) else None)
        self.extra_types[v] = out_type
        if not (has_float(out_type) and any(has_float(t) for t in arg_types)):
            return blk.push(self.lift(out_type, v, e), "dual")  # AD-Fwd-App-Op-Const
        if opdef.differentiable is not True or opdef.tangent is None:
            why = opdef.differentiable if isinstance(opdef.differentiable, str) else \
                "it has no forward rule yet"
            raise ad_error(f"operator {o.name} is not differentiable: {why}", e,
                           "AD-Fwd-App-Op")
        from relay_ref.passes.rewrite import rewrite

        try:
            tan = opdef.tangent(call, tuple(ts), self.type_of)
        except GradientUnsupported as err:
            raise ad_error(str(err), e, "AD-Fwd-App-Op") from None
        tan = rewrite(tan, lambda n: v if n is call else None)
        dv = blk.push(tan, "dv")
        return blk.push(self.pair(out_type, v, dv), "dual")

    # -- AD-Fwd-Grad -------------------------------------------------------------------------
    def wrapper(self, target: GlobalVar | Function, ty: FuncType,
                where: Expr | None = None) -> Function:
        if ty.type_params:
            raise ad_error("cannot differentiate a polymorphic function", where, "AD-Fwd-Grad")
        for t in (*ty.arg_types, ty.ret_type):
            self._check(t, where)
        fn = target if isinstance(target, Function) else self.mod.functions[target.name]
        params = tuple(Var(p.name_hint, t) for p, t in zip(fn.params, ty.arg_types,
                                                           strict=True))
        blk = Block()
        # the body as a closure of the inputs' tangents
        tans = tuple(Var(f"d{p.name_hint}", t) for p, t in zip(params, ty.arg_types,
                                                               strict=True))
        inner = Block()
        duals = [inner.push(self.pair(t, p, d), "dual") for p, d, t in
                 zip(params, tans, ty.arg_types, strict=True)]
        if isinstance(target, Function):
            env: dict[Var, Expr] = {}
            for v in free_vars(target):
                t = self.type_of(v)
                if t is None:
                    raise ad_error(f"no type known for %{v.name_hint}", where, "AD-Fwd-Grad")
                env[v] = inner.push(self.lift(t, v, where), v.name_hint)
            env.update(zip(target.params, duals, strict=True))
            res = self.tr(target.body, env, Var("unused"), inner, {})
        else:
            res = inner.push(Call(GlobalVar(self.global_ad(target.name)), tuple(duals)), "r")
        body_fn = blk.push(Function(tans, inner.finish(res), self.types(ty.ret_type)), "jvp")
        zeros = [self._zeros(t, p) for p, t in zip(params, ty.arg_types, strict=True)]
        r0 = blk.push(Call(body_fn, tuple(zeros)), "r0")
        grads = []
        for i, (p, t) in enumerate(zip(params, ty.arg_types, strict=True)):
            leaves = []
            for path, leaf_ty in self._leaves(t):
                x = self._at(p, path)
                if not is_float(leaf_ty):
                    leaves.append(make_call("zeros_like", x))
                    continue

                def with_tangent(basis: Expr, i: int = i, path: tuple = path) -> list[Expr]:
                    return [self._replace(zeros[j], self._leaves_of(ty.arg_types[j]), path,
                                          basis) if j == i else zeros[j]
                            for j in range(len(params))]

                leaves.append(blk.push(self._loop(body_fn, leaf_ty, x, with_tangent,
                                                  ty.ret_type), "grad"))
            grads.append(self._rebuild(t, leaves))
        out = Tuple((self.primal(ty.ret_type, r0), Tuple(tuple(grads))))
        return Function(params, blk.finish(out), TupleType((ty.ret_type,
                                                            TupleType(ty.arg_types))),
                        span=getattr(where, "span", None))

    def _check(self, ty: Type, where: Expr | None) -> None:
        leaves = self._leaves(ty, where=where)
        for _, leaf in leaves:
            if not leaf.is_static:
                raise ad_error("forward mode needs inputs of static shapes", where,
                               "AD-Fwd-Grad")
        if not leaves and ty != TupleType(()):
            raise ad_error(f"forward mode differentiates tensors and tuples of tensors, not "
                           f"{type_text(ty)}; use mode='higher_order'", where, "AD-Fwd-Grad")

    def _leaves(self, ty: Type, path: tuple = (), where: Expr | None = None
                ) -> list[tuple[tuple, TensorType]]:
        match ty:
            case TensorType():
                return [(path, ty)]
            case TupleType(fields):
                return [x for i, f in enumerate(fields)
                        for x in self._leaves(f, (*path, i), where)]
        raise ad_error(f"forward mode differentiates tensors and tuples of tensors, not "
                       f"{type_text(ty)}; use mode='higher_order'", where, "AD-Fwd-Grad")

    def _leaves_of(self, ty: Type) -> Type:
        return ty

    @staticmethod
    def _at(e: Expr, path: tuple) -> Expr:
        for i in path:
            e = TupleGetItem(e, i)
        return e

    def _zeros(self, ty: Type, x: Expr) -> Expr:
        match ty:
            case TensorType():
                return make_call("zeros_like", x)
            case TupleType(fields):
                return Tuple(tuple(self._zeros(f, TupleGetItem(x, i))
                                   for i, f in enumerate(fields)))
        raise ad_error(f"no tangent of type {type_text(ty)}", x, "AD-Fwd-Grad")

    def _replace(self, zeros: Expr, ty: Type, path: tuple, leaf: Expr) -> Expr:
        if not path:
            return leaf
        assert isinstance(zeros, Tuple)
        fields = list(zeros.fields)
        fields[path[0]] = self._replace(fields[path[0]], ty, path[1:], leaf)
        return Tuple(tuple(fields))

    def _rebuild(self, ty: Type, leaves: list[Expr]) -> Expr:
        it = iter(leaves)

        def build(t: Type) -> Expr:
            if isinstance(t, TensorType):
                return next(it)
            assert isinstance(t, TupleType)
            return Tuple(tuple(build(f) for f in t.fields))

        return build(ty)

    def _loop(self, body_fn: Var, leaf: TensorType, x: Expr, with_tangent, out: Type) -> Expr:
        """``sum_k (sum of the result's tangents for tangent e_k) * e_k`` over the rows
        ``e_k`` of an identity matrix shaped like the input (one pass per element)."""
        n = int(np.prod(leaf.shape, dtype=np.int64))
        eye = Constant(np.eye(n, dtype=leaf.dtype).reshape((n, *leaf.shape)))
        k = Var("k", TensorType((), "int32"))
        acc = Var("acc", leaf)
        loop = Var("loop", FuncType((k.type_annotation, leaf), leaf))
        body = Block()
        basis = body.push(make_call("take", eye, k, axis=0), "e")
        r = body.push(Call(body_fn, tuple(with_tangent(basis))), "r")
        d = self._tangent_sum(out, r, leaf.dtype, body)
        step = Call(loop, (make_call("add", k, Constant(np.array(1, "int32"))),
                           make_call("add", acc, make_call("multiply", d, basis))))
        go = If(make_call("less", k, Constant(np.array(n, "int32"))), body.finish(step), acc)
        return Let(loop, Function((k, acc), go, leaf),
                   Call(loop, (Constant(np.array(0, "int32")), make_call("zeros_like", x))))

    def _tangent_sum(self, ty: Type, r: Expr, dtype: str, blk: Block) -> Expr:
        terms = [make_call("cast", make_call("sum", self._at(r, (*path, 1))), dtype=dtype)
                 for path, leaf in self._leaves(ty) if is_float(leaf)]
        if not terms:
            return Constant(np.array(0, dtype))
        total = terms[0]
        for t in terms[1:]:
            total = make_call("add", total, t)
        return blk.push(total, "d")
