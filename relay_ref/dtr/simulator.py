"""The DTR simulator: replay a log (relay_ref/dtr/log.py) through the engine without running
kernels (spec/dtr.md §8), as the paper's simrd does.

Conventions (the artifact's ``parse_file`` and runtime V2, learnt, not copied):
* the run starts after the first ``ANNOTATE START`` when the log has one;
* a CONSTANT is pinned (D-Pin) and counted in the budget; COPY adds a reference, RELEASE
  drops one (releasing a name never defined is ignored, as the artifact does);
* ``PIN`` (this project's extension, never in the artifact's logs): the name is pinned
  (D-Pin) and its RELEASE frees it for good (D-Free), as the runtime did: a runtime log
  replays to the run's evictions, replays, operator count and peak;
* a CALL's results are its MEMORY/ALIAS pairs; a view (ALIAS j >= 0) shares argument
  j's storage (D-Alias); MUTATE is copy-on-write (a fresh output of the mutated argument's
  size rebinds the name, the old tensor is released); COPY_FROM rebinds DST to SRC's tensor;
* cost per call: ``"measured"`` (TIME), ``"unit"`` (1), ``"flops"`` (FLOPS, which this
  project's runtime writes; an error if a call has none), ``"auto"`` (the default:
  ``"flops"`` when every CALL and MUTATE has FLOPS, as a runtime log does, so the replay is
  deterministic; ``"measured"`` otherwise, as for the paper's logs);
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
from typing import Any

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
    LogPin,
    LogRecord,
    LogRelease,
    read_log,
)
from relay_ref.dtr.stats import DTRStats
from relay_ref.suggest import did_you_mean

__all__ = ["COST_MODELS", "SweepPoint", "auto_cost", "base_cost", "resolve_budget", "simulate",
           "sweep", "unbudgeted_peak"]

COST_MODELS = ("measured", "unit", "flops")
#: what ``simulate``/``sweep`` accept: the models, and ``"auto"`` (``auto_cost``)
COST_CHOICES = ("auto", *COST_MODELS)


class _Thrash(Exception):
    """The rematerialisation limit was passed."""


def resolve_budget(budget: int | float | str | None, peak: int | None) -> int | None:
    """Bytes from ``budget``: an int (bytes, >= 0), a float in (0, 1] or a string ``"40%"``
    (a fraction of ``peak``), or None (no budget). ``DTRError`` otherwise. The runtime's
    parser and rounding (``relay_ref.dtr.options.resolve_budget``: ``ceil(ratio * peak)``)."""
    from relay_ref.dtr.options import resolve_budget as resolve

    return resolve(budget, peak, "budget")


def auto_cost(records: Sequence[LogRecord]) -> str:
    """``cost="auto"``: ``"flops"`` when every CALL and MUTATE of ``records`` has a FLOPS
    field (a log this project's runtime wrote: deterministic), else ``"measured"``."""
    calls = [r for r in records if isinstance(r, (LogCall, LogMutate))]
    return "flops" if calls and all(r.flops is not None for r in calls) else "measured"


def _check_cost(cost: str, records: Sequence[LogRecord]) -> str:
    if cost not in COST_CHOICES:
        raise DTRError(f"unknown cost model {cost!r}{did_you_mean(str(cost), COST_CHOICES)} "
                       f"(known: {', '.join(COST_CHOICES)})")
    return auto_cost(records) if cost == "auto" else cost


def _records(log: str | os.PathLike | Iterable[str] | Sequence[LogRecord]) -> list[LogRecord]:
    return _read(log)[0]


def _read(log: str | os.PathLike | Iterable[str] | Sequence[LogRecord]
          ) -> tuple[list[LogRecord], list[str] | None]:
    """The records of ``log`` and, when it is given as lines, those lines (so that an error
    found while replaying can quote its line, as one found while parsing does)."""
    if isinstance(log, (list, tuple)) and log and not isinstance(log[0], str):
        return list(log), None  # already parsed
    if isinstance(log, (str, os.PathLike)):
        return read_log(log), None
    lines = list(log)
    return read_log(lines), lines


def _label(log: object) -> str:
    return os.fspath(log) if isinstance(log, (str, os.PathLike)) else "<log>"


def base_cost(records: Sequence[LogRecord], cost: str = "auto") -> float:
    """The log's total compute under the cost model (the unbudgeted run's base_compute)."""
    cost = _check_cost(cost, records)
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
                    cost: str = "auto") -> int:
    """The log's peak memory with no budget (``_peak``: banishing on release)."""
    records = _records(log)
    return _peak(records, _check_cost(cost, records), _label(log))


