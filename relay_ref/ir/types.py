"""Relay's type language (spec/typing.md section 1).

Types are immutable values with *structural* equality and hashing, with one exception made
for binders: a ``TypeVar`` or ``IncompleteType`` is identified by its ``uid`` (fresh per
creation), so two type parameters both written ``A`` in different functions never collide.
Alpha-equivalence of polymorphic types is ``relay_ref.ir.equal.alpha_equal``.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from relay_ref.ir.span import Span

_uids = itertools.count(1)


def fresh_uid() -> int:
    """A process-wide unique positive integer (binder identity)."""
    return next(_uids)


class Kind(enum.IntEnum):
    """Kinds, numbered as TVM's ``TypeKind``."""

    Type = 0
    ShapeVar = 1
    BaseType = 2
    Constraint = 4
    AdtHandle = 5
    TypeData = 6


@dataclass(frozen=True, slots=True)
class AnyDim:
    """The dynamic dimension ``?`` (TVM's ``tir::Any``): unknown until run time."""

    def __repr__(self) -> str:
        return "?"


ANY = AnyDim()
Dim = int | AnyDim


class Type:
    """Base class of all types."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """``Tensor[(d1, ..., dn), dtype]``; a 0-d tensor is a scalar (``float32`` etc.)."""

    shape: tuple[Dim, ...]
    dtype: str
    span: Span | None = field(default=None, compare=False, repr=False)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        """True when no dimension is ``?``."""
        return all(isinstance(d, int) for d in self.shape)


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    """``(T1, ..., Tn)``; ``()`` is the unit type."""

    fields: tuple[Type, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class TypeVar(Type):
    """A type variable bound by a function's type parameters or an ADT definition."""

    name: str
    kind: Kind = Kind.Type
    uid: int = field(default_factory=fresh_uid)
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class GlobalTypeVar(Type):
    """The name of an ADT (``List``); unique in a module, so compared by name."""

    name: str
    kind: Kind = Kind.AdtHandle
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class TypeCall(Type):
    """An ADT applied to type arguments: ``List[A]`` (``List`` alone has ``args == ()``)."""

    func: GlobalTypeVar
    args: tuple[Type, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    """``fn [A, ...](T1, ..., Tn) -> R``; ``type_params`` are bound in args and ret."""

    arg_types: tuple[Type, ...]
    ret_type: Type
    type_params: tuple[TypeVar, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RefType(Type):
    """The type of a mutable reference cell holding a ``value``."""

    value: Type
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class IncompleteType(Type):
    """A hole (``_`` in text), to be filled by inference; identified by ``uid``."""

    kind: Kind = Kind.Type
    uid: int = field(default_factory=fresh_uid)
    span: Span | None = field(default=None, compare=False, repr=False)


def scalar_type(dtype: str) -> TensorType:
    """``Tensor[(), dtype]``."""
    return TensorType((), dtype)


UNIT = TupleType(())
BOOL = scalar_type("bool")


def type_children(ty: Type) -> tuple[Type, ...]:
    """The types directly inside a composite type (none for a tensor, a hole, ...)."""
    match ty:
        case TupleType(fields):
            return fields
        case FuncType(args, ret):
            return (*args, ret)
        case TypeCall(_, args):
            return args
        case RefType(value):
            return (value,)
    return ()


def subterms(*types: Type) -> Iterator[Type]:
    """Every type inside ``types`` (themselves included), each object once (by identity:
    a type shared by many others, as inference shares them, is visited once). Iterative:
    a 10 000-deep tuple type is walked without deep recursion, in linear time."""
    seen: set[int] = set()
    stack = list(types)
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        yield t
        stack.extend(type_children(t))


def is_complete(ty: Type | None) -> bool:
    """Whether ``ty`` is known and has no hole (``IncompleteType``) anywhere, so it can be
    written as an annotation."""
    if ty is None:
        return False
    return not any(type(t) is IncompleteType for t in subterms(ty))
