"""Is the graph well formed? The structural rules of ONNX's IR that onnx.checker and
onnxruntime enforce and that conversion would otherwise get wrong silently (a second
writer of a name replacing the first, a negative dimension read as a positive one).

Refused, all problems in one ``FrontendError``, each naming the node, input or
initializer:

* a graph input name given twice, or an initializer name given twice;
* an initializer with a negative dimension;
* a name defined twice (single static assignment): two nodes writing one output, a node
  writing one name twice, or writing a graph input, an initializer or, inside a subgraph,
  a name the enclosing graphs define before the node that holds it.

Subgraphs (``If`` branches, ``Loop`` and ``Scan`` bodies) are checked the same way; their
inputs may shadow names of the enclosing graphs, as ONNX allows. A node input or a graph
output that nothing defines is refused where it is read, by the converter (it names the
node, and says when the graph is not topologically sorted).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping
from typing import Any

from relay_ref.diagnostics import ERROR, Diagnostic, FrontendError


def check_graph(graph: Any) -> None:
    """Raise one ``FrontendError`` listing every structural problem of ``graph`` (an
    ``onnx.GraphProto``) and its subgraphs; return when there is none."""
    problems: list[str] = []
    _check(graph, {}, "", problems)
    if problems:
        head = f"the model is not a valid ONNX graph: {len(problems)} problem(s)"
        raise FrontendError([Diagnostic(ERROR, head),
                             *(Diagnostic(ERROR, p) for p in problems)])


def _check(graph: Any, outer: Mapping[str, str], where: str, problems: list[str]) -> None:
    """Append ``graph``'s problems to ``problems``; ``outer`` maps each name the enclosing
    graphs define at this point to what defines it; ``where`` prefixes the messages of a
    subgraph (``"If node 'n': then_branch: "``)."""
    from onnx import AttributeProto

    mine: dict[str, str] = {}  # name -> what defines it, in this graph
    defined = ChainMap(mine, outer)  # the names in scope: inner ones first
    for inp in graph.input:
        if inp.name in mine:
            problems.append(f"{where}graph input '{inp.name}' is given twice")
        mine[inp.name] = f"graph input '{inp.name}'"
    inits: set[str] = set()
    for init in graph.initializer:
        if init.name in inits:
            problems.append(f"{where}initializer '{init.name}' is given twice")
        inits.add(init.name)
        mine[init.name] = f"initializer '{init.name}'"
        if any(d < 0 for d in init.dims):
            problems.append(f"{where}initializer '{init.name}' has a negative dimension "
                            f"(dims {list(init.dims)})")
    for node in graph.node:
        label = f"{node.op_type} node {_label(node)}"
        for attr in node.attribute:  # a subgraph sees what is defined before its node
            subs = [attr.g] if attr.type == AttributeProto.GRAPH else \
                list(attr.graphs) if attr.type == AttributeProto.GRAPHS else []
            for sub in subs:
                _check(sub, defined, f"{where}{label}: {attr.name}: ", problems)
        for name in node.output:
            if not name:
                continue
            if name in defined:
                first = mine.get(name) or f"{outer[name]} of an enclosing graph"
                problems.append(f"{where}{label} writes '{name}', which {first} already "
                                "defines (a name is assigned once)")
            else:
                mine[name] = label


def _label(node: Any) -> str:
    name = node.name or (node.output[0] if node.output else "")
    return f"'{name}'" if name else "(unnamed)"
