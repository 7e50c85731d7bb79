"""The pieces the Relay -> ONNX exporter (``export.py``) and its operator table
(``export_ops.py``) share: the ``OnnxGraph`` being written, the ``Exporter`` record of one
operator (its ``supports`` sees a ``relay_ref.ir.call_info.CallInfo``, the record the
BYOC passes and backends use too), ``ExportError``, and the dtype mapping. ``onnx`` is
imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from relay_ref.diagnostics import RelayError
from relay_ref.ir.call_info import CallInfo
from relay_ref.ir.expr import Expr

__all__ = ["DEFAULT_OPSET", "ExportError", "Exporter", "OnnxGraph", "Value",
           "onnx_dtype"]


#: The default ONNX opset: what onnxruntime 1.18+ runs fully.
DEFAULT_OPSET = 17

#: A value in the graph: one ONNX tensor name, or a tuple of values (a Relay tuple).
Value = Any


class ExportError(RelayError, ValueError):
    """A program (or one of its nodes) the ONNX exporter cannot express."""


@dataclass(frozen=True, slots=True)
class Exporter:
    """How one Relay operator becomes ONNX: ``supports(info)`` (attributes/types the ONNX
    operator can express; all of them when None) and ``emit(graph, info, inputs)`` (the
    argument values in, the call's value out)."""

    emit: Callable[[OnnxGraph, CallInfo, list[Value]], Value]
    supports: Callable[[CallInfo], bool] | None = None


class OnnxGraph:
    """The graph being written: nodes, initializers, fresh names, the opset."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0
        self.used: set[str] = set()  # every name in the graph (fresh names avoid them)
        self._consts: dict[tuple[str, tuple[int, ...], bytes], str] = {}

    def fresh(self, hint: str = "t") -> str:
        """A name no value of the graph has (parameters' names included)."""
        while True:
            self._count += 1
            name = f"{hint}_{self._count}"
            if name not in self.used:
                self.used.add(name)
                return name

    def node(self, op_type: str, inputs: list[str], outputs: int = 1, **attrs: Any
             ) -> Any:
        """Append a node; its output name (or tuple of names when ``outputs > 1``)."""
        from onnx import helper

        names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, **attrs))
        return names[0] if outputs == 1 else tuple(names)

    def const(self, value: Any, dtype: str | None = None, name: str | None = None) -> str:
        """An initializer holding ``value`` (small equal constants shared)."""
        from onnx import numpy_helper

        arr = np.asarray(value, dtype=dtype) if dtype else np.asarray(value)
        key = (arr.dtype.str, arr.shape, arr.tobytes()) if arr.size <= 64 else None
        if key is not None and name is None and key in self._consts:
            return self._consts[key]
        out = name or self.fresh("const")
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(arr), out))
        if key is not None and name is None:
            self._consts[key] = out
        return out

    def ints(self, values: Any) -> str:
        return self.const(np.asarray(values, dtype=np.int64))


def onnx_dtype(dtype: str, node: Expr | None = None) -> int:
    from onnx import helper

    try:
        return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    except (TypeError, KeyError):
        raise ExportError(f"to_onnx: dtype {dtype} has no ONNX type",
                          node.span if node is not None else None) from None
