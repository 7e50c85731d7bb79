"""DTR as an executor runtime: every kernel step of a compiled program through the engine.

``DTRRuntime`` is a ``relay_ref.executor.runtime.Runtime`` (the contract is that module's
docstring); ``rr.compile(mod, params, memory_budget=...)`` installs it. One engine
(``relay_ref.dtr.engine.Engine``) per call of the executable (``start`` / ``finish``,
called by ``Executable``); its statistics become ``exe.dtr_stats``.

Per step (``run(site, args, out)``), spec/dtr.md:

* **Arguments.** A handle (an engine ``Tensor`` an earlier ``run`` returned) is passed as
  it is: the engine rematerialises it if it was evicted (D-Remat) and locks it while the
  step runs. A plain array (an input, a weight, a constant, a pinned result) becomes an
  engine constant the first time it is seen in a call, keyed by its identity, counted
  once (D-Pin); it is forgotten (its bytes freed) when the array is garbage collected
  (``weakref.finalize``; the release is applied at the next step, never inside the
  engine). Other arguments (NumPy scalars, tuples of pinned arrays) are not tensors of the
  engine: they are kept in the step's closure as they are.
* **Result.** Admitted by ``Engine.call`` (D-Alloc: evicting to fit) with the site's static
  size (``site.nbytes``; None when not static: measured after the kernel ran), the cost
  model's cost (``relay_ref.dtr.costmodel``) and ``compute``: ``site.call`` on the
  arguments' values with ``out=None`` (the same kernel the unbudgeted program runs, so
  replays give bit-identical values). A view step (``Site.view``) aliases its first
  argument's storage. The result is returned as a **handle** only when the code generator
  releases the site's value (``GeneratedModule.released``: by the liveness rule such a value
  is read only as an argument of later ``run`` calls); every other value is read by plain
  Python code and is returned as the array itself, **pinned** (the engine may not evict
  what the program holds directly) until the array is garbage collected.
* **Release.** ``release(site, handle)`` is the engine's release (D-Release: eager evict,
  banish or ignore, by ``dealloc``).
* **Purity** (spec/dtr.md, "How purity is kept"): the executor's only in-place writes are
  fused tails writing over their anchor's fresh result (``out`` an earlier value of the
  activation) and the static memory plan's buffers. Under DTR there is no memory plan
  (``rr.compile`` compiles without it), and a tail writing in place is run with
  ``out=None`` instead (copy-on-write): its result is a fresh array and the anchor's value
  keeps its bytes, so every value a replay may read is unchanged. The anchor's value is
  read by nothing but the tail (the group planner's invariant), so it is a handle too
  (``GeneratedModule.overwritten``) and the tail's step drops the program's reference to
  it (``engine.release``), where the unbudgeted program overwrote it: the memory is the
  same as in place once the anchor is evicted. Bit-identical: a kernel computes the same
  elements into a fresh array as into a given one.

Counted in ``stats`` beside the engine's: ``handles`` (results returned as handles) and
``pinned_results`` (results returned as arrays), summed over the call.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from relay_ref.dtr.costmodel import SiteCost, site_cost
from relay_ref.dtr.options import DTROptions
from relay_ref.executor.runtime import Runtime, Site

__all__ = ["DTRRuntime"]


def _sizeof(value: Any) -> int:
    """Bytes of a computed value whose size was not static: an array's, a tuple's fields'."""
    if type(value) is tuple:
        return sum(_sizeof(v) for v in value)
    return int(getattr(value, "nbytes", 0))


