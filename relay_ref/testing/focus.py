"""What a focused check exercises: ``Focus`` (operators and expression forms) and the
values the program generator draws for it.

``programs.resolve_focus(names)`` reads ``check_pass``'s ``focus=``: each name is an
operator (``"maximum"``, ``"nn.relu"``), an op family (a module of ``relay_ref.ops``:
``"reduce"``, ``"nn"``, ``"transform"``; all its operators) or an expression form
(``FOCUS_FORMS``: ``"if"``, ``"match"``, ``"ref"``, ``"closure"``, ``"loop"``...). Unknown
names are a ``ValueError`` with a did-you-mean hint.

``programs.focus_sigs(op)``: the signatures a focused call of ``op`` is drawn from -- first
those built from the op's *values that matter* (``OpDef.values``: its ``attrs`` and
``args``, zero extents allowed, so a reduction sees empty and size-1 axes), then the op's
ordinary signatures (both live with the generator whose signature tables they read: this
module imports nothing of it). ``focus_values(ops, dtype)``: the element values the focused
ops' tables add to the ordinary pool for ``dtype``. All read data tables only
(``relay_ref.ops``'s ``values`` aspect): the generator has no per-op logic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from relay_ref.ops.registry import all_ops

__all__ = ["FOCUS_FORMS", "ORDINARY_MAGNITUDE", "Focus", "focus_values"]

#: expression forms a focus may name -> the generator's form (``programs.FORMS``) it favours
FOCUS_FORMS: dict[str, str] = {
    "if": "if", "match": "match", "ref": "ref", "closure": "apply", "apply": "apply",
    "hof": "hof", "loop": "loop", "global": "global", "let": "let", "tuple": "proj",
    "proj": "proj", "share": "share", "duplicate": "dup",
}


@dataclass(frozen=True)
class Focus:
    """Operators and generator forms to put into most generated programs. ``names``: what
    the user (or the automatic search) asked for, as given; ``sigs`` and ``constants``:
    what the automatic search saw make the pass fire."""

    ops: tuple[str, ...] = ()
    forms: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    #: signatures (``programs.Sig``) on which the pass was seen to fire (the automatic
    #: focus's one-call probes): drawn for half the focused calls of their operators
    sigs: tuple = ()
    #: constant operand values that made it fire there (``x * 1``, ``x + 0``): half the
    #: later operands of focused calls are constants filled with one of them
    constants: tuple = ()

    def __bool__(self) -> bool:
        return bool(self.ops or self.forms)

    def __str__(self) -> str:
        return ", ".join(self.names) or "(nothing)"


#: with ``edge=False``, floating-point values that matter are kept only up to this magnitude
ORDINARY_MAGNITUDE = 1e6


def focus_values(ops: Iterable[str], dtype: str, edge: bool = True) -> tuple:
    """Element values the ``values`` tables of ``ops`` add for tensors of ``dtype`` (those
    the dtype can hold: no out-of-range integers). ``edge=False`` (``check_pass``'s
    ``edge_values=False``, for a pass that reassociates float arithmetic): no inf, NaN or
    float values beyond ``ORDINARY_MAGNITUDE`` (where reassociation may overflow in one
    order and not the other)."""
    registry = all_ops()
    if dtype == "bool":
        return ()
    kind = "floats" if dtype.startswith("float") else "ints"
    found: list = []
    for name in ops:
        values = registry[name].values if name in registry else None
        if values is not None:
            found += getattr(values, kind)
    if kind == "ints":
        info = np.iinfo(np.dtype(dtype))
        found = [v for v in found if info.min <= v <= info.max]
    elif not edge:
        found = [v for v in found if abs(v) <= ORDINARY_MAGNITUDE]  # (False for NaN)
    out: list = []
    for v in found:  # dict.fromkeys would merge 0.0 and -0.0, and never dedupe NaN
        if not any(repr(v) == repr(w) for w in out):
            out.append(v)
    return tuple(out)
