"""``partition(mod, targets, params=None)``: TVM's BYOC partitioning flow (spec/byoc.md
BYOC-Composite, BYOC-Annotate, BYOC-Merge, BYOC-Partition).

Runs, through the pass manager (``relay_ref.passes.manager.Pipeline``: type-checked after
each pass that changed the module, a failing pass named): ``BindParams`` (when ``params``:
weights become constants, so constants used only inside a region are bound into it),
``ToGraphNormalForm``, ``MergeComposite(targets)``, ``AnnotateTarget(targets)``,
``MergeCompilerRegions``, ``PartitionGraph``. The result computes what ``mod`` computes
(each pass refines its input); each region is a global function with ``Compiler=<target>``.

``targets`` names registered backends (built-in ones, ``"ort"`` and ``"xla"``, are loaded on
first use); an unknown name is ``UnknownCompiler`` with a did-you-mean, before any pass runs.

Priority: composites are formed first (MergeComposite), trying the targets' pattern tables
in ``targets`` order, and a composite goes to the backend owning it among ``targets``
(``composite_owner``); each remaining operator goes to the first target supporting it
(AnnotateTarget). So a composite of a later target can take operators an earlier target
also supports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from relay_ref.byoc.backend import ensure_backends
from relay_ref.ir.module import IRModule
from relay_ref.passes.manager import Pipeline
from relay_ref.passes.registry import get_pass

__all__ = ["partition", "partition_passes"]


def partition_passes(targets: Iterable[str], params: Mapping[str, Any] | None = None,
                     entry: str = "main") -> list[Any]:
    """The configured passes ``partition`` runs (see the module docstring)."""
    names = _targets(targets)
    ensure_backends(names)
    passes: list[Any] = []
    if params:
        from relay_ref.passes.bind_params import BindParams

        passes.append(BindParams(dict(params), entry, label="partition: params"))
    passes += [get_pass("ToGraphNormalForm"),
               get_pass("MergeComposite", targets=names),
               get_pass("AnnotateTarget", targets=names),
               get_pass("MergeCompilerRegions"),
               get_pass("PartitionGraph")]
    return passes


def partition(mod: IRModule, targets: Iterable[str] | str,
              params: Mapping[str, Any] | None = None, *, entry: str = "main") -> IRModule:
    """``mod`` partitioned for ``targets`` (see the module docstring); type-checked."""
    if not isinstance(mod, IRModule):
        raise TypeError(f"partition: mod must be an IRModule, not {type(mod).__name__}")
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"partition: params must be a dict of parameter name to array, not "
                        f"{type(params).__name__}")
    return Pipeline(partition_passes(targets, params, entry), label="partition")(mod)


def _targets(targets: Iterable[str] | str) -> tuple[str, ...]:
    """``targets`` as a tuple of names (one name alone allowed); not empty."""
    if isinstance(targets, str):
        targets = (targets,)
    if isinstance(targets, Mapping | set | frozenset):  # unordered, or keys by accident
        raise TypeError(f"partition: targets must be a list of backend names, in priority "
                        f"order, not a {type(targets).__name__}")
    try:
        names = tuple(targets)
    except TypeError:
        raise TypeError(f"partition: targets must be backend names, not "
                        f"{type(targets).__name__}") from None
    bad = [t for t in names if not isinstance(t, str)]
    if bad:
        name = getattr(bad[0], "name", None)  # a Backend: its name is what to pass
        hint = f" (pass its name, {name!r})" if isinstance(name, str) else ""
        raise TypeError(f"partition: a target must be a backend name (str), not "
                        f"{type(bad[0]).__name__}{hint}")
    if not names:
        raise ValueError("partition: give at least one target backend")
    return names
