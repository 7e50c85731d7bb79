"""The executor's runtime seam: the one object through which compiled code runs its steps.

The code generator (``relay_ref.executor.codegen``) emits every kernel step of every fused
group (and every single operator call left outside a group) as a call of the executable's
runtime, never as a direct kernel call::

    t5 = _run(S3, [t1, t2], _alloc(S3))   # a step whose result may go into a given buffer
    t6 = _run(S4, [t5, t0], t5)           # a fused tail writing in place over t5
    t7 = _run(S5, [t6], None)             # the kernel allocates its result itself
    _release(S3, t5)                      # after t5's last use, once per activation

``S3`` is a ``Site``: the static identity of one step of the program (its group and op
label, kind, the kernel, the result's static shape and dtype when known, the Relay span).
``_run``, ``_alloc`` and ``_release`` are the bound methods ``run``, ``allocate`` and
``release`` of the executable's ``Runtime``, installed in the generated module's namespace
(``Executable.runtime``'s setter); swapping the runtime re-installs them.

Contract (what a runtime may rely on and must keep):

* **run(site, args, out) -> value** computes the step: ``site.call(args, out)``. ``args`` is
  a fresh list of the step's argument values; ``out`` is None (the kernel allocates), a
  buffer from ``allocate``, or an earlier value of the same activation that the step may
  overwrite (a fused tail writing over its anchor's fresh result; that value is never
  released, the step's result is the same storage). Operators are pure: replaying ``run``
  on the same argument values gives the same result (the basis of recomputation, DTR's
  rematerialisation: a runtime may keep ``(site, args)`` of a value and call
  ``site.call(args, None)`` again to recompute it, provided it kept the arguments or can
  recompute them in turn). Every step's value passes through ``run``: it sees every
  result, so it can account sizes (``value.nbytes``) for results it did not allocate.
* **allocate(site) -> array | None** is asked only where the allocation policy planned it
  at compile time (``Site.slot >= 0``, ``Runtime.plans_allocation``): a buffer of
  ``site.shape`` / ``site.dtype`` (``site.nbytes`` bytes) for the step's result, or None
  for a fresh one. The buffer must not be in use by any value still live.
* **release(site, value)** says the program will not read ``value`` (the result of
  ``site`` in this activation) again: called exactly once per released value and
  activation, after the statement that used it last. Which values (static liveness,
  ``relay_ref.executor.liveness``, the one rule): within a fused group, a step's value
  that only later kernel steps of the group read (not the group's result, not written
  over in place); across the statements of a function, a value a kernel step computed
  (``run``'s result) that is read *only* as an element of the argument list of later
  ``run`` calls (the value itself, not in a tuple, not converted first), when it and all
  of its readers are computed in the function's top block (not in a branch of an ``if``,
  a ``match`` clause, or a lazily computed shared node; any function, with control flow
  elsewhere in it or not; a self tail call's loop releases once per iteration). Never
  released: parameters, constants, function results, values put in tuples or projected,
  values a scalar fast path reads (a Python operator on two 0-d values) or produces,
  values passed to a group as a 0-d parameter (``np.asarray`` first), values passed to a
  function or closure (a group that cannot be planned runs as one: it may return its
  argument), values captured by a nested function, values read in a branch. The storage
  may still be shared by a view a later step made (``Site.view``: the kernel may return a
  view of its first argument).
* Steps run on the thread that called the executable, one at a time for one call; an
  executable whose policy hands out shared buffers serialises its calls.

What a memory-budgeted pool (DTR, issue 27) builds on: a size before the kernel runs
(``site.nbytes`` for a static result type; ``run`` may evict before calling
``site.call``) and after it (``value.nbytes``); every use of a value as a kernel argument
(``run``'s ``args``); the drop of the program's last reference (``release``); recomputation
(``site.call`` on kept arguments). Values ``release`` is called for are, by the liveness
rule above, read *only* as elements of the argument lists of later ``run`` calls, so a
pool may hand such a value back from ``run`` as its own handle and resolve (rematerialise)
it when a later ``run`` receives it in ``args`` (a site whose value is released once is
released wherever it is computed: the release statement is in the same block as the
step's); every other value is read by plain Python code (tuples, branches,
scalar operators, results) and must be the array itself (pinned, in DTR's terms).

Policies and layers: ``Runtime`` is the plain policy (fresh allocation: the kernels
allocate), ``StaticPlanRuntime`` hands out the compile-time memory plan's buffers
(``relay_ref.executor.memory``); ``Layer`` wraps another runtime and forwards, so
instrumentation composes: ``Profiling`` times each step into ``exe.stats`` and
``Instrumented`` calls an ``Observer``'s ``begin(site, args)`` / ``end(site, value)`` around
each step and sees every ``allocate`` and ``release``. A memory-budgeted pool (DTR) is a
runtime too: ``run`` admits the result (evicting by its heuristic), ``release`` drops the
program's reference, and a recomputation replays ``site.call``.

Cost: one Python call for ``run`` plus one for the kernel adapter per step, one per
``release``; the methods are looked up once when installed (the generated code's globals
are cached by CPython), nothing per step is a dict lookup.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from relay_ref.ir.span import Span

__all__ = ["Instrumented", "Layer", "Observer", "Profiling", "Recorder", "Runtime", "Site",
           "StaticPlanRuntime", "SymbolicPlanRuntime", "site_call"]


@dataclass(frozen=True, slots=True, eq=False)
class Site:
    """One step of the compiled program (a kernel call site). ``index``: unique in the
    program; ``kind``: ``"op"`` (an operator's kernel or reference), ``"fused"`` (a
    generated kernel), ``"single"`` (an operator call outside any group) or ``"extern"`` (a
    region's callable built by a BYOC backend: ``group`` the backend, ``label`` the
    region); ``group``: the
    fused group's label (``conv2d+bias_add+relu``), ``label``: the step's (an op name);
    ``call(args, out)`` runs the kernel; ``shape`` / ``dtype``: the result's static type
    when it is a static tensor type, else None; ``slot``: the compile-time memory plan's
    slot for the result (``-1``: none); ``view``: the kernel may return a view of its
    first argument; ``span``: the Relay call it computes."""

    index: int
    kind: str
    group: str
    label: str
    call: Callable[[list[Any], Any], Any]
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    slot: int = -1
    view: bool = False
    span: Span | None = None

    @property
    def nbytes(self) -> int | None:
        """Bytes of the result when its type is static, else None."""
        if self.shape is None or self.dtype is None:
            return None
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    @property
    def name(self) -> str:
        """``group: label`` (the profile's key)."""
        return f"{self.group}: {self.label}"


def site_call(kind: str, fn: Callable[..., Any], attrs: object) -> Callable[[list[Any], Any],
                                                                          Any]:
    """The uniform ``call(args, out)`` of a step: an op kernel ``fn(args, attrs[, out=])``,
    a generated kernel ``fn(args[, out=])``, a single op ``fn(*args)``."""
    if kind == "op":
        def call(args: list[Any], out: Any) -> Any:
            if out is None:
                return fn(args, attrs)
            return fn(args, attrs, out=out)
    elif kind == "fused":
        def call(args: list[Any], out: Any) -> Any:
            if out is None:
                return fn(args)
            return fn(args, out=out)
    else:
        def call(args: list[Any], out: Any) -> Any:
            return fn(*args)
    call.kernel = fn  # type: ignore[attr-defined]
    call.attrs = attrs  # type: ignore[attr-defined]
    return call


class Runtime:
    """The plain policy: fresh allocation (kernels allocate their results), releases
    ignored, no instrumentation. Subclasses override the three methods; see the module
    docstring for the contract. ``plans_allocation``: whether the code generator emits
    ``allocate`` calls at the memory plan's sites."""

    name = "fresh"
    plans_allocation = False

    def run(self, site: Site, args: list[Any], out: Any) -> Any:
        return site.call(args, out)

    def allocate(self, site: Site) -> Any:
        return None

    def release(self, site: Site, value: Any) -> None:
        return None

    def bind(self, sites: tuple[Site, ...]) -> None:
        """Called once when installed, with every site of the program (index order)."""
        return None

    def shapes(self, env: dict[str, int]) -> None:
        """Called at the entry of a program whose memory plan has symbolic sizes, once its
        shape variables are bound (Shape-Bind), before any step: ``env`` gives the sizes
        ``allocate`` hands out for this call."""
        return None


class StaticPlanRuntime(Runtime):
    """The compile-time memory plan as a policy: ``allocate`` hands out the planned view of
    a preallocated buffer for the site's slot (two planned values share bytes only when
    their live ranges are disjoint: ``relay_ref.executor.memory``)."""

    name = "static"
    plans_allocation = True

    def __init__(self, views: list[np.ndarray]) -> None:
        self.views = views

    def allocate(self, site: Site) -> Any:
        return self.views[site.slot]


class SymbolicPlanRuntime(StaticPlanRuntime):
    """The compile-time memory plan with symbolic sizes (``relay_ref.executor.memory``):
    ``shapes(env)`` evaluates each symbolic buffer's size and each planned value's shape in
    the call's environment, (re)allocating a buffer only when it is too small (with
    ``bounds``, every buffer whose size the bounds limit is allocated once, here, at the
    bound, and a call whose variable exceeds its bound is a ``RelayRuntimeError`` at the
    entry: the bound is a promise, as Relax's upper-bound attribute); the views are
    remade only when the environment changed since the last call. The static plan's
    views come first (``static``), then one slot per symbolic value (``entries``:
    buffer index, shape, dtype)."""

    name = "static"

    def __init__(self, static: list[np.ndarray], entries: list[tuple[int, tuple, np.dtype]],
                 sizes: list[object], bounds: dict[str, int] | None = None,
                 span: Span | None = None) -> None:
        from relay_ref.ir.shape import bounds_of, shape_vars

        super().__init__([*static, *([None] * len(entries))])
        self.first = len(static)
        self.entries = entries
        self.sizes = sizes
        self.bounds = dict(bounds or {})
        self.span = span
        names: frozenset[str] = frozenset()
        for _, shape, _ in entries:
            names |= shape_vars(shape)
        self.vars = tuple(sorted(names))
        self.key: list | None = None
        self.buffers: list[np.ndarray | None] = []
        limits = {v: (0, b) for v, b in self.bounds.items()}
        for size in sizes:
            hi = bounds_of(size, limits)[1]  # type: ignore[arg-type]
            self.buffers.append(np.empty(max(int(hi), 1), np.uint8)
                                if hi != float("inf") else None)
        #: buffers allocated at run time (growing past what a buffer had), for the tests
        self.allocations = 0

    @property
    def nbytes(self) -> int:
        """Bytes of the symbolic buffers allocated so far."""
        return sum(b.nbytes for b in self.buffers if b is not None)

    def shapes(self, env: dict[str, int]) -> None:
        key = [env.get(v) for v in self.vars]
        if key == self.key:
            return
        from relay_ref.diagnostics import RelayRuntimeError
        from relay_ref.ir.shape import eval_dim, eval_shape

        for name, bound in self.bounds.items():
            if name in env and env[name] > bound:
                raise RelayRuntimeError(
                    f"shape variable {name} is {env[name]}, above its bound {bound} "
                    f"(rr.compile(shape_bounds=...) preallocated the buffers for {name} <= "
                    f"{bound}); compile with a larger bound, or without shape_bounds",
                    self.span)
        need = [eval_dim(size, env) for size in self.sizes]
        for b, n in enumerate(need):
            buf = self.buffers[b]
            if buf is None or buf.nbytes < n:
                self.buffers[b] = np.empty(max(n, 1), np.uint8)
                self.allocations += 1
        views, first = self.views, self.first
        for k, (b, shape, dtype) in enumerate(self.entries):
            dims = eval_shape(shape, env)
            n = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
            views[first + k] = self.buffers[b][:n].view(dtype).reshape(dims)  # type: ignore[index]
        self.key = key


class Layer(Runtime):
    """A runtime wrapping ``inner``: forwards every call (subclasses add to them)."""

    def __init__(self, inner: Runtime) -> None:
        if not isinstance(inner, Runtime):
            raise TypeError(f"{type(self).__name__}: inner must be a Runtime, not "
                            f"{type(inner).__name__}")
        self.inner = inner
        self.name = f"{type(self).__name__.lower()}({inner.name})"
        self.plans_allocation = inner.plans_allocation  # type: ignore[misc]

    def run(self, site: Site, args: list[Any], out: Any) -> Any:
        return self.inner.run(site, args, out)

    def allocate(self, site: Site) -> Any:
        return self.inner.allocate(site)

    def release(self, site: Site, value: Any) -> None:
        self.inner.release(site, value)

    def bind(self, sites: tuple[Site, ...]) -> None:
        self.inner.bind(sites)

    def shapes(self, env: dict[str, int]) -> None:
        self.inner.shapes(env)


class Profiling(Layer):
    """Times each step's ``run`` into ``record(site.name, seconds)`` (``exe.stats``)."""

    def __init__(self, inner: Runtime, record: Callable[[str, float], None]) -> None:
        super().__init__(inner)
        self.record = record

    def run(self, site: Site, args: list[Any], out: Any) -> Any:
        start = time.perf_counter()
        value = self.inner.run(site, args, out)
        self.record(site.name, time.perf_counter() - start)
        return value


class Observer(Protocol):
    """Instrumentation: a step began on its arguments (``begin``), ended with its value
    (``end``), a buffer was handed out (``allocated``), a value released (``released``)."""

    def begin(self, site: Site, args: list[Any]) -> None: ...

    def end(self, site: Site, value: Any) -> None: ...

    def allocated(self, site: Site, buffer: Any) -> None: ...

    def released(self, site: Site, value: Any) -> None: ...


class Instrumented(Layer):
    """Calls ``observer`` around every step and on every allocation and release."""

    def __init__(self, inner: Runtime, observer: Observer) -> None:
        super().__init__(inner)
        missing = [m for m in ("begin", "end", "allocated", "released")
                   if not callable(getattr(observer, m, None))]
        if missing:
            raise TypeError(f"Instrumented: the observer ({type(observer).__name__}) has no "
                            f"{', '.join(missing)} method (relay_ref.executor.runtime.Observer)")
        self.observer = observer

    def run(self, site: Site, args: list[Any], out: Any) -> Any:
        self.observer.begin(site, args)
        value = self.inner.run(site, args, out)
        self.observer.end(site, value)
        return value

    def allocate(self, site: Site) -> Any:
        buffer = self.inner.allocate(site)
        self.observer.allocated(site, buffer)
        return buffer

    def release(self, site: Site, value: Any) -> None:
        self.observer.released(site, value)
        self.inner.release(site, value)


@dataclass(slots=True)
class Recorder:
    """An ``Observer`` keeping every event as a tuple: ``("begin", site, args)``,
    ``("end", site, value)``, ``("allocate", site, buffer)``, ``("release", site, value)``
    (it keeps the values alive: for tests and small programs)."""

    events: list[tuple[Any, ...]]

    def __init__(self) -> None:
        self.events = []

    def begin(self, site: Site, args: list[Any]) -> None:
        self.events.append(("begin", site, list(args)))

    def end(self, site: Site, value: Any) -> None:
        self.events.append(("end", site, value))

    def allocated(self, site: Site, buffer: Any) -> None:
        self.events.append(("allocate", site, buffer))

    def released(self, site: Site, value: Any) -> None:
        self.events.append(("release", site, value))
