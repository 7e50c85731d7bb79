"""Helpers for the ONNX frontend tests: single-node models built with ``onnx.helper``, run
by onnxruntime (the oracle) and by relay_ref on the same inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import relay_ref as rr
from relay_ref.frontend.onnx import from_onnx

_ELEM = {np.dtype(k): v for k, v in {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
    "int64": TensorProto.INT64, "int32": TensorProto.INT32, "int16": TensorProto.INT16,
    "int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "uint16": TensorProto.UINT16,
    "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64,
    "bool": TensorProto.BOOL}.items()}


def node_model(op_type: str, inputs: dict[str, np.ndarray], attrs: dict | None = None, *,
               opset: int, n_outputs: int = 1, initializers: dict[str, np.ndarray] | None = None,
               input_names: list[str] | None = None) -> onnx.ModelProto:
    """A model of one ``op_type`` node. ``inputs`` are graph inputs (their arrays give the
    types), ``initializers`` weights; the node reads ``input_names`` (default: the inputs,
    then the initializers, in order; "" for an omitted optional input). Output types are
    left to ONNX shape inference."""
    initializers = initializers or {}
    names = input_names if input_names is not None else [*inputs, *initializers]
    outs = [f"y{i}" for i in range(n_outputs)]
    attrs = {k: numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v
             for k, v in (attrs or {}).items()}  # arrays are tensor attributes
    node = helper.make_node(op_type, names, outs, name=f"{op_type.lower()}_node", **attrs)
    graph = helper.make_graph(
        [node], f"{op_type}_graph",
        [helper.make_tensor_value_info(k, _ELEM[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info(o) for o in outs],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 8)  # what the installed onnxruntime reads
    return model


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def as_list(value: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in value] if isinstance(value, tuple) else [np.asarray(value)]


def relay_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], *,
              compiled: bool = False) -> list[np.ndarray]:
    """Import ``model`` and run it on ``feeds`` (by ONNX name) with the interpreter or, with
    ``compiled``, ``rr.compile``; weights go in as ``params``."""
    mod, params = from_onnx(model)
    if compiled:
        return as_list(rr.compile(mod, params=params)(*feeds.values()))
    return as_list(rr.evaluate(mod, *feeds.values(), *params.values()))


def assert_matches(model: onnx.ModelProto, feeds: dict[str, np.ndarray], *,
                   rtol: float = 1e-5, atol: float = 1e-6, compiled: bool = False) -> None:
    """relay_ref's outputs equal onnxruntime's: same dtype, shape and values."""
    want = ort_run(model, feeds)
    got = relay_run(model, feeds, compiled=compiled)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def rand(*shape: int, dtype: str = "float32", seed: int = 0, low: float = -2.0,
         high: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed + sum(shape))
    if np.dtype(dtype).kind == "f":
        return rng.uniform(low, high, shape).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(int(low) if low < 0 else 0, max(int(high), 1) + 1, shape).astype(dtype)
