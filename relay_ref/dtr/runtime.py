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
* **Release.** ``release(site, handle)`` is the engine's release (D-Release-Eager,
  D-Banish or D-Release-Ignore, by ``dealloc``).
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

**The cyclic garbage collector is paused during a call** (``start`` to ``finish``, restored
as it was): the engine's graph grows by about a dozen container objects a step, all alive
until the call ends, and the collector's repeated passes over them cost as much as the
engine's own work (measured: 12.8 against 6.2 µs a step). Reference counting still frees
everything acyclic as before (the pinned arrays' finalizers still run); cyclic garbage
made during the call waits for its end.

**Out of memory** (D-OOM) is located at the step's Relay expression; a step without a
span (code the gradient's passes made) at the generated line's span, else at the
``gradient(@f)(...)`` call that made the code (``default_span``, said in the message), else
at the entry. An input or weight that does not fit is named as such ("input %x (8192
bytes) does not fit the budget of 100 bytes"), at the entry's parameter.

Counted beside the engine's ``stats``, for the last call: ``handles`` (results returned as
handles), ``pinned_results`` (results returned as arrays) and ``largest_allocation`` (the
largest storage admitted, bytes: the guarantee is peak <= budget + that).
"""

from __future__ import annotations

import dataclasses
import gc
import sys
import time
import weakref
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from relay_ref.dtr.costmodel import SiteCost, site_cost
from relay_ref.dtr.errors import DTROutOfMemory
from relay_ref.dtr.options import Budget, DTROptions, resolve_budget
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
        self.largest_allocation = 0
        self._handle: list[bool] = []
        #: per site: its static result bytes (None: not static) and its name
        self._static: list[tuple[int | None, str]] = []
        #: the cost of a static site (its argument shapes are fixed by its type)
        self._fixed_cost: dict[int, float] = {}
        #: the result bytes of a site without a static type, learnt per argument shapes
        #: (the first call measures the peak, so a budgeted call knows them before running)
        self._learnt: dict[tuple, int] = {}
        self._cost: list[SiteCost] = []
        self._measured: dict[int, float] = {}
        self._tensor_type: type = type(None)
        self._consts: dict[int, tuple[Any, Any]] = {}
        self._shape_of: dict[int, tuple[int, ...]] = {}
        self._dead: list[int] = []
        self._finalizers: list[weakref.finalize] = []
        self._log: Any = None
        self._sites: tuple[Site, ...] = ()
        #: where an out-of-memory error is located when its step has no span: the
        #: generated code's file name and line -> span map, and the entry's span
        self.filename = ""
        self.line_spans: dict[int, Any] = {}
        self.default_span: Any = None
        #: what ``default_span`` is when it is not the entry's (a ``gradient(@f)`` call:
        #: "the code gradient made"), said in the message; "" for the entry
        self.default_where = ""
        self._flops: list[SiteCost] = []
        #: the entry's tensor arguments of the call in flight: id(array) -> its parameter
        #: (a ``Var``; set by ``Executable``, emptied by ``finish``)
        self.inputs: dict[int, Any] = {}
        #: whether the cyclic collector was enabled when ``start`` paused it (None: not
        #: paused by this runtime)
        self._gc_paused: bool | None = None
        self._measured_cost = options.cost == "measured"
        self._timed = self._measured_cost

    # -- installation and calls ------------------------------------------------------------
    def bind(self, sites: tuple[Site, ...]) -> None:
        self._sites = sites
        handles = self.released | self.overwritten
        self._handle = [s.index in handles for s in sites]
        self._static = [(s.nbytes, s.name) for s in sites]
        self._fixed_cost = {}
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
        # the log's file first: a path that cannot be written fails here, with nothing paused
        if log and opts.log is not None:
            from relay_ref.dtr.log import LogWriter

            try:
                self._log = LogWriter(opts.log)
            except OSError as err:
                raise self._log_error(err) from None
        if self._gc_paused is None:  # not already paused by a call in flight
            self._gc_paused = gc.isenabled()
            gc.disable()
        self.engine = Engine(budget if budget is not None or measure else self.budget,
                             heuristic=opts.heuristic, dealloc=opts.dealloc, seed=opts.seed,
                             sizeof=_sizeof)
        self._flops = [site_cost(site, "flops") for site in self._sites] \
            if self._log is not None else []
        self._measured_cost = opts.cost == "measured"
        self._timed = self._measured_cost or self._log is not None
        self.handles = self.pinned_results = self.largest_allocation = 0
        self._consts = {}
        self._shape_of = {}
        self._dead = []
        self._finalizers = []

    def resolve(self, stats: Any) -> int:
        """The budget in bytes of a fractional one, from a run without budget's stats:
        ``ceil(ratio * peak_bytes)`` (``relay_ref.dtr.options.resolve_budget``)."""
        ratio = self.options.ratio if self.options.ratio is not None else 1.0
        return int(resolve_budget(Budget(None, ratio), int(stats.peak_bytes)))  # type: ignore

    def finish(self, ok: bool = True) -> Any:
        """End the call: the engine's statistics (``exe.dtr_stats``); the log written when
        the call succeeded. On every path (``start`` having failed half-way, the log not
        written included) the collector is restored and the engine and everything it held
        are dropped; a log that cannot be written is a ``DTRError`` naming ``dtr_log``."""
        stats = self.engine.stats if self.engine is not None else None
        log = self._log
        try:
            for fin in self._finalizers:
                fin.detach()
            if log is not None:
                if ok:
                    try:
                        log.close()
                    except OSError as err:
                        raise self._log_error(err) from None
                else:
                    log.abort()
        finally:
            if self._gc_paused is not None:
                if self._gc_paused:
                    gc.enable()
                self._gc_paused = None
            self.engine = None
            self._log = None
            self._consts = {}
            self._shape_of = {}
            self._finalizers = []
            self._dead = []
            self.inputs = {}
        return stats

    def _log_error(self, err: OSError) -> Any:
        """The ``DTRError`` of a log that cannot be written (checked at compile time, but
        the file system may change before the call)."""
        from relay_ref.dtr.errors import DTRError

        return DTRError(f"dtr_log: cannot write {self.options.log}: {err.strerror or err}")

    # -- the runtime contract -----------------------------------------------------------------
    def run(self, site: Site, args: list[Any], out: Any) -> Any:
        try:
            return self._step(site, args, out)
        except DTROutOfMemory as err:
            if err.span is None:  # D-OOM located where the program runs the step
                raise self._located(err) from None
            raise

    def _located(self, err: Any) -> Any:
        """``err`` (D-OOM of a step whose call has no span: code the gradient's passes
        made) located at the generated line running the step, else at ``default_span``."""
        span = None
        frame = sys._getframe(2)
        while frame is not None and span is None:
            if frame.f_code.co_filename == self.filename:
                span = self.line_spans.get(frame.f_lineno)
            frame = frame.f_back
        located = DTROutOfMemory(budget=err.budget, pinned_bytes=err.pinned_bytes,
                                 name=err.name, span=span or self.default_span,
                                 working_set=err.working_set, in_use=err.in_use,
                                 needed=err.needed)
        # the message as raised (a constant's names what did not fit), at the new place
        message = err.diagnostics[0].message
        if span is None and self.default_where:
            where = f" (in {self.default_where}, which has no source location)"
            head, tag, tail = message.rpartition(" [D-OOM]")
            message = head + where + tag + tail if tag else message + where
        located.diagnostics = [dataclasses.replace(err.diagnostics[0], message=message,
                                                   span=located.diagnostics[0].span)]
        return located

    def _step(self, site: Site, args: list[Any], out: Any) -> Any:
        """One kernel step: its arguments as engine tensors, its result admitted by
        ``Engine.call`` (``_admit``), returned as a handle or a pinned array (``_result``)."""
        if self._dead:
            self._forget_dead()
        tensors, positions, template = self._split_args(site, args)
        kept = [template]  # emptied once a pinned result ran (never replayed: D-Pin)
        t, aliases = self._admit(site, args, tensors,
                                 _replay(site.call, kept, positions, site.index,
                                         self._timed, self._measured))
        if self._log is not None:
            size = t.storage.size if not aliases else 0
            self._log.call(site.name, [f"x{a.id}" for a in tensors], [f"x{t.id}"],
                           int(self._measured.get(site.index, 0.0) * 1e9), [size],
                           [aliases[0] if aliases else None],
                           flops=int(self._flops[site.index](self._shapes(args))))
        if type(out) is self._tensor_type:
            # an in-place tail's anchor (GeneratedModule.overwritten): overwritten here in
            # the unbudgeted program, so the program's reference to it ends here
            self._release(out)
        return self._result(site, t, kept)

    def _split_args(self, site: Site, args: list[Any]) -> tuple[list[Any], list[int],
                                                                list[Any]]:
        """The step's engine tensors (handles as they are, plain arrays as constants: D-Pin),
        their positions in ``args``, and the arguments with the handles' places None (the
        closure fills them with the values the engine passes)."""
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
                tensors.append(self._constant(a, site))
                positions.append(i)
        return tensors, positions, template

    def _admit(self, site: Site, args: list[Any], tensors: list[Any],
               compute: Any) -> tuple[Any, tuple[int, ...]]:
        """``Engine.call`` for the step (D-Alloc): its result's bytes (static, or learnt on
        the same argument shapes, else None: measured after the kernel), its cost by the
        cost model, a view aliasing its first argument. The tensor and the aliases."""
        index = site.index
        nbytes, name = self._static[index]
        static = nbytes is not None
        key = None
        if not static:  # learnt from an earlier run of the site on the same shapes
            key = self._shape_key(index, args)
            nbytes = self._learnt.get(key) if key is not None else None
        measured = self._measured_cost
        if measured and index in self._measured:
            cost = self._measured[index]
        else:
            cost = self._fixed_cost.get(index)
            if cost is None:
                cost = self._cost[index](self._shapes(args))
                if static:  # a static step: the same shapes every time
                    self._fixed_cost[index] = cost
            if measured:
                cost *= 1e-9
        first = bool(tensors) and type(args[0]) in (self._tensor_type, np.ndarray)
        aliases = (0,) if site.view and first else ()
        (t,) = self.engine.call(name, tensors, [nbytes], cost, compute, aliases=aliases,
                                span=site.span)
        if key is not None and not aliases:
            self._learnt[key] = t.storage.size
        if t.storage.size > self.largest_allocation:
            self.largest_allocation = t.storage.size
        return t, aliases

    def _result(self, site: Site, t: Any, kept: list[Any]) -> Any:
        """The step's value for the program: the handle ``t`` where the code generator
        releases the value (read only by later steps), else the array itself, pinned (the
        program holds it directly), its call's arguments dropped (never replayed)."""
        if self._handle[site.index]:
            self.handles += 1
            shape = site.shape
            self._shape_of[id(t)] = shape if shape is not None else \
                getattr(self.engine.value(t), "shape", ())
            return t
        value = self.engine.value(t)
        self.pinned_results += 1
        kept[0] = ()
        self._pin(t, value)
        if self._log is not None:
            self._log.pin(f"x{t.id}")  # so that a replay of the log cannot evict it either
        return value

    def release(self, site: Site, value: Any) -> None:
        if type(value) is self._tensor_type:
            self._release(value)

    def _release(self, t: Any) -> None:
        """The program's reference to ``t`` dropped (D-Release-Eager, D-Banish or
        D-Release-Ignore by the dealloc policy; logged as ``RELEASE``)."""
        if self._log is not None:
            self._log.release(f"x{t.id}")
        self.engine.release(t)

    # -- pinned arrays ------------------------------------------------------------------------
    def _shapes(self, args: list[Any]) -> list[Any]:
        """Arguments with handles replaced by something with their shape (the cost model
        reads shapes only)."""
        tensor_type = self._tensor_type
        shape_of = self._shape_of
        return [_Shaped(shape_of.get(id(a), ())) if type(a) is tensor_type else a
                for a in args]

    def _shape_key(self, index: int, args: list[Any]) -> tuple | None:
        """(site, argument shapes) when every argument is a handle or an array, else None:
        the same kernel on the same shapes makes a result of the same bytes."""
        tensor_type = self._tensor_type
        shape_of = self._shape_of
        key: list[Any] = [index]
        for a in args:
            if type(a) is tensor_type:
                shape = shape_of.get(id(a))
                if shape is None:
                    return None
                key.append(shape)
            elif type(a) is np.ndarray:
                key.append((a.dtype.str, a.shape))
            else:
                return None
        return tuple(key)

    def _constant(self, array: np.ndarray, site: Site) -> Any:
        """The engine constant of a plain array argument of ``site`` (D-Pin), one per
        array. One that does not fit is D-OOM naming what it is (the entry's parameter, at
        its span; else a weight or constant, at the step's) rather than the step's operator."""
        key = id(array)
        known = self._consts.get(key)
        if known is not None and known[1]() is array:
            return known[0]
        param = self.inputs.get(key)
        what = f"input %{param.name_hint}" if param is not None else "weight/constant"
        try:
            t = self.engine.constant(array.nbytes, None, name=what)
        except DTROutOfMemory as err:
            raise self._constant_oom(err, what, array.nbytes, site, param) from None
        self.largest_allocation = max(self.largest_allocation, array.nbytes)
        if self._log is not None:
            self._log.constant(f"x{t.id}", array.nbytes)
        self._track(array, t)
        return t

    def _constant_oom(self, err: Any, what: str, nbytes: int, site: Site,
                      param: Any) -> Any:
        """D-OOM admitting a constant: ``what`` (``nbytes``) does not fit the budget."""
        from relay_ref.diagnostics import ERROR, Diagnostic

        pinned = f", {err.pinned_bytes} bytes of it already pinned" if err.pinned_bytes \
            else ""
        where = f" (an argument of {site.name})" if param is None else ""
        message = (f"out of memory under DTR: {what}{where} ({nbytes} bytes) does not fit "
                   f"the budget of {err.budget} bytes{pinned}: inputs and weights are pinned "
                   "and count in the budget [D-OOM]")
        span = getattr(param, "span", None) or site.span
        oom = DTROutOfMemory(budget=err.budget, pinned_bytes=err.pinned_bytes, name=what,
                             span=span, working_set=nbytes, in_use=err.in_use,
                             needed=err.needed)
        oom.diagnostics = [Diagnostic(ERROR, message, oom.diagnostics[0].span)]
        return oom

    def _pin(self, t: Any, value: Any) -> None:
        """Make the result ``t`` (whose value the program now holds as ``value``) pinned."""
        self.engine.pin(t)
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
                if self._log is not None:
                    if known[0].call is None:  # a constant: its RELEASE is D-Free too
                        self._log.pin(f"x{known[0].id}")
                    self._log.release(f"x{known[0].id}")
                self.engine.free(known[0])


def _replay(call: Any, kept: list[Any], positions: list[int], index: int, timed: bool,
            record: dict[int, float]) -> Any:
    """The step's ``compute`` for the engine (run now, and again on each rematerialisation):
    the kernel ``call`` on the arguments ``kept[0]`` with the engine's values at
    ``positions``, always with ``out=None`` (purity, spec/dtr.md 6: an in-place tail gets a
    fresh result); ``timed``: its wall time recorded in ``record[index]``."""

    def compute(values: Sequence[Any]) -> list[Any]:
        full = list(kept[0])
        for j, pos in enumerate(positions):
            if full[pos] is None:
                full[pos] = values[j]
        if timed:
            begin = time.perf_counter()
            value = call(full, None)
            record[index] = time.perf_counter() - begin
            return [value]
        return [call(full, None)]

    return compute


class _Shaped:
    """A stand-in with a ``shape`` (a handle's, for the cost model)."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
