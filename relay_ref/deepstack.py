"""Running inherently recursive work (checking, evaluating) without hitting Python's limits.

``run_deep(job)`` runs ``job()`` on a fresh thread whose stack is large (1 GiB, reserved
address space, not committed memory) with the recursion limit raised while any such thread
runs, and returns its result or re-raises its exception in the caller.

Invariants:
* The recursion limit is raised only while at least one deep worker (or a ``run_raised``
  job) runs and is restored when the last one ends, so callers (and test frameworks) never
  observe a changed limit.
* Each ``run_deep`` starts a thread of its own (a thread reused between jobs would miss the
  trace and profile hooks ``threading.settrace`` installs on threads started meanwhile,
  which ``relay_ref.testing.growth.step_count`` and coverage rely on); ``run_raised`` runs
  work whose deep recursion is Python calling Python on the caller's thread instead.
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

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

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


def run_deep(job: Callable[[], _R], *, on_interrupt: Callable[[], None] | None = None,
             name: str = "relay-deep", recursion_limit: int = RECURSION_LIMIT) -> _R:
    """Run ``job()`` on a big-stack thread; see the module docstring. ``recursion_limit``
    may raise the limit above ``RECURSION_LIMIT`` for work whose Python frames do not
    recurse in C (the interpreter's calls); it is never lowered below it."""
    if in_deep_worker():
        return _with_limit(job, recursion_limit)  # already on a big stack
    box: dict[str, object] = {}
    done = threading.Event()
    state = {"abandoned": False}

    def target() -> None:
        _local.deep = True
        try:
            box["value"] = job()
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            box["error"] = err
        finally:
            with _lock:
                done.set()
                if state["abandoned"]:
                    _leave()

    with _lock:
        old = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            worker: threading.Thread | None = threading.Thread(target=target, name=name,
                                                               daemon=True)
        except (RuntimeError, ValueError, MemoryError):
            worker = None
        if worker is not None:
            _enter(max(recursion_limit, RECURSION_LIMIT))
            try:
                worker.start()
            except (RuntimeError, MemoryError):
                _leave()
                worker = None
        threading.stack_size(old)
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
    return _with_limit(job, recursion_limit + depth)


def _with_limit(job: Callable[[], _R], recursion_limit: int) -> _R:
    """``job()`` on this thread, the recursion limit raised to at least ``recursion_limit``
    meanwhile (``_enter`` / ``_leave``: restored when the last raiser leaves)."""
    if recursion_limit <= sys.getrecursionlimit():
        return job()
    with _lock:
        _enter(recursion_limit)
    try:
        return job()
    finally:
        with _lock:
            _leave()
