"""One generated CUDA kernel per fused group of elementwise and broadcast operators.

The analysis is the CPU kernel's (``relay_ref.executor.fused``): the same walk gives every
(node, axes) pair one scalar expression from the templates of
``relay_ref.compute.cpu.elementwise``, every input a *view* (the output axes its axes line
up with), and the same collapsed layout (fewest dimensions; element strides per view, 0 on
broadcast axes, as run-time arguments). Only the loop differs: one thread per output
element in a grid-stride loop (performance.md section 6: 87 % of torch's bandwidth on an
H100), the flat output index decomposed into the collapsed coordinates, each view read at
``sum(i_d * stride_d)``. Helpers become device functions.

Groups whose templates can fail at run time (integer division or remainder by zero, integer
``power`` with a negative exponent) get no CUDA kernel (``None``): reporting the error would
cost a device-to-host copy after every launch; those groups run on the host.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from relay_ref.compute.cpu import elementwise
from relay_ref.executor.fused import Generator, Unsupported
from relay_ref.ir.expr import Expr, Var
from relay_ref.ir.types import Type

__all__ = ["CudaElementwise", "build_cuda_elementwise"]

_CPU_JIT = '@numba.njit(cache=True, error_model="numpy")'


class CudaElementwise:
    """A generated kernel and its fixed arguments: ``kernel(args, out=None)`` returns the
    group's result as a device array (written into ``out`` when it is a device array of
    the result's shape and dtype). Host arrays among ``args`` are copied to the device
    (counted by ``relay_ref.compute.cuda.TRANSFERS``)."""

    launches = 1
    #: parameters the result may be written over (set by ``build_cuda_elementwise``)
    inplace_ok: frozenset[int] = frozenset()

    def __init__(self, fn: Any, shape: tuple[int, ...], dtype: np.dtype,
                 inputs: tuple[int | Any, ...], dims: Any, strides: Any, ops: tuple[str, ...],
                 source: str, n_params: int) -> None:
        self.fn = fn
        self.shape = shape
        self.dtype = dtype
        self.inputs = inputs  # per view: a parameter index or a device constant
        self.dims = dims
        self.strides = strides
        self.ops = ops
        self.source = source
        self.n_params = n_params
        self.total = int(np.prod(shape, dtype=np.int64))

    def __call__(self, args: Sequence[Any], out: Any = None) -> Any:
        from relay_ref.compute.cuda import device_array, is_device_array, to_device
        from relay_ref.compute.cuda.elementwise import launch
        from relay_ref.compute.cuda.launch import flat

        if len(args) != self.n_params:
            raise ValueError(f"fused kernel takes {self.n_params} arguments, got {len(args)}")
        flats = []
        for src in self.inputs:
            if not isinstance(src, int):
                flats.append(src)
                continue
            a = args[src]
            if not is_device_array(a):
                a = to_device(np.asarray(a))
            flats.append(flat(a) if len(a.shape) != 1 else a)
        if out is None or not is_device_array(out) or tuple(out.shape) != self.shape:
            out = device_array(self.shape, self.dtype)
        if self.total:
            launch(self.fn, self.total, flat(out) if len(self.shape) != 1 else out,
                   self.total, self.dims, self.strides, *flats)
        return out


def build_cuda_elementwise(params: Sequence[Var], body: Expr, types: Mapping[Expr, Type], *,
                           cache_dir: str | os.PathLike[str] | None = None
                           ) -> CudaElementwise | None:
    """The CUDA kernel of ``body`` over ``params`` (see the module docstring), or None when
    some node is not supported or may fail at run time."""
    from relay_ref.compute.cuda import scalar, to_device
    from relay_ref.compute.cuda.elementwise import load

    try:
        gen = Generator(params, types, body, scalar.TEMPLATES)
    except Unsupported:
        return None
    if gen.errors:
        return None
    dims, strides, patterns = gen.layout()
    source = cuda_source(gen, len(dims), patterns)
    fn = load(source, None if cache_dir is None else str(cache_dir))
    inputs = tuple(v.source if isinstance(v.source, int) else to_device(v.source)
                   for v in gen.views)
    st = np.array(strides, np.int64).reshape(len(gen.views), len(dims))
    if st.size == 0:
        st = np.zeros((1, len(dims)), np.int64)  # no views: a dummy the kernel never reads
    kernel = CudaElementwise(fn, tuple(gen.shape), np.dtype(gen.out_dtype), inputs,
                             to_device(np.array(dims, np.int64)), to_device(st),
                             tuple(gen.ops), source, len(gen.param_types))
    # a thread reads each dense view at the element it writes: the result may overwrite a
    # parameter of its shape and dtype that only such views read (the CPU kernel's rule)
    kernel.inplace_ok = frozenset(
        i for i, t in enumerate(gen.param_types)
        if tuple(t.shape) == kernel.shape and t.dtype == gen.out_dtype
        and all(all(p) for v, p in zip(gen.views, patterns, strict=True)
                if isinstance(v.source, int) and v.source == i))
    return kernel


def cuda_source(gen: Generator, rank: int, patterns: list[tuple[bool, ...]]) -> str:
    """The kernel's source (see the module docstring)."""
    from relay_ref.compute.cuda.elementwise import DEVICE_JIT, KERNEL_JIT

    ind = "    "
    lines = ['"""Generated by relay_ref.executor.cuda_fused: '
             f'{", ".join(gen.ops) or "copy"} -> {gen.out_dtype}, rank {rank}."""',
             "import math", "", "import numpy as np", "from numba import cuda", "",
             "from relay_ref.compute.cuda import scalar as sm", ""]
    for h in sorted(gen.helpers):
        lines += ["", elementwise.HELPERS[h].replace(_CPU_JIT, DEVICE_JIT)]
    xs = "".join(f", x{v}" for v in range(len(gen.views)))
    lines += ["", KERNEL_JIT, f"def kernel(out, total, dims, st{xs}):"]
    lines += [f"{ind}n{d} = dims[{d}]" for d in range(rank)]
    for v, pat in enumerate(patterns):
        lines += [f"{ind}s{v}_{d} = st[{v}, {d}]" for d in range(rank) if pat[d]]
    lines += [f"{ind}start = cuda.grid(1)", f"{ind}step = cuda.gridsize(1)",
              f"{ind}for idx in range(start, total, step):"]
    pre = ind * 2
    if rank == 1:
        lines.append(f"{pre}i0 = idx")
    else:
        lines.append(f"{pre}rem = idx")
        for d in range(rank - 1, 0, -1):
            lines.append(f"{pre}i{d} = rem % n{d}")
            lines.append(f"{pre}rem = rem // n{d}")
        lines.append(f"{pre}i0 = rem")
    for v, pat in enumerate(patterns):
        terms = [f"i{d} * s{v}_{d}" for d in range(rank) if pat[d]]
        lines.append(f"{pre}a{v} = x{v}[{' + '.join(terms) or '0'}]")
    lines += [pre + s for s in gen.lines]
    lines.append(f"{pre}out[idx] = {gen.root}")
    lines.append("")
    return "\n".join(lines)


