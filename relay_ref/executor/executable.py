"""``Executable``: what ``rr.compile`` returns: a callable running generated code.

``exe(*args)`` / ``exe(**inputs)`` take the same arguments as ``rr.evaluate`` (converted by
the same rule, spec/semantics.md 4.1, against the entry's parameter types) and return the
same values (tensors as ``numpy.ndarray``, tuples, ADT values, closures, refs).

Invariants:

* Nothing but ``RelayError`` leaves a call for a user mistake (wrong argument count, shape,
  dtype; a match failure, an operator failing at run time): errors are located at the Relay
  expression whose generated line failed (``relay_ref.executor.errors``).
* A program that can recurse (it calls functions) runs on the project's big-stack thread
  (``relay_ref.deepstack``); a pure dataflow entry runs on the caller's thread, so a tiny
  operator costs microseconds per call.
* Calls nest at most ``max_depth`` deep, self tail calls (loops) included, as in the
  interpreter: deeper is Stuck-Depth, the interpreter's located ``RelayRuntimeError``
  (``codegen`` module docstring, Depth). Where Python's recursion limit is the bound it is
  raised to ``max_depth + FRAME_SLACK`` for the run; where the code counts calls, each run
  starts its count at 0 and restores the count it found (a run nested in another's host
  closure).
* Results never alias the executable's state: every value returned is produced by this call
  (bound weights are constants of the plan, never returned without a copy).
* Every kernel step runs through ``exe.runtime`` (``relay_ref.executor.runtime``: the
  allocation policy, with layers such as profiling or an observer); assigning
  ``exe.runtime`` installs another (a layer around the current one) for later calls.
* Compiled with a memory budget (``rr.compile(memory_budget=...)``), each call runs on a
  fresh DTR engine (``relay_ref.dtr.runtime``) and ``exe.dtr_stats`` is that call's
  statistics (None before the first call; a budget given as a fraction of the peak is
  resolved on the first call by a run without budget first). Calls are serialised.
* Each call runs under the executable's thread policy (``exe.threads``,
  ``relay_ref.executor.threads``): BLAS on one thread, the work pool and numba at the
  policy's count, all restored when the call returns (or fails).
* Target ``cuda`` (``device`` given): tensor arguments of rank >= 1 are copied to the device
  at the start of a call, device arrays in the result are copied back by the converter
  (``relay_ref.executor.cuda_plan``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay_ref.deepstack import run_deep, run_raised
from relay_ref.diagnostics import RelayError, RelayRuntimeError
from relay_ref.executor import gcpause
from relay_ref.executor.codegen import FRAME_SLACK, GeneratedModule, recursion_in_python
from relay_ref.executor.errors import runtime_failure
from relay_ref.executor.jitstats import Counter
from relay_ref.executor.plan import Plan
from relay_ref.executor.runtime import Profiling, Runtime
from relay_ref.executor.threads import ThreadPolicy
from relay_ref.executor.threads import enter as enter_threads
from relay_ref.executor.threads import leave as leave_threads
from relay_ref.executor.threads import resolve as resolve_threads
from relay_ref.executor.values import Converter, scalar_in
from relay_ref.interpreter.args import ArgumentError, convert_argument
from relay_ref.interpreter.driver import param_types
from relay_ref.ir.expr import Function
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import FuncType, TensorType, Type

__all__ = ["Executable", "Stats"]

#: Least recursion limit of the big-stack thread compiled code runs on (each nested Relay
#: call is one Python frame of generated code, plus the kernels' own); a run raises it to
#: ``max_depth + FRAME_SLACK``.
RECURSION_LIMIT = 1_000_000


@dataclass(slots=True)
class Stats:
    """Measurements of the last call: wall time, calls so far; with ``profile=True`` the
    time per fused group and kernel (label -> [calls, seconds]), summed over calls.
    ``compilations``: numba specialisations (compiled or loaded from the disk cache) the
    calls made so far, ``last_compilations`` the last call's (``relay_ref.executor.
    jitstats``): after the first call of a symbolic program, new sizes make none."""

    calls: int = 0
    last_seconds: float = 0.0
    kernels: dict[str, list[float]] = field(default_factory=dict)
    compilations: int = 0
    last_compilations: int = 0

    def table(self) -> str:
        """The per-kernel times as text, slowest first."""
        rows = sorted(self.kernels.items(), key=lambda kv: -kv[1][1])
        lines = [f"{'kernel':50} {'calls':>7} {'ms total':>10} {'us/call':>9}"]
        for label, (n, secs) in rows:
            lines.append(f"{label[:50]:50} {int(n):7d} {secs * 1e3:10.3f} "
                         f"{secs * 1e6 / max(n, 1):9.1f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        head = (f"calls: {self.calls}, last call: {self.last_seconds * 1e3:.3f} ms, "
                f"compilations: {self.compilations} (last call: {self.last_compilations})")
        return head + ("\n" + self.table() if self.kernels else "")


class Executable:
    """A compiled program (see the module docstring). ``entry`` names the function run by
    ``exe(...)``; ``plan`` summarises kernels, fused groups and buffers; ``stats`` has the
    last call's measurements; ``source`` is the generated Python; ``max_depth`` bounds the
    nesting of calls (``rr.compile(max_depth=)``)."""

    def __init__(self, generated: GeneratedModule, module: IRModule, host_module: IRModule,
                 entry: str, plan: Plan, *, deep: bool,
                 profile: bool, memory: Any = None,
                 aliases: dict[str, str] | None = None, device: Any = None,
                 runtime: Runtime | None = None, dtr: Any = None,
                 threads: ThreadPolicy | None = None,
                 thread_scope: tuple[bool, bool] = (True, True)) -> None:
        self.generated = generated
        self.module = module  # the compiled (optimised, type-checked) module
        self.host_module = host_module  # the user's module, checked: host closures run here
        self.entry = entry
        self.plan = plan
        #: the thread policy applied around each call (``relay_ref.executor.threads``)
        self.threads = threads if threads is not None else resolve_threads()
        #: (whether any kernel of the program can use threads, whether any calls BLAS): the
        #: policy's few µs per call are skipped where they change nothing (a scalar
        #: program pays nothing, one without BLAS calls not BLAS's ~3 µs)
        self._thread_scope, self._thread_blas = thread_scope
        self.stats = Stats()
        self._jit = Counter()  # numba specialisations made by calls (stats.compilations)
        self.profile = profile
        self.device = device  # a cuda_plan.DeviceRuntime for target "cuda"
        self.converter = Converter(self)
        self.memory = memory
        #: A call writing preallocated buffers must not overlap another (threads); nor one
        #: running under the DTR runtime's engine (one per call, held by the runtime).
        self._lock = threading.Lock() if (memory is not None and (
            memory.buffers or memory.symbolic)) or dtr is not None else None
        self._deep = deep
        #: the entry's calls nest only Python functions (codegen.recursion_in_python)
        self._python_deep = deep and device is None and recursion_in_python(module, entry)
        self.max_depth = generated.max_depth
        self._recursion_limit = max(RECURSION_LIMIT, self.max_depth + FRAME_SLACK)
        self._depth = generated.namespace.get("_DEPTH")  # counted code's depth, per thread
        #: the casts' memo (interpreter/casts.py), scoped per call: emptied after each one
        self._cast_memo = generated.namespace.get("_cast_memo")
        func = module.functions[entry]
        self._func = func
        self._fn: Callable[..., Any] = generated.namespace[generated.globals[entry]]
        self._params = func.params
        self._param_types = param_types(module, entry, func)
        self._fast = [_fast_check(t) for t in self._param_types]
        self._sym_fast = [_symbolic_check(t) for t in self._param_types]
        self._names = {p.name_hint: i for i, p in enumerate(func.params)}
        #: other names of parameters (a frontend's original names -> parameter name)
        self._aliases = {k: v for k, v in (aliases or {}).items()
                         if v in self._names and k not in self._names}
        #: the DTR runtime (``rr.compile(memory_budget=...)``, ``relay_ref.dtr.runtime``):
        #: one engine per call; its statistics after each call (None without DTR)
        self._dtr = dtr
        self.dtr_stats: Any = None
        base = runtime if runtime is not None else Runtime()
        self._runtime: Runtime = base
        self.runtime = Profiling(base, self._record) if profile else base

    @property
    def runtime(self) -> Runtime:
        """The runtime every kernel step runs through (``relay_ref.executor.runtime``).
        Assigning one (a layer around the current one, say) installs its ``run``,
        ``allocate`` and ``release`` in the generated code (the code asks ``allocate`` at
        the sites the compile-time plan chose; a runtime answering None there gives fresh
        arrays). Do not assign it while a call runs."""
        return self._runtime

    @runtime.setter
    def runtime(self, runtime: Runtime) -> None:
        if not isinstance(runtime, Runtime):
            raise TypeError(f"runtime must be a relay_ref.executor.runtime.Runtime, not "
                            f"{type(runtime).__name__}")
        namespace = self.generated.namespace
        runtime.bind(tuple(self.generated.sites))
        namespace["_run"] = runtime.run
        namespace["_alloc"] = runtime.allocate
        namespace["_release"] = runtime.release
        namespace["_shapes"] = runtime.shapes
        self._runtime = runtime

    @property
    def source(self) -> str:
        return self.generated.source

    def _record(self, label: str, seconds: float) -> None:
        entry = self.stats.kernels.get(label)
        if entry is None:
            entry = self.stats.kernels[label] = [0, 0.0]
        entry[0] += 1
        entry[1] += seconds

    # -- calling ------------------------------------------------------------------------------
    def __call__(self, /, *args: Any, **inputs: Any) -> Any:
        if self._dtr is not None:
            with self._lock:  # type: ignore[union-attr]
                return self._budgeted(args, inputs)
        values = self._arguments(args, inputs)
        if self._lock is None:
            return self._run(self._fn, values)
        with self._lock:
            return self._run(self._fn, values)

    def _budgeted(self, args: tuple[Any, ...], inputs: dict[str, Any]) -> Any:
        """A call under the DTR runtime; a budget given as a fraction of the unbudgeted peak
        is resolved first, once, by a run without budget."""
        dtr = self._dtr
        if dtr.budget is None:
            self._run(self._fn, self._entry_values(args, inputs), measure=True)
            dtr.budget = dtr.resolve(self.dtr_stats)
        return self._run(self._fn, self._entry_values(args, inputs))

    def _entry_values(self, args: tuple[Any, ...], inputs: dict[str, Any]) -> list[Any]:
        """The entry's argument values, each tensor made known to the DTR runtime by its
        parameter (an out-of-memory error admitting it names the parameter)."""
        values = self._arguments(args, inputs)
        self._dtr.inputs = {id(v): p for v, p in zip(values, self._params, strict=True)
                            if type(v) is np.ndarray}
        return values

    def _arguments(self, args: tuple[Any, ...], inputs: dict[str, Any]) -> list[Any]:
        params, entry = self._params, self.entry
        if inputs:
            if self._aliases:
                inputs = {self._aliases.get(k, k): v for k, v in inputs.items()}
            if args:
                raise RelayRuntimeError(f"@{entry}: give the arguments either by position or "
                                        "by name, not both", self._func.span)
            unknown = [k for k in inputs if k not in self._names]
            if unknown:
                raise RelayRuntimeError(
                    f"@{entry} has no parameter %{unknown[0]} (its parameters: "
                    f"{', '.join('%' + p.name_hint for p in params) or 'none'})",
                    self._func.span)
            missing = [p.name_hint for p in params if p.name_hint not in inputs]
            if missing:
                raise RelayRuntimeError(f"@{entry}: no value given for parameter "
                                        f"%{missing[0]}", self._func.span)
            args = tuple(inputs[p.name_hint] for p in params)
        if len(args) != len(params):
            raise RelayRuntimeError(f"@{entry} takes {len(params)} argument(s), {len(args)} "
                                    "given", self._func.span)
        values = []
        for i, arg in enumerate(args):
            fast = self._fast[i]
            if fast is not None and type(arg) is np.ndarray and arg.dtype == fast[1] and \
                    arg.shape == fast[0]:
                # a 0-d tensor runs as a NumPy scalar (codegen's Scalars invariant): 0-d
                # array arithmetic costs ~10x more per operation
                values.append(arg if fast[0] else scalar_in(arg))
                continue
            sym = self._sym_fast[i]
            if sym is not None and type(arg) is np.ndarray and arg.dtype == sym[1] and \
                    arg.ndim == sym[2] and arg.dtype.isnative:
                shape = arg.shape
                for k, d in sym[0]:
                    if shape[k] != d:
                        break
                else:
                    # symbolic dimensions: the generated code binds and checks them
                    # (Shape-Bind)
                    values.append(arg)
                    continue
            def convert(arg: Any = arg, ty: Any = self._param_types[i]) -> Any:
                return convert_argument(arg, ty, self.host_module)

            try:
                try:
                    value = convert()
                except RecursionError:  # a deeply nested value: again on a big stack
                    value = run_deep(convert, name="relay-args")
            except ArgumentError as err:
                p = params[i]
                raise RelayRuntimeError(f"argument %{p.name_hint} of @{entry}: {err.message}",
                                        p.span) from None
            except RecursionError:
                p = params[i]
                raise RelayRuntimeError(f"argument %{p.name_hint} of @{entry}: nested too "
                                        "deeply to convert", p.span) from None
            if type(value) is np.ndarray:
                if not value.dtype.isnative:  # kernels take native byte order only
                    value = value.astype(value.dtype.newbyteorder("="))
                values.append(scalar_in(value) if value.ndim == 0 else value)
            else:
                values.append(self.converter.from_relay(value))
        return values

    def _run(self, fn: Callable[..., Any], values: list[Any], measure: bool = False) -> Any:
        dtr = self._dtr
        if dtr is None:
            return self._run_plain(fn, values)
        # one DTR engine per call (relay_ref.dtr.runtime): its stats become exe.dtr_stats;
        # started inside the try, so that a failing start (a log that cannot be opened)
        # still finishes: the collector is restored on every path
        ok = False
        try:
            dtr.start(measure=measure)
            result = self._run_plain(fn, values)
            ok = True
        finally:
            self.dtr_stats = dtr.finish(ok)
        return result

    def _run_plain(self, fn: Callable[..., Any], values: list[Any]) -> Any:
        jit = self._jit
        jit.start()
        start = time.perf_counter()
        gcpause.enter()  # the cyclic collector held back (executor/gcpause.py)
        try:
            if self._deep and fn is self._fn and self._python_deep:
                # deep Python-to-Python recursion only: no big-stack thread needed
                result = run_raised(lambda: self._job(fn, values),
                                    recursion_limit=self._recursion_limit)
            elif self._deep:
                result = run_deep(lambda: self._job(fn, values), name="relay-exe",
                                  recursion_limit=self._recursion_limit)
            else:
                result = self._job(fn, values)
        finally:
            gcpause.leave()
            made = jit.stop()
            self.stats.compilations += made
            self.stats.last_compilations = made
        stats = self.stats
        stats.calls += 1
        stats.last_seconds = time.perf_counter() - start
        return result

    def _job(self, fn: Callable[..., Any], values: list[Any]) -> Any:
        depth = self._depth
        outer = 0
        if depth is not None:
            outer, depth.d = depth.d, 0
        # applied on the thread that runs the code: numba's count is per thread
        token = enter_threads(self.threads, self._thread_blas) if self._thread_scope \
            else None
        try:
            result = _quietly(fn, values if self.device is None else
                              self.device.arguments(values))
        except RelayError:
            raise
        except Exception as err:  # noqa: BLE001 - located below, never leaked
            raise runtime_failure(err, self) from None
        finally:
            if token is not None:
                leave_threads(token)
            if depth is not None:
                depth.d = outer
            if self._cast_memo is not None:
                self._cast_memo.clear()
            for value in values:  # refs and ADTs passed in were converted in place
                if type(value) is not np.ndarray and not isinstance(value, np.generic):
                    self.converter.to_relay(value)
        if type(result) is np.ndarray:  # (a view of) a constant is copied: see values.py
            return self.converter.fresh(result)
        return self.converter.to_relay(result)

    def call_function(self, closure: Any, func: Function, args: tuple[Any, ...]) -> Any:
        """Call a closure this executable returned (``CompiledClosure.__call__``)."""
        if len(args) != len(func.params):
            raise RelayRuntimeError(f"the function takes {len(func.params)} argument(s), "
                                    f"{len(args)} given", func.span)
        checked = self.module.checked_types.get(func)
        types = checked.arg_types if isinstance(checked, FuncType) else \
            [p.type_annotation for p in func.params]
        values = []
        for p, ty, arg in zip(func.params, types, args, strict=True):
            try:
                value = convert_argument(arg, ty, self.host_module)
            except ArgumentError as err:
                raise RelayRuntimeError(f"argument %{p.name_hint}: {err.message}",
                                        p.span) from None
            if type(value) is np.ndarray and value.ndim == 0:
                value = scalar_in(value)
            values.append(self.converter.from_relay(value))
        return self._run(closure.compiled, values)

    def apply_host(self, value: Any, args: tuple[Any, ...]) -> Any:
        """Apply a function value from outside (an interpreter closure) inside compiled code:
        the interpreter runs it, on values converted both ways."""
        from relay_ref.interpreter.eval import Interpreter

        interp = Interpreter(self.host_module)
        out = interp.apply(value, [self.converter.to_relay(a) for a in args], None)
        return self.converter.from_relay(out)

    def __repr__(self) -> str:
        return f"<Executable @{self.entry}: {self.plan.summary()}>"


@np.errstate(all="ignore")
def _quietly(fn: Callable[..., Any], values: list[Any]) -> Any:
    """``fn(*values)`` as the references compute: IEEE results without warnings, Relay's
    integers wrapping silently (the decorator form of ``errstate`` is the cheaper one)."""
    return fn(*values)


def _symbolic_check(ty: Type | None
                    ) -> tuple[tuple[tuple[int, int], ...], np.dtype, int] | None:
    """((index, number) of each numeric dimension, dtype, rank) of a tensor parameter
    whose dimensions are numbers and symbolic ones (the symbolic argument fast path)."""
    from relay_ref.ir.shape import is_symbolic

    if type(ty) is not TensorType or not any(is_symbolic(d) for d in ty.shape) or \
            not all(type(d) is int or is_symbolic(d) for d in ty.shape):
        return None
    try:
        return (tuple((k, d) for k, d in enumerate(ty.shape) if type(d) is int),
                np.dtype(ty.dtype), len(ty.shape))
    except TypeError:
        return None


def _fast_check(ty: Type | None) -> tuple[tuple[int, ...], np.dtype] | None:
    """(shape, dtype) of a fully static tensor parameter (the argument fast path)."""
    if type(ty) is not TensorType or not all(type(d) is int for d in ty.shape):
        return None
    try:
        return tuple(ty.shape), np.dtype(ty.dtype)
    except TypeError:
        return None
