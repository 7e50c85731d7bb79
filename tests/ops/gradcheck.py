"""Helpers for the differentiation-rule tests: run an op's reverse and forward rules on
concrete values (with the interpreter) and check them against central finite differences
of the op's NumPy reference and against jax.

``rule_values(name, args, attrs, out_grad=..., tangents=...)`` builds
``fn(%x0.., %g) { call }``, type-checks it so ``type_of`` answers for the call, its
arguments and ``%g`` (the AD pass's contract), asks the rule for its expressions over those
variables, and evaluates ``fn(%x0.., %g) { (rule outputs) }``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import relay_ref as rr
from relay_ref.ir.expr import Call, Function, Op, Tuple, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.registry import get_op, make_attrs

RNG = np.random.default_rng(20240616)


def type_of_value(value: object) -> Type:
    if isinstance(value, tuple):
        return TupleType(tuple(type_of_value(v) for v in value))
    arr = np.asarray(value)
    return TensorType(tuple(int(d) for d in arr.shape), arr.dtype.name)


def _typed_call(name: str, args: Sequence[object], attrs: dict) -> tuple:
    params = [Var(f"x{i}", type_of_value(a)) for i, a in enumerate(args)]
    call = Call(Op(name), tuple(params), make_attrs(name, attrs))
    mod = rr.infer_types(IRModule({"main": Function(tuple(params), call)}))
    return params, call, mod


def run_reference(name: str, args: Sequence[object], attrs: dict) -> object:
    op = get_op(name)
    return op.reference(list(args), make_attrs(name, attrs))


def reverse_values(name: str, args: Sequence[object], attrs: dict,
                   out_grad: object) -> tuple:
    """The reverse rule's adjoints, evaluated."""
    params, call, mod = _typed_call(name, args, attrs)
    out_ty = mod.type_of(call)
    g = Var("g", out_ty)

    def type_of(e: object) -> Type:
        return out_ty if e is g else mod.type_of(e)

    adjoints = get_op(name).gradient(call, g, type_of)
    assert isinstance(adjoints, tuple) and len(adjoints) == len(args), name
    fn = Function((*params, g), Tuple(tuple(adjoints)))
    return rr.evaluate(fn, *args, out_grad)


def forward_value(name: str, args: Sequence[object], attrs: dict,
                  tangents: Sequence[object]) -> object:
    """The forward rule's tangent, evaluated."""
    params, call, mod = _typed_call(name, args, attrs)
    ts = [Var(f"t{i}", p.type_annotation) for i, p in enumerate(params)]
    tys = {t: p.type_annotation for t, p in zip(ts, params, strict=True)}

    def type_of(e: object) -> Type:
        return tys[e] if e in tys else mod.type_of(e)

    tangent = get_op(name).tangent(call, tuple(ts), type_of)
    fn = Function((*params, *ts), tangent)
    return rr.evaluate(fn, *args, *tangents)


# -- finite differences ---------------------------------------------------------------------

def _flat(value: object) -> list[np.ndarray]:
    return list(value) if isinstance(value, tuple) else [value]


def _dot(a: object, b: object) -> float:
    return float(sum(np.vdot(np.asarray(x, np.float64), np.asarray(y, np.float64))
                     for x, y in zip(_flat(a), _flat(b), strict=True)))


def numeric_adjoints(f: Callable[..., object], args: Sequence[object], out_grad: object,
                     which: Sequence[int], eps: float = 1e-6) -> dict[int, np.ndarray]:
    """d<out_grad, f(args)>/d args[i] by central differences, for each float arg in
    ``which``."""
    out = {}
    for i in which:
        x = np.asarray(args[i], np.float64)
        grad = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            vals = []
            for sign in (1.0, -1.0):
                xp = x.copy()
                xp[idx] += sign * eps
                vals.append(_dot(out_grad, f(*args[:i], xp, *args[i + 1:])))
            grad[idx] = (vals[0] - vals[1]) / (2 * eps)
        out[i] = grad
    return out


def numeric_tangent(f: Callable[..., object], args: Sequence[object],
                    tangents: Sequence[object], which: Sequence[int],
                    eps: float = 1e-6) -> object:
    """(f(x + eps t) - f(x - eps t)) / 2 eps, moving only the args in ``which``."""
    def moved(sign: float) -> list:
        return [np.asarray(a) + sign * eps * np.asarray(t) if i in which else a
                for i, (a, t) in enumerate(zip(args, tangents, strict=True))]
    hi, lo = f(*moved(1.0)), f(*moved(-1.0))
    if isinstance(hi, tuple):
        return tuple((h - lw) / (2 * eps) for h, lw in zip(hi, lo, strict=True))
    return (hi - lo) / (2 * eps)


def random_like(value: object) -> object:
    if isinstance(value, tuple):
        return tuple(random_like(v) for v in value)
    arr = np.asarray(value)
    return RNG.standard_normal(arr.shape).astype(arr.dtype)
