"""One generated numba kernel per fused group of elementwise and broadcast operators.

``build_elementwise(params, body, types)`` turns the body of a FuseOps ``Primitive``
function (or any expression over ``params`` made of elementwise/broadcast operator calls and
constants) into an ``ElementwiseKernel``: a single loop nest computing every output element
from the inputs' elements, each operator call one scalar expression
(``relay_ref.compute.cpu.elementwise``), each node shared by several users one local
variable (computed once per element).

**Loops, not array expressions.** Every node is evaluated at every *output* element; an
input is read through a *view*: the output axis each of its axes lines up with (NumPy's
right-aligned broadcasting, or ``axis`` for ``nn.bias_add``/``nn.prelu``'s 1-d operand).
The output shape is collapsed into the fewest dimensions: size-1 axes dropped, adjacent
axes merged where every view is broadcast on both or on neither (same shapes: rank 1; a
``(C, 1, 1)`` bias on ``(1, C, H, W)``: rank 2). The generated source depends only on the
operators, dtypes, collapsed rank and each view's broadcast pattern; shapes and strides
(in elements; 0 on broadcast axes) are run-time arguments. So one kernel serves every
shape with the same structure, and numba compiles (and caches on disk, through
``relay_ref.compute.cpu.codecache``) a handful of files for a whole network.

Loop nest for rank ``r``: ``r - 1`` outer loops accumulate each view's base offset; the
innermost loop reads ``x[base + i]`` (through a slice, so indices are provably
non-negative and LLVM can vectorise) for views that are dense on the innermost axis, and
one element loaded before the loop for views broadcast on it.

**Semantics** are those of running each operator's NumPy reference in turn (every
intermediate is converted to its checked dtype, so integers wrap where the reference
wraps). Integer division or remainder by zero (and integer ``power`` with a negative
exponent) makes the kernel return an error code, turned into the reference's
``OpRuntimeError`` message naming the op; the output is then partly written. Exception:
with a zero-size output nothing is computed and nothing is checked (the reference would
still check a non-empty divisor).

**``out`` and aliasing.** ``k(args, out=out)`` writes into ``out`` (C-contiguous, the
result's shape and dtype). ``ElementwiseKernel.inplace_ok`` lists the parameters that may be
the very array passed as ``out``: those of the output's shape and dtype read only at the
output element's own index (each element is read before it is written).

**Threads.** A result of at least ``PARALLEL_MIN_ELEMENTS`` elements, when the work pool
(``relay_ref.compute.cpu.parallel``) has more than one thread, is computed as tasks over
ranges of the outermost collapsed axis (``launch_tasks``): the same compiled kernel, called
on slices of the raveled arrays (``chunk_views``: each array from its range's first element,
broadcast views whole), so nothing more is compiled; the kernels are ``nogil``.

**Symbolic shapes** (issue 29, spec/typing.md Shape-Sym): dimensions may be symbolic
(``n``, ``n * 4``). The collapsed layout's *structure* (which output axes merge, which views
are broadcast on each) is then decided statically, a dimension counting as broadcast only
when it is the number 1 and as dense when it is provably equal to the output's
(``prove_equal``); a symbolic output dimension is never dropped (a run-time 1 is a loop of
one). The collapsed dims and strides are computed from the arguments' shapes at the first
call with those shapes and memoised by them (``_layouts``), so the same source, hence the
same numba kernel, serves every size: one compilation per dtype and rank, never per size.

``build_elementwise`` returns None (the executor then runs the ops one by one) for: a node
whose type is not a tensor type of numbers and shape variables (``?`` is refused: it may be
a run-time 1), an op that is not elementwise/broadcast or has no
template for its dtypes (float16, integer ``exp``, ...), free variables other than
``params``, tuples, functions, lets.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from relay_ref.compute.cpu import codecache, elementwise, numba, parallel
from relay_ref.ir.expr import Call, Constant, Expr, Op, Var
from relay_ref.ir.shape import is_symbolic, prove_equal
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.registry import OpPattern, OpRuntimeError, get_op, has_op

#: symbolic shapes: layouts a kernel keeps (one per distinct argument shapes; recomputing
#: one costs microseconds)
MAX_LAYOUTS = 256

#: results with at least this many elements run split over the work pool's threads
#: (``launch_tasks``) when it has more than one. Measured (loaded 2-core machine, load
#: average ~2.4, the pool of relay_ref.compute.cpu.parallel as merged with issue 30's
#: thread policy): at 2**17 the light models' tails (up to ~800k elements) ran 1.3-2.5x
#: slower split (squeezenet's fused steps 1.28 ms against 0.51 ms whole, densenet121's
#: 8.6 against 3.8 ms): waking the pool costs more than half a cache-resident loop.
#: So only results far beyond the caches (8 MB of float32) are split until a quiet
#: measurement says otherwise.
PARALLEL_MIN_ELEMENTS = 1 << 21

#: tasks per pool thread when a kernel is split (dynamic balancing: a descheduled thread
#: holds up at most one task's worth of elements)
TASKS_PER_THREAD = 4

#: ops whose second argument is a 1-d tensor lined up with the data's ``axis``
_PER_AXIS = frozenset({"nn.bias_add", "nn.prelu"})


@dataclass(frozen=True, slots=True, eq=False)
class ElementwiseKernel:
    """A compiled fused group; ``k(args, out=None)`` with ``args`` in ``params`` order.

    ``inputs``: the kernel's arrays in order, each a parameter index or a bound constant
    (raveled); ``dims``/``strides``: the collapsed shape and each input's element strides
    on it (run-time arguments of ``fn``); ``errors[c - 1]``: the message of error code
    ``c``; ``inplace_sources[p]``: the source of the variant that writes through parameter
    ``p``'s own array when it is ``out`` (the general kernel is correct then too, but LLVM
    cannot vectorise a loop whose output may overlap an input), compiled on first use."""

    fn: Callable[..., int] = field(repr=False)
    shape: tuple[int, ...]
    dtype: np.dtype
    param_types: tuple[tuple[tuple[int, ...], np.dtype], ...] = field(repr=False)
    inputs: tuple[int | np.ndarray, ...] = field(repr=False)
    dims: np.ndarray = field(repr=False)
    strides: np.ndarray = field(repr=False)
    errors: tuple[str, ...] = field(repr=False)
    inplace_ok: frozenset[int]
    ops: tuple[str, ...]
    source: str = field(repr=False)
    inplace_sources: Mapping[int, str] = field(default_factory=dict, repr=False)
    cache_dir: str | os.PathLike[str] | None = field(default=None, repr=False)
    #: symbolic shapes (see the module docstring): the layout's structure, which
    #: ``_symbolic_layout`` evaluates for the arguments' shapes; None when static
    structure: tuple | None = field(default=None, repr=False)
    # per input: (parameter index, shape, dtype) or (-1, None, None) for a bound constant
    _plan: tuple[tuple[int, object, object], ...] = field(init=False, repr=False)
    _variants: dict[int, Callable[..., int]] = field(init=False, repr=False)
    #: symbolic shapes: the arguments' shapes -> (output shape, dims, strides)
    _layouts: dict[tuple, tuple] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        plan = tuple((src, *self.param_types[src]) if isinstance(src, int) else (-1, None, None)
                     for src in self.inputs)
        object.__setattr__(self, "_plan", plan)
        object.__setattr__(self, "_variants", {})
        object.__setattr__(self, "_layouts", {})

    def __call__(self, args: Sequence[np.ndarray], out: np.ndarray | None = None
                 ) -> np.ndarray:
        """The group's result for ``args`` (written into ``out`` when given)."""
        # the per-call path is kept short: it is most of the cost of small tensors
        if len(args) != len(self.param_types):
            raise ValueError(f"fused kernel takes {len(self.param_types)} arguments, "
                             f"got {len(args)}")
        if self.structure is not None:
            return self._call_symbolic(args, out)
        flat = []
        for (p, shape, dtype), src in zip(self._plan, self.inputs, strict=True):
            if p < 0:
                flat.append(src)
                continue
            a = args[p]
            if a.__class__ is not np.ndarray:
                a = np.asarray(a)
            if a.shape != shape or (a.dtype is not dtype and a.dtype != dtype):
                raise ValueError(f"fused kernel argument {p}: expected {shape} {dtype}, "
                                 f"got {a.shape} {a.dtype}")
            flat.append(a.reshape(-1))  # a C-order copy when ``a`` is not contiguous
        fn = self.fn
        if out is None:
            out = np.empty(self.shape, self.dtype)
        else:
            if (out.shape != self.shape or out.dtype != self.dtype
                    or not out.flags.c_contiguous):
                raise ValueError(f"out must be a C-contiguous {self.shape} {self.dtype} "
                                 "array")
            for p in self.inplace_sources:
                if args[p] is out:
                    fn = self._variants.get(p) or self._variant(p)
                    break
        return self._launch(fn, out, self.dims, self.strides, flat)

    def _launch(self, fn: Callable[..., int], out: np.ndarray, dims: np.ndarray,
                strides: np.ndarray, flat: list[np.ndarray]) -> np.ndarray:
        if out.size:
            try:
                if out.size >= PARALLEL_MIN_ELEMENTS and dims[0] > 1 and \
                        parallel.threads() > 1:
                    code = launch_tasks(fn, out.reshape(-1), dims, strides, flat)
                else:
                    code = fn(out.reshape(-1), dims, strides, *flat)
            except numba.core.errors.NumbaError as err:  # a template bug, not a user error
                raise RuntimeError(f"internal error: compiling the fused kernel of "
                                   f"{', '.join(self.ops)} failed: {err}") from err
            if code:
                raise OpRuntimeError(self.errors[code - 1])
        return out

    def _call_symbolic(self, args: Sequence[np.ndarray], out: np.ndarray | None
                       ) -> np.ndarray:
        """``__call__`` with symbolic shapes: the layout for these argument shapes (computed
        once per distinct shapes), then the one kernel."""
        arrays = []
        shapes = []
        for a, (_, dtype) in zip(args, self.param_types, strict=True):
            if a.__class__ is not np.ndarray:
                a = np.asarray(a)
            if a.dtype is not dtype and a.dtype != dtype:
                raise ValueError(f"fused kernel argument: expected {dtype}, got {a.dtype}")
            arrays.append(a)
            shapes.append(a.shape)
        key = tuple(shapes)
        layout = self._layouts.get(key)
        if layout is None:
            if len(self._layouts) >= MAX_LAYOUTS:  # bounded memory over many sizes
                self._layouts.clear()
            layout = self._layouts[key] = _symbolic_layout(self.structure, self.inputs, key)
        shape, dims, strides = layout
        flat = [arrays[src].reshape(-1) if src.__class__ is int else src
                for src in self.inputs]
        fn = self.fn
        if out is None:
            out = np.empty(shape, self.dtype)
        else:
            if (out.shape != shape or out.dtype != self.dtype
                    or not out.flags.c_contiguous):
                raise ValueError(f"out must be a C-contiguous {shape} {self.dtype} array")
            for p in self.inplace_sources:
                if arrays[p] is out:
                    fn = self._variants.get(p) or self._variant(p)
                    break
        return self._launch(fn, out, dims, strides, flat)

    def _variant(self, p: int) -> Callable[..., int]:
        fn = codecache.load_source(self.inplace_sources[p], self.cache_dir).kernel
        self._variants[p] = fn
        return fn


