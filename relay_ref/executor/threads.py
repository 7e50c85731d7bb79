"""The thread policy of an executable: how many threads its kernels use (issue 30).

One pool does the parallel work: the executor's work pool
(``relay_ref.compute.cpu.parallel``: the caller plus ``threads - 1`` workers taking tasks
from a shared counter, so a descheduled thread delays one task, not the kernel). BLAS runs
on one thread *inside* that split (OpenBLAS's own split is static: on a busy machine each
product waits for its descheduled half); numba's ``prange`` kernels (OpenMP, kept passive
by ``relay_ref.compute.cpu``) get ``threads`` too.

``resolve(threads)`` picks the count, first of: ``rr.compile(threads=N)``;
``$RELAY_REF_NUM_THREADS``; ``$OMP_NUM_THREADS``; ``$NUMBA_NUM_THREADS``; the CPUs this
process may run on (``os.sched_getaffinity``), at most ``MAX_DEFAULT``. A bad value (not an
int >= 1, or past ``limit()``: ``max(MAX_LIMIT, 4 x the CPUs available)``) is a
``RelayError`` naming where it came from (``source``: ``relay run --threads`` passes
``"--threads"``). In the environment a count is decimal digits (``str.isdecimal``:
``'３'`` counts, ``'²'`` does not), as ``relay run --threads`` reads it.

``enter(policy)`` / ``leave(token)`` apply it around one call and restore what they found,
so the user's own NumPy code between calls keeps the user's BLAS threads. Per call this
costs a few microseconds on the 2-core box (OpenBLAS's own get/set functions, found once per
process through threadpoolctl, sub-microsecond each through ctypes; numba's per-thread
count ~1.3 µs to read, ~2 µs to change); a program without BLAS calls skips the BLAS part,
one without tensor kernels the whole scope.

Invariants: BLAS is at ``blas_threads`` while any scope is open (a count of open scopes, so
concurrent calls on two threads do not restore it under each other); the pool's count and
numba's, both per thread, are set on the thread that runs the call and restored on
leaving, also on errors.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from relay_ref.compute.cpu import numba as _numba
from relay_ref.compute.cpu import parallel
from relay_ref.diagnostics import RelayError

__all__ = ["MAX_DEFAULT", "MAX_LIMIT", "ThreadPolicy", "enter", "leave", "limit", "resolve"]

#: the default is the CPUs available, at most this many (Python dispatches every task, and
#: past ~8 threads the pool's GIL hand-offs cost more than the cores give)
MAX_DEFAULT = 8

#: a count is refused past ``max(MAX_LIMIT, 4 x the CPUs available)``: each thread is a
#: worker the pool keeps (it never shrinks), and 10**30 would hang the first call
MAX_LIMIT = 64

_ENV = ("RELAY_REF_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS")


@dataclass(frozen=True, slots=True)
class ThreadPolicy:
    """Threads of the work pool (the caller included), BLAS threads per call, numba's
    ``prange`` threads, and where the count came from."""

    threads: int
    blas_threads: int
    numba_threads: int
    source: str

    def describe(self) -> str:
        """The line ``exe.plan`` shows."""
        return (f"threads: {self.threads} (work pool {self.threads}, BLAS "
                f"{self.blas_threads} per call, numba {self.numba_threads}; from "
                f"{self.source})")


def _cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def limit() -> int:
    """The largest thread count accepted: ``max(MAX_LIMIT, 4 x the CPUs available)``."""
    return max(MAX_LIMIT, 4 * _cpus())


def _shown(value: Any) -> str:
    """``value`` for a message: its repr, shortened (``str`` of a 5000-digit int raises)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4096:
        return f"a {value.bit_length()}-bit number"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _count(value: Any, where: str) -> int:
    """``value`` (an int, or the environment's text) as a thread count, else a
    ``RelayError`` located at ``where``; the text is shown as it was written."""
    shown = _shown(value)
    if isinstance(value, str):
        text = value.strip()
        if not text.isdecimal():  # '²'.isdigit() is True, but int() refuses it
            raise RelayError(f"{where}: the thread count must be an int >= 1, not {shown}")
        # int() refuses past 4300 digits: 21 are too many anyway
        value = int(text) if len(text.lstrip("0")) <= 20 else None
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 1):
        raise RelayError(f"{where}: the thread count must be an int >= 1, not {shown}")
    most = limit()
    if value is None or value > most:
        raise RelayError(f"{where}: the thread count must be at most {most} "
                         f"(max({MAX_LIMIT}, 4 x the {_cpus()} CPUs available)), not {shown}")
    return value


def _numba_limit() -> int:
    return int(_numba.config.NUMBA_NUM_THREADS)


