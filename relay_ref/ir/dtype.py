"""Data type names as TVM reads them (``String2DLDataType`` in TVM's ``runtime/data_type.h``)
and prints them (``DLDataType2String``), restricted to the ones relay_ref can represent.

TVM reads a dtype name as a code prefix (``int``, ``uint``, ``float``, ``bfloat``,
``handle``), an optional bit width (missing or ``0``: the code's default, 32 for int, uint
and float) and optional lanes ``xN``; ``bool`` is exactly ``bool`` (uint, 1 bit). So ``int``
is int32, ``float`` float32, ``uint`` uint32, ``float32x1`` float32 and ``uint1`` bool.

Invariant: ``canonical_dtype`` returns the name TVM's printer writes for the same type, and
is the identity on canonical names (``canonical_dtype(canonical_dtype(s)) ==
canonical_dtype(s)``).
"""

from __future__ import annotations

import re

__all__ = ["canonical_dtype"]

# code prefix, bit width digits, lanes digits (spec/syntax.md S-DType)
_NAME = re.compile(r"(int|uint|float|bfloat|handle)([0-9]*)(?:x([0-9]+))?")
_DEFAULT_BITS = {"int": 32, "uint": 32, "float": 32, "bfloat": 16, "handle": 64}
# Widths relay_ref computes with (NumPy's) plus bfloat16, which types may name.
_SUPPORTED = {"int": (8, 16, 32, 64), "uint": (1, 8, 16, 32, 64), "float": (16, 32, 64),
              "bfloat": (16,)}


def canonical_dtype(name: str) -> str:
    """The canonical name of dtype ``name`` (``"float"`` -> ``"float32"``).

    Raises ``ValueError`` (plain words) for names TVM rejects (``boolx4``, ``integer``) and
    for names TVM accepts that relay_ref cannot represent (``handle``, ``int4``,
    ``float8``)."""
    if name == "bool":
        return "bool"
    m = _NAME.fullmatch(name)
    if m is None:
        raise ValueError(f"unknown data type '{name}'")
    code, bits_text, lanes_text = m.groups()
    if code == "handle":
        raise ValueError(f"the data type '{name}' (an opaque handle) is not supported")
    bits = int(bits_text) if bits_text else 0
    bits = bits or _DEFAULT_BITS[code]  # TVM: a missing or zero width is the default
    lanes = int(lanes_text) if lanes_text is not None else 1
    if bits not in _SUPPORTED[code] or lanes == 0:
        raise ValueError(f"the data type '{name}' is not supported (supported: bool, "
                         "int8/16/32/64, uint8/16/32/64, float16/32/64, bfloat16, "
                         "optionally with lanes as in float32x4)")
    if code == "uint" and bits == 1 and lanes == 1:
        return "bool"  # TVM prints uint1 as bool
    return f"{code}{bits}" + (f"x{lanes}" if lanes > 1 else "")
