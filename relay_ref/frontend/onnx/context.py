"""What a converter sees of one ONNX node: its attributes, its converted inputs, and the
builder to make Relay calls with (``registry.py`` states the converter protocol).

Invariants: ``inputs[i]`` is None exactly when ONNX input ``i`` is absent (missing or
named ``""``: an omitted optional input); ``attrs`` holds Python values (ints, floats,
strs, lists of those, NumPy arrays for tensors, ``GraphProto``s for graphs). A check
function (``Converter.check``) is given a context whose ``inputs`` are all None: it may
read attributes only. ``subgraph(attr, inputs)`` converts the graph held by attribute
``attr`` (an ``If`` branch, a ``Loop`` body) with its inputs bound to ``inputs`` and the
enclosing graphs' values in scope, and returns its outputs; it is None in a check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from relay_ref.frontend.onnx.builder import Builder, ConvertError
from relay_ref.ir.expr import Expr
from relay_ref.ir.shape import SymDim, sym
from relay_ref.ir.types import Dim, TensorType


@dataclass(slots=True)
class NodeContext:
    node: Any  # onnx.NodeProto
    version: int  # the op's version (the schema's since_version), not the model's opset
    builder: Builder
    inputs: tuple[Expr | None, ...]
    attrs: dict[str, object]
    subgraph: Callable[[str, Sequence[Expr]], list[Expr]] | None = None

    @property
    def name(self) -> str:
        return self.node.name or (self.node.output[0] if self.node.output else "")

    @property
    def num_outputs(self) -> int:
        """How many outputs the model names (trailing omitted ones not counted)."""
        names = list(self.node.output)
        while names and not names[-1]:
            names.pop()
        return len(names)

    def attr(self, key: str, default: object = None) -> Any:
        return self.attrs.get(key, default)

    def input(self, i: int) -> Expr | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def need(self, i: int) -> Expr:
        x = self.input(i)
        if x is None:
            raise ConvertError(f"input {i} is required")
        return x

    def static(self, i: int, what: str = "") -> np.ndarray | None:
        """The value of input ``i`` at import time (None when the input is absent);
        raises ``ConvertError`` when it is not computed from constants alone."""
        x = self.input(i)
        if x is None:
            return None
        value = self.builder.static(x)
        if not isinstance(value, np.ndarray):
            raise ConvertError(f"input {i}{' (' + what + ')' if what else ''} must be a "
                               "constant or computed from constants (an initializer, a "
                               "Constant node, or shape arithmetic on static shapes)")
        return value

    def static_ints(self, i: int, what: str = "") -> list[int] | None:
        value = self.static(i, what)
        return None if value is None else [int(v) for v in value.reshape(-1)]

    # -- types of inputs ------------------------------------------------------------------
    def type(self, i: int) -> TensorType:
        return self.builder.tensor_type(self.need(i))

    def shape(self, i: int) -> tuple[Dim, ...]:
        return self.type(i).shape

    def static_shape(self, i: int, what: str = "") -> tuple[int, ...]:
        ty = self.type(i)
        if not ty.is_static:
            raise ConvertError(f"{what or f'input {i}'} needs a static shape, found "
                               f"{_shape_text(ty.shape)} (give `shapes=` to fix the input "
                               "dims)")
        return tuple(int(d) for d in ty.shape)  # type: ignore[arg-type]

    def rank(self, i: int) -> int:
        return len(self.type(i).shape)

    def dtype(self, i: int) -> str:
        return self.type(i).dtype

    # -- building -------------------------------------------------------------------------
    def call(self, op_name: str, *args: Expr, **attrs: object) -> Expr:
        return self.builder.call(op_name, *args, **attrs)

    def const(self, value: object, dtype: str | None = None) -> Expr:
        return self.builder.const(value, dtype)

    def scalar(self, value: object, like: int | str = 0) -> Expr:
        """A 0-d constant of input ``like``'s dtype (or the dtype named)."""
        dtype = like if isinstance(like, str) else self.dtype(like)
        return self.builder.const(np.array(value, dtype=dtype))


def _shape_text(shape: tuple[Dim, ...]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def axis_of(ctx: NodeContext, axis: int, rank: int) -> int:
    """``axis`` in [0, rank) (ONNX allows [-rank, rank)); ``ConvertError`` otherwise."""
    if not -rank <= axis < rank:
        raise ConvertError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def match_cast(ctx: NodeContext, value: Expr, target: TensorType) -> Expr:
    """``match_cast(value, target)`` (Shape-MatchCast, spec/typing.md 5.2): ``value``'s
    type refined to ``target``, checked at run time. Its type in the builder is
    ``target``."""
    return ctx.call("match_cast", value, type=target)


def fresh_dim(ctx: NodeContext, base: str) -> SymDim:
    """A shape variable not used so far in this conversion (``k``, ``k_1`` ...): the size
    of a data-dependent output, bound by the ``match_cast`` that follows the op."""
    return sym(ctx.builder.dim_names.fresh(base))