def chunk_views(out: np.ndarray, dims: np.ndarray, strides: np.ndarray,
                flat: Sequence[np.ndarray], lo: int, hi: int
                ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The arguments that make a generated kernel compute only the outermost collapsed
    indices ``lo <= i0 < hi`` (``0 <= lo < hi <= dims[0]``): ``out`` (raveled) from element
    ``lo * prod(dims[1:])``, each input from element ``lo * strides[v, 0]`` (0 for a view
    broadcast on that axis: the whole array), ``dims[0] = hi - lo``. The kernel's loops
    index every array from its base, so the slices are all it needs; the slices of
    disjoint ranges write disjoint parts of ``out``."""
    inner = int(np.prod(dims[1:], dtype=np.int64))
    sub = dims.copy()
    sub[0] = hi - lo
    xs = [x[lo * int(strides[v, 0]):] if strides[v, 0] else x for v, x in enumerate(flat)]
    return out[lo * inner:hi * inner], sub, xs


def launch_tasks(fn: Callable[..., int], out: np.ndarray, dims: np.ndarray,
                 strides: np.ndarray, flat: Sequence[np.ndarray]) -> int:
    """``fn(out, dims, strides, *flat)`` split over ranges of the outermost collapsed axis,
    run as tasks of ``relay_ref.compute.cpu.parallel.run_tasks`` (the generated kernels are
    ``nogil``); about ``TASKS_PER_THREAD`` tasks a thread, none under
    ``PARALLEL_MIN_ELEMENTS // 4`` elements. Returns the first non-zero error code in
    range order (0: none); elements of other ranges may then be written too."""
    outer = int(dims[0])
    count = min(outer, parallel.threads() * TASKS_PER_THREAD,
                max(1, out.size // (PARALLEL_MIN_ELEMENTS // 4)))
    step = -(-outer // count)
    count = -(-outer // step)
    codes = [0] * count

    def task(i: int) -> None:
        lo = i * step
        o, sub, xs = chunk_views(out, dims, strides, flat, lo, min(outer, lo + step))
        codes[i] = fn(o, sub, strides, *xs)

    parallel.run_tasks(count, task)
    return next((c for c in codes if c), 0)


class _Unsupported(Exception):
    """The body cannot become one elementwise kernel."""


@dataclass(frozen=True, slots=True)
class _View:
    """An input array as the loop reads it: ``shape`` and ``dtype`` of the array, ``axes``
    the output axis of each of its axes; ``source`` a parameter index or a constant."""

    source: int | np.ndarray
    shape: tuple[int, ...]
    dtype: str
    axes: tuple[int, ...]


def build_elementwise(params: Sequence[Var], body: Expr, types: Mapping[Expr, Type], *,
                      cache_dir: str | os.PathLike[str] | None = None
                      ) -> ElementwiseKernel | None:
    """The fused kernel of ``body`` over ``params`` (see the module docstring), or None
    when some node is not supported. ``types`` maps nodes (by identity) to checked types;
    ``cache_dir`` overrides the kernel source cache's root directory."""
    try:
        gen = _Generator(params, types, body, symbolic=True)
        return gen.kernel(cache_dir)
    except _Unsupported:
        return None


class _Generator:
    """Walks the body once (iteratively), giving each (node, axes) pair a variable of the
    innermost loop and each leaf a view."""

    def __init__(self, params: Sequence[Var], types: Mapping[Expr, Type], body: Expr,
                 templates: Mapping[str, elementwise.OpTemplates] | None = None, *,
                 symbolic: bool = False):
        self.templates = templates  # None: the CPU table (the CUDA kernels pass theirs)
        #: whether shapes may have symbolic dimensions (the CPU kernels; not CUDA's)
        self.symbolic_ok = symbolic
        self.params = {p: i for i, p in enumerate(params)}
        self.param_types = tuple(self._static(p, types) for p in params)
        self.types = types
        self.body = body
        out = self._static(body, types)
        self.shape, self.out_dtype = out.shape, out.dtype
        self.views: list[_View] = []
        self.view_of: dict[tuple[int, tuple[int, ...]], int] = {}  # (id(leaf), axes)
        self.names: dict[tuple[int, tuple[int, ...]], str] = {}  # (id(node), axes)
        self.lines: list[str] = []
        self.helpers: set[str] = set()
        self.errors: list[str] = []
        self.ops: list[str] = []
        self.root = self._walk(body, tuple(range(len(self.shape))))

    # -- types --------------------------------------------------------------------------

    def _static(self, node: Expr, types: Mapping[Expr, Type]) -> TensorType:
        ty = types.get(node)
        if ty is None and isinstance(node, Var):
            ty = node.type_annotation
        if ty is None and isinstance(node, Constant):
            ty = TensorType(node.data.shape, node.data.dtype.name)
        if not isinstance(ty, TensorType) or ty.dtype not in elementwise.KINDS:
            raise _Unsupported
        if ty.is_static:
            return TensorType(tuple(int(d) for d in ty.shape), ty.dtype)  # type: ignore[arg-type]
        if not self.symbolic_ok or not all(type(d) is int or is_symbolic(d) for d in ty.shape):
            raise _Unsupported
        return ty

    # -- the walk -----------------------------------------------------------------------

    def _walk(self, root: Expr, axes: tuple[int, ...]) -> str:
        # post-order over (node, axes) pairs; a pair is emitted once all its arguments are
        stack: list[tuple[Expr, tuple[int, ...], bool]] = [(root, axes, False)]
        while stack:
            node, ax, ready = stack.pop()
            key = (id(node), ax)
            if key in self.names:
                continue
            if isinstance(node, Var | Constant):
                self.names[key] = self._leaf(node, ax)
                continue
            args = self._call_args(node, ax)
            if ready:
                self.names[key] = self._emit(node, ax, args)
                continue
            stack.append((node, ax, True))
            stack.extend((a, a_ax, False) for a, a_ax in reversed(args))
        return self.names[(id(root), axes)]

    def _call_args(self, node: Expr, axes: tuple[int, ...]
                   ) -> list[tuple[Expr, tuple[int, ...]]]:
        """The arguments of a supported call, each with the output axes of its axes."""
        if not isinstance(node, Call) or not isinstance(node.op, Op):
            raise _Unsupported
        name = node.op.name
        if not has_op(name) or get_op(name).op_pattern > OpPattern.BROADCAST \
                or not elementwise.supports(name):
            raise _Unsupported
        ndim = len(axes)
        out = []
        for i, arg in enumerate(node.args):
            rank = len(self._static(arg, self.types).shape)
            if name in _PER_AXIS and i == 1:
                if rank != 1 or ndim == 0:
                    raise _Unsupported
                out.append((arg, (axes[node.attrs.axis % ndim],)))  # type: ignore[union-attr]
            elif rank > ndim:
                raise _Unsupported
            else:
                out.append((arg, axes[ndim - rank:]))
        return out

    def _leaf(self, node: Var | Constant, axes: tuple[int, ...]) -> str:
        ty = self._static(node, self.types)
        if isinstance(node, Constant):
            if node.data.size == 1:  # inlined: broadcasting a single value is the value
                return elementwise.literal(node.data.reshape(-1)[0].item(), ty.dtype)
            source: int | np.ndarray = np.ascontiguousarray(node.data, ty.dtype).reshape(-1)
        else:
            if node not in self.params:
                raise _Unsupported
            source = self.params[node]
        for d, a in zip(ty.shape, axes, strict=True):
            if not _is_one(d) and d != self.shape[a] and \
                    prove_equal(d, self.shape[a]) is not True:
                raise _Unsupported  # not (provably) a broadcast of the output shape
        key = (id(node), axes)
        v = self.view_of.get(key)
        if v is None:
            v = self.view_of[key] = len(self.views)
            self.views.append(_View(source, ty.shape, ty.dtype, axes))
        return f"a{v}"

    def _emit(self, node: Call, axes: tuple[int, ...],
              args: list[tuple[Expr, tuple[int, ...]]]) -> str:
        name = node.op.name  # type: ignore[union-attr]
        attrs = node.attrs
        plain = ({f.name: getattr(attrs, f.name) for f in dataclasses.fields(attrs)}
                 if dataclasses.is_dataclass(attrs) else {})
        code = elementwise.render(
            name, [self.names[(id(a), ax)] for a, ax in args],
            [self._static(a, self.types).dtype for a, _ in args],
            self._static(node, self.types).dtype, plain, self.templates)
        if code is None:
            raise _Unsupported
        var = f"t{len(self.ops)}"
        self.ops.append(name)
        self.helpers.update(code.helpers)
        if code.guard is not None:
            self.errors.append(f"{name}: {code.error}")
            self.lines.append(f"if {code.guard}:")
            self.lines.append(f"    err = {len(self.errors)}")
        self.lines.append(f"{var} = {code.expr}")
        return var

    # -- layout and source ----------------------------------------------------------------

    def layout(self) -> tuple[list[int], list[list[int]], list[tuple[bool, ...]]]:
        """Collapsed dims, each view's strides on them, each view's pattern (True: dense)."""
        full: list[list[int]] = []  # per view, its element stride on each output axis
        for view in self.views:
            cstrides = [1] * len(view.shape)
            for j in range(len(view.shape) - 2, -1, -1):
                cstrides[j] = cstrides[j + 1] * view.shape[j + 1]
            st = [0] * len(self.shape)
            for j, a in enumerate(view.axes):
                if view.shape[j] != 1:
                    st[a] = cstrides[j]
            full.append(st)
        dims: list[int] = []
        strides: list[list[int]] = [[] for _ in self.views]
        status: tuple[bool, ...] | None = None
        for a, d in enumerate(self.shape):
            if d == 1:
                continue
            now = tuple(st[a] != 0 for st in full)
            if now == status:  # merge into the previous dim: keep the inner stride
                dims[-1] *= d
                for v, st in enumerate(full):
                    strides[v][-1] = st[a]
            else:
                dims.append(d)
                for v, st in enumerate(full):
                    strides[v].append(st[a])
                status = now
        if not dims:  # one element: the dense rank-1 kernel
            dims = [1]
            strides = [[1] for _ in self.views]
        patterns = [tuple(s != 0 for s in st) for st in strides]
        return dims, strides, patterns

    def _source(self, rank: int, patterns: list[tuple[bool, ...]],
                inplace: int | None = None) -> str:
        """The kernel's source; ``inplace``: the view whose own array is the output (the
        variant stores through that view's slice, which LLVM sees does not overlap other
        elements of it, instead of through ``out``)."""
        ind = "    "
        what = f"in place through x{inplace}, " if inplace is not None else ""
        lines = ['"""Generated by relay_ref.executor.fused: '
                 f'{", ".join(self.ops) or "copy"} -> {self.out_dtype}, {what}rank {rank}."""',

                 "import math", "", "import numba", "import numpy as np", ""]
        for h in sorted(self.helpers):
            lines += ["", elementwise.HELPERS[h]]
        xs = "".join(f", x{v}" for v in range(len(self.views)))
        lines += ["", '@numba.njit(cache=True, error_model="numpy", nogil=True)',
                  f"def kernel(out, dims, st{xs}):", f"{ind}err = 0"]
        lines += [f"{ind}n{d} = dims[{d}]" for d in range(rank)]
        for v, pat in enumerate(patterns):
            lines += [f"{ind}s{v}_{d} = st[{v}, {d}]" for d in range(rank - 1) if pat[d]]
        base: list[str | None] = [None] * len(self.views)
        obase: str | None = None
        depth = 1
        for d in range(rank - 1):  # outer loops: base offsets of dense views and of out
            lines.append(f"{ind * depth}for i{d} in range(n{d}):")
            depth += 1
            pre = ind * depth
            for v, pat in enumerate(patterns):
                if pat[d]:
                    term = f"i{d} * s{v}_{d}"
                    lines.append(f"{pre}b{v}_{d} = {term if base[v] is None else base[v]}"
                                 + ("" if base[v] is None else f" + {term}"))
                    base[v] = f"b{v}_{d}"
            lines.append(f"{pre}o{d} = i{d}" if obase is None
                         else f"{pre}o{d} = {obase} * n{d} + i{d}")
            obase = f"o{d}"
        pre = ind * depth
        n = f"n{rank - 1}"
        # slices, even at rank 1: numba then proves indices in range and LLVM vectorises
        # (a plain ``out[i]`` loop measured 2x slower)
        if inplace is not None:
            y = f"z{inplace}"
        else:
            y = "y"
            ob = "0" if obase is None else f"{obase} * {n}"
            lines.append(f"{pre}ob = {ob}")
            lines.append(f"{pre}y = out[ob:ob + {n}]")
        loads = []
        for v, pat in enumerate(patterns):
            b = base[v] or "0"
            if pat[-1]:
                lines.append(f"{pre}z{v} = x{v}[{b}:{b} + {n}]")
                loads.append(f"a{v} = z{v}[i]")
            else:
                lines.append(f"{pre}a{v} = x{v}[{b}]")
        lines.append(f"{pre}for i in range({n}):")
        pre += ind
        lines += [pre + s for s in loads + self.lines + [f"{y}[i] = {self.root}"]]
        lines += [f"{ind}return err", ""]
        return "\n".join(lines)

    @property
    def symbolic(self) -> bool:
        return not all(type(d) is int for d in self.shape) or \
            any(not all(type(d) is int for d in v.shape) for v in self.views)

    def structure(self) -> tuple[tuple, list[tuple[bool, ...]]]:
        """The collapsed layout's structure for symbolic shapes: ``(out rank, groups, views)``
        where ``groups`` lists the output axes merged into each collapsed dim and ``views``
        each view's ``(axes, static shape, dense per group)``; and the patterns."""
        groups: list[list[int]] = []
        status: tuple[bool, ...] | None = None
        for a, d in enumerate(self.shape):
            if _is_one(d):
                continue
            now = tuple(any(ax == a and not _is_one(vd)
                            for ax, vd in zip(v.axes, v.shape, strict=True))
                        for v in self.views)
            if now == status:
                groups[-1].append(a)
            else:
                groups.append([a])
                status = now
        patterns = [tuple(any(ax == g[-1] and not _is_one(vd)
                              for ax, vd in zip(v.axes, v.shape, strict=True))
                          for g in groups) for v in self.views]
        if not groups:
            patterns = [(True,) for _ in self.views]
        views = tuple((v.axes, v.shape if not isinstance(v.source, int) else None, pat,
                       tuple(not _is_one(d) for d in v.shape))
                      for v, pat in zip(self.views, patterns, strict=True))
        return (len(self.shape), tuple(tuple(g) for g in groups), views), patterns

    def kernel(self, cache_dir: str | os.PathLike[str] | None) -> ElementwiseKernel:
        if self.symbolic:
            return self._symbolic_kernel(cache_dir)
        dims, strides, patterns = self.layout()
        source = self._source(len(dims), patterns)
        module = codecache.load_source(source, cache_dir)
        shape, dtype = tuple(self.shape), np.dtype(self.out_dtype)
        inplace = frozenset(
            i for i, t in enumerate(self.param_types)
            if t.shape == shape and t.dtype == self.out_dtype
            and all(all(p) for v, p in zip(self.views, patterns, strict=True)
                    if isinstance(v.source, int) and v.source == i))
        variants = {v.source: self._source(len(dims), patterns, inplace=i)
                    for i, v in enumerate(self.views)
                    if isinstance(v.source, int) and v.source in inplace}
        return ElementwiseKernel(
            fn=module.kernel, shape=shape, dtype=dtype,
            param_types=tuple((t.shape, np.dtype(t.dtype)) for t in self.param_types),
            inputs=tuple(v.source for v in self.views),
            dims=np.array(dims, np.int64),
            strides=np.array(strides, np.int64).reshape(len(self.views), len(dims)),
            errors=tuple(self.errors), inplace_ok=inplace, ops=tuple(self.ops),
            source=source, inplace_sources=variants, cache_dir=cache_dir)


    def _symbolic_kernel(self, cache_dir: str | os.PathLike[str] | None
                         ) -> ElementwiseKernel:
        """The kernel for symbolic shapes: the same source as a static shape with the same
        structure (so the same numba kernel), the layout evaluated per argument shapes."""
        structure, patterns = self.structure()
        rank = max(len(structure[1]), 1)
        source = self._source(rank, patterns)
        module = codecache.load_source(source, cache_dir)
        shape = tuple(self.shape)
        inplace = frozenset(
            i for i, t in enumerate(self.param_types)
            if len(t.shape) == len(shape) and t.dtype == self.out_dtype
            and all(a == b or prove_equal(a, b) is True
                    for a, b in zip(t.shape, shape, strict=True))
            and all(all(p) for v, p in zip(self.views, patterns, strict=True)
                    if isinstance(v.source, int) and v.source == i))
        variants = {v.source: self._source(rank, patterns, inplace=i)
                    for i, v in enumerate(self.views)
                    if isinstance(v.source, int) and v.source in inplace}
        return ElementwiseKernel(
            fn=module.kernel, shape=shape, dtype=np.dtype(self.out_dtype),
            param_types=tuple((t.shape, np.dtype(t.dtype)) for t in self.param_types),
            inputs=tuple(v.source for v in self.views),
            dims=np.zeros(0, np.int64), strides=np.zeros((0, 0), np.int64),
            errors=tuple(self.errors), inplace_ok=inplace, ops=tuple(self.ops),
            source=source, inplace_sources=variants, cache_dir=cache_dir,
            structure=structure)


def _is_one(d: object) -> bool:
    """Whether a dimension is the number 1 (a broadcast axis; a symbolic one never is)."""
    return type(d) is int and d == 1


def _symbolic_layout(structure: tuple, inputs: tuple, shapes: tuple[tuple[int, ...], ...]
                     ) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """(output shape, collapsed dims, strides) of a symbolic kernel for its parameters'
    concrete ``shapes``; a ``ValueError`` when they do not line up (the entry's Shape-Bind
    and the checker's rules make that an internal error)."""
    rank, groups, views = structure
    out = [1] * rank
    seen = [False] * rank
    concrete = []
    for src, (axes, static, _, dense) in zip(inputs, views, strict=True):
        shape = shapes[src] if isinstance(src, int) else static
        if len(shape) != len(axes):
            raise ValueError(f"fused kernel: an argument of rank {len(shape)}, expected "
                             f"{len(axes)}")
        concrete.append(shape)
        for a, n, d in zip(axes, shape, dense, strict=True):
            if not d:
                if n != 1:
                    raise ValueError(f"fused kernel: axis {a} of a broadcast operand is {n}")
            elif seen[a] and out[a] != n:  # dense operands agree (no run-time broadcast)
                raise ValueError(f"fused kernel: axis {a} is {out[a]} and {n}")
            else:
                out[a], seen[a] = n, True
    dims = [int(np.prod([out[a] for a in g], dtype=np.int64)) for g in groups] or [1]
    strides = []
    for (axes, _, pattern, _), shape in zip(views, concrete, strict=True):
        row = []
        for g, dense in zip(groups, pattern, strict=False):
            if not dense:
                row.append(0)
                continue
            j = axes.index(g[-1])
            row.append(int(np.prod(shape[j + 1:], dtype=np.int64)))
        strides.append(row or [1])
    return (tuple(out), np.array(dims, np.int64),
            np.array(strides, np.int64).reshape(len(views), len(dims)))


#: the walk and the collapsed layout, public for the CUDA kernels' generator
#: (``relay_ref.executor.cuda_fused``), which emits another loop over the same analysis
Generator = _Generator
Unsupported = _Unsupported
