"""``relay dtr sweep FILE_OR_LOG``: Dynamic Tensor Rematerialization's budget sweep (issue 27,
spec/dtr.md; the paper's Figure 2): for every budget ratio and heuristic, replay a run under
that budget through the simulator (``relay_ref.dtr.simulator.sweep``) and report the
slowdown, out-of-memory and thrashing, as a table and, with ``--plot``, a figure.

``FILE_OR_LOG`` is either

* a DTR log (the paper's JSON lines: ``.log``, ``.jsonl``, ``.json``, or any file whose
  first non-blank character is ``{``), written by ``rr.compile(..., dtr_log=PATH)``,
  ``relay run --compile --memory-budget ... --dtr-log PATH`` or the paper's PyTorch
  prototype; or
* a Relay program (``.relay``, or any other file): ``@entry`` (``--entry``, default
  ``main``) is type-checked, with ``--gradient`` first made a training step by
  ``rr.gradient`` (value and the gradient of every input; first-order mode when the
  function is dataflow, else higher-order), its arguments drawn from a
  seeded generator (``--seed``; tensors and tuples of them with static shapes: floats
  N(0, 0.5^2), integers in [0, 4), booleans fair), and it is run once through
  ``rr.compile`` with an unlimited budget, recording its DTR log (a temporary file); that
  log is swept. Its calls have both a FLOPS field (the runtime's deterministic cost model,
  what ``--cost auto`` picks) and a TIME (wall time: ``--cost measured``).

``--budgets``: a comma list of ratios (``0.25,0.5,1``) and ranges ``START:STOP:STEP``
(inclusive, ``0.1:1.0:0.1``); each a ratio in (0, 1] of the run's unbudgeted peak, or a percentage
(``40%``). ``--heuristics``: a comma list of the engine's names (``dtr,dtr_eq,lru``; an
ablation ``ablation(s=1,m=0,c=eq)`` may contain commas). ``--cost``: ``auto`` (the
default: ``flops`` when every call of the log has a FLOPS field, as this project's logs do,
else ``measured``: the paper's TIME) or one of the simulator's models. A run stops as
thrashing once its rematerialisations cost as much as the run itself (slowdown >= 2, the
paper's limit).

Output: a table on stdout (a row per ratio, a column per heuristic: the slowdown,
``OOM`` or ``thrash``; a last row with each heuristic's lowest feasible ratio), a progress
bar on stderr, and with ``--plot OUT.png`` a matplotlib figure in the paper's style
(slowdown against budget ratio, a line per heuristic, OOM and thrashing marked, the pinned
fraction shaded), written atomically. matplotlib is an optional dependency (the ``dev``
extra): without it ``--plot`` is a usage error that says so, before anything runs.

Errors: a malformed budget, an unknown heuristic (with "did you mean"), a missing file, a
program whose parameters cannot be drawn: usage errors (exit 2); a malformed log or an
ill-typed program: located diagnostics (exit 1); never a traceback.

Part of the CLI layer: the public API, ``relay_ref.repl`` and the public DTR package
(``relay_ref.dtr``: its simulator, heuristics and log reader).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import relay_ref as rr
from relay_ref import repl
from relay_ref.cli._common import EXIT_OK, UsageError, use_colour
from relay_ref.cli.outputs import Outputs, refuse_clobbering, write_error
from relay_ref.dtr import DTRError, get_heuristic
from relay_ref.dtr.log import LogCall, LogMutate, LogRecord, read_log
from relay_ref.dtr.simulator import COST_MODELS, SweepPoint, auto_cost, sweep

__all__ = ["DEFAULT_BUDGETS", "DEFAULT_HEURISTICS", "SweepResult", "add_parser",
           "draw_arguments", "draw_sweep", "parse_budgets", "parse_heuristics", "plot_sweep",
           "run", "run_sweep", "sweep_summary", "sweep_table"]

DEFAULT_BUDGETS = "0.1:1.0:0.1"
DEFAULT_HEURISTICS = "dtr,dtr_eq,lru,size,random"
#: a budget no run reaches: the recorded run of a program is unbudgeted
_UNLIMITED = 1 << 62
#: the paper's thrashing limit (slowdown >= 2)
_OVERHEAD_LIMIT = 2.0
_LOG_SUFFIXES = (".log", ".jsonl", ".json")


def add_parser(sub: Any) -> None:
    """The ``dtr`` subcommand and its ``sweep`` (``app.build_parser`` calls this)."""
    p = sub.add_parser("dtr", help="Dynamic Tensor Rematerialization: sweep budgets",
                       description="Dynamic Tensor Rematerialization (spec/dtr.md): study how "
                                   "a training step behaves under memory budgets.")
    dtr_sub = p.add_subparsers(dest="dtr_command", metavar="DTR_COMMAND")
    s = dtr_sub.add_parser(
        "sweep", help="slowdown per budget ratio and heuristic (the paper's Figure 2)",
        description="Replay a run under each budget ratio with each eviction heuristic "
                    "(the DTR simulator) and print the slowdown, OOM or thrashing of each; "
                    "with --plot, draw them as the paper's Figure 2. FILE_OR_LOG is a DTR "
                    "log (JSON lines: .log, .jsonl, .json, or any file starting with '{') "
                    "or a Relay program, run once without budget (its inputs drawn with "
                    "--seed) to record its log.")
    s.add_argument("file", metavar="FILE_OR_LOG")
    s.add_argument("--budgets", default=DEFAULT_BUDGETS, metavar="RATIOS",
                   help="budget ratios of the unbudgeted peak: a comma list of ratios and "
                        "ranges START:STOP:STEP (inclusive); each in (0, 1], or a "
                        f"percentage like 40%% (default {DEFAULT_BUDGETS})")
    s.add_argument("--heuristics", default=DEFAULT_HEURISTICS, metavar="NAMES",
                   help="comma list of eviction heuristics: dtr, dtr_eq, dtr_local, lru, "
                        "size, msps, random, ablation(s=0|1,m=0|1,c=estar|eq|local|none) "
                        f"(default {DEFAULT_HEURISTICS})")
    s.add_argument("--dealloc", choices=("eager", "banish", "ignore"), default="eager",
                   help="what a tensor the program drops becomes: evicted (eager, the "
                        "default and the paper's), freed for good (banish), or nothing "
                        "(ignore)")
    s.add_argument("--cost", choices=("auto", *COST_MODELS), default="auto",
                   help="the compute cost of a call: flops (the log's FLOPS field, which "
                        "this project's logs have), measured (its TIME), unit (1 per call); "
                        "auto (default): flops when every call has it, else measured")
    s.add_argument("--access", choices=("lock", "simrd"), default="lock",
                   help="the engine's convention for touching and locking a call's "
                        "arguments: lock (default, the runtime's) or simrd (the paper's "
                        "simulator's, to reproduce its numbers on its logs)")
    s.add_argument("--plot", metavar="OUT.png", default=None,
                   help="also draw slowdown against budget ratio, a line per heuristic "
                        "(needs matplotlib)")
    prog = s.add_argument_group("a Relay program (FILE_OR_LOG not a log)")
    prog.add_argument("--entry", default="main", help="the function to run (default: main)")
    prog.add_argument("--gradient", action="store_true",
                      help="sweep the training step of @entry: rr.gradient(@entry), its "
                           "value and the gradient of each input")
    prog.add_argument("--seed", type=int, default=0,
                      help="seed of the generator drawing the arguments (default 0)")
    prog.add_argument("--no-prelude", action="store_true",
                      help="do not supply prelude definitions")
    s.set_defaults(func=run)
    p.set_defaults(func=_no_command, dtr_parser=p)


def _no_command(args: argparse.Namespace) -> int:
    args.dtr_parser.print_help(sys.stderr)
    raise UsageError("relay dtr: name a command (sweep)")


# -- arguments ------------------------------------------------------------------------------

def _ratio(text: str) -> float:
    from relay_ref.dtr.options import parse_budget  # the one parser (rr.compile's)

    try:
        return parse_budget(text, "--budgets", ratio_only=True).ratio  # type: ignore[return-value]
    except DTRError as err:
        raise UsageError(err.message) from None


def parse_budgets(text: str) -> list[float]:
    """A comma list of ratios (in (0, 1], or percentages) and ranges ``START:STOP:STEP``
    (inclusive, rounded to 1e-9 so ``0.1:1.0:0.1`` ends at 1.0), in order, repeats dropped.
    ``UsageError`` otherwise."""
    out: list[float] = []
    for item in (p for p in text.split(",") if p.strip()):
        if ":" not in item:
            out.append(_ratio(item))
            continue
        parts = item.split(":")
        if len(parts) != 3:
            raise UsageError(f"--budgets: {item.strip()!r}: a range is START:STOP:STEP, e.g. "
                             f"{DEFAULT_BUDGETS}")
        start, stop, step = (_ratio(p) for p in parts)
        if start > stop:
            raise UsageError(f"--budgets: {item.strip()!r}: START is above STOP")
        count = math.floor((stop - start) / step + 1e-9) + 1
        out += [round(start + k * step, 9) for k in range(count)]
    if not out:
        raise UsageError("--budgets: no ratio given")
    return list(dict.fromkeys(out))


def parse_heuristics(text: str) -> list[str]:
    """The comma list's names (commas inside parentheses belong to an ablation name), each
    checked against the engine's table: ``UsageError`` with "did you mean" otherwise."""
    names, depth, cur = [], 0, []
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            names.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    names.append("".join(cur).strip())
    names = [n for n in names if n]
    if not names:
        raise UsageError("--heuristics: no heuristic given")
    out = []
    for name in names:
        try:
            out.append(get_heuristic(name).name)
        except DTRError as err:
            raise UsageError(f"--heuristics: {err.message}") from None
    return list(dict.fromkeys(out))


