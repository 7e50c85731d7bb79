"""``rr.compile``: a module -> an ``Executable`` (DESIGN.md sections 2 and 6).

The pipeline, each step done once at compile time:

1. type-check the module (T-Module; cached on it, as ``rr.evaluate`` does);
2. bind ``params`` (weights): each named ``@main`` parameter becomes a constant, checked
   against the parameter's type by the argument rule (spec/semantics.md 4.1);
3. the inference pipeline of the passes issue, not a copy of it: ``SimplifyInference``
   (batch_norm and friends to arithmetic), ``FoldConstant`` (constant subgraphs evaluated
   now, the bound weights included), ``FoldScaleAxis`` (a batch norm's scale folded into the
   preceding conv2d / dense weights), ``FoldConstant``, ``DeadCodeElimination``, then
   ``FuseOps``, whose ``Primitive`` groups are the units the planner runs as kernels;
4. plan each fused group (``groups.GroupPlanner``) and generate Python for the whole module
   (``codegen.generate``), ``exec`` it once.

A pass that fails or leaves an ill-typed module is an internal error naming the pass (never
a silently different program).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import ERROR, Diagnostic, RelayError, RelayTypeError
from relay_ref.executor.codegen import generate
from relay_ref.executor.executable import Executable
from relay_ref.executor.groups import GroupPlanner
from relay_ref.executor.memory import MemoryPlan, plan_memory
from relay_ref.executor.plan import GroupSummary, Plan
from relay_ref.interpreter.args import ArgumentError, convert_argument
from relay_ref.interpreter.eval import checked_module, param_types
from relay_ref.ir.expr import Call, Constant, Function, GlobalVar, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import post_order

__all__ = ["DEFAULT_PASSES", "TARGETS", "compile_module"]

#: The passes run before planning, in order (see the module docstring).
DEFAULT_PASSES: tuple[str, ...] = ("SimplifyInference", "FoldConstant", "FoldScaleAxis",
                                   "FoldConstant", "DeadCodeElimination", "FuseOps")
TARGETS = ("cpu",)


def compile_module(mod: IRModule, params: Mapping[str, Any] | None = None,
                   target: str = "cpu", *, entry: str = "main", profile: bool = False,
                   passes: Sequence[str] | None = None,
                   cache_dir: str | None = None, reuse_buffers: bool = True) -> Executable:
    """Compile ``mod`` for ``target``; see ``rr.compile``."""
    start = time.perf_counter()
    if not isinstance(mod, IRModule):
        raise TypeError(f"compile: mod must be an IRModule, not {type(mod).__name__}")
    if not isinstance(target, str):
        raise TypeError(f"compile: target must be a str, not {type(target).__name__}")
    if target not in TARGETS:
        raise RelayError(f"compile: unknown target {target!r} (targets: "
                         f"{', '.join(TARGETS)})")
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"compile: params must be a dict of parameter name to array, not "
                        f"{type(params).__name__}")
    if not isinstance(entry, str):
        raise TypeError(f"compile: entry must be a str, not {type(entry).__name__}")
    if entry not in mod.functions:
        raise RelayError(f"compile: the module has no function @{entry}")
    checked = checked_module(mod)
    work = _bind_params(checked, entry, dict(params or {}))
    names = tuple(DEFAULT_PASSES if passes is None else passes)
    work = _run_passes(work, names)
    planner = GroupPlanner(work.checked_types, cache_dir=cache_dir)
    memory = plan_memory(work.functions[entry], planner, work.checked_types) \
        if reuse_buffers else MemoryPlan()

    def build() -> Any:
        return generate(work, planner, profile=profile, views=memory.views)

    generated = run_deep(build, name="relay-compile")
    code = compile(generated.source, generated.filename, "exec")
    exec(code, generated.namespace)  # noqa: S102 - our own generated source
    plan = _plan(work, entry, target, names, generated, memory,
                 time.perf_counter() - start)
    return Executable(generated, work, checked, entry, plan,
                      deep=_may_recurse(work, entry),
                      profile=profile, memory=memory)


def _bind_params(mod: IRModule, entry: str, params: dict[str, Any]) -> IRModule:
    """``@entry`` with the parameters named in ``params`` replaced by constants."""
    if not params:
        return mod
    func = mod.functions[entry]
    by_name = {p.name_hint: p for p in func.params}
    for key in params:
        if not isinstance(key, str) or key not in by_name:
            raise RelayError(f"compile: params names no parameter of @{entry}: {key!r} (its "
                             f"parameters: {', '.join('%' + n for n in by_name) or 'none'})",
                             func.span)
    types = dict(zip(func.params, param_types(mod, entry, func), strict=True))
    consts: dict[Var, Constant] = {}
    for key, value in params.items():
        var = by_name[key]
        try:
            array = convert_argument(value, types[var], mod)
        except ArgumentError as err:
            raise RelayError(f"compile: params[{key!r}] does not fit %{key}: {err.message}",
                             var.span) from None
        if type(array) is not np.ndarray:
            raise RelayError(f"compile: params[{key!r}]: only tensor parameters can be bound",
                             var.span)
        array = np.array(array, copy=True)  # the caller may reuse its buffer
        array.flags.writeable = False
        consts[var] = Constant(array, var.span)
    from relay_ref.passes.rewrite import rewrite

    body = rewrite(func.body, lambda e: consts.get(e) if type(e) is Var else None)
    new = Function(tuple(p for p in func.params if p not in consts), body, func.ret_type,
                   func.type_params, func.attrs, func.span)
    from relay_ref.typecheck.infer import infer_types

    return infer_types(mod.with_function(entry, new))


def _run_passes(mod: IRModule, names: tuple[str, ...]) -> IRModule:
    from relay_ref.passes import get_pass
    from relay_ref.typecheck.infer import infer_types

    for name in names:
        try:
            out = get_pass(name)(mod)
            mod = infer_types(out)
        except RelayTypeError as err:
            head = Diagnostic(ERROR, f"internal error: the output of pass {name} does not "
                              "type-check; this is a bug in relay_ref")
            raise RelayError([head, *err.diagnostics]) from None
        except RelayError:
            raise
        except RecursionError:
            raise RelayError(f"internal error: pass {name} recursed too deeply") from None
    return mod


def _may_recurse(mod: IRModule, entry: str) -> bool:
    """Whether running ``@entry`` may nest calls deeply: it calls a global or a closure
    (directly or through what it calls), so it needs the big-stack thread."""
    for node in post_order(mod.functions[entry]):
        if type(node) is Call:
            callee = node.op
            if type(callee) is GlobalVar or type(callee) is Var:
                return True
            if type(callee) is Function and callee.attr("Primitive") is None:
                return True
        elif type(node) is GlobalVar:
            return True
    return False


def _plan(mod: IRModule, entry: str, target: str, passes: tuple[str, ...], generated: Any,
          memory: MemoryPlan, seconds: float) -> Plan:
    counts: Counter = Counter()
    first: dict[int, Any] = {}
    for plan in generated.groups:
        counts[id(plan)] += 1
        first.setdefault(id(plan), plan)
    merged: Counter = Counter()
    info: dict[tuple, Any] = {}
    for key, n in counts.items():
        p = first[key]
        k = (p.label, p.strategy, p.kernels)
        merged[k] += n
        info[k] = p
    groups = tuple(GroupSummary(label, strategy, kernels, n)
                   for (label, strategy, kernels), n in merged.items())
    views = {id(v) for v in memory.views.values()}
    consts = [v for v in generated.namespace.values()
              if type(v) is np.ndarray and id(v) not in views]
    return Plan(entry, target, passes, len(generated.functions), groups, len(consts),
                sum(c.nbytes for c in consts), buffers=len(memory.buffers),
                peak_bytes=memory.peak_bytes, planned_values=len(memory.views),
                compile_seconds=seconds)
