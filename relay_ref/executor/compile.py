"""``rr.compile``: a module -> an ``Executable`` (DESIGN.md sections 2 and 6).

The pipeline, each step done once at compile time:

1. type-check the module (T-Module; cached on it, as ``rr.evaluate`` does); if ``rr.compile``
   expanded ``gradient(f)`` calls in it (spec/ad.md AD-Grad-Op), ``PartialEvaluate`` +
   ``DeadCodeElimination`` simplify the expansion first (``GRADIENT_PASSES``, guarded: see
   ``_simplify_gradients``), then the globals the expansion made that nothing reaches any
   more are dropped;
2. bind ``params`` (weights, the ``BindParams`` pass): each named ``@main`` parameter becomes a
   constant, checked against the parameter's type by the argument rule (spec/semantics.md
   4.1); the other functions that refer to ``@main`` keep calling the original, with all
   its parameters;
3. the inference pipeline of the passes issue, not a copy of it: ``DataflowToGraph`` (the
   ``let`` bindings of dataflow blocks become graph sharing, T-Dataflow: a block then fuses
   as the graph form does), ``SimplifyInference``
   (batch_norm and friends to arithmetic), ``FoldConstant`` (constant subgraphs evaluated
   now, the bound weights included), ``FoldScaleAxis`` (a batch norm's scale folded into the
   preceding conv2d / dense weights), ``FoldConstant``, ``DeadCodeElimination``, then
   ``FuseOps``, whose ``Primitive`` groups are the units the planner runs as kernels
   (``DEFAULT_PASSES``, a declared pipeline; steps 1 to 3 run through the pass manager,
   ``relay_ref.passes.manager.Pipeline``, as ``rr.optimize`` runs passes);
4. plan each fused group (``groups.GroupPlanner``) and generate Python for the whole module
   (``codegen.generate``), ``exec`` it once. ``max_depth`` (default the interpreter's
   ``MAX_DEPTH``) is fixed here: the generated code bounds the nesting of calls by it
   (Stuck-Depth; ``codegen``'s Depth).

The target (``relay_ref.executor.targets``: a registry, ``register_target``) changes only
step 4's choices, as data: its planner, whether the host memory plan applies, what is done
after ``exec``. Target ``cuda`` (``relay_ref.executor.cuda_plan``): the groups are planned
by ``CudaGroupPlanner`` (CUDA kernels, host steps where none applies), the weights in the
generated code's namespace are copied to the device once, and there is no host memory plan
(device arrays are allocated per step). Without a usable device it raises
``RelayError("no CUDA device: ...")`` before doing anything else.

Every kernel step of the generated code runs through the executable's runtime
(``relay_ref.executor.runtime``): the allocation policy is the static memory plan when
the entry has planned values, else fresh allocation; ``profile=True`` layers timing on it.
With ``memory_budget`` (DTR, spec/dtr.md) the runtime is ``relay_ref.dtr.runtime``'s
``DTRRuntime`` instead, and there is no memory plan (the engine owns the memory; purity,
spec/dtr.md 6): the DTR arguments are checked before anything else
(``relay_ref.dtr.options``), the code generator's ``released`` and ``overwritten`` sites
become the runtime's handles, and ``exe.dtr_stats`` is each call's statistics.

Regions (spec/byoc.md BYOC-Extern, BYOC-Fallback): after step 2, each ``Compiler=<backend>``
global is handed to its backend's codegen (``externs``) once, constant arguments of a
region called once bound into it first; a codegen that refuses (or raises) leaves the
region to the host with a note in ``exe.plan.regions``; FuseOps leaves regions alone and
the generated code calls each built callable through the runtime (``relay_ref.executor.
externs``). DTR cannot budget a backend's memory: a memory budget with built regions is a
``RelayError``.

A pass that fails or leaves an ill-typed module is an internal error naming the pass
(``PassError``; never a silently different program).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import RelayError
from relay_ref.executor.codegen import generate
from relay_ref.executor.executable import Executable
from relay_ref.executor.externs import Extern, RegionSummary, prepare_externs
from relay_ref.executor.memory import MemoryPlan, plan_memory
from relay_ref.executor.plan import GroupSummary, Plan
from relay_ref.executor.runtime import Runtime, StaticPlanRuntime, SymbolicPlanRuntime
from relay_ref.executor.targets import get_target, make_planner
from relay_ref.executor.threads import resolve as resolve_threads
from relay_ref.interpreter.driver import MAX_DEPTH, checked_module
from relay_ref.ir.expr import Call, Function, GlobalVar, Let, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import post_order
from relay_ref.passes.base import ModulePass
from relay_ref.passes.bind_params import check_entry
from relay_ref.passes.manager import Pipeline

__all__ = ["DEFAULT_PASSES", "GRADIENT_PASSES", "PassesArg", "compile_module"]

#: What ``passes`` may be: pass specs (``"FuseOps(max_depth=8)"``) and configured pass
#: objects in a list, or one comma-separated string of specs; None: ``DEFAULT_PASSES``
PassesArg = str | Iterable[str | ModulePass] | None

#: The passes run before planning, in order (see the module docstring).
DEFAULT_PASSES: tuple[str, ...] = ("DataflowToGraph", "SimplifyInference", "FoldConstant",
                                   "FoldScaleAxis", "FoldConstant", "DeadCodeElimination",
                                   "FuseOps")
#: Run first on a module whose ``gradient(f)`` calls were expanded (see the module docstring):
#: the higher-order AD output of first-order code becomes straight-line dataflow
#: (spec/partial_eval.md), without the expansion's reference cells, backpropagator closures
#: and per-operator ``zeros_like`` / ``add`` adjoints.
GRADIENT_PASSES: tuple[str, ...] = ("PartialEvaluate", "DeadCodeElimination")


def compile_module(mod: IRModule, params: Mapping[str, Any] | None = None,
                   target: str = "cpu", *, entry: str = "main", profile: bool = False,
                   passes: PassesArg = None,
                   cache_dir: str | None = None, reuse_buffers: bool = True,
                   gradient_globals: Collection[str] | None = None,
                   max_depth: int | None = None, memory_budget: object = None,
                   heuristic: object = "dtr_eq", dealloc: object = "eager",
                   cost: object = "flops", dtr_log: object = None,
                   externs: Mapping[str, Any] | None = None,
                   shape_bounds: Mapping[str, int] | None = None,
                   threads: Any = None, threads_source: str | None = None) -> Executable:
    """Compile ``mod`` for ``target``; see ``rr.compile``. ``gradient_globals``: ``mod`` is
    the expansion of a program's ``gradient(f)`` calls, which added these globals (None: it
    had none); it is simplified first (``GRADIENT_PASSES``). ``memory_budget`` and the
    arguments after it: DTR (``relay_ref.dtr.options``; checked before anything else).
    ``externs``: backend name -> codegen (or None: its regions run on the host), for the
    module's ``Compiler`` globals (``relay_ref.executor.externs``, BYOC-Extern).
    ``threads``: the thread policy's count (``relay_ref.executor.threads.resolve``; a bad
    one is a ``RelayError`` before anything is compiled), ``threads_source`` where it came
    from (errors and the plan; default ``compile(threads=...)``)."""
    from relay_ref.dtr.options import dtr_options

    start = time.perf_counter()
    dtr_opts = dtr_options(memory_budget, heuristic, dealloc, cost, dtr_log)
    thread_policy = resolve_threads(threads, threads_source)
    if not isinstance(mod, IRModule):
        raise TypeError(f"compile: mod must be an IRModule, not {type(mod).__name__}")
    if not isinstance(target, str):
        raise TypeError(f"compile: target must be a str, not {type(target).__name__}")
    target_def = get_target(target)
    if dtr_opts is not None and target != "cpu":
        raise RelayError(f"compile: memory_budget (DTR) runs on target cpu only, not "
                         f"{target!r}")
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"compile: params must be a dict of parameter name to array, not "
                        f"{type(params).__name__}")
    if not isinstance(entry, str):
        raise TypeError(f"compile: entry must be a str, not {type(entry).__name__}")
    if max_depth is not None and (type(max_depth) is not int or max_depth < 1):
        raise TypeError(f"compile: max_depth must be a positive int, not {max_depth!r}")
    depth = MAX_DEPTH if max_depth is None else max_depth
    entry = check_entry(mod, entry, "compile")  # "@main" and "main" name the same global
    device = target_def.prepare() if target_def.prepare is not None else None
    pipeline = _pipeline(passes)
    checked = checked_module(mod)
    work, first, notes = checked, (), ()
    if gradient_globals is not None:
        work, first, notes = _simplify_gradients(checked, set(gradient_globals))
    work, built, regions = _run_passes(work, entry, params, pipeline, externs)
    if built and dtr_opts is not None:
        raise RelayError("compile: memory_budget (DTR) cannot run regions built by external "
                         f"codegens ({', '.join(sorted({e.backend for e in built.values()}))}"
                         "): their memory is the backend's; compile without targets or "
                         "without a budget", mod.functions[entry].span)
    planner = make_planner(target_def, work.checked_types, cache_dir)
    entry_vars = _entry_shape_vars(work.functions[entry])
    bounds = _shape_bounds(shape_bounds, entry_vars, mod.functions[entry])
    # under DTR no static memory plan: the engine owns the memory (spec/dtr.md, purity)
    memory = plan_memory(work.functions[entry], planner, work.checked_types, entry_vars) \
        if reuse_buffers and target_def.host_memory and dtr_opts is None else MemoryPlan()
    # the allocation policy: the static plan's buffers when there are any, else fresh;
    # with a memory budget, the DTR runtime (every kernel step through its engine)
    dtr = None
    runtime: Runtime
    if dtr_opts is not None:
        from relay_ref.dtr.runtime import DTRRuntime

        runtime = dtr = DTRRuntime(dtr_opts)
    elif memory.symbolic:  # symbolic sizes: evaluated per call (SymbolicPlanRuntime)
        runtime = SymbolicPlanRuntime(list(memory.views.values()),
                                      list(memory.symbolic.values()), memory.symbolic_sizes,
                                      bounds, work.functions[entry].span)
    else:
        runtime = StaticPlanRuntime(list(memory.views.values())) if memory.views else Runtime()
    slots = memory.slots

    def build() -> Any:
        return generate(work, planner, slots=slots, plans_allocation=runtime.plans_allocation,
                        max_depth=depth, externs=built, entry=entry,
                        shape_hook=bool(memory.symbolic) and dtr_opts is None,
                        shape_bounds=bounds, bounds_span=mod.functions[entry].span)

    generated = run_deep(build, name="relay-compile")
    try:
        code = compile(generated.source, generated.filename, "exec")
    except (SyntaxError, RecursionError, MemoryError) as err:
        # CPython refuses blocks nested more than ~100 deep: ``if``s nested that far
        raise RelayError(f"compile: the program nests control flow (if / match) deeper "
                         f"than generated Python can ({type(err).__name__}: {err}); run it "
                         "with rr.evaluate", mod.functions[entry].span) from None
    exec(code, generated.namespace)  # noqa: S102 - our own generated source
    if dtr is not None:  # the sites whose values are handles (released ones)
        dtr.released = frozenset(generated.released)
        dtr.overwritten = frozenset(generated.overwritten)
        dtr.filename, dtr.line_spans = generated.filename, generated.line_spans
        dtr.default_span = work.functions[entry].span
        if gradient_globals:  # code the gradient made has no spans: its call's is nearest
            call = _gradient_call(mod.functions[entry], set(gradient_globals))
            if call is not None:
                dtr.default_span, dtr.default_where = call.span, "the code gradient made"
    plan = _plan(work, entry, target, first + pipeline.specs(), generated, memory,
                 time.perf_counter() - start)
    plan = dataclasses.replace(plan, threads=thread_policy.describe())
    if notes:
        plan = dataclasses.replace(plan, notes=(*plan.notes, *notes))
    if regions:
        plan = dataclasses.replace(plan, regions=regions)
    if target_def.finish is not None:
        plan = target_def.finish(plan, generated, device)
    aliases = getattr(params, "relay_names", None)  # from_onnx's params: original names
    return Executable(generated, work, checked, entry, plan,
                      deep=_may_recurse(work, entry), profile=profile, memory=memory,
                      aliases=dict(aliases) if isinstance(aliases, Mapping) else None,
                      device=device, runtime=runtime, dtr=dtr, threads=thread_policy,
                      thread_scope=_uses_threads(plan))


#: operators (as group labels name them: ``nn.`` dropped) whose CPU kernels call BLAS
#: (``matmul`` covers ``batch_matmul``, ``conv2d`` its transpose and gradients)
_BLAS_OPS = ("conv2d", "dense", "matmul")


def _uses_threads(plan: Plan) -> tuple[bool, bool]:
    """(whether any kernel of ``plan`` may use threads: it has tensor kernels or BYOC
    regions; whether any may call BLAS: a BLAS operator, or a region or a NumPy reference
    that might). A program of scalar code only needs neither."""
    blas = bool(plan.regions) or any(
        any(op in g.label for op in _BLAS_OPS) or "reference" in " ".join(g.kernels)
        for g in plan.groups)
    return bool(plan.groups) or blas, blas


def _entry_shape_vars(func: Function) -> frozenset[str]:
    """The shape variables the entry's parameters bind (T-ShapeScope)."""
    from relay_ref.typecheck.shapes import type_vars

    out: frozenset[str] = frozenset()
    for p in func.params:
        out |= type_vars(p.type_annotation)
    return out


