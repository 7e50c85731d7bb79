"""The ONNX backend interface (``relay_ref.frontend.onnx.backend``): ``prepare`` / ``run``
on small models (weights, several outputs, inputs by position and by name), ``run_model``,
``run_node``, ``supports_device``; the per-value specialisation of models whose shapes are
graph inputs; every failure an ``rr.RelayError``."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.base import Backend, BackendRep
from onnx_case import node_model, ort_run, rand

import relay_ref as rr
from relay_ref.frontend.onnx import backend
from relay_ref.frontend.onnx.backend import RelayBackend


def _gemm_relu_model() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """x (2, 3) @ W (3, 4) + b, relu: two outputs (the sum, then the relu), W and b weights;
    the names are not Relay identifiers."""
    w, b = rand(3, 4, seed=1), rand(4, seed=2)
    nodes = [helper.make_node("MatMul", ["in:x", "W.0"], ["mm"]),
             helper.make_node("Add", ["mm", "b/0"], ["sum-out"]),
             helper.make_node("Relu", ["sum-out"], ["relu-out"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("in:x", TensorProto.FLOAT, (2, 3))],
        [helper.make_tensor_value_info("sum-out", TensorProto.FLOAT, (2, 4)),
         helper.make_tensor_value_info("relu-out", TensorProto.FLOAT, (2, 4))],
        [numpy_helper.from_array(w, "W.0"), numpy_helper.from_array(b, "b/0")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"in:x": rand(2, 3)}


def test_is_an_onnx_backend() -> None:
    assert issubclass(RelayBackend, Backend)
    model, _ = _gemm_relu_model()
    assert isinstance(RelayBackend.prepare(model, executor="evaluate"), BackendRep)


@pytest.mark.parametrize("executor", ["compile", "evaluate"])
def test_prepare_run_outputs_in_graph_order(executor: str) -> None:
    model, feeds = _gemm_relu_model()
    want = ort_run(model, feeds)
    rep = RelayBackend.prepare(model, "CPU", executor=executor)
    assert rep.input_names == ("in:x",)
    assert rep.output_names == ("sum-out", "relu-out")
    for got in (rep.run(list(feeds.values())), rep.run(feeds), rep.run(feeds["in:x"])):
        assert isinstance(got, tuple) and len(got) == 2
        assert (got[1] >= 0).all() and (got[0] < 0).any()  # the order is the graph's
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert len(rep.params) == 2 and "W.0" in rep.params  # the weights: parameters


def test_run_model_and_the_module_functions() -> None:
    x, y = rand(3, 4), rand(1, 4, seed=3)
    model = node_model("Sub", {"x": x, "y": y}, opset=14)
    (got,) = RelayBackend.run_model(model, [x, y])
    np.testing.assert_allclose(got, x - y, rtol=1e-6)
    (got,) = backend.run_model(model, {"y": y, "x": x}, executor="evaluate")
    np.testing.assert_allclose(got, x - y, rtol=1e-6)


def test_run_node() -> None:
    x = rand(2, 5)
    node = helper.make_node("Softmax", ["x"], ["y"], axis=0)
    (got,) = RelayBackend.run_node(node, [x], executor="evaluate")
    e = np.exp(x - x.max(axis=0))
    np.testing.assert_allclose(got, e / e.sum(axis=0), rtol=1e-5)
    # Softmax-1 (opset 11) flattens to 2-D from the axis: a different result
    (old,) = backend.run_node(node, [x], opset_version=11, executor="evaluate")
    flat = np.exp(x.reshape(1, -1) - x.max())
    np.testing.assert_allclose(old, (flat / flat.sum()).reshape(2, 5), rtol=1e-5)


def test_devices() -> None:
    assert RelayBackend.supports_device("CPU") and backend.supports_device("CPU:0")
    assert not RelayBackend.supports_device("CUDA")
    model, _ = _gemm_relu_model()
    assert not RelayBackend.is_compatible(model, "CUDA")
    with pytest.raises(rr.RelayError, match="device 'CUDA' is not supported"):
        RelayBackend.prepare(model, "CUDA")


def test_shape_inputs_specialise_per_value() -> None:
    """Reshape's shape is a graph input: conversion waits for its value, once per value."""
    x = rand(2, 6)
    model = node_model("Reshape", {"x": x, "shape": np.array([3, 4], np.int64)}, opset=14)
    rep = RelayBackend.prepare(model, executor="evaluate")
    assert rep.static_names == frozenset({"shape"}) and rep.module is None
    for shape in ([3, 4], [4, 3], [3, 4], [-1, 2]):
        (got,) = rep.run([x, np.array(shape, np.int64)])
        np.testing.assert_array_equal(got, x.reshape(shape))
    assert len(rep.specialised) == 3
    with pytest.raises(rr.FrontendError, match="Reshape"):
        rep.run([x, np.array([5, 5], np.int64)])  # no such shape: an error, at run time


def test_unsupported_ops_are_said_at_prepare() -> None:
    model = node_model("Trilu", {"x": rand(3, 3)}, opset=14)
    model.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(rr.FrontendError, match="NoSuchOp"):
        RelayBackend.prepare(model)


def test_bad_calls_are_relay_errors() -> None:
    model, feeds = _gemm_relu_model()
    rep = RelayBackend.prepare(model, executor="evaluate")
    with pytest.raises(rr.RelayError, match="takes 1 input"):
        rep.run([])
    with pytest.raises(rr.RelayError, match="no input 'y'"):
        rep.run({"y": feeds["in:x"]})
    with pytest.raises(rr.RelayError):
        rep.run([feeds["in:x"].astype(np.float64)])  # the wrong dtype
    with pytest.raises(rr.RelayError, match="unknown executor"):
        RelayBackend.prepare(model, executor="jit")
    with pytest.raises(rr.FrontendError, match="no such file"):
        RelayBackend.prepare("/nonexistent/model.onnx")
