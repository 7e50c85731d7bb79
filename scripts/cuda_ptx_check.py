"""Compile every CUDA kernel of relay_ref to PTX for a real GPU, without a GPU.

The simulator tests run the kernels as Python, so they cannot see what numba's CUDA
compiler refuses (a NumPy function it has no CUDA version of, a type it cannot unify).
This script compiles, with ``cuda.compile_ptx`` for compute capability 9.0 (an H100):

* every hand-written kernel (GEMM, conv2d, pooling, reductions, softmax) with the shipped
  configuration (``config.GPU``), float32 and float64;
* the generated elementwise kernel of every operator with a CUDA template, for every dtype
  of ``cuda_fused.SOURCE_DTYPES`` (``cuda_fused.one_op_sources``).

It needs numba's real CUDA target and NVVM (``pip install 'numba-cuda[cu12]'``), not a
driver: numba asks the driver for the device's compute capability in one place, patched
here. Prints one line per failure and a summary (float32 kernels using f64 instructions,
64-bit integer divisions); exits 1 when a kernel fails to compile.

    python scripts/cuda_ptx_check.py [-v] [--only REGEX]

``--only``: just the kernels whose label (``gemm float32``, ``exp float64``) matches.
"""

from __future__ import annotations

import os
import re
import sys
import types

os.environ.pop("NUMBA_ENABLE_CUDASIM", None)

CC = (9, 0)


def _patch_device() -> None:
    """numba's dispatcher asks the driver for the compute capability when a kernel calls a
    device function; answer CC without one."""
    import numba.cuda.dispatcher as dispatcher

    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=CC)


def _arr(nt: object, dtype: str, ndim: int = 1) -> object:
    t = nt.boolean if dtype == "bool" else getattr(nt, dtype)
    return nt.Array(t, ndim, "C")


def _hand_kernels(nt: object) -> list[tuple[str, object, tuple]]:
    from relay_ref.compute.cuda import conv, gemm, pool, reduce, softmax
    from relay_ref.compute.cuda.config import GPU

    out = []
    i = nt.int64
    for dt in ("float32", "float64"):
        a = _arr(nt, dt)
        out.append((f"gemm {dt}", gemm._kernel(GPU.gemm, dt), (a, a, a) + (i,) * 13))
        out.append((f"conv2d {dt}", conv._kernel(GPU.gemm, dt), (a, a, a) + (i,) * 18))
        for is_max in (True, False):
            out.append((f"pool {'max' if is_max else 'avg'} {dt}",
                        pool._kernel(is_max, not is_max, dt), (a, a) + (i,) * 15))
        for op in reduce.OPS:
            out.append((f"reduce {op} {dt}", reduce._kernel(op, GPU.row_threads, dt),
                        (a, a, i, i, i)))
        for log in (False, True):
            out.append((f"{'log_' if log else ''}softmax {dt}",
                        softmax._kernel(log, GPU.row_threads, dt), (a, a, i, i, i)))
    return out


def _generated_kernels(nt: object) -> list[tuple[str, object, tuple]]:
    from relay_ref.compute.cpu import codecache
    from relay_ref.executor.cuda_fused import one_op_sources

    out = []
    for name, dtype, gen, source in one_op_sources():
        kernel = codecache.load_source(source, None).kernel
        i = nt.int64
        sig = (_arr(nt, gen.out_dtype), i, _arr(nt, "int64"), _arr(nt, "int64", 2),
               *[_arr(nt, v.dtype) for v in gen.views])
        out.append((f"{name} {dtype}", kernel, sig))
    return out


def main(argv: list[str]) -> int:
    from numba import cuda
    from numba import types as nt

    from relay_ref.compute.cuda import simulator

    if simulator():
        print("NUMBA_ENABLE_CUDASIM is set: the simulator compiles nothing", file=sys.stderr)
        return 2
    _patch_device()
    verbose = "-v" in argv
    only = re.compile(argv[argv.index("--only") + 1]) if "--only" in argv else None
    failed: list[str] = []
    f64_in_f32: list[str] = []
    div64: list[str] = []
    kernels = [kn for kn in _hand_kernels(nt) + _generated_kernels(nt)
               if only is None or only.search(kn[0])]
    for label, kernel, sig in kernels:
        try:
            ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=CC)
        except Exception as err:  # noqa: BLE001 - report every failure, then exit 1
            lines = str(err).strip().splitlines()
            failed.append(f"{label}: {type(err).__name__}: {lines[0] if lines else ''}"[:200])
            continue
        f64 = len(re.findall(r"\.f64\b", ptx))
        d64 = len(re.findall(r"\b(div|rem)\.[su]64\b", ptx))
        if "float32" in label and "float64" not in label and f64:
            f64_in_f32.append(f"{label} ({f64})")
        if d64:
            div64.append(f"{label} ({d64})")
        if verbose:
            print(f"ok {label}: f64 instructions {f64}, 64-bit div/rem {d64}")
    for line in failed:
        print("FAILED", line)
    print(f"compiled {len(kernels) - len(failed)} of {len(kernels)} kernels to PTX for "
          f"sm_{CC[0]}{CC[1]}")
    print(f"float32 kernels with f64 instructions: {', '.join(f64_in_f32) or 'none'}")
    print(f"kernels with 64-bit integer div/rem: {len(div64)}"
          + (f" ({', '.join(div64)})" if verbose else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