def _shape_bounds(bounds: Mapping[str, int] | None, names: frozenset[str],
                  func: Function) -> dict[str, int]:
    """``shape_bounds`` checked: shape variables of the entry's parameters (identifiers)
    to non-negative ints; a ``RelayError`` at the entry otherwise (never a TypeError:
    the mapping is the user's)."""
    if bounds is None:
        return {}
    if not isinstance(bounds, Mapping):
        raise RelayError(f"compile: shape_bounds must be a dict of shape variable name to a "
                         f"non-negative int, not {type(bounds).__name__}", func.span)
    from relay_ref.suggest import did_you_mean

    out = {}
    for name, bound in bounds.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise RelayError(f"compile: shape_bounds keys must be shape variable names, not "
                             f"{name!r}", func.span)
        if name not in names:
            known = ", ".join(sorted(names)) or "none"
            raise RelayError(f"compile: shape_bounds names {name!r}, which is not a shape "
                             f"variable of the entry's parameters (they have: {known})"
                             f"{did_you_mean(name, names)}", func.span)
        if (type(bound) is not int and not isinstance(bound, np.integer)) or bound < 0:
            raise RelayError(f"compile: the bound of {name} must be a non-negative int, not "
                             f"{bound!r}", func.span)
        out[name] = int(bound)
    return out


