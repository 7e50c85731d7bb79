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
wrapped (then a tuple around it is rebuilt; tuples have no identity); ADT values and
reference cells are never rebuilt (their identity is the store's), so a function inside
them is checked for being a function only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from relay_ref.diagnostics import Note
from relay_ref.interpreter.args import value_mismatch
from relay_ref.interpreter.stuck import Stuck
from relay_ref.interpreter.values import Closure, RecClosure, Value
from relay_ref.ir.expr import Call, Constructor, Function, Op, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.span import Span
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.types import FuncType, TupleType, Type
from relay_ref.typecheck.casts import Cast, needs_cast

__all__ = ["CastClosure", "arg_cast", "cast_failure", "cast_value", "result_cast"]


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


def cast_failure(cast: Cast, message: str, span: Span | None = None) -> Stuck:
    """Stuck-Cast: the value at ``cast`` does not have its static type."""
    note = Note(f"{cast.rule} gave it type {type_to_text(cast.target)}, consistent with its "
                f"value's type {type_to_text(cast.source)} only through ? dimensions "
                "(spec/typing.md 5.1): a cast point")
    return Stuck(f"cast failed ({cast.rule}): {cast.what}: {message}", span or cast.span,
                 (note,), rule="Stuck-Cast")


def cast_value(value: Value, cast: Cast, mod: IRModule, span: Span | None = None,
               compiled: bool = False) -> Value:
    """E-Cast (spec/semantics.md 4.2): ``value`` checked against ``cast.target`` (Stuck-Cast
    at ``span`` or the cast's own span if not), with the functions inside it that need it
    wrapped. ``compiled``: the executor's value representation (``value_mismatch``)."""
    problem = value_mismatch(value, cast.target, mod, compiled=compiled)
    if problem is not None:
        raise cast_failure(cast, problem[0].replace(" (no implicit casts)", ""), span)
    return _wrap(value, cast.source, cast.target, cast, mod)


def _wrap(value: Value, source: Type, target: Type, cast: Cast, mod: IRModule) -> Value:
    """Wrap the function values at function-typed positions (top level, tuple fields)
    where ``needs_cast(source, target)``. Recursion follows the *type*, which is small."""
    if type(target) is FuncType and type(source) is FuncType:
        if not needs_cast(source, target):
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
            return _compiled_proxy(value, own, mod)
        return value
    if type(target) is TupleType and type(source) is TupleType and type(value) is tuple \
            and len(value) == len(target.fields) == len(source.fields) \
            and needs_cast(source, target):
        return tuple(_wrap(v, s, t, cast, mod) for v, s, t in
                     zip(value, source.fields, target.fields, strict=True))
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
                f"argument {i} of a function cast by {cast.rule} ({cast.what})", cast.span)


def result_cast(cast: Cast) -> Cast | None:
    """The cast of the result of a function wrapped by ``cast``: to ``target``'s result
    type, if it needs one."""
    src, tgt = cast.source, cast.target
    assert type(src) is FuncType and type(tgt) is FuncType
    if not needs_cast(src.ret_type, tgt.ret_type):
        return None
    return Cast(cast.rule, src.ret_type, tgt.ret_type,
                f"the result of a function cast by {cast.rule} ({cast.what})", cast.span)


def _compiled_proxy(fn: object, cast: Cast, mod: IRModule) -> object:
    """A function of compiled code wrapped for ``cast`` (the executor's CastClosure). Its
    failures are ``Stuck``, which the executor's error mapping reports as they are."""
    src = cast.source
    assert type(src) is FuncType
    arg_casts = [arg_cast(cast, i) for i in range(len(src.arg_types))]
    ret = result_cast(cast)

    def proxy(*args: object) -> object:
        args = tuple(a if c is None else cast_value(a, c, mod, compiled=True)
                     for a, c in zip(args, arg_casts, strict=False))
        result = fn(*args)  # type: ignore[operator]
        return result if ret is None else cast_value(result, ret, mod, compiled=True)

    proxy.relay_cast_inner = fn  # type: ignore[attr-defined]
    return proxy
