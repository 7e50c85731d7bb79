"""Relay -> Python source, once per program (the executor's code generator).

Every function of the module (globals, local closures, recursive ``let``-bound functions)
becomes a Python ``def``; ``compile`` + ``exec`` turn the source into one Python module whose
namespace holds the constants, kernels, attributes and constructors the code refers to by
name. At run time there is no AST walk and no environment dictionary: a Relay variable is a
Python local (performance.md section 4: generated source runs recursion at ~1.1x plain
Python, closures built per node at ~10x, an AST walk at ~48x).

Invariants of the generated code (each is what a rule of spec/semantics.md requires):

* **Call-by-value, left to right** (E-App-*, E-Tuple, ...): every non-atomic sub-expression
  is computed by one statement ``tN = ...`` emitted in post-order, so effects (refs) and
  failures happen in the interpreter's order.
* **Sharing** (spec 2.3): a node reached through several edges is computed once per
  activation of its scope (``relay_ref.ir.sharing``): before the node that first enters a
  sub-scope using it (``anchored``: a closure's factory call, an ``if`` after its
  condition, a ``match`` after its scrutinee, a ``let``), or else at its first use, and
  reused. A closure factory receives the shared nodes of enclosing scopes its function uses
  (``captures``) as extra parameters. First computed in the function's top block, its
  variable dominates every later use. First computed inside a branch (of an ``if`` or a
  ``match`` clause), it gets a variable set to ``_UNSET`` at the start of the activation
  and every use outside the block that computed it is guarded (``if s is _UNSET: s =
  ...``): computed once on each path, even when effectful (refs).
* **Closures** (E-Fn): a function literal with free variables is built by a module-level
  factory ``_mk_f(free...)`` whose parameters are the captured values, so a closure captures
  values, never a Python variable that changes later (the parameters of a loop below). A
  function literal without free variables is one module-level ``def``.
* **Recursion** (E-Let-Rec, E-App-Rec): a recursive ``let`` binds the inner ``def``'s own name
  in its factory's scope. A call of the enclosing function itself in tail position (a global
  calling itself, a recursive local calling itself) assigns the parameters and ``continue``s
  a loop, ``while True: for _ in _c:``: self tail calls are loops.
* **Depth** (Stuck-Depth, spec/semantics.md 4 and 6): the depth of an activation is what the
  interpreter counts, the nested function applications: here the generated frames on the
  stack, each with the self tail calls its loop made (``tail_calls``). A loop runs only the
  iterations granted to it: ``_c`` is ``itertools.repeat(None, n)`` (a ``for`` over it costs
  ~4 ns an iteration, a counter and a comparison ~20), ``_t`` the iterations granted so far.
  When ``_c`` runs out, ``_loop_limit`` (``DepthLimit``) reads the real depth from the stack
  and raises ``TooDeep`` at the self tail call (``_s`` says which, when there are several),
  or grants exactly the iterations left below ``max_depth``. Nested calls are bounded by one
  of two means, fixed per program by ``max_depth`` (``counts_calls``):
  - a bound of at least ``deepstack.RECURSION_LIMIT - FRAME_SLACK`` (the default 10^6) costs
    nothing per call: Python's recursion limit, which the executable sets to ``max_depth +
    FRAME_SLACK`` frames, bounds nested calls, and ``relay_ref.executor.errors`` reports the
    ``RecursionError`` as the interpreter's error at the call of depth ``max_depth + 1``; a
    loop's first grant is ``LOOP_CHECK`` iterations (it reads the stack once it runs longer);
  - a lower bound is counted: each function keeps the depth in ``_DEPTH.d`` (a thread-local
    of the namespace), refuses its activation on entry past ``max_depth`` (``TooDeep`` at the
    caller's call), restores the count before each ``return``, and its loop gets the exact
    grant at once and counts each iteration in ``_DEPTH.d``.
* **Scalars** (``relay_ref.executor.scalars``): a 0-d ``int32`` is a Python ``int``, a 0-d
  ``bool`` a Python ``bool``, other 0-d tensors NumPy scalars (``values.py`` converts at the
  boundaries). Operator calls on 0-d operands that have a fast path (arithmetic, division,
  shifts, bitwise, comparisons, ``where``, ``cast`` between ``int32`` and ``bool``; for
  other dtypes ``+ - *`` and comparisons, which NumPy scalars compute as the reference),
  single or a whole fused group of them, are Python statements: ``t = a + b`` followed, for
  an ``int32`` whose operands' intervals do not keep it in range, by the wrap-around check.
  Intervals come from constants, from earlier results, and from the conditions of the
  enclosing ``if`` branches (``if n < 2 ... else`` bounds ``n - 1``). A condition that is one
  such comparison, used only there, is tested in the ``if`` line itself. A 0-d ``int32``
  or ``bool`` argument of a kernel step is passed as a 0-d array of its dtype.
* **Regions** (spec/byoc.md BYOC-Extern): a ``Compiler`` global built by its backend's
  codegen is no generated body: each call of it is one runtime step (kind ``"extern"``)
  calling the built callable, and the global itself is a ``def`` doing the same.
* **Operators** run through the plan of their fused group (``relay_ref.executor.groups``):
  a generated numba kernel, the op's ``kernels["cpu"]``, or its NumPy reference; nothing
  falls back to the interpreter.
* **Casts** (Stuck-Cast, spec/semantics.md 4): at each cast point the checker recorded
  (``IRModule.casts``: T-App arguments, T-Fn results, T-Let values, the else-branch of a
  T-If, a T-Match clause, a T-WriteRef value, a T-Rel result) the value goes through
  ``_cast(value, K)`` (``relay_ref.interpreter.casts.cast_value`` on the compiled value
  representation; ``_cast(value, K, _e)`` when the target mentions shape variables: checked
  at the activation's values, Shape-Bind), on a line of its own carrying the cast's span
  (or, for a point the checker recorded after fusion, the checked expression's). A program
  without cast points (no ``?`` met a known dimension) generates exactly the code it did
  before.
* **Errors**: every emitted line that can fail is recorded in ``line_spans`` with the span of
  the Relay expression it computes; ``relay_ref.executor.errors`` maps a failing traceback
  back to that span and to the Relay call stack (frames of generated functions).
"""

from __future__ import annotations

import itertools
import keyword
import operator
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import numpy as np

from relay_ref.executor import scalars as _sc
from relay_ref.executor import shapes as _shapes
from relay_ref.executor.groups import Unplannable
from relay_ref.executor.liveness import releasable
from relay_ref.executor.memory import writer_step
from relay_ref.executor.runtime import Site, site_call
from relay_ref.executor.shapes import ShapeMismatch
from relay_ref.interpreter.casts import cast_value
from relay_ref.interpreter.values import ConstructorValue, RefValue
from relay_ref.ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.sharing import module_sharing_plan
from relay_ref.ir.span import Span
from relay_ref.ir.types import (
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    subterms,
)
from relay_ref.ir.visitor import free_vars, post_order, shared_nodes
from relay_ref.ops.symbolic import SYMBOLIC_OPS  # the Relax constructs run here themselves

__all__ = ["FRAME_SLACK", "LOOP_CHECK", "FunctionInfo", "GeneratedModule", "MatchFailure",
           "TooDeep", "counts_calls", "generate", "recursion_in_python"]

#: Self tail calls a loop makes before it reads its activation's depth from the stack (see
#: Depth in the module docstring).
LOOP_CHECK = 1024
#: Python frames a run may use beyond one per nested Relay call (the run's own frames, a
#: kernel's, numba compiling one): with Python's recursion limit as the depth bound it is
#: set to ``max_depth + FRAME_SLACK``.
FRAME_SLACK = 10_000


def counts_calls(max_depth: int) -> bool:
    """Whether code compiled for ``max_depth`` counts nested calls itself: Python's
    recursion limit, never lowered below ``deepstack.RECURSION_LIMIT`` while a deep run is
    going on, bounds them only for a limit that high."""
    from relay_ref.deepstack import RECURSION_LIMIT

    return max_depth + FRAME_SLACK < RECURSION_LIMIT


_UNSET = object()  # a lazy shared node not computed yet in this activation
#: atoms that are Python literals: unit, bools, int32 constants (``_FunctionGen.constant``)
_LITERAL = re.compile(r"\(\)|True|False|\d+|\(-\d+\)")


class TooDeep(Exception):
    """Stuck-Depth in generated code; ``at_call``: raised on entry of the function whose
    call would be too deep (the error is the caller's call, as the interpreter locates it),
    else by a loop refused its next iteration at the self tail call ``site``."""

    def __init__(self, at_call: bool, site: Span | None = None) -> None:
        super().__init__("recursion too deep")
        self.at_call = at_call
        self.site = site


class _Depth(threading.local):
    """The depth of the running activation, per thread (counted code only)."""

    d = 0


