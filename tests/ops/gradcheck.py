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


def _with(args: Sequence[object], i: int, j: int | None, value: np.ndarray) -> list:
    """``args`` with ``args[i]`` (its field ``j`` when it is a tuple) replaced."""
    out = list(args)
    if j is None:
        out[i] = value
    else:
        fields = list(args[i])
        fields[j] = value
        out[i] = tuple(fields)
    return out


def numeric_adjoints(f: Callable[..., object], args: Sequence[object], out_grad: object,
                     which: Sequence[int], eps: float = 1e-6) -> dict[int, object]:
    """d<out_grad, f(args)>/d args[i] by central differences, for each arg in ``which``
    (a tuple of adjoints for a tuple argument)."""
    out: dict[int, object] = {}
    for i in which:
        parts = []
        slots = [(j, a) for j, a in enumerate(args[i])] if isinstance(args[i], tuple) \
            else [(None, args[i])]
        for j, a in slots:
            x = np.asarray(a, np.float64)
            grad = np.zeros_like(x)
            for idx in np.ndindex(x.shape):
                vals = []
                for sign in (1.0, -1.0):
                    xp = x.copy()
                    xp[idx] += sign * eps
                    vals.append(_dot(out_grad, f(*_with(args, i, j, xp))))
                grad[idx] = (vals[0] - vals[1]) / (2 * eps)
            parts.append(grad)
        out[i] = tuple(parts) if isinstance(args[i], tuple) else parts[0]
    return out


def _axpy(a: object, eps: float, t: object) -> object:
    if isinstance(a, tuple):
        return tuple(_axpy(x, eps, y) for x, y in zip(a, t, strict=True))
    return np.asarray(a) + eps * np.asarray(t)


def numeric_tangent(f: Callable[..., object], args: Sequence[object],
                    tangents: Sequence[object], which: Sequence[int],
                    eps: float = 1e-6) -> object:
    """(f(x + eps t) - f(x - eps t)) / 2 eps, moving only the args in ``which``."""
    def moved(sign: float) -> list:
        return [_axpy(a, sign * eps, t) if i in which else a
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


def zeros_of(value: object) -> object:
    if isinstance(value, tuple):
        return tuple(zeros_of(v) for v in value)
    return np.zeros_like(np.asarray(value))


def assert_close(actual: object, expected: object, what: str, tol: float = 1e-6) -> None:
    if isinstance(expected, tuple | list):
        assert isinstance(actual, tuple) and len(actual) == len(expected), what
        for k, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_close(a, e, f"{what}[{k}]", tol)
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} vs {e.shape}"
    np.testing.assert_allclose(a, e, rtol=tol, atol=tol, err_msg=what)


# -- one op, both rules, both oracles ---------------------------------------------------

def check_op(name: str, args: Sequence[object], attrs: dict | None = None,
             jax_fn: Callable[..., object] | None = None,
             which: Sequence[int] | None = None, tol: float = 1e-6) -> None:
    """Check ``name``'s reverse and forward rules at ``args`` against central finite
    differences of its reference and against ``jax_fn`` (same arguments; its value is
    checked against the reference first). ``which``: the arguments being differentiated
    (default all); the others (integer indices...) must get a zero adjoint."""
    import jax

    attrs = attrs or {}
    which = list(range(len(args))) if which is None else list(which)

    def ref(*a: object) -> object:
        return run_reference(name, a, attrs)

    y = ref(*args)
    g = random_like(y)
    rev = reverse_values(name, args, attrs, g)
    fd = numeric_adjoints(ref, args, g, which)
    for i in range(len(args)):
        expected = fd[i] if i in which else zeros_of(args[i])
        assert_close(rev[i], expected, f"{name}: adjoint {i} vs finite differences", 1e-5)
    tangents = [random_like(a) if i in which else zeros_of(a) for i, a in enumerate(args)]
    fwd = forward_value(name, args, attrs, tangents)
    assert_close(fwd, numeric_tangent(ref, args, tangents, which),
                 f"{name}: tangent vs finite differences", 1e-5)
    if jax_fn is None:
        return

    def f_w(*w: object) -> object:
        full = list(args)
        for i, v in zip(which, w, strict=True):
            full[i] = v
        return jax_fn(*full)

    wargs = [args[i] for i in which]
    jy, vjp = jax.vjp(f_w, *wargs)
    assert_close(_np(jy), y, f"{name}: jax's value vs the reference", tol)
    jadj = vjp(_as_jax_tree(g))
    for i, ja in zip(which, jadj, strict=True):
        assert_close(rev[i], _np(ja), f"{name}: adjoint {i} vs jax.vjp", tol)
    _, jt = jax.jvp(f_w, tuple(wargs), tuple(tangents[i] for i in which))
    assert_close(fwd, _np(jt), f"{name}: tangent vs jax.jvp", tol)


def _np(value: object) -> object:
    if isinstance(value, tuple | list):
        return tuple(_np(v) for v in value)
    return np.asarray(value)


def _as_jax_tree(value: object) -> object:
    return tuple(value) if isinstance(value, tuple) else value