def _peak(records: Sequence[LogRecord], cost: str, label: str) -> int:
    """The unbudgeted peak: no budget, banishing on release (every released storage is freed,
    released constants included, as the program itself would; simrd's baseline, runtime V1
    with an infinite budget, does the same)."""
    return _replay(records, None, "lru", "banish", cost, label, math.inf).peak_bytes


def simulate(log: str | os.PathLike | Iterable[str] | Sequence[LogRecord],
             budget: int | float | str | None, heuristic: str | Heuristic = "dtr_eq",
             dealloc: str = "eager", cost: str = "auto", *, seed: int = 0,
             overhead_limit: float = 2.0, access: str = "lock") -> DTRStats:
    """Replay ``log`` (a path, an iterable of lines, or records from ``read_log``) under
    ``budget`` (bytes; a ratio in (0, 1] or ``"40%"`` of the log's unbudgeted peak; None)
    and return the run's statistics. Infeasible: ``oom`` set. Stops with ``thrashed`` set
    once rematerialisation costs more than ``overhead_limit - 1`` times the base cost
    (``math.inf``: never). ``access``: the engine's D-Access convention (``"simrd"``
    reproduces the paper's artifact). ``cost``: ``"auto"`` (``auto_cost``: FLOPS when the
    log has them for every call, else TIME), ``"flops"``, ``"unit"`` or ``"measured"``."""
    if cost not in COST_CHOICES:  # checked before reading the log
        _check_cost(cost, ())
    label = _label(log)
    records, lines = _read(log)
    cost = _check_cost(cost, records)
    peak = None
    if isinstance(budget, (numbers.Real, str)) and not isinstance(budget, numbers.Integral):
        peak = _peak(records, cost, label)
    limit = base_cost(records, cost) * (overhead_limit - 1) if overhead_limit != math.inf \
        else math.inf
    return _replay(records, resolve_budget(budget, peak), heuristic, dealloc, cost, label,
                   limit, seed, access, lines)


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One run of a sweep: the budget ``ratio`` of the unbudgeted peak, the heuristic's
    name and the run's statistics (``stats.budget`` is the budget in bytes)."""

    ratio: float
    heuristic: str
    stats: DTRStats


def sweep(log: str | os.PathLike | Iterable[str] | Sequence[LogRecord],
          ratios: Sequence[float], heuristics: Sequence[str | Heuristic] = ("dtr_eq",),
          dealloc: str = "eager", cost: str = "auto", *, seed: int = 0,
          overhead_limit: float = 2.0, access: str = "lock",
          progress: Callable[[int, int], None] | None = None) -> list[SweepPoint]:
    """``simulate`` at every ratio (of the unbudgeted peak) for every heuristic, reading
    the log and measuring the peak once; heuristic-major order. ``progress(done, total)``
    is called after each run (a CLI's progress bar)."""
    if cost not in COST_CHOICES:  # checked before reading the log
        _check_cost(cost, ())
    label = _label(log)
    records, lines = _read(log)
    cost = _check_cost(cost, records)
    peak = _peak(records, cost, label)
    budgets = [resolve_budget(float(r), peak) for r in ratios]  # checks every ratio first
    limit = base_cost(records, cost) * (overhead_limit - 1) if overhead_limit != math.inf \
        else math.inf
    out: list[SweepPoint] = []
    total = len(budgets) * len(heuristics)
    for h in heuristics:
        for ratio, budget in zip(ratios, budgets, strict=True):
            st = _replay(records, budget, h, dealloc, cost, label, limit, seed, access, lines)
            out.append(SweepPoint(float(ratio), st.heuristic, st))
            if progress is not None:
                progress(len(out), total)
    return out


