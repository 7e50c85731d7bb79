"""The DTR simulator: replay a log (relay_ref/dtr/log.py) through the engine without running
kernels (spec/dtr.md §8), as the paper's simrd does.

Conventions (the artifact's ``parse_file`` and runtime V2, learnt, not copied):
* the run starts after the first ``ANNOTATE START`` when the log has one;
* a CONSTANT is pinned (D-Pin) and counted in the budget; COPY adds a reference, RELEASE
  drops one (releasing a name never defined is ignored, as the artifact does);
* a CALL's results are its MEMORY/ALIAS pairs; a view (ALIAS j >= 0) shares argument
  j's storage (D-Alias); MUTATE is copy-on-write (a fresh output of the mutated argument's
  size rebinds the name, the old tensor is released); COPY_FROM rebinds DST to SRC's tensor;
* cost per call: ``"measured"`` (TIME), ``"unit"`` (1), ``"flops"`` (FLOPS, which this
  project's runtime writes; an error if a call has none);
* ``access="simrd"`` (the engine's D-Access convention) reproduces the artifact's own
  numbers (spec/dtr.md §8); the default, ``"lock"``, is the runtime's;
* at the end, every tensor the program still references must be resident (D-Output):
  evicted ones are rematerialised, and kept;
* a ratio budget (a float in (0, 1]) is a fraction of the log's own unbudgeted peak,
  measured by a first pass with no budget, banishing on release (so released constants are
  freed, as without DTR; under eager eviction a released constant stays pinned, so a log
  that releases constants may need a little more than its peak at ratio 1.0, as in simrd);
* an infeasible budget is not an error: the stats come back with ``oom`` set; a run whose
  rematerialisation cost exceeds ``(overhead_limit - 1)`` times the log's base cost stops
  with ``thrashed`` set (the paper's limit, 2).
"""

from __future__ import annotations

import dataclasses
import linecache
import math
import numbers
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from relay_ref.dtr.engine import Engine, Tensor
from relay_ref.dtr.errors import DTRError, DTRLogError, DTROutOfMemory
from relay_ref.dtr.heuristics import Heuristic
from relay_ref.dtr.log import (
    LogAlias,
    LogAnnotate,
    LogCall,
    LogConstant,
    LogCopy,
    LogCopyFrom,
    LogMemory,
    LogMutate,
    LogRecord,
    LogRelease,
    read_log,
)
from relay_ref.dtr.stats import DTRStats
from relay_ref.suggest import did_you_mean

__all__ = ["COST_MODELS", "SweepPoint", "base_cost", "resolve_budget", "simulate", "sweep",
           "unbudgeted_peak"]

COST_MODELS = ("measured", "unit", "flops")


class _Thrash(Exception):
    """The rematerialisation limit was passed."""


def resolve_budget(budget: int | float | str | None, peak: int | None) -> int | None:
    """Bytes from ``budget``: an int (bytes, >= 0), a float in (0, 1] or a string ``"40%"``
    (a fraction of ``peak``), or None (no budget). ``DTRError`` otherwise."""
    if budget is None:
        return None
    if isinstance(budget, str):
        text = budget.strip()
        try:
            budget = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise DTRError(f"a DTR budget is bytes (int), a ratio in (0, 1] or a percentage "
                           f"like '40%', not {text!r}") from None
    if isinstance(budget, bool):
        raise DTRError(f"a DTR budget is bytes (int) or a ratio (float), not {budget!r}")
    if isinstance(budget, numbers.Integral):
        budget = int(budget)
        if budget < 0:
            raise DTRError(f"a DTR budget in bytes must be non-negative, not {budget}")
        return budget
    if isinstance(budget, numbers.Real):
        budget = float(budget)
        if not (0.0 < budget <= 1.0) or math.isnan(budget):
            raise DTRError(f"a DTR budget ratio must be in (0, 1], not {budget}")
        if peak is None:
            raise DTRError("a ratio budget needs the unbudgeted peak")
        return int(peak * budget)
    raise DTRError(f"a DTR budget is bytes (int) or a ratio (float), not "
                   f"{type(budget).__name__}")


def _records(log: str | os.PathLike | Iterable[str] | Sequence[LogRecord]) -> list[LogRecord]:
    if isinstance(log, (list, tuple)) and log and not isinstance(log[0], str):
        return list(log)  # already parsed
    return read_log(log)


