"""Running inherently recursive work (checking, evaluating) without hitting Python's limits.

``run_deep(job)`` runs ``job()`` on a thread whose stack is large (1 GiB, reserved address
space, not committed memory) with the recursion limit raised while any such thread runs a
job, and returns its result or re-raises its exception in the caller. Threads are reused:
a worker done with a job waits ``IDLE_SECONDS`` for the next one (at most ``MAX_IDLE`` wait)
and then ends, so a program called in a loop pays the thread's start once.

Invariants:
* The recursion limit is raised only while at least one deep worker (or a ``run_raised``
  job) runs and is restored when the last one ends, so callers (and test frameworks) never
  observe a changed limit.
* A ``run_deep`` called from inside a deep worker runs ``job`` directly (already deep),
  raising the recursion limit first if it asks for a higher one.
* The caller waits in short slices on an event the worker sets when it is done (not on
  ``Thread.join``, whose interrupted form can report a live thread as finished on 3.11), so
  ``KeyboardInterrupt`` reaches it promptly; it then calls ``on_interrupt`` (which should make
  the worker stop), waits briefly, and re-raises. A worker still running then is abandoned:
  it restores the recursion limit itself when it ends, never the caller under its feet.
* ``RECURSION_LIMIT`` is low enough that Python's own ``RecursionError`` comes before the C
  stack of ``STACK_BYTES`` overflows (endless Relay recursion is an error, not an abort).
  A caller may ask for a higher limit (``recursion_limit``) when its deep recursion is
  Python calling Python, which CPython 3.11+ runs without growing the C stack (the
  interpreter: 10^6 nested Relay calls need ~3-8 million frames); the limit then stays the
  highest asked for until the last worker ends.
* If the platform refuses a big-stack thread, ``job`` runs on the caller's thread with the
  default limit (shallower programs still work; deep ones raise ``RecursionError``).
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

STACK_BYTES = 1 << 30
RECURSION_LIMIT = 1_000_000

_R = TypeVar("_R")
_lock = threading.Lock()
_local = threading.local()
_workers = 0
_saved_limit = 1000


def in_deep_worker() -> bool:
    """True on a thread started by ``run_deep``."""
    return getattr(_local, "deep", False)


#: The highest recursion limit CPython takes (a C int); a higher request (a ``max_depth``
#: of 10^12) means "no bound below this".
_MAX_LIMIT = 2**31 - 1


def _enter(limit: int) -> None:
    global _workers, _saved_limit
    limit = min(limit, _MAX_LIMIT)
    if _workers == 0:
        _saved_limit = sys.getrecursionlimit()
    if sys.getrecursionlimit() < limit:
        sys.setrecursionlimit(limit)
    _workers += 1


def _leave() -> None:
    global _workers
    _workers -= 1
    if _workers == 0:
        sys.setrecursionlimit(_saved_limit)


class _Worker:
    """A big-stack daemon thread running ``run_deep`` jobs one after another: idle between
    them (in ``_idle``) for up to ``IDLE_SECONDS``, then it ends. Starting a thread with a
    1 GiB stack costs ~0.1-0.3 ms; handing a job to an idle one ~20 us."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Any], Callable[[tuple], None]]] = \
            queue.SimpleQueue()
        self.thread = threading.Thread(target=self.loop, name="relay-deep", daemon=True)

    def loop(self) -> None:
        _local.deep = True
        me = threading.current_thread()
        while True:
            try:
                job, finish = self.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with _lock:
                    if self in _idle:  # else a caller took it and is handing it a job
                        _idle.remove(self)
                        return
                continue
            me.name = getattr(job, "deep_name", "relay-deep")
            try:
                outcome: tuple = ("value", job())
            except BaseException as err:  # noqa: BLE001 - handed to the caller
                outcome = ("error", err)
            job = None  # type: ignore[assignment]  # nothing of the job outlives it here
            with _lock:
                keep = len(_idle) < MAX_IDLE
                if keep:
                    _idle.append(self)
                finish(outcome)
            outcome = ()
            if not keep:
                return


#: idle big-stack workers kept for the next ``run_deep``, and how long each waits
MAX_IDLE = 4
IDLE_SECONDS = 2.0
_idle: list[_Worker] = []


def run_deep(job: Callable[[], _R], *, on_interrupt: Callable[[], None] | None = None,
             name: str = "relay-deep", recursion_limit: int = RECURSION_LIMIT) -> _R:
    """Run ``job()`` on a big-stack thread; see the module docstring. ``recursion_limit``
    may raise the limit above ``RECURSION_LIMIT`` for work whose Python frames do not
    recurse in C (the interpreter's calls); it is never lowered below it."""
    if in_deep_worker():
        if recursion_limit <= sys.getrecursionlimit():
            return job()
        with _lock:  # already on a big stack; only the limit needs raising
            _enter(recursion_limit)
        try:
            return job()
        finally:
            with _lock:
                _leave()
    box: dict[str, object] = {}
    done = threading.Event()
    state = {"abandoned": False}

    def finish(outcome: tuple) -> None:  # on the worker, under ``_lock``
        box[outcome[0]] = outcome[1]
        done.set()
        if state["abandoned"]:
            _leave()

    def named() -> _R:
        return job()

    named.deep_name = name  # type: ignore[attr-defined]
    with _lock:
        worker: _Worker | None = _idle.pop() if _idle else None
        if worker is None:
            old = threading.stack_size()
            try:
                threading.stack_size(STACK_BYTES)
                worker = _Worker()
            except (RuntimeError, ValueError, MemoryError):
                worker = None
            if worker is not None:
                try:
                    worker.thread.start()
                except (RuntimeError, MemoryError):
                    worker = None
            threading.stack_size(old)
        if worker is not None:
            _enter(max(recursion_limit, RECURSION_LIMIT))
            worker.jobs.put((named, finish))
    if worker is None:
        return job()
    try:
        while not done.wait(0.05):
            pass
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt()
        done.wait(2.0)
        with _lock:
            if done.is_set():
                _leave()
            else:
                state["abandoned"] = True  # the worker restores the limit when it ends
        raise
    with _lock:
        _leave()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def run_raised(job: Callable[[], _R], *, recursion_limit: int = RECURSION_LIMIT) -> _R:
    """Run ``job()`` on the caller's thread with the recursion limit raised to at least
    ``recursion_limit`` meanwhile (restored as ``run_deep`` restores it): for work whose
    deep recursion is Python calling Python only (CPython 3.11+ runs it without growing the
    C stack), which then pays no thread hand-off (~20 us quiet, up to milliseconds on a
    busy machine, where the waiting thread must be scheduled again). The frames already on
    the caller's stack are added to the limit: ``job`` gets as many as on a fresh thread."""
    depth, frame = 0, sys._getframe(1)
    while frame is not None:
        depth += 1
        frame = frame.f_back
    recursion_limit += depth
    if recursion_limit <= sys.getrecursionlimit():
        return job()
    with _lock:
        _enter(recursion_limit)
    try:
        return job()
    finally:
        with _lock:
            _leave()
