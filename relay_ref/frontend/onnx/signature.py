"""A node's input element types against its operator's signature.

An ONNX schema names a type parameter for each input (``T``, ``T1`` ...), and one node
binds each parameter to one element type: Add's two inputs, MatMul's, Clip's input and
bounds, Where's branches, Range's three scalars, Concat's inputs all have the same type.
A node that binds a parameter to two types is invalid: onnx.checker (with shape
inference) and onnxruntime refuse it, onnx's reference evaluator computes it with NumPy's
promotion, and the Relay ops would compute something else again (``nn.matmul`` of an
int32 by a float32 matrix gives int32). ``mismatch`` finds such a node so that the
importer refuses it, naming the node. Inputs of different parameters (Pow's base and
exponent, GridSample's data and grid) may differ, and their converters say how they are
computed.

Invariants: only inputs whose formal type is a parameter of the schema's type
constraints are compared (a literal ``tensor(int64)`` is not this check's concern);
inputs without a tensor type (absent, a tuple) are skipped; a heterogeneous variadic
input (Loop's loop-carried values) binds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

_Formal = tuple[str, bool]  # (type parameter or "", variadic)


@cache
def _formals(op_type: str, version: int) -> tuple[_Formal, ...]:
    """The schema's inputs at op version ``version``: each input's type parameter (""
    when it is a literal type or binds nothing) and whether it is variadic."""
    import onnx

    try:
        schema = onnx.defs.get_schema(op_type, version, "")
    except Exception:  # onnx.defs.SchemaError: survey has refused such a node already
        return ()
    params = {c.type_param_str for c in schema.type_constraints}
    variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
    out = []
    for f in schema.inputs:
        is_variadic = f.option == variadic
        binds = f.type_str in params and (f.is_homogeneous or not is_variadic)
        out.append((f.type_str if binds else "", is_variadic))
    return tuple(out)


def mismatch(op_type: str, version: int, dtypes: Sequence[str | None]) -> str | None:
    """Why a node of ``op_type``-``version`` with inputs of element types ``dtypes`` (None
    for an absent input or one that is not a tensor) is ill-typed, None when it is not."""
    formals = _formals(op_type, version)
    first: dict[str, tuple[int, str]] = {}  # parameter -> (input, its dtype)
    for i, dtype in enumerate(dtypes):
        if i < len(formals):
            param = formals[i][0]
        elif formals and formals[-1][1]:  # the trailing variadic input takes the rest
            param = formals[-1][0]
        else:
            break
        if not param or dtype is None:
            continue
        if param not in first:
            first[param] = (i, dtype)
        elif first[param][1] != dtype:
            j, other = first[param]
            return (f"inputs {j} ({other}) and {i} ({dtype}) must have the same element "
                    f"type ({param} in the signature of {op_type}-{version})")
    return None
