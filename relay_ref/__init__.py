"""relay_ref: a reference implementation of the Relay IR.

The public API (names are stable; see DESIGN.md section 3)::

    mod  = rr.parse(text, source_name="<string>")   # IRModule
    expr = rr.parse_expr(text)                      # Expr
    mod  = rr.infer_types(mod)                      # annotated module; raises rr.RelayTypeError
    text = rr.astext(mod_or_expr)                   # canonical text
    rr.alpha_equal(a, b)                            # structural equality modulo bound names
    val  = rr.evaluate(mod, *args, entry="main")    # definitional interpreter
    exe  = rr.compile(mod, params=None, target="cpu")  # fast executor: exe(*args)
    gmod = rr.gradient(mod_or_fn, mode="higher_order")  # @main: fn(T..) -> (O, (T..))
    rr.cuda_available()                             # whether target="cuda" can run here
    rr.register_packed("f", fn)                     # for call_dps_packed("f", ...) / call_tir

Heavy modules (numba, the op library) are imported on first use, so ``import relay_ref``
stays cheap.
"""

from __future__ import annotations

from typing import Any

from relay_ref.diagnostics import (
    Diagnostic,
    FrontendError,
    ParseError,
    RelayError,
    RelayRuntimeError,
    RelayTypeError,
)
from relay_ref.ir.module import IRModule

__version__ = "0.1.0"

__all__ = [
    "Diagnostic", "FrontendError", "IRModule", "ParseError", "RelayError", "RelayRuntimeError",
    "RelayTypeError", "__version__", "alpha_equal", "astext", "evaluate", "infer_types",
    "optimize", "parse", "parse_expr", "pass_names", "structural_hash", "ConstructorValue",
    "Closure", "RecClosure", "RefValue", "compile", "cuda_available", "gradient",
    "partition", "register_packed",
]


def _require(func: str, name: str, value: Any, kinds: type | tuple[type, ...],
             expected: str) -> None:
    """Public functions given the wrong Python type raise a ``TypeError`` naming the
    parameter (``parse: text must be a str, not bytes``), never an internal error."""
    if not isinstance(value, kinds) or (kinds is str and isinstance(value, bool)):
        raise TypeError(f"{func}: {name} must be {expected}, not {type(value).__name__}")


def _ir_kinds() -> tuple[type, ...]:
    from relay_ref.ir.expr import Expr, Pattern
    from relay_ref.ir.module import TypeData
    from relay_ref.ir.types import Type

    return (IRModule, Expr, Type, Pattern, TypeData)


def parse(text: str, source_name: str = "<string>", *, prelude: bool = True,
          base_module: IRModule | None = None, metadata: Any = None) -> IRModule:
    """Parse a module in the Relay text format (v0.0.5; the version header is optional).

    With ``prelude=True`` globals, types and constructors that the text uses but does not
    define are taken from the prelude. ``base_module``'s definitions are visible and kept
    (a redefinition replaces). ``metadata`` gives the metadata table from Python, as TVM's
    ``init_meta_table``: a mapping from type key to a list of objects, appended to the
    text's ``#[metadata]`` section (``{"relay.Constant": [numpy arrays]}``: the text's
    ``meta[relay.Constant][i]``; ``"relay.attrs.*"``: attrs objects or dicts; other keys,
    like ``"VirtualDevice"``: opaque values; see ``relay_ref.syntax.parser.with_metadata``).
    Raises ``ParseError`` with located diagnostics, ``TypeError`` for arguments of the wrong
    Python type."""
    from relay_ref.syntax.parser import parse as _parse

    _require("parse", "text", text, str, "a str")
    _require("parse", "source_name", source_name, str, "a str")
    _require("parse", "base_module", base_module, (IRModule, type(None)), "an IRModule or None")

    return _parse(text, source_name, fallback=_fallback(prelude), base_module=base_module,
                  metadata=metadata)


def _fallback(prelude: bool) -> Any:
    """The parser's fallback module: the prelude's when ``prelude`` is on (the parser itself
    does not know the prelude, DESIGN.md section 2)."""
    if not prelude:
        return None
    from relay_ref.prelude import prelude_fallback

    return prelude_fallback()