def tail_calls(frame: FrameType) -> int:
    """The self tail calls the looping activation of ``frame`` has made (its iterations
    begun, less the first): the iterations granted (``_t``) less those its iterator
    (``_c``) has left."""
    local = frame.f_locals
    if "_c" not in local:  # stopped in its prologue (a RecursionError): none yet
        return 0
    return local["_t"] - operator.length_hint(local["_c"]) - 1


class DepthLimit:
    """``_loop_limit`` of the generated namespace: called by a loop whose iterator ran out
    (it was granted ``t`` iterations and a self tail call asks for one more), it reads the
    depth of the looping activation from the stack (the generated frames below it, down to
    the first frame that is not one, each with its ``tail_calls``), raises ``TooDeep`` at
    the self tail call ``site`` (its index) when that call is too deep, else grants the
    iterations left to the activation: ``(t + n, an iterator of n)``, exactly as many as
    keep it within ``max_depth`` (the frames below do not change meanwhile)."""

    def __init__(self, generated: GeneratedModule, max_depth: int) -> None:
        self.generated = generated
        self.max_depth = max_depth

    def __call__(self, t: int, site: int = 0) -> tuple[int, Any]:
        gen, limit = self.generated, self.max_depth
        functions, loops, filename = gen.functions, gen.loops, gen.filename
        looping = sys._getframe(1)
        depth = 1 + t  # the activation's first iteration, then the ``t``-th tail call
        frame = looping.f_back
        while frame is not None and depth <= limit:
            code = frame.f_code
            if code.co_filename != filename or code.co_name not in functions:
                break  # the run's boundary (the executable calling in, a host closure)
            depth += 1 + (tail_calls(frame) if code.co_name in loops else 0)
            frame = frame.f_back
        if depth > limit:
            raise TooDeep(False, loops[looping.f_code.co_name][site])
        n = limit - depth + 1
        return t + n, itertools.repeat(None, n)


def recursion_in_python(mod: IRModule, entry: str) -> bool:
    """Whether every nested call a run of ``@entry`` makes is a Python function calling a
    Python function (generated ``def``s, closures of factories, operator and constructor
    wrappers), which CPython 3.11+ runs without growing the C stack: no cast points (a cast
    wraps function values in proxies) and no function value can come in from outside (the
    entry's parameter types hold no function type, type variable or unknown type, also in
    the ADTs they name; a host closure runs the interpreter). Deep runs of such code need
    the recursion limit raised, not a big-stack thread (``Executable``)."""
    if sys.version_info < (3, 11) or getattr(mod, "casts", None) is not None:
        return False
    func = mod.functions.get(entry)
    if func is None:
        return False
    types = mod.checked_types
    stack: list[Type | None] = [types.get(p) or p.type_annotation for p in func.params]
    adts: list[str] = []  # ADTs whose constructors' fields are still to look at
    seen: set[str] = set()
    while stack or adts:
        if not stack:
            td = mod.type_definitions[adts.pop()]
            for ctor in td.constructors:  # type parameters stand for checked arguments
                for x in subterms(*ctor.inputs):
                    if type(x) is FuncType:
                        return False
                    if type(x) is TypeCall and type(x.func) is GlobalTypeVar and \
                            x.func.name in mod.type_definitions and x.func.name not in seen:
                        seen.add(x.func.name)
                        adts.append(x.func.name)
            continue
        t = stack.pop()
        kind = type(t)
        if kind is TensorType:
            continue
        if kind is TupleType:
            stack.extend(t.fields)
        elif kind is RefType:
            stack.append(t.value)
        elif kind is TypeCall and type(t.func) is GlobalTypeVar and \
                t.func.name in mod.type_definitions:
            stack.extend(t.args)
            if t.func.name not in seen:
                seen.add(t.func.name)
                adts.append(t.func.name)
        else:  # a function, a type variable, an unknown type: maybe a host closure
            return False
    return True


class MatchFailure(Exception):
    """No clause of a ``match`` matched (E-Match-Fail); ``value`` is the scrutinee."""

    def __init__(self, value: object) -> None:
        super().__init__("no match clause matched")
        self.value = value


@dataclass(frozen=True, slots=True)
class FunctionInfo:
    """What the executor needs to turn a generated Python function back into a Relay
    closure: the Relay function, the Relay variables behind the factory's captured names
    (``co_freevars`` of the inner ``def``), the recursive variable, the global's name."""

    func: Function
    captured: dict[str, Expr]  # a Var, or a shared node the closure captures (E-Shared)
    rec_var: Var | None = None
    global_name: str | None = None


@dataclass(slots=True)
class GeneratedModule:
    """The generated source and what it refers to. ``namespace`` is filled before ``exec``;
    ``line_spans`` maps a line of ``source`` to the Relay span it computes; ``functions``
    maps a generated code object's name to its ``FunctionInfo``; ``groups`` lists the fused
    groups planned (for ``exe.plan``)."""

    source: str
    namespace: dict[str, Any]
    line_spans: dict[int, Span]
    functions: dict[str, FunctionInfo]
    globals: dict[str, str]
    groups: list[Any] = field(default_factory=list)
    line_ops: dict[int, str] = field(default_factory=dict)
    #: fused kernel name -> (op name -> span of its call in the group), for errors
    op_spans: dict[str, dict[str, Span]] = field(default_factory=dict)
    #: ids of the constant tensors the code refers to (kept alive by ``namespace``)
    constants: set[int] = field(default_factory=set)
    filename: str = "<relay-executable>"
    #: Stuck-Depth's bound, and whether nested calls are counted (``counts_calls``)
    max_depth: int = 1_000_000
    counted: bool = False
    #: generated functions with a self tail call loop -> the span of each self tail call
    loops: dict[str, list[Span | None]] = field(default_factory=dict)
    #: every kernel step of the program (``relay_ref.executor.runtime.Site``), index order
    sites: list[Any] = field(default_factory=list)
    #: ``_release`` statements emitted (each runs once per activation of its function)
    releases: int = 0
    #: indices of the sites whose value is released (wherever the site runs: runtime.py)
    released: set[int] = field(default_factory=set)
    #: indices of the sites whose value a later step of its group overwrites in place (its
    #: ``out``): read only as kernel arguments before that, never after (a DTR runtime
    #: may hand it out as a handle and drop it at the overwriting step)
    overwritten: set[int] = field(default_factory=set)


_SCALAR_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                            "uint64", "float16", "float32", "float64", "bool"})


def _identifier(hint: str) -> str:
    """A Python identifier fragment from a Relay name hint."""
    name = re.sub(r"\W", "_", hint) or "v"
    if name[0].isdigit():
        name = "v" + name
    return name[:24]


