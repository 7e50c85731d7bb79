"""What a focused check exercises: ``Focus`` (operators and expression forms) and the
focused signatures and values the program generator draws for it.

``resolve_focus(names)`` reads ``check_pass``'s ``focus=``: each name is an operator
(``"maximum"``, ``"nn.relu"``), an op family (a module of ``relay_ref.ops``: ``"reduce"``,
``"nn"``, ``"transform"``; all its operators) or an expression form (``FOCUS_FORMS``:
``"if"``, ``"match"``, ``"ref"``, ``"closure"``, ``"loop"``...). Unknown names are a
``ValueError`` with a did-you-mean hint.

``focus_sigs(op)``: the signatures a focused call of ``op`` is drawn from -- first those
built from the op's *values that matter* (``OpDef.values``: its ``attrs`` and ``args``,
zero extents allowed, so a reduction sees empty and size-1 axes), then the op's ordinary
signatures. ``focus_values(ops, dtype)``: the element values the focused ops' tables add to
the ordinary pool for ``dtype``. Both read data tables only (``relay_ref.ops``'s ``values``
aspect): the generator has no per-op logic.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from relay_ref.ops.registry import all_ops
from relay_ref.suggest import did_you_mean

__all__ = ["FOCUS_FORMS", "ORDINARY_MAGNITUDE", "Focus", "focus_sigs", "focus_values",
           "resolve_focus"]

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


def resolve_focus(focus: str | Iterable[str] | Focus | None) -> Focus:
    """The ``Focus`` named by ``focus``: a comma-separated string or names (operators, op
    families, ``FOCUS_FORMS``). Raises ``ValueError`` for an unknown name."""
    from relay_ref.testing.programs import op_table

    if focus is None:
        return Focus()
    if isinstance(focus, Focus):
        return focus
    names = [n.strip() for n in (focus.split(",") if isinstance(focus, str) else focus)]
    names = [n for n in names if n]
    table = op_table()
    ops: list[str] = []
    forms: list[str] = []
    for name in names:
        if name in table.by_op:
            ops.append(name)
        elif name in table.families:
            ops += table.families[name]
        elif name in FOCUS_FORMS:
            forms.append(FOCUS_FORMS[name])
        else:
            known = [*table.by_op, *table.families, *FOCUS_FORMS]
            extra = (" (it has no generated calls)" if name in all_ops() else "")
            raise ValueError(f"check_pass: focus {name!r} is not an operator, op family or "
                             f"expression form{extra}{did_you_mean(name, known, quote=True)}"
                             f" (families: {', '.join(sorted(table.families))}; forms: "
                             f"{', '.join(FOCUS_FORMS)})")
    if not names:
        raise ValueError("check_pass: focus names nothing")
    return Focus(tuple(dict.fromkeys(ops)), tuple(dict.fromkeys(forms)), tuple(names))


@functools.cache
def focus_sigs(op_name: str) -> tuple:
    """Signatures (``programs.Sig``) for focused calls of ``op_name``: those from its
    ``values`` table first (attributes x argument types; zero extents allowed), then its
    ordinary ones."""
    from relay_ref.testing.programs import _accepted, _arg_candidates, _expand_example, op_table

    op = all_ops()[op_name]
    ordinary = list(op_table().by_op.get(op_name, ()))
    values = op.values
    if values is None or not (values.attrs or values.args):
        return tuple(ordinary)
    from relay_ref.ops.registry import make_attrs

    attrs: list[object] = []
    for items in values.attrs or ({},):
        try:
            attrs.append(make_attrs(op_name, dict(items)))
        except Exception:  # noqa: BLE001 - a table entry this op refuses: skipped
            continue
    if not values.attrs:
        attrs += [s.attrs for s in ordinary[:1]]
    args = [a for spec in values.args for a in _expand_example(spec)] + _arg_candidates(op)
    special = _accepted(op, attrs, args, empty=True)
    return tuple(special + ordinary)


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