# -- the log: read, or recorded from a program ---------------------------------------------

def _is_log(path: str) -> bool:
    """A log by its suffix, a program by ``.relay``; else a log when the first non-blank
    character is ``{``."""
    suffix = Path(path).suffix.lower()
    if suffix in _LOG_SUFFIXES:
        return True
    if suffix == ".relay":
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(4096).lstrip()
    except OSError:
        return False
    return head.startswith("{")


def _check_readable(path: str) -> None:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such file")
    if p.is_dir():
        raise UsageError(f"{path}: is a directory")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{path}: cannot read: permission denied")


def _draw(ty: Any, rng: np.random.Generator, what: str) -> Any:
    if isinstance(ty, repl.TupleType):
        return tuple(_draw(f, rng, f"{what}'s field {i}") for i, f in enumerate(ty.fields))
    if not isinstance(ty, repl.TensorType):
        raise UsageError(f"{what} has type {repl.type_text(ty)}: relay dtr sweep draws "
                         "tensors and tuples of tensors only; record a log of the run "
                         "(rr.compile(..., dtr_log=PATH)) and sweep that")
    if not all(type(d) is int for d in ty.shape):
        raise UsageError(f"{what} has type {repl.type_text(ty)}: a dynamic shape cannot "
                         "be drawn")
    dt = np.dtype(ty.dtype)
    if dt.kind == "f":
        return (rng.standard_normal(ty.shape) * 0.5).astype(dt)
    if dt.kind in "iu":
        return rng.integers(0, 4, size=ty.shape).astype(dt)
    if dt.kind == "b":
        return rng.random(ty.shape) < 0.5
    raise UsageError(f"{what} has dtype {ty.dtype}, which cannot be drawn")


