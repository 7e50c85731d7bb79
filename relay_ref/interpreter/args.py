"""Host arguments as Relay values: the one argument rule (spec/semantics.md 4.1, A-*).

Every entry point that takes values from Python or the command line (``rr.evaluate``, the
free variables of an evaluated expression, ``relay run``'s literal arguments) turns them into
Relay values with ``convert_argument(arg, ty, module)``, against the parameter's type ``ty``:

* **A-Int** a Python ``int`` goes to any tensor dtype that holds it exactly: an integer
  dtype whose range contains it, a float dtype in which it is represented without rounding
  (``3`` -> ``3f``; ``2**24 + 1`` is no ``float32``). Never to ``bool``.
* **A-Bool** a Python ``bool`` goes to ``bool`` only.
* **A-Float** a Python ``float`` goes to float dtypes only (rounded to the dtype's
  precision, but not overflowing to infinity); never to an integer dtype.
* **A-Array** an ``np.ndarray`` or NumPy scalar must already have the parameter's dtype and
  shape (``?`` matches any extent): no silent casts.
* **A-List** nested Python lists are rectangular and convert element-wise by the rules above
  (A-Array for NumPy scalars inside) into one array of the parameter's dtype and shape.
* **A-Tuple** a Python ``tuple`` for a tuple type converts field by field.
* **A-Value** anything else must already be a Relay value of the type, checked field by
  field (``value_mismatch``): ADT values, references (their current contents), and
  functions, which must be Relay function values (closures, recursive closures,
  constructors, operators) -- a Python callable is not one. With ``check_functions``, a
  closure's function is type-checked against the parameter's function type (so
  ``fn (%x: int32) { True }`` is refused for ``fn (int32) -> int32``) and an operator by its
  type relation (V-Op: ``negative`` is refused for ``fn (int32) -> float32``).

Where the parameter has no known type (an unannotated parameter evaluated with
``typecheck=False``, a type variable), scalars and lists take the default dtypes of Relay
literals: ``bool``, ``int32`` (``int64`` if it does not fit), ``float32``.

A violation raises ``ArgumentError`` (a plain message saying what was expected and what was
given); the caller locates it at the parameter. ``value_conforms`` is the same check as a
predicate (``relay_ref.testing.soundness`` re-exports it for the soundness property).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relay_ref.diagnostics import Note
from relay_ref.interpreter.values import (
    Closure,
    ConstructorValue,
    RecClosure,
    RefValue,
    Value,
    value_to_text,
)
from relay_ref.ir.expr import Constructor, Function, Let, Op, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.shape import ShapeBindError, bind_shape, dims_compatible, is_symbolic
from relay_ref.ir.type_text import shape_to_text, type_to_text
from relay_ref.ir.types import (
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    substitute,
)

__all__ = ["ArgumentError", "convert_argument", "value_conforms", "value_mismatch"]


class ArgumentError(Exception):
    """A host argument does not fit its parameter's type; ``message`` says what was
    expected and what was given, ``notes`` may point elsewhere (an argument's function)."""

    def __init__(self, message: str, notes: tuple[Note, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.notes = notes


def convert_argument(arg: Any, ty: Type | None, module: IRModule | None = None, *,
                     check_functions: bool = True) -> Value:
    """``arg`` as a Relay value of type ``ty`` by the rules A-* (module docstring); raises
    ``ArgumentError``. ``module`` supplies ADT definitions and global types."""
    module = module if module is not None else IRModule()
    value = _convert(arg, ty)
    if ty is not None:
        # Shape-Bind inside ADT values: one environment per argument (the call binds the
        # parameters' own tensors, relay_ref.interpreter.shapes)
        problem = value_mismatch(value, ty, module, check_functions=check_functions,
                                 shapes={})
        if problem is not None:
            raise ArgumentError(*problem)
    return value


def _convert(arg: Any, ty: Type | None) -> Value:
    """Rules A-Int ... A-Tuple; other values are returned as they are (A-Value checks)."""
    kind = type(arg)
    if kind is np.ndarray:                                 # A-Array: checked by A-Value
        return arg
    if isinstance(arg, bool | int | float | np.generic | list):
        if type(ty) is TensorType:
            return _to_tensor(arg, ty)
        if ty is None or isinstance(ty, TypeVar | IncompleteType):
            return _default_tensor(arg)
        raise ArgumentError(f"expected {_describe(ty)}, got {_given(arg)}")
    if isinstance(arg, tuple) and not isinstance(arg, ConstructorValue):   # A-Tuple
        if type(ty) is TupleType:
            if len(arg) != len(ty.fields):
                raise ArgumentError(f"expected a {len(ty.fields)}-tuple of type "
                                    f"{type_to_text(ty)}, got a {len(arg)}-tuple")
            out = []
            for i, (a, t) in enumerate(zip(arg, ty.fields, strict=True)):
                try:
                    out.append(_convert(a, t))
                except ArgumentError as err:
                    raise ArgumentError(f"field {i}: {err.message}", err.notes) from None
            return tuple(out)
        if ty is None or isinstance(ty, TypeVar | IncompleteType):
            return tuple(_convert(a, None) for a in arg)
    return arg


def _to_tensor(arg: Any, ty: TensorType) -> np.ndarray:
    """A-Int, A-Bool, A-Float, A-Array (NumPy scalars), A-List for a tensor type."""
    dtype = ty.dtype
    if isinstance(arg, np.generic):                        # A-Array
        if arg.dtype.name != dtype:
            raise ArgumentError(f"expected {_describe(ty)}, got a NumPy {arg.dtype.name} "
                                f"scalar (no implicit casts)")
        return np.asarray(arg)
    if isinstance(arg, list):                              # A-List
        shape, leaves = _flatten(arg)
        if len(shape) != len(ty.shape) or any(
                not dims_compatible(d, n) for d, n in zip(ty.shape, shape, strict=True)):
            raise ArgumentError(f"expected {_describe(ty)}, got a list of shape "
                                f"{shape_to_text(shape)}")
        try:
            np_dtype = np.dtype(dtype)
            for leaf in leaves:
                _check_scalar(leaf, dtype, np_dtype)
        except ArgumentError as err:
            raise ArgumentError(f"expected {_describe(ty)}: a list element: "
                                f"{err.message}") from None
        return np.array(leaves, dtype=np_dtype).reshape(shape)
    if ty.shape:
        raise ArgumentError(f"expected {_describe(ty)}, got the scalar {_given(arg)}")
    try:
        return np.asarray(_check_scalar(arg, dtype, np.dtype(dtype)), dtype=dtype)
    except TypeError:  # an unknown dtype name
        raise ArgumentError(f"cannot make a value of dtype {dtype}") from None


def _check_scalar(x: Any, dtype: str, np_dtype: np.dtype) -> Any:
    """``x`` (a Python or NumPy scalar) when dtype ``dtype`` holds it exactly (A-*)."""
    kind = np_dtype.kind
    if isinstance(x, np.generic):                          # A-Array, inside a list
        if x.dtype != np_dtype:
            raise ArgumentError(f"a NumPy {x.dtype.name} scalar is not {_a(dtype)} "
                                "(no implicit casts)")
        return x
    if isinstance(x, bool):                                # A-Bool
        if kind != "b":
            raise ArgumentError(f"the bool {x} is not {_a(dtype)} (only bool takes it)")
        return x
    if isinstance(x, int):                                 # A-Int
        if kind in "iu":
            info = np.iinfo(np_dtype)
            if not info.min <= x <= info.max:
                raise ArgumentError(f"{x} does not fit {dtype} (range {info.min} to "
                                    f"{info.max})")
            return x
        if kind == "f":
            with np.errstate(over="ignore"):
                f = np_dtype.type(x) if abs(x) < 2**1100 else np_dtype.type(math.inf)
            if not np.isfinite(f) or int(f) != x:
                raise ArgumentError(f"{x} is not exactly representable as {dtype}")
            return x
        raise ArgumentError(f"the integer {x} is not {_a(dtype)} (write True or False)")
    if isinstance(x, float):                               # A-Float
        if kind != "f":
            raise ArgumentError(f"the float {x!r} is not {_a(dtype)} (no implicit "
                                "truncation; pass an int)")
        with np.errstate(over="ignore"):
            if math.isfinite(x) and not np.isfinite(np_dtype.type(x)):
                raise ArgumentError(f"{x!r} overflows {dtype}")
        return x
    raise ArgumentError(f"{_given(x)} is not {_a(dtype)} scalar")


def _flatten(arg: list) -> tuple[tuple[int, ...], list]:
    """The shape and row-major leaves of a rectangular nested list (iterative)."""
    shape: list[int] = []
    level: list = [arg]
    while level and all(type(x) is list for x in level):
        n = len(level[0])
        if any(len(x) != n for x in level):
            raise ArgumentError("the nested list is ragged (rows of different lengths)")
        shape.append(n)
        level = [y for x in level for y in x]
    if any(type(x) is list for x in level):
        raise ArgumentError("the nested list is ragged (lists and scalars at one depth)")
    return tuple(shape), level


def _default_tensor(arg: Any) -> np.ndarray:
    """A scalar or list for a parameter of unknown type: Relay's literal dtypes."""
    if isinstance(arg, np.generic):
        return np.asarray(arg)
    shape, leaves = _flatten(arg) if isinstance(arg, list) else ((), [arg])
    if leaves and all(isinstance(x, bool | np.bool_) for x in leaves):
        dtype = "bool"
    elif leaves and all(type(x) is int for x in leaves):
        dtype = "int32" if all(-(2**31) <= x < 2**31 for x in leaves) else "int64"
    else:
        dtype = "float32"
    return _to_tensor(arg, TensorType(shape, dtype))


# -- A-Value: does a value inhabit a type? ----------------------------------------------------

def value_conforms(value: object, ty: Type, mod: IRModule) -> bool:
    """True when ``value`` inhabits ``ty``: tensors by dtype and shape (``?`` any extent),
    tuples and ADT values field by field, references by their contents, functions by being
    function values (not inspected: their bodies were checked statically), type variables
    and holes by anything. Iterative, so a 100 000-element list is fine."""
    return value_mismatch(value, ty, mod) is None


def value_mismatch(value: object, ty: Type, mod: IRModule, *, check_functions: bool = False,
                   compiled: bool = False, shapes: dict[str, int] | None = None
                   ) -> tuple[str, tuple[Note, ...]] | None:
    """None when ``value`` inhabits ``ty`` (``value_conforms``), else ``(message, notes)``
    naming the first part that does not. ``check_functions`` type-checks closures against
    function types (A-Value). Each case decides one value-typing rule ``Σ ⊢ v : τ``
    (spec/semantics.md 1.1), Σ taken from the types. ``compiled``: ``value`` is in the
    executor's representation (a 0-d tensor may be a NumPy scalar, a function any Python
    callable; executor/values.py). Cycle-safe: a reference cell is checked once per type
    (a cyclic store, ``ref_write(%r, N(%r))``, terminates), which is V-Store's reading of a
    cell's type as the least fixpoint. This is the one deep conformance routine: the host
    argument check (A-Value) and the run-time casts (Stuck-Cast, ``interpreter/casts.py``)
    both use it. ``shapes`` (the host argument check): the tensors inside ADT values bind
    and check the shape variables of their types in it (Shape-Bind, ``bind_shape``, in the
    order the walk meets them), so ``Cons([1, 2], Cons([3, 4, 5], Nil))`` is not a
    ``List[Tensor[(n), float32]]``; a variable no tensor determines (``Nil``) stays
    unbound. Tensors outside ADT values are left to the call's Shape-Bind."""
    # items: (value, type, path, inside an ADT value)
    work: list[tuple[object, Type, _Path, bool]] = [(value, ty, None, False)]
    cells: set[tuple[int, Type]] = set()  # (cell, type) pairs already checked
    while work:
        v, t, path, in_adt = work.pop()
        match t:
            case TensorType(shape, dtype):                           # V-Tensor
                if compiled and isinstance(v, np.generic | bool):
                    v = np.asarray(v)
                elif compiled and type(v) is int:  # an int32 (executor/values.py)
                    v = np.asarray(v, np.int32)
                if not isinstance(v, np.ndarray):
                    return _wrong(_where(path), t, v), ()
                if v.dtype.name != dtype or v.ndim != len(shape) or any(
                        not dims_compatible(d, n)
                        for d, n in zip(shape, v.shape, strict=True)):
                    return (f"{_where(path)}expected {_describe(t)}, got a tensor of shape "
                            f"{shape_to_text(v.shape)} and dtype {v.dtype.name} (no "
                            "implicit casts)"), ()
                if in_adt and shapes is not None and any(is_symbolic(d) for d in shape):
                    try:
                        bind_shape(shape, v.shape, shapes)
                    except ShapeBindError as err:
                        return f"{_where(path)}{err}", ()
            case TupleType(fields):                                  # V-Tuple
                if not isinstance(v, tuple) or len(v) != len(fields):
                    return _wrong(_where(path), t, v), ()
                work.extend((f, ft, (None, i, path), in_adt)
                            for i, (f, ft) in enumerate(zip(v, fields, strict=True)))
            case TypeCall(func, args):                               # V-Ctor
                td = mod.type_definitions.get(func.name)
                if not isinstance(v, ConstructorValue) or td is None:
                    return _wrong(_where(path), t, v), ()
                ctor = v.constructor
                if ctor.belong_to.name != func.name or ctor not in td.constructors:
                    return (f"{_where(path)}expected {_describe(t)}, got a value of "
                            f"{ctor.belong_to.name} ({_short(value_to_text(v))})"), ()
                if len(v.fields) != len(ctor.inputs):
                    return (f"{_where(path)}{ctor.name} takes {len(ctor.inputs)} field(s), the "
                            f"value has {len(v.fields)}"), ()
                subst = dict(zip(td.type_vars, args, strict=False))
                work.extend((f, substitute(i, subst), (ctor.name, k, path), True)
                            for k, (f, i) in enumerate(zip(v.fields, ctor.inputs,
                                                           strict=True)))
            case FuncType():  # V-Closure, V-RecClosure, V-CtorFn, V-Op (a function value)
                if compiled and callable(v):
                    continue
                if not isinstance(v, Closure | RecClosure | Constructor | Op):
                    return (f"{_where(path)}expected a Relay function of type {type_to_text(t)}, "
                            f"got {_given(v)}"), ()
                if check_functions:
                    problem = _function_mismatch(v, t, mod)
                    if problem is not None:
                        return (_where(path) + problem[0], problem[1])
            case RefType(inner):                  # V-Ref, with V-Store at the cell: σ(ℓ) : τ
                if not isinstance(v, RefValue):
                    return _wrong(_where(path), t, v), ()
                key = (id(v), inner)
                if key not in cells:
                    cells.add(key)
                    work.append((v.value, inner, ("ref", -1, path), in_adt))
            case TypeVar() | IncompleteType():
                pass  # a type parameter (or a hole) of a polymorphic global: any value
            case _:
                return f"{_where(path)}cannot check a value against {type_to_text(t)}", ()
    return None


def _function_mismatch(v: object, ty: FuncType, mod: IRModule
                       ) -> tuple[str, tuple[Note, ...]] | None:
    """Type-check a function value against ``ty`` (A-Value). A closure's function is
    checked as ``let %arg: ty = fn ...; %arg`` in ``mod``, its captured variables inferred
    from their uses; a constructor by its signature; an operator by its type relation (V-Op,
    at function types over tensors)."""
    from relay_ref.diagnostics import RelayTypeError
    from relay_ref.typecheck.infer import infer_expr
    from relay_ref.typecheck.unify import Unifier, UnifyError

    if isinstance(v, Op):
        return _operator_mismatch(v, ty)
    if isinstance(v, Constructor):
        td = mod.type_definitions.get(v.belong_to.name)
        params = td.type_vars if td is not None else ()
        sig = FuncType(v.inputs, TypeCall(v.belong_to, tuple(params)), tuple(params))
        try:
            Unifier().unify(sig, ty)
        except UnifyError as err:
            return (f"expected a function of type {type_to_text(ty)}, got the constructor "
                    f"{v.name} of type {type_to_text(sig)} ({err.reason})"), ()
        return None
    closure = v.closure if isinstance(v, RecClosure) else v
    func: Function = closure.func  # type: ignore[union-attr]
    captured = _captured_types(closure.env)  # type: ignore[union-attr]
    arg = Var("arg", ty)
    try:
        infer_expr(Let(arg, func, arg, func.span), mod, captured)
        return None
    except RelayTypeError as err:
        notes = tuple(Note(d.message, d.span) for d in err.diagnostics[:3])
    try:
        own, _ = infer_expr(func, mod, captured)
        got = f"a function of type {type_to_text(own)}"
    except RelayTypeError:
        got = "a function that does not have that type"
    return f"expected a function of type {type_to_text(ty)}, got {got}", notes


def _operator_mismatch(v: Op, ty: FuncType) -> tuple[str, tuple[Note, ...]] | None:
    """V-Op: an operator at a function type over tensors has it when its type relation,
    given the argument types, gives the result type (``?`` matching any extent):
    ``negative`` is no ``fn (int32) -> float32``. At other function types (tuples, type
    variables) it is accepted as a function value."""
    from relay_ref.ops.registry import get_op

    if not all(type(a) is TensorType for a in (*ty.arg_types, ty.ret_type)):
        return None
    try:
        opdef = get_op(v.name)
        out = opdef.relation(list(ty.arg_types), opdef.attrs())
    except Exception as err:  # noqa: BLE001 - a refusing relation is the answer
        return (f"expected a function of type {type_to_text(ty)}, got the operator {v.name}, "
                f"which does not have it ({err})"), ()
    ret = ty.ret_type
    assert type(ret) is TensorType
    if not (type(out) is TensorType and out.dtype == ret.dtype
            and len(out.shape) == len(ret.shape)
            and all(dims_compatible(a, b) for a, b in zip(out.shape, ret.shape, strict=True))):
        got = type_to_text(out) if isinstance(out, Type) else repr(out)
        return (f"expected a function of type {type_to_text(ty)}, got the operator {v.name}, "
                f"whose relation gives {got}"), ()
    return None


def _captured_types(env: dict[Var, Value]) -> dict[Var, Type]:
    """Types of a closure's captured variables: the annotation, else a tensor value's own
    type (``let %k = 5; fn (%x: int32) { add(%x, %k) }`` captures an int32); others are
    left to inference from their uses."""
    out: dict[Var, Type] = {}
    for var, value in env.items():
        if type(var) is not Var:  # a captured shared node (E-Shared): inferred in place
            continue
        if var.type_annotation is not None:
            out[var] = var.type_annotation
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            out[var] = TensorType(tuple(value.shape), value.dtype.name)
    return out


#: Where in an argument a check is, innermost first: ``(constructor name or None for a tuple,
#: field index, enclosing path)``, ``("ref", -1, path)`` for a reference's contents, None at
#: the top. A linked list formatted only on failure, so checking a 100 000-element list
#: stays linear and cheap.
_Path = tuple[str | None, int, "_Path"] | None


def _where(path: _Path) -> str:
    """``"Cons field 1 (x3), Cons field 0: "`` for a path (outermost first, runs counted)."""
    labels: list[str] = []
    while path is not None:
        name, index, path = path
        labels.append("the reference's contents" if index < 0 else
                      f"field {index}" if name is None else f"{name} field {index}")
    labels.reverse()
    parts: list[str] = []
    i = 0
    while i < len(labels):
        j = i
        while j < len(labels) and labels[j] == labels[i]:
            j += 1
        parts.append(labels[i] + (f" (x{j - i})" if j - i > 1 else ""))
        i = j
    return ", ".join(parts) + ": " if parts else ""


def _a(dtype: str) -> str:
    """``"an int32"``, ``"a float32"``."""
    return ("an " if dtype[:1] in "aeio" else "a ") + dtype


def _describe(ty: Type) -> str:
    if type(ty) is TensorType:
        if not ty.shape:
            return f"{_a(ty.dtype)} scalar"
        return f"a tensor of type {type_to_text(ty)}"
    return f"a value of type {type_to_text(ty)}"


def _wrong(where: str, ty: Type, v: object) -> str:
    return f"{where}expected {_describe(ty)}, got {_given(v)}"


def _given(v: object) -> str:
    """What a host value is, in words a user recognises."""
    if isinstance(v, bool):
        return f"the bool {v}"
    if isinstance(v, int):
        return f"the int {v}"
    if isinstance(v, float):
        return f"the float {v!r}"
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return f"{_a(v.dtype.name)} scalar"
        return f"a tensor of shape {shape_to_text(v.shape)} and dtype {v.dtype.name}"
    if isinstance(v, tuple | ConstructorValue | Closure | RecClosure | RefValue
                  | Constructor | Op):
        try:
            return _short(value_to_text(v))
        except Exception:  # noqa: BLE001 - a message must never fail
            pass
    if callable(v):
        return f"a Python {type(v).__name__} (only Relay function values can be passed)"
    return f"a Python {type(v).__name__}"


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
