"""What a DTR run reports (spec/dtr.md §5): ``DTRStats``, a frozen snapshot, and
``DTREvent``, one entry of the optional event trace.

Units: bytes for memory; cost units for compute (whatever the caller passed as ``cost``:
nanoseconds in the paper's logs, FLOPs or 1 per call in the runtime's cost models).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DTREvent", "DTRStats"]


@dataclass(frozen=True, slots=True)
class DTRStats:
    """A snapshot of a DTR run.

    ``budget``: bytes (None: unbudgeted). ``peak_bytes``: the most memory in use at once
    (every resident storage, pinned ones included, as the paper counts). ``pinned_bytes``:
    the most pinned memory at once (constants, and children pinned by D-Banish).
    ``memory_bytes``: in use now. ``base_compute``: the cost of the program's own calls;
    ``remat_compute``: the cost of the replays; ``slowdown`` = (base + remat) / base (1.0
    when base is 0). ``op_executions``: calls run, first runs and replays;
    ``rematerializations``: replays. ``evictions``: storages evicted, by the heuristic or by
    D-Release-Eager (``eager_evictions`` of them). ``banished``: storages freed by D-Banish.
    ``heuristic_evaluations``: metadata accesses made to choose victims and keep the
    union-find classes (the paper's "heuristic accesses": one per score, per staleness,
    cost or neighbour read); ``score_evaluations``: scores computed. ``thrashed``:
    slowdown >= 2 (the paper's limit). ``oom``: D-OOM was reached (the run stopped)."""

    budget: int | None
    heuristic: str
    dealloc: str
    peak_bytes: int
    pinned_bytes: int
    memory_bytes: int
    base_compute: float
    remat_compute: float
    slowdown: float
    op_executions: int
    rematerializations: int
    evictions: int
    eager_evictions: int
    banished: int
    heuristic_evaluations: int
    score_evaluations: int
    thrashed: bool
    oom: bool

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (for JSON, tables)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class DTREvent:
    """One traced event: ``kind`` is ``allocate``, ``evict``, ``rematerialize``,
    ``release``, ``banish`` or ``pin``; ``name`` the operator (``constant`` for one);
    ``span`` what the caller passed to ``Engine.call`` (the Relay expression's span, in the
    runtime); ``storage`` its id and ``nbytes`` its size; ``clock`` the time it happened."""

    kind: str
    name: str
    span: Any
    storage: int
    nbytes: int
    clock: float