class DTRRuntime(Runtime):
    """Kernel steps through a DTR engine (see the module docstring). ``released``: the
    indices of the sites whose values the generated code releases; ``overwritten``: those
    whose values a fused tail overwrites in place (``GeneratedModule``): both handles."""

    name = "dtr"
    plans_allocation = False

    def __init__(self, options: DTROptions, released: Collection[int] = (),
                 overwritten: Collection[int] = ()) -> None:
        self.options = options
        self.released = frozenset(released)
        self.overwritten = frozenset(overwritten)
        #: the budget in bytes once known (given, or resolved from the ratio on a call)
        self.budget: int | None = options.budget_bytes
        self.engine: Any = None
        self.handles = 0
        self.pinned_results = 0
        self._handle: list[bool] = []
        self._cost: list[SiteCost] = []
        self._measured: dict[int, float] = {}
        self._tensor_type: type = type(None)
        self._consts: dict[int, tuple[Any, Any]] = {}
        self._shape_of: dict[int, tuple[int, ...]] = {}
        self._dead: list[int] = []
        self._finalizers: list[weakref.finalize] = []
        self._log: Any = None

    # -- installation and calls ------------------------------------------------------------
    def bind(self, sites: tuple[Site, ...]) -> None:
        handles = self.released | self.overwritten
        self._handle = [s.index in handles for s in sites]
        model = "flops" if self.options.cost == "measured" else self.options.cost
        self._cost = [site_cost(s, model) for s in sites]

    def start(self, budget: int | None = None, *, measure: bool = False) -> None:
        """A fresh engine for one call of the executable, with ``budget`` bytes (default
        ``self.budget``; ``measure``: no budget, the run measuring the peak) and, unless
        measuring, when the options name a log, a ``LogWriter`` recording it."""
        log = not measure
        from relay_ref.dtr.engine import Engine, Tensor

        opts = self.options
        self._tensor_type = Tensor
        self._log = None
        if log and opts.log is not None:
            from relay_ref.dtr.log import LogWriter

            self._log = LogWriter(opts.log)
        self.engine = Engine(budget if budget is not None or measure else self.budget,
                             heuristic=opts.heuristic, dealloc=opts.dealloc, seed=opts.seed,
                             sizeof=_sizeof, **({"log": self._log} if self._log else {}))
        self.handles = self.pinned_results = 0
        self._consts = {}
        self._shape_of = {}
        self._dead = []
        self._finalizers = []

    def resolve(self, stats: Any) -> int:
        """The budget in bytes of a fractional one, from a run without budget's stats:
        ``ceil(ratio * peak_bytes)``."""
        ratio = self.options.ratio if self.options.ratio is not None else 1.0
        return max(1, math.ceil(ratio * int(stats.peak_bytes)))

    def finish(self, ok: bool = True) -> Any:
        """End the call: the engine's statistics (``exe.dtr_stats``); the log written when
        the call succeeded. The engine and everything it held are dropped."""
        stats = self.engine.stats if self.engine is not None else None
        for fin in self._finalizers:
            fin.detach()
        if self._log is not None:
            close = getattr(self._log, "close", None)
            if ok and close is not None:
                close()
            elif not ok:
                abort = getattr(self._log, "abort", None) or close
                if abort is not None:
                    abort()
        self.engine = None
        self._log = None
        self._consts = {}
        self._shape_of = {}
        self._finalizers = []
        return stats

    # -- the runtime contract -----------------------------------------------------------------
    def run(self, site: Site, args: list[Any], out: Any) -> Any:
        engine = self.engine
        if self._dead:
            self._forget_dead()
        tensor_type = self._tensor_type
        tensors: list[Any] = []
        positions: list[int] = []
        template = list(args)
        for i, a in enumerate(args):
            if type(a) is tensor_type:
                tensors.append(a)
                positions.append(i)
                template[i] = None
            elif type(a) is np.ndarray:
                tensors.append(self._constant(a))
                positions.append(i)
        index = site.index
        call = site.call
        measured = self.options.cost == "measured"
        record = self._measured
        # rule D-Pure (spec/dtr.md): out=None always, an in-place tail gets a fresh result

        def compute(values: Sequence[Any]) -> list[Any]:
            full = list(template)
            for j, pos in enumerate(positions):
                if full[pos] is None:
                    full[pos] = values[j]
            if measured:
                begin = time.perf_counter()
                value = call(full, None)
                record[index] = time.perf_counter() - begin
                return [value]
            return [call(full, None)]

        if measured and index in record:
            cost = record[index]
        else:
            cost = self._cost[index](self._shapes(args))
            if measured:
                cost *= 1e-9
        aliases = (0,) if site.view and positions and positions[0] == 0 else ()
        (t,) = engine.call(site.name, tensors, [site.nbytes], cost, compute,
                           aliases=aliases, span=site.span)
        if type(out) is tensor_type:
            # an in-place tail's anchor (GeneratedModule.overwritten): overwritten here in
            # the unbudgeted program, so the program's reference to it ends here
            engine.release(out)
        if self._handle[index]:
            self.handles += 1
            shape = site.shape
            self._shape_of[id(t)] = shape if shape is not None else \
                getattr(engine.value(t), "shape", ())
            return t
        value = engine.value(t)
        self.pinned_results += 1
        self._pin(t, value)
        return value

    def release(self, site: Site, value: Any) -> None:
        if type(value) is self._tensor_type:
            self.engine.release(value)

    # -- pinned arrays ------------------------------------------------------------------------
    def _shapes(self, args: list[Any]) -> list[Any]:
        """Arguments with handles replaced by something with their shape (the cost model
        reads shapes only)."""
        tensor_type = self._tensor_type
        shape_of = self._shape_of
        return [_Shaped(shape_of.get(id(a), ())) if type(a) is tensor_type else a
                for a in args]

    def _constant(self, array: np.ndarray) -> Any:
        """The engine constant of a plain array argument (D-Pin), one per array."""
        key = id(array)
        known = self._consts.get(key)
        if known is not None and known[1]() is array:
            return known[0]
        t = self.engine.constant(array.nbytes, None, name="")
        self._track(array, t)
        return t

    def _pin(self, t: Any, value: Any) -> None:
        """Make the result ``t`` (whose value the program now holds as ``value``) pinned."""
        pin = getattr(self.engine, "pin", None)
        if pin is not None:
            pin(t)
        else:  # never evicted (locked for good) until the array dies
            self.engine.require_resident((t,))
        if type(value) is np.ndarray:
            self._track(value, t)

    def _track(self, array: np.ndarray, t: Any) -> None:
        key = id(array)
        self._consts[key] = (t, weakref.ref(array))
        self._finalizers.append(weakref.finalize(array, self._dead.append, key))

    def _forget_dead(self) -> None:
        """Release the engine tensors of pinned arrays garbage collected since the last
        step (never inside the engine: a finalizer may run while it works)."""
        dead = list(self._dead)
        self._dead.clear()  # the finalizers append to this very list
        for key in dead:
            known = self._consts.get(key)
            if known is not None and known[1]() is None:
                del self._consts[key]
                free = getattr(self.engine, "free", None)
                if free is not None:
                    free(known[0])


class _Shaped:
    """A stand-in with a ``shape`` (a handle's, for the cost model)."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
