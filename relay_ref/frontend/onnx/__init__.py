"""The ONNX frontend: ``from_onnx(model, shapes=None, *, freeze_params=False) ->
(IRModule, params)``.

``@main`` takes the graph's non-initializer inputs in graph order, then the initializers
(the weights); ``rr.compile(mod, params=params)(*inputs)`` and ``rr.evaluate(mod,
*inputs, *weights)`` both run it. ONNX names that are not Relay identifiers are sanitised
(``params.relay_names`` maps them). Unsupported operators and attribute values are listed
in one ``rr.FrontendError`` before any conversion. See ``converter.py`` for the steps and
``registry.py`` for the table of converters by op version.

The other direction, ``to_onnx(mod_or_func, params=None, *, entry="main", opset=None,
types=None) -> onnx.ModelProto``, exports a dataflow function (``export.py``; the operator
table is ``export_ops.EXPORTERS``); the ``ort`` BYOC backend and ``relay export`` use it.

``onnx`` is imported on first use only, so importing this package stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["from_onnx", "to_onnx"]


def from_onnx(model: Any, shapes: dict[str, Any] | None = None, *,
              freeze_params: bool = False) -> tuple[Any, Any]:
    """Convert an ONNX model to ``(IRModule, params)``; see ``converter.from_onnx``."""
    from relay_ref.frontend.onnx.converter import from_onnx as _from_onnx

    return _from_onnx(model, shapes, freeze_params=freeze_params)


def to_onnx(mod_or_func: Any, params: Any = None, *, entry: str = "main",
            opset: int | None = None, types: Any = None) -> Any:
    """Export a dataflow Relay function to an ``onnx.ModelProto``; see ``export.to_onnx``."""
    from relay_ref.frontend.onnx.export import to_onnx as _to_onnx

    return _to_onnx(mod_or_func, params, entry=entry, opset=opset, types=types)
