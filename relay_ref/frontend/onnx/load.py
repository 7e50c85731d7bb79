"""Reading a model: a path or an ``onnx.ModelProto`` in, a ``ModelProto`` and its default
opset out. Every failure is a ``FrontendError`` (a missing file, bytes that are not a
model, a model without a graph or with an opset this frontend does not cover, a graph that
is not well formed: ``validate.py``); a wrong Python type is a ``TypeError``, as everywhere
in the public API."""

from __future__ import annotations

import os
from typing import Any

from relay_ref.diagnostics import FrontendError
from relay_ref.frontend.onnx.registry import DOMAINS
from relay_ref.frontend.onnx.validate import check_graph

MIN_OPSET = 7  # the oldest default-domain opset the converters cover
# An older opset is read when every node's op is the version it is at MIN_OPSET (Not-1,
# Relu-6 ...): ``survey`` refuses the nodes whose op changed since (Add-6's ``broadcast``).
OLDEST_OPSET = 1


def load_model(model: Any) -> Any:
    """``model`` as an ``onnx.ModelProto`` (read from disk when it is a path)."""
    import onnx

    if isinstance(model, onnx.ModelProto):
        proto = model
    elif isinstance(model, str | os.PathLike):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise FrontendError(f"from_onnx: no such file: {path}")
        try:
            proto = onnx.load(path)
        except Exception as err:  # protobuf's DecodeError and friends: not a model
            raise FrontendError(f"from_onnx: {path} is not an ONNX model "
                                f"({type(err).__name__}: {err})") from None
    else:
        raise TypeError(f"from_onnx: model must be an onnx.ModelProto or a path, not "
                        f"{type(model).__name__}")
    if not proto.HasField("graph") or not proto.graph.output:
        raise FrontendError("from_onnx: the model has no graph (or a graph without outputs); "
                            "is this an ONNX model?")
    check_graph(proto.graph)
    return proto


def default_opset(proto: Any) -> int:
    """The model's opset of the default domain, checked against what is covered."""
    import onnx

    versions = [o.version for o in proto.opset_import if o.domain in DOMAINS]
    if not versions:
        raise FrontendError("from_onnx: the model imports no version of the default ONNX "
                            "operator set (opset_import has no entry for domain '')")
    opset = max(versions)
    newest = onnx.defs.onnx_opset_version()
    if opset < OLDEST_OPSET or opset > newest:
        raise FrontendError(f"from_onnx: opset {opset} is not supported (supported: "
                            f"{MIN_OPSET} to {newest}, the newest the installed onnx knows; "
                            f"older ones for ops unchanged since {MIN_OPSET})")
    return opset