def _gradient_call(func: Function, made: set[str]) -> Call | None:
    """The first call (with a span) in ``func`` of a global the gradient expansion made:
    where a ``gradient(@f)(...)`` was written."""
    for node in post_order(func.body):
        if type(node) is Call and type(node.op) is GlobalVar and node.op.name in made \
                and node.span is not None:
            return node
    return None


def _simplify_gradients(mod: IRModule, generated: set[str]
                        ) -> tuple[IRModule, tuple[str, ...], tuple[str, ...]]:
    """``GRADIENT_PASSES`` on a type-checked module whose ``gradient(f)`` calls were expanded
    (adding the globals ``generated``), then those of them no other global reaches any more
    dropped (as ``rr.optimize`` does): (module, the passes run, notes for the plan).

    Guarded, never failing the compilation: when a pass raises, or the result has more
    nodes than the expansion, the expansion is compiled as it is (no passes, a note says
    why). PartialEvaluate does not fail when its bounds (``UNFOLD_BUDGET``,
    ``MAX_UNFOLD_DEPTH``) stop it: the calls left stay residual, possibly after unfoldings
    that made the program larger, which is what the size check catches. Both passes refine
    their input (each pass's guarantee), so either module computes the program's values."""
    from relay_ref.dtr import schedule
    from relay_ref.passes.gradient import drop_unreachable

    own = set(mod.functions) - generated
    try:
        out = Pipeline(GRADIENT_PASSES, label="compile")(mod)
        out = drop_unreachable(out, generated, own)
        # each gradient computed where its inputs are ready, not in the result tuple
        out = schedule.hoist_result_fields(out)
    except Exception as err:  # noqa: BLE001 - the unsimplified program still compiles
        return mod, (), (f"gradient expansion compiled unsimplified: {_failed(err)}",)
    before, after = _size(mod), _size(out)
    if after > before:
        return mod, (), (f"gradient expansion compiled unsimplified: {' + '.join(GRADIENT_PASSES)}"
                         f" gave {after} nodes, more than its {before}",)
    return out, GRADIENT_PASSES, ()


