"""``exe.plan``: a printable summary of what ``rr.compile`` built.

It lists the passes run, the fused groups with the strategy each runs by (one generated
numba kernel, an anchor kernel plus a fused tail, or one kernel / NumPy reference per
operator), kernel launches per call of the entry, the constants folded into the plan, and
the buffers; for target ``cuda`` also the device's launches and the host steps' copies.
With BYOC regions (spec/byoc.md), ``regions`` lists each: its backend (``host`` after a
fallback, BYOC-Fallback), operator calls, estimated operations and the fallback's note.
``threads`` is the thread policy's line (``relay_ref.executor.threads``), shown after the
passes.
Data only: the executor fills it, ``str(plan)`` and ``plan.table()`` show it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GroupSummary", "Plan"]


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One distinct fused group: its label (the ops), strategy, kernels, occurrences."""

    label: str
    strategy: str
    kernels: tuple[str, ...]
    count: int


@dataclass(frozen=True, slots=True)
class Plan:
    """What the executable runs (see the module docstring)."""

    entry: str
    target: str
    passes: tuple[str, ...]
    functions: int
    groups: tuple[GroupSummary, ...]
    constants: int
    constant_bytes: int
    buffers: int = 0
    peak_bytes: int = 0
    planned_values: int = 0
    compile_seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())
    #: target "cuda": kernel launches per pass through every group once (views and host
    #: steps launch nothing); at most this many host<->device copies for the host steps;
    #: the ops that run on the host (no CUDA kernel for their types)
    device_launches: int | None = None
    host_copies: int = 0
    host_ops: tuple[str, ...] = ()
    #: BYOC regions (``relay_ref.executor.externs.RegionSummary``), in module order
    regions: tuple[Any, ...] = ()
    #: the byte sizes of the buffers with symbolic sizes (issue 29), as text (``n * 4096``);
    #: counted in ``buffers``, not in ``peak_bytes`` (which depends on the shapes)
    symbolic_buffers: tuple[str, ...] = ()
    #: the thread policy (``relay_ref.executor.threads.ThreadPolicy.describe``), one line
    threads: str = ""

    def region_table(self) -> str:
        """The regions, one a line: name, backend, op calls, estimated operations, note."""
        lines = [f"regions: {len(self.regions)}"]
        for r in self.regions:
            note = f"  ({r.note})" if r.note else ""
            lines.append(f"  @{r.name}: {r.backend}, {r.ops} ops, ~{r.flops} flops{note}")
        return "\n".join(lines)

    @property
    def launches(self) -> int:
        """Kernel launches per pass through every group once (numba kernels, CPU kernels
        and NumPy references each count one)."""
        return sum(g.count * max(len(g.kernels), 1) for g in self.groups)

    def summary(self) -> str:
        return (f"{sum(g.count for g in self.groups)} fused groups, {self.launches} kernel "
                f"calls, {self.constants} constants")

    def table(self) -> str:
        """The groups as a text table, most frequent first (a group's kernels counted by
        kind; a label longer than 72 characters shortened, with its op count)."""
        rows = []
        for g in sorted(self.groups, key=lambda g: (-g.count, g.label)):
            kinds = Counter(g.kernels)
            kernels = ", ".join(k if n == 1 else f"{k} x{n}" for k, n in kinds.items())
            label = g.label
            if len(label) > 72:
                label = f"{label[:60]}... ({label.count('+') + 1} ops)"
            rows.append((f"{g.count:5d}", g.strategy, kernels, label))
        width = max([len("kernels"), *(len(r[2]) for r in rows)])
        lines = [f"{'count':>5}  {'strategy':13} {'kernels':{width}} group"]
        lines += [f"{c}  {s:13} {k:{width}} {lab}" for c, s, k, lab in rows]
        return "\n".join(lines)

    def __str__(self) -> str:
        strategies = Counter()
        for g in self.groups:
            strategies[g.strategy] += g.count
        head = [
            f"plan for @{self.entry} (target {self.target}, compiled in "
            f"{self.compile_seconds:.2f} s)",
            f"passes: {', '.join(self.passes) or 'none'}",
            *([self.threads] if self.threads else []),
            f"functions: {self.functions}; fused groups: {sum(g.count for g in self.groups)} "
            f"({', '.join(f'{n} {s}' for s, n in sorted(strategies.items())) or 'none'}); "
            f"kernel calls: {self.launches}",
            f"constants: {self.constants} ({self.constant_bytes / 1e6:.2f} MB)",
            f"buffers: {self.buffers} preallocated for {self.planned_values} intermediate "
            f"values, peak {self.peak_bytes / 1e6:.2f} MB"
            + (f" + {' + '.join(self.symbolic_buffers)} bytes" if self.symbolic_buffers
               else "") + " (outputs are always fresh arrays)",
            *self.notes,
            *([self.region_table()] if self.regions else []),
        ]
        return "\n".join(head) + ("\n" + self.table() if self.groups else "")