def _replay(records: Sequence[LogRecord], budget: int | None, heuristic: str | Heuristic,
            dealloc: str, cost: str, label: str, remat_limit: float, seed: int = 0,
            access: str = "lock", lines: Sequence[str] | None = None) -> DTRStats:
    engine = Engine(budget, heuristic=heuristic, dealloc=dealloc, seed=seed, access=access)
    try:
        _drive(engine, records, cost, label, remat_limit, lines)
    except DTROutOfMemory:
        return engine.stats
    except _Thrash:
        return dataclasses.replace(engine.stats, thrashed=True)
    return engine.stats


class _Driver:
    """One replay of a log's records through ``engine`` (``_drive``): ``names`` maps the
    log's names to their tensors, ``held`` the PINned ones (their RELEASE is D-Free);
    ``pos`` is the next record. One handler per instruction (``_HANDLERS``); the CALL and
    CONSTANT handlers consume the MEMORY/ALIAS lines that follow them."""

    def __init__(self, engine: Engine, records: Sequence[LogRecord], cost: str,
                 label: str, lines: Sequence[str] | None = None) -> None:
        self.engine, self.records, self.cost, self.label = engine, records, cost, label
        self.lines = lines
        self.names: dict[str, Tensor] = {}
        self.held: set[str] = set()
        self.pos = 0

    def bad(self, r: LogRecord, problem: str) -> DTRLogError:
        return _located(self.label, r, problem, self.lines)

    def lookup(self, r: LogRecord, name: str) -> Tensor:
        t = self.names.get(name)
        if t is None:
            raise self.bad(r, f"{name} is not defined (no CONSTANT, CALL or COPY made it)"
                           f"{did_you_mean(name, self.names)}")
        return t

    def peek(self, k: int = 0) -> LogRecord | None:
        j = self.pos + k
        return self.records[j] if j < len(self.records) else None

    def constant(self, r: LogConstant) -> None:
        m = self.peek()
        if not isinstance(m, LogMemory) or m.name != r.name:
            raise self.bad(r, f"CONSTANT {r.name} must be followed by its MEMORY line")
        self.pos += 1
        self.names[r.name] = self.engine.constant(m.nbytes, name=r.name)

    def call(self, r: LogCall) -> None:
        sizes: list[int] = []
        aliases: list[int | None] = []
        for res in r.results:
            m, a = self.peek(), self.peek(1)
            if not (isinstance(m, LogMemory) and m.name == res
                    and isinstance(a, LogAlias) and a.name == res):
                wrong = m if not (isinstance(m, LogMemory) and m.name == res) else a
                found = "the log ends" if wrong is None else \
                    f"line {wrong.line} is {_instruction(wrong)} {getattr(wrong, 'name', '')}"
                raise self.bad(r, f"CALL {r.name}: result {res} must be followed by its "
                               f"MEMORY and ALIAS lines, in that order ({found})")
            if a.alias >= len(r.args):
                raise self.bad(a, f"ALIAS {a.alias} out of range for {len(r.args)} ARGS")
            self.pos += 2
            aliases.append(None if a.alias < 0 else a.alias)
            sizes.append(0 if a.alias >= 0 else m.nbytes)
        args = [self.lookup(r, x) for x in r.args]
        for res in r.results:
            if res in self.names:
                raise self.bad(r, f"CALL {r.name}: result {res} is already defined")
        outs = self.engine.call(r.name, args, sizes, _cost(r, self.cost, self.label), None,
                                aliases)
        self.names.update(zip(r.results, outs, strict=True))

    def mutate(self, r: LogMutate) -> None:
        args = [self.lookup(r, x) for x in r.args]
        for k in r.mutate:
            if not 0 <= k < len(args):
                raise self.bad(r, f"MUTATE {k} out of range for {len(args)} ARGS")
        sizes = [args[k].storage.size for k in r.mutate]
        outs = self.engine.call(r.name, args, sizes, _cost(r, self.cost, self.label), None)
        for k, out in zip(r.mutate, outs, strict=True):
            old = self.names[r.args[k]]
            self.names[r.args[k]] = out
            self.engine.release(old)

    def copy(self, r: LogCopy) -> None:
        self.names[r.dst] = self.engine.retain(self.lookup(r, r.src))

    def copy_from(self, r: LogCopyFrom) -> None:
        old = self.lookup(r, r.dst)
        src = self.lookup(r, r.src)
        self.names[r.dst] = src
        self.engine.release(old)
        self.engine.retain(src)

    def release(self, r: LogRelease) -> None:
        t = self.names.get(r.name)
        if t is not None and r.name in self.held:
            self.held.discard(r.name)
            self.engine.free(t)  # D-Free: the program's own value died
        elif t is not None:
            if t.refs <= 0:
                raise self.bad(r, f"RELEASE {r.name}: no reference left to release")
            self.engine.release(t)

    def pin(self, r: LogPin) -> None:
        self.engine.pin(self.lookup(r, r.name))  # D-Pin (this project's extension)
        self.held.add(r.name)

    def annotate(self, r: LogAnnotate) -> None:
        pass

    def stray(self, r: LogRecord) -> None:
        raise self.bad(r, f"{_instruction(r)} {getattr(r, 'name', '')} outside a CONSTANT or "
                       "CALL")