def resolve(threads: Any = None, source: str | None = None) -> ThreadPolicy:
    """The policy for ``rr.compile(threads=threads)`` (None: from the environment).
    ``source`` names where ``threads`` came from, in errors and the plan (default
    ``compile(threads=...)``; ``relay run`` passes ``"--threads"``)."""
    if threads is not None:
        where = source or "compile: threads"
        if isinstance(threads, str):  # only the environment's counts are text
            raise RelayError(f"{where}: the thread count must be an int >= 1, not "
                             f"{_shown(threads)}")
        n, source = _count(_as_int(threads), where), source or "compile(threads=...)"
    else:
        for name in _ENV:
            value = os.environ.get(name)
            if value:
                # OMP_NUM_THREADS may be a list per nesting level ("4,2"): the first counts
                text = value.split(",")[0] if name == "OMP_NUM_THREADS" else value
                n, source = _count(text, f"${name}"), f"${name}"
                break
        else:
            cpus = _cpus()
            n = max(1, min(cpus, MAX_DEFAULT))
            source = f"{cpus} CPUs available" + (f", at most {MAX_DEFAULT}"
                                                 if cpus > MAX_DEFAULT else "")
    return ThreadPolicy(n, 1, min(n, _numba_limit()), source)


def _as_int(value: Any) -> Any:
    """NumPy integers count as ints; anything else is left for ``_count`` to judge."""
    import numpy as np

    return int(value) if isinstance(value, np.integer) else value


# -- applying a policy around a call -----------------------------------------------------

@dataclass(frozen=True, slots=True)
class _BlasThreads:
    """Read and set one BLAS library's thread count."""

    get_num_threads: Callable[[], int]
    set_num_threads: Callable[[int], Any]


_blas: tuple[_BlasThreads, ...] | None = None  # the process's BLAS libraries, found once
_lock = threading.Lock()
_open = 0  # scopes open (all threads)
_blas_saved: list[tuple[_BlasThreads, int]] = []  # (library, count found) by the first scope


def _openblas(dynlib: Any) -> _BlasThreads | None:
    """OpenBLAS's own process-wide ``openblas_{get,set}_num_threads`` (with the affixes of
    NumPy's ``scipy_openblas64_`` build), called directly: threadpoolctl's controller (3.8)
    lets only the first thread that set a limit set it again, and silently ignores the
    others, such as the big-stack thread a recursive program runs on."""
    for prefix in ("", "scipy_"):
        for suffix in ("", "64_", "_64"):
            get = getattr(dynlib, f"{prefix}openblas_get_num_threads{suffix}", None)
            put = getattr(dynlib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                return _BlasThreads(get, put)
    return None


def _controllers() -> tuple[_BlasThreads, ...]:
    """The BLAS libraries threadpoolctl finds (found once: ~5 ms): OpenBLAS on its
    pthreads layer through its own functions, others through threadpoolctl's
    controllers."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        found = []
        for lc in ThreadpoolController().lib_controllers:
            if lc.user_api != "blas":
                continue
            direct = _openblas(lc.dynlib) if lc.internal_api == "openblas" and \
                getattr(lc, "threading_layer", "") != "openmp" else None
            found.append(direct or _BlasThreads(lc.get_num_threads, lc.set_num_threads))
        _blas = tuple(found)
    return _blas


def enter(policy: ThreadPolicy, blas: bool = True) -> tuple[int, int, bool]:
    """Apply ``policy`` on this thread (its BLAS part only when ``blas``: a program that
    makes no BLAS call skips the ~3 µs it costs); returns the token ``leave`` restores
    from."""
    global _open
    if blas:
        controllers = _blas if _blas is not None else _controllers()
        with _lock:
            if _open == 0:
                for lc in controllers:
                    found = lc.get_num_threads()
                    if found != policy.blas_threads:
                        lc.set_num_threads(policy.blas_threads)
                        _blas_saved.append((lc, found))
            _open += 1
    pool = parallel.threads()
    parallel.set_threads(policy.threads)
    numba_changed = 0  # the count found, when this scope changed it
    found = _numba.get_num_threads()
    if found != policy.numba_threads:
        _numba.set_num_threads(policy.numba_threads)
        numba_changed = found
    return pool, numba_changed, blas


def leave(token: tuple[int, int, bool]) -> None:
    """Undo ``enter`` (the token it returned)."""
    global _open
    pool, numba_changed, blas = token
    parallel.set_threads(pool)
    if numba_changed:
        _numba.set_num_threads(numba_changed)
    if not blas:
        return
    with _lock:
        _open -= 1
        if _open == 0:
            while _blas_saved:
                lc, found = _blas_saved.pop()
                lc.set_num_threads(found)