def draw_arguments(mod: rr.IRModule, entry: str, seed: int) -> list[Any]:
    """Arguments of ``@entry`` drawn from ``numpy.random.default_rng(seed)`` (see the
    module docstring); ``UsageError`` for a parameter that is not tensors."""
    rng = np.random.default_rng(seed)
    fn = mod.functions[entry]
    types = mod.global_types[entry].arg_types
    return [_draw(t, rng, f"parameter %{p.name_hint} of @{entry}")
            for p, t in zip(fn.params, types, strict=True)]


def _record_program(args: argparse.Namespace, log_path: str) -> None:
    """Run the program once without budget, writing its DTR log to ``log_path``."""
    text = Path(args.file).read_text(encoding="utf-8")
    entry = args.entry.removeprefix("@")
    mod = rr.infer_types(rr.parse(text, args.file, prelude=not args.no_prelude))
    if entry not in mod.functions:
        own = [name for name in mod.functions if name in text]
        raise UsageError(f"{args.file}: no function @{entry} to run"
                         f"{repl.did_you_mean(entry, own or list(mod.functions), sigil='@')}")
    if args.gradient:
        try:  # straight-line reverse mode where it applies (dataflow), else the general one
            mod = rr.gradient(mod, "first_order", entry=entry)
        except rr.RelayError:
            mod = rr.gradient(mod, "higher_order", entry=entry)
    values = draw_arguments(mod, entry, args.seed)
    exe = rr.compile(mod, entry=entry, memory_budget=_UNLIMITED, cost="flops",
                     dtr_log=log_path)
    exe(*values)


def _auto_cost(records: Sequence[LogRecord]) -> str:
    return auto_cost(records)  # the simulator's cost="auto"