def _instruction(r: LogRecord) -> str:
    return {"LogCopyFrom": "COPY_FROM"}.get(type(r).__name__, type(r).__name__[3:].upper())


_HANDLERS: dict[type, Callable[[_Driver, Any], None]] = {
    LogConstant: _Driver.constant, LogCall: _Driver.call, LogMutate: _Driver.mutate,
    LogCopy: _Driver.copy, LogCopyFrom: _Driver.copy_from, LogRelease: _Driver.release,
    LogPin: _Driver.pin, LogAnnotate: _Driver.annotate,
}


def _located(label: str, r: LogRecord, problem: str,
             lines: Sequence[str] | None = None) -> DTRLogError:
    """A DTRLogError at ``r``'s line, with that line's text (from ``lines`` when the log was
    given as lines, else from the file ``label``)."""
    text = ""
    if lines is not None and 0 < r.line <= len(lines):
        text = lines[r.line - 1].rstrip("\r\n")
    elif os.path.isfile(label):
        linecache.checkcache(label)
        text = linecache.getline(label, r.line).rstrip("\r\n")
    return DTRLogError(label, r.line, problem, text)


def _drive(engine: Engine, records: Sequence[LogRecord], cost: str, label: str,
           remat_limit: float, lines: Sequence[str] | None = None) -> None:
    """Replay ``records`` (from the first ``ANNOTATE START`` on, when there is one), then
    make every tensor the program still references resident (D-Output)."""
    d = _Driver(engine, records, cost, label, lines)
    d.pos = next((i + 1 for i, r in enumerate(records)
                  if isinstance(r, LogAnnotate) and r.annotation == "START"), 0)
    while d.pos < len(records):
        r = records[d.pos]
        d.pos += 1
        _HANDLERS.get(type(r), _Driver.stray)(d, r)
        if engine.remat_compute > remat_limit:
            raise _Thrash
    live = {id(t): t for t in d.names.values() if t.refs > 0}
    engine.require_resident(live.values())  # D-Output