def _failed(err: Exception) -> str:
    """What failed, for a plan note: ``PartialEvaluate failed (RecursionError: ...)``."""
    from relay_ref.passes.manager import PassError

    if isinstance(err, PassError) and err.cause is not None:
        return f"{err.pass_label} failed ({type(err.cause).__name__}: {err.cause})"
    return f"{type(err).__name__}: {err}"


def _size(mod: IRModule) -> int:
    """Distinct expression nodes over the module's functions."""
    return sum(sum(1 for _ in post_order(f)) for f in mod.functions.values())


def _pipeline(passes: PassesArg) -> Pipeline:
    """The pipeline to run: the default one (``DEFAULT_PASSES``), or the passes given (specs
    such as ``"FuseOps(max_depth=8)"``, a list or a comma-separated string as
    ``rr.optimize`` takes; configured pass objects), every one run whatever its opt level.
    An unknown name or option is a ``ValueError``, a wrong kind a ``TypeError``."""
    if passes is None:
        passes = DEFAULT_PASSES
    return Pipeline(passes, label="compile")


def _run_passes(mod: IRModule, entry: str, params: Mapping[str, Any] | None,
                pipeline: Pipeline, externs: Mapping[str, Any] | None = None
                ) -> tuple[IRModule, dict[str, Extern], tuple[RegionSummary, ...]]:
    """``mod`` (type-checked) with ``params`` bound (the ``BindParams`` pass), its regions
    built by their codegens (``prepare_externs``), then the ``pipeline``'s passes, all
    through the pass manager: type-checked after each pass that changed it, a pass not
    rerun on its own output (the default pipeline's second FoldConstant after a
    FoldScaleAxis that folded nothing), a failing pass named. Returns the module, the
    built regions and their summaries."""
    from relay_ref.passes.bind_params import BindParams

    bind = BindParams(dict(params or {}), entry, label="compile: params")
    bound = Pipeline((bind,), label="compile")(mod)
    # a module without regions or composites comes back as it is
    prepared, built, regions = prepare_externs(bound, externs)
    return Pipeline(pipeline.selected(), label="compile")(prepared), built, regions


