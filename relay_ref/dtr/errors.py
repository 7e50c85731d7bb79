"""The errors of the DTR engine and simulator (spec/dtr.md §7).

* ``DTRError``: a user mistake caught before anything runs (an unknown heuristic, a
  negative budget, an unknown dealloc policy or cost model); a ``RelayError``, so the CLI and
  the public API report it as every other one.
* ``DTRLogError``: a malformed log; located at the file and line (a ``Span`` over the log's
  text), with what is wrong, never a traceback.
* ``DTROutOfMemory``: rule D-OOM: an operator cannot run because nothing evictable is left.
  A ``RelayRuntimeError`` carrying the budget, the pinned bytes, the operator's name and
  span (whatever the caller passed to ``Engine.call``: the runtime passes the Relay
  expression's span, so the error is located there) and its working set.
"""

from __future__ import annotations

from typing import Any

from relay_ref.diagnostics import RelayError, RelayRuntimeError
from relay_ref.ir.span import Source, Span

__all__ = ["DTRError", "DTRLogError", "DTROutOfMemory", "log_span"]


class DTRError(RelayError, ValueError):
    """A bad argument to the DTR engine, simulator or runtime (also a ``ValueError``, as a
    bad argument value is in Python)."""

    kind = "dtr"


class DTRLogError(DTRError):
    """A malformed DTR log line: ``path``, ``line`` (1-based) and ``problem``."""

    def __init__(self, path: str, line: int, problem: str, text: str = "") -> None:
        self.path, self.line, self.problem = path, line, problem
        super().__init__(f"malformed DTR log: {problem}", log_span(path, line, text))


def log_span(path: str, line: int, text: str) -> Span:
    """A span covering line ``line`` (1-based) of a log whose line text is ``text`` (the
    line alone: the source holds it at its line number so the diagnostic can quote it)."""
    source = Source(path, "\n" * (line - 1) + text)
    return Span(source, line, 1, line, max(len(text), 1) + 1)


class DTROutOfMemory(RelayRuntimeError):
    """D-OOM (spec/dtr.md §3): the operator ``name`` needs ``working_set`` bytes (its
    locked arguments and its outputs) but only ``budget - pinned_bytes`` are not pinned and
    nothing evictable is left. ``span`` is the caller's (a Relay span, or None)."""

    def __init__(self, *, budget: int, pinned_bytes: int, name: str, span: Any,
                 working_set: int, in_use: int, needed: int) -> None:
        self.budget, self.pinned_bytes, self.name = budget, pinned_bytes, name
        self.op_span, self.working_set, self.in_use, self.needed = span, working_set, in_use, needed
        message = (f"out of memory under DTR: operator {name} needs {needed} more bytes "
                   f"(working set {working_set} bytes) with {in_use} of the budget of "
                   f"{budget} bytes in use, {pinned_bytes} of them pinned, and nothing "
                   "left to evict [D-OOM]")
        super().__init__(message, span if isinstance(span, Span) else None)
