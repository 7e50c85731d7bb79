"""Regions for external compilers (spec/byoc.md BYOC-Extern, BYOC-Fallback): what
``rr.compile`` does with a module's ``Compiler=<backend>`` global functions before its
pass pipeline.

``prepare_externs(mod, externs)`` (``mod`` type-checked, weights already bound), with
``externs`` mapping a backend name to its codegen (``codegen(func, types) -> callable``)
or None (run on the host; a backend it does not name is unknown, run on the host too):

1. *Specialise*: a region called exactly once (one call node; never used as a value) with
   ``Constant`` arguments gets those constants bound in place of its parameters, and the
   call drops them (a backend then sees its weights as constants, as TVM binds them).
2. *Build*: each region's codegen is called once, here, at compile time, on the
   type-checked function and the module's checked types; the callable it returns is what
   the generated code calls at run time (``Extern``). The contract of that callable: it
   receives read-only views of its arguments (NumPy arrays, tuples for tuple parameters;
   cheap, no copies) and must not write into its inputs (an attempt is a located
   ``RelayRuntimeError`` naming the backend and the region, never a corrupted value or a
   changed caller array); it returns an array-like, or a tuple/list of them for a tuple
   type, of the region's static type.
3. *Fallback*: a region whose backend is unknown or has no codegen, or whose codegen raises
   ``CodegenUnsupported`` or a non-Relay exception (a codegen bug: never a traceback, never
   a wrong value), becomes
   an ordinary host global: its ``Compiler``, ``Primitive``, ``Inline`` and
   ``global_symbol`` attributes dropped and its composite calls inlined; ``RegionSummary``
   notes why. Any other ``RelayError`` from a codegen is the backend telling the user
   something to fix (``xla`` without jax installed) and is raised as it is.
4. Composite calls anywhere else (MergeComposite's output compiled without partitioning)
   are inlined: on the host a composite is only its body.

The layer rule: the executor never imports ``relay_ref.byoc``; codegens arrive as plain
callables from the public API.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from relay_ref.diagnostics import RelayError
from relay_ref.interpreter.driver import checked_module
from relay_ref.interpreter.stuck import Stuck
from relay_ref.ir.expr import Call, Constant, Expr, Function, GlobalVar, Op, Var, children
from relay_ref.ir.module import IRModule
from relay_ref.ir.span import Span
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ir.visitor import post_order
from relay_ref.ops.registry import has_op
from relay_ref.passes.compiler_support import call_flops
from relay_ref.passes.rewrite import rewrite

__all__ = ["CodegenUnsupported", "Extern", "RegionSummary", "extern_backends", "prepare_externs"]

#: attributes that make a global a region (dropped when it falls back to the host)
REGION_ATTRS = frozenset({"Compiler", "Primitive", "Inline", "global_symbol"})



class CodegenUnsupported(RelayError, ValueError):
    """A backend's codegen refuses a region (BYOC-Fallback: it runs on the host)."""


@dataclass(frozen=True, slots=True)
class RegionSummary:
    """One region in ``exe.plan``: its global's name, the backend that runs it (``"host"``
    after a fallback), its operator calls, their estimated operations (the ops' ``cost``
    aspect) and a note (why it runs on the host)."""

    name: str
    backend: str
    ops: int
    flops: int
    note: str = ""


@dataclass(frozen=True, slots=True)
class Extern:
    """A built region: its global's name, backend and the callable its codegen returned."""

    name: str
    backend: str
    fn: Callable[..., Any]

    def site_fn(self, span: Span | None, ty: Type | None = None) -> Callable[..., Any]:
        """The step the generated code runs: the callable on the arguments, its result as
        NumPy (a tuple for a tuple), checked against the call's static type ``ty`` (shapes
        and dtypes, when static); anything it raises, or a result of another type, becomes
        a stuck state naming the backend and the region, located by the caller's line
        (``relay_ref.executor.errors``)."""
        fn, backend, name = self.fn, self.backend, self.name
        want = _static(ty)

        def run(*args: Any) -> Any:
            try:
                result = fn(*(_read_only(a) for a in args))
                value = _plain(result)
            except Exception as err:  # noqa: BLE001 - a backend's failure, located
                if isinstance(err, ValueError) and "read-only" in str(err):
                    raise Stuck(f"backend {backend!r} wrote into an input of region @{name}"
                                f" (a region's callable must not write into its inputs: "
                                f"{err})", span) from err
                raise Stuck(f"backend {backend!r} failed running region @{name}: "
                            f"{type(err).__name__}: {err}", span) from err
            if want is not None and _layout(value) != want:
                raise Stuck(f"backend {backend!r} returned {_brief(result, value)} from "
                            f"region @{name}, whose type is {want}", span)
            return value

        return run