# -- the sweep ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SweepResult:
    """A sweep's points (heuristic-major, as ``simulate.sweep``), with what the table and
    the plot say about the run: its ``label``, the ``cost`` model, ``peak_bytes`` (the
    unbudgeted peak the ratios are of) and ``pinned_bytes`` (inputs and weights)."""

    label: str
    cost: str
    dealloc: str
    ratios: tuple[float, ...]
    heuristics: tuple[str, ...]
    points: tuple[SweepPoint, ...]
    peak_bytes: int
    pinned_bytes: int

    def point(self, ratio: float, heuristic: str) -> SweepPoint:
        """The run at ``ratio`` with ``heuristic``."""
        return next(p for p in self.points if p.ratio == ratio and p.heuristic == heuristic)

    def lowest_feasible(self, heuristic: str) -> float | None:
        """The lowest ratio at which ``heuristic`` ran neither out of memory nor thrashed."""
        ok = [p.ratio for p in self.points
              if p.heuristic == heuristic and not p.stats.oom and not p.stats.thrashed]
        return min(ok) if ok else None


def run_sweep(records: Sequence[LogRecord], label: str, ratios: Sequence[float],
              heuristics: Sequence[str], dealloc: str = "eager", cost: str = "auto",
              progress: Any = None, access: str = "lock") -> SweepResult:
    """``simulate.sweep`` over ``records`` plus the unbudgeted run (ratio 1.0 with no
    eviction pressure gives the peak and the pinned bytes). ``cost="auto"``: see the
    module docstring. ``progress(done, total)`` as ``sweep``'s; ``access`` the engine's
    D-Access convention (``"simrd"``: the paper's artifact's)."""
    cost = _auto_cost(records) if cost == "auto" else cost
    points = sweep(records, list(ratios), list(heuristics), dealloc=dealloc, cost=cost,
                   overhead_limit=_OVERHEAD_LIMIT, progress=progress, access=access)
    full = sweep(records, [1.0], ["lru"], dealloc=dealloc, cost=cost,
                 overhead_limit=_OVERHEAD_LIMIT, access=access)[0].stats
    return SweepResult(label, cost, dealloc, tuple(ratios), tuple(p.heuristic for p in points
                       if p.ratio == ratios[0]), tuple(points),
                       int(full.budget or full.peak_bytes), int(full.pinned_bytes))


def _cell(p: SweepPoint) -> tuple[str, str]:
    if p.stats.oom:
        return "OOM", "red"
    if p.stats.thrashed:
        return f"thrash (>={_OVERHEAD_LIMIT:g}x)", "yellow"
    return f"{p.stats.slowdown:.3f}x", "green" if p.stats.slowdown < 1.3 else ""


def sweep_table(result: SweepResult) -> Any:
    """The rich table: a row per ratio (with its budget in bytes), a column per heuristic."""
    from rich.table import Table

    table = Table(title=f"DTR sweep of {result.label}")
    table.add_column("budget ratio", justify="right")
    table.add_column("budget bytes", justify="right")
    for h in result.heuristics:
        table.add_column(h, justify="right")
    for ratio in result.ratios:
        row = [f"{ratio:.2f}", str(int(result.peak_bytes * ratio))]
        for h in result.heuristics:
            text, style = _cell(result.point(ratio, h))
            row.append(f"[{style}]{text}[/]" if style else text)
        table.add_row(*row)
    low = []
    for h in result.heuristics:
        r = result.lowest_feasible(h)
        low.append("none" if r is None else f"{r:.2f}")
    table.add_row("lowest feasible", "", *low, end_section=True, style="bold")
    return table


def sweep_summary(result: SweepResult) -> str:
    """What the table's numbers mean, below it."""
    return (f"slowdown = (compute + rematerialisation) / compute; cost model {result.cost}, "
            f"dealloc {result.dealloc}\nunbudgeted peak {result.peak_bytes} bytes, of which "
            f"{result.pinned_bytes} pinned at most at once ({_pinned_words(result)})"
            f"\nthrash: stopped once the "
            f"slowdown reached {_OVERHEAD_LIMIT:g}x; OOM: a call's working set did not fit")


def _pinned_words(result: SweepResult) -> str:
    if result.dealloc == "banish":
        return ("constants, inputs, weights and results the program holds, and the children "
                "banishing pinned")
    return "constants, inputs, weights and results the program holds"


