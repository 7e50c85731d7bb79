"""Relay's type language (spec/typing.md section 1).

Types are immutable values with *structural* equality and hashing, with one exception made
for binders: a ``TypeVar`` or ``IncompleteType`` is identified by its ``uid`` (fresh per
creation), so two type parameters both written ``A`` in different functions never collide.
Alpha-equivalence of polymorphic types is ``relay_ref.ir.equal.alpha_equal``.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace

# The dimension type is relay_ref.ir.shape's; tensor types hold it, and modules that name
# ``ANY`` or ``AnyDim`` with the type constructors may import them from here (explicit
# re-exports).
from relay_ref.ir.shape import ANY as ANY
from relay_ref.ir.shape import AnyDim as AnyDim
from relay_ref.ir.shape import Dim, is_static
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
        return is_static(self.shape)


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


# -- the type algebra: holes, free type variables, substitution --------------------------

def has_hole(ty: Type | None) -> bool:
    """Whether ``ty`` is or contains a hole (``IncompleteType``, ``_``) anywhere: in tuple
    fields, function argument and result types, ADT arguments, reference contents.

    Invariant: ``has_hole(t)`` is false exactly when inference has nothing left to fill in
    ``t``. ``None`` (no type at all) is not a hole. Iterative, each shared subterm once."""
    if ty is None:
        return False
    return any(type(t) is IncompleteType for t in subterms(ty))


def is_complete(ty: Type | None) -> bool:
    """Whether ``ty`` is known and has no hole (``IncompleteType``) anywhere, so it can be
    written as an annotation (``ty is not None and not has_hole(ty)``)."""
    return ty is not None and not has_hole(ty)


def free_type_vars(*types: Type | None) -> list[TypeVar]:
    """The type variables occurring free in ``types``: in first-occurrence order (left to
    right, outside in), each once; ``None`` entries are skipped.

    Invariant: a ``FuncType``'s own ``type_params`` are bound in its argument and result
    types, so ``fn [A](A) -> B`` has ``B`` free and not ``A``; an ``A`` outside it stays
    free. Iterative (a 10 000-deep type is fine); a subterm shared under the same binders
    is walked once."""
    out: list[TypeVar] = []
    found: set[TypeVar] = set()
    no_binders: frozenset[TypeVar] = frozenset()
    scopes: list[frozenset[TypeVar]] = [no_binders]  # keeps the ids in ``seen`` valid
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Type, frozenset[TypeVar]]] = [
        (t, no_binders) for t in reversed(types) if t is not None]
    while stack:
        t, bound = stack.pop()
        key = (id(t), id(bound))
        if key in seen:
            continue
        seen.add(key)
        if type(t) is TypeVar:
            if t not in bound and t not in found:
                found.add(t)
                out.append(t)
            continue
        if type(t) is FuncType and t.type_params:
            bound = bound | frozenset(t.type_params)
            scopes.append(bound)
        stack.extend((k, bound) for k in reversed(type_children(t)))
    return out


def _rebuilt(ty: Type, kids: list[Type], params: tuple[TypeVar, ...]) -> Type:
    """``ty`` with its children (``type_children`` order) and, for a function type, its
    type parameters replaced; ``ty`` itself when nothing changed (sharing is kept)."""
    old = type_children(ty)
    if all(a is b for a, b in zip(kids, old, strict=True)) and (
            type(ty) is not FuncType or params == ty.type_params):
        return ty
    match ty:
        case TupleType():
            return replace(ty, fields=tuple(kids))
        case FuncType():
            return replace(ty, arg_types=tuple(kids[:-1]), ret_type=kids[-1],
                           type_params=params)
        case TypeCall():
            return replace(ty, args=tuple(kids))
        case RefType():
            return replace(ty, value=kids[0])
    return ty


def substitute(ty: Type, mapping: Mapping[TypeVar, Type]) -> Type:
    """``ty`` with every free occurrence of a type variable in ``mapping`` replaced by its
    image (capture-avoiding, spans kept, unchanged subterms returned as they are).

    Invariants: inside a ``FuncType`` its own ``type_params`` are bound, so they are not
    replaced there (``substitute(fn [A](A) -> B, {A: int32, B: float32})`` is
    ``fn [A](A) -> float32``); when an image mentions a variable that a ``FuncType`` binds
    (``{B: A}`` into ``fn [A](A) -> B``), that binder is renamed to a fresh ``TypeVar`` of
    the same name and kind first, so the image's ``A`` stays free. Type variables are
    identified by ``uid``, so a mapping built from another function's parameters never
    hits a same-named variable by accident. Iterative, each shared subterm rebuilt once
    per scope; each image's free variables are computed once per call (not again at every
    function type with type parameters)."""
    if not mapping:
        return ty
    top = dict(mapping)
    image_fvs: dict[int, frozenset[TypeVar]] = {}  # id(image) -> its free type variables

    def free_in(image: Type) -> frozenset[TypeVar]:
        got = image_fvs.get(id(image))
        if got is None:
            got = image_fvs[id(image)] = frozenset(free_type_vars(image))
        return got

    scopes: list[dict[TypeVar, Type]] = [top]  # keeps the ids in the memo keys valid
    done: dict[tuple[int, int], Type] = {}
    inner: dict[tuple[int, int], tuple[dict[TypeVar, Type], tuple[TypeVar, ...]]] = {}
    stack: list[tuple[Type, dict[TypeVar, Type], bool]] = [(ty, top, False)]
    while stack:
        t, m, expanded = stack.pop()
        key = (id(t), id(m))
        if key in done:
            continue
        kind = type(t)
        if kind is TypeVar:
            done[key] = m.get(t, t)
            continue
        kids = type_children(t)
        if not kids:
            done[key] = t
            continue
        if not expanded:
            sub, params = m, ()
            if kind is FuncType:
                sub, params = _enter_binders(t.type_params, m, free_in)
                if sub is not m:
                    scopes.append(sub)
            inner[key] = (sub, params)
            if not sub:
                done[key] = t
                continue
            stack.append((t, m, True))
            stack.extend((k, sub, False) for k in reversed(kids)
                         if (id(k), id(sub)) not in done)
            continue
        sub, params = inner[key]
        done[key] = _rebuilt(t, [done[(id(k), id(sub))] for k in kids], params)
    return done[(id(ty), id(top))]


def _enter_binders(params: tuple[TypeVar, ...], m: dict[TypeVar, Type],
                   free_in: Callable[[Type], frozenset[TypeVar]]
                   ) -> tuple[dict[TypeVar, Type], tuple[TypeVar, ...]]:
    """The mapping inside a function type binding ``params``, and its (possibly renamed)
    parameters: the binders are dropped from ``m``; a binder that an image of ``m``
    mentions free (``free_in``: an image's free variables, memoised by the caller) is
    renamed to a fresh variable (mapped to it), so it cannot capture."""
    if not params:
        return m, params
    sub = {k: v for k, v in m.items() if k not in params}
    if not sub:
        return sub, params
    binders = set(params)
    captured: set[TypeVar] = set()
    for image in sub.values():
        captured |= binders & free_in(image)  # iterates the smaller of the two sets
    if not captured:
        return sub, params
    renamed = tuple(TypeVar(p.name, p.kind, span=p.span) if p in captured else p
                    for p in params)
    sub.update((p, q) for p, q in zip(params, renamed, strict=True) if p is not q)
    return sub, renamed
