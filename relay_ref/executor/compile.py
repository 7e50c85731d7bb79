"""``rr.compile``: a module -> an ``Executable`` (DESIGN.md sections 2 and 6).

The pipeline, each step done once at compile time:

1. type-check the module (T-Module; cached on it, as ``rr.evaluate`` does); if ``rr.compile``
   expanded ``gradient(f)`` calls in it (spec/ad.md AD-Grad-Op), ``PartialEvaluate`` +
   ``DeadCodeElimination`` simplify the expansion first (``GRADIENT_PASSES``, guarded: see
   ``_simplify_gradients``), then the globals the expansion made that nothing reaches any
   more are dropped;
2. bind ``params`` (weights, ``bind_params``): each named ``@main`` parameter becomes a
   constant, checked against the parameter's type by the argument rule (spec/semantics.md
   4.1); the other functions that refer to ``@main`` keep calling the original, with all
   its parameters;
3. the inference pipeline of the passes issue, not a copy of it: ``SimplifyInference``
   (batch_norm and friends to arithmetic), ``FoldConstant`` (constant subgraphs evaluated
   now, the bound weights included), ``FoldScaleAxis`` (a batch norm's scale folded into the
   preceding conv2d / dense weights), ``FoldConstant``, ``DeadCodeElimination``, then
   ``FuseOps``, whose ``Primitive`` groups are the units the planner runs as kernels;
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

A pass that fails or leaves an ill-typed module is an internal error naming the pass (never
a silently different program).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import ERROR, Diagnostic, RelayError, RelayTypeError
from relay_ref.executor.codegen import generate
from relay_ref.executor.executable import Executable
from relay_ref.executor.memory import MemoryPlan, plan_memory
from relay_ref.executor.plan import GroupSummary, Plan
from relay_ref.executor.runtime import Runtime, StaticPlanRuntime
from relay_ref.executor.targets import get_target
from relay_ref.interpreter.args import ArgumentError, convert_argument
from relay_ref.interpreter.driver import MAX_DEPTH, checked_module, param_types
from relay_ref.ir.expr import Call, Constant, Expr, Function, GlobalVar, Let, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import post_order

__all__ = ["DEFAULT_PASSES", "GRADIENT_PASSES", "bind_params",
           "compile_module"]

#: The passes run before planning, in order (see the module docstring).
DEFAULT_PASSES: tuple[str, ...] = ("SimplifyInference", "FoldConstant", "FoldScaleAxis",
                                   "FoldConstant", "DeadCodeElimination", "FuseOps")
#: Run first on a module whose ``gradient(f)`` calls were expanded (see the module docstring):
#: the higher-order AD output of first-order code becomes straight-line dataflow
#: (spec/partial_eval.md), without the expansion's reference cells, backpropagator closures
#: and per-operator ``zeros_like`` / ``add`` adjoints.
GRADIENT_PASSES: tuple[str, ...] = ("PartialEvaluate", "DeadCodeElimination")


def compile_module(mod: IRModule, params: Mapping[str, Any] | None = None,
                   target: str = "cpu", *, entry: str = "main", profile: bool = False,
                   passes: Sequence[str] | None = None,
                   cache_dir: str | None = None, reuse_buffers: bool = True,
                   gradient_globals: Collection[str] | None = None,
                   max_depth: int | None = None) -> Executable:
    """Compile ``mod`` for ``target``; see ``rr.compile``. ``gradient_globals``: ``mod`` is
    the expansion of a program's ``gradient(f)`` calls, which added these globals (None: it
    had none); it is simplified first (``GRADIENT_PASSES``)."""
    start = time.perf_counter()
    if not isinstance(mod, IRModule):
        raise TypeError(f"compile: mod must be an IRModule, not {type(mod).__name__}")
    if not isinstance(target, str):
        raise TypeError(f"compile: target must be a str, not {type(target).__name__}")
    target_def = get_target(target)
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"compile: params must be a dict of parameter name to array, not "
                        f"{type(params).__name__}")
    if not isinstance(entry, str):
        raise TypeError(f"compile: entry must be a str, not {type(entry).__name__}")
    if max_depth is not None and (type(max_depth) is not int or max_depth < 1):
        raise TypeError(f"compile: max_depth must be a positive int, not {max_depth!r}")
    depth = MAX_DEPTH if max_depth is None else max_depth
    entry = entry.removeprefix("@")  # "@main" and "main" name the same global
    if entry not in mod.functions:
        from relay_ref.suggest import did_you_mean

        raise RelayError(f"compile: the module has no function @{entry}"
                         + did_you_mean(entry, mod.functions, sigil="@"))
    device = target_def.prepare() if target_def.prepare is not None else None
    names = _pass_names(passes)
    checked = checked_module(mod)
    work, first, notes = checked, (), ()
    if gradient_globals is not None:
        work, first, notes = _simplify_gradients(checked, set(gradient_globals))
    work = bind_params(work, entry, dict(params or {}))
    work = _run_passes(work, names)
    planner = target_def.planner(work.checked_types, cache_dir)
    memory = plan_memory(work.functions[entry], planner, work.checked_types) \
        if reuse_buffers and target_def.host_memory else MemoryPlan()
    # the allocation policy: the static plan's buffers when there are any, else fresh
    runtime = StaticPlanRuntime(list(memory.views.values())) if memory.views else Runtime()
    slots = {call: k for k, call in enumerate(memory.views)}

    def build() -> Any:
        return generate(work, planner, slots=slots, plans_allocation=runtime.plans_allocation,
                        max_depth=depth)

    generated = run_deep(build, name="relay-compile")
    try:
        code = compile(generated.source, generated.filename, "exec")
    except (SyntaxError, RecursionError, MemoryError) as err:
        # CPython refuses blocks nested more than ~100 deep: ``if``s nested that far
        raise RelayError(f"compile: the program nests control flow (if / match) deeper "
                         f"than generated Python can ({type(err).__name__}: {err}); run it "
                         "with rr.evaluate", mod.functions[entry].span) from None
    exec(code, generated.namespace)  # noqa: S102 - our own generated source
    plan = _plan(work, entry, target, first + names, generated, memory,
                 time.perf_counter() - start)
    if notes:
        plan = dataclasses.replace(plan, notes=(*plan.notes, *notes))
    if target_def.finish is not None:
        plan = target_def.finish(plan, generated, device)
    aliases = getattr(params, "relay_names", None)  # from_onnx's params: original names
    return Executable(generated, work, checked, entry, plan,
                      deep=_may_recurse(work, entry), profile=profile, memory=memory,
                      aliases=dict(aliases) if isinstance(aliases, Mapping) else None,
                      device=device, runtime=runtime)


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
    from relay_ref.passes import get_pass
    from relay_ref.passes.gradient import drop_unreachable
    from relay_ref.typecheck.infer import infer_types

    own = set(mod.functions) - generated
    name = GRADIENT_PASSES[0]
    try:
        out = mod
        for name in GRADIENT_PASSES:
            out = infer_types(get_pass(name)(out))
        out = drop_unreachable(out, generated, own)
    except Exception as err:  # noqa: BLE001 - the unsimplified program still compiles
        return mod, (), (f"gradient expansion compiled unsimplified: {name} failed "
                         f"({type(err).__name__}: {err})",)
    before, after = _size(mod), _size(out)
    if after > before:
        return mod, (), (f"gradient expansion compiled unsimplified: {' + '.join(GRADIENT_PASSES)}"
                         f" gave {after} nodes, more than its {before}",)
    return out, GRADIENT_PASSES, ()


def _size(mod: IRModule) -> int:
    """Distinct expression nodes over the module's functions."""
    return sum(sum(1 for _ in post_order(f)) for f in mod.functions.values())


