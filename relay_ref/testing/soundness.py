"""Type soundness as a checkable property (progress + preservation, as PLT Redex checks it).

``value_conforms(value, ty, mod)`` says whether a run-time value inhabits a type:

* ``Tensor[s, d]``: an ``ndarray`` of dtype ``d`` whose shape matches ``s`` (``?`` matches any
  extent);
* ``(T1, ..., Tn)``: a tuple of n conforming values;
* ``Adt[T1, ..., Tk]``: a ``ConstructorValue`` of one of the ADT's constructors whose fields
  conform to the constructor's field types with the ADT's type variables replaced by the
  ``Ti``;
* ``fn (...) -> R``: a function value (closure, recursive closure, constructor, operator);
  functions are not inspected further (their bodies were checked statically);
* ``ref(T)``: a ``RefValue`` whose current contents conform to ``T``;
* a type variable: any value.

The check is iterative, so a 100 000-element list is fine.
"""

from __future__ import annotations

import numpy as np

from relay_ref.interpreter.values import Closure, ConstructorValue, RecClosure, RefValue
from relay_ref.ir.expr import Constructor, Op
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import (
    AnyDim,
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)


def substitute(ty: Type, subst: dict[TypeVar, Type]) -> Type:
    """``ty`` with type variables replaced per ``subst`` (types are shallow enough here)."""
    match ty:
        case TypeVar():
            return subst.get(ty, ty)
        case TupleType(fields):
            return TupleType(tuple(substitute(f, subst) for f in fields))
        case TypeCall(func, args):
            return TypeCall(func, tuple(substitute(a, subst) for a in args))
        case FuncType(args, ret, params):
            return FuncType(tuple(substitute(a, subst) for a in args),
                            substitute(ret, subst), params)
        case RefType(value):
            return RefType(substitute(value, subst))
    return ty


def value_conforms(value: object, ty: Type, mod: IRModule) -> bool:
    """True when ``value`` inhabits ``ty`` (see the module docstring)."""
    work: list[tuple[object, Type]] = [(value, ty)]
    while work:
        v, t = work.pop()
        match t:
            case TensorType(shape, dtype):
                if not isinstance(v, np.ndarray) or str(v.dtype) != dtype:
                    return False
                if v.ndim != len(shape) or any(
                        not isinstance(d, AnyDim) and d != n
                        for d, n in zip(shape, v.shape, strict=True)):
                    return False
            case TupleType(fields):
                if not isinstance(v, tuple) or len(v) != len(fields):
                    return False
                work.extend(zip(v, fields, strict=True))
            case TypeCall(func, args):
                if not isinstance(v, ConstructorValue):
                    return False
                td = mod.type_definitions.get(func.name)
                ctor = v.constructor
                if td is None or ctor.belong_to.name != func.name or ctor not in td.constructors:
                    return False
                subst = dict(zip(td.type_vars, args, strict=False))
                if len(v.fields) != len(ctor.inputs):
                    return False
                work.extend((f, substitute(i, subst))
                            for f, i in zip(v.fields, ctor.inputs, strict=True))
            case FuncType():
                if not isinstance(v, Closure | RecClosure | Constructor | Op):
                    return False
            case RefType(inner):
                if not isinstance(v, RefValue):
                    return False
                work.append((v.value, inner))
            case TypeVar() | IncompleteType():
                pass  # a type parameter (or a hole) of a polymorphic global: any value
            case _:
                return False
    return True
