"""The golden programs under ``tests/programs`` as test inputs for whole-program sweeps
(passes against the interpreter, the executor against the interpreter).

* ``fixed_arguments(mod)``: deterministic arguments for ``@main`` (small non-negative
  values, alternating booleans), or None when a parameter is not a tensor of a static type;
* ``load_golden(path)``: ``(type-checked module, arguments)``, or None for a program that
  does not type-check, has no ``@main`` or takes other than static tensors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from relay_ref.diagnostics import RelayError
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType

__all__ = ["fixed_arguments", "load_golden"]


def fixed_arguments(mod: IRModule) -> tuple | None:
    """Deterministic arguments for ``@main`` (see the module docstring)."""
    out = []
    for i, param in enumerate(mod.functions["main"].params):
        ty = param.type_annotation
        if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
            return None
        size = int(np.prod(ty.shape, dtype=np.int64))
        if ty.dtype == "bool":
            data = (np.arange(size) + i) % 2 == 0
        else:
            data = ((np.arange(size) + i + 1) % 4).astype(ty.dtype)  # small, >= 0
        out.append(np.asarray(data).reshape(ty.shape))
    return tuple(out)


def load_golden(path: Path) -> tuple[IRModule, tuple] | None:
    """The golden program at ``path``, type-checked, with ``fixed_arguments``."""
    from relay_ref.prelude import prelude_fallback
    from relay_ref.syntax.parser import parse
    from relay_ref.typecheck.infer import infer_types

    try:
        mod = infer_types(parse(path.read_text(), str(path), fallback=prelude_fallback()))
    except RelayError:
        return None
    if "main" not in mod.functions:
        return None
    args = fixed_arguments(mod)
    return None if args is None else (mod, args)
