"""Relay -> ONNX: ``to_onnx(mod_or_func, params=None, *, entry="main", opset=None,
types=None) -> onnx.ModelProto`` (the exporter the ``ort`` BYOC backend and ``relay
export`` use; spec/byoc.md BYOC-Extern).

A *dataflow* function becomes one ONNX graph:

* its parameters become graph inputs, except those ``params`` gives (by name), which become
  initializers, checked as ``BindParams`` checks them (a key naming no parameter, a value
  not of the parameter's tensor type: a located ``ExportError``); ``Constant`` nodes
  become initializers;
* each operator call becomes ONNX nodes through ``EXPORTERS`` (``export_ops.py``): one
  frozen ``Exporter`` per operator, whose ``supports(CallInfo)`` says which attributes and
  types the ONNX operator can express and whose ``emit`` writes the nodes;
* a call of an inline ``Function`` with a ``Composite`` attribute (MergeComposite's
  output) is inlined, and so is a call of a module's ``Compiler=<backend>`` global (a
  partitioned program's region: ``relay partition`` then ``relay export`` gives one ONNX
  graph of the whole program); ``let``-bound dataflow is followed; tuples and projections are
  resolved statically (a tuple-valued result becomes several graph outputs).

Anything else (``if``, ``match``, closures, references, calls of other globals, an operator with
no exporter or attributes its exporter refuses) is an ``ExportError`` (a ``RelayError``)
located at the offending node. Shapes must be static: the types come from ``types`` (a
checked-type map covering every node, composite bodies included) or from
``rr.infer_types``. The walk is iterative and memoised by node identity (a shared node
is exported once; a 2 000-op chain is fine). ``onnx`` is imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from relay_ref.frontend.onnx.export_graph import (
    DEFAULT_OPSET,
    Exporter,
    ExportError,
    OnnxGraph,
    Value,
    onnx_dtype,
)
from relay_ref.ir.call_info import CallInfo
from relay_ref.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ir.visitor import post_order

__all__ = ["DEFAULT_OPSET", "ExportError", "Exporter", "OnnxGraph", "exportable", "to_onnx"]

def exportable(info: CallInfo) -> bool:
    """Whether the call ``info`` describes has an ONNX exporter that takes it (the ``ort``
    backend's support predicate)."""
    from relay_ref.frontend.onnx.export_ops import EXPORTERS

    ex = EXPORTERS.get(info.op)
    return ex is not None and _static(info) and (ex.supports is None or ex.supports(info))


def _static(info: CallInfo) -> bool:
    return all(_static_type(t) for t in (*info.arg_types, info.type))


def _static_type(t: Type | None) -> bool:
    if isinstance(t, TensorType):
        return t.is_static
    if isinstance(t, TupleType):
        return all(_static_type(f) for f in t.fields)
    return False


def to_onnx(mod_or_func: IRModule | Function, params: Mapping[str, Any] | None = None, *,
            entry: str = "main", opset: int | None = None,
            types: Mapping[Expr, Type] | None = None, check: bool = True) -> Any:
    """The ONNX model of ``mod_or_func`` (its ``entry`` function for a module); see the
    module docstring. ``onnx.checker.check_model`` accepts the result (checked here unless
    ``check`` is false: a caller that serialises the model anyway checks the bytes, once)."""
    import onnx
    from onnx import helper

    if opset is None:
        opset = DEFAULT_OPSET
    elif isinstance(opset, bool) or not isinstance(opset, int | np.integer):
        raise TypeError(f"to_onnx: opset must be an integer from 13 to 21 or None, not "
                        f"{type(opset).__name__}")
    opset = int(opset)
    if not 13 <= opset <= 21:
        raise ExportError(f"to_onnx: opset {opset} is not supported (13 to 21)")
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"to_onnx: params must be a dict of parameter name to array, not "
                        f"{type(params).__name__}")
    func, types, regions = _entry(mod_or_func, entry, types)
    params = _check_params(func, types, dict(params or {}), entry.removeprefix("@"))
    graph = OnnxGraph(opset)
    env: dict[Expr, Value] = {}
    inputs = []
    used = graph.used
    for p in func.params:
        name = _unique(p.name_hint or "input", used)
        t = types.get(p, p.type_annotation)
        if p.name_hint in params:
            env[p] = graph.const(params[p.name_hint], name=name)
            continue
        inputs.append(_value_info(name, t, p))
        env[p] = name
    result = _export_body(graph, func.body, env, types, regions)
    outputs = []
    for i, (name, t) in enumerate(_flatten(result, types.get(func.body))):
        out = _unique(f"output_{i}" if i else "output", used)
        graph.nodes.append(helper.make_node("Identity", [name], [out]))
        outputs.append(_value_info(out, t, func.body))
    g = helper.make_graph(graph.nodes, "relay_ref", inputs, outputs, graph.initializers)
    model = helper.make_model(g, producer_name="relay_ref",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 8 if opset <= 17 else 9)
    if not check:
        return model
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as err:  # an exporter bug: still no traceback
        raise ExportError(f"to_onnx: the exported model does not validate: {err}",
                          func.span) from None
    return model


