"""Relax-style constructs as operators (spec/typing.md 5.2-5.5, spec/semantics.md Shape-*):
``match_cast``, ``call_dps_packed`` / ``call_tir`` and ``dataflow``.

They are ordinary ``Call``s of registered ops, so every pass, the printer's fallback, the
alpha-equality and the sharing analyses handle them without new IR node kinds; the text
format gives them their own syntax (spec/syntax.md S-MatchCast, S-DPS, S-Dataflow):

* ``match_cast(%v, Tensor[(k), int64])`` is ``Call(Op("match_cast"), (v,), MatchCastAttrs(T))``:
  the value unchanged, its type refined to ``T``; shape variables of ``T`` not yet bound in
  the enclosing function are bound by it (Shape-MatchCast); checked at run time.
* ``call_dps_packed("f", (%x, %y), Tensor[(n, 4), float32])`` is
  ``Call(Op("call_dps_packed"), (Tuple(x, y),), DPSAttrs("f", T))``: allocate the output from
  ``T`` (shape variables resolved in the current function), call the function registered
  with ``rr.register_packed("f", fn)`` as ``fn(*inputs, *outputs, *sym_args)``, return the
  output (Shape-DPS). ``call_tir`` is the same with ``op == "call_tir"``.
* ``dataflow { let %a = ...; %b }`` is ``Call(Op("dataflow"), (body,))``: the value of its
  body, which the checker requires to be pure straight-line code (Shape-Dataflow).

The references here know no shape environment: ``match_cast`` checks what its own type
fixes (rank, dtype, numbers, a variable used twice); the interpreter and the executor run
these three ops themselves with the current function's shape variables (spec/semantics.md
Shape-Bind), and call the references only for what is left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import ShapeBindError, bind_shape, eval_shape
from relay_ref.ir.types import TensorType, TupleType, Type, has_hole
from relay_ref.ops.registry import NOT_YET, OpRuntimeError, RelationError, register_op
from relay_ref.ops.relations import check_arity, describe


@dataclass(frozen=True, slots=True)
class MatchCastAttrs:
    """The type ``match_cast`` refines its argument to."""

    type: Type | None = None


@dataclass(frozen=True, slots=True)
class DPSAttrs:
    """The registered function's name and the output's type (a tensor or a tuple of
    tensors, in destination-passing style)."""

    func_name: str = ""
    out_type: Type | None = None


#: the four ops of this module. They are not drawn by the generic generated-op table
#: (``relay_ref.testing.programs.op_table``): match_cast's and the DPS calls' attributes
#: hold a Type, a DPS call needs a registered function, and a dataflow block constrains
#: the form of its body (Shape-Dataflow); ``relay_ref.testing.symbolic_programs``
#: generates them in well-formed positions instead.
SYMBOLIC_OPS = frozenset({"match_cast", "call_dps_packed", "call_tir", "dataflow"})


# ---- the packed-function registry (rr.register_packed) -----------------------------------

_PACKED: dict[str, Callable[..., object]] = {}


def register_packed(name: str, fn: Callable[..., object], *, replace: bool = False) -> None:
    """Make ``fn`` callable from ``call_dps_packed(name, ...)`` / ``call_tir(name, ...)``.
    ``fn(*inputs, *outputs, *sym_args)`` writes its results into the pre-allocated
    ``outputs`` (NumPy arrays) and returns nothing (a returned value is an error; the inputs
    are read-only views, so writing into them is one too); ``sym_args`` are the values of the
    symbolic integers it asks for (a ``sym_args=("n", ...)`` attribute on ``fn``, in order)."""
    if not isinstance(name, str) or not name:
        raise TypeError("register_packed: the name must be a non-empty string")
    if not callable(fn):
        raise TypeError(f"register_packed: {name!r} must be given a callable, not "
                        f"{type(fn).__name__}")
    if name in _PACKED and not replace and _PACKED[name] is not fn:
        raise ValueError(f"a packed function {name!r} is already registered "
                         "(pass replace=True to replace it)")
    _PACKED[name] = fn


def packed_function(name: str) -> Callable[..., object] | None:
    """The function registered under ``name``, or ``None``."""
    return _PACKED.get(name)


def packed_names() -> list[str]:
    return sorted(_PACKED)


# ---- relations -----------------------------------------------------------------------------


def _tensor_types(ty: Type) -> list[TensorType] | None:
    if isinstance(ty, TensorType):
        return [ty]
    if isinstance(ty, TupleType) and all(isinstance(f, TensorType) for f in ty.fields):
        return list(ty.fields)  # type: ignore[arg-type]
    return None


def _match_cast_rel(arg_types: list[Type], attrs: MatchCastAttrs) -> object:
    """Shape-MatchCast (static part): the argument must be able to have the target type
    (same kind, rank and dtype; dimensions not provably different); the result is the
    target type. Binding the target's new shape variables is the checker's (T-ShapeScope)."""
    check_arity("match_cast", arg_types, 1)
    target = attrs.type
    if target is None:
        raise RelationError("match_cast: missing the target type")
    ty = arg_types[0]
    if has_hole(ty):
        return NOT_YET
    have, want = _tensor_types(ty), _tensor_types(target)
    if have is None or want is None or len(have) != len(want) or \
            isinstance(ty, TupleType) != isinstance(target, TupleType):
        raise RelationError(f"match_cast: cannot cast {describe(ty)} to {describe(target)}")
    from relay_ref.ir.shape import dims_compatible
    for a, b in zip(have, want, strict=True):
        if a.dtype != b.dtype:
            raise RelationError(f"match_cast: dtype differs ({a.dtype} vs {b.dtype})")
        if len(a.shape) != len(b.shape):
            raise RelationError(f"match_cast: rank differs ({len(a.shape)} vs {len(b.shape)})")
        for i, (x, y) in enumerate(zip(a.shape, b.shape, strict=True)):
            if not dims_compatible(x, y):
                raise RelationError(f"match_cast: dimension {i} can never match ({x} vs {y})")
    return target


def _dps_rel(op: str):  # noqa: ANN202 - a relation
    def rel(arg_types: list[Type], attrs: DPSAttrs) -> object:
        check_arity(op, arg_types, 1)
        if attrs.out_type is None or _tensor_types(attrs.out_type) is None:
            raise RelationError(f"{op}: the output type must be a tensor or a tuple of "
                                f"tensors, found {describe(attrs.out_type)}")
        if not attrs.func_name:
            raise RelationError(f"{op}: missing the function name")
        ty = arg_types[0]
        if has_hole(ty):
            return NOT_YET
        if not isinstance(ty, TupleType) or _tensor_types(ty) is None:
            raise RelationError(f"{op}: the arguments must be a tuple of tensors, found "
                                f"{describe(ty)}")
        return attrs.out_type
    return rel


def _is_data(ty: Type) -> bool:
    """A tensor or a (nested) tuple of tensors: what a dataflow block may produce."""
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(t.fields)
        elif not isinstance(t, TensorType):
            return False
    return True


def _dataflow_rel(arg_types: list[Type], attrs: object) -> object:
    """Shape-Dataflow (the value part): the block's value, a tensor or a tuple of them
    (closures, references and type variables do not leave a dataflow block)."""
    check_arity("dataflow", arg_types, 1)
    ty = arg_types[0]
    if has_hole(ty):
        return NOT_YET
    if not _is_data(ty):
        raise RelationError(f"dataflow: the block's value must be a tensor or a tuple of "
                            f"tensors, found {describe(ty)}")
    return ty


# ---- references (no shape environment: see the module docstring) --------------------------


def _as_tuple(value: object) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def match_value(value: object, target: Type, env: dict[str, int]) -> None:
    """Check ``value`` against ``target`` and bind its new shape variables into ``env``
    (Shape-Bind); raises ``OpRuntimeError`` naming the dimension and both values."""
    want = _tensor_types(target)
    have = _as_tuple(value)
    if want is None or len(have) != len(want) or \
            isinstance(value, tuple) != isinstance(target, TupleType):
        raise OpRuntimeError(f"match_cast: the value does not have the form of "
                             f"{describe(target)}")
    for k, (v, t) in enumerate(zip(have, want, strict=True)):
        arr = np.asarray(v)
        where = f"field {k}, " if isinstance(target, TupleType) else ""
        if str(arr.dtype) != t.dtype:
            raise OpRuntimeError(f"match_cast: {where}dtype is {arr.dtype}, expected {t.dtype}")
        try:
            bind_shape(t.shape, arr.shape, env)
        except ShapeBindError as err:
            raise OpRuntimeError(f"match_cast: {where}{err}") from None


def _match_cast_ref(args: list, attrs: MatchCastAttrs) -> object:
    match_value(args[0], attrs.type, {})  # type: ignore[arg-type]
    return args[0]


def allocate_outputs(out_type: Type, env: dict[str, int]) -> tuple[np.ndarray, ...]:
    """Fresh zeroed outputs for ``out_type`` with its shape variables resolved in ``env``;
    ``OpRuntimeError`` if one has no value."""
    outs = []
    for t in _tensor_types(out_type) or ():
        try:
            shape = eval_shape(t.shape, env)
        except KeyError as err:
            raise OpRuntimeError(f"the output type {describe(out_type)} mentions "
                                 f"{err.args[0]}, which has no value here") from None
        outs.append(np.zeros(shape, dtype=t.dtype))
    return tuple(outs)


def call_packed(op: str, attrs: DPSAttrs, inputs: tuple, env: dict[str, int]) -> object:
    """Shape-DPS: allocate, call the registered function in destination-passing style,
    check it left the outputs' shapes alone, return the output(s)."""
    fn = packed_function(attrs.func_name)
    if fn is None:
        from relay_ref.suggest import did_you_mean
        hint = did_you_mean(attrs.func_name, packed_names())
        raise OpRuntimeError(f"{op}: no packed function {attrs.func_name!r} is registered "
                             f"(rr.register_packed){hint}")
    outs = allocate_outputs(attrs.out_type, env)  # type: ignore[arg-type]
    sym_names = tuple(getattr(fn, "sym_args", ()))
    try:
        sym_vals = tuple(env[n] for n in sym_names)
    except KeyError as err:
        raise OpRuntimeError(f"{op}: {attrs.func_name!r} asks for the shape variable "
                             f"{err.args[0]}, which has no value here") from None
    frozen = tuple(_read_only(x) for x in inputs)
    try:
        returned = fn(*frozen, *outs, *sym_vals)
    except Exception as err:  # a user's kernel failing is a located run-time error
        raise OpRuntimeError(f"{op}: {attrs.func_name!r} failed: "
                             f"{type(err).__name__}: {err}") from None
    if returned is not None:  # destination-passing style: a returned result would be lost
        raise OpRuntimeError(f"{op}: {attrs.func_name!r} returned a "
                             f"{type(returned).__name__}; a packed function writes its "
                             "results into the output arrays it is given and returns None")
    return outs[0] if isinstance(attrs.out_type, TensorType) else outs


