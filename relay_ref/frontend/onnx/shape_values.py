"""Known symbolic shape values: what the importer knows at import time about integer
tensors computed from shapes that mention shape variables.

A model exported with a dynamic batch computes its ``Reshape`` shapes at run time
(PyTorch's ``x.view(x.size(0), -1)``: ``Shape -> Gather -> Unsqueeze -> Concat ->
Reshape``). With a static input shape the builder folds that arithmetic to a constant;
with a symbolic one (``(n, 3, 224, 224)``) the ``Shape`` is a ``shape_of`` call whose
value the importer still knows *symbolically*: ``[n, 3, 224, 224]``. This module tracks
such values, as NumPy ``object`` arrays whose elements are dimensions (``int``, ``SymDim``
or ``?``), through the calls the shape arithmetic is made of, so that ``Reshape`` can
make a static ``newshape`` (``[0, -1]``) and keep ``n`` in the result type. No IR is
invented: the Relay expressions stay what they are (``shape_of``, ``take`` ...); this is
metadata beside them, like the builder's folded values.

Invariants: a recorded value has exactly the shape of the expression's type and is what
the expression evaluates to at run time once the shape variables have their values
(each rule below is the op's own semantics on dimensions); only integer tensors of at
most ``FOLD_LIMIT`` elements with at least one non-number element are recorded (values
made of numbers only are the builder's static values); an op outside ``_RULES``, or one
whose inputs are not all known, gives no value.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relay_ref.ir.expr import Expr, Tuple
from relay_ref.ir.shape import ANY, UndecidableDim, floordiv, shape_prod
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.registry import OpRuntimeError, get_op

_LIMIT = 1024  # elements, as the builder's FOLD_LIMIT


def as_dims(value: np.ndarray) -> np.ndarray:
    """An integer array as an object array of Python ints."""
    out = np.empty(value.shape, dtype=object)
    for i, v in np.ndenumerate(value):
        out[i] = int(v)
    return out


def is_symbolic_value(value: np.ndarray) -> bool:
    return any(not isinstance(v, int) for v in value.flat)


def _move(op_name: str) -> Callable[[list[np.ndarray], list[object], object], np.ndarray]:
    """The rule of an op that moves its first argument's elements (its other arguments are
    static: ``take``'s indices)."""
    def rule(values: list[np.ndarray], statics: list[object], attrs: object) -> np.ndarray:
        data = values[0]
        positions = np.arange(data.size, dtype=np.int64).reshape(data.shape)
        args = [positions, *statics[1:]]
        moved = np.asarray(get_op(op_name).reference(args, attrs))
        return _gather(data, moved)
    return rule


def _gather(flat_source: np.ndarray, positions: np.ndarray) -> np.ndarray:
    src = flat_source.reshape(-1)
    out = np.empty(positions.shape, dtype=object)
    for i, p in np.ndenumerate(positions):
        out[i] = src[int(p)]
    return out


def _concatenate(values: list[np.ndarray], statics: list[object], attrs: object) -> np.ndarray:
    parts = values[0]  # a tuple's fields (see ``known``)
    flat = np.concatenate([p.reshape(-1) for p in parts])
    start = 0
    positions = []
    for p in parts:
        positions.append(np.arange(start, start + p.size, dtype=np.int64).reshape(p.shape))
        start += p.size
    moved = np.asarray(get_op("concatenate").reference([tuple(positions)], attrs))
    return _gather(flat, moved)


def _elementwise(fn: Callable[[object, object], object]) -> Callable[..., np.ndarray]:
    def rule(values: list[np.ndarray], statics: list[object], attrs: object) -> np.ndarray:
        a, b = np.broadcast_arrays(values[0], values[1])
        out = np.empty(a.shape, dtype=object)
        for i in np.ndindex(a.shape):
            x, y = a[i], b[i]
            out[i] = ANY if x is ANY or y is ANY else fn(x, y)
        return out
    return rule


