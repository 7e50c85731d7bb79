"""Unification over Relay types with holes (spec/typing.md section 6.1).

``Unifier`` is a union-find over ``IncompleteType`` holes. Invariants:

* A hole is *bound* at most once (``_bound[uid]``); a bound hole stands for whatever it is
  bound to. ``find`` follows bindings (with path compression) to a *representative*: an
  unbound hole or a non-hole type. ``resolve`` substitutes representatives everywhere.
* Binding a hole to a type never creates a cycle (occurs check), so ``resolve`` terminates.
* Every time a hole is bound, ``on_bind(uid)`` is called: the relation solver uses it to
  wake the constraints waiting on that hole (``solver.py``).
* ``TypeVar``s are rigid: inside the function that binds them they equal only themselves.
  Polymorphic function types are instantiated here when unified with monomorphic ones, and
  two polymorphic function types unify after renaming one's parameters to the other's.
* ``?`` (``ANY``) dimensions unify with every dimension (gradual typing, spec 5.1).

Cost (checking ``n`` nested functions must stay linear, not walk ever larger types):

* Types are DAGs, not trees (``let %y = (%x, %x)`` shares ``%x``'s type; a bound hole is
  shared by every type that mentions it), so every walk over a type visits each composite
  type object once (memoised by identity), never each path through it.
* The *binding graph* has an edge ``h -> x`` when hole ``h`` is bound to a type that
  mentions hole ``x`` in its own structure (without following bindings); ``_parents[x]``
  lists those ``h`` (recorded when ``h`` is bound, removed when a failed unification
  undoes the binding; path compression only shortcuts edges, so the lists still give
  exactly the holes that reach ``x``). It is acyclic: that is the occurs check.
* Binding ``h`` to ``ty`` costs the size of ``ty``'s own structure, plus, only when some
  binding already mentions ``h``, a two-way search run in lockstep -- forward from
  ``ty``'s holes through bindings, backward from ``h`` through ``_parents`` -- that stops
  when either side is exhausted: at most twice the smaller of the two. A hole is usually
  fresh when it is bound (a function's return type, a call's result, a parameter's type),
  so the search is rare and the growing types of nested functions are never re-walked.
* ``resolve`` memoises its result per composite type object until the next binding (or
  undo), so resolving the types of all ``n`` nodes after inference costs the number of
  distinct type objects, and the results share structure.

A failure raises ``UnifyError`` whose ``reason`` names the innermost difference; the caller
turns it into a located diagnostic ("cannot unify A with B: dimension 0 differs (3 vs 4)").
"""

from __future__ import annotations

from collections.abc import Callable, Generator

from relay_ref.ir.shape import dims_compatible
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    substitute,
    type_children,
)