class _Emitter:
    """Lines of one function body with indentation, and the spans of the lines that compute
    a Relay expression (body-relative line numbers, 1-based)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.spans: list[tuple[int, Span]] = []
        self.ops: list[tuple[int, str]] = []
        self.depth = 0

    def emit(self, text: str, span: Span | None = None, op: str = "") -> None:
        """Add a line; ``span``: the Relay expression it computes, ``op``: the operator
        it runs (named in run-time errors, as the interpreter names it)."""
        self.lines.append("    " * self.depth + text)
        if span is not None:
            self.spans.append((len(self.lines), span))
        if op:
            self.ops.append((len(self.lines), op))


class _Generator:
    """Generates the module: global functions, factories of local functions, namespace."""

    def __init__(self, mod: IRModule, group_planner: Callable[..., Any],
                 max_depth: int) -> None:
        self.mod = mod
        self.types = mod.checked_types
        self.group_planner = group_planner
        self.lines: list[str] = []
        counted = counts_calls(max_depth)
        self.out = GeneratedModule("", {"_np": np, "_CV": ConstructorValue, "_Ref": RefValue,
                                        "_MatchFailure": MatchFailure, "_UNSET": _UNSET,
                                        "_I32": np.dtype(np.int32),
                                        "_new_cv": ConstructorValue.__new__, **_sc.HELPERS},
                                   {}, {}, {}, max_depth=max_depth, counted=counted)
        self.out.namespace.update(_MAXD=max_depth, _LOOP0=min(LOOP_CHECK, max_depth),
                                  _TooDeep=TooDeep, _repeat=itertools.repeat,
                                  _loop_limit=DepthLimit(self.out, max_depth))
        if counted:
            self.out.namespace["_DEPTH"] = _Depth()
        #: nodes with several incoming edges (spec 2.3), as the interpreter counts them
        self.shared = shared_nodes(mod)
        #: E-Shared (spec 2.3, 3.18): where a shared node is computed when that is not its
        #: first use (``relay_ref.ir.sharing``): before a node entering a sub-scope
        #: (``anchors``), and which closures capture it (``captures``)
        plan = module_sharing_plan(mod)
        self.anchors = plan.anchors
        self.captures = plan.captures
        self.interned: dict[int, str] = {}
        self.counter = 0
        # one walk over all types, shared subterms once: linear in the program's size
        self.check_shapes = any(type(t) is TensorType and any(type(d) is not int for d in t.shape)
                                for t in subterms(*filter(None, self.types.values())))
        #: group call -> its slot in the memory plan (``allocate`` is asked for it)
        self.slots: dict[Call, int] = {}
        self.plans_allocation = False
        self.out.namespace["_check_shape"] = _check_shape
        # Shape-Bind / Shape-MatchCast / Shape-DPS (relay_ref.executor.shapes): functions
        # whose parameters have shape variables, or that run the symbolic ops, keep a
        # shape environment ``_e`` per activation
        self.out.namespace.update(_bind_param=_shapes.bind_param,
                                  _match_cast=_shapes.match_cast, _shapes=_no_shapes,
                                  _check_result=_shapes.check_result_shape)
        self.symbolic_ops = any(type(n) is Call and type(n.op) is Op and n.op.name in SYMBOLIC_OPS
                                for f in mod.functions.values() for n in post_order(f))
        #: the entry function's name and whether the runtime's ``shapes`` hook is called on
        #: its entry (a memory plan with symbolic sizes: ``relay_ref.executor.memory``)
        self.entry: str | None = None
        self.shape_hook = False
        #: whether the entry checks ``rr.compile(shape_bounds=...)`` (``_bounds(_e)``)
        self.bounds = False
        #: the checker's cast points (typecheck/casts.py), None when there are none
        self.casts: Any = getattr(mod, "casts", None)
        if self.casts is not None:
            memo: dict = {}  # casts.CastMemo, emptied after each call (executable.py)

            def cast(value: Any, point: Any, env: Any = None, mod: IRModule = mod) -> Any:
                # Shape-Bind: ``env`` (the activation's ``_e``) gives the target's shape
                # variables their values; without it they would be ``?`` (never checked)
                return cast_value(value, point, mod, None, True, memo, shape_env=env)

            self.out.namespace["_cast"] = cast
            self.out.namespace["_cast_memo"] = memo
        #: regions run by external callables (BYOC-Extern): global name -> its built
        #: region (``relay_ref.executor.externs.Extern``)
        self.externs: dict[str, Any] = {}
        #: memo tables of one generation: free variables of function literals, groups
        #: that cannot be planned (-> why), each group's ``run_args``
        self.free: dict[Function, list[Var]] = {}
        self.unplannable: dict[Function, str] = {}
        self.group_args: dict[Function, frozenset[int] | None] = {}

    def free_vars(self, fn: Function) -> list[Var]:
        """``free_vars(fn)``, once per function literal in this generation (a function is
        asked about by its enclosing function's liveness and when its closure is built)."""
        known = self.free.get(fn)
        if known is None:
            known = self.free[fn] = free_vars(fn)
        return known

    def plan(self, prim: Function) -> Any:
        """The group planner's plan of ``prim``; ``Unplannable`` (remembered) when the
        group runs as an ordinary function call."""
        if prim in self.unplannable:
            raise Unplannable(self.unplannable[prim])
        try:
            return self.group_planner.plan(prim)
        except Unplannable as err:
            self.unplannable[prim] = str(err)
            raise

    def run_args(self, call: Call) -> frozenset[int] | None:
        """``liveness.RunArgs``: for a call of an operator or group, None when no kernel
        step computes it (a scalar fast path, an unplannable group, a symbolic op), else the
        positions of the arguments the generated code passes as they are to ``_run`` and
        reads in no other way (``op_call``, ``group_call``)."""
        op = call.op
        if (type(op) is Op and op.name in SYMBOLIC_OPS) or \
                (type(op) is Function and _symbolic_group(op) is not None):
            return None
        if type(op) is Op:
            if _sc.fast_path(op.name, call.attrs, [self.types.get(a) for a in call.args]):
                return None
            return frozenset(range(len(call.args)))
        known = self.group_args.get(op, False)
        if known is not False:
            return known  # type: ignore[return-value]
        positions: frozenset[int] | None = None
        if _scalar_group(op, self.types) is None:
            try:
                plan = self.plan(op)
            except Unplannable:
                pass
            else:
                positions = _group_run_args(op, plan, self.types)
        self.group_args[op] = positions
        return positions

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def intern(self, obj: object, prefix: str) -> str:
        """A namespace name bound to ``obj`` (one per object)."""
        name = self.interned.get(id(obj))
        if name is None:
            name = self.interned[id(obj)] = self.fresh(prefix)
            self.out.namespace[name] = obj
        return name

    def site(self, kind: str, group: str, label: str, fn: Any, attrs: object,
             ty: Type | None, slot: int, span: Span | None) -> str:
        """The namespace name of a new ``Site`` (one kernel step of the program)."""
        shape = dtype = None
        if type(ty) is TensorType and all(type(d) is int for d in ty.shape):
            shape, dtype = tuple(ty.shape), ty.dtype
        site = Site(len(self.out.sites), kind, group, label, site_call(kind, fn, attrs),
                    shape, dtype, slot, bool(getattr(fn, "returns_view", False)), span)
        self.out.sites.append(site)
        name = f"S{site.index}"
        self.out.namespace[name] = site
        return name

    def extern_site(self, name: str, span: Span | None, ty: Type | None) -> str:
        """A new ``Site`` of kind ``"extern"`` running region ``@name``'s built callable
        (its group the backend, its label the region: ``profile=True`` lists it)."""
        ext = self.externs[name]
        return self.site("extern", ext.backend, name, ext.site_fn(span, ty), None, ty, -1,
                         span)

    def extern_def(self, name: str, func: Function, py: str) -> None:
        """Region ``@name`` (BYOC-Extern) as a ``def`` calling its built callable through
        the runtime seam: what a reference to the global as a value runs (a direct call
        runs the callable at the call's own line: ``_FunctionGen.call``)."""
        params = [f"a{k}" for k in range(len(func.params))]
        site = self.extern_site(name, func.span, self.types.get(func.body))
        self.lines.append(f"def {py}({', '.join(params)}):")
        args = [f"_np.asarray({a}, _I32)" if _sc.is_int32(self.types.get(p) or
                                                            p.type_annotation) else a
                for a, p in zip(params, func.params, strict=True)]
        self.lines.append(f"    return _run({site}, [{', '.join(args)}], None)")
        if func.span is not None:
            self.out.line_spans[len(self.lines)] = func.span
        self.lines.append("")
        self.out.functions[py] = FunctionInfo(func, {}, None, name)

    def constant_array(self, data: Any) -> str:
        """The namespace name of the constant tensor ``data``, recorded in
        ``GeneratedModule.constants``: the executable copies a result that is (a view of)
        one before handing it out. (Not a read-only view: numba compiles read-only arrays
        as another type, a second specialisation of every kernel they reach.)"""
        name = self.interned.get(id(data))
        if name is None:
            name = self.intern(data, "C")
            base = data
            while base is not None:  # NumPy makes a view's ``base`` the memory's owner
                self.out.constants.add(id(base))
                base = getattr(base, "base", None)
        return name

    def global_name(self, name: str) -> str:
        py = self.out.globals.get(name)
        if py is None:
            py = self.out.globals[name] = f"g_{_identifier(name)}_{len(self.out.globals)}"
        return py

    def run(self) -> GeneratedModule:
        for name, func in self.mod.functions.items():
            py = self.global_name(name)
            if name in self.externs:
                self.extern_def(name, func, py)
                continue
            _FunctionGen(self, func, py, (), None, name).generate(self.lines)
        self.out.source = "\n".join(self.lines) + "\n"
        return self.out


class _FunctionGen:
    """Generates one Relay function as ``def name(params)`` (plus, for a closure, the
    factory around it); nested function literals become factories of their own."""

    def __init__(self, gen: _Generator, func: Function, py_name: str, captured: tuple[Var, ...],
                 rec_var: Var | None, global_name: str | None,
                 captured_nodes: tuple[Expr, ...] = (), outer_env: bool = False) -> None:
        self.gen = gen
        #: Shape-Bind: a closure made where a shape environment exists sees it (a snapshot
        #: taken when the closure is made, the factory's ``_eo``), as the interpreter's
        #: closures capture their frame's (lexical scope, spec T-ShapeScope)
        self.outer_env = outer_env
        self.env = False
        self.scoped = False
        self.func = func
        self.py_name = py_name
        self.captured = captured
        #: shared nodes of enclosing scopes the closure captures (E-Shared, spec 2.3)
        self.captured_nodes = captured_nodes
        self.rec_var = rec_var
        self.global_name = global_name
        self.names: dict[Var, str] = {}
        self.scopes: list[dict[Expr, str]] = [{}]
        #: int32 intervals known in each block of ``scopes`` (relay_ref.executor.scalars)
        self.ivs: list[dict[Expr, _sc.Interval]] = [{}]
        #: pure scalar expressions returned as atoms (``scalar_step``), and the unit value
        self.inlined: set[str] = {"()"}
        #: shared nodes computed under a guard (``lazy_value``): node -> variable
        self.lazy: dict[Expr, str] = {}
        self.loop = False  # whether a self tail call was emitted (the body is a loop)
        #: each self tail call's span, and the line (of ``em``) recording which one it is
        self.tail_sites: list[tuple[Span | None, int]] = []
        #: value node -> the site whose result it is (a kernel step's value)
        self.produced: dict[Expr, str] = {}
        #: a call node -> the releasable values it reads (``liveness``), and each such
        #: value's readers not emitted yet (-1: one was emitted outside the top block):
        #: released after the last (runtime.py's release contract)
        self.reads: dict[Expr, list[Expr]] = {}
        self.pending: dict[Expr, int] = {}
        for v, users in releasable(func, gen.run_args, gen.free_vars).items():
            self.pending[v] = len(users)
            for u in users:
                self.reads.setdefault(u, []).append(v)

    # -- naming ---------------------------------------------------------------------------
    def bind(self, var: Var) -> str:
        name = self.names.get(var)
        if name is None:
            # ``v_`` starts no other generated name (globals ``g_``, closures ``f_``,
            # temporaries ``t``, namespace entries in capitals): no collisions
            name = self.names[var] = self.gen.fresh(f"v_{_identifier(var.name_hint)}_")
            if keyword.iskeyword(name):  # pragma: no cover - fresh names end in digits
                name += "_"
        return name

    def lookup(self, node: Expr) -> str | None:
        for scope in reversed(self.scopes):
            name = scope.get(node)
            if name is not None:
                return name
        return None

    # -- the function -----------------------------------------------------------------------
    def generate(self, lines: list[str]) -> None:
        em = self.em = _Emitter()
        params = [self.bind(p) for p in self.func.params]
        for v in self.captured:
            self.bind(v)
        node_names = [self.gen.fresh("c") for _ in self.captured_nodes]
        self.scopes[0].update(zip(self.captured_nodes, node_names, strict=True))
        self_name = self.py_name
        if self.rec_var is not None:
            self.names[self.rec_var] = self_name
        closure = bool(self.captured) or bool(node_names) or self.rec_var is not None \
            or self.outer_env
        base = 2 if closure else 1
        # The body is generated inside ``while True: for _ in _c:`` (two levels deeper);
        # the loops are dropped, and the body dedented, when no self tail call came.
        em.depth = base + 2
        if self.gen.check_shapes:
            for p in self.func.params:
                if _static_annotation(p.type_annotation):
                    note = self.gen.intern(p.type_annotation, "T")
                    em.emit(f"_check_shape({self.names[p]}, {note}, {p.name_hint!r}, True)",
                            p.span)
        self.shape_prologue()
        self.compile_to(self.func.body, ("return", None))
        captured: dict[str, Expr] = {self.names[v]: v for v in self.captured}
        captured.update(zip(node_names, self.captured_nodes, strict=True))
        self.gen.out.functions[self_name] = FunctionInfo(
            self.func, captured, self.rec_var, self.global_name)
        header: list[str] = []
        if closure:
            free = ", ".join([*captured, "_eo"] if self.outer_env else captured)
            header.append(f"def _mk_{self_name}({free}):")
            header.append(f"    def {self_name}({', '.join(params)}):")
            if free:  # every captured value is a cell of the closure (values.py reads them)
                header.append(f"        if False: ({free},)")
            tail = [f"    return {self_name}"]
        else:
            header.append(f"def {self_name}({', '.join(params)}):")
            tail = []
        header.extend("    " * base + line for line in self.depth_prologue())
        # each activation (loop iteration) starts with its lazy shared nodes unset
        preamble = ["    " * (base + 2) + f"{name} = _UNSET" for name in self.lazy.values()]
        body = preamble + em.lines
        if self.loop:
            sites = [span for span, _ in self.tail_sites]
            self.gen.out.loops[self_name] = sites
            if len(sites) == 1:  # no need to record which self tail call it was
                k = self.tail_sites[0][1] - 1
                em.lines[k] = em.lines[k].replace("_s = 0", "# the self tail call")
                body = preamble + em.lines
            header.append("    " * base + "while True:")
            header.append("    " * base + "    for _ in _c:")
            limit = "_loop_limit(_t, _s)" if len(sites) > 1 else "_loop_limit(_t)"
            body.append("    " * base + f"    _t, _c = {limit}")
            self.gen.out.line_spans[len(lines) + len(header) + len(body)] = sites[0]
        else:
            body = [line[8:] for line in body]
        offset = len(lines) + len(header) + len(preamble)
        for k, span in em.spans:
            self.gen.out.line_spans[offset + k] = span
        for k, op in em.ops:
            self.gen.out.line_ops[offset + k] = op
        lines.extend(header)
        lines.extend(body)
        lines.extend(tail)
        lines.append("")

    def shape_prologue(self) -> None:
        """Shape-Bind (``relay_ref.executor.shapes``): the activation's shape environment
        ``_e``, bound from the parameters whose types mention shape variables (in order,
        each on a line located at the parameter); at the entry, the runtime told (its
        memory plan's symbolic sizes)."""
        binds = [p for p in self.func.params if _shapes.has_shape_vars(p.type_annotation)]
        ops = {n.op.name for n in post_order(self.func.body) if type(n) is Call and
               type(n.op) is Op and n.op.name in SYMBOLIC_OPS} if self.gen.symbolic_ops else ()
        grows = bool(binds) or bool(ops)
        #: Shape-MatchCast: the variables a branch of ``if`` / a clause of ``match`` binds
        #: are its own (T-ShapeScope): ``_e`` is saved before and put back after
        self.scoped = "match_cast" in ops
        self.env = grows or self.outer_env
        if not self.env:
            return
        em = self.em
        if not self.outer_env:
            em.emit("_e = {}")
        else:  # the snapshot is shared by the closure's activations: copied if extended
            em.emit("_e = dict(_eo)" if grows else "_e = _eo")
        if binds:  # all parameters at once: bare variables first, then the rest checked
            binder = self.gen.intern(_shapes.params_binder(
                tuple((p.name_hint, p.type_annotation, p.span) for p in binds),
                self.callee_text()), "B")
            em.emit(f"{binder}(_e, {', '.join(self.names[p] for p in binds)})", binds[0].span)
        if self.gen.bounds and binds and self.global_name == self.gen.entry:
            em.emit("_bounds(_e)")  # the bounds are promises: checked before any step
        if self.gen.shape_hook and self.global_name == self.gen.entry:
            em.emit("_shapes(_e)", self.func.span)

    def symbolic_op(self, call: Call, args: list[str]) -> str:
        """``match_cast`` (Shape-MatchCast), ``call_dps_packed`` / ``call_tir`` (Shape-DPS,
        one runtime step on the inputs and ``_e``) and ``dataflow`` (its body's value)."""
        name = call.op.name
        if name == "dataflow":
            return args[0]
        out = self.gen.fresh("t")
        if name == "match_cast":
            note = self.gen.intern(call.attrs.type, "T")
            arg = self.kernel_arg(args[0], self.gen.types.get(call.args[0]))
            self.em.emit(f"{out} = _match_cast({arg}, {note}, _e)", call.span, name)
            return out
        site = self.gen.site("single", name, call.attrs.func_name,
                             _shapes.dps_step(name, call.attrs), None,
                             self.gen.types.get(call), -1, call.span)
        arg = self.kernel_arg(args[0], self.gen.types.get(call.args[0]))
        self.em.emit(f"{out} = _run({site}, [{arg}, _e], None)", call.span, name)
        return out

    def save_env(self) -> str | None:
        """Before an ``if`` / ``match`` in a function running ``match_cast``: a copy of
        ``_e`` (the branch extends ``_e`` itself), its name; None otherwise."""
        if not self.scoped:
            return None
        saved = self.gen.fresh("_es")
        self.em.emit(f"{saved} = dict(_e)")
        return saved

    def restore_env(self, saved: str | None, dest: tuple[str, str | None]) -> None:
        """After the ``if`` / ``match`` (when code follows it): ``_e`` as it was before."""
        if saved is not None and dest[0] != "return":
            self.em.emit(f"_e = {saved}")

    def body_span(self) -> Span | None:
        """Where a failure of the function's result is (the interpreter: its body)."""
        return _expr_span(self.func.body) or self.func.span

    def callee_text(self) -> str:
        """How messages name this function (as the interpreter's ``_callee``)."""
        return f"@{self.global_name}" if self.global_name is not None else "a function"

    def depth_prologue(self) -> list[str]:
        """The activation's depth bookkeeping, before its loop (Depth in the module
        docstring). Counted: the depth checked (Stuck-Depth, as E-App-Closure checks it
        before binding the parameters) and recorded. With a loop: ``_t`` iterations
        granted, ``_c`` the iterator granting them (``_s``: the self tail call taken)."""
        lines = []
        if self.gen.out.counted:
            lines += ["_b = _DEPTH.d",
                      "if _b >= _MAXD: raise _TooDeep(True)",
                      "_DEPTH.d = _b + 1"]
        if self.loop:
            lines += ["_t = _MAXD - _b" if self.gen.out.counted else "_t = _LOOP0",
                      "_c = _repeat(None, _t)"]
        return lines

    # -- expressions to atoms -----------------------------------------------------------------
    def value(self, e: Expr) -> str:
        """A Python expression (a name or a literal) holding the value of ``e``; statements
        computing it are emitted first."""
        kind = type(e)
        if kind is Var:
            name = self.names.get(e)
            if name is None:
                raise _Unsupported(f"unbound variable %{e.name_hint}")
            return name
        if kind is Constant:
            return self.constant(e)
        if kind is GlobalVar:
            return self.gen.global_name(e.name)
        if kind is Op:
            if self.gen.casts is not None and (point := self.gen.casts.at(e)) is not None:
                return self.cast(self.gen.intern(op_value(e.name), "O"), point)  # T-Rel's
            return self.gen.intern(op_value(e.name), "O")
        if kind is Constructor:
            return self.gen.intern(constructor_value(e), "CF")
        known = self.lookup(e)
        if known is not None:
            return known
        if e in self.lazy or (len(self.scopes) > 1 and e in self.gen.shared):
            return self.lazy_value(e)
        name = self.gen.fresh("t")
        if kind is If or kind is Match or kind is Let:
            self.compile_to(e, ("assign", name))
        elif kind is Function:
            self.emit_assign(name, self.function_value(e, None), e.span)
        else:
            code = self.code(e)
            if code.isidentifier() or code in self.inlined:  # already in a variable (a
                # group's last step), or a pure scalar expression used once (scalar_step)
                self.scopes[-1][e] = code
                if kind is Call:
                    self.release_dead(e)
                return code
            self.emit_assign(name, code, e.span)
        self.scopes[-1][e] = name
        if kind is Call:
            self.release_dead(e)
        return name

    def release_dead(self, user: Expr) -> None:
        """Release the kernel results ``user`` read last: when ``user`` is the last of
        their readers, and the value and every reader were computed in the function's top
        block (so each runs exactly once per activation, in this order)."""
        reads = self.reads.get(user)
        if not reads:
            return
        top = len(self.scopes) == 1
        for v in reads:
            left = self.pending[v]
            if left < 0:
                continue
            left = left - 1 if top else -1
            self.pending[v] = left
            if left:
                continue
            site = self.produced.get(v)
            name = self.lookup(v)
            if site is not None and name is not None:
                self.em.emit(f"_release({site}, {name})")
                self.gen.out.releases += 1
                self.gen.out.released.add(int(site[1:]))

    def lazy_value(self, e: Expr) -> str:
        """A shared node used in a block it does not dominate (a branch; or after a
        branch that may have computed it): computed on first use on each path (spec 2.3)
        through a variable set to ``_UNSET`` at the start of the activation."""
        name = self.lazy.get(e)
        if name is None:
            name = self.lazy[e] = self.gen.fresh("s")
        self.em.emit(f"if {name} is _UNSET:")
        self.em.depth += 1
        self.push_scope()
        kind = type(e)
        if kind is If or kind is Match or kind is Let:
            self.compile_to(e, ("assign", name))
        elif kind is Function:
            self.emit_assign(name, self.function_value(e, None), e.span)
        else:
            self.emit_assign(name, self.code(e), e.span)
        self.pop_scope()
        self.em.depth -= 1
        self.scopes[-1][e] = name  # set from here on in this block
        return name

    def emit_assign(self, name: str, code: str, span: Span | None) -> None:
        self.em.emit(f"{name} = {code}", span)

    def cast(self, atom: str, point: Any, into: str | None = None,
             span: Span | None = None) -> str:
        """Emit the check of cast point ``point`` (a ``Cast``) on ``atom``; the checked value
        (``into``, or a fresh variable) is returned. Stuck-Cast at the cast's span."""
        name = into or self.gen.fresh("t")
        env = ", _e" if self.env and _shapes.has_shape_vars(point.target) else ""
        self.em.emit(f"{name} = _cast({atom}, {self.gen.intern(point, 'K')}{env})",
                     point.span or span)
        return name

    def constant(self, e: Constant) -> str:
        data = e.data
        if data.ndim == 0 and data.dtype.name in ("int32", "bool"):
            v = data.item()  # a Python int / bool literal: see Scalars above
            return f"({v})" if v is not True and v is not False and v < 0 else repr(v)
        if data.ndim == 0 and data.dtype.name in _SCALAR_DTYPES:
            return self.gen.intern(data[()], "C")  # a NumPy scalar: see Scalars above
        return self.gen.constant_array(data)

    # -- scalars (relay_ref.executor.scalars) ------------------------------------------------
    def interval(self, e: Expr) -> _sc.Interval:
        """What is known of the int32 value of ``e`` here: a constant's value, the interval
        recorded when it was computed in an enclosing block, or narrowed by the conditions
        of the enclosing branches; else every int32."""
        if type(e) is Constant:
            v = int(e.data.item()) if e.data.ndim == 0 and e.data.dtype.kind in "iu" else None
            if v is not None and _sc.I32_MIN <= v <= _sc.I32_MAX:
                return (v, v)
            return _sc.FULL
        for known in reversed(self.ivs):
            iv = known.get(e)
            if iv is not None:
                return iv
        return _sc.FULL

    def push_scope(self, facts: dict[Expr, _sc.Interval] | None = None) -> None:
        """A nested block: its names and intervals (``facts``: what its condition says)."""
        self.scopes.append({})
        self.ivs.append(dict(facts) if facts else {})

    def pop_scope(self) -> None:
        self.scopes.pop()
        self.ivs.pop()

    def scalar_step(self, fast: _sc.Fast, atoms: list[str], ivs: list[_sc.Interval],
                    out: Type | None, span: Span | None, op: str,
                    inline: bool = False) -> tuple[str, _sc.Interval]:
        """Emit one fast path (``t = <code>`` and, for an int32 result its operands'
        intervals do not bound, the wrap-around check); its variable and interval.
        ``inline`` (a value used once): a result that needs no check and whose code cannot
        fail (no helper call) is returned as the parenthesised expression itself, computed
        where it is used: pure, on operands no statement in between reassigns."""
        code = fast.template.format(*atoms)
        raw = fast.interval(*ivs) if fast.interval is not None and _sc.is_int32(out) \
            else None
        name = self.gen.fresh("t")
        check = _sc.check_line(name, raw) if raw is not None else None
        iv = _sc.result_interval(raw) if raw is not None else _sc.FULL
        if inline and check is None and not fast.template.startswith("_"):
            self.inlined.add(f"({code})")
            return f"({code})", iv
        self.em.emit(f"{name} = {code}", span, op)
        if check is not None:
            self.em.emit(check)
        return name, iv

    def kernel_arg(self, atom: str, ty: Type | None) -> str:
        """``atom`` as a kernel takes it: a Python int (int32) or bool as a 0-d array."""
        if _sc.is_int32(ty):
            return f"_np.asarray({atom}, _I32)"
        if type(ty) is TensorType and ty.shape == () and ty.dtype == "bool":
            return f"_np.asarray({atom})"
        return atom

    def condition(self, cond: Expr) -> tuple[str, _sc.Fast, list[Expr]] | None:
        """A condition that is one scalar comparison: (the operator, its fast path, the
        operand expressions: the call's arguments, or constants of its group); None
        otherwise. Used to test it in the ``if`` itself and to narrow intervals."""
        if type(cond) is not Call:
            return None
        op = cond.op
        types = self.gen.types
        if type(op) is Op:
            if op.name not in _sc.COMPARISONS:
                return None
            fast = _sc.fast_path(op.name, cond.attrs, [types.get(a) for a in cond.args])
            return (op.name, fast, list(cond.args)) if fast is not None else None
        if type(op) is Function and op.attr("Primitive") is not None:
            body = op.body
            if type(body) is not Call or type(body.op) is not Op or \
                    body.op.name not in _sc.COMPARISONS:
                return None
            operands: list[Expr] = []
            for a in body.args:
                if type(a) is Var and a in op.params:
                    operands.append(cond.args[op.params.index(a)])
                elif type(a) is Constant and a.data.ndim == 0:
                    operands.append(a)
                else:
                    return None
            fast = _sc.fast_path(body.op.name, body.attrs, [types.get(a) for a in body.args])
            return (body.op.name, fast, operands) if fast is not None else None
        return None

    def facts(self, cond: Expr) -> tuple[dict[Expr, _sc.Interval], dict[Expr, _sc.Interval]]:
        """What an int32 comparison with a constant says of its other operand in the
        true and the false branch."""
        found = self.condition(cond)
        if found is None:
            return {}, {}
        name, _, (lhs, rhs) = found
        if not _sc.is_int32(self.gen.types.get(lhs)):
            return {}, {}
        if type(rhs) is Constant and type(lhs) is not Constant:
            x, op, c = lhs, name, rhs
        elif type(lhs) is Constant and type(rhs) is not Constant:
            x, op, c = rhs, _sc.MIRROR[name], lhs
        else:
            return {}, {}
        known, value = self.interval(x), self.interval(c)[0]
        return ({x: _sc.narrow(op, known, value, True)},
                {x: _sc.narrow(op, known, value, False)})

    def inline_condition(self, cond: Expr) -> str | None:
        """The code of ``cond`` to test in the ``if`` line itself, when it is one scalar
        comparison used only there (CPython then fuses the comparison with the jump);
        its operands are computed first. None: compute it as any value."""
        if cond in self.gen.shared or self.lookup(cond) is not None or cond in self.lazy \
                or self.reads.get(cond) or (self.gen.casts is not None
                                            and self.gen.casts.at(cond) is not None):
            return None
        found = self.condition(cond)
        if found is None:
            return None
        _, fast, operands = found
        if type(cond.op) is Function:
            args = {a: self.value(a) for a in cond.args}
        else:
            args = {}
        atoms = [args[a] if a in args else self.value(a) for a in operands]
        return fast.template.format(*atoms)

    def code(self, e: Expr) -> str:
        """Python code computing a non-atomic, non-control expression."""
        kind = type(e)
        if kind is Tuple:
            fields = [self.value(f) for f in e.fields]
            return "(" + "".join(f"{f}, " for f in fields) + ")"
        if kind is TupleGetItem:
            return f"{self.value(e.tuple_value)}[{e.index}]"
        if kind is RefCreate:
            return f"_Ref({self.value(e.value)})"
        if kind is RefRead:
            return f"{self.value(e.ref)}.value"
        if kind is RefWrite:
            ref = self.value(e.ref)
            val = self.value(e.value)
            if self.gen.casts is not None and (point := self.gen.casts.at(e)) is not None:
                val = self.cast(val, point)                           # T-WriteRef's cast
            self.em.emit(f"{ref}.value = {val}", e.span)
            return "()"
        if kind is Call:
            return self.call(e)
        raise _Unsupported(f"cannot compile {kind.__name__}")

    def call(self, e: Call) -> str:
        callee = e.op
        kind = type(callee)
        if kind is Op and callee.name in SYMBOLIC_OPS:
            return self.symbolic_op(e, [self.value(a) for a in e.args])
        if kind is Function and (inner := _symbolic_group(callee)) is not None:
            args = [self.value(a) for a in e.args]
            return self.symbolic_op(inner, [_group_operand(a, callee, args)
                                             for a in inner.args])
        if kind is Op:
            args = [self.value(a) for a in e.args]
            if self.gen.casts is not None and (point := self.gen.casts.at(e)) is not None:
                return self.cast(self.op_call(e, args), point)        # T-Rel's cast
            return self.op_call(e, args)
        if kind is Function and callee.attr("Primitive") is not None:
            args = [self.value(a) for a in e.args]
            try:
                return self.group_call(callee, args, e)
            except Unplannable:
                pass  # not dataflow of operators: run it as an ordinary function call
        if kind is GlobalVar and callee.name in self.gen.externs:
            return self.extern_call(e)
        if kind is Constructor:  # E-Ctor: the value built without a call of its __init__
            args = self.cast_args(e, [self.value(a) for a in e.args])
            ctor = self.gen.intern(callee, "K")
            name = self.gen.fresh("t")
            self.em.emit(f"{name} = _new_cv(_CV)")
            self.em.emit(f"{name}.constructor = {ctor}")
            self.em.emit(f"{name}.fields = ({''.join(a + ', ' for a in args)})")
            return name
        fn = self.value(callee)
        args = self.cast_args(e, [self.value(a) for a in e.args])
        return f"{fn}({', '.join(args)})"

    def extern_call(self, e: Call) -> str:
        """A call of a region (BYOC-Extern): its built callable through the runtime, on
        this line (a failure inside it is located at this call)."""
        args = self.cast_args(e, [self.value(a) for a in e.args])
        args = [self.kernel_arg(a, self.gen.types.get(x))
                for a, x in zip(args, e.args, strict=True)]
        site = self.gen.extern_site(e.op.name, e.span, self.gen.types.get(e))
        name = self.gen.fresh("t")
        self.em.emit(f"{name} = _run({site}, [{', '.join(args)}], None)", e.span)
        return name

    def cast_args(self, e: Call, args: list[str]) -> list[str]:
        """T-App's casts on the arguments of ``e`` (none: ``args`` unchanged)."""
        if self.gen.casts is None or (points := self.gen.casts.args(e)) is None:
            return args
        return [a if p is None else self.cast(a, p, None, _expr_span(x) or e.span)
                for a, p, x in zip(args, points, e.args, strict=False)]

    def op_call(self, e: Call, args: list[str]) -> str:
        """A single operator call outside a fused group (FuseOps left it, or did not run)."""
        types = self.gen.types
        fast = _sc.fast_path(e.op.name, e.attrs, [types.get(a) for a in e.args])
        if fast is not None:
            name, iv = self.scalar_step(fast, args, [self.interval(a) for a in e.args],
                                        types.get(e), e.span, e.op.name,
                                        e not in self.gen.shared)
            self.ivs[-1][e] = iv
            return name
        step = self.gen.group_planner.single_op(e)
        site = self.gen.site("single", e.op.name, e.op.name, step, None,
                             types.get(e), -1, e.span)
        name = self.gen.fresh("t")
        args = [self.kernel_arg(a, types.get(x)) for a, x in zip(args, e.args, strict=True)]
        self.em.emit(f"{name} = _run({site}, [{', '.join(args)}], None)", e.span, e.op.name)
        if len(self.scopes) == 1:  # computed in the top block (see release_dead)
            self.produced[e] = site
        return name

    def group_call(self, prim: Function, args: list[str], call: Call) -> str:
        """A fused group (one ``Primitive`` function): its planned steps on the inputs, each
        through the runtime (``relay_ref.executor.runtime``), or a Python operator when
        the group is one scalar operation (see Scalars above). A step value no later step
        of the group reads through a kernel is released after its last reader."""
        types = self.gen.types
        steps = _scalar_group(prim, types)
        if steps is not None:  # every op a fast path: Python statements, no kernel
            atoms: dict[Expr, str] = dict(zip(prim.params, args, strict=True))
            ivs = {p: self.interval(a) for p, a in zip(prim.params, call.args, strict=True)}
            for node, fast in steps:
                for a in node.args:
                    if type(a) is Constant and a not in atoms:
                        atoms[a], ivs[a] = self.constant(a), self.interval(a)
                atoms[node], ivs[node] = self.scalar_step(
                    fast, [atoms[a] for a in node.args], [ivs[a] for a in node.args],
                    types.get(node), node.span or call.span, node.op.name,
                    node is prim.body and call not in self.gen.shared)
            self.ivs[-1][call] = ivs[prim.body]
            return atoms[prim.body]
        plan = self.gen.plan(prim)
        self.gen.out.groups.append(plan)
        slot = self.gen.slots.get(call, -1)
        writer = writer_step(plan) if slot >= 0 else None
        vals = [(self.kernel_arg(a, types.get(p)) if _sc.is_int32(types.get(p)) else
                 f"_np.asarray({a})") if _is_zero_d(types.get(p)) else
                f"_tuple_arrays({a})" if _holds_python_scalars(types.get(p)) else a
                for a, p in zip(args, prim.params, strict=True)]
        steps = plan.steps
        n = plan.n_params
        last = len(steps) - 1
        # in-group liveness: step value -> the step reading it last, when only kernels
        # read it (a tuple or projection may carry it out of the group) and it is neither
        # the group's result nor overwritten in place
        last_reader: dict[int, int] = {}
        kept: set[int] = {n + last}
        for i, step in enumerate(steps):
            if step.out is not None:
                kept.add(step.out)
            for j in step.inputs:
                if j >= n:
                    if step.kind in ("op", "fused"):
                        last_reader[j] = i
                    else:
                        kept.add(j)
        release_at: dict[int, list[int]] = {}
        for j, i in last_reader.items():
            if j not in kept and steps[j - n].kind in ("op", "fused"):
                release_at.setdefault(i, []).append(j)
        sites: dict[int, str] = {}
        for i, step in enumerate(steps):
            kind = step.kind
            if kind == "const":
                vals.append(self.gen.constant_array(step.value))
                continue
            ins = [vals[j] for j in step.inputs]
            op = step.label if kind == "op" else ""
            span = step.span or call.span
            if kind == "op" or kind == "fused":
                ty = plan.out_type if i == last or i == writer else None
                site = self.gen.site(kind, plan.label, step.label, step.fn, step.attrs, ty,
                                     slot if i == writer else -1, span)
                sites[n + i] = site
                if step.out is not None:
                    out = vals[step.out]
                    if step.out in sites:
                        self.gen.out.overwritten.add(int(sites[step.out][1:]))
                elif i == writer and self.gen.plans_allocation:
                    out = f"_alloc({site})"
                else:
                    out = "None"
                code = f"_run({site}, [{', '.join(ins)}], {out})"
                if step.op_spans:
                    self.gen.out.op_spans[site] = dict(step.op_spans)
            elif kind == "tuple":
                code = "(" + "".join(f"{a}, " for a in ins) + ")"
            else:  # "proj"
                code = f"{ins[0]}[{step.index}]"
            name = self.gen.fresh("t")
            self.em.emit(f"{name} = {code}", span, op)
            vals.append(name)
            for j in release_at.get(i, ()):
                self.em.emit(f"_release({sites[j]}, {vals[j]})")
                self.gen.out.releases += 1
                self.gen.out.released.add(int(sites[j][1:]))
        if n + last in sites and len(self.scopes) == 1:  # the top block (release_dead)
            self.produced[call] = sites[n + last]
        return vals[-1]

    # -- functions as values ----------------------------------------------------------------
    def function_value(self, fn: Function, rec_var: Var | None) -> str:
        """Code building the closure of ``fn`` (E-Fn; E-Let-Rec with ``rec_var``)."""
        self.anchored(fn)
        captured = tuple(v for v in self.gen.free_vars(fn) if v is not rec_var)
        nodes = self.gen.captures.get(fn, ())
        hint = rec_var.name_hint if rec_var is not None else "fn"
        py_name = self.gen.fresh(f"f_{_identifier(hint)}_")
        _FunctionGen(self.gen, fn, py_name, captured, rec_var, None,
                     nodes, self.env).generate(self.gen.lines)
        if captured or nodes or rec_var is not None or self.env:
            values = [self.value(v) for v in captured] + [self.value(n) for n in nodes]
            if self.env:  # the shape variables bound so far (``match_cast`` extends ``_e``)
                values.append("dict(_e)")
            return f"_mk_{py_name}({', '.join(values)})"
        return py_name

    def anchored(self, node: Expr) -> None:
        """E-Shared (spec 2.3, 3.18): compute the shared nodes whose first use is inside
        a sub-scope of ``node`` but whose scope is ``node``'s, before ``node`` enters it."""
        for shared in self.gen.anchors.get(node, ()):
            if self.lookup(shared) is None:
                self.value(shared)

    # -- control: compile an expression into a destination ------------------------------------
    def compile_to(self, e: Expr, dest: tuple[str, str | None]) -> None:
        """Emit statements that put the value of ``e`` into ``dest``: ``("return", None)``
        (tail position of the function) or ``("assign", name)``. Let chains are a loop, not
        recursion."""
        em = self.em
        while True:
            kind = type(e)
            if kind is Let:                                           # E-Let, E-Let-Rec
                self.anchored(e)
                var, val = e.var, e.value
                point = self.gen.casts.at(e) if self.gen.casts is not None else None
                if type(val) is Function and val.attr("Primitive") is None:
                    name = self.bind(var)
                    em.emit(f"{name} = {self.function_value(val, var)}", val.span)
                    if point is not None:
                        self.cast(name, point, name, val.span)        # T-Let's cast
                else:
                    atom = self.value(val)
                    if _sc.is_int32(self.gen.types.get(val)):
                        self.ivs[-1][var] = self.interval(val)
                    if point is not None:
                        atom = self.cast(atom, point, None, _expr_span(val))  # T-Let's
                    if self.gen.check_shapes and _static_annotation(var.type_annotation):
                        note = self.gen.intern(var.type_annotation, "T")
                        em.emit(f"_check_shape({atom}, {note}, {var.name_hint!r})", val.span)
                    if (atom.isidentifier() and atom in self.gen.out.namespace) or \
                            _LITERAL.fullmatch(atom):
                        self.names[var] = atom  # a constant or a literal: no copy
                    else:
                        name = self.bind(var)
                        em.emit(f"{name} = {atom}")
                e = e.body
                continue
            if kind is If:                                            # E-If-True/False
                point = self.gen.casts.at(e) if self.gen.casts is not None else None
                into = dest if point is None else ("assign", self.gen.fresh("t"))
                cond = self.inline_condition(e.cond) or self.value(e.cond)
                yes, no = self.facts(e.cond)
                self.anchored(e)
                saved = self.save_env()
                em.emit(f"if {cond}:")
                self.branch(e.true_branch, into, None, yes)
                em.emit("else:")
                self.branch(e.false_branch, into, point, no)          # T-If's cast
                self.restore_env(saved, into)
                if point is not None:
                    self.finish(into[1], dest)
                return
            if kind is Match:                                         # E-Match
                casts = self.gen.casts
                saved = self.save_env()
                if casts is not None and any(casts.at(c) for c in e.clauses):
                    into = ("assign", self.gen.fresh("t"))
                    self.match(e, into)                               # T-Match's casts
                    self.restore_env(saved, into)
                    self.finish(into[1], dest)
                    return
                self.match(e, dest)
                self.restore_env(saved, dest)
                return
            if dest[0] == "return" and kind is Call and self.is_self_call(e):
                args = [self.value(a) for a in e.args]
                params = [self.names[p] for p in self.func.params]
                # one more nested application (E-App-*), the loop's next iteration: the
                # ``for`` checks it against the iterations granted (Stuck-Depth)
                em.emit(f"_s = {len(self.tail_sites)}")
                self.tail_sites.append((e.span, len(em.lines)))
                if self.gen.out.counted:
                    em.emit("_DEPTH.d += 1")
                moved = [(p, a) for p, a in zip(params, args, strict=True) if p != a]
                if moved:  # a parameter passed on unchanged needs no assignment
                    em.emit(f"{', '.join(p for p, _ in moved)} = "
                            f"{', '.join(a for _, a in moved)}")
                em.emit("continue")
                self.loop = True
                return
            self.finish(self.value(e), dest)
            return

    def finish(self, atom: str, dest: tuple[str, str | None]) -> None:
        """Put the value ``atom`` into ``dest`` (returning: T-Fn's cast, the annotation
        check, the depth restored)."""
        em = self.em
        if dest[0] == "return":
            if self.gen.casts is not None and (
                    point := self.gen.casts.at(self.func)) is not None:
                atom = self.cast(atom, point, None, self.body_span())  # T-Fn's cast
            ret = self.func.ret_type
            if self.env and _shapes.has_shape_vars(ret):                 # Shape-Bind, the result
                note = self.gen.intern(ret, "T")
                em.emit(f"_check_result({atom}, {note}, _e, {self.callee_text()!r})",
                        self.body_span())
            if self.gen.check_shapes and _static_annotation(ret):
                note = self.gen.intern(ret, "T")
                em.emit(f"_check_shape({atom}, {note}, None)", self.func.body.span)
            if self.gen.out.counted:
                em.emit("_DEPTH.d = _b")
            em.emit(f"return {atom}")
        elif atom != dest[1]:
            em.emit(f"{dest[1]} = {atom}")

    def branch(self, e: Expr, dest: tuple[str, str | None], point: Any = None,
               facts: dict[Expr, _sc.Interval] | None = None) -> None:
        """``e`` compiled into ``dest`` one block deeper; ``point``: a cast on its value
        (``dest`` is then an assignment); ``facts``: intervals its condition implies."""
        self.em.depth += 1
        self.push_scope(facts)
        start = len(self.em.lines)
        self.compile_to(e, dest)
        if point is not None and dest[1] is not None:
            self.cast(dest[1], point, dest[1], _expr_span(e))
        if len(self.em.lines) == start:  # pragma: no cover - compile_to always emits
            self.em.emit("pass")
        self.pop_scope()
        self.em.depth -= 1

    def is_self_call(self, e: Call) -> bool:
        callee = e.op
        if self.global_name is not None:
            return type(callee) is GlobalVar and callee.name == self.global_name
        return self.rec_var is not None and callee is self.rec_var

    def match(self, e: Match, dest: tuple[str, str | None]) -> None:
        em = self.em
        scrutinee = self.value(e.data)
        self.anchored(e)
        first = True
        for clause in e.clauses:
            conds: list[str] = []
            binds: list[tuple[Var, str]] = []
            _pattern(clause.lhs, scrutinee, conds, binds)
            test = " and ".join(conds) if conds else "True"
            em.emit(f"{'if' if first else 'elif'} {test}:")
            first = False
            em.depth += 1
            self.push_scope()
            for var, path in binds:
                em.emit(f"{self.bind(var)} = {path}")
                if self.gen.casts is not None and (point := self.gen.casts.at(var)):
                    self.cast(self.names[var], point, self.names[var])  # pattern variable
            self.compile_to(clause.rhs, dest)
            point = self.gen.casts.at(clause) if self.gen.casts is not None else None
            if point is not None and dest[1] is not None:
                self.cast(dest[1], point, dest[1], _expr_span(clause.rhs))  # T-Match's
            self.pop_scope()
            em.depth -= 1
            if not conds:
                return  # an irrefutable clause: the rest is unreachable
        em.emit("else:")
        em.emit(f"    raise _MatchFailure({scrutinee})", e.span)


def _pattern(p: Pattern, path: str, conds: list[str], binds: list[tuple[Var, str]]) -> None:
    """The tests and bindings of matching ``path`` against ``p`` (P-Ctor, P-Var, P-Wild,
    P-Tuple); well-typed programs need no shape tests (the ADT and arity are the type's)."""
    kind = type(p)
    if kind is PatternWildcard:
        return
    if kind is PatternVar:
        binds.append((p.var, path))
        return
    if kind is PatternTuple:
        for i, sub in enumerate(p.patterns):
            _pattern(sub, f"{path}[{i}]", conds, binds)
        return
    if kind is PatternConstructor:
        conds.append(f"{path}.constructor.tag == {p.constructor.tag}")
        for i, sub in enumerate(p.patterns):
            _pattern(sub, f"{path}.fields[{i}]", conds, binds)
        return
    raise _Unsupported(f"pattern {kind.__name__}")  # pragma: no cover


class _Unsupported(Exception):
    """The program uses something the code generator cannot compile (an internal error)."""


def _is_zero_d(ty: Type | None) -> bool:
    return type(ty) is TensorType and ty.shape == ()


def _holds_python_scalars(ty: Type | None) -> bool:
    """A tuple type with an int32 or bool 0-d field (nested tuples included): its values
    may hold Python ints and bools, which a group projecting them must not hand to its
    kernels as they are (NumPy would read a Python int as int64)."""
    return type(ty) is TupleType and any(
        _holds_python_scalars(f) or (_is_zero_d(f) and f.dtype in ("int32", "bool"))
        for f in ty.fields)


def _scalar_group(prim: Function, types: dict[Expr, Type]
                  ) -> list[tuple[Call, _sc.Fast]] | None:
    """A group every operator call of which has a scalar fast path (relay_ref.executor.
    scalars) on 0-d operands (parameters, 0-d constants, earlier calls): its calls in
    post-order with their fast paths; None for any other group."""
    steps: list[tuple[Call, _sc.Fast]] = []
    for node in post_order(prim.body):
        kind = type(node)
        if kind is Var and node in prim.params:
            continue
        if kind is Constant and node.data.ndim == 0:
            continue
        if kind is Op:
            continue
        if kind is not Call or type(node.op) is not Op:
            return None
        fast = _sc.fast_path(node.op.name, node.attrs, [types.get(a) for a in node.args])
        if fast is None or not _is_zero_d(types.get(node)):
            return None
        steps.append((node, fast))
    return steps if steps and type(prim.body) is Call else None


def _group_run_args(prim: Function, plan: Any, types: dict[Expr, Type]) -> frozenset[int]:
    """The parameters of a planned group that ``group_call`` passes as they are to
    ``_run`` only: not 0-d (converted by ``np.asarray``), read only by kernel steps (not
    put in a tuple or projected), neither the group's result nor a step's ``out``."""
    n = plan.n_params
    ok = {i for i, p in enumerate(prim.params) if not _is_zero_d(types.get(p))}
    if not plan.steps:
        return frozenset()
    for step in plan.steps:
        if step.out is not None:
            ok.discard(step.out)
        if step.kind not in ("op", "fused"):
            ok.difference_update(step.inputs)
    ok.discard(n + len(plan.steps) - 1)
    return frozenset(i for i in ok if i < n)


def _symbolic_group(prim: Function) -> Call | None:
    """The symbolic op call a FuseOps group consists of (its arguments parameters or a
    tuple of parameters), or None."""
    if prim.attr("Primitive") is None:
        return None
    body = prim.body
    if type(body) is not Call or type(body.op) is not Op or body.op.name not in SYMBOLIC_OPS:
        return None
    for a in body.args:
        if not (a in prim.params or (type(a) is Tuple and all(f in prim.params
                                                                for f in a.fields))):
            return None
    return body


def _group_operand(a: Expr, prim: Function, args: list[str]) -> str:
    """Code for an argument of a symbolic group's op: a parameter's value, or a tuple."""
    if type(a) is Tuple:
        return "(" + "".join(f"{args[prim.params.index(f)]}, " for f in a.fields) + ")"
    return args[prim.params.index(a)]


def _no_shapes(env: dict[str, int]) -> None:
    """The runtime's ``shapes`` hook before an executable installs its runtime's."""
    return None


def _expr_span(e: Expr) -> Span | None:
    """Where a cast on ``e``'s value fails when the cast point has no span of its own (the
    checker ran again after fusion): ``e``'s span; a fused group's call has none, its
    function's body has (the expression the group replaced)."""
    while e.span is None and type(e) is Call and type(e.op) is Function:
        e = e.op.body
    while e.span is None and type(e) is Let:  # a group's body: its value is its end
        e = e.body
    return e.span


def _static_annotation(ty: Type | None) -> bool:
    return type(ty) is TensorType and bool(ty.shape) and all(type(d) is int for d in ty.shape)


def _check_shape(value: object, ty: TensorType, name: str | None,
                 at_call: bool = False) -> None:
    shape = getattr(value, "shape", None)
    if shape is None or tuple(shape) == ty.shape:
        return
    from relay_ref.ir.type_text import shape_to_text, type_to_text

    what = f"%{name}" if name is not None else "the result"
    raise ShapeMismatch(f"shape mismatch: {what} is annotated {type_to_text(ty)} but the "
                        f"value has shape {shape_to_text(tuple(shape))}", at_call)


# -- first-class operators and constructors -------------------------------------------------------

_OP_VALUES: dict[str, Callable[..., Any]] = {}


def op_value(name: str) -> Callable[..., Any]:
    """An operator used as a value (E-Op): a Python function of its arguments, default
    attributes (T-Op: an op value has its default attributes)."""
    fn = _OP_VALUES.get(name)
    if fn is None:
        from relay_ref.ops.registry import get_op, op_kernel

        opdef = get_op(name)
        kernel = op_kernel(name, "cpu") or opdef.reference
        attrs = opdef.attrs()

        def fn(*args: Any) -> Any:
            return kernel([_as_array(a) for a in args], attrs)

        fn.__qualname__ = fn.__name__ = f"op_{_identifier(name)}"
        fn.relay_op = name  # type: ignore[attr-defined]
        _OP_VALUES[name] = fn
    return fn


def constructor_value(ctor: Constructor) -> Callable[..., Any]:
    """A constructor used as a value (E-Ctor): a Python function building the ADT value."""

    def fn(*args: Any) -> Any:
        return ConstructorValue(ctor, args)

    fn.relay_constructor = ctor  # type: ignore[attr-defined]
    return fn


def _as_array(x: Any) -> Any:
    if type(x) is int:  # an int32 (see Scalars above)
        return np.asarray(x, np.int32)
    if isinstance(x, np.generic | bool):
        return np.asarray(x)
    if type(x) is not np.ndarray and hasattr(x, "copy_to_host"):  # a device array (cuda)
        from relay_ref.compute.cuda import to_host  # counted, as every transfer

        return to_host(x)
    return x


def generate(mod: IRModule, group_planner: Any, *, slots: dict[Call, int] | None = None,
             plans_allocation: bool = False,
             max_depth: int = 1_000_000,
             externs: dict[str, Any] | None = None, entry: str | None = None,
             shape_hook: bool = False,
             shape_bounds: dict[str, int] | None = None,
             bounds_span: Span | None = None) -> GeneratedModule:
    """The Python module implementing ``mod`` (type-checked, after the executor's passes);
    ``slots`` is the memory plan (``relay_ref.executor.memory``): group calls whose result
    the runtime's ``allocate`` is asked a buffer for (when ``plans_allocation``: the
    policy hands them out); ``max_depth`` bounds the nesting of calls (Stuck-Depth; see
    Depth in the module docstring). Every kernel step runs through the runtime seam
    (``relay_ref.executor.runtime``): ``_run``, ``_alloc`` and ``_release`` are installed
    in the namespace by the executable. ``externs``: the regions built by external
    codegens (global name -> ``relay_ref.executor.externs.Extern``), each call of one a
    step of kind ``"extern"`` (BYOC-Extern). ``shape_hook``: the entry (``entry``) calls
    the runtime's ``shapes(env)`` once its shape variables are bound (a memory plan with
    symbolic sizes, ``relay_ref.executor.memory``). ``shape_bounds``: ``rr.compile``'s
    promises (shape variable -> its largest value), checked at the entry once its
    parameters are bound, whatever the memory plan (a ``RelayRuntimeError`` at
    ``bounds_span``)."""
    gen = _Generator(mod, group_planner, max_depth)
    gen.entry, gen.shape_hook = entry, shape_hook
    if shape_bounds:
        gen.bounds = True
        gen.out.namespace["_bounds"] = _shapes.bounds_check(dict(shape_bounds), bounds_span)
    gen.externs = dict(externs or {})
    gen.slots = dict(slots or {})
    gen.plans_allocation = plans_allocation
    return gen.run()
