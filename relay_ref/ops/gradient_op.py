"""The ``gradient`` operator: ``gradient(@f)`` is ``@f``'s gradient in TVM's shape
(spec/ad.md AD-Grad-Op, AD-Grad).

Its relation (``Gradient``) is over function types, not tensors:
``fn(T1..Tn) -> O`` gives ``fn(T1..Tn) -> (O, (T1..Tn))``, for inputs and a result made of
tensors, tuples and ADTs. It has no run-time meaning of its own: the public API
(``rr.evaluate``, ``rr.compile``, ``rr.gradient``) expands every call by the AD pass
(``relay_ref.passes.gradient``) before anything runs, so the operator layer and the
interpreter never import the passes. Its reference says so when a program reaches it
unexpanded (the interpreter called directly).
"""

from __future__ import annotations

from relay_ref.ir.types import FuncType, TensorType, TupleType, Type, TypeCall, has_hole
from relay_ref.ops.registry import NOT_YET, NoAttrs, OpRuntimeError, RelationError, register_op
from relay_ref.ops.relations import check_arity, describe

#: operators whose relation is over function types, not tensors (the tensor-operator tests
#: -- relation examples, differential tests, the program generator's table -- skip them)
FUNCTION_OPS = frozenset({"gradient"})


def _data(ty: Type) -> bool:
    """First-order data: what a gradient is taken with respect to, and of."""
    match ty:
        case TensorType():
            return True
        case TupleType(fields):
            return all(_data(f) for f in fields)
        case TypeCall(_, args):
            return all(_data(a) for a in args)
    return False


def gradient_rel(arg_types: list[Type], attrs: object) -> object:
    """Gradient: ``fn(T1..Tn) -> O`` |-> ``fn(T1..Tn) -> (O, (T1..Tn))``."""
    check_arity("gradient", arg_types, 1)
    ty = arg_types[0]
    if has_hole(ty):
        return NOT_YET
    if not isinstance(ty, FuncType):
        raise RelationError(f"gradient: the argument must be a function, found {describe(ty)}")
    if ty.type_params:
        raise RelationError("gradient: the function must not be polymorphic (give its type "
                            "parameters concrete types)")
    for t in (*ty.arg_types, ty.ret_type):
        if not _data(t):
            raise RelationError(f"gradient: the function's parameters and result must be "
                                f"tensors, tuples or ADTs of those, found {describe(t)}")
    return FuncType(ty.arg_types, TupleType((ty.ret_type, TupleType(ty.arg_types))))


gradient_rel.relation_name = "Gradient"  # type: ignore[attr-defined]


def gradient_ref(args: list, attrs: object) -> object:
    raise OpRuntimeError("gradient(...) is expanded by the AD pass before a program runs "
                         "(rr.evaluate, rr.compile and rr.gradient do it; "
                         "relay_ref.passes.gradient.expand_gradients for a module)")


register_op("gradient", relation=gradient_rel, reference=gradient_ref, num_inputs=1,
            attrs=NoAttrs, arg_names=("fn",), support_level=10,
            doc="The gradient of a function in TVM's shape: fn(T1..Tn) -> O becomes "
                "fn(T1..Tn) -> (O, (T1..Tn)) (spec/ad.md). Expanded by the AD pass before "
                "a program runs.")
