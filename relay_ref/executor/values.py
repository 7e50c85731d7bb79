"""Values crossing the boundary of compiled code (spec/semantics.md section 1).

Inside compiled code a value is what the interpreter uses (``relay_ref.interpreter.values``)
with differences, for speed: a 0-d ``int32`` tensor is a Python ``int`` and a 0-d ``bool``
tensor a Python ``bool`` (``relay_ref.executor.scalars``), another 0-d tensor may be a NumPy
scalar (``np.float32(3)``), and a function is a Python callable (a generated ``def``, an
operator or constructor wrapper). ``to_relay`` turns a result into the interpreter's
representation (0-d arrays, ``Closure`` values) and ``from_relay`` turns arguments into the
compiled one.

Invariants:

* A Python ``int`` in compiled code is always an ``int32`` in ``[-2**31, 2**31)`` (no other
  width is one), a Python ``bool`` always a ``bool``: both convert without their static type
  (inside ADT values, references, closures' environments, through polymorphic functions).
  A 0-d ``int32`` array or ``np.int32`` (a kernel's result) may stand for one too; arguments
  coming in (``scalar_in``, ``from_relay``) are converted to the Python form.

* ADT values and reference cells are converted *in place* (a field or a cell's content is
  replaced by an equal value of the other representation), so their identity, the store's
  locations, is kept: a ref handed out and passed back in is the same cell. Tuples have no
  identity and are rebuilt. Both walks are iterative over ADTs and refs: a 100 000-element
  list converts without deep recursion.
* No result shares memory with the executable: an array that is one of its constants (bound
  weights included) or a view of one is copied on the way out; buffers of the memory plan
  never hold outputs (``memory.py``); a device array (target ``cuda``) is copied to the host.
* A returned function is a ``CompiledClosure`` (or ``CompiledRecClosure``): a ``Closure`` the
  interpreter accepts (its captured environment converted) that Python can also call, which
  runs its compiled code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay_ref.interpreter.values import Closure, ConstructorValue, RecClosure, RefValue
from relay_ref.ir.expr import Constructor, Op

__all__ = ["CompiledClosure", "CompiledRecClosure", "Converter", "scalar_in"]

_INT32, _BOOL = np.dtype(np.int32), np.dtype(np.bool_)


def scalar_in(array: np.ndarray) -> Any:
    """A 0-d array as compiled code holds it: a Python ``int`` for ``int32``, a ``bool``
    for ``bool``, a NumPy scalar for any other dtype."""
    dtype = array.dtype
    if dtype == _INT32 or dtype == _BOOL:
        return array.item()
    return array[()]


@dataclass(frozen=True, slots=True, eq=False)
class CompiledClosure(Closure):
    """A closure produced by compiled code: an interpreter ``Closure`` (``env``, ``func``)
    that also carries its compiled Python function; calling it from Python runs that
    (arguments converted and checked as ``exe(...)`` does)."""

    compiled: Callable[..., Any] | None = field(default=None, repr=False)
    runner: Any = field(default=None, repr=False)

    def __call__(self, *args: Any) -> Any:
        return self.runner.call_function(self, self.func, args)

    __repr__ = Closure.__repr__


@dataclass(frozen=True, slots=True, eq=False)
class CompiledRecClosure(RecClosure):
    """A recursive closure produced by compiled code (see ``CompiledClosure``)."""

    compiled: Callable[..., Any] | None = field(default=None, repr=False)
    runner: Any = field(default=None, repr=False)

    def __call__(self, *args: Any) -> Any:
        return self.runner.call_function(self, self.closure.func, args)

    __repr__ = RecClosure.__repr__


class Converter:
    """Both directions for one executable (``runner``: the ``Executable``, which knows the
    generated functions and how to run the interpreter on a host closure)."""

    def __init__(self, runner: Any) -> None:
        self.runner = runner
        self.device = getattr(runner, "device", None)  # target "cuda": copies results out
        self.functions = runner.generated.functions
        self.constants = runner.generated.constants

    def fresh(self, array: np.ndarray) -> np.ndarray:
        """``array``, or a copy when it is one of the executable's constants or a view of
        one (its ``base`` chain reaches a constant): results never share memory with the
        executable. Only ndarray bases are followed: an array made from a buffer (``np.load``
        of a file, ``np.frombuffer``) has a ``memoryview`` or ``bytes`` base, which is no
        constant and has no ``base`` of its own."""
        constants = self.constants
        base: object = array
        while isinstance(base, np.ndarray):
            if id(base) in constants:
                return array.copy()
            base = base.base
        return array

    # -- compiled -> interpreter -------------------------------------------------------------
    def to_relay(self, value: Any) -> Any:
        """``value`` (compiled representation) in the interpreter's."""
        return _walk(value, self._leaf_out)

    def _leaf_out(self, v: Any) -> Any:
        """A value that is not an ADT value, a ref or a tuple, in the interpreter's
        representation."""
        if type(v) is np.ndarray:
            return self.fresh(v)
        if type(v) is int:  # an int32 (see the module docstring)
            return np.array(v, np.int32)
        if type(v) is bool:
            return np.array(v)
        if isinstance(v, np.generic):
            return np.asarray(v)
        if callable(v) and not isinstance(v, Closure | RecClosure | Constructor | Op):
            return self.closure_of(v)
        if self.device is not None and self.device.is_device(v):
            return self.device.to_host(v)  # a fresh host array
        return v

    def closure_of(self, fn: Callable[..., Any]) -> Any:
        """The Relay function value behind a compiled callable."""
        known = getattr(fn, "relay_closure", None)
        if known is not None:
            return known
        inner = getattr(fn, "relay_cast_inner", None)
        if inner is not None:  # a cast's proxy (interpreter/casts.py): the function inside
            return self.closure_of(inner)
        original = getattr(fn, "relay_value", None)
        if original is not None:  # a host function value passed in: give it back
            return original
        op = getattr(fn, "relay_op", None)
        if op is not None:
            return Op(op)
        ctor = getattr(fn, "relay_constructor", None)
        if ctor is not None:
            return ctor
        info = self.functions.get(getattr(getattr(fn, "__code__", None), "co_name", ""))
        if info is None:  # pragma: no cover - every callable in compiled code is one above
            raise TypeError(f"not a compiled Relay function: {fn!r}")
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True))
        env = {var: self.to_relay(cells[name].cell_contents)
               for name, var in info.captured.items() if name in cells}
        if "_eo" in cells and cells["_eo"].cell_contents:  # Shape-Bind: the snapshot of the
            from relay_ref.interpreter.shapes import SHAPE_ENV  # enclosing shape variables

            env[SHAPE_ENV] = dict(cells["_eo"].cell_contents)
        closure = CompiledClosure(env, info.func, info.global_name, fn, self.runner)
        value: Any = closure
        if info.rec_var is not None:
            value = CompiledRecClosure(closure, info.rec_var, fn, self.runner)
        fn.relay_closure = value  # type: ignore[attr-defined]  # dies with fn
        return value

    # -- interpreter -> compiled -------------------------------------------------------------
    def from_relay(self, value: Any) -> Any:
        """``value`` (interpreter representation) in the compiled one."""
        if type(value) is np.ndarray:
            return scalar_in(value) if value.ndim == 0 else value
        return _walk(value, self._leaf_in)

    def _leaf_in(self, v: Any) -> Any:
        if isinstance(v, Closure | RecClosure | Constructor | Op):
            return self.callable_of(v)
        if type(v) is np.ndarray:
            return scalar_in(v) if v.ndim == 0 else v
        if type(v) is np.int32 or type(v) is np.bool_:
            return v.item()
        return v

    def callable_of(self, value: Any) -> Callable[..., Any]:
        """A Python callable for a Relay function value given from outside."""
        compiled = getattr(value, "compiled", None)
        if compiled is not None and getattr(value, "runner", None) is self.runner:
            return compiled
        if type(value) is Constructor:
            from relay_ref.executor.codegen import constructor_value

            return constructor_value(value)
        if type(value) is Op:
            from relay_ref.executor.codegen import op_value

            return op_value(value.name)
        runner = self.runner

        def host(*args: Any) -> Any:
            return runner.apply_host(value, args)

        host.relay_value = value  # type: ignore[attr-defined]
        return host