def plot_sweep(result: SweepResult, path: str, title: str | None = None) -> None:
    """Slowdown against budget ratio, a line per heuristic (the paper's Figure 2 style):
    thrashing marked by a triangle at the limit, out of memory by a cross on the x axis,
    the pinned fraction (inputs and weights) shaded. Written atomically as a PNG (Agg)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2, 3.6), dpi=100)
    ax = fig.subplots()
    draw_sweep(ax, result)
    ax.set_title(title or f"DTR: {Path(result.label).name}", fontsize=10)
    fig.tight_layout()
    with Outputs() as out:
        out.stage(path, lambda f: fig.savefig(f, format="png"))


def draw_sweep(ax: Any, result: SweepResult) -> None:
    """Draw ``result`` on matplotlib axes ``ax`` (what ``plot_sweep`` and the notebook and
    the benchmark's multi-panel figures share)."""
    top = _OVERHEAD_LIMIT
    pinned = result.pinned_bytes / result.peak_bytes if result.peak_bytes else 0.0
    if pinned > 0:
        ax.axvspan(0, pinned, color="black", alpha=0.2, lw=0, label="pinned")
    ax.axhline(top, color="grey", ls=":", lw=0.8)
    for i, h in enumerate(result.heuristics):
        colour = f"C{i}"
        pts = sorted((p for p in result.points if p.heuristic == h), key=lambda p: p.ratio)
        ok = [(p.ratio, p.stats.slowdown) for p in pts if not p.stats.oom
              and not p.stats.thrashed]
        if ok:
            ax.plot(*zip(*ok, strict=True), marker="o", ms=3.5, lw=1.3, color=colour, label=h)
        else:
            ax.plot([], [], marker="o", color=colour, label=h)
        nudge = (i - (len(result.heuristics) - 1) / 2) * 0.007  # markers side by side
        thrash = [p.ratio + nudge for p in pts if p.stats.thrashed and not p.stats.oom]
        if thrash:
            ax.plot(thrash, [top] * len(thrash), ls="none", marker="^", ms=5, color=colour)
        oom = [p.ratio + nudge for p in pts if p.stats.oom]
        if oom:
            ax.plot(oom, [1.0] * len(oom), ls="none", marker="x", ms=5, color=colour)
    ax.plot([], [], ls="none", marker="^", color="grey", label=f"thrash (>= {top:g}x)")
    ax.plot([], [], ls="none", marker="x", color="grey", label="OOM")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0.95, top + 0.1)
    ax.set_xlabel("budget ratio (of the unbudgeted peak)")
    ax.set_ylabel("slowdown")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left")


# -- the command ----------------------------------------------------------------------------

def _check_plot(path: str | None) -> None:
    if path is None:
        return
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError("--plot needs matplotlib, which is not installed (pip install "
                         "matplotlib, or the relay_ref[dev] extra); the table needs "
                         "nothing more: drop --plot") from None
    # writable before the sweep runs (review of issue 27: a bad path was found only after it)
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise UsageError(f"--plot: {path} is a directory")
    if not folder.is_dir():
        raise UsageError(f"--plot: {path}: no directory {folder}")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"--plot: {path}: not writable")


def run(args: argparse.Namespace) -> int:
    """``relay dtr sweep``: the table, and the plot; the exit code (errors are raised as
    ``UsageError`` or ``RelayError`` for ``app.main`` to report)."""
    ratios = parse_budgets(args.budgets)
    heuristics = parse_heuristics(args.heuristics)
    _check_plot(args.plot)
    _check_readable(args.file)
    refuse_clobbering([("FILE_OR_LOG", args.file)], [("--plot", args.plot)])
    if _is_log(args.file):
        if args.gradient:
            raise UsageError(f"--gradient: {args.file} is a DTR log, whose run is already "
                             "recorded; --gradient makes a Relay program's training step")
        records = read_log(args.file)
        label = args.file
    else:
        with tempfile.TemporaryDirectory(prefix="relay-dtr-") as tmp:
            log_path = os.path.join(tmp, "run.jsonl")
            _record_program(args, log_path)
            records = read_log(log_path, name=f"{args.file} (recorded log)")
        label = args.file + (" (gradient)" if args.gradient else "")
    if not any(isinstance(r, (LogCall, LogMutate)) for r in records):
        raise UsageError(f"{args.file}: the run calls no kernel: there is nothing to evict "
                         "or recompute")
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    err_console = Console(file=sys.stderr, no_color=not use_colour(sys.stderr))
    with Progress(TextColumn("sweeping"), BarColumn(), MofNCompleteColumn(),
                  console=err_console, transient=err_console.is_terminal) as bar:
        task = bar.add_task("sweep", total=len(ratios) * len(heuristics))
        result = run_sweep(records, label, ratios, heuristics, args.dealloc, args.cost,
                           progress=lambda done, total: bar.update(task, completed=done),
                           access=args.access)
    out = Console(file=sys.stdout, no_color=not use_colour(sys.stdout),
                  width=None if sys.stdout.isatty() else 120)
    out.print(sweep_table(result))
    out.print(sweep_summary(result), highlight=False, markup=False)
    if args.plot:
        try:
            plot_sweep(result, args.plot)
        except OSError as err:
            raise UsageError(f"--plot: {write_error(err)}") from None
        print(f"wrote {args.plot}", file=sys.stderr)
    return EXIT_OK
