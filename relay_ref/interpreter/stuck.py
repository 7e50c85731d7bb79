"""How an evaluation stops short of a value: stuck states (spec/semantics.md 4) and interrupts,
and the user-facing error a stuck state becomes.

``Stuck`` is raised by the rules (``relay_ref.interpreter.eval``) at the node that cannot
proceed; it unwinds to the driver (``relay_ref.interpreter.driver``), collecting the Relay
call stack on the way, and ``runtime_error`` turns it into a located ``RelayRuntimeError``.
The executor reports its failures through ``runtime_error`` too, so both speak alike.
"""

from __future__ import annotations

from relay_ref.diagnostics import ERROR, Diagnostic, Note, RelayRuntimeError
from relay_ref.ir.span import Span

__all__ = ["Interrupted", "Stuck", "runtime_error"]


class Stuck(Exception):
    """Evaluation cannot proceed (spec section 4). Internal: ``evaluate`` turns it into a
    ``RelayRuntimeError``. ``frames`` collects ``(global name, call-site span)`` pairs while
    the exception unwinds through calls of globals, innermost first. ``rule`` names the
    stuck state when the spec does (``E-Match-Fail``, ``Stuck-Depth``, ``Stuck-Proj`` ...;
    None for the unnamed rows of spec section 4: an operator failing on its values, an
    annotation contradicted through a ``?`` dimension, a bad host argument); the error's
    message ends with it as a tag (``[E-Match-Fail]``), as type errors end with theirs."""

    def __init__(self, message: str, span: Span | None, notes: tuple[Note, ...] = (),
                 rule: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.notes = notes
        self.rule = rule
        self.frames: list[tuple[str, Span | None]] = []


class Interrupted(Exception):
    """Raised inside the evaluation when a stop was requested (``request_stop``)."""


def runtime_error(stuck: Stuck, source_name: str | None = None) -> RelayRuntimeError:
    """The user-facing error for a stuck evaluation, with the Relay call stack as notes.

    When the failing expression lies outside ``source_name`` (in the prelude, say) and a
    call from ``source_name`` led there, the innermost such call site becomes the primary
    location and the failing expression a note: the user's own code is what to fix. The
    message ends with the stuck rule's tag when it has one (``... the value Nil
    [E-Match-Fail]``)."""
    stack = tuple(name for name, _ in reversed(stuck.frames))  # outermost first
    span, message, notes = stuck.span, stuck.message, list(stuck.notes)
    if span is not None and source_name is not None and span.source.name != source_name:
        for name, site in stuck.frames:
            if site is not None and site.source.name == source_name:
                notes.append(Note(f"{message} (in @{stuck.frames[0][0]})", span))
                span, message = site, f"call of @{name} failed: {message}"
                break
    if stack:
        notes.append(Note("Relay call stack (innermost last): " + _compress(stack)))
        shown: list[tuple[str, Span]] = []
        for name, site in stuck.frames:  # innermost first; distinct call sites only
            if site is not None and site != span and (name, site) not in shown:
                shown.append((name, site))
            if len(shown) == 4:
                break
        notes.extend(Note(f"@{name} called here", site) for name, site in shown)
    if stuck.rule is not None:
        message = f"{message} [{stuck.rule}]"
    diag = Diagnostic(ERROR, message, span, tuple(notes))
    return RelayRuntimeError([diag], relay_stack=stack)


def _compress(names: tuple[str, ...], max_period: int = 8, max_parts: int = 24) -> str:
    """``@main -> @foldl (x99999) -> @hd``: a call stack as one short line.

    Consecutive repeats of a cycle of up to ``max_period`` globals are collapsed (direct
    recursion ``@f (x9999)``, mutual recursion ``(@g -> @h) (x5000)``), preferring the cycle
    that covers the most calls, then the shortest; if more than ``max_parts`` parts remain,
    the middle ones are elided with their count."""
    parts: list[str] = []
    i, n = 0, len(names)
    while i < n:
        best_p, best_reps = 1, 1
        for p in range(1, max_period + 1):
            if i + 2 * p > n:
                break
            if best_reps > 1 and p % best_p == 0:
                continue  # a multiple of a repeating cycle covers no more
            reps = 1
            while i + (reps + 1) * p <= n and \
                    names[i + reps * p: i + (reps + 1) * p] == names[i: i + p]:
                reps += 1
            if reps > 1 and reps * p > best_reps * best_p:
                best_p, best_reps = p, reps
        cycle = " -> ".join(f"@{name}" for name in names[i: i + best_p])
        if best_reps == 1:
            parts.append(cycle)
        else:
            parts.append((cycle if best_p == 1 else f"({cycle})") + f" (x{best_reps})")
        i += best_p * best_reps
    if len(parts) > max_parts:
        half = max_parts // 2
        parts = [*parts[:half], f"... ({len(parts) - 2 * half} more) ...", *parts[-half:]]
    return " -> ".join(parts)