def _divide(x: object, y: object) -> object:
    """Integer division of dimensions: floor division when the divisor is a positive
    number and the dividend not a negative one (truncation, ONNX's, then agrees);
    otherwise unknown."""
    if isinstance(y, int) and y > 0 and not (isinstance(x, int) and x < 0):
        return floordiv(x, y)  # type: ignore[arg-type]
    raise UndecidableDim("a division by a symbolic or non-positive divisor")


def _identity(values: list[np.ndarray], statics: list[object], attrs: object) -> np.ndarray:
    return values[0]


_RULES: dict[str, Callable[[list[np.ndarray], list[object], object], np.ndarray]] = {
    "take": _move("take"),
    "strided_slice": _move("strided_slice"),
    "expand_dims": _move("expand_dims"),
    "squeeze": _move("squeeze"),
    "reshape": _move("reshape"),
    "transpose": _move("transpose"),
    "concatenate": _concatenate,
    "cast": _identity,  # to an integer type (checked in ``propagate``)
    "add": _elementwise(lambda x, y: x + y),  # type: ignore[operator]
    "subtract": _elementwise(lambda x, y: x - y),  # type: ignore[operator]
    "multiply": _elementwise(lambda x, y: x * y),  # type: ignore[operator]
    "divide": _elementwise(_divide),
    "floor_divide": _elementwise(_divide),
}


def shape_value(ty: Type) -> np.ndarray | None:
    """The value of ``shape_of(x)`` for ``x`` of type ``ty``, when it mentions a shape
    variable or ``?`` (None for a static shape: the builder folds that to a constant)."""
    if not isinstance(ty, TensorType) or all(isinstance(d, int) for d in ty.shape):
        return None
    out = np.empty(len(ty.shape), dtype=object)
    for i, d in enumerate(ty.shape):
        out[i] = d
    return out


def propagate(op_name: str, args: list[Expr], arg_types: list[Type], attrs: object,
              result: Type,
              known: Callable[[Expr], np.ndarray | None],
              static: Callable[[Expr], object]) -> np.ndarray | None:
    """The symbolic value of ``op_name(args)`` (of type ``result``), or None. ``known(e)``
    gives an argument's dimension array (symbolic or numbers), ``static(e)`` its constant
    value (``take``'s indices must be constants)."""
    if not isinstance(result, TensorType) or not result.dtype.startswith(("int", "uint")):
        return None  # a cast to float (or a bool result) leaves dimensions
    if not all(isinstance(d, int) for d in result.shape) or \
            int(np.prod(result.shape, dtype=np.int64)) > _LIMIT:  # type: ignore[arg-type]
        return None
    if op_name == "shape_of":
        return shape_value(arg_types[0])
    if op_name == "ndarray_size":  # ONNX Size: the product of the dims
        ty = arg_types[0]
        if not isinstance(ty, TensorType) or all(isinstance(d, int) for d in ty.shape):
            return None
        out = np.empty((), dtype=object)
        out[()] = shape_prod(ty.shape)
        return out if is_symbolic_value(out) else None
    rule = _RULES.get(op_name)
    if rule is None or not args:
        return None
    if op_name == "concatenate":
        fields = args[0].fields if isinstance(args[0], Tuple) else None
        if fields is None:
            return None
        parts = [known(f) for f in fields]
        if any(p is None for p in parts):
            return None
        values: list[np.ndarray] = [parts]  # type: ignore[list-item]
        statics: list[object] = [None]
    else:
        first = known(args[0])
        if first is None:
            return None
        values = [first]
        statics = [None]
        for a in args[1:]:
            k = known(a)
            if k is None:
                return None
            values.append(k)
            statics.append(static(a))
        if op_name == "take" and not isinstance(statics[1], np.ndarray):
            return None
    try:
        out = rule(values, statics, attrs)
    except (UndecidableDim, OpRuntimeError, TypeError, ValueError, IndexError):
        return None  # not known: the converters then need a static value, as before
    out = np.asarray(out, dtype=object).reshape(tuple(result.shape))  # type: ignore[arg-type]
    return out if is_symbolic_value(out) else None
