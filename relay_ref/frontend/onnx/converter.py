"""``from_onnx``: an ONNX graph as a Relay ``@main``.

Order of work (each step's failures are ``FrontendError``s):
1. load the model and read its default opset (``load.py``);
2. survey every node up front (``survey.py``): one error lists everything unsupported;
3. make ``@main``'s parameters: the graph's inputs that are not initializers, in graph
   order, then the initializers the graph uses (the weights), in initializer order. An
   initializer is embedded as a constant instead when some node reads it as a value at
   import time, directly or through shape arithmetic (a ``Reshape`` shape, ``Unsqueeze``
   axes: ``Converter.static_inputs``) and it is small (``FOLD_LIMIT`` elements), or when
   ``freeze_params`` is set;
4. convert the nodes in graph order (ONNX requires a topologically sorted graph), each by
   its converter, binding the node's outputs by name; a converter of a node with subgraphs
   (``If``, ``Loop``) converts them through ``NodeContext.subgraph``, in an environment
   that extends the enclosing one (a subgraph reads outer values by name) and is dropped
   afterwards;
5. ``@main`` returns the graph's output, or a tuple of its outputs.

The result is graph-form Relay (shared subexpressions are DAG edges; the printer writes
them as ``%0 = ...`` bindings, as TVM's frontend output reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relay_ref.diagnostics import FrontendError
from relay_ref.frontend.onnx.builder import FOLD_LIMIT, Builder, ConvertError
from relay_ref.frontend.onnx.context import NodeContext
from relay_ref.frontend.onnx.dtypes import relay_dtype
from relay_ref.frontend.onnx.load import default_opset, load_model
from relay_ref.frontend.onnx.names import NameTable
from relay_ref.frontend.onnx.params import Params
from relay_ref.frontend.onnx.signature import mismatch
from relay_ref.frontend.onnx.survey import Step, all_steps, node_label, survey
from relay_ref.ir.expr import Expr, Function, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.shape import sym
from relay_ref.ir.types import ANY, Dim, TensorType
from relay_ref.ops.registry import AttrError, OpRuntimeError, RelationError


def from_onnx(model: Any, shapes: dict[str, Any] | None = None, *,
              freeze_params: bool = False) -> tuple[IRModule, Params]:
    """Convert an ONNX model (a ``ModelProto`` or a path) to ``(IRModule, params)``.

    ``shapes`` fixes input dimensions: a key naming a graph input gives its whole shape (a
    sequence of ints, None keeping a dim as the model declares it), a key naming a symbolic
    dimension (``dim_param``, e.g. ``"batch"``) gives that symbol's value everywhere.
    Symbolic dims not fixed become shape variables (``"batch_size"`` -> ``batch_size``,
    sanitised to an identifier: ``names.DimTable``; the same ``dim_param`` in two inputs is
    one variable), so ``@main`` is a function over them (T-ShapeScope, spec/typing.md 5.2);
    a dim with neither a value nor a ``dim_param`` becomes ``?``. ``params`` maps parameter
    names to arrays (it also answers to the ONNX names; ``params.relay_names`` is the mapping); with
    ``freeze_params`` the weights are constants in the module and ``params`` is empty."""
    if shapes is not None and not isinstance(shapes, dict):
        raise TypeError(f"from_onnx: shapes must be a dict, not {type(shapes).__name__}")
    proto = load_model(model)
    opset = default_opset(proto)
    steps = survey(proto, opset)
    return _Converter(proto.graph, steps, shapes or {}, freeze_params).run()


def shapes_error(template: str, key: str, value: Any = None) -> FrontendError:
    """A ``FrontendError`` about the ``shapes`` entry ``key`` (given ``value``), in the
    Python API's words: ``template``'s ``{entry}`` reads ``shapes['key']`` and ``{fix}``
    ``shapes={'key': (...)}`` (replaced, not ``str.format``: a value's repr may hold
    braces). The error keeps ``shapes_words = (template, key, value)`` so that a caller
    with other words for the entry (``relay import``: ``--shape key=DIMS``) can say it in
    those."""
    err = FrontendError("from_onnx: " + template.replace("{entry}", f"shapes['{key}']")
                        .replace("{fix}", f"shapes={{'{key}': (...)}}"))
    err.shapes_words = (template, key, value)  # type: ignore[attr-defined]
    return err


class _Converter:
    """One conversion: the builder, the name tables, and the environment from ONNX value
    names to Relay expressions."""

    def __init__(self, graph: Any, steps: list[Step], shapes: dict[str, Any],
                 freeze: bool) -> None:
        self.graph = graph
        self.steps = steps
        self.shapes = shapes
        self.freeze = freeze
        self.builder = Builder()
        self.names = NameTable()
        self.env: dict[str, Expr] = {}

    def run(self) -> tuple[IRModule, Params]:
        from onnx import numpy_helper

        inits = {i.name: i for i in self.graph.initializer}
        used = {n for step in all_steps(self.steps) for n in step.node.input if n}
        used |= {o.name for step in all_steps(self.steps) for sub in step.subgraphs
                 for o in step.attrs[sub].output}  # type: ignore[attr-defined]
        used |= {o.name for o in self.graph.output}
        static = self._static_names()
        self._check_shapes_keys(inits)

        # valid identifiers keep their names: a sanitised name never takes one of them
        self.names.reserve([i.name for i in self.graph.input] + list(inits))
        self.builder.dim_names.reserve([d.dim_param for i in self.graph.input
                                        if i.name not in inits
                                        for d in i.type.tensor_type.shape.dim
                                        if d.HasField("dim_param")])
        params: list[Var] = []
        for inp in self.graph.input:
            if inp.name not in inits:
                v = self.builder.var(self.names.relay_name(inp.name), self._input_type(inp))
                self.env[inp.name] = v
                params.append(v)
        weights: dict[str, np.ndarray] = {}
        for name, init in inits.items():
            if name not in used:
                continue
            try:
                array = numpy_helper.to_array(init)
            except Exception as err:  # noqa: BLE001 - onnx's errors (external data missing)
                external = init.data_location == init.EXTERNAL
                hint = ("; a model with external data must be loaded with its data files"
                        if external else "; its data do not fit its dims and type")
                raise FrontendError(f"from_onnx: initializer '{name}' cannot be read "
                                    f"({type(err).__name__}: {err}){hint}") from None
            if self.freeze or (name in static and array.size <= FOLD_LIMIT):
                self.env[name] = self.builder.const(array)
                continue
            relay = self.names.relay_name(name)
            v = self.builder.var(relay, TensorType(tuple(int(d) for d in array.shape),
                                                   relay_dtype(init.data_type) or ""))
            self.env[name] = v
            params.append(v)
            weights[relay] = array

        for step in self.steps:
            self._convert(step)
        outs = [self._lookup(o.name, "graph output") for o in self.graph.output]
        body = outs[0] if len(outs) == 1 else self.builder.tuple(*outs)
        main = Function(tuple(params), body)
        return IRModule({"main": main}), Params(weights, self.names.forward)

    def _shape_hint(self, message: str) -> str:
        """A hint for a failure that a model with symbolic input dimensions may owe to
        them (a static shape needed somewhere), unless the message gives one already."""
        symbolic = [i.name for i in self.graph.input
                    if any(not d.HasField("dim_value") for d in
                           i.type.tensor_type.shape.dim)]
        if not symbolic or "shapes=" in message:
            return ""
        return (f" (the model's inputs {', '.join(repr(n) for n in symbolic[:4])} have "
                "symbolic dimensions: fixing them with from_onnx(..., shapes={...}) or "
                "`relay import --shape NAME=DIMS` may help)")

    def _static_names(self) -> set[str]:
        """The values some node reads at import time, and everything they are computed
        from (a Reshape shape made by Concat of a Gather of Shape: the Gather's index
        initializer must be a constant too)."""
        return static_names(all_steps(self.steps))

    # -- inputs ---------------------------------------------------------------------------
    def _input_type(self, inp: Any) -> TensorType:
        tt = inp.type.tensor_type
        dtype = relay_dtype(tt.elem_type) or ""
        if not tt.HasField("shape") and inp.name not in self.shapes:
            raise shapes_error(f"graph input '{inp.name}' has no shape; give it with {{fix}}",
                               inp.name)
        dims: list[Dim] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value >= 0:
                dims.append(int(d.dim_value))
            elif d.HasField("dim_param") and _dim(self.shapes.get(d.dim_param)) is not None:
                dims.append(int(self.shapes[d.dim_param]))
            elif d.HasField("dim_param") and d.dim_param:
                dims.append(sym(self.builder.dim_names.dim_name(d.dim_param)))
            else:
                dims.append(ANY)
        given = self.shapes.get(inp.name)
        if given is not None:
            dims = self._fix_dims(inp.name, dims, given, tt.HasField("shape"))
        return TensorType(tuple(dims), dtype)

    def _fix_dims(self, name: str, dims: list[Dim], given: Any, declared: bool) -> list[Dim]:
        """``dims`` with the dims ``given`` for input ``name`` (a list, tuple or 1-d array
        of non-negative ints or None); a float, a bool or a string is refused, never
        truncated or read character by character."""
        if isinstance(given, str | bytes) or not (
                isinstance(given, list | tuple) or
                isinstance(given, np.ndarray) and given.ndim == 1):
            raise shapes_error(f"{{entry}} must be a sequence of ints (None for a dim left "
                               f"as declared), not {given!r}", name, given)
        wanted: list[int | None] = []
        for i, g in enumerate(given):
            if g is not None and _dim(g) is None:
                raise shapes_error(f"{{entry}} gives dim {i} as {g!r}; a dim is a "
                                   "non-negative int (or None for a dim left as declared)",
                                   name, given)
            wanted.append(None if g is None else int(g))
        if not declared:
            dims = [ANY] * len(wanted)
        if len(wanted) != len(dims):
            raise shapes_error(f"{{entry}} has {len(wanted)} dims, the graph input has "
                               f"{len(dims)}", name, given)
        out: list[Dim] = []
        for i, (d, g) in enumerate(zip(dims, wanted, strict=True)):
            if g is not None and isinstance(d, int) and d != g:
                raise shapes_error(f"{{entry}} gives dim {i} as {g}, the model fixes it to "
                                   f"{d}", name, given)
            out.append(d if g is None else g)
        return out

    def _check_shapes_keys(self, inits: dict[str, Any]) -> None:
        inputs = {i.name for i in self.graph.input if i.name not in inits}
        symbols = {d.dim_param for i in self.graph.input
                   for d in i.type.tensor_type.shape.dim if d.HasField("dim_param")}
        for key, value in self.shapes.items():
            if key in inputs:
                continue
            if key in symbols:
                if _dim(value) is None:
                    raise shapes_error(f"{{entry}} (a symbolic dim) must be a non-negative "
                                       f"int, not {value!r}", key, value)
                continue
            raise shapes_error(f"{{entry}} names neither a graph input nor a symbolic dim "
                               f"(inputs: {', '.join(sorted(inputs))})", key, value)

    # -- nodes ----------------------------------------------------------------------------
    def _lookup(self, name: str, user: str) -> Expr:
        try:
            return self.env[name]
        except KeyError:
            raise FrontendError(f"from_onnx: {user} reads '{name}', which no earlier node, "
                                "graph input or initializer defines (is the graph "
                                "topologically sorted?)") from None

    def _convert(self, step: Step) -> None:
        node = step.node
        where = f"{node.op_type}-{step.version} node {node_label(node)}"
        inputs = tuple(self._lookup(n, where) if n else None for n in node.input)
        types = [None if x is None else self.builder.type_of(x) for x in inputs]
        problem = mismatch(node.op_type, step.version,
                           [t.dtype if isinstance(t, TensorType) else None for t in types])
        if problem is not None:
            raise FrontendError(f"from_onnx: {where}: {problem}")
        ctx = NodeContext(node, step.version, self.builder, inputs, step.attrs,
                          lambda attr, values: self._subgraph(step, attr, values))
        try:
            result = step.converter.convert(ctx)
        except ConvertError as err:
            raise FrontendError(f"from_onnx: {where}: {err}{self._shape_hint(str(err))}") \
                from None
        except (AttrError, RelationError, OpRuntimeError, ValueError, TypeError,
                IndexError, KeyError) as err:  # a model the converter did not foresee
            raise FrontendError(f"from_onnx: {where}: cannot convert "
                                f"({type(err).__name__}: {err})"
                                f"{self._shape_hint(str(err))}") from None
        outs = [result] if isinstance(result, Expr) else list(result)  # type: ignore[arg-type]
        for i, name in enumerate(node.output):
            if not name:
                continue
            if i >= len(outs) or outs[i] is None:
                raise FrontendError(f"from_onnx: {where}: output {i} ('{name}') is not "
                                    "supported")
            self.env[name] = outs[i]

    def _subgraph(self, step: Step, attr: str, values: Sequence[Expr]) -> list[Expr]:
        """Convert the subgraph of ``step``'s attribute ``attr`` with its inputs bound to
        ``values``; its initializers become constants. The enclosing environment is
        restored afterwards, so the subgraph's names never leak out."""
        from onnx import numpy_helper

        graph = step.attrs[attr]
        if len(values) != len(graph.input):  # type: ignore[attr-defined]
            raise ConvertError(f"{attr} has {len(graph.input)} inputs, "  # type: ignore
                               f"the node gives it {len(values)}")
        saved = self.env
        self.env = dict(saved)
        try:
            for inp, value in zip(graph.input, values, strict=True):  # type: ignore
                self.env[inp.name] = value
            for init in graph.initializer:  # type: ignore[attr-defined]
                self.env[init.name] = self.builder.const(numpy_helper.to_array(init))
            for sub in step.subgraphs[attr]:
                self._convert(sub)
            return [self._lookup(o.name, f"{attr} output")
                    for o in graph.output]  # type: ignore[attr-defined]
        finally:
            self.env = saved


def _dim(value: object) -> int | None:
    """``value`` as a dimension: a non-negative int (a NumPy integer too), else None (a
    bool, a float even when whole, a negative number, anything else)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        return None
    return int(value) if value >= 0 else None


def static_names(steps: Sequence[Any]) -> set[str]:
    """The value names the converters of ``steps`` read at import time (their
    ``static_inputs``) and, transitively, every value those are computed from; a ``Shape``
    node reads only its input's type, so the walk stops there."""
    producer = {o: step.node for step in steps for o in step.node.output if o}
    todo = [step.node.input[i] for step in steps
            for i in step.converter.static_inputs if i < len(step.node.input)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if not name or name in seen:
            continue
        seen.add(name)
        node = producer.get(name)
        if node is not None and node.op_type != "Shape":  # Shape reads only a type
            todo.extend(node.input)
    return seen