#: dtypes of the one-op sources ``one_op_sources`` generates
SOURCE_DTYPES = ("float32", "float64", "int32", "int8", "uint8", "bool")


def one_op_sources(dtypes: Sequence[str] = SOURCE_DTYPES
                   ) -> list[tuple[str, str, Generator, str]]:
    """(op, dtype, generator, CUDA source) of every elementwise / broadcast operator with a
    CUDA template, applied to (4, 8) tensors of each of ``dtypes`` (a (8,) second argument
    where the op wants one, a scalar fill value): what ``scripts/cuda_ptx_check.py``
    compiles for a GPU and the tests scan for NumPy calls the CUDA target lacks. Calls whose
    group would get no kernel (a run-time guard) are left out."""
    from relay_ref.compute.cuda import scalar
    from relay_ref.ir.expr import Call, Op
    from relay_ref.ir.types import TensorType
    from relay_ref.ops.registry import OpPattern, all_ops, get_op

    extra_attrs: dict[str, dict[str, Any]] = {
        "clip": {"a_min": -1.0, "a_max": 1.0}, "cast": {"dtype": "float32"},
        "nn.leaky_relu": {"alpha": 0.1}}
    out = []
    for name in sorted(all_ops()):
        op = get_op(name)
        if op.op_pattern > OpPattern.BROADCAST or not elementwise.supports(name):
            continue
        n_in = op.num_inputs if isinstance(op.num_inputs, int) else 1
        try:
            attrs = op.attrs(**extra_attrs.get(name, {}))
        except Exception:  # noqa: BLE001 - an op whose attrs need values: not generated
            continue
        for dtype in dtypes:
            for tail in ((4, 8), (8,), ()):
                types_in = [TensorType((4, 8), dtype)] + [TensorType(tail, dtype)] * (n_in - 1)
                try:
                    out_type = op.relation(types_in, attrs)
                except Exception:  # noqa: BLE001 - the relation refuses these types
                    continue
                break
            else:
                continue
            params = [Var(f"p{i}", t) for i, t in enumerate(types_in)]
            body = Call(Op(name), tuple(params), attrs)
            types: dict[Expr, Type] = {**dict(zip(params, types_in, strict=True)),
                                       body: out_type}
            try:
                gen = Generator(params, types, body, scalar.TEMPLATES)
            except Unsupported:
                continue
            if gen.errors:
                continue
            dims, _, patterns = gen.layout()
            out.append((name, dtype, gen, cuda_source(gen, len(dims), patterns)))
    return out