def _label(log: object) -> str:
    return os.fspath(log) if isinstance(log, (str, os.PathLike)) else "<log>"


def base_cost(records: Sequence[LogRecord], cost: str = "measured") -> float:
    """The log's total compute under the cost model (the unbudgeted run's base_compute)."""
    return sum(_cost(r, cost, "<log>") for r in records if isinstance(r, (LogCall, LogMutate)))


def _cost(r: LogCall | LogMutate, cost: str, label: str) -> float:
    if cost == "measured":
        return float(r.time)
    if cost == "unit":
        return 1.0
    if r.flops is None:
        raise DTRLogError(label, r.line, f"cost='flops' but this {type(r).__name__[3:].upper()}"
                          " has no FLOPS field (the paper's logs have none: use 'measured' "
                          "or 'unit')")
    return float(r.flops)


def unbudgeted_peak(log: str | os.PathLike | Iterable[str] | Sequence[LogRecord],
                    cost: str = "measured") -> int:
    """The log's peak memory with no budget (``_peak``: banishing on release)."""
    return _peak(_records(log), cost, _label(log))


def _peak(records: Sequence[LogRecord], cost: str, label: str) -> int:
    """The unbudgeted peak: no budget, banishing on release (every released storage is freed,
    released constants included, as the program itself would; simrd's baseline, runtime V1
    with an infinite budget, does the same)."""
    return _replay(records, None, "lru", "banish", cost, label, math.inf).peak_bytes


def simulate(log: str | os.PathLike | Iterable[str] | Sequence[LogRecord],
             budget: int | float | str | None, heuristic: str | Heuristic = "dtr_eq",
             dealloc: str = "eager", cost: str = "measured", *, seed: int = 0,
             overhead_limit: float = 2.0, access: str = "lock") -> DTRStats:
    """Replay ``log`` (a path, an iterable of lines, or records from ``read_log``) under
    ``budget`` (bytes; a ratio in (0, 1] or ``"40%"`` of the log's unbudgeted peak; None)
    and return the run's statistics. Infeasible: ``oom`` set. Stops with ``thrashed`` set
    once rematerialisation costs more than ``overhead_limit - 1`` times the base cost
    (``math.inf``: never). ``access``: the engine's D-Access convention (``"simrd"``
    reproduces the paper's artifact)."""
    if cost not in COST_MODELS:
        raise DTRError(f"unknown cost model {cost!r}{did_you_mean(str(cost), COST_MODELS)} "
                       f"(known: {', '.join(COST_MODELS)})")
    label = _label(log)
    records = _records(log)
    peak = None
    if isinstance(budget, (numbers.Real, str)) and not isinstance(budget, numbers.Integral):
        peak = _peak(records, cost, label)
    limit = base_cost(records, cost) * (overhead_limit - 1) if overhead_limit != math.inf \
        else math.inf
    return _replay(records, resolve_budget(budget, peak), heuristic, dealloc, cost, label,
                   limit, seed, access)


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One run of a sweep: the budget ``ratio`` of the unbudgeted peak, the heuristic's
    name and the run's statistics (``stats.budget`` is the budget in bytes)."""

    ratio: float
    heuristic: str
    stats: DTRStats


def sweep(log: str | os.PathLike | Iterable[str] | Sequence[LogRecord],
          ratios: Sequence[float], heuristics: Sequence[str | Heuristic] = ("dtr_eq",),
          dealloc: str = "eager", cost: str = "measured", *, seed: int = 0,
          overhead_limit: float = 2.0, access: str = "lock",
          progress: Callable[[int, int], None] | None = None) -> list[SweepPoint]:
    """``simulate`` at every ratio (of the unbudgeted peak) for every heuristic, reading
    the log and measuring the peak once; heuristic-major order. ``progress(done, total)``
    is called after each run (a CLI's progress bar)."""
    if cost not in COST_MODELS:
        raise DTRError(f"unknown cost model {cost!r}{did_you_mean(str(cost), COST_MODELS)} "
                       f"(known: {', '.join(COST_MODELS)})")
    label = _label(log)
    records = _records(log)
    peak = _peak(records, cost, label)
    budgets = [resolve_budget(float(r), peak) for r in ratios]  # checks every ratio first
    limit = base_cost(records, cost) * (overhead_limit - 1) if overhead_limit != math.inf \
        else math.inf
    out: list[SweepPoint] = []
    total = len(budgets) * len(heuristics)
    for h in heuristics:
        for ratio, budget in zip(ratios, budgets, strict=True):
            st = _replay(records, budget, h, dealloc, cost, label, limit, seed, access)
            out.append(SweepPoint(float(ratio), st.heuristic, st))
            if progress is not None:
                progress(len(out), total)
    return out


