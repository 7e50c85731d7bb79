"""The target registry: what ``rr.compile(target=...)`` may name, each registered once.

A ``Target`` says how a compilation for it differs from the plain CPU one, as data and
callables, so ``compile.py`` has no per-target branch:

* ``planner(types, cache_dir)``: the ``GroupPlanner`` choosing each fused group's kernels
  (``relay_ref.executor.groups``; CUDA's plans device kernels and host steps);
* ``prepare()``: run first, before any work; returns the target's device object (None for
  the host), or raises ``RelayError`` when the target cannot run here (``no CUDA device``).
  A device object has ``arguments(values) -> values`` (the executable passes each call's
  argument values through it: copies to the device) and ``description``;
* ``host_memory``: whether the host memory plan (``relay_ref.executor.memory``) applies;
* ``finish(plan, generated, device)``: after ``exec``, adjusts the generated namespace
  (weights moved to the device) and returns the ``Plan`` to show.

A new backend (a BYOC codegen) calls ``register_target(Target("name", planner, ...))`` at
import (a malformed one is a ``TypeError`` there; a planner returning no planner is a
``RelayError`` naming the target when ``rr.compile`` uses it: ``make_planner``);
``target_names()`` lists the registered names; ``get_target(name)`` raises
``UnknownTarget`` (a ``RelayError`` and a ``ValueError``) naming the known ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from relay_ref.diagnostics import RelayError
from relay_ref.executor.groups import GroupPlanner

__all__ = ["Target", "UnknownTarget", "get_target", "make_planner", "register_target",
           "target_names"]


class UnknownTarget(RelayError, ValueError):
    """A target name no ``register_target`` call registered."""


@dataclass(frozen=True, slots=True)
class Target:
    """One compilation target (see the module docstring)."""

    name: str
    planner: Callable[[dict[Any, Any], str | None], GroupPlanner]
    prepare: Callable[[], Any] | None = None
    host_memory: bool = True
    finish: Callable[[Any, Any, Any], Any] | None = None
    description: str = ""


_TARGETS: dict[str, Target] = {}


def register_target(target: Target, *, replace: bool = False) -> Target:
    """Register ``target`` under its name; registering a taken name again is a
    ``ValueError`` unless ``replace``. A malformed target (a name that is not a non-empty
    str, a planner that is not callable, ``prepare`` / ``finish`` neither callable nor
    None, ``host_memory`` not a bool) is a ``TypeError``."""
    if not isinstance(target, Target):
        raise TypeError(f"register_target takes a Target, not {type(target).__name__}")
    name = target.name
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_target: a target's name must be a non-empty str, not "
                        f"{name!r}")
    if not callable(target.planner):
        raise TypeError(f"register_target: target {name!r}: planner must be callable, not "
                        f"{type(target.planner).__name__}")
    for field in ("prepare", "finish"):
        value = getattr(target, field)
        if value is not None and not callable(value):
            raise TypeError(f"register_target: target {name!r}: {field} must be callable "
                            f"or None, not {type(value).__name__}")
    if not isinstance(target.host_memory, bool):
        raise TypeError(f"register_target: target {name!r}: host_memory must be a bool, not "
                        f"{target.host_memory!r}")
    if target.name in _TARGETS and not replace:
        raise ValueError(f"target {target.name!r} is already registered")
    _TARGETS[target.name] = target
    return target


def unregister_target(name: str) -> None:
    """Remove a registered target (tests registering a toy one)."""
    _TARGETS.pop(name, None)


def target_names() -> tuple[str, ...]:
    """The registered targets' names, in registration order."""
    return tuple(_TARGETS)


def get_target(name: str) -> Target:
    """The target registered as ``name``; ``UnknownTarget`` listing the known ones."""
    target = _TARGETS.get(name)
    if target is None:
        raise UnknownTarget(f"compile: unknown target {name!r} (targets: "
                            f"{', '.join(_TARGETS)})")
    return target


def make_planner(target: Target, types: Mapping[Any, Any], cache_dir: str | None) -> Any:
    """``target.planner(types, cache_dir)``, checked: a ``RelayError`` naming the target
    when it returns something that is not a planner (an object with callable ``plan``
    and ``single_op``, as ``GroupPlanner``)."""
    planner = target.planner(types, cache_dir)  # type: ignore[arg-type]
    if not all(callable(getattr(planner, m, None)) for m in ("plan", "single_op")):
        raise RelayError(f"compile: target {target.name!r}: its planner returned "
                         f"{'None' if planner is None else type(planner).__name__}, not a "
                         "group planner (an object with plan and single_op methods, as "
                         "relay_ref.executor.groups.GroupPlanner)")
    return planner


def _cpu_planner(types: dict[Any, Any], cache_dir: str | None) -> GroupPlanner:
    return GroupPlanner(types, cache_dir=cache_dir)


def _cuda_planner(types: dict[Any, Any], cache_dir: str | None) -> GroupPlanner:
    from relay_ref.executor import cuda_plan

    return cuda_plan.CudaGroupPlanner(types, cache_dir=cache_dir)


def _cuda_prepare() -> Any:
    from relay_ref.executor import cuda_plan

    return cuda_plan.DeviceRuntime(cuda_plan.require_device())


def _cuda_finish(plan: Any, generated: Any, device: Any) -> Any:
    from relay_ref.executor import cuda_plan

    moved = cuda_plan.move_constants(generated.namespace)
    return cuda_plan.device_plan(plan, generated, device.description, moved)


register_target(Target("cpu", _cpu_planner, description="host CPU: numba and NumPy kernels"))
register_target(Target("cuda", _cuda_planner, prepare=_cuda_prepare, host_memory=False,
                       finish=_cuda_finish, description="one CUDA device (numba.cuda)"))
