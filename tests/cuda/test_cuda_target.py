"""The CUDA target from the main test process: the simulator tests (each file of
``tests/cuda/sim`` in a child process with ``NUMBA_ENABLE_CUDASIM=1``: numba picks the
simulator at its first import, which in this process happened long ago), the answer of
``rr.cuda_available()`` and the ``no CUDA device`` error without a device (real numba.cuda,
the simulator off), and the ``kernels["cuda"]`` table."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import relay_ref as rr
from relay_ref.ops.kernels import BUILTIN_CUDA_KERNELS
from relay_ref.ops.registry import KernelRef, get_op, has_op, op_kernel

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SIM_FILES = sorted((HERE / "sim").glob("test_*.py"))
#: the fewest tests each simulator file must pass (the sweep cannot silently shrink)
MIN_PASSED = {"test_cuda_sim_gemm_conv.py": 41, "test_cuda_sim_rows.py": 48,
              "test_cuda_sim_compile.py": 117}


def _child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(extra)
    return env


def test_every_simulator_file_is_run() -> None:
    assert {p.name for p in SIM_FILES} == set(MIN_PASSED)


@pytest.mark.parametrize("path", SIM_FILES, ids=[p.stem for p in SIM_FILES])
def test_simulator_tests_pass(path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        cwd=ROOT, env=_child_env(NUMBA_ENABLE_CUDASIM="1"), capture_output=True, text=True,
        timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    passed = re.search(r"(\d+) passed", out)
    assert passed is not None and int(passed.group(1)) >= MIN_PASSED[path.name], out[-3000:]
    assert "skipped" not in out.splitlines()[-1], out[-3000:]


_NO_DEVICE = """
import relay_ref as rr
print(rr.cuda_available())
mod = rr.parse("def @main(%x: Tensor[(2), float32]) { add(%x, %x) }")
try:
    rr.compile(mod, target="cuda")
except rr.RelayError as err:
    print("error:", err.diagnostics[0].message)