def _replay(records: Sequence[LogRecord], budget: int | None, heuristic: str | Heuristic,
            dealloc: str, cost: str, label: str, remat_limit: float, seed: int = 0,
            access: str = "lock") -> DTRStats:
    engine = Engine(budget, heuristic=heuristic, dealloc=dealloc, seed=seed, access=access)
    try:
        _drive(engine, records, cost, label, remat_limit)
    except DTROutOfMemory:
        return engine.stats
    except _Thrash:
        return dataclasses.replace(engine.stats, thrashed=True)
    return engine.stats


def _drive(engine: Engine, records: Sequence[LogRecord], cost: str, label: str,
           remat_limit: float) -> None:
    start = next((i + 1 for i, r in enumerate(records)
                  if isinstance(r, LogAnnotate) and r.annotation == "START"), 0)
    names: dict[str, Tensor] = {}
    i, n = start, len(records)

    def bad(r: LogRecord, problem: str) -> DTRLogError:
        text = ""
        if os.path.isfile(label):
            linecache.checkcache(label)
            text = linecache.getline(label, r.line).rstrip("\r\n")
        return DTRLogError(label, r.line, problem, text)

    def lookup(r: LogRecord, name: str) -> Tensor:
        t = names.get(name)
        if t is None:
            raise bad(r, f"{name} is not defined (no CONSTANT, CALL or COPY made it)"
                      f"{did_you_mean(name, names)}")
        return t

    while i < n:
        r = records[i]
        i += 1
        if isinstance(r, LogConstant):
            m = records[i] if i < n else None
            if not isinstance(m, LogMemory) or m.name != r.name:
                raise bad(r, f"CONSTANT {r.name} must be followed by its MEMORY line")
            i += 1
            names[r.name] = engine.constant(m.nbytes, name=r.name)
        elif isinstance(r, LogCall):
            sizes: list[int] = []
            aliases: list[int | None] = []
            for res in r.results:
                m = records[i] if i < n else None
                a = records[i + 1] if i + 1 < n else None
                if not (isinstance(m, LogMemory) and m.name == res
                        and isinstance(a, LogAlias) and a.name == res):
                    raise bad(r, f"CALL {r.name}: result {res} must be followed by its MEMORY "
                              "and ALIAS lines, in that order")
                if a.alias >= len(r.args):
                    raise bad(a, f"ALIAS {a.alias} out of range for {len(r.args)} ARGS")
                i += 2
                aliases.append(None if a.alias < 0 else a.alias)
                sizes.append(0 if a.alias >= 0 else m.nbytes)
            args = [lookup(r, x) for x in r.args]
            for res in r.results:
                if res in names:
                    raise bad(r, f"CALL {r.name}: result {res} is already defined")
            outs = engine.call(r.name, args, sizes, _cost(r, cost, label), None, aliases)
            names.update(zip(r.results, outs, strict=True))
        elif isinstance(r, LogMutate):
            args = [lookup(r, x) for x in r.args]
            sizes = [args[k].storage.size for k in r.mutate]
            outs = engine.call(r.name, args, sizes, _cost(r, cost, label), None)
            for k, out in zip(r.mutate, outs, strict=True):
                old = names[r.args[k]]
                names[r.args[k]] = out
                engine.release(old)
        elif isinstance(r, LogCopy):
            names[r.dst] = engine.retain(lookup(r, r.src))
        elif isinstance(r, LogCopyFrom):
            old = lookup(r, r.dst)
            src = lookup(r, r.src)
            names[r.dst] = src
            engine.release(old)
            engine.retain(src)
        elif isinstance(r, LogRelease):
            t = names.get(r.name)
            if t is not None:
                if t.refs <= 0:
                    raise bad(r, f"RELEASE {r.name}: no reference left to release")
                engine.release(t)
        elif isinstance(r, LogAnnotate):
            pass
        else:
            raise bad(r, f"{type(r).__name__[3:].upper()} {getattr(r, 'name', '')} outside a "
                      "CONSTANT or CALL")
        if engine.remat_compute > remat_limit:
            raise _Thrash
    live = {id(t): t for t in names.values() if t.refs > 0}
    engine.require_resident(live.values())  # D-Output