class UnifyError(Exception):
    """Two types cannot be made equal; ``reason`` says where they first differ."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


#: How many composite types (tuples, functions, ...) a message shows before eliding the rest.
SHOW_PARTS = 200
_ELIDED = GlobalTypeVar("...")


def show(ty: Type) -> str:
    """Relay text of a type for messages (never raises).

    At most ``SHOW_PARTS`` composite types are shown, in reading order, the rest as ``...``
    (``fn (float32) -> fn (float32) -> ...``): a type nested thousands deep, or one shared
    so that its text would have ``2**n`` parts, costs a message no more than a small one."""
    try:
        return type_to_text(_abbreviated(ty, [SHOW_PARTS]))
    except Exception:  # noqa: BLE001 - a message must never fail
        return repr(ty)


def _abbreviated(ty: Type, budget: list[int]) -> Type:
    """``ty`` with every composite type past the first ``budget[0]`` replaced by ``...``."""
    children = type_children(ty)
    if not children:
        return ty
    if budget[0] <= 0:
        return _ELIDED
    budget[0] -= 1
    new = tuple(_abbreviated(c, budget) for c in children)
    if _same(new, children):
        return ty
    match ty:
        case TupleType():
            return TupleType(new, ty.span)
        case FuncType(_, _, params):
            return FuncType(new[:-1], new[-1], params, ty.span)
        case TypeCall(func):
            return TypeCall(func, new, ty.span)
        case RefType():
            return RefType(new[0], ty.span)
    return ty


def describe_kind(ty: Type) -> str:
    """'a tensor', 'a tuple', ... for mismatch messages."""
    match ty:
        case TensorType():
            return "a tensor"
        case TupleType():
            return "a tuple"
        case FuncType():
            return "a function"
        case TypeCall() | GlobalTypeVar():
            return "an ADT value"
        case RefType():
            return "a reference"
        case TypeVar(name):
            return f"the type parameter {name}"
    return "an unknown type"


class Unifier:
    """Union-find over holes plus structural unification (see the module docstring)."""

    def __init__(self, on_bind: Callable[[int], None] | None = None) -> None:
        self._bound: dict[int, Type] = {}
        # The binding graph backwards: hole uid -> uids of the holes whose binding mentions
        # it in its own structure (the module docstring).
        self._parents: dict[int, list[int]] = {}
        self.on_bind = on_bind
        # While a top-level ``unify`` runs: (uid, previous binding or None) per write, and
        # the holes given a parent, so that a failed unification leaves no partial
        # bindings (nor edges) behind.
        self._trail: list[tuple[int, Type | None]] | None = None
        self._edge_trail: list[int] = []
        # ``resolve``'s memo: id(composite type) -> (the type, its resolution), valid while
        # ``_version`` (bumped by every binding and every undo) equals ``_memo_version``.
        self._version = 0
        self._memo_version = 0
        self._memo: dict[int, tuple[Type, Type]] = {}
        #: Set once a ``?`` dimension met a known one (they are consistent, spec/typing.md
        #: 5.1): only then can the checker have cast points to record (typecheck/casts.py).
        self.gradual = False

    def _set(self, uid: int, ty: Type) -> None:
        if self._trail is not None:
            self._trail.append((uid, self._bound.get(uid)))
        self._bound[uid] = ty

    # -- holes -------------------------------------------------------------------------
    def fresh(self, kind: Kind = Kind.Type) -> IncompleteType:
        """A new unbound hole."""
        return IncompleteType(kind)

    def find(self, ty: Type) -> Type:
        """The representative of ``ty``: ``ty`` itself unless it is a bound hole."""
        if not isinstance(ty, IncompleteType) or ty.uid not in self._bound:
            return ty
        path = []
        while isinstance(ty, IncompleteType) and ty.uid in self._bound:
            path.append(ty.uid)
            ty = self._bound[ty.uid]
        for uid in path[:-1]:  # path compression
            self._set(uid, ty)
        return ty

    def resolve(self, ty: Type) -> Type:
        """``ty`` with every bound hole replaced by what it stands for, recursively.

        Memoised per composite type object until the next binding: a type shared by many
        nodes (or many times inside one type) is resolved once, to one shared result."""
        if self._memo_version != self._version:
            self._memo = {}
            self._memo_version = self._version
        return self._resolve(ty)

    def _resolve(self, ty: Type) -> Type:
        ty = self.find(ty)
        if isinstance(ty, TensorType | IncompleteType | TypeVar | GlobalTypeVar):
            return ty
        hit = self._memo.get(id(ty))
        if hit is not None and hit[0] is ty:
            return hit[1]
        out = ty
        match ty:
            case TupleType(fields):
                new = tuple(self._resolve(f) for f in fields)
                if not _same(new, fields):
                    out = TupleType(new, ty.span)
            case FuncType(args, ret, params):
                new_args = tuple(self._resolve(a) for a in args)
                new_ret = self._resolve(ret)
                if new_ret is not ret or not _same(new_args, args):
                    out = FuncType(new_args, new_ret, params, ty.span)
            case TypeCall(func, args):
                new = tuple(self._resolve(a) for a in args)
                if not _same(new, args):
                    out = TypeCall(func, new, ty.span)
            case RefType(value):
                new_value = self._resolve(value)
                if new_value is not value:
                    out = RefType(new_value, ty.span)
        self._memo[id(ty)] = (ty, out)  # holds ``ty``: its id is not reused meanwhile
        return out

    def holes(self, ty: Type, walked: dict[int, Type] | None = None) -> list[IncompleteType]:
        """The unbound holes occurring in ``ty`` (first-occurrence order, no repeats).

        Each composite type object is walked once, however often it is shared. A caller
        scanning many types passes one ``walked`` dict (id -> type, filled here) to all the
        calls: a type object walked by an earlier call is skipped, its holes having been
        returned then (so scanning the types of ``n`` nodes costs their distinct objects)."""
        out: list[IncompleteType] = []
        seen: set[int] = set()
        done: dict[int, Type] = {} if walked is None else walked
        stack = [ty]
        while stack:
            t = self.find(stack.pop())
            if isinstance(t, IncompleteType):
                if t.uid not in seen:
                    seen.add(t.uid)
                    out.append(t)
                continue
            children = type_children(t)
            if not children or done.get(id(t)) is t:
                continue
            done[id(t)] = t
            stack.extend(reversed(children))
        return out

    def _bind(self, hole: IncompleteType, ty: Type) -> None:
        direct = _own_holes(ty)
        if self._reaches(direct, hole.uid):
            raise UnifyError(f"the type would contain itself ({show(self.resolve(ty))} "
                             "is infinite)")
        self._set(hole.uid, ty)
        for uid in direct:
            self._parents.setdefault(uid, []).append(hole.uid)
            if self._trail is not None:
                self._edge_trail.append(uid)
        self._version += 1
        if self.on_bind is not None:
            self.on_bind(hole.uid)

    # -- the occurs check ----------------------------------------------------------------
    def _reaches(self, start: dict[int, IncompleteType], target: int) -> bool:
        """Whether one of the holes ``start`` is, or leads through bindings to, the hole
        ``target``: the two-way search of the module docstring."""
        if target in start:
            return True
        if not self._parents.get(target):
            return False  # no binding mentions ``target``: only ``start`` itself could
        searches = (self._forward(start, target), self._backward(target, start))
        while True:
            for search in searches:
                try:
                    next(search)
                except StopIteration as done:
                    return bool(done.value)

    def _forward(self, start: dict[int, IncompleteType],
                 target: int) -> Generator[None, None, bool]:
        """Walk from ``start`` through bindings (one step per ``next``); True if it meets
        ``target``, False once everything reachable is visited."""
        seen_holes: set[int] = set()
        seen_types: set[int] = set()  # ids: every object walked is alive (held by bindings)
        stack: list[Type] = list(start.values())
        while stack:
            yield
            t = stack.pop()
            if isinstance(t, IncompleteType):
                if t.uid == target:
                    return True
                if t.uid not in seen_holes:
                    seen_holes.add(t.uid)
                    bound = self._bound.get(t.uid)
                    if bound is not None:
                        stack.append(bound)
            elif id(t) not in seen_types:
                seen_types.add(id(t))
                stack.extend(type_children(t))
        return False

    def _backward(self, target: int,
                  start: dict[int, IncompleteType]) -> Generator[None, None, bool]:
        """Walk the holes leading to ``target`` (``_parents``, one step per ``next``); True
        if one of them is in ``start``, False once all are visited."""
        seen = {target}
        stack = [target]
        while stack:
            yield
            for parent in self._parents.get(stack.pop(), ()):
                if parent in start:
                    return True
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
        return False

    # -- polymorphism --------------------------------------------------------------------
    def instantiate(self, fn: FuncType, type_args: tuple[Type, ...] | None = None) -> FuncType:
        """``fn`` with its type parameters replaced by ``type_args`` (fresh holes if None);
        the result has no type parameters."""
        if not fn.type_params:
            return fn
        # A declared type's holes may be bound to types that mention its parameters (an
        # unannotated return `fn (%x: A) -> C {...}`): substitute through the bindings.
        fn = self.resolve(fn)
        if type_args is None:
            type_args = tuple(self.fresh(tp.kind) for tp in fn.type_params)
        mapping = dict(zip(fn.type_params, type_args, strict=True))
        return FuncType(tuple(substitute(a, mapping) for a in fn.arg_types),
                        substitute(fn.ret_type, mapping), (), fn.span)

    # -- unification ---------------------------------------------------------------------
    def unify(self, a: Type, b: Type) -> None:
        """Make ``a`` and ``b`` equal by binding holes, or raise ``UnifyError`` and leave
        every binding as it was (the operation is atomic)."""
        if self._trail is not None:  # nested (from a constraint woken meanwhile): no trail
            self._unify(a, b)
            return
        self._trail = []
        self._edge_trail = []
        try:
            self._unify(a, b)
        except UnifyError:
            for uid, old in reversed(self._trail):
                if old is None:
                    del self._bound[uid]
                else:
                    self._bound[uid] = old
            for uid in reversed(self._edge_trail):  # each list grew at its end: LIFO
                self._parents[uid].pop()
            self._version += 1
            raise
        finally:
            self._trail = None
            self._edge_trail = []

    def _unify(self, a: Type, b: Type) -> None:
        a, b = self.find(a), self.find(b)
        if a is b:
            return
        if isinstance(a, IncompleteType):
            if isinstance(b, IncompleteType) and a.uid == b.uid:
                return
            self._bind(a, b)
            return
        if isinstance(b, IncompleteType):
            self._bind(b, a)
            return
        if isinstance(a, GlobalTypeVar):
            a = TypeCall(a, ())
        if isinstance(b, GlobalTypeVar):
            b = TypeCall(b, ())
        match a, b:
            case TensorType(), TensorType():
                self._unify_tensors(a, b)
            case TupleType(fa), TupleType(fb):
                if len(fa) != len(fb):
                    raise UnifyError(f"tuples have different sizes ({len(fa)} vs {len(fb)})")
                for i, (x, y) in enumerate(zip(fa, fb, strict=True)):
                    self._inner(x, y, f"field {i}")
            case FuncType(), FuncType():
                self._unify_funcs(a, b)
            case TypeCall(fa, aa), TypeCall(fb, ab):
                if fa.name != fb.name:
                    raise UnifyError(f"different ADTs ({fa.name} vs {fb.name})")
                if len(aa) != len(ab):
                    raise UnifyError(f"{fa.name} applied to {len(aa)} vs {len(ab)} "
                                     "type arguments")
                for i, (x, y) in enumerate(zip(aa, ab, strict=True)):
                    self._inner(x, y, f"type argument {i} of {fa.name}")
            case RefType(va), RefType(vb):
                self._inner(va, vb, "contents of the reference")
            case TypeVar(), TypeVar():
                if a.uid != b.uid:
                    raise UnifyError(f"type parameters {a.name} and {b.name} are distinct "
                                     "(a polymorphic function must work for every type)")
            case TypeVar(), _:
                raise UnifyError(f"{describe_kind(b)} is not the type parameter {a.name} "
                                 "(a polymorphic function must work for every type)")
            case _, TypeVar():
                raise UnifyError(f"{describe_kind(a)} is not the type parameter {b.name} "
                                 "(a polymorphic function must work for every type)")
            case _:
                raise UnifyError(f"{describe_kind(a)} is not {describe_kind(b)}")

    def _inner(self, a: Type, b: Type, where: str) -> None:
        try:
            self._unify(a, b)
        except UnifyError as err:
            raise UnifyError(f"{where}: {err.reason}") from None

    def _unify_tensors(self, a: TensorType, b: TensorType) -> None:
        if a.dtype != b.dtype:
            hint = ""
            if {a.dtype, b.dtype} == {"int32", "int64"}:
                hint = "; integer literals are int32 unless suffixed (1i64)"
            raise UnifyError(f"dtype differs ({a.dtype} vs {b.dtype}{hint})")
        if len(a.shape) != len(b.shape):
            raise UnifyError(f"rank differs ({len(a.shape)} vs {len(b.shape)})")
        if a.shape == b.shape:  # the common case (equal ints, canonical symbolic forms)
            return
        for i, (x, y) in enumerate(zip(a.shape, b.shape, strict=True)):
            if x is not y and x != y:
                # ? is compatible with every dimension; two symbolic dimensions unless they
                # provably differ (spec/typing.md 5.3: rigid shape variables, ``n`` vs
                # ``n + 1`` is an error, ``n`` vs ``m`` or ``3`` is checked at run time)
                if not dims_compatible(x, y):
                    raise UnifyError(f"dimension {i} differs ({x} vs {y})")
                self.gradual = True  # ? (or an undecided dimension) met another one

    def _unify_funcs(self, a: FuncType, b: FuncType) -> None:
        if a.type_params and b.type_params:
            if len(a.type_params) != len(b.type_params):
                raise UnifyError(f"functions have {len(a.type_params)} vs "
                                 f"{len(b.type_params)} type parameters")
            mapping = dict(zip(b.type_params, a.type_params, strict=True))
            b = FuncType(tuple(substitute(t, mapping) for t in b.arg_types),
                         substitute(b.ret_type, mapping), (), b.span)
            a = FuncType(a.arg_types, a.ret_type, (), a.span)
        else:
            a, b = self.instantiate(a), self.instantiate(b)
        if len(a.arg_types) != len(b.arg_types):
            raise UnifyError(f"functions take different numbers of arguments "
                             f"({len(a.arg_types)} vs {len(b.arg_types)})")
        for i, (x, y) in enumerate(zip(a.arg_types, b.arg_types, strict=True)):
            self._inner(x, y, f"parameter {i}")
        self._inner(a.ret_type, b.ret_type, "return type")


def _same(new: tuple[Type, ...], old: tuple[Type, ...]) -> bool:
    return all(x is y for x, y in zip(new, old, strict=True))


def _own_holes(ty: Type) -> dict[int, IncompleteType]:
    """The holes, bound or not, written in ``ty``'s own structure (bindings not followed;
    each shared composite object walked once), by uid."""
    out: dict[int, IncompleteType] = {}
    seen: set[int] = set()
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, IncompleteType):
            out[t.uid] = t
        elif id(t) not in seen:
            seen.add(id(t))
            stack.extend(type_children(t))
    return out

