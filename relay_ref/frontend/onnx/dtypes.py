"""ONNX tensor element types as Relay dtypes.

Only the types relay_ref computes with are mapped; the others (string, complex, bfloat16,
float8, int4 ...) have no entry, and a model using them is rejected up front.
"""

from __future__ import annotations

# TensorProto.DataType codes (onnx.proto) -> Relay dtype names.
ONNX_TO_RELAY: dict[int, str] = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
}


def relay_dtype(code: int) -> str | None:
    """The Relay dtype of ONNX element type ``code``, None when it has none."""
    return ONNX_TO_RELAY.get(code)


def type_name(code: int) -> str:
    """The ONNX name of element type ``code`` (``FLOAT``, ``STRING``) for messages."""
    from onnx import TensorProto

    try:
        return TensorProto.DataType.Name(code)
    except ValueError:
        return f"element type {code}"


def promote(*dtypes: str) -> str:
    """The dtype NumPy computes ``dtypes`` in (``np.result_type``, NEP 50: int32 with
    float32 is float64, int8 with float16 is float16, uint64 with int64 is float64): the
    type in which ONNX's reference evaluates an op whose inputs may differ in type."""
    import numpy as np

    return np.result_type(*(np.dtype(d) for d in dtypes)).name
