"""Building Relay expressions with their types known as they are built.

The converter needs shapes while it converts (``Flatten`` needs the rank, ``Shape`` becomes
a constant when the shape is static, ``Softmax``-1 reshapes to 2-D), and the frontend may
not use the type checker (DESIGN.md section 2: it sees only ``ops``, ``ir`` and
``diagnostics``). So the builder runs each operator's own type relation as the call is
made: ``types[expr]`` is the type the checker would infer for ``expr``.

Constant folding, two kinds:
* eager: a call whose arguments are all constants and whose result is a small integer or
  boolean tensor (at most ``FOLD_LIMIT`` elements: shape arithmetic) is replaced by its
  value (the op's NumPy reference), which keeps shape arithmetic out of the printed
  model; float results are data (weights made by ``ConstantOfShape``) and stay calls;
* on demand: ``static(expr)`` evaluates an expression built from constants only (a
  ``Reshape`` shape computed by ``Shape -> Gather -> Concat``) with the same references.

Shape arithmetic on symbolic shapes (``Shape`` of a ``(n, 3, 224, 224)`` input) cannot be
folded; its value is known symbolically instead (``shape_values.py``):
``known_dims(expr)`` is ``[n, 3, 224, 224]`` for that ``shape_of`` and for what
``take`` / ``concatenate`` / ``expand_dims`` ... make of it.

Invariants: every expression the builder returns has an entry in ``types``; folding
never changes a value (the references are the semantics).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from relay_ref.frontend.onnx import shape_values
from relay_ref.frontend.onnx.names import DimTable
from relay_ref.ir.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.registry import (
    NOT_YET,
    AttrError,
    OpRuntimeError,
    RelationError,
    get_op,
    make_attrs,
)

FOLD_LIMIT = 1024  # elements: calls on constants with results this small are folded


class ConvertError(Exception):
    """A node cannot be converted (bad attributes, shapes that do not fit, a value that
    must be static and is not); the converter adds the node's name and opset."""