def _may_recurse(mod: IRModule, entry: str) -> bool:
    """Whether running ``@entry`` may nest calls deeply, so that it needs the big-stack
    thread (starting one costs ~0.4 ms per call): a global reachable from it is recursive
    (a cycle in the graph of global references), or a reachable function recurses through
    a ``let`` (E-Let-Rec) or calls a function value (a closure may be anything, a
    recursive function included). Otherwise every call chain is bounded by the program's
    size and runs on the caller's thread."""
    graph: dict[str, set[str]] = {}
    local_calls: set[str] = set()
    stack, seen = [entry], {entry}
    while stack:
        name = stack.pop()
        refs: set[str] = set()
        for node in post_order(mod.functions[name]):
            kind = type(node)
            if kind is GlobalVar:
                refs.add(node.name)
            elif kind is Call and type(node.op) is Var:
                local_calls.add(name)
            elif kind is Let and type(node.value) is Function and \
                    node.value.attr("Primitive") is None:
                local_calls.add(name)  # a let-bound function: possibly recursive
        graph[name] = {r for r in refs if r in mod.functions}
        for r in graph[name] - seen:
            seen.add(r)
            stack.append(r)
    if local_calls:
        return True
    # a cycle among the reachable globals (iterative three-colour DFS)
    state: dict[str, int] = {}
    for root in graph:
        if state.get(root):
            continue
        work = [(root, iter(graph[root]))]
        state[root] = 1
        while work:
            node, kids = work[-1]
            for kid in kids:
                if state.get(kid) == 1:
                    return True
                if not state.get(kid):
                    state[kid] = 1
                    work.append((kid, iter(graph[kid])))
                    break
            else:
                state[node] = 2
                work.pop()
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
    from relay_ref.ir.shape import dim_text

    return Plan(entry, target, passes, len(generated.functions), groups, len(consts),
                sum(c.nbytes for c in consts),
                buffers=len(memory.buffers) + len(memory.symbolic_sizes),
                peak_bytes=memory.peak_bytes,
                planned_values=len(memory.views) + len(memory.symbolic),
                compile_seconds=seconds,
                symbolic_buffers=tuple(dim_text(d) for d in memory.symbolic_sizes))
