"""Run-time casts: the checks that make ``?`` dimensions sound (spec/semantics.md 4,
Stuck-Cast; the cast points are the type checker's, ``relay_ref.typecheck.casts``).

At a cast point a value of static type ``source`` flows where the more precise ``target``
is required. ``cast_value`` checks the value against ``target`` deeply (tensor shapes,
tuple and ADT fields, reference contents, with a cycle-safe walk: ``value_mismatch`` of
``relay_ref.interpreter.args``, the one deep conformance routine) and wraps a function
value that needs it in a ``CastClosure``: calling it checks the arguments against the
function's own (more precise) parameter types and the result against ``target``'s result
type. A failed check is the stuck state Stuck-Cast, located at the expression whose static
type the value violates, naming the typing rule whose consistency premise put the cast
there. The executor uses the same routine on its own value representation
(``compiled=True``).

Invariants: ``cast_value`` returns the value itself unless a function inside it had to be
wrapped (then the tuples and ADT values around it are rebuilt: both are immutable and
compared structurally, spec/semantics.md 1); reference cells are never rebuilt (their
identity is the store's), so a function inside one is checked for being a function only
(the exception spec/semantics.md 4.2 and 7 name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from relay_ref.diagnostics import Note
from relay_ref.interpreter.args import value_mismatch
from relay_ref.interpreter.shapes import bound_text, resolve_type
from relay_ref.interpreter.stuck import Stuck
from relay_ref.interpreter.values import Closure, ConstructorValue, RecClosure, Value
from relay_ref.ir.expr import Call, Constructor, Function, Op, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.span import Span
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.types import FuncType, RefType, TupleType, Type, TypeCall, substitute
from relay_ref.typecheck.casts import Cast, needs_cast

__all__ = ["CastClosure", "CastMemo", "arg_cast", "cast_failure", "cast_value", "result_cast"]


@dataclass(frozen=True, slots=True, eq=False)
class CastClosure(Closure):
    """A function value that crossed a cast point (a proxy): ``inner`` is the function,
    ``source`` its static type there and ``target`` the more precise type it was given.
    It is a ``Closure`` of ``inner``'s function (printing and the A-Value check see the
    function); applying it is E-Cast-App (spec/semantics.md 4): arguments cast to
    ``source``'s parameter types, ``inner`` applied, the result cast to ``target``'s."""

    inner: Value = field(default=None, repr=False)
    cast: Cast | None = field(default=None, repr=False)

    __repr__ = Closure.__repr__


def cast_failure(cast: Cast, message: str, span: Span | None = None,
                 shape_env: Mapping[str, int] | None = None) -> Stuck:
    """Stuck-Cast: the value at ``cast`` does not have its static type (whose shape
    variables had the values ``shape_env`` gives them)."""
    bound = bound_text(cast.target, shape_env) if shape_env else ""
    where = f" (with {bound})" if bound else ""
    note = Note(f"{cast.rule} gave it type {type_to_text(cast.target)}{where}, consistent "
                f"with its value's type {type_to_text(cast.source)} only through ? dimensions "
                "(spec/typing.md 5.1): a cast point")
    return Stuck(f"cast failed ({cast.rule}): {cast.what}: {message}", span or cast.span,
                 (note,), rule="Stuck-Cast")


#: A cast memo (``cast_value``'s ``memo``): ``(id(v), τ) -> v`` for the tuples and ADT
#: values ``v`` (immutable) known to have type ``τ``; holding ``v`` keeps its id from being
#: reused while the entry is held. One per evaluation (an ``Interpreter``) or per call of an
#: executable; entries are only added by checks that met no reference (whose contents change).
CastMemo = dict[tuple[int, Type], Value]


def cast_value(value: Value, cast: Cast, mod: IRModule, span: Span | None = None,
               compiled: bool = False, memo: CastMemo | None = None,
               shape_env: Mapping[str, int] | None = None) -> Value:
    """E-Cast (spec/semantics.md 4.2): ``value`` checked against ``cast.target`` (Stuck-Cast
    at ``span`` or the cast's own span if not), with the functions inside it that need it
    wrapped. ``compiled``: the executor's value representation (``value_mismatch``).
    ``memo``: the tuples and ADT values already checked at a type are not walked again, so
    a list handed across a cast at every step of a recursion is checked once per cell and
    type (linear, not quadratic). ``shape_env``: the current activation's shape variables
    (spec/semantics.md Shape-Bind); the target's dimensions that mention them are checked
    at their values, the ones mentioning other variables are not (never a false failure).
    """
    target = resolve_type(cast.target, shape_env) if shape_env else cast.target
    problem = _mismatch(value, target, mod, compiled, memo)
    if problem is not None:
        raise cast_failure(cast, problem[0].replace(" (no implicit casts)", ""), span,
                           shape_env)
    return _wrap(value, cast.source, cast.target, cast, mod, memo)


def _mismatch(value: Value, target: Type, mod: IRModule, compiled: bool,
              memo: CastMemo | None) -> tuple[str, tuple[Note, ...]] | None:
    """``value_mismatch(value, target)``, skipping the tuples and ADT values ``memo`` knows
    (and adding those this check passes when it met no reference). The structure is walked
    here, every other value is a leaf checked by ``_leaf_mismatch``; on a failure the whole
    value is checked again by ``value_mismatch`` for its message (the path to the part)."""
    if memo is None:
        return value_mismatch(value, target, mod, compiled=compiled)
    work: list[tuple[Value, Type]] = [(value, target)]
    passed: list[tuple[tuple[int, Type], Value]] = []
    pure = True  # no reference met: the result depends on immutable values only
    while work:
        v, t = work.pop()
        kind = type(v)
        if (kind is tuple and type(t) is TupleType) or \
                (kind is ConstructorValue and type(t) is TypeCall):
            key = (id(v), t)
            if key in memo:
                continue
            kids = _fields(v, t, mod)
            if kids is None:
                return value_mismatch(value, target, mod, compiled=compiled)
            passed.append((key, v))
            work.extend(kids)
            continue
        if type(t) is RefType:
            pure = False
        if _leaf_mismatch(v, t, mod, compiled) is not None:
            return value_mismatch(value, target, mod, compiled=compiled)
    if pure:
        memo.update(passed)
    return None


def _fields(v: Value, t: Type, mod: IRModule) -> list[tuple[Value, Type]] | None:
    """The fields of tuple or ADT value ``v`` with their types under ``t`` (V-Tuple,
    V-Ctor), or None when ``v`` does not have ``t``'s form."""
    if type(v) is tuple:
        assert type(t) is TupleType
        if len(v) != len(t.fields):
            return None
        return list(zip(v, t.fields, strict=True))
    assert type(v) is ConstructorValue and type(t) is TypeCall
    td = mod.type_definitions.get(t.func.name)
    ctor = v.constructor
    if td is None or ctor.belong_to.name != t.func.name or ctor not in td.constructors \
            or len(v.fields) != len(ctor.inputs):
        return None
    subst = dict(zip(td.type_vars, t.args, strict=False))
    return [(f, substitute(i, subst)) for f, i in zip(v.fields, ctor.inputs, strict=True)]


def _leaf_mismatch(v: Value, t: Type, mod: IRModule, compiled: bool
                   ) -> tuple[str, tuple[Note, ...]] | None:
    """One step of a memoised check: a value that is not a tuple or ADT value at its type
    (a tensor, a reference with its contents, a function), by ``value_mismatch``."""
    return value_mismatch(v, t, mod, compiled=compiled)


def _wrap(value: Value, source: Type, target: Type, cast: Cast, mod: IRModule,
          memo: CastMemo | None = None) -> Value:
    """Wrap the function values at function-typed positions (top level, tuple fields, ADT
    fields, through any depth of them) where ``needs_cast`` of their types: the tuples and
    ADT values around a wrapped function are rebuilt (both are immutable and compared
    structurally, spec/semantics.md 1), everything else is returned as it is. Iterative
    (a 100 000-element list of functions is rebuilt without deep recursion), memoised by
    (value identity, types) so shared parts stay shared; a reference is not entered (its
    cell's identity is the store's: the exception spec/semantics.md 4.2 names)."""
    wraps: dict[tuple[Type, Type], bool] = {}
    if not _wraps(source, target, mod, wraps):
        return value
    done: dict[tuple[int, Type, Type], Value] = {}
    keep: list[Value] = []  # the values whose ids key ``done``, alive while it is used
    # invariant: a frame's children are wrapped (in ``done``) before it is rebuilt
    work: list[tuple[Value, Type, Type, list | None]] = [(value, source, target, None)]
    while work:
        v, s, t, kids = work.pop()
        key = (id(v), s, t)
        if key in done:
            continue
        if kids is None:
            kids = _children(v, s, t, mod)
            if kids is None:  # a leaf: a function to wrap, or a value kept as it is
                done[key] = _wrap_function(v, s, t, cast, mod, memo)
                keep.append(v)
                continue
            work.append((v, s, t, kids))
            work.extend((c, cs, ct, None) for c, cs, ct in kids
                        if (id(c), cs, ct) not in done and _wraps(cs, ct, mod, wraps))
            continue
        fields = tuple(done.get((id(c), cs, ct), c) for c, cs, ct in kids)
        if all(f is c for f, (c, _, _) in zip(fields, kids, strict=True)):
            done[key] = v
        elif type(v) is tuple:
            done[key] = fields
        else:
            assert type(v) is ConstructorValue
            done[key] = ConstructorValue(v.constructor, fields)
        keep.append(v)
    return done[(id(value), source, target)]


def _children(v: Value, s: Type, t: Type, mod: IRModule
              ) -> list[tuple[Value, Type, Type]] | None:
    """The fields of a tuple or ADT value with their source and target types, or None for
    any other value (or one that does not have the types' shape: the check reported it)."""
    if type(s) is TupleType and type(t) is TupleType:
        if type(v) is tuple and len(v) == len(s.fields) == len(t.fields):
            return list(zip(v, s.fields, t.fields, strict=True))
        return None
    if type(s) is TypeCall and type(t) is TypeCall and type(v) is ConstructorValue:
        td = mod.type_definitions.get(t.func.name)
        ctor = v.constructor
        if td is None or ctor not in td.constructors or len(v.fields) != len(ctor.inputs):
            return None
        ss = dict(zip(td.type_vars, s.args, strict=False))
        ts = dict(zip(td.type_vars, t.args, strict=False))
        return [(f, substitute(i, ss), substitute(i, ts))
                for f, i in zip(v.fields, ctor.inputs, strict=True)]
    return None


def _wraps(source: Type, target: Type, mod: IRModule,
           memo: dict[tuple[Type, Type], bool]) -> bool:
    """Whether a value of type ``source`` cast to ``target`` has a function to wrap: a
    function-typed position, reached through tuple fields and ADT fields (constructor
    inputs at the type arguments), whose types ``needs_cast``. Iterative; recursive ADTs
    end by the pairs already seen (types compared structurally)."""
    if (source, target) in memo:
        return memo[(source, target)]
    seen = {(source, target)}
    work = [(source, target)]
    found = False
    while work and not found:
        s, t = work.pop()
        match s, t:
            case FuncType(), FuncType():
                found = needs_cast(s, t)
            case TupleType(), TupleType():
                pairs = list(zip(s.fields, t.fields, strict=False))
            case TypeCall(), TypeCall():
                td = mod.type_definitions.get(t.func.name)
                pairs = []
                if td is not None:
                    ss = dict(zip(td.type_vars, s.args, strict=False))
                    ts = dict(zip(td.type_vars, t.args, strict=False))
                    pairs = [(substitute(i, ss), substitute(i, ts))
                             for c in td.constructors for i in c.inputs]
            case _:
                pairs = []
        if found or type(s) is FuncType:
            continue
        for pair in pairs:
            if pair not in seen:
                seen.add(pair)
                work.append(pair)
    memo[(source, target)] = found
    return found


def _wrap_function(value: Value, source: Type, target: Type, cast: Cast,
                   mod: IRModule, memo: CastMemo | None = None) -> Value:
    """A function value at a function-typed position, wrapped for ``source ⇒ target``
    (E-Cast's ⟨f : τf ⇒ τf'⟩) when that needs a cast; any other value as it is."""
    if type(target) is not FuncType or type(source) is not FuncType \
            or not needs_cast(source, target):
        return value
    own = Cast(cast.rule, source, target, cast.what, cast.span)
    if isinstance(value, Closure):
        return CastClosure(value.env, value.func, value.global_name, value, own)
    if isinstance(value, RecClosure):
        inner = value.closure
        return CastClosure(inner.env, inner.func, None, value, own)
    if isinstance(value, Op | Constructor):  # eta-expanded: fn (%a…) { op(%a…) }
        params = tuple(Var(f"a{i}") for i in range(len(source.arg_types)))
        eta = Closure({}, Function(params, Call(value, params)))
        return CastClosure({}, eta.func, None, eta, own)
    if callable(value):  # the executor's representation: a Python function
        return _compiled_proxy(value, own, mod, memo)
    return value


def arg_cast(cast: Cast, i: int) -> Cast | None:
    """The cast of argument ``i`` of a function wrapped by ``cast``: from the caller's
    parameter type (``target``'s) to the function's own (``source``'s), if it needs one."""
    src, tgt = cast.source, cast.target
    assert type(src) is FuncType and type(tgt) is FuncType
    if i >= len(src.arg_types) or i >= len(tgt.arg_types) \
            or not needs_cast(tgt.arg_types[i], src.arg_types[i]):
        return None
    return Cast(cast.rule, tgt.arg_types[i], src.arg_types[i],
                f"argument {i} of a function in {cast.what}", cast.span)


def result_cast(cast: Cast) -> Cast | None:
    """The cast of the result of a function wrapped by ``cast``: to ``target``'s result
    type, if it needs one."""
    src, tgt = cast.source, cast.target
    assert type(src) is FuncType and type(tgt) is FuncType
    if not needs_cast(src.ret_type, tgt.ret_type):
        return None
    return Cast(cast.rule, src.ret_type, tgt.ret_type,
                f"the result of a function in {cast.what}", cast.span)


def _compiled_proxy(fn: object, cast: Cast, mod: IRModule,
                    memo: CastMemo | None = None) -> object:
    """A function of compiled code wrapped for ``cast`` (the executor's CastClosure). Its
    failures are ``Stuck``, which the executor's error mapping reports as they are."""
    src = cast.source
    assert type(src) is FuncType
    arg_casts = [arg_cast(cast, i) for i in range(len(src.arg_types))]
    ret = result_cast(cast)

    def proxy(*args: object) -> object:
        args = tuple(a if c is None else cast_value(a, c, mod, compiled=True, memo=memo)
                     for a, c in zip(args, arg_casts, strict=False))
        result = fn(*args)  # type: ignore[operator]
        return result if ret is None else cast_value(result, ret, mod, compiled=True,
                                                     memo=memo)

    proxy.relay_cast_inner = fn  # type: ignore[attr-defined]
    return proxy