def _check_params(func: Function, types: Mapping[Expr, Type], params: dict[Any, Any],
                  entry: str) -> dict[str, np.ndarray]:
    """``params`` as arrays of their parameters' types, checked as ``BindParams`` checks
    them, by the argument rule (``relay_ref.interpreter.args.convert_argument``, spec A-*;
    its messages): a key that names no parameter, a non-tensor parameter, or a value that
    does not fit its parameter is an ``ExportError`` located at the function or the
    parameter."""
    from relay_ref.interpreter.args import ArgumentError, convert_argument

    by_name = {p.name_hint: p for p in func.params}
    for key in params:
        if not isinstance(key, str) or key not in by_name:
            raise ExportError(f"params names no parameter of @{entry}: {key!r} (its "
                              f"parameters: {', '.join('%' + n for n in by_name) or 'none'})",
                              func.span)
    out = {}
    for key, value in params.items():
        var = by_name[key]
        t = types.get(var, var.type_annotation)
        if not isinstance(t, TensorType):
            raise ExportError(f"params[{key!r}]: only tensor parameters can be bound",
                              var.span)
        try:
            array = convert_argument(value, t)
        except ArgumentError as err:
            raise ExportError(f"params[{key!r}] does not fit %{key}: {err.message}",
                              var.span) from None
        out[key] = np.array(array, copy=True)  # the caller may reuse its buffer
    return out


def _entry(mod_or_func: Any, entry: str, types: Mapping[Expr, Type] | None
           ) -> tuple[Function, Mapping[Expr, Type], Mapping[str, Function]]:
    """The function to export, its checked types and the module's ``Compiler=`` globals
    (inlined where they are called)."""
    from relay_ref.typecheck.infer import infer_types

    if isinstance(mod_or_func, IRModule):
        if entry not in mod_or_func.functions:
            raise ExportError(f"to_onnx: the module has no function @{entry}")
        func = mod_or_func.functions[entry]
        if types is None:
            types = (mod_or_func.checked_types if func.body in mod_or_func.checked_types
                     else infer_types(mod_or_func).checked_types)
        regions = {name: f for name, f in mod_or_func.functions.items()
                   if f.attr("Compiler", None) is not None}
        return func, types, regions
    if isinstance(mod_or_func, Function):
        if types is None:
            types = infer_types(IRModule({"main": mod_or_func})).checked_types
        return mod_or_func, types, {}
    raise ExportError(f"to_onnx: expected an IRModule or a Function, got "
                      f"{type(mod_or_func).__name__}")


def _unique(name: str, used: set[str]) -> str:
    base, k = name, 1
    while name in used:
        name, k = f"{base}_{k}", k + 1
    used.add(name)
    return name


def _value_info(name: str, t: Type | None, node: Expr) -> Any:
    from onnx import helper

    if not isinstance(t, TensorType) or not t.is_static:
        raise ExportError(f"to_onnx: {name} needs a static tensor type, found "
                          f"{type_to_text(t) if t is not None else 'no type'}", node.span)
    return helper.make_tensor_value_info(name, onnx_dtype(t.dtype, node),
                                         [int(d) for d in t.shape])


def _flatten(value: Value, t: Type | None) -> list[tuple[str, Type | None]]:
    if isinstance(value, tuple):
        fields = t.fields if isinstance(t, TupleType) else (None,) * len(value)
        out: list[tuple[str, Type | None]] = []
        for v, ft in zip(value, fields, strict=True):
            out.extend(_flatten(v, ft))
        return out
    return [(value, t)]


