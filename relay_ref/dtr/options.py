"""``rr.compile``'s DTR arguments, checked once at compile time (spec/dtr.md).

``memory_budget``: None (no DTR), bytes (a positive ``int``), a fraction of the unbudgeted
peak (a ``float`` in (0, 1]), or a string: ``"40%"`` (a percentage in (0, 100]), ``"0.4"``
(a fraction) or ``"1048576"`` (bytes). ``heuristic``: a name of the engine's heuristics
table or ablation family (``relay_ref.dtr.heuristics``); ``dealloc``: ``DEALLOCS``;
``cost``: ``COSTS``; ``dtr_log``: a path (str or ``os.PathLike``) or None.

Invariant: ``DTROptions`` only holds checked values; every bad argument is a ``TypeError``
(wrong Python type) or ``ValueError`` (a value out of range or unknown; an unknown heuristic
is the engine's ``DTRError``, an ``rr.RelayError``) naming the argument and what it may be,
raised before anything is compiled.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

__all__ = ["COSTS", "DEALLOCS", "DTROptions", "check_heuristic", "dtr_options",
           "parse_budget"]

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


def parse_budget(value: object) -> tuple[int | None, float | None]:
    """``memory_budget`` -> (bytes, None) or (None, ratio); see the module docstring."""
    what = ("memory_budget must be bytes (a positive int), a fraction of the unbudgeted "
            "peak (a float in (0, 1]) or a string like \"40%\"")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"{what}, not {type(value).__name__} {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            if text.endswith("%"):
                number = float(text[:-1])
                if not math.isfinite(number) or not 0 < number <= 100:
                    raise ValueError
                return None, number / 100
            if text.isdigit():
                value = int(text)
            else:
                value = float(text)
        except ValueError:
            raise ValueError(f"{what}; {value!r} is none of these") from None
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"{what}; {value} bytes is not positive")
        return value, None
    if not math.isfinite(value) or not 0 < value <= 1:
        raise ValueError(f"{what}; the fraction {value!r} is not in (0, 1]")
    return None, float(value)


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {', '.join(allowed)}; not "
                        f"{type(value).__name__}")
    if value not in allowed:
        from relay_ref.suggest import did_you_mean

        raise ValueError(f"unknown {name} {value!r}{did_you_mean(value, allowed)} (one of "
                         f"{', '.join(allowed)})")
    return value


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
            raise ValueError("dtr_log needs a memory_budget (the log records a DTR run)")
        return None
    budget, ratio = parse_budget(memory_budget)
    return DTROptions(budget, ratio, str(heuristic), str(dealloc), str(cost),
                      None if dtr_log is None else os.fspath(dtr_log))  # type: ignore[arg-type]