"""


def test_no_driver_means_no_device_and_a_clear_error() -> None:
    """A driver library that is not there (``NUMBA_CUDA_DRIVER``): deterministic, GPU or
    not."""
    proc = subprocess.run(
        [sys.executable, "-c", _NO_DEVICE], cwd=ROOT, capture_output=True, text=True,
        env=_child_env(NUMBA_ENABLE_CUDASIM="0", NUMBA_CUDA_DRIVER="/nonexistent/libcuda.so"),
        timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "False"
    assert lines[1].startswith("error: no CUDA device: ") and "libcuda" in lines[1], lines


def test_without_a_gpu_the_cuda_target_is_refused_here() -> None:
    """This process: real numba.cuda, no simulator. On a machine with a GPU there is a
    device, and nothing to refuse."""
    from relay_ref.compute.cuda import device_status, simulator

    if simulator():
        pytest.skip("this process runs numba's CUDA simulator: it is the device")
    ok, why = device_status()
    if ok:
        pytest.skip(f"a CUDA device is present: {why}")
    assert rr.cuda_available() is False
    mod = rr.parse("def @main(%x: Tensor[(2), float32]) { add(%x, %x) }")
    with pytest.raises(rr.RelayError) as err:
        rr.compile(mod, target="cuda")
    assert err.value.diagnostics[0].message == f"no CUDA device: {why}"
    assert rr.compile(mod)(__import__("numpy").ones(2, "float32")).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("name", sorted(BUILTIN_CUDA_KERNELS))
def test_cuda_table_entry_loads_with_the_protocol(name: str) -> None:
    assert has_op(name), name
    assert get_op(name).kernels.get("cuda") == KernelRef.parse(BUILTIN_CUDA_KERNELS[name])
    fn = op_kernel(name, "cuda")
    assert callable(fn) and callable(fn.supports)
    params = list(inspect.signature(fn).parameters)
    assert params == ["args", "attrs", "shape" if fn.returns_view else "out"], (name, params)
    assert fn.launches == (0 if fn.returns_view else 1)
    assert get_op(name).kernels.get("cpu") is not None  # the host path exists too


def test_generated_cuda_source_calls_only_what_numba_cuda_compiles() -> None:
    """numba's CUDA target has no scalar ``np.exp``, ``np.sqrt``, ``np.floor``, ...: every
    ``np.<name>(`` in a generated elementwise kernel (every op with a template, every
    dtype) is a dtype constructor or in numba's CUDA ufunc table; the math is the
    ``sm.<fn>_<dtype>`` functions of ``relay_ref.compute.cuda.scalar``, which exist.
    (``scripts/cuda_ptx_check.py`` compiles these sources to PTX where NVVM is installed.)"""
    import numpy as np
    from numba.cuda.ufuncs import ufunc_db

    from relay_ref.compute.cuda import scalar
    from relay_ref.executor.cuda_fused import SOURCE_DTYPES, one_op_sources

    allowed = {u.__name__ for u in ufunc_db()} | {np.dtype(d).type.__name__ for d in
                                                   SOURCE_DTYPES} | {"bool_"}
    sources = one_op_sources()
    assert len(sources) >= 240, len(sources)
    assert {d for _, d, _, _ in sources} == set(SOURCE_DTYPES)
    bad, used = [], set()
    for name, dtype, _, source in sources:
        body = source.split("def kernel", 1)[1]
        bad += [(name, dtype, f) for f in re.findall(r"\bnp\.(\w+)\(", body) if f not in allowed]
        used |= set(re.findall(r"\bsm\.(\w+)\(", body))
    assert not bad, bad
    assert used and used <= set(scalar.FUNCTIONS), used - set(scalar.FUNCTIONS)
    assert {"exp_float32", "floor_float64", "sqrt_float32", "pow_float32", "fmod_float64",
            "rint_float32", "isinf_float32", "sign_float64"} <= used


#: a sample of the PTX check (all of it takes a minute): the GEMM main loop, conv2d's
#: accessors, a row kernel, and templates that once used NumPy functions numba lacks
PTX_SAMPLE = (r"^(gemm|conv2d|softmax) float32$"
              r"|^(exp|floor_mod|power|sign|isnan|clip|maximum) (float32|int32)$")


def test_ptx_check_script_compiles_a_sample_or_says_why_not() -> None:
    """``scripts/cuda_ptx_check.py`` on a sample: with NVVM they compile (exit 0); without
    it, every failure is NVVM's reason, not a bug of the script or the kernels."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "cuda_ptx_check.py"),
                           "--only", PTX_SAMPLE],
                          cwd=ROOT, env=_child_env(), capture_output=True, text=True,
                          timeout=300)
    out = proc.stdout + proc.stderr
    if proc.returncode == 0:
        assert re.search(r"compiled (\d+) of \1 kernels", out), out[-2000:]
        assert int(re.search(r"compiled (\d+)", out).group(1)) == 13, out[-2000:]
        return
    failures = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert failures and all("NVVM" in line or "libnvvm" in line.lower() for line in failures), \
        out[-3000:]


def test_configurations_respect_cuda_limits() -> None:
    """Tiles and launch sizes a GPU cannot run are refused when the configuration is made
    (threads per block, static shared memory), not at the first launch."""
    from relay_ref.compute.cuda.config import GPU, MAX_SHARED_BYTES, CudaConfig, GemmTile

    assert GPU.gemm.threads <= 1024 and GPU.gemm.shared_bytes(8) <= MAX_SHARED_BYTES
    with pytest.raises(ValueError, match="threads per block"):
        GemmTile(128, 128, 8, 2, 2)  # 4096 threads
    with pytest.raises(ValueError, match="shared"):
        GemmTile(256, 256, 16, 8, 8)  # 1024 threads, 2 * 16 * 520 * 8 bytes
    with pytest.raises(ValueError, match="threads per block"):
        CudaConfig(threads=2048)
    with pytest.raises(ValueError, match="threads per block"):
        CudaConfig(row_threads=2048)