@dataclass(eq=False, slots=True)
class Builder:
    """Makes calls, constants and tuples; records their types (identity-keyed)."""

    types: dict[Expr, Type] = field(default_factory=dict)
    _values: dict[Expr, object] = field(default_factory=dict)
    _dims: dict[Expr, object] = field(default_factory=dict)  # symbolic shape values
    dim_names: DimTable = field(default_factory=DimTable)  # the shape variables' names

    # -- leaves ---------------------------------------------------------------------------
    def var(self, name: str, ty: TensorType) -> Var:
        v = Var(name, ty)
        self.types[v] = ty
        return v

    def const(self, value: object, dtype: str | None = None) -> Constant:
        """A constant holding ``value`` (converted with ``np.asarray``; ``dtype`` casts)."""
        arr = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
        if arr.dtype == np.dtype(object) or arr.dtype.kind in "USOcV":
            raise ConvertError(f"a constant of type {arr.dtype} is not supported")
        arr.setflags(write=False)
        c = Constant(arr)
        self.types[c] = TensorType(tuple(int(d) for d in arr.shape), arr.dtype.name)
        self._values[c] = arr
        return c

    # -- compound -------------------------------------------------------------------------
    def call(self, op_name: str, *args: Expr, **attrs: object) -> Expr:
        """``op_name(args, attrs)`` with its type computed by the op's relation; folded to a
        constant when every argument is one and the result is small shape arithmetic."""
        op = get_op(op_name)
        try:
            attr_obj = make_attrs(op_name, attrs)  # as the parser makes them: never None
        except AttrError as err:
            raise ConvertError(f"{op_name}: {err}") from None
        arg_types = [self.type_of(a) for a in args]
        try:
            ty = op.relation(arg_types, attr_obj)
        except RelationError as err:
            raise ConvertError(str(err)) from None
        if ty is NOT_YET:  # only holes make a relation wait; the builder has none
            raise ConvertError(f"{op_name}: the argument types do not determine the result")
        expr = Call(Op(op_name), tuple(args), attr_obj)
        self.types[expr] = ty
        if _small(ty) and all(self._is_const(a) for a in args):
            value = self.static(expr)
            if isinstance(value, np.ndarray):
                return self.const(value, ty.dtype)  # type: ignore[union-attr]
        dims = shape_values.propagate(op_name, list(args), arg_types, attr_obj, ty,
                                      self.known_dims, self.static)
        if dims is not None:
            self._dims[expr] = dims
        return expr

    def tuple(self, *fields: Expr) -> Tuple:
        t = Tuple(tuple(fields))
        self.types[t] = TupleType(tuple(self.type_of(f) for f in fields))
        return t

    def item(self, tup: Expr, index: int) -> Expr:
        """``tup.index``; a literal tuple's field is returned as it is."""
        if isinstance(tup, Tuple):
            return tup.fields[index]
        ty = self.type_of(tup)
        assert isinstance(ty, TupleType)
        expr = TupleGetItem(tup, index)
        self.types[expr] = ty.fields[index]
        return expr

    # -- queries --------------------------------------------------------------------------
    def type_of(self, expr: Expr) -> Type:
        return self.types[expr]

    def tensor_type(self, expr: Expr) -> TensorType:
        ty = self.types[expr]
        if not isinstance(ty, TensorType):
            raise ConvertError("expected a tensor, found a tuple")
        return ty

    def static(self, expr: Expr) -> object | None:
        """The value of ``expr`` when it is computed from constants only (an array, or a
        tuple of them), else None. Iterative, memoised by node identity."""
        if expr in self._values:
            return self._values[expr]
        stack = [expr]
        while stack:
            node = stack[-1]
            if node in self._values:
                stack.pop()
                continue
            kids = _children(node)
            if kids is None:  # a variable or a node kind that is never static
                self._values[node] = None
                stack.pop()
                continue
            todo = [k for k in kids if k not in self._values]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            values = [self._values[k] for k in kids]
            self._values[node] = None if any(v is None for v in values) else \
                _evaluate(node, values)
        return self._values[expr]

    def known_dims(self, expr: Expr) -> np.ndarray | None:
        """The value of the integer tensor ``expr`` as an object array of dimensions (ints,
        ``SymDim``s, ``?``) when the importer knows it: a constant's numbers, or a symbolic
        shape value (``shape_values.py``); else None."""
        if expr in self._dims:
            return self._dims[expr]  # type: ignore[return-value]
        if isinstance(expr, Tuple):
            return None
        value = self.static(expr)
        if isinstance(value, np.ndarray) and value.dtype.kind in "iu" and \
                value.size <= FOLD_LIMIT:
            return shape_values.as_dims(value)
        return None

    def _is_const(self, expr: Expr) -> bool:
        if isinstance(expr, Constant):
            return True
        if isinstance(expr, Tuple):
            return all(isinstance(f, Constant) for f in expr.fields)
        return False


def _small(ty: Type) -> bool:
    if not isinstance(ty, TensorType) or not ty.is_static:
        return False
    if not ty.dtype.startswith(("int", "uint", "bool")):
        return False
    return int(np.prod(ty.shape, dtype=np.int64)) <= FOLD_LIMIT


def _children(node: Expr) -> list[Expr] | None:
    match node:
        case Call(Op(), args):
            return list(args)
        case Tuple(fields):
            return list(fields)
        case TupleGetItem(tup, _):
            return [tup]
        case _:
            return None


def _evaluate(node: Expr, values: list[object]) -> object:
    match node:
        case Call(Op(name), _, attrs):
            try:
                out = get_op(name).reference(values, attrs)
            except (OpRuntimeError, ValueError, IndexError) as err:
                raise ConvertError(f"{name} fails on constant arguments: {err}") from None
            return out
        case Tuple():
            return tuple(values)
        case TupleGetItem(_, index):
            return values[0][index]  # type: ignore[index]
    return None