def parse_expr(text: str, source_name: str = "<string>", *, prelude: bool = True,
               **kwargs: Any):
    """Parse one expression (no type checking). ``module=`` supplies globals, types and
    constructors, then the prelude unless ``prelude=False``; ``scope=`` pre-binds local
    names (``"x"`` -> the ``Var`` that ``%x`` denotes); other keywords go to
    ``relay_ref.syntax.parser.parse_expr``."""
    from relay_ref.syntax.parser import parse_expr as _parse_expr

    _require("parse_expr", "text", text, str, "a str")
    _require("parse_expr", "source_name", source_name, str, "a str")
    _require("parse_expr", "module", kwargs.get("module"), (IRModule, type(None)),
             "an IRModule or None")

    return _parse_expr(text, source_name, fallback=_fallback(prelude), **kwargs)


def astext(node: Any, *, show_types: bool = False, omit_prelude: bool = False) -> str:
    """Canonical Relay text of a module, expression or type. ``show_types`` annotates calls
    and constants with their checked types; ``omit_prelude`` leaves out the definitions a
    module took from the prelude (re-parsing with the prelude restores them)."""
    from relay_ref.ir.expr import Expr
    from relay_ref.ir.types import Type
    from relay_ref.syntax.printer import astext as _astext

    _require("astext", "node", node, (IRModule, Expr, Type), "an IRModule, an Expr or a Type")
    omit = None
    if omit_prelude:
        from relay_ref.prelude import load_prelude

        omit = load_prelude()
    return _astext(node, show_types=show_types, omit=omit)


def alpha_equal(a: Any, b: Any) -> bool:
    """Structural equality of modules, expressions or types modulo bound-variable names."""
    from relay_ref.ir.equal import alpha_equal as _alpha_equal

    kinds, expected = _ir_kinds(), "an IRModule, Expr, Type, Pattern or TypeData"
    _require("alpha_equal", "a", a, kinds, expected)
    _require("alpha_equal", "b", b, kinds, expected)

    return _alpha_equal(a, b)


def structural_hash(node: Any) -> int:
    """A hash consistent with ``alpha_equal``."""
    from relay_ref.ir.equal import structural_hash as _structural_hash

    _require("structural_hash", "node", node, _ir_kinds(),
             "an IRModule, Expr, Type, Pattern or TypeData")

    return _structural_hash(node)


def infer_types(mod: IRModule) -> IRModule:
    """Infer and check the types of every global of ``mod`` (raises ``RelayTypeError``)."""
    from relay_ref.typecheck.infer import infer_types as _infer_types

    _require("infer_types", "mod", mod, IRModule, "an IRModule")

    return _infer_types(mod)


def evaluate(program: Any, *args: Any, entry: str = "main", **kwargs: Any) -> Any:
    """Run ``@entry`` of a module (or an expression) with the definitional interpreter.

    Arguments are converted by one rule (spec/semantics.md 4.1); an unchecked module is
    type-checked first, once (``typecheck=False`` opts out); ``max_depth`` bounds call
    nesting (default ``relay_ref.interpreter.eval.MAX_DEPTH``, 10^6). See
    ``relay_ref.interpreter.driver.evaluate``."""
    from relay_ref.interpreter.driver import evaluate as _evaluate

    program, kwargs = _expand_gradients(program, kwargs)
    return _evaluate(program, *args, entry=entry, **kwargs)


