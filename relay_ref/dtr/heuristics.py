"""The eviction heuristics, as data (spec/dtr.md §4): one table, name -> ``Heuristic``,
each a short scoring function of a resident, evictable storage. D-Evict evicts the storage
of lowest score (ties: the last one scanned; a score of 0 stops the scan).

Every score reads the storage's metadata through ``Metadata`` (the engine): staleness
``s(S) = clock - last_access(S)`` (clock = cumulative compute, D-Access), memory
``m(S) = S.size``, and one of four costs:

* ``local_cost(S)`` = c0(S), the cost of the calls that made S's tensors (D-Alloc);
* ``estar_cost(S)`` = c0(S) + Σ c0 over the exact evicted neighbourhood e*(S);
* ``eq_cost(S)`` = c0(S) + the cost sums of the union-find classes of S's evicted
  neighbours (ẽ*, the paper's appendix C.2, ``relay_ref/dtr/unionfind.py``);
* ``ancestors_cost(S)`` = c0(S) + Σ c0 over S's evicted ancestors only (e_R, MSPS).

A quotient whose denominator is 0 (a storage accessed at this very clock tick, or of size
0) scores +inf: never chosen while something else can be.

Names: ``dtr``, ``dtr_eq``, ``dtr_local``, ``lru``, ``size``, ``msps``, ``random`` and
the ablation family ``ablation(s=1,m=1,c=eq)`` (``s``, ``m`` in {0, 1}; ``c`` in
``estar`` (also ``e*``), ``eq``, ``local``, ``none``), built by ``ablation(s, m, c)``.
``get_heuristic(name)`` resolves a name; an unknown one is a ``DTRError`` that lists the
known names (with a "did you mean").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from relay_ref.dtr.errors import DTRError
from relay_ref.suggest import did_you_mean

__all__ = ["ABLATION_COSTS", "HEURISTICS", "Heuristic", "Metadata", "ablation",
           "get_heuristic", "heuristic_names"]


class Metadata(Protocol):
    """What a score may read: the engine's view of a storage's metadata (each call counts
    as metadata accesses in ``DTRStats.heuristic_evaluations``)."""

    def staleness(self, s: Any) -> float: ...
    def local_cost(self, s: Any) -> float: ...
    def estar_cost(self, s: Any) -> float: ...
    def eq_cost(self, s: Any) -> float: ...
    def ancestors_cost(self, s: Any) -> float: ...
    def random(self) -> float: ...


Score = Callable[[Metadata, Any], float]


@dataclass(frozen=True, slots=True)
class Heuristic:
    """A named score. ``uses_eq``: the engine must maintain the union-find classes
    (D-Evict's and D-Remat's eq-class updates) for it. ``formula``: as spec/dtr.md §4."""

    name: str
    score: Score
    formula: str
    uses_eq: bool = False


def _q(num: float, den: float) -> float:
    """num / den, +inf when den is 0 (spec/dtr.md §4)."""
    return num / den if den > 0 else math.inf


def _dtr(md: Metadata, s: Any) -> float:
    return _q(md.estar_cost(s), s.size * md.staleness(s))


def _dtr_eq(md: Metadata, s: Any) -> float:
    return _q(md.eq_cost(s), s.size * md.staleness(s))


def _dtr_local(md: Metadata, s: Any) -> float:
    return _q(md.local_cost(s), s.size * md.staleness(s))


def _lru(md: Metadata, s: Any) -> float:
    return _q(1.0, md.staleness(s))


def _size(md: Metadata, s: Any) -> float:
    return _q(1.0, s.size)


def _msps(md: Metadata, s: Any) -> float:
    return _q(md.ancestors_cost(s), s.size)


def _random(md: Metadata, s: Any) -> float:
    return md.random()


# The table (spec/dtr.md §4 gives each formula).
HEURISTICS: dict[str, Heuristic] = {
    h.name: h for h in (
        Heuristic("dtr", _dtr, "[c0(S) + Σ_{e*(S)} c0] / [m(S) · s(S)]"),
        Heuristic("dtr_eq", _dtr_eq, "[c0(S) + Σ_{ẽ*(S)} c0] / [m(S) · s(S)]", uses_eq=True),
        Heuristic("dtr_local", _dtr_local, "c0(S) / [m(S) · s(S)]"),
        Heuristic("lru", _lru, "1 / s(S)"),
        Heuristic("size", _size, "1 / m(S)"),
        Heuristic("msps", _msps, "[c0(S) + Σ_{e_R(S)} c0] / m(S)"),
        Heuristic("random", _random, "U(0, 1), seeded"),
    )
}

# Ablation cost sources: name -> (Metadata method name, uses union-find).
ABLATION_COSTS: dict[str, tuple[str | None, bool]] = {
    "estar": ("estar_cost", False), "eq": ("eq_cost", True),
    "local": ("local_cost", False), "none": (None, False),
}
_ABLATION_RE = re.compile(
    r"ablation\(\s*s\s*=\s*([01])\s*,\s*m\s*=\s*([01])\s*,\s*c\s*=\s*(e\*|\w+)\s*\)")


def ablation(s: bool, m: bool, c: str) -> Heuristic:
    """The paper's ablation family h'(s, m, c) = c / (m · s) (spec/dtr.md §4.2): staleness
    and size each on or off, cost from ``estar`` (e*; ``e*`` also accepted), ``eq``
    (union-find class), ``local`` or ``none`` (1). Named ``ablation(s=1,m=0,c=eq)``."""
    c = "estar" if c == "e*" else c
    if c not in ABLATION_COSTS:
        raise DTRError(f"unknown ablation cost {c!r}{did_you_mean(c, ABLATION_COSTS)} "
                       f"(known: {', '.join(ABLATION_COSTS)})")
    method, uses_eq = ABLATION_COSTS[c]
    use_s, use_m = bool(s), bool(m)

    def score(md: Metadata, st: Any) -> float:
        num = 1.0 if method is None else getattr(md, method)(st)
        den = (md.staleness(st) if use_s else 1.0) * (st.size if use_m else 1.0)
        return _q(num, den)

    formula = "{} / ({})".format("1" if method is None else f"c_{c}(S)",
                                 " · ".join(x for x, on in (("m(S)", use_m), ("s(S)", use_s))
                                            if on) or "1")
    return Heuristic(f"ablation(s={int(use_s)},m={int(use_m)},c={c})", score, formula,
                     uses_eq=uses_eq)


def heuristic_names() -> list[str]:
    """The table's names, then the ablation family's pattern."""
    return [*HEURISTICS, "ablation(s=0|1,m=0|1,c=estar|eq|local|none)"]


def get_heuristic(name: str | Heuristic) -> Heuristic:
    """The heuristic named ``name`` (a ``Heuristic`` is returned as is); ``DTRError``
    listing the known names when there is none."""
    if isinstance(name, Heuristic):
        return name
    if not isinstance(name, str):
        raise DTRError(f"a heuristic is a name (str), not {type(name).__name__}")
    if name in HEURISTICS:
        return HEURISTICS[name]
    m = _ABLATION_RE.fullmatch(name.strip())
    if m:
        return ablation(m.group(1) == "1", m.group(2) == "1", m.group(3))
    raise DTRError(f"unknown DTR heuristic {name!r}{did_you_mean(name, HEURISTICS)} "
                   f"(known: {', '.join(heuristic_names())})")