def _read_only(value: Any) -> Any:
    """A read-only view of an argument (tuples field by field): a codegen writing into its
    inputs fails instead of corrupting host values or the caller's arrays (BYOC-Extern)."""
    if isinstance(value, np.ndarray):
        view = value.view()
        view.flags.writeable = False
        return view
    if isinstance(value, tuple):
        return tuple(_read_only(v) for v in value)
    return value


def _brief(result: Any, value: Any) -> str:
    """What a callable returned, briefly: an array's (shape, dtype), a tuple field by field,
    anything else by its Python type (and a sequence's length); never a whole nested
    list of scalars."""
    if isinstance(result, tuple | list):
        if len(result) > 8 or not all(isinstance(r, tuple) or hasattr(r, "shape")
                                      for r in result):
            return f"a {type(result).__name__} of length {len(result)}"
        return "(" + ", ".join(_brief(r, v) for r, v in zip(result, value, strict=True)) \
            + ("," if len(result) == 1 else "") + ")"
    if isinstance(value, np.ndarray) and value.dtype != object:
        return str(_layout(value))
    return f"a {type(result).__name__}"


def _static(ty: Type | None) -> Any:
    """``ty`` as (shape, dtype) / tuples of them, or None when not all static."""
    if type(ty) is TensorType:
        return (tuple(ty.shape), ty.dtype) if all(type(d) is int for d in ty.shape) else None
    if type(ty) is TupleType:
        fields = tuple(_static(f) for f in ty.fields)
        return None if any(f is None for f in fields) else fields
    return None


def _layout(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_layout(v) for v in value)
    return (tuple(value.shape), value.dtype.name)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return tuple(_plain(v) for v in value)
    return np.asarray(value)


def extern_backends(mod: IRModule) -> dict[str, Function]:
    """The first global of each backend named by a ``Compiler`` attribute (for errors)."""
    out: dict[str, Function] = {}
    for func in mod.functions.values():
        backend = func.attr("Compiler")
        if isinstance(backend, str):
            out.setdefault(backend, func)
    return out


def prepare_externs(mod: IRModule, externs: Mapping[str, Any] | None
                    ) -> tuple[IRModule, dict[str, Extern], tuple[RegionSummary, ...]]:
    """``(module, built regions by global name, summaries)``; see the module docstring.
    ``mod`` is returned as it is when it has no region and no composite."""
    regions = [n for n, f in mod.functions.items() if f.attr("Compiler") is not None]
    if not regions and not _has_composite(mod):
        return mod, {}, ()
    if regions:
        mod = checked_module(_specialise(mod, set(regions)))
    types = mod.checked_types
    built: dict[str, Extern] = {}
    summaries: list[RegionSummary] = []
    functions = dict(mod.functions)
    for name in regions:
        func = mod.functions[name]
        backend = str(func.attr("Compiler"))
        ops, flops = _cost(func, types)
        codegen = (externs or {}).get(backend)
        note = ""
        if backend not in (externs or {}):
            note = f"backend {backend!r} is not registered: runs on the host"
        elif codegen is None:
            note = f"backend {backend!r} has no codegen: runs on the host"
        else:
            try:
                fn = codegen(func, types)
                if not callable(fn):
                    raise TypeError(f"the codegen returned {type(fn).__name__}, not a "
                                    "callable")
            except RelayError as err:
                if not isinstance(err, CodegenUnsupported):
                    raise  # the backend's own diagnosis (a missing package): the user's to fix
                note = (f"region @{name} falls back to the host: backend {backend!r} "
                        f"refused it ({err.message})")
            except Exception as err:  # noqa: BLE001 - BYOC-Fallback: the host runs it
                note = (f"region @{name} falls back to the host: backend {backend!r} "
                        f"failed on it ({type(err).__name__}: {err})")
            else:
                built[name] = Extern(name, backend, fn)
        if note:
            functions[name] = _host_function(func)
        summaries.append(RegionSummary(name, backend if not note else "host", ops, flops,
                                       note))
    functions = {n: f if n in built else _inline_composites(f) for n, f in functions.items()}
    if all(functions[n] is f for n, f in mod.functions.items()):
        return mod, built, tuple(summaries)
    return replace(mod, functions=functions, checked_types={}, global_types={}), built, \
        tuple(summaries)


