"""The ``xla`` backend (spec/byoc.md BYOC-Support, BYOC-Extern, BYOC-Fallback): a
partitioned region becomes one jax function over ``jax.numpy`` / ``jax.lax``, compiled by
XLA once, when ``rr.compile`` builds the program.

``xla_codegen(func, types) -> callable`` follows the codegen contract
(``relay_ref.byoc.backend``): ``func`` is a type-checked function (static tensor
parameters; a dataflow body of operator calls, composite calls, tuples, projections,
constants), ``types`` its checked types. It

1. walks the body once (``post_order``; iterative, each shared node once), checking every
   operator call against ``JAX_OPS`` (``relay_ref.byoc.xla_ops``) and collecting the
   constants; composite calls (a ``fn`` literal with ``Composite``) are walked the same way
   and inlined. Anything else is ``CodegenUnsupported`` (the region then runs on the host:
   BYOC-Fallback), as is a 64-bit or other dtype jax would change (``JAX_DTYPES``);
2. traces the body into one jax function of (constants, parameters) and compiles it ahead
   of time (``jax.jit(f).lower(shapes).compile()``), so that XLA's compile time falls in
   ``rr.compile``, not in the first run. Large constants (weights) are arguments, placed
   on the device once, so they stay out of the XLA program; small ones (at most
   ``_LITERAL_SIZE`` elements: scalars, shapes) are its literals;
3. returns an ``XlaRegion``: called with one array per parameter (dtype and shape checked:
   a mismatch is a ``RelayRuntimeError``), it returns NumPy arrays (writable copies), a
   tuple for a tuple-typed body.

jax is optional (``pip install 'relay-ref[xla]'``): this module and the op table import it
only inside the codegen; without it the backend still registers (the passes can partition
for it) and the codegen raises a ``RelayError`` saying what to install: a missing
dependency is a setup error to report, not a region to run elsewhere silently.

jax's global 64-bit switch (``jax_enable_x64``) is left alone; the regions compile the same
either way, since only 32-bit and smaller dtypes are taken and the results are cast to the
checked dtype.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from relay_ref.byoc.errors import CodegenUnsupported
from relay_ref.byoc.xla_ops import JAX_DTYPES, JAX_OPS, tensor_types
from relay_ref.diagnostics import RelayError, RelayRuntimeError
from relay_ref.ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ir.visitor import dataflow_operands, post_order
from relay_ref.passes.compiler_support import CallInfo

__all__ = ["NEEDS_JAX", "XlaRegion", "xla_codegen"]

#: the error without jax
NEEDS_JAX = "backend 'xla' needs jax (pip install 'relay-ref[xla]')"


#: constants of at most this many elements are literals of the XLA program; larger ones
#: (weights) are arguments
_LITERAL_SIZE = 64


def _require_jax() -> Any:
    """The ``jax`` module, or the ``RelayError`` saying how to install it."""
    try:
        return importlib.import_module("jax")
    except ImportError:
        raise RelayError(NEEDS_JAX) from None


@dataclass(frozen=True, slots=True)
class _Body:
    """A checked body: its nodes in dependency order, the ``CallInfo`` of each operator
    call and the walked body of each composite call (by node id)."""

    root: Expr
    order: tuple[Expr, ...]
    calls: Mapping[int, CallInfo]
    composites: Mapping[int, _Body]


class _Checker:
    """Step 1: walk a region, check it, collect its constants (first-use order)."""

    def __init__(self, types: Mapping[Expr, Type]) -> None:
        self.types = types
        self.constants: dict[int, tuple[int, Constant]] = {}

    def type_of(self, expr: Expr) -> Type | None:
        ty = self.types.get(expr)
        if ty is None and isinstance(expr, Var):
            ty = expr.type_annotation
        return ty

    def body(self, root: Expr, params: tuple[Var, ...]) -> _Body:
        bound = {id(p) for p in params}
        order: list[Expr] = []
        calls: dict[int, CallInfo] = {}
        composites: dict[int, _Body] = {}
        for node in post_order(root, enter=dataflow_operands):
            kind = type(node)
            if kind is Var:
                if id(node) not in bound:
                    raise CodegenUnsupported(f"xla: the region uses %{node.name_hint}, which "
                                             "is not one of its parameters", node.span)
            elif kind is Constant:
                self.dtypes(node, "a constant")
                self.constants.setdefault(id(node), (len(self.constants), node))
            elif kind is Call and type(node.op) is Op:
                calls[id(node)] = self.call(node)
            elif kind is Call and type(node.op) is Function and node.op.attr("Composite"):
                fn = node.op
                if len(fn.params) != len(node.args):
                    raise CodegenUnsupported("xla: a composite call with the wrong number "
                                             "of arguments", node.span)
                composites[id(node)] = self.body(fn.body, fn.params)
            elif kind not in (Tuple, TupleGetItem):
                what = f"call of a {type(node.op).__name__}" if kind is Call else kind.__name__
                raise CodegenUnsupported(f"xla: a region holds only operator calls, "
                                         f"composites, tuples, projections and constants, "
                                         f"not a {what}", node.span)
            order.append(node)
        return _Body(root, tuple(order), calls, composites)

    def call(self, node: Call) -> CallInfo:
        name = node.op.name  # type: ignore[union-attr]
        info = CallInfo.of(node, self.type_of)
        entry = JAX_OPS.get(name)
        if entry is None:
            raise CodegenUnsupported(f"xla: no jax implementation of {name!r}", node.span)
        if not entry.supports(info):
            raise CodegenUnsupported(f"xla: {name!r} is not supported with these argument "
                                     f"types or attributes (static shapes of "
                                     f"{', '.join(sorted(entry.dtypes & JAX_DTYPES))})",
                                     node.span)
        return info

    def dtypes(self, expr: Expr, what: str) -> list[TensorType]:
        tensors = tensor_types(self.type_of(expr))
        if tensors is None:
            raise CodegenUnsupported(f"xla: {what} is not a tensor or a tuple of tensors",
                                     expr.span)
        for t in tensors:
            if t.dtype not in JAX_DTYPES:
                raise CodegenUnsupported(f"xla: {what} has dtype {t.dtype}, which jax "
                                         "changes without jax_enable_x64 (jax takes "
                                         f"{', '.join(sorted(JAX_DTYPES))})", expr.span)
            if not all(type(d) is int for d in t.shape):
                raise CodegenUnsupported(f"xla: {what} has a dynamic shape", expr.span)
        return tensors


def _run(body: _Body, env: dict[int, Any], consts: Mapping[int, Any]) -> Any:
    """Step 2's tracer: the value of ``body.root``, ``env`` holding its parameters' values
    and ``consts`` every constant's (by node id). A composite call runs its body in a
    fresh ``env`` (one ``fn`` literal may be called twice)."""
    for node in body.order:
        kind = type(node)
        if kind is Call:
            args = [env[id(a)] for a in node.args]
            sub = body.composites.get(id(node))
            if sub is None:
                info = body.calls[id(node)]
                env[id(node)] = JAX_OPS[info.op].impl(info, *args)
            else:
                params = node.op.params  # type: ignore[union-attr]
                inner = {id(p): v for p, v in zip(params, args, strict=True)}
                env[id(node)] = _run(sub, inner, consts)
        elif kind is Constant:
            env[id(node)] = consts[id(node)]
        elif kind is Tuple:
            env[id(node)] = tuple(env[id(f)] for f in node.fields)
        elif kind is TupleGetItem:
            env[id(node)] = env[id(node.tuple_value)][node.index]
    return env[id(body.root)]


@dataclass(frozen=True, slots=True)
class XlaRegion:
    """A compiled region: ``region(*arrays)`` runs it (see the module docstring)."""

    compiled: Any
    constants: tuple[Any, ...]
    params: tuple[TensorType, ...]
    ret_type: Type
    name: str = ""

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.params):
            raise RelayRuntimeError(f"xla region {self.name}: expected {len(self.params)} "
                                    f"arguments, got {len(args)}")
        arrays = []
        for i, (arg, ty) in enumerate(zip(args, self.params, strict=True)):
            arr = np.asarray(arg)
            if arr.dtype != np.dtype(ty.dtype) or arr.shape != tuple(ty.shape):
                raise RelayRuntimeError(f"xla region {self.name}: argument {i} should be "
                                        f"{tuple(ty.shape)} {ty.dtype}, got {arr.shape} "
                                        f"{arr.dtype}")
            arrays.append(arr)
        return _to_numpy(self.compiled(self.constants, *arrays), self.ret_type)


def _to_numpy(value: Any, ty: Type) -> Any:
    """A jax result as writable NumPy arrays of the checked dtype (tuples stay tuples)."""
    if isinstance(ty, TupleType):
        return tuple(_to_numpy(v, t) for v, t in zip(value, ty.fields, strict=True))
    return np.array(value, dtype=ty.dtype)  # type: ignore[union-attr]


def _spec(jax: Any, ty: TensorType) -> Any:
    return jax.ShapeDtypeStruct(tuple(ty.shape), np.dtype(ty.dtype))


def xla_codegen(func: Function, types: Mapping[Expr, Type]) -> Callable[..., Any]:
    """Compile the region ``func`` with jax/XLA (see the module docstring): a callable over
    NumPy arrays. ``CodegenUnsupported`` for what jax cannot take; ``RelayError`` without
    jax."""
    jax = _require_jax()
    checker = _Checker(types)
    params = tuple(checker.dtypes(p, f"parameter %{p.name_hint}") for p in func.params)
    if any(len(t) != 1 or not isinstance(checker.type_of(p), TensorType)
           for t, p in zip(params, func.params, strict=True)):
        raise CodegenUnsupported("xla: every parameter of a region must be a tensor",
                                 func.span)
    checker.dtypes(func.body, "the region's result")
    body = checker.body(func.body, func.params)
    ret_type = checker.type_of(func.body)
    ordered = [c for _, c in sorted(checker.constants.values(), key=lambda e: e[0])]
    literals = {id(c): c.data for c in ordered if c.data.size <= _LITERAL_SIZE}
    constants = [c for c in ordered if id(c) not in literals]
    name = str(func.attr("global_symbol", "") or "")

    def traced(consts: tuple[Any, ...], *args: Any) -> Any:
        env: dict[int, Any] = {id(p): a for p, a in zip(func.params, args, strict=True)}
        values = dict(literals)
        values.update((id(c), v) for c, v in zip(constants, consts, strict=True))
        return _run(body, env, values)

    param_types = tuple(t[0] for t in params)
    const_specs = tuple(jax.ShapeDtypeStruct(c.data.shape, c.data.dtype) for c in constants)
    try:
        compiled = jax.jit(traced).lower(const_specs,
                                         *(_spec(jax, t) for t in param_types)).compile()
    except RelayError:
        raise
    except Exception as err:  # noqa: BLE001 - jax/XLA refusing the region: host fallback
        raise CodegenUnsupported(f"xla: jax could not compile the region "
                                 f"({type(err).__name__}: {err})", func.span) from err
    device = tuple(jax.device_put(np.asarray(c.data)) for c in constants)
    return XlaRegion(compiled, device, param_types, ret_type, name)  # type: ignore[arg-type]


def register(replace: bool = False) -> Any:
    """Register the backend (BYOC-Support): every ``JAX_OPS`` operator with its
    predicate, no composites (XLA fuses by itself), this codegen."""
    from relay_ref.byoc.backend import register_backend

    return register_backend("xla", supported_ops={name: op.supports
                                                  for name, op in JAX_OPS.items()},
                            codegen=xla_codegen, replace=replace)


register()