def _read_only(x: object) -> np.ndarray:
    """A read-only view of an input: a packed function that writes into its inputs (a
    caller's array, a bound weight) fails at the call instead of changing them."""
    view = np.asarray(x).view()
    view.flags.writeable = False
    return view


def _dps_ref(op: str):  # noqa: ANN202 - a reference
    def ref(args: list, attrs: DPSAttrs) -> object:
        return call_packed(op, attrs, _as_tuple(args[0]), {})
    return ref


def _dataflow_ref(args: list, attrs: object) -> object:
    return args[0]


register_op("match_cast", attrs=MatchCastAttrs, num_inputs=1, arg_names=("data",),
            support_level=10, relation=_match_cast_rel, reference=_match_cast_ref,
            relation_name="MatchCast",
            doc="Relax's match_cast: the value unchanged, its type refined to ``type`` "
                "(binding new shape variables); checked at run time.")
for _op in ("call_dps_packed", "call_tir"):
    register_op(_op, attrs=DPSAttrs, num_inputs=1, arg_names=("args",), support_level=10,
                relation=_dps_rel(_op), reference=_dps_ref(_op), relation_name="DPS",
                doc="Relax's destination-passing call: allocate ``out_type``, call the "
                    "function registered under ``func_name`` with the inputs, the outputs "
                    "and its symbolic integers, return the outputs.")
register_op("dataflow", num_inputs=1, arg_names=("body",), support_level=10,
            relation=_dataflow_rel, reference=_dataflow_ref, relation_name="Identity",
            doc="Relax's dataflow block: the value of its body, pure straight-line code.")