def _has_composite(mod: IRModule) -> bool:
    return any(type(node) is Function and node.attr("Composite") is not None
               for f in mod.functions.values() for node in post_order(f.body))


def _specialise(mod: IRModule, regions: set[str]) -> IRModule:
    """Bind the ``Constant`` arguments of each region called exactly once (step 1)."""
    calls: dict[str, list[Call]] = {}
    escapes: set[str] = set()  # regions used otherwise than as a callee
    for func in mod.functions.values():
        for node in post_order(func):
            if type(node) is Call and type(node.op) is GlobalVar and node.op.name in regions:
                calls.setdefault(node.op.name, []).append(node)
            for kid in children(node):
                if type(kid) is GlobalVar and kid.name in regions and not (
                        type(node) is Call and node.op is kid
                        and not any(a is kid for a in node.args)):
                    escapes.add(kid.name)
    bound: dict[str, tuple[bool, ...]] = {}
    functions = dict(mod.functions)
    for name, sites in calls.items():
        func = mod.functions[name]
        call = sites[0]
        consts = tuple(type(a) is Constant for a in call.args)
        if len(sites) != 1 or name in escapes or not any(consts) or \
                len(call.args) != len(func.params):
            continue
        mapping = {p: a for p, a, c in zip(func.params, call.args, consts, strict=True) if c}
        body = _substitute(func.body, mapping)
        params = tuple(p for p, c in zip(func.params, consts, strict=True) if not c)
        functions[name] = replace(func, params=params, body=body)
        bound[name] = consts
    if not bound:
        return mod

    def drop(e: Expr) -> Expr | None:
        if type(e) is Call and type(e.op) is GlobalVar and e.op.name in bound:
            keep = bound[e.op.name]
            return replace(e, args=tuple(a for a, c in zip(e.args, keep, strict=True)
                                         if not c))
        return None

    functions = {n: f if n in bound else replace(f, body=rewrite(f.body, drop))
                 for n, f in functions.items()}
    return replace(mod, functions=functions, checked_types={}, global_types={})


def _substitute(body: Expr, mapping: Mapping[Var, Expr]) -> Expr:
    """``body`` with the variables of ``mapping`` replaced (sharing kept)."""
    return rewrite(body, lambda e: mapping.get(e) if type(e) is Var else None)


def _host_function(func: Function) -> Function:
    """A region as an ordinary host global (step 3)."""
    attrs = tuple((k, v) for k, v in func.attrs if k not in REGION_ATTRS)
    return _inline_composites(replace(func, attrs=attrs))


def _inline_composites(func: Function) -> Function:
    """``func`` with each call of a ``Composite`` function literal replaced by its body
    on the call's arguments (step 4); ``func`` itself when it has none."""
    def rule(e: Expr) -> Expr | None:
        if type(e) is Call and type(e.op) is Function and e.op.attr("Composite") is not None:
            inner = e.op
            return _substitute(inner.body, dict(zip(inner.params, e.args, strict=True)))
        return None

    body = rewrite(func.body, rule)
    return func if body is func.body else replace(func, body=body)


def _cost(func: Function, types: Mapping[Expr, Type]) -> tuple[int, int]:
    """Operator calls in ``func`` (composites' inner calls included) and their estimated
    operations (``call_flops``, the cost model's count)."""
    ops = flops = 0
    for node in post_order(func.body):
        if type(node) is not Call or type(node.op) is not Op or not has_op(node.op.name):
            continue
        ops += 1
        flops += call_flops(node, types)
    return ops, flops