def _walk(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` with ``leaf`` applied to every value inside it that is not a tuple, an
    ADT value or a ref: tuples are rebuilt, ADT values and refs converted in place from a
    work list, each once (their identity is kept, cycles through refs end). Both walks are
    iterative: a 100 000-element list or a 10 000-deep nested tuple converts without deep
    recursion."""
    work: list[Any] = []
    seen: set[int] = set()

    def scalar(v: Any) -> Any:
        """A value that is not a tuple: queued (ADT value, ref) or converted (a leaf)."""
        kind = type(v)
        if kind is ConstructorValue or kind is RefValue:
            if id(v) not in seen:
                seen.add(id(v))
                work.append(v)
            return v
        return leaf(v)

    def conv(v: Any) -> Any:
        if type(v) is not tuple:
            return scalar(v)
        # invariant: each frame is a tuple and the converted prefix of its fields
        frames: list[tuple[tuple[Any, ...], list[Any]]] = [(v, [])]
        while True:
            fields, done = frames[-1]
            if len(done) < len(fields):
                x = fields[len(done)]
                if type(x) is tuple:
                    frames.append((x, []))
                else:
                    done.append(scalar(x))
                continue
            frames.pop()
            built = tuple(done)
            if not frames:
                return built
            frames[-1][1].append(built)

    out = conv(value)
    while work:
        cell = work.pop()
        if type(cell) is ConstructorValue:
            cell.fields = tuple([conv(f) for f in cell.fields])
        else:
            cell.value = conv(cell.value)
    return out
