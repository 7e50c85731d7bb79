"""Scalar math of the generated elementwise kernels on the device, and their templates.

numba's CUDA target compiles only a few NumPy functions on scalars (its ufunc table,
``numba.cuda.ufuncs.ufunc_db()``: no ``exp``, ``sqrt``, ``floor``, ``power``, ...), so the
CPU templates of ``relay_ref.compute.cpu.elementwise`` cannot all be used as they are.
``TEMPLATES`` is that table with the float templates that call NumPy functions replaced by
calls of this module's functions, ``sm.<fn>_<dtype>(...)`` (the generated source imports
this module as ``sm``); integer ``sign`` becomes a select.

The functions, one per (function, float dtype):

* on a GPU, device functions over libdevice (``floorf`` for float32, ``floor`` for float64:
  float32 math stays in single precision) or numba's CUDA ``math`` (``math.isinf``);
* under numba's simulator, which runs device functions as Python (where ``math.exp`` raises
  on overflow and ``math.sqrt(-1)`` on a negative, while a GPU returns inf / NaN), the NumPy
  function of the CPU template: the reference's semantics, elementwise.

Invariant (``tests/cuda/test_cuda_target.py``): every ``np.<name>(`` in generated CUDA source
is a dtype constructor or in numba's CUDA ufunc table; ``scripts/cuda_ptx_check.py`` compiles
every template to PTX.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda  # a module global: the simulator swaps it in per launch

from relay_ref.compute.cpu.elementwise import TEMPLATES as CPU_TEMPLATES
from relay_ref.compute.cpu.elementwise import OpTemplates, Template

__all__ = ["FUNCTIONS", "TEMPLATES"]

FLOATS = ("float32", "float64")

#: function -> (NumPy function: the simulator's and the reference's; libdevice name of the
#: float64 version, "" when numba's CUDA ``math`` has it; number of arguments)
_TABLE: dict[str, tuple[Any, str, int]] = {
    "exp": (np.exp, "exp", 1),
    "sqrt": (np.sqrt, "sqrt", 1),
    "floor": (np.floor, "floor", 1),
    "ceil": (np.ceil, "ceil", 1),
    "trunc": (np.trunc, "trunc", 1),
    "rint": (np.rint, "rint", 1),
    "fabs": (np.abs, "fabs", 1),
    "sin": (np.sin, "sin", 1),
    "cos": (np.cos, "cos", 1),
    "tan": (np.tan, "tan", 1),
    "isinf": (np.isinf, "", 1),
    "isfinite": (np.isfinite, "", 1),
    "pow": (np.power, "pow", 2),
    "fmod": (np.fmod, "fmod", 2),
}


def _device(name: str, dtype: str) -> Any:
    """The device function ``name`` of ``dtype`` (see the module docstring)."""
    _, lib, nargs = _TABLE[name]
    if lib:
        from numba.cuda import libdevice

        fn = getattr(libdevice, lib + ("f" if dtype == "float32" else ""))
    else:
        fn = getattr(math, name)
    if nargs == 1:
        @cuda.jit(device=True)
        def unary(x):
            return fn(x)
        return unary

    @cuda.jit(device=True)
    def binary(x, y):
        return fn(x, y)
    return binary


def _sign(dtype: str) -> Any:
    one, minus_one = np.dtype(dtype).type(1), np.dtype(dtype).type(-1)

    @cuda.jit(device=True)
    def sign(x):  # NaN stays NaN, a zero stays 0 (np.sign); constants of x's dtype
        return x if x != x or x == 0 else (one if x > 0 else minus_one)
    return sign


def _functions() -> dict[str, Any]:
    from relay_ref.compute.cuda import simulator

    sim = simulator()
    out: dict[str, Any] = {}
    for name, (ref, _, _) in _TABLE.items():
        for dtype in FLOATS:
            out[f"{name}_{dtype}"] = ref if sim else _device(name, dtype)
    out.update({f"sign_{dtype}": np.sign if sim else _sign(dtype) for dtype in FLOATS})
    return out


#: ``<fn>_<dtype>`` -> the function (also this module's globals, for ``sm.<fn>_<dtype>``)
FUNCTIONS = _functions()
globals().update(FUNCTIONS)


def _f(expr: str) -> Template:
    return Template(expr)


def _override(name: str, **by_kind: str) -> OpTemplates:
    cpu = CPU_TEMPLATES[name]
    kinds = {**cpu.by_kind, **{k: _f(e) for k, e in by_kind.items()}}
    return OpTemplates(kinds, cpu.kind_of, cpu.consts, cpu.check)


_FLOAT_OVERRIDES: dict[str, str] = {
    "floor_divide": "sm.floor_{t}({0} / {1})",
    "mod": "sm.fmod_{t}({0}, {1})",
    "floor_mod": "{0} - sm.floor_{t}({0} / {1}) * {1}",
    "power": "sm.pow_{t}({0}, {1})",
    "abs": "sm.fabs_{t}({0})",
    "sign": "sm.sign_{t}({0})",
    "exp": "sm.exp_{t}({0})",
    "fast_exp": "sm.exp_{t}({0})",
    "sqrt": "sm.sqrt_{t}({0})",
    "rsqrt": "{T}(1) / sm.sqrt_{t}({0})",
    "sigmoid": "{T}(1) / ({T}(1) + sm.exp_{t}(-{0}))",
    "sin": "sm.sin_{t}({0})",
    "cos": "sm.cos_{t}({0})",
    "tan": "sm.tan_{t}({0})",
    "floor": "sm.floor_{t}({0})",
    "ceil": "sm.ceil_{t}({0})",
    "trunc": "sm.trunc_{t}({0})",
    "round": "sm.rint_{t}({0})",  # ties to even, as np.round
    "isinf": "sm.isinf_{t}({0})",
    "isfinite": "sm.isfinite_{t}({0})",
}

#: the CUDA scalar templates: the CPU table with the overrides above
TEMPLATES: dict[str, OpTemplates] = {
    **CPU_TEMPLATES,
    **{name: _override(name, f=expr) for name, expr in _FLOAT_OVERRIDES.items()},
}
TEMPLATES["sign"] = _override("sign", f=_FLOAT_OVERRIDES["sign"],
                              i="{T}({0} > 0) - {T}({0} < 0)")
# numba's older built-in CUDA target types neither ``np.isnan`` nor the builtin ``max`` /
# ``min`` of two integers: selects, which every version compiles
TEMPLATES["isnan"] = _override("isnan", f="{0} != {0}")
_CLIP_HI = "({0} if {0} < {hi} else {hi})"
for _name, _int in (("maximum", "{0} if {0} > {1} else {1}"),
                    ("minimum", "{0} if {0} < {1} else {1}"),
                    ("clip", f"{_CLIP_HI} if {_CLIP_HI} > {{lo}} else {{lo}}")):
    TEMPLATES[_name] = _override(_name, i=_int, u=_int)
TEMPLATES["nn.relu"] = _override("nn.relu", i="{0} if {0} > {T}(0) else {T}(0)")
