"""The ``ort`` BYOC backend: a partitioned region runs as one onnxruntime session
(spec/byoc.md BYOC-Extern, BYOC-Cost).

* **Support** (BYOC-Support): every operator of the ONNX exporter's table
  (``relay_ref.frontend.onnx.export_ops.EXPORTERS``), each with the exporter's own
  predicate (``export.exportable``: static shapes, attributes the ONNX op expresses).
* **Composites** (BYOC-Composite): ``ort.conv2d_bias_relu``, ``ort.conv2d_relu``,
  ``ort.dense_bias``; a match is taken when every call in it exports.
* **Codegen** ``ort_codegen(func, types)``: ``to_onnx`` of the region (constants become
  initializers, composites are inlined) -> one ``InferenceSession`` (CPU execution
  provider, all graph optimisations), built once; the callable feeds the arrays by input
  name (``np.ascontiguousarray`` only when an array is not already C-contiguous of the
  right dtype) and returns an array, or a tuple for a tuple-typed region. A region the
  exporter refuses raises ``CodegenUnsupported`` (BYOC-Fallback: the executor runs it on
  the host).
* **Cost model** (BYOC-Cost), measured on this machine (2 shared cores, CPU provider):
  one call of a session on a tiny region (``nn.relu`` of 1x8 float32) costs
  ``ORT_CALL_US`` ~ 6 µs via ``InferenceSession.run`` (5.0 µs bare; ``run_with_iobinding``
  measured 7.8 µs, so plain ``run`` is kept), against 3.3 µs for the host executor
  (``rr.compile``) and 0.7 µs for NumPy. On 1x64x56x56 the same relu takes 29 µs in ORT
  and 940 µs in the host executor, i.e. the host runs ~``HOST_FLOPS_PER_US`` = 200
  estimated flops per µs. A region is worth a session when its estimated flops exceed
  ``MIN_FLOPS = 2 * ORT_CALL_US * HOST_FLOPS_PER_US`` (2 400): below that the boundary
  costs more than ORT saves. ``intra_op_num_threads`` is 1 (2 threads measured the same
  on tiny regions, and the cores are shared with the host).

``onnx`` and ``onnxruntime`` are imported inside the functions: importing this module is
cheap. Registration happens at import when ``relay_ref.byoc.register_backend`` exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from relay_ref.ir.expr import Call, Expr, Function, Op
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.passes.compiler_support import CallInfo, RegionCost
from relay_ref.passes.pattern import is_op, wildcard

__all__ = ["ORT_CALL_US", "PATTERNS", "ort_codegen", "register", "supported_ops", "worth"]

#: Measured per-call overhead of an onnxruntime session on a tiny region (µs).
ORT_CALL_US = 6.0
#: Rough host executor throughput on small operators (flops per µs).
HOST_FLOPS_PER_US = 200.0
#: Regions estimated below this many flops stay on the host.
MIN_FLOPS = int(2 * ORT_CALL_US * HOST_FLOPS_PER_US)


def worth(cost: RegionCost) -> bool:
    """Whether a region is worth an onnxruntime session (see the module docstring)."""
    return cost.flops >= MIN_FLOPS


def _exportable(info: CallInfo) -> bool:
    from relay_ref.frontend.onnx.export import exportable

    return exportable(info)


def supported_ops() -> dict[str, Callable[[CallInfo], bool]]:
    """Operator name -> the exporter's predicate, for every exportable operator."""
    from relay_ref.frontend.onnx.export_ops import EXPORTERS

    return {op: _exportable for op in EXPORTERS}


def _all_export(info: CallInfo) -> bool:
    """A composite's check: every operator call the match binds exports."""
    match = info.match
    if match is None:
        return True
    type_of = match.type_of
    for e in match.bindings.values():
        if type(e) is Call and type(e.op) is Op:
            inner = CallInfo.of(e, type_of)
            if not _exportable(inner):
                return False
    return True


def _patterns() -> list[tuple[str, Any, Callable[[CallInfo], bool]]]:
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    conv_bias = is_op("nn.bias_add")(conv, wildcard())
    dense = is_op("nn.dense")(wildcard(), wildcard())
    return [
        ("ort.conv2d_bias_relu", is_op("nn.relu")(conv_bias), _all_export),
        ("ort.conv2d_relu", is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard())),
         _all_export),
        ("ort.dense_bias", is_op("nn.bias_add")(dense, wildcard()), _all_export),
    ]


PATTERNS = _patterns()


def _flat_types(t: Type | None) -> list[Type | None]:
    if isinstance(t, TupleType):
        return [x for f in t.fields for x in _flat_types(f)]
    return [t]


def _rebuild(t: Type | None, outs: list[Any], pos: int) -> tuple[Any, int]:
    if isinstance(t, TupleType):
        items = []
        for f in t.fields:
            item, pos = _rebuild(f, outs, pos)
            items.append(item)
        return tuple(items), pos
    return outs[pos], pos + 1


def ort_codegen(func: Function, types: Mapping[Expr, Type]) -> Callable[..., Any]:
    """One onnxruntime session for the region ``func`` (see the module docstring)."""
    import onnx
    import onnxruntime as ort

    from relay_ref.byoc.errors import CodegenUnsupported
    from relay_ref.frontend.onnx.export import ExportError, to_onnx

    try:
        model = to_onnx(func, types=types, check=False)
        data = model.SerializeToString()  # once: checked and loaded as bytes
        onnx.checker.check_model(data)
    except ExportError as err:
        raise CodegenUnsupported(f"ort: {err.diagnostics[0].message}") from None
    except onnx.checker.ValidationError as err:  # an exporter bug: the host runs it
        raise CodegenUnsupported(f"ort: the exported region does not validate: {err}") \
            from None

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(data, opts,
                                    providers=["CPUExecutionProvider"])
    except Exception as err:  # onnxruntime's own errors (an op it lacks a kernel for)
        raise CodegenUnsupported(f"ort: onnxruntime rejects the region: {err}") from None
    names = [i.name for i in model.graph.input]
    dtypes = [np.dtype(_param_dtype(p, types)) for p in func.params]
    ret = types.get(func.body, func.ret_type)
    is_tuple = isinstance(ret, TupleType)
    n = len(names)
    run = sess.run

    def call(*args: Any) -> Any:
        if len(args) != n:
            raise TypeError(f"ort region expects {n} arguments, got {len(args)}")
        feeds = {}
        for name, dt, a in zip(names, dtypes, args, strict=True):
            if not (type(a) is np.ndarray and a.dtype == dt and a.flags.c_contiguous):
                a = np.ascontiguousarray(a, dtype=dt)
            feeds[name] = a
        outs = run(None, feeds)
        if is_tuple:
            return _rebuild(ret, outs, 0)[0]
        return outs[0]

    return call


def _param_dtype(p: Expr, types: Mapping[Expr, Type]) -> str:
    t = types.get(p, getattr(p, "type_annotation", None))
    return t.dtype if isinstance(t, TensorType) else "float32"


def register(replace: bool = False) -> Any:
    """Register the ``ort`` backend (``relay_ref.byoc.register_backend``)."""
    from relay_ref.byoc.backend import register_backend

    return register_backend("ort", supported_ops=supported_ops(), patterns=PATTERNS,
                            codegen=ort_codegen, worth=worth, replace=replace)


register()