def _expand_gradients(program: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``gradient(f)`` calls expanded by the AD pass (spec/ad.md AD-Grad-Op) before the
    interpreter or the executor sees the program: neither imports the passes."""
    from relay_ref.ir.expr import Expr

    if isinstance(program, IRModule | Expr):
        from relay_ref.passes.gradient import (
            expand_gradients,
            expand_gradients_expr,
            has_gradient,
        )

        if has_gradient(program):
            if isinstance(program, IRModule):
                return expand_gradients(program), kwargs
            expr, module = expand_gradients_expr(program, kwargs.get("module"))
            return expr, {**kwargs, "module": module}
    return program, kwargs


def gradient(fn_or_module: Any, mode: str = "higher_order", *, entry: str = "main"
             ) -> IRModule:
    """Automatic differentiation (spec/ad.md): the type-checked module whose ``@entry`` is
    the gradient of ``fn_or_module``'s ``@entry`` (or of a closed ``Function``) in TVM's
    shape, ``fn(T1..Tn) -> O`` becoming ``fn(T1..Tn) -> (O, (T1..Tn))``: the value, and the
    gradient of the sum of the result's tensors with respect to each input.

    ``mode``: ``"higher_order"`` (reverse mode over the whole language: closures, ADTs,
    recursion, references; PartialEvaluate + DeadCodeElimination simplify its output),
    ``"first_order"`` (reverse mode for pure dataflow functions, straight-line output) or
    ``"forward"`` (dual numbers; one pass per input element). Programs may also call
    ``gradient(@f)`` themselves: ``rr.evaluate``, ``rr.compile`` and this function expand
    those calls first. Raises ``RelayTypeError`` for an ill-typed input, ``RelayError``
    (located) for what the mode cannot differentiate, ``ValueError`` for an unknown mode,
    ``TypeError`` for arguments of the wrong Python type."""
    from relay_ref.ir.expr import Function
    from relay_ref.passes.gradient import gradient as _gradient

    _require("gradient", "fn_or_module", fn_or_module, (IRModule, Function),
             "an IRModule or a Function")
    _require("gradient", "mode", mode, str, "a str")
    _require("gradient", "entry", entry, str, "a str")
    return _gradient(fn_or_module, mode, entry=entry)


def compile(mod: IRModule, params: Any = None, target: str = "cpu", *,  # noqa: A001
            entry: str = "main", profile: bool = False, passes: Any = None,
            cache_dir: str | None = None, max_depth: int | None = None,
            memory_budget: int | float | str | None = None, heuristic: str = "dtr_eq",
            dealloc: str = "eager", cost: str = "flops", dtr_log: Any = None,
            targets: Any = None, shape_bounds: Any = None, threads: Any = None,
            threads_source: str | None = None) -> Any:
    """Compile ``mod`` with the fast executor and return an ``Executable``.

    ``threads`` (an int >= 1, at most ``max(64, 4 x the CPUs available)``; default
    ``$RELAY_REF_NUM_THREADS``, then ``$OMP_NUM_THREADS``, ``$NUMBA_NUM_THREADS``, else the
    CPUs available, at most 8) is how many threads the kernels use: the executor's work
    pool splits large products and convolutions dynamically over them, and BLAS runs on
    one thread within each call, restored afterwards (``relay_ref.executor.threads``);
    ``exe.plan`` says what was chosen and from where. ``threads_source`` names where
    ``threads`` came from in errors and the plan (``relay run`` passes ``"--threads"``).
    The pool keeps its workers: after ``threads=64`` the process holds 63 sleeping threads.

    Symbolic shapes (``def @main(%x: Tensor[(n, 784), float32])``): one compile runs every
    size, with the static program's plan (fused kernels compiled once per dtype and rank,
    buffers planned with symbolic sizes, evaluated per call); ``shape_bounds={"n": 64}``
    preallocates those buffers at the bound, and a call past it is a ``RelayRuntimeError``.

    ``params`` binds ``@entry`` parameters by name to arrays (weights) once: they become
    constants, folded with the rest of the program at compile time; the functions that
    call ``@entry`` (itself included) or take it as a value keep calling the original with
    all its parameters (kept as ``@<entry>_unbound``). ``exe(*args)`` /
    ``exe(**inputs)`` run ``@entry`` on the remaining parameters with ``rr.evaluate``'s
    argument conventions and return its values. ``exe.plan`` summarises the fused groups,
    kernels and buffers; ``exe.stats`` measures the last call (per kernel with
    ``profile=True``). ``passes`` replaces the default pipeline
    (``relay_ref.executor.compile.DEFAULT_PASSES``; pass specs such as
    ``"FuseOps(max_depth=8)"`` or configured pass objects, run through the pass manager as
    ``optimize`` runs them); ``cache_dir`` is where generated numba
    kernels are cached (default ``$RELAY_REF_CACHE_DIR`` or ``~/.cache/relay_ref``).
    ``max_depth`` (default 10^6, as ``evaluate``'s) bounds the nesting of function calls,
    self tail calls included (compiled as loops, they count as the interpreter counts
    them): deeper recursion is ``evaluate``'s Stuck-Depth ``RelayRuntimeError``. It is
    fixed at compile time (``exe.max_depth``). A bound below 990 000 is exact and costs a
    counter update per call (~150 ns: fib(20) runs 2.5x slower); a higher one costs nothing
    per call and may let a recursion run up to ~10 000 nested calls past it first
    (spec/semantics.md 6, Depth).

    A module calling ``gradient(@f)`` has those calls expanded (spec/ad.md AD-Grad-Op), and
    the expansion simplified by PartialEvaluate + DeadCodeElimination before the pipeline
    (``exe.plan.passes`` lists them; should they fail or grow the program, it is compiled
    unsimplified and ``exe.plan.notes`` says why).

    Bring Your Own Codegen (spec/byoc.md): ``targets=["ort"]`` (backend names: ``"ort"``,
    ``"xla"`` or registered with ``relay_ref.byoc.register_backend``) partitions ``mod``
    first (``rr.partition(mod, targets, params)``: the weights are bound there); each
    ``Compiler=<backend>`` global function (from ``targets`` or already in ``mod``, as
    ``rr.partition`` or TVM prints them) is handed to its backend's codegen once, at
    compile time, and its callable runs at each call (``exe.plan.regions`` lists them;
    ``profile=True`` times them). A region the codegen refuses runs on the host, with a
    note in ``exe.plan`` (BYOC-Fallback), and so does a region whose ``Compiler`` names no
    registered backend (TVM's printed ``Compiler="dnnl"``); a failure inside a region's
    callable is a ``RelayRuntimeError`` at the region's call naming the backend.
    ``memory_budget`` with regions built by a backend is a ``RelayError``.

    ``target="cuda"`` runs the tensor kernels on a GPU through numba.cuda (weights copied
    to the device once, tensors kept there between kernels; see ``cuda_available()``).

    ``memory_budget`` runs every kernel call of the program (the entry and every function
    it calls, closures and recursion included) through Dynamic Tensor Rematerialization
    (``relay_ref.dtr``, spec/dtr.md): when a result does not fit, the resident tensor with
    the lowest ``heuristic`` score is evicted, and an evicted tensor is recomputed by
    replaying its kernel when it is needed again. The results are bit-identical to the
    unbudgeted executable's. The budget counts every tensor the runtime holds, inputs and
    weights included, and is exceeded by at most the one allocation in flight. It is bytes
    (an ``int``, NumPy's included, or a string of digits), or a fraction of the unbudgeted
    peak: a ``float`` in (0, 1] or a string such as ``"0.4"`` or ``"40%"``
    (``relay_ref.dtr.options.parse_budget``); that peak is measured once, on the first
    call's arguments, by running it once more without a budget first, and the budget in
    bytes (``ceil(fraction * peak)``) is then fixed for every later call: a later call on
    larger shapes of a ``?`` dimension may not fit it and run out of memory (give bytes, or
    compile again, for such calls). A bad DTR argument is a ``DTRError`` (a ``RelayError``
    and a ``ValueError``; a ``dtr_log`` whose directory is missing or not writable
    included), raised before anything is compiled. ``heuristic``:
    one of ``relay_ref.dtr.heuristics.HEURISTICS`` (``dtr``, ``dtr_eq``, ``dtr_local``,
    ``lru``, ``size``, ``msps``, ``random``) or ``"ablation(s=1,m=1,c=eq)"``; ``dealloc``:
    ``"eager"``, ``"banish"`` or ``"ignore"``; ``cost``: ``"flops"`` (deterministic, from
    the ops' ``cost`` aspect), ``"unit"`` or ``"measured"`` (kernel wall time).
    ``exe.dtr_stats`` is the last call's statistics (budget, peak_bytes, pinned_bytes,
    slowdown, evictions, rematerializations, ...); ``dtr_log=PATH`` writes each call's run
    as the paper's JSON-lines log (``relay_ref.dtr.simulate`` replays it). A call that
    cannot run within the budget raises ``RelayRuntimeError`` located at the expression
    whose operator could not run, naming the budget, the pinned bytes and its working set.

    Raises ``RelayTypeError`` for an ill-typed module, ``RelayError`` for an unknown target
    (or ``"cuda"`` without a device) or entry, a thread count that is not an int >= 1 or is
    past the limit (``threads``, or the environment variable it came from), a ``params`` key
    naming no parameter or a value of the wrong shape or dtype, ``TypeError`` for arguments
    of the wrong Python type (``max_depth`` not a positive int; a DTR argument of the wrong
    type), ``DTRError`` (a ``RelayError`` and a ``ValueError``, spec/dtr.md §7) for a DTR
    argument out of range or unknown (a negative budget, ``"140%"``, an unknown heuristic,
    ``dealloc`` or ``cost``, a ``dtr_log`` that cannot be written)."""
    from relay_ref.executor.compile import compile_module

    _require("compile", "mod", mod, IRModule, "an IRModule")
    _not_a_backend(target)
    if targets is not None:  # BYOC: partition first (the weights bound there)
        mod = partition(mod, targets, params, entry=entry)
        params = None
    externs = _externs(mod)
    # AD-Grad-Op (spec/ad.md): the expansion is then simplified by PartialEvaluate + DCE
    # (guarded; relay_ref.executor.compile.GRADIENT_PASSES), a program without gradient
    # calls compiles as it is
    expanded, _ = _expand_gradients(mod, {})
    made = None if expanded is mod else set(expanded.functions) - set(mod.functions)
    return compile_module(expanded, params, target, entry=entry, profile=profile,
                          passes=passes, cache_dir=cache_dir, gradient_globals=made,
                          max_depth=max_depth, memory_budget=memory_budget,
                          heuristic=heuristic, dealloc=dealloc, cost=cost, dtr_log=dtr_log,
                          externs=externs, shape_bounds=shape_bounds, threads=threads,
                          threads_source=threads_source)


def _not_a_backend(target: Any) -> None:
    """A BYOC backend's name (built-in or registered) passed as ``target=`` is refused with
    the keyword it belongs to: ``target`` is where the host code runs (``"cpu"``,
    ``"cuda"``), ``targets=[...]`` the backends regions go to."""
    from relay_ref.byoc.backend import BUILTIN, backend_names
    from relay_ref.executor.targets import UnknownTarget, target_names

    if isinstance(target, str) and target not in target_names() and (
            target in BUILTIN or target in backend_names()):
        raise UnknownTarget(f"compile: {target!r} is a BYOC backend: pass "
                            f"targets=[{target!r}] (target= is where the host code runs: "
                            f"{', '.join(target_names())})")


def _externs(mod: IRModule) -> dict[str, Any] | None:
    """The codegens of the registered (or built-in) backends ``mod``'s ``Compiler``
    globals name (spec/byoc.md BYOC-Extern; None: no region). A backend nothing registers
    (TVM's printed ``Compiler="dnnl"``) is left out: its regions run on the host, with a
    note in ``exe.plan`` (BYOC-Fallback)."""
    from relay_ref.byoc.backend import get_backend
    from relay_ref.executor.externs import extern_backends
    from relay_ref.passes.compiler_support import UnknownCompiler

    named = extern_backends(mod)
    if not named:
        return None
    out: dict[str, Any] = {}
    for backend in named:
        try:
            out[backend] = get_backend(backend).codegen
        except UnknownCompiler:
            continue
    return out


def partition(mod: IRModule, targets: Any, params: Any = None, *,
              entry: str = "main") -> IRModule:
    """``mod`` cut into regions for the BYOC backends ``targets`` (names: ``"ort"``,
    ``"xla"`` or registered with ``relay_ref.byoc.register_backend``), as TVM's
    MergeComposite -> AnnotateTarget -> MergeCompilerRegions -> PartitionGraph
    (spec/byoc.md): each region a global function with ``Compiler="<backend>"``, called
    from the host program. ``params`` binds weights first (they become constants, bound
    into the regions that use them). The result type-checks and computes what ``mod``
    computes; ``rr.compile`` hands each region to its backend's codegen. An unknown
    backend is a ``RelayError`` (``UnknownCompiler``) with a did-you-mean."""
    from relay_ref.byoc.partition import partition as _partition

    _require("partition", "mod", mod, IRModule, "an IRModule")
    return _partition(mod, targets, params, entry=entry)


def cuda_available() -> bool:
    """Whether ``rr.compile(..., target="cuda")`` can run here: a GPU numba.cuda can use,
    or numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1`` set before numba is imported).
    Never raises; without a device ``target="cuda"`` raises ``RelayError("no CUDA device:
    <why>")``."""
    from relay_ref.executor.cuda_plan import cuda_available as _available

    return _available()


def optimize(mod: IRModule, passes: Any, *, opt_level: int | None = None,
             required: Any = (), disabled: Any = ()) -> IRModule:
    """Type-check ``mod``, run ``passes`` in order and return the type-checked result.

    ``passes``: pass specs (names of registered passes, see ``pass_names()``, optionally
    with options: ``"FuseOps(max_depth=8)"``; a comma-separated string of them also works),
    configured pass objects (``FuseOps(max_depth=8)``) or any callables ``IRModule ->
    IRModule``. They run through the pass manager (``relay_ref.passes.manager.Pipeline``),
    the same pipeline ``relay opt`` and ``rr.compile`` use.

    Without ``opt_level`` every pass listed runs, whatever its own opt level
    (``optimize(m, ["PartialEvaluate"])`` partially evaluates, as ``relay opt --passes``
    does), except those named in ``disabled``. With ``opt_level=N`` TVM's
    ``Sequential``/``PassContext`` rule applies: a pass runs when its ``opt_level`` is at
    most N or it is named in ``required``, never when named in ``disabled`` (TVM's default
    context is N = 2, under which PartialEvaluate and EliminateCommonSubexpr, level 3, are
    skipped). A module that calls ``gradient`` has those calls expanded by the AD pass
    first (spec/ad.md AD-Grad-Op), as for ``rr.evaluate`` and ``rr.compile``.

    Errors: wrong argument types are ``TypeError`` and unknown pass names (in ``passes``,
    ``required`` or ``disabled``) or options ``ValueError``, each naming the argument (an
    unknown option names the pass's valid ones); the result of every pass is type-checked,
    as TVM runs InferType between passes, and a pass whose output does not type-check (or
    that returns something else than a module) is named in the ``RelayTypeError``
    (``TypeError``); a registered pass failing is an internal ``RelayError`` naming it."""
    from relay_ref.passes.manager import Pipeline

    _require("optimize", "mod", mod, IRModule, "an IRModule")
    # arguments first: a bad pass list is reported before the program is looked at
    pipeline = Pipeline(passes, opt_level, required, disabled, label="optimize")
    # AD-Grad-Op (spec/ad.md): gradient(f) calls are expanded first, as rr.evaluate and
    # rr.compile do, so no pass sees the operator (whose argument must stay a global or a
    # function literal, which lifting, fusion or A-normal form would not keep); the
    # globals the expansion made that the passes left unreachable are dropped at the end
    own = set(mod.functions)
    mod, _ = _expand_gradients(mod, {})
    generated = set(mod.functions) - own
    mod = pipeline(mod)
    if generated:
        from relay_ref.passes.gradient import drop_unreachable

        mod = drop_unreachable(mod, generated, own)
    return mod


def pass_names() -> list[str]:
    """The names of the registered passes (``relay opt --list`` shows them with their
    opt levels and guarantees)."""
    from relay_ref.passes import pass_names as _names

    return _names()


def register_packed(name: str, fn: Any, *, replace: bool = False) -> None:
    """Register ``fn`` as the packed function ``name`` for Relax's destination-passing calls
    ``call_dps_packed("name", (%x, ...), Tensor[(n, 4), float32])`` and ``call_tir`` (the
    interpreter and ``rr.compile`` alike; spec/semantics.md Shape-DPS).

    The call allocates the outputs from its output type (shape variables resolved in the
    calling function) and runs ``fn(*inputs, *outputs, *sym_args)``: ``inputs`` and
    ``outputs`` are NumPy arrays (the outputs zeroed, ``fn`` writes its results into them
    and returns nothing), ``sym_args`` the values of the shape variables ``fn`` asks for in
    a ``sym_args`` attribute (``fn.sym_args = ("n",)``; none when absent). ``fn`` may be a
    NumPy function or a numba ``@njit`` kernel. An unknown name at a call, or ``fn``
    raising, is a located ``RelayRuntimeError`` at the call.

    Registering another function under a name already taken is a ``ValueError`` unless
    ``replace=True``; a name that is not a non-empty str, or an ``fn`` that is not
    callable, is a ``TypeError``."""
    from relay_ref.ops.symbolic import register_packed as _register

    _register(name, fn, replace=replace)


def __getattr__(name: str) -> Any:
    if name in ("ConstructorValue", "Closure", "RecClosure", "RefValue"):
        from relay_ref.interpreter import values

        return getattr(values, name)
    raise AttributeError(f"module 'relay_ref' has no attribute {name!r}")
