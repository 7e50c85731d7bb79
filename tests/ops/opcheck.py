"""Helpers for the operator tests: run a reference (checking it against its own relation)
and run a one-node ONNX model on onnxruntime.

``run_op`` is the single entry point the differential tests use: it builds the attrs with
``make_attrs`` (as the parser would), asks the relation for the output type, runs the
reference, and asserts the value has exactly the predicted shape and dtype.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from relay_ref.ir.types import AnyDim, TensorType, TupleType, Type
from relay_ref.ops.registry import NOT_YET, get_op, make_attrs

RNG = np.random.default_rng(1234)


def type_of(value: object) -> Type:
    """The Relay type of a reference value (tensor or tuple)."""
    if isinstance(value, tuple):
        return TupleType(tuple(type_of(v) for v in value))
    arr = np.asarray(value)
    return TensorType(tuple(int(d) for d in arr.shape), arr.dtype.name)


def assert_matches_type(value: object, ty: Type, where: str = "") -> None:
    if isinstance(ty, TupleType):
        assert isinstance(value, tuple), f"{where}: expected a tuple, got {type(value)}"
        assert len(value) == len(ty.fields), where
        for v, t in zip(value, ty.fields, strict=True):
            assert_matches_type(v, t, where)
        return
    assert isinstance(ty, TensorType), where
    assert isinstance(value, np.ndarray), f"{where}: reference returned {type(value)}"
    assert value.dtype == np.dtype(ty.dtype), f"{where}: dtype {value.dtype} vs {ty.dtype}"
    assert len(value.shape) == len(ty.shape) and all(
        isinstance(d, AnyDim) or d == v for d, v in zip(ty.shape, value.shape, strict=True)
    ), f"{where}: shape {value.shape} vs {ty.shape}"


def run_op(name: str, args: Sequence[object], **attrs: object) -> object:
    """Run ``name``'s reference on ``args`` and check it against the relation's type.

    Also checks that the reference does not mutate its inputs."""
    op = get_op(name)
    at = make_attrs(name, attrs)
    arg_list = [tuple(np.asarray(a) for a in v) if isinstance(v, tuple) else np.asarray(v)
                for v in args]
    before = [tuple(a.copy() for a in v) if isinstance(v, tuple) else v.copy()
              for v in arg_list]
    ty = op.relation([type_of(a) for a in arg_list], at)
    assert ty is not NOT_YET, f"{name}: relation returned NOT_YET on complete types"
    out = op.reference(list(arg_list), at)
    assert_matches_type(out, ty, name)  # type: ignore[arg-type]
    for a, b in zip(arg_list, before, strict=True):
        if isinstance(a, tuple):
            for x, y in zip(a, b, strict=True):
                np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{name} mutated an input")
    return out


# -- onnxruntime ---------------------------------------------------------------------

_ONNX_TYPES = {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
    "int8": TensorProto.INT8, "int16": TensorProto.INT16, "int32": TensorProto.INT32,
    "int64": TensorProto.INT64, "uint8": TensorProto.UINT8, "uint16": TensorProto.UINT16,
    "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64, "bool": TensorProto.BOOL,
}


def onnx_run(op_type: str, inputs: Sequence[np.ndarray | None], n_outputs: int = 1,
             opset: int = 17, **attrs: object) -> list[np.ndarray]:
    """Run a single ONNX node. ``None`` inputs are omitted optional inputs."""
    names, feeds, infos = [], {}, []
    for i, x in enumerate(inputs):
        if x is None:
            names.append("")
            continue
        x = np.asarray(x)
        nm = f"in{i}"
        names.append(nm)
        feeds[nm] = x
        infos.append(helper.make_tensor_value_info(nm, _ONNX_TYPES[x.dtype.name], x.shape))
    outs = [f"out{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, **attrs)
    graph = helper.make_graph(
        [node], "g", infos,
        [onnx.ValueInfoProto(name=o) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])
    return sess.run(outs, feeds)


def rand(shape: Sequence[int], dtype: str = "float32", low: float = -3, high: float = 3
         ) -> np.ndarray:
    """Random test data: uniform floats, or integers in [low, high]."""
    if dtype.startswith("float"):
        return RNG.uniform(low, high, size=shape).astype(dtype)
    if dtype == "bool":
        return RNG.integers(0, 2, size=shape).astype(bool)
    return RNG.integers(int(low), int(high) + 1, size=shape).astype(dtype)


def close(a: object, b: object, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"shape {a.shape} vs {b.shape}"
    np.testing.assert_allclose(a.astype(np.float64) if a.dtype != bool else a,
                               b.astype(np.float64) if b.dtype != bool else b,
                               rtol=rtol, atol=atol)
