"""relay_ref as an ONNX backend: ``onnx.backend.base.Backend``, the interface onnxruntime,
onnx-tf and TVM implement to run ONNX's backend test suite.

``RelayBackend.prepare(model, device="CPU")`` converts the model with ``from_onnx`` and
compiles it with the fast executor (``params=`` binds the weights); the ``RelayRep`` it
returns runs the model: ``rep.run(inputs)`` takes the graph's non-initializer inputs (a
sequence in graph order, a dict by ONNX name, or one array for a one-input graph) and
returns the graph's outputs as a tuple of arrays, in graph order. ``executor="evaluate"``
runs the definitional interpreter instead (the conformance sweep uses it; no kernel
compilation).

Specialisation: Relay is statically shaped, so a value that decides a shape (a
``Reshape`` shape, ``Slice`` starts, ``TopK``'s K: the converters' ``static_inputs``)
must be known when the model is converted. When such a value is a graph input, ``prepare``
only checks the model up front (``survey``: unsupported operators are still reported
there), and ``run`` converts it with those inputs bound to the values given -- embedded
as constants -- once per distinct set of values (cached on the rep); the other inputs stay
parameters. ONNX's node tests feed shapes and axes this way.

Invariants: every failure to import or run a model is an ``rr.RelayError`` (a
``FrontendError`` for unsupported operators, listed up front); there is no fallback to
another runtime; only the CPU device is supported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from onnx.backend.base import Backend, BackendRep

from relay_ref.diagnostics import FrontendError, RelayError, RelayRuntimeError
from relay_ref.frontend.onnx import from_onnx
from relay_ref.frontend.onnx.converter import static_names
from relay_ref.frontend.onnx.load import default_opset, load_model
from relay_ref.frontend.onnx.params import Params
from relay_ref.frontend.onnx.survey import survey

EXECUTORS = ("compile", "evaluate")


class RelayRep(BackendRep):
    """A prepared model: ``run(inputs)`` returns the outputs, in graph order.

    ``input_names`` are the graph's non-initializer inputs (ONNX names, graph order);
    ``output_names`` its outputs; ``static_names`` the inputs whose values the conversion
    reads (empty for most models). ``module`` and ``params`` are what ``from_onnx`` made
    (None when the model is specialised per call; ``specialised`` then holds the
    conversions made so far, by the static inputs' values)."""

    def __init__(self, proto: Any, input_names: tuple[str, ...],
                 output_names: tuple[str, ...], static_names: frozenset[str],
                 executor: str, shapes: dict[str, Any] | None) -> None:
        self.input_names = input_names
        self.output_names = output_names
        self.static_names = static_names
        self.executor = executor
        self.module: Any = None
        self.params: Params | None = None
        self.specialised: dict[tuple, tuple[Any, Params, Any]] = {}
        self._proto = proto
        self._shapes = shapes
        if not static_names:
            self.module, self.params = from_onnx(proto, shapes)
            self._run = _runner(self.module, self.params, executor)

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        if kwargs:
            raise TypeError(f"RelayRep.run: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        args = self._arguments(inputs)
        if self.static_names:
            args, run = self._specialise(args)
        else:
            run = self._run
        value = run(args)
        outs = value if isinstance(value, tuple) else (value,)
        if len(outs) != len(self.output_names):
            raise RelayRuntimeError(f"the model returned {len(outs)} value(s), its graph has "
                                    f"{len(self.output_names)} output(s)")
        return tuple(np.asarray(o) for o in outs)

    def _arguments(self, inputs: Any) -> list[Any]:
        names = self.input_names
        if isinstance(inputs, Mapping):
            unknown = [k for k in inputs if k not in names]
            if unknown:
                raise RelayRuntimeError(f"the model has no input '{unknown[0]}' (inputs: "
                                        f"{', '.join(names) or 'none'})")
            missing = [n for n in names if n not in inputs]
            if missing:
                raise RelayRuntimeError(f"no value given for input '{missing[0]}'")
            return [inputs[n] for n in names]
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if not isinstance(inputs, Sequence):
            raise TypeError(f"RelayRep.run: inputs must be a sequence, a dict or an array, not "
                            f"{type(inputs).__name__}")
        if len(inputs) != len(names):
            raise RelayRuntimeError(f"the model takes {len(names)} input(s), {len(inputs)} "
                                    "given")
        return list(inputs)

    def _specialise(self, args: list[Any]) -> tuple[list[Any], Any]:
        """The runner for these values of the static inputs, and the other arguments."""
        import onnx
        from onnx import numpy_helper

        static = {n: np.asarray(a) for n, a in zip(self.input_names, args, strict=True)
                  if n in self.static_names}
        key = tuple((n, a.dtype.str, a.shape, a.tobytes()) for n, a in static.items())
        rest = [a for n, a in zip(self.input_names, args, strict=True)
                if n not in self.static_names]
        if key not in self.specialised:
            proto = onnx.ModelProto()
            proto.CopyFrom(self._proto)
            graph = proto.graph
            kept = [i for i in graph.input if i.name not in static]
            del graph.input[:]
            graph.input.extend(kept)
            for name, value in static.items():
                try:
                    graph.initializer.append(numpy_helper.from_array(value, name))
                except (TypeError, ValueError, KeyError) as err:
                    raise RelayRuntimeError(f"input '{name}': {err}") from None
            mod, params = from_onnx(proto, self._shapes)
            self.specialised[key] = (mod, params, _runner(mod, params, self.executor))
        return rest, self.specialised[key][2]


def static_inputs(proto: Any, steps: Sequence[Any]) -> frozenset[str]:
    """The graph inputs (not initializers) whose values some node reads at import time,
    directly or through the nodes that compute from them (as ``converter.py`` finds the
    initializers to embed; a ``Shape`` node reads only its input's type)."""
    graph = proto.graph
    inits = {i.name for i in graph.initializer}
    inputs = {i.name for i in graph.input if i.name not in inits}
    return frozenset(static_names(steps) & inputs)


def _runner(module: Any, params: Params, executor: str) -> Any:
    if executor == "compile":
        from relay_ref.executor.compile import compile_module

        exe = compile_module(module, dict(params))
        return lambda args: exe(*args)
    from relay_ref.interpreter.driver import evaluate

    weights = tuple(params.values())
    return lambda args: evaluate(module, *args, *weights)


class RelayBackend(Backend):
    """``onnx.backend.base.Backend`` for relay_ref; every method is a classmethod, as the
    interface wants (``onnx.backend.test.BackendTest(RelayBackend, __name__)`` runs ONNX's
    suite with it)."""

    @classmethod
    def is_compatible(cls, model: Any, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """Only the CPU (``"CPU"``, or ``"CPU:0"`` as onnx's ``Device`` spells it)."""
        return isinstance(device, str) and device.upper().split(":")[0] == "CPU"

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", *, executor: str = "compile",
                shapes: dict[str, Any] | None = None, **kwargs: Any) -> RelayRep:
        """Convert ``model`` (a ``ModelProto`` or a path) and make it runnable on
        ``device``. ``executor``: ``"compile"`` (``rr.compile``, the default) or
        ``"evaluate"`` (the definitional interpreter); ``shapes`` goes to ``from_onnx``."""
        if kwargs:
            raise TypeError(f"prepare: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        if executor not in EXECUTORS:
            raise RelayError(f"prepare: unknown executor {executor!r} (executors: "
                             f"{', '.join(EXECUTORS)})")
        if not cls.supports_device(device):
            raise RelayError(f"prepare: device {device!r} is not supported (only CPU)")
        proto = load_model(model)
        steps = survey(proto, default_opset(proto))  # unsupported ops: said here, up front
        inits = {i.name for i in proto.graph.initializer}
        inputs = tuple(i.name for i in proto.graph.input if i.name not in inits)
        outputs = tuple(o.name for o in proto.graph.output)
        return RelayRep(proto, inputs, outputs, static_inputs(proto, steps), executor, shapes)

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: Any, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple[Any, tuple[int, ...]]] | None = None,
                 **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run one ``NodeProto`` on ``inputs`` (arrays for the node's present inputs, in
        order): the node becomes a one-node model of opset ``opset_version`` (default: the
        newest the installed onnx knows) whose input types are the arrays'."""
        import onnx
        from onnx import helper

        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        arrays = [np.asarray(a) for a in (inputs.values() if isinstance(inputs, Mapping)
                                          else inputs)]
        present = [n for n in node.input if n]
        if len(arrays) != len(present):
            raise RelayRuntimeError(f"run_node: the node has {len(present)} input(s), "
                                    f"{len(arrays)} given")
        try:
            value_infos = [helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                for n, a in zip(present, arrays, strict=True)]
        except (KeyError, TypeError, ValueError) as err:
            raise FrontendError(f"run_node: an input has no ONNX element type ({err})") \
                from None
        outs = [o for o in node.output if o]
        out_infos = [helper.make_empty_tensor_value_info(o) for o in outs]
        if outputs_info is not None:
            out_infos = [helper.make_tensor_value_info(
                o, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), shape)
                for o, (dt, shape) in zip(outs, outputs_info, strict=False)]
        graph = helper.make_graph([node], "run_node", value_infos, out_infos)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", int(opset))])
        return cls.prepare(model, device, **kwargs).run(arrays)


# The module-level functions, as onnxruntime.backend has them.
def prepare(model: Any, device: str = "CPU", **kwargs: Any) -> RelayRep:
    return RelayBackend.prepare(model, device, **kwargs)


def run_model(model: Any, inputs: Any, device: str = "CPU",
              **kwargs: Any) -> tuple[np.ndarray, ...]:
    return RelayBackend.run_model(model, inputs, device, **kwargs)


def run_node(node: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[np.ndarray, ...]:
    return RelayBackend.run_node(node, inputs, device, **kwargs)


def supports_device(device: str) -> bool:
    return RelayBackend.supports_device(device)