def _enter(lets: dict[Expr, Expr]) -> Callable[[Expr], tuple[Expr, ...]]:
    """Children the export walk visits: a call's arguments (not its callee: an operator,
    or a composite function exported when its call is), a let's value then body (the
    binding noted in ``lets``: the value is exported before the body reads the var)."""
    def enter(node: Expr) -> tuple[Expr, ...]:
        kind = type(node)
        if kind is Call:
            return node.args
        if kind is Let:
            lets[node.var] = node.value
            return (node.value, node.body)
        if kind is Function:
            return ()
        return tuple(children(node))
    return enter


def _export_body(graph: OnnxGraph, body: Expr, env: dict[Expr, Value],
                 types: Mapping[Expr, Type], regions: Mapping[str, Function]) -> Value:
    """Export the dataflow graph ``body`` with ``env`` giving its free variables' values
    (``regions``: the module's ``Compiler=`` globals, inlined where called)."""
    from relay_ref.frontend.onnx.export_ops import EXPORTERS

    lets: dict[Expr, Expr] = {}
    for node in post_order(body, enter=_enter(lets)):
        kind = type(node)
        if kind is Var:
            if node in lets:
                env[node] = env[lets[node]]
            elif node not in env:
                raise ExportError(f"to_onnx: free variable %{node.name_hint}", node.span)
            continue
        if kind is Let:
            env[node] = env[node.body]
        elif kind is Constant:
            env[node] = graph.const(node.data)
        elif kind is Tuple:
            env[node] = tuple(env[f] for f in node.fields)
        elif kind is TupleGetItem:
            value = env[node.tuple_value]
            if not isinstance(value, tuple):
                raise ExportError("to_onnx: projection of a non-tuple", node.span)
            env[node] = value[node.index]
        elif kind is Call:
            env[node] = _export_call(graph, node, env, types, EXPORTERS, regions)
        else:
            raise ExportError(f"to_onnx: {_describe(node)} is not dataflow; only operator "
                              f"calls, composite calls, tuples, projections, constants and "
                              f"let bindings export to ONNX", node.span)
    return env[body]


def _describe(node: Expr) -> str:
    name = type(node).__name__
    return {"If": "an if expression", "Match": "a match expression",
            "Function": "a closure (fn literal)", "GlobalVar": "a global reference",
            "RefCreate": "a reference (ref)", "RefRead": "a reference read (!)",
            "RefWrite": "a reference write (:=)",
            "Constructor": "an ADT constructor"}.get(name, f"a {name}")


def _export_call(graph: OnnxGraph, node: Call, env: dict[Expr, Value],
                 types: Mapping[Expr, Type], table: Mapping[str, Exporter],
                 regions: Mapping[str, Function]) -> Value:
    op = node.op
    args = [env[a] for a in node.args]
    if type(op) is Function and op.attr("Composite", None) is not None:
        inner = dict(zip(op.params, args, strict=True))
        return _export_body(graph, op.body, inner, types, regions)
    if type(op) is GlobalVar and op.name in regions:  # a region: its body, inlined
        region = regions[op.name]
        inner = dict(zip(region.params, args, strict=True))
        return _export_body(graph, region.body, inner, types, regions)
    if type(op) is not Op:
        raise ExportError(f"to_onnx: a call of {_describe(op)} is not dataflow; only "
                          f"operator, composite and region (Compiler=) calls export to "
                          f"ONNX", node.span)
    info = CallInfo.of(node, types.get)
    ex = table.get(op.name)
    if ex is None:
        raise ExportError(f"to_onnx: operator {op.name} has no ONNX export (supported: "
                          f"{', '.join(sorted(table))})", node.span)
    if not _static(info):
        found = type_to_text(info.type) if info.type is not None else "no type"
        raise ExportError(f"to_onnx: {op.name} needs static tensor types to export "
                          f"(found {found})", node.span)
    if ex.supports is not None and not ex.supports(info):
        raise ExportError(f"to_onnx: operator {op.name} with these attributes/types has "
                          f"no ONNX export ({node.attrs})", node.span)
    return ex.emit(graph, info, args)
