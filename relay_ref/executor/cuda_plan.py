"""The CUDA target of ``rr.compile``: plans of fused groups on the device, and the device
side of the executable (DESIGN.md section 2; issue: numba.cuda GPU path).

The pipeline is the CPU target's (the same passes, FuseOps groups, strategies and generated
Python, ``relay_ref.executor.groups`` / ``codegen``); ``CudaGroupPlanner`` only chooses
different step functions:

* an elementwise group of static type (any size: on a GPU a launch, not a compile, is the
  cost to avoid) runs as one generated CUDA kernel (``cuda_fused``); an anchor with an
  elementwise tail runs the anchor's CUDA kernel and the tail's generated kernel, written
  over the anchor's fresh result;
* an operator call runs its ``kernels["cuda"]`` when that kernel ``supports`` the call's
  checked types (a ``DeviceStep``); an elementwise / broadcast call outside a fused kernel
  (a group planned op by op) runs a generated one-op kernel (an ``ElementwiseStep``); any
  other call runs on the host through its CPU kernel or reference (a
  ``HostStep``: its tensor arguments copied to the host, its tensor result back to the
  device; these copies are counted in ``exe.plan``).

Residency invariants: a tensor of rank >= 1 that compiled code holds is a device array
(arguments are copied in once per call, weights once at compile time, every step returns
device arrays); 0-d tensors stay NumPy values on the host (codegen's Scalars invariant:
``if`` conditions and scalar arithmetic read them in Python), so a device step with a 0-d
result copies it back. Values leave through the converter (``values.py``), which copies
device arrays to the host: results never alias device memory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from relay_ref.diagnostics import RelayError
from relay_ref.executor.groups import GroupPlanner, Step
from relay_ref.ir.expr import Call, Constant, Expr, Var
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.registry import OpPattern, get_op, op_kernel

__all__ = ["CudaGroupPlanner", "DeviceRuntime", "DeviceStep", "ElementwiseStep", "HostStep",
           "cuda_available",
           "device_plan", "host_copies", "launches", "move_constants", "require_device",
           "tensor_fields"]


def cuda_available() -> bool:
    """Whether ``target="cuda"`` can run here (a GPU, or numba's CUDA simulator)."""
    from relay_ref.compute.cuda import device_status

    return device_status()[0]


def require_device() -> str:
    """The device's description, or ``RelayError("no CUDA device: <why>")``."""
    from relay_ref.compute.cuda import device_status

    ok, what = device_status()
    if not ok:
        raise RelayError(f"no CUDA device: {what}")
    return what


def _static(ty: Type | None) -> bool:
    return type(ty) is TensorType and all(type(d) is int for d in ty.shape)


def _to_host(value: Any) -> Any:
    """``value`` with every device array in it (tuples included) copied to the host."""
    from relay_ref.compute.cuda import is_device_array, to_host

    if type(value) is tuple:
        return tuple(_to_host(v) for v in value)
    return to_host(value) if is_device_array(value) else value


class DeviceStep:
    """An operator call on the device: ``step(args, attrs, out=None)``; host arguments are
    copied in, ``out`` (a device array) is used when given, a 0-d result goes back to the
    host."""

    def __init__(self, kernel: Callable[..., Any], out_type: TensorType, name: str) -> None:
        self.kernel = kernel
        self.name = name
        self.shape = tuple(int(d) for d in out_type.shape)
        self.dtype = np.dtype(out_type.dtype)
        self.view = bool(getattr(kernel, "returns_view", False))
        self.launches = int(getattr(kernel, "launches", 1))
        self.returns_view = self.view

    def __call__(self, args: list[Any], attrs: object, out: Any = None) -> Any:
        from relay_ref.compute.cuda import device_array, is_device_array, to_device, to_host

        if self.view:
            return args[0].reshape(self.shape)  # host or device: a view either way
        args = [a if is_device_array(a) else to_device(np.asarray(a)) for a in args]
        if out is None or not is_device_array(out):
            out = device_array(self.shape, self.dtype)
        result = self.kernel(args, attrs, out)
        return to_host(result) if not self.shape else result


def _to_device(value: Any) -> Any:
    """``value`` with every host tensor of rank >= 1 in it (tuples included) copied to the
    device."""
    from relay_ref.compute.cuda import to_device

    if type(value) is tuple:
        return tuple(_to_device(v) for v in value)
    return to_device(value) if type(value) is np.ndarray and value.ndim else value


def tensor_fields(ty: Type | None) -> int:
    """Tensors of rank >= 1 in a value of type ``ty`` (tuple fields counted, recursively):
    the copies moving it between host and device (0-d tensors live on the host)."""
    if type(ty) is TupleType:
        return sum(tensor_fields(f) for f in ty.fields)
    if type(ty) is TensorType:
        return 0 if len(ty.shape) == 0 else 1
    return 1  # not known statically: count one


class HostStep:
    """An operator call on the host (no CUDA kernel for it): device arguments copied to the
    host, the CPU kernel or reference run, the result's tensors of rank >= 1 copied back
    (tuple results field by field). ``copies``: the copies one call makes, from the call's
    checked types."""

    launches = 0
    returns_view = False

    def __init__(self, fn: Callable[..., Any], name: str, copies: int = 0) -> None:
        self.fn = fn
        self.name = name
        self.copies = copies

    def __call__(self, args: list[Any], attrs: object, out: Any = None) -> Any:
        return _to_device(self.fn([_to_host(a) for a in args], attrs))


class ElementwiseStep:
    """One elementwise call as a generated CUDA kernel: ``step(args, attrs, out=None)``
    (``params``: the positions of the call's non-constant arguments, the kernel's inputs;
    single-value constants are literals in its source)."""

    launches = 1
    returns_view = False
    view = False

    def __init__(self, kernel: Any, params: tuple[int, ...], name: str) -> None:
        self.kernel = kernel
        self.params = params
        self.name = name

    def __call__(self, args: list[Any], attrs: object, out: Any = None) -> Any:
        return self.kernel([args[i] for i in self.params], out)


class CudaGroupPlanner(GroupPlanner):
    """``GroupPlanner`` with the CUDA choices (see the module docstring)."""

    FUSED_KIND = "cuda fused"
    LAYOUT_COPY = False  # layout chains run op by op (their steps are device steps)

    def __init__(self, types: Mapping[Expr, Type], *, cache_dir: str | None = None) -> None:
        super().__init__(types, fuse=True, cache_dir=cache_dir)
        self.steps: dict[Call, DeviceStep | HostStep] = {}

    def single_op(self, call: Call) -> Callable[..., Any]:
        fn = self._op_fn(call)
        attrs = call.attrs if call.attrs is not None else get_op(call.op.name).attrs()

        def run(*args: Any) -> Any:
            return fn([np.asarray(a) if isinstance(a, np.generic) else a for a in args], attrs)

        return run

    def _op_fn(self, call: Call) -> DeviceStep | ElementwiseStep | HostStep:
        known = self.steps.get(call)
        if known is not None:
            return known
        name = call.op.name
        attrs = call.attrs if call.attrs is not None else get_op(name).attrs()
        kernel = op_kernel(name, "cuda")
        arg_types = [self.types.get(a) for a in call.args]
        out_type = self.types.get(call)
        step: DeviceStep | ElementwiseStep | HostStep | None = None
        supports = getattr(kernel, "supports", None)  # a user's kernel may not say
        if supports is not None and _static(out_type) and all(_static(t) for t in arg_types) \
                and supports(arg_types, attrs, out_type):
            step = DeviceStep(kernel, out_type, name)  # type: ignore[arg-type]
        elif get_op(name).op_pattern <= OpPattern.BROADCAST and self._worth_fusing(out_type):
            step = self._one_op_kernel(call)
        if step is None:
            copies = sum(tensor_fields(t) for t in arg_types) + tensor_fields(out_type)
            step = HostStep(op_kernel(name, "cpu") or get_op(name).reference, name, copies)
        self.steps[call] = step
        return step

    def _one_op_kernel(self, call: Call) -> ElementwiseStep | None:
        """A generated kernel of ``call`` alone (its constant arguments inlined)."""
        params: list[Var] = []
        positions: list[int] = []
        args: list[Expr] = []
        types: dict[Expr, Type] = {}
        for i, a in enumerate(call.args):
            if type(a) is Constant and a.data.size == 1:
                args.append(a)
                continue
            ty = self.types.get(a)
            if not _static(ty):
                return None
            p = Var(f"p{i}", ty)
            types[p] = ty  # type: ignore[assignment]
            params.append(p)
            positions.append(i)
            args.append(p)
        body = Call(call.op, tuple(args), call.attrs, call.type_args, call.span)
        types[body] = self.types[call]
        kernel = self._tail_kernel(tuple(params), body, types)
        return None if kernel is None else ElementwiseStep(kernel, tuple(positions),
                                                           call.op.name)

    def _kernel_kind(self, call: Call) -> str:
        step = self._op_fn(call)
        if isinstance(step, DeviceStep | ElementwiseStep):
            return "cuda view" if step.view else f"cuda {call.op.name.split('.')[-1]}"
        return "host cpu kernel" if op_kernel(call.op.name, "cpu") is not None else \
            "host reference"

    def _worth_fusing(self, ty: Type | None) -> bool:
        return _static(ty) and bool(ty.shape) and 0 not in ty.shape  # type: ignore[union-attr]

    def _elementwise(self, params: tuple[Var, ...], body: Expr) -> Any:
        if not self._worth_fusing(self.types.get(body)):
            return None
        return self._tail_kernel(params, body, self.types)

    def _tail_kernel(self, params: tuple[Var, ...], body: Expr,
                     types: Mapping[Expr, Type]) -> Any:
        from relay_ref.executor.cuda_fused import build_cuda_elementwise

        return build_cuda_elementwise(params, body, types, cache_dir=self.cache_dir)

    def _may_overwrite(self, kernel: Any, anchor: Call, step: Step) -> bool:
        """The tail may write over the anchor's result when the anchor's device step
        returns a fresh array and the tail's input 0 allows it (``inplace_ok``, as on the
        CPU)."""
        fn = step.fn
        return isinstance(fn, DeviceStep | ElementwiseStep) and not fn.view and \
            0 in getattr(kernel, "inplace_ok", frozenset())


def host_copies(plan: Any) -> int:
    """Host<->device copies one run of a group's plan makes: per host step, one per tensor
    of rank >= 1 in its arguments and in its result (tuple fields counted)."""
    copies = 0
    for step in plan.steps:
        if step.kind == "op" and isinstance(step.fn, HostStep):
            copies += step.fn.copies
    return copies


def launches(plan: Any) -> int:
    """Kernel launches of one run of a group's plan."""
    n = 0
    for step in plan.steps:
        if step.kind in ("op", "fused"):
            n += int(getattr(step.fn, "launches", 0))
    return n


class DeviceRuntime:
    """The device side of an executable: arguments in, results out (see the module
    docstring), and the transfer counters."""

    def __init__(self, description: str) -> None:
        self.description = description

    def arguments(self, values: list[Any]) -> list[Any]:
        """Tensor arguments of rank >= 1 copied to the device (once per call)."""
        from relay_ref.compute.cuda import to_device

        return [to_device(v) if type(v) is np.ndarray and v.ndim else v for v in values]

    @staticmethod
    def is_device(value: Any) -> bool:
        from relay_ref.compute.cuda import is_device_array

        return is_device_array(value)

    @staticmethod
    def to_host(value: Any) -> np.ndarray:
        from relay_ref.compute.cuda import to_host

        return to_host(value)

    @staticmethod
    def transfers() -> tuple[int, int, int, int]:
        """(host-to-device copies, device-to-host copies, their bytes) so far, process-wide."""
        from relay_ref.compute.cuda import TRANSFERS

        return TRANSFERS.snapshot()


def move_constants(namespace: dict[str, Any]) -> int:
    """Replace every tensor constant of rank >= 1 in generated code's namespace by a device
    copy (the weights, copied once); returns the bytes copied."""
    from relay_ref.compute.cuda import to_device

    moved = 0
    for key, value in list(namespace.items()):
        if type(value) is np.ndarray and value.ndim and value.size:
            namespace[key] = to_device(value)
            moved += value.nbytes
    return moved


def device_plan(plan: Any, generated: Any, description: str, weight_bytes: int) -> Any:
    """``plan`` (the CPU summary of the groups) with the device's launches and copies."""
    counts: dict[int, tuple[Any, int]] = {}
    for gp in generated.groups:
        prev = counts.get(id(gp))
        counts[id(gp)] = (gp, (prev[1] if prev else 0) + 1)
    n_launch = sum(launches(gp) * n for gp, n in counts.values())
    n_copies = sum(host_copies(gp) * n for gp, n in counts.values())
    host_ops = sorted({s.fn.name for gp, _ in counts.values() for s in gp.steps
                       if s.kind == "op" and isinstance(s.fn, HostStep)})
    notes = (f"device: {description}; {n_launch} kernel launches per call of the groups; "
             f"weights on the device: {weight_bytes / 1e6:.2f} MB, copied once",
             f"host steps (no CUDA kernel): {', '.join(host_ops) or 'none'}; "
             f"{n_copies} host<->device copies per call for them, plus one per tensor "
             "input and output")
    return dataclasses.replace(plan, notes=(*plan.notes, *notes), device_launches=n_launch,
                               host_copies=n_copies, host_ops=tuple(host_ops))

