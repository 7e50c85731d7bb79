"""Counting numba specialisations, so that ``exe.stats`` shows what a call compiled.

A *compilation* here is a new specialisation (a new signature: compiled, or loaded from
numba's disk cache) of a numba dispatcher of the project's kernels: the generated fused
kernels (modules ``relay_ref_kernels.*``, ``relay_ref.compute.cpu.codecache``) and the CPU
kernels (``relay_ref.compute.*``). It is what a new dtype or rank costs, and what a new
*size* must never cost (issue 29: one compile for every shape).

Cost: counting walks those modules' dispatchers (their ``overloads``), which is too slow to
do around every call; so a listener on numba's ``numba:compiler_lock`` event (taken by
every compilation or cache load, never by a call of an existing specialisation) bumps a
counter, and the walk runs only when the counter moved. A call that specialises nothing
costs two integer reads.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["Counter", "specialisations"]

_lock = threading.Lock()
_events = [0]  # acquisitions of numba's compiler lock since the listener was installed
_installed = [False]


def _install() -> None:
    with _lock:
        if _installed[0]:
            return
        from numba.core import event

        class _Listener(event.Listener):
            def on_start(self, ev: object) -> None:
                _events[0] += 1

            def on_end(self, ev: object) -> None:
                return None

        event.register("numba:compiler_lock", _Listener())
        _installed[0] = True


def specialisations() -> int:
    """Specialisations held by the project's numba dispatchers right now."""
    from numba.core.dispatcher import Dispatcher

    total = 0
    for name, module in list(sys.modules.items()):
        if module is None or not (name.startswith("relay_ref_kernels")
                                  or name.startswith("relay_ref.compute")
                                  or name.startswith("relay_ref.executor")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, Dispatcher):
                total += len(value.overloads)
    return total


class Counter:
    """Specialisations made between ``start()`` and ``stop()`` (see the module docstring)."""

    def __init__(self) -> None:
        _install()
        self._seen = _events[0]
        self._total = specialisations()

    def start(self) -> None:
        if _events[0] != self._seen:  # something compiled elsewhere since: a new base
            self._seen = _events[0]
            self._total = specialisations()

    def stop(self) -> int:
        """Specialisations made since ``start()``."""
        if _events[0] == self._seen:
            return 0
        self._seen = _events[0]
        total = specialisations()
        made, self._total = max(total - self._total, 0), total
        return made