def bind_params(mod: IRModule, entry: str, params: Mapping[str, Any], *,
                label: str = "compile: params") -> IRModule:
    """``mod`` (type-checked) with ``@entry``'s parameters named in ``params`` replaced by
    constants, type-checked again; ``label`` names ``params`` in errors (``relay run
    --params`` gives the file). ``rr.compile(params=)``, ``relay run --params`` and ``relay
    import --embed`` all bind through this function.

    Invariants:

    * ``@entry`` keeps its name and becomes the bound function: its other parameters stay,
      in order, and its body has the constants where the bound parameters were.
    * Every other use of ``@entry`` keeps the full signature. When any function of the
      module refers to ``@entry`` (another global calling it, a closure capturing it, it
      passed as a value, the entry calling itself), the original function stays in the
      module as ``@<entry>_unbound`` (a number appended while that name is taken), with
      fresh binders, right after ``@entry``, and every ``@entry`` reference in the module,
      the bound entry's body included, is renamed to it. So ``@entry``'s value on the
      remaining arguments is its original value on all of them, and every other global's
      value is unchanged. A module where nothing refers to ``@entry`` gains no function.
    * Each value is checked against its parameter's type by the argument rule
      (spec/semantics.md 4.1) and copied (the caller may reuse its buffer); a key naming no
      parameter, a value that does not fit, or one that is not a tensor is a ``RelayError``
      located at the entry or the parameter."""
    if not params:
        return mod
    func = mod.functions[entry]
    by_name = {p.name_hint: p for p in func.params}
    for key in params:
        if not isinstance(key, str) or key not in by_name:
            raise RelayError(f"{label} names no parameter of @{entry}: {key!r} (its "
                             f"parameters: {', '.join('%' + n for n in by_name) or 'none'})",
                             func.span)
    types = dict(zip(func.params, param_types(mod, entry, func), strict=True))
    consts: dict[Var, Constant] = {}
    for key, value in params.items():
        var = by_name[key]
        try:
            array = convert_argument(value, types[var], mod)
        except ArgumentError as err:
            raise RelayError(f"{label}[{key!r}] does not fit %{key}: {err.message}",
                             var.span) from None
        if type(array) is not np.ndarray:
            raise RelayError(f"{label}[{key!r}]: only tensor parameters can be bound",
                             var.span)
        array = np.array(array, copy=True)  # the caller may reuse its buffer
        consts[var] = Constant(array, var.span)
    from relay_ref.passes.rewrite import fresh_copy, rewrite
    from relay_ref.typecheck.infer import infer_types

    unbound = _unbound_name(mod, entry)

    def retarget(e: Expr) -> Expr | None:
        """A reference to ``@entry`` -> one to the full-signature original."""
        if unbound is not None and type(e) is GlobalVar and e.name == entry:
            return dataclasses.replace(e, name=unbound)
        return None

    def bind(e: Expr) -> Expr | None:
        return consts.get(e) if type(e) is Var else retarget(e)

    body = rewrite(func.body, bind)
    functions: dict[str, Function] = {}
    for name, f in mod.functions.items():
        if name != entry:
            functions[name] = rewrite(f, retarget) if unbound is not None else f
            continue
        functions[entry] = Function(tuple(p for p in func.params if p not in consts), body,
                                    func.ret_type, func.type_params, func.attrs, func.span)
        if unbound is not None:  # its binders fresh: a Var is bound by one binder only
            functions[unbound] = cast(Function, fresh_copy(rewrite(func, retarget)))
    return infer_types(dataclasses.replace(mod, functions=functions, checked_types={},
                                           global_types={}))


