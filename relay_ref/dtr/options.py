"""``rr.compile``'s DTR arguments, checked once at compile time (spec/dtr.md).

``memory_budget``: None (no DTR) or a budget as ``parse_budget`` reads it: bytes (an
``int`` >= 0, NumPy's included), a fraction of the unbudgeted peak (a ``float`` in (0, 1]),
or a string: ``"1048576"`` (bytes), ``"0.4"`` (a fraction) or ``"40%"`` (a percentage in
(0, 100]). A fraction becomes bytes by ``resolve_budget`` (``ceil(ratio * peak)``), the one
resolution ``rr.compile``, the simulator and the CLIs share. ``heuristic``: a name of the
engine's heuristics table or ablation family (``relay_ref.dtr.heuristics``); ``dealloc``:
``DEALLOCS``; ``cost``: ``COSTS``; ``dtr_log``: a path (str or ``os.PathLike``) whose
directory exists and is writable, or None.

Invariant: ``DTROptions`` only holds checked values; every bad argument is a ``DTRError``
(spec/dtr.md §7: an ``rr.RelayError`` and a ``ValueError``) naming the argument and what it
may be, or a ``TypeError`` for a value of the wrong Python type, raised before anything is
compiled.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["COSTS", "DEALLOCS", "Budget", "DTROptions", "check_dtr_log", "check_heuristic",
           "dtr_options", "parse_budget", "resolve_budget"]

#: ``dealloc``: what the program's last reference dropping does (spec/dtr.md, Release)
DEALLOCS: tuple[str, ...] = ("eager", "banish", "ignore")
#: ``cost``: the compute cost model of a kernel step (``relay_ref.dtr.costmodel``)
COSTS: tuple[str, ...] = ("flops", "unit", "measured")


def check_heuristic(value: object) -> str:
    """``heuristic`` checked against the engine's table and the ablation family
    (``relay_ref.dtr.heuristics.get_heuristic``): its canonical name."""
    from relay_ref.dtr.heuristics import get_heuristic, heuristic_names

    if not isinstance(value, str):
        raise TypeError(f"heuristic must be a str, one of {', '.join(heuristic_names())}; "
                        f"not {type(value).__name__}")
    return get_heuristic(value).name


@dataclass(frozen=True, slots=True)
class DTROptions:
    """Checked DTR arguments: ``budget_bytes`` (an absolute budget) or ``ratio`` (a
    fraction of the unbudgeted peak, resolved on the first call), never both."""

    budget_bytes: int | None
    ratio: float | None
    heuristic: str = "dtr_eq"
    dealloc: str = "eager"
    cost: str = "flops"
    log: str | None = None
    seed: int = 0

    def describe(self) -> str:
        """The budget as given: ``1048576 bytes`` or ``40% of the unbudgeted peak``."""
        if self.budget_bytes is not None:
            return f"{self.budget_bytes} bytes"
        return f"{self.ratio * 100:g}% of the unbudgeted peak"  # type: ignore[operator]


@dataclass(frozen=True, slots=True)
class Budget:
    """A parsed budget: ``bytes`` (absolute) or ``ratio`` (a fraction in (0, 1] of the
    unbudgeted peak), exactly one of them set."""

    bytes: int | None
    ratio: float | None


_INT_RE = re.compile(r"[+-]?\d+")
_WHAT = ("bytes (an int >= 0), a fraction of the unbudgeted peak (a float in (0, 1]) or a "
         "string like \"1048576\", \"0.4\" or \"40%\"")


def parse_budget(value: object, name: str = "memory_budget", *,
                 ratio_only: bool = False) -> Budget:
    """``value`` as a ``Budget``: the one budget parser of ``rr.compile``, the simulator and
    the CLIs. An int (``numbers.Integral``, NumPy's included; not a bool) is bytes, a float
    (``numbers.Real``) a fraction; a string of digits is bytes, ``"0.4"`` a fraction,
    ``"40%"`` a percentage. ``ratio_only`` (``relay dtr sweep --budgets``): every number is
    a fraction. ``DTRError`` (a ``ValueError``) naming ``name`` for a bad value, ``TypeError``
    for another type."""
    from relay_ref.dtr.errors import DTRError

    if isinstance(value, (bool, np.bool_)):
        raise DTRError(f"{name} must be {_WHAT}, not {value!r}")
    if isinstance(value, str):
        text = value.strip()
        number = text[:-1] if text.endswith("%") else text
        try:
            value = int(number) if _INT_RE.fullmatch(number) and not ratio_only and \
                number == text else float(number)
        except ValueError:
            raise DTRError(f"{name}: {text!r} is not a budget: give {_WHAT}") from None
        if number != text:  # a percentage
            if not math.isfinite(value) or not 0 < value <= 100:
                raise DTRError(f"{name}: the percentage {text} is not in (0%, 100%]")
            return Budget(None, value / 100)
    elif not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {_WHAT}, not {type(value).__name__} {value!r}")
    if isinstance(value, numbers.Integral) and not ratio_only:
        if value < 0:
            raise DTRError(f"{name}: {value} bytes: a budget in bytes must be non-negative")
        return Budget(int(value), None)
    ratio = float(value)
    if not math.isfinite(ratio) or not 0 < ratio <= 1:
        hint = ""
        if ratio > 1 and ratio.is_integer() and not ratio_only:
            hint = f" (bytes are an integer: {int(ratio)})"
        raise DTRError(f"{name}: the fraction {value} of the unbudgeted peak is not in "
                       f"(0, 1]{hint}")
    return Budget(None, ratio)


def resolve_budget(budget: object, peak: int | None, name: str = "budget") -> int | None:
    """The budget in bytes: ``budget`` (a ``Budget`` or anything ``parse_budget`` reads;
    None: no budget, None) given in bytes, or its fraction of ``peak`` rounded up
    (``ceil(ratio * peak)``, at least 1; a product within 1e-9 of an integer is that
    integer, so 0.6 of 718855 is 431313, not 431314). The one resolution of a fractional
    budget: ``rr.compile``, the simulator and ``relay dtr sweep`` agree on it."""
    if budget is None:
        return None
    if not isinstance(budget, Budget):
        budget = parse_budget(budget, name)
    if budget.bytes is not None:
        return budget.bytes
    if peak is None:
        from relay_ref.dtr.errors import DTRError

        raise DTRError(f"{name}: a fractional budget needs the unbudgeted peak")
    exact = budget.ratio * int(peak)  # type: ignore[operator]
    near = round(exact)
    return max(1, near if abs(exact - near) <= 1e-9 * max(1.0, exact) else math.ceil(exact))


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {', '.join(allowed)}; not "
                        f"{type(value).__name__}")
    if value not in allowed:
        from relay_ref.dtr.errors import DTRError
        from relay_ref.suggest import did_you_mean

        raise DTRError(f"unknown {name} {value!r}{did_you_mean(value, allowed)} (one of "
                         f"{', '.join(allowed)})")
    return value


def check_dtr_log(path: object, name: str = "dtr_log") -> None:
    """``path`` (a log to write, or None) checked before anything runs: its directory
    exists and is writable and it is not itself a directory; ``DTRError`` naming ``name``
    otherwise (the log is written at the end of a call: a bad path must not cost a run)."""
    if path is None:
        return
    from relay_ref.dtr.errors import DTRError

    target = os.fspath(path)  # type: ignore[arg-type]
    directory = os.path.dirname(target) or "."
    if os.path.isdir(target):
        raise DTRError(f"{name}: {target} is a directory, not a file to write the log to")
    if not os.path.isdir(directory):
        raise DTRError(f"{name}: {target}: no directory {directory}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise DTRError(f"{name}: {target}: the directory {directory} is not writable")


def dtr_options(memory_budget: object, heuristic: object = "dtr_eq",
                dealloc: object = "eager", cost: object = "flops",
                dtr_log: object = None) -> DTROptions | None:
    """The checked options, or None when ``memory_budget`` is None (no DTR; the other
    arguments are still checked, so a misspelt one never passes silently)."""
    heuristic = check_heuristic(heuristic)
    dealloc = _choice("dealloc", dealloc, DEALLOCS)
    cost = _choice("cost", cost, COSTS)
    if dtr_log is not None and not isinstance(dtr_log, (str, os.PathLike)):
        raise TypeError(f"dtr_log must be a path (str or os.PathLike) or None, not "
                        f"{type(dtr_log).__name__}")
    if memory_budget is None:
        if dtr_log is not None:
            from relay_ref.dtr.errors import DTRError

            raise DTRError("dtr_log needs a memory_budget (the log records a DTR run)")
        return None
    check_dtr_log(dtr_log)
    parsed = parse_budget(memory_budget)
    return DTROptions(parsed.bytes, parsed.ratio, str(heuristic), str(dealloc), str(cost),
                      None if dtr_log is None else os.fspath(dtr_log))  # type: ignore[arg-type]
