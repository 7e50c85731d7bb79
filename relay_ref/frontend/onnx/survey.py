"""The up-front check: everything a model needs that the frontend lacks, in one error,
before any conversion work.

``survey`` walks every node once: it resolves the node's op version from the model's
opset (``onnx.defs.get_schema``), finds its converter (``lookup.lookup``), reads its
attributes and runs the converter's ``check``. It also checks the element types of the
graph's inputs and initializers. Problems are gathered, not raised one by one: the error
lists each unsupported operator with its op version and the names of the nodes using it,
then each unsupported attribute value, output or element type.

Subgraphs (``If`` branches, ``Loop`` bodies: attributes holding a ``GraphProto``) are
surveyed recursively with the same opset, and their problems join the one error.

Invariant: when ``survey`` returns, every node has a converter that accepts its attribute
values; the plan it returns gives, per node, that converter, its op version and its
attributes, in graph order, and for each graph attribute the plan of that subgraph
(``Step.subgraphs``), so every node at every depth has been checked.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay_ref.diagnostics import ERROR, Diagnostic, FrontendError
from relay_ref.frontend.onnx.builder import Builder
from relay_ref.frontend.onnx.context import NodeContext
from relay_ref.frontend.onnx.dtypes import relay_dtype, type_name
from relay_ref.frontend.onnx.load import MIN_OPSET
from relay_ref.frontend.onnx.lookup import lookup
from relay_ref.frontend.onnx.registry import DOMAINS, Converter

_SHOWN_NODES = 5  # node names listed per unsupported operator


@dataclass(frozen=True, slots=True)
class Step:
    """One node ready to convert."""

    node: Any  # onnx.NodeProto
    version: int
    converter: Converter
    attrs: dict[str, object]
    subgraphs: dict[str, list[Step]] = field(default_factory=dict)  # attr name -> plan


def node_label(node: Any) -> str:
    name = node.name or (node.output[0] if node.output else "")
    return f"'{name}'" if name else "(unnamed)"


def survey(proto: Any, opset: int) -> list[Step]:
    """The conversion plan of ``proto``'s graph; raises one ``FrontendError`` listing every
    problem found."""
    unsupported: dict[tuple[str, int], list[str]] = defaultdict(list)
    problems: list[str] = []
    steps = _survey_graph(proto, proto.graph, opset, unsupported, problems)
    problems.extend(_dtype_problems(proto.graph))
    if unsupported or problems:
        raise FrontendError(_diagnostics(unsupported, problems))
    return steps


def _survey_graph(proto: Any, graph: Any, opset: int,
                  unsupported: dict[tuple[str, int], list[str]],
                  problems: list[str]) -> list[Step]:
    """The plan of ``graph`` (the model's graph or a subgraph); problems are appended to
    ``unsupported`` and ``problems``."""
    import onnx

    steps: list[Step] = []
    for node in graph.node:
        label = node_label(node)
        if node.domain not in DOMAINS:
            unsupported[(f"{node.domain}.{node.op_type}", _domain_opset(proto, node.domain))
                        ].append(label)
            continue
        try:
            version = onnx.defs.get_schema(node.op_type, opset, "").since_version
        except Exception:  # onnx.defs.SchemaError: no such operator at this opset
            unsupported[(node.op_type, opset)].append(label)
            continue
        if opset < MIN_OPSET and _changed_since(node.op_type, version):
            problems.append(f"{node.op_type} node {label}: opset {opset} is not supported "
                            f"for {node.op_type}-{version} (it changed by opset "
                            f"{MIN_OPSET}, the oldest the converters cover)")
            continue
        conv = lookup(node.op_type, version)
        if conv is None:
            unsupported[(f"{node.op_type}-{version}", opset)].append(label)
            continue
        try:
            attrs = read_attributes(node)
        except Exception as err:  # an attribute onnx cannot decode
            problems.append(f"{node.op_type} node {label}: unreadable attribute ({err})")
            continue
        ctx = NodeContext(node, version, Builder(), (None,) * len(node.input), attrs)
        if conv.check is not None:
            problems.extend(f"{node.op_type} node {label}: {msg}" for msg in conv.check(ctx))
        if ctx.num_outputs > conv.outputs:
            extra = [o for o in list(node.output)[conv.outputs:] if o]
            problems.append(f"{node.op_type} node {label}: output(s) "
                            f"{', '.join(repr(o) for o in extra)} not supported (only the "
                            f"first {conv.outputs})")
        subgraphs: dict[str, list[Step]] = {}
        for key, value in attrs.items():
            if isinstance(value, onnx.GraphProto):
                subgraphs[key] = _survey_graph(proto, value, opset, unsupported, problems)
                problems.extend(f"{node.op_type} node {label}: {key}: {p}"
                                for p in _dtype_problems(value, subgraph=True))
        steps.append(Step(node, version, conv, attrs, subgraphs))
    return steps


def all_steps(steps: list[Step]) -> list[Step]:
    """``steps`` and, depth first, the steps of their subgraphs."""
    out: list[Step] = []
    todo = list(reversed(steps))
    while todo:
        step = todo.pop()
        out.append(step)
        for sub in reversed(list(step.subgraphs.values())):
            todo.extend(reversed(sub))
    return out


def _changed_since(op_type: str, version: int) -> bool:
    """Whether ``op_type`` at op version ``version`` is older than its version at
    ``MIN_OPSET`` (so its semantics may differ from what the converters implement)."""
    import onnx

    try:
        return onnx.defs.get_schema(op_type, MIN_OPSET, "").since_version != version
    except Exception:  # onnx.defs.SchemaError: the op did not exist yet at MIN_OPSET
        return True


def read_attributes(node: Any) -> dict[str, object]:
    """A node's attributes as Python values: strings decoded, tensors as NumPy arrays,
    floats (float32 in ONNX) as the double their shortest float32 text reads as (the same
    float32), graphs left as ``GraphProto``s."""
    from onnx import helper, numpy_helper

    out: dict[str, object] = {}
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        if a.type == a.FLOAT:  # a float32: its shortest float32 text, 1e-4 not 9.99e-05
            value = float(str(np.float32(value)))
        elif a.type == a.FLOATS:
            value = [float(str(np.float32(v))) for v in value]
        elif isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode("utf-8", errors="replace") for v in value]
        elif a.type == a.TENSOR:
            value = numpy_helper.to_array(value)
        out[a.name] = value
    return out


def _domain_opset(proto: Any, domain: str) -> int:
    return next((o.version for o in proto.opset_import if o.domain == domain), 0)


def _dtype_problems(graph: Any, subgraph: bool = False) -> list[str]:
    """Inputs and initializers whose types have no Relay type; a subgraph's input may
    leave its type out (the node that runs the subgraph gives it)."""
    out = []
    for inp in graph.input:
        kind = inp.type.WhichOneof("value")
        if subgraph and kind is None:
            continue
        if subgraph and kind == "tensor_type" and not inp.type.tensor_type.elem_type:
            continue
        if kind != "tensor_type":
            out.append(f"graph input '{inp.name}' is a {kind or 'value of unknown type'}, not "
                       "a tensor")
        elif relay_dtype(inp.type.tensor_type.elem_type) is None:
            out.append(f"graph input '{inp.name}' has element type "
                       f"{type_name(inp.type.tensor_type.elem_type)}, which has no Relay dtype")
    for init in graph.initializer:
        if relay_dtype(init.data_type) is None:
            out.append(f"initializer '{init.name}' has element type "
                       f"{type_name(init.data_type)}, which has no Relay dtype")
    return out


def _diagnostics(unsupported: dict[tuple[str, int], list[str]],
                 problems: list[str]) -> list[Diagnostic]:
    n_ops = sum(len(v) for v in unsupported.values())
    head = (f"the model cannot be imported: {n_ops} node(s) of {len(unsupported)} "
            f"unsupported operator(s), {len(problems)} other problem(s)")
    out = [Diagnostic(ERROR, head)]
    for (op, opset), labels in sorted(unsupported.items()):
        shown = ", ".join(labels[:_SHOWN_NODES])
        more = f" and {len(labels) - _SHOWN_NODES} more" if len(labels) > _SHOWN_NODES else ""
        out.append(Diagnostic(ERROR, f"unsupported operator {op} (opset {opset}): "
                                     f"{len(labels)} node(s): {shown}{more}"))
    out.extend(Diagnostic(ERROR, p) for p in problems)
    return out