def _unbound_name(mod: IRModule, entry: str) -> str | None:
    """The name ``bind_params`` keeps ``@entry``'s original under: None when no function of
    ``mod`` refers to ``@entry`` (nothing needs it), else ``<entry>_unbound``, with the
    first number from 1 appended that makes it a name ``mod`` does not define."""
    refers = any(type(node) is GlobalVar and node.name == entry
                 for f in mod.functions.values() for node in post_order(f))
    if not refers:
        return None
    name, n = f"{entry}_unbound", 0
    while name in mod.functions:
        n += 1
        name = f"{entry}_unbound{n}"
    return name


def _pass_names(passes: Sequence[str] | str | None) -> tuple[str, ...]:
    """The passes to run: the default pipeline, or names (a list, or a comma-separated
    string as ``rr.optimize`` takes); an unknown name is a ``ValueError``."""
    from relay_ref.passes import pass_names

    if passes is None:
        return DEFAULT_PASSES
    if isinstance(passes, str):
        passes = [n.strip() for n in passes.split(",") if n.strip()]
    try:
        names = tuple(passes)
    except TypeError:
        raise TypeError(f"compile: passes must be a list of pass names, not "
                        f"{type(passes).__name__}") from None
    known = set(pass_names())
    for name in names:
        if not isinstance(name, str) or name not in known:
            raise ValueError(f"compile: passes names no pass: {name!r} (passes: "
                             f"{', '.join(sorted(known))})")
    return names


def _run_passes(mod: IRModule, names: tuple[str, ...]) -> IRModule:
    """``mod`` after the passes ``names`` in order, type-checked after each that changed it.

    A pass whose input is the very module it returned earlier in this pipeline is not run
    again (the default pipeline's second FoldConstant after a FoldScaleAxis that folded
    nothing): the pipeline's passes are idempotent, each rewriting to its own fixpoint."""
    from relay_ref.passes import get_pass
    from relay_ref.typecheck.infer import infer_types

    outputs: dict[str, IRModule] = {}  # pass name -> the module it last returned
    for name in names:
        if outputs.get(name) is mod:
            continue
        try:
            out = get_pass(name)(mod)
            if out is not mod:  # changed: checked again (unchanged, it is checked)
                mod = infer_types(out)
            outputs[name] = mod
        except RelayTypeError as err:
            head = Diagnostic(ERROR, f"internal error: the output of pass {name} does not "
                              "type-check; this is a bug in relay_ref")
            raise RelayError([head, *err.diagnostics]) from None
        except RelayError:
            raise
        except RecursionError:
            raise RelayError(f"internal error: pass {name} recursed too deeply") from None
        except Exception as err:  # noqa: BLE001 - a failing pass is a bug, named
            raise RelayError(f"internal error: pass {name} failed ({type(err).__name__}: "
                             f"{err}); this is a bug in relay_ref") from err
    return mod


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
    return Plan(entry, target, passes, len(generated.functions), groups, len(consts),
                sum(c.nbytes for c in consts), buffers=len(memory.buffers),
                peak_bytes=memory.peak_bytes, planned_values=len(memory.views),
                compile_seconds=seconds)
