"""A trampoline that runs recursive-looking generator code without Python recursion.

Handlers are generators: ``value = yield child_generator`` asks the driver to run the child to
completion and send its return value back. A handler may also ``yield`` a plain (non-generator)
value, which is sent straight back; this lets leaf handlers skip generator creation by
returning values directly and their callers yield whatever they get.

Invariant: the Python call depth stays constant whatever the depth of the input, so deeply
nested programs (a 100 000-element constructor chain) never hit the recursion limit.
"""

from __future__ import annotations

from collections.abc import Generator
from types import GeneratorType
from typing import Any


def run(gen: Any) -> Any:
    """Run ``gen`` (a generator, or a plain value which is returned as is) to completion."""
    if type(gen) is not GeneratorType:
        return gen
    stack: list[Generator[Any, Any, Any]] = [gen]
    send: Any = None
    while True:
        try:
            child = stack[-1].send(send)
        except StopIteration as stop:
            stack.pop()
            if not stack:
                return stop.value
            send = stop.value
            continue
        if type(child) is GeneratorType:
            stack.append(child)
            send = None
        else:
            send = child


class no_gc:
    """Pause the cyclic garbage collector for a bulk phase (parsing, printing).

    These phases allocate millions of short-lived acyclic objects; the collector's repeated
    full traversals of the growing heap roughly double their running time. The previous
    state is restored on exit, so nested uses and callers that disabled GC are unaffected."""

    def __enter__(self) -> None:
        import gc

        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        import gc

        if self._was_enabled:
            gc.enable()
