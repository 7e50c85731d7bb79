"""The CUDA target against torch on the same GPU (fp32, TF32 off): issue 15's table.

    python benchmarks/gpu.py [--rounds 5] [--skip-resnet]

Rows (anchors measured on an H100, ``../shared/reference/performance.md`` section 6):

* GEMM 4096^3: ``relay_ref.compute.cuda.gemm`` (the register-blocked tile of
  ``config.GPU``) vs ``torch.matmul`` (cuBLAS); target >= 50 % of cuBLAS.
* conv2d 3x3 64->64 on 56x56, batch 32, padding 1: ``compute.cuda.conv`` (implicit GEMM) vs
  ``torch.nn.functional.conv2d`` (cuDNN); target <= 3x.
* elementwise add of two 256 MiB float32 tensors: the generated grid-stride kernel of
  ``executor.cuda_fused`` vs ``torch.add``, as bandwidth (3 x bytes / time); target >= 85 %.
* resnet50 end to end at batch 1 and 32: torchvision's ResNet-50 (random weights) exported to
  ONNX, ``from_onnx``, ``rr.compile(target="cuda")``: ``exe(x)`` on a host array (its time
  includes the input's copy to the device and the output's copy back) vs the torch module
  under ``torch.no_grad()`` doing the same work (``model(x.to("cuda")).cpu()``, the same
  two copies); targets <= 5x (batch 1) and <= 3x (batch 32).

Each time is the median over ``--rounds`` of a loop lasting at least 0.2 s, synchronised
before the clock stops. Without torch, without a CUDA device, or under numba's simulator it
prints why and exits with status 0 (nothing to measure).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _why_not() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install torch)"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    from relay_ref.compute.cuda import device_status, simulator

    ok, what = device_status()
    if not ok:
        return f"numba.cuda has no device: {what}"
    if simulator():
        return "numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1): nothing to time"
    return None


def _timeit(fn: Callable[[], object], sync: Callable[[], None], rounds: int) -> float:
    fn()
    sync()
    times = []
    for _ in range(rounds):
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            sync()
            elapsed = time.perf_counter() - start
            if elapsed >= 0.2:
                break
        times.append(elapsed / n)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--skip-resnet", action="store_true")
    opts = ap.parse_args(argv)
    why = _why_not()
    if why is not None:
        print(f"benchmarks/gpu.py: nothing measured: {why}")
        return 0
    import torch

    from relay_ref.compute.cuda import cuda_module, device_array, device_status, to_device
    from relay_ref.compute.cuda.conv import conv2d_nchw
    from relay_ref.compute.cuda.gemm import gemm

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cuda = cuda_module()
    dev = torch.device("cuda")

    def sync() -> None:
        cuda.synchronize()
        torch.cuda.synchronize()

    rows: list[tuple[str, str, str, str, str]] = []
    rng = np.random.default_rng(0)
    print(f"GPU: {device_status()[1]} (torch {torch.__version__})")

    # GEMM 4096^3
    n = 4096
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    da, db, dc = to_device(a), to_device(b), device_array((n, n), np.float32)
    ta, tb = torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev)
    ours = _timeit(lambda: gemm(da, db, dc, n, n, n, (0, n, 1), (0, n, 1), (0, n, 1)),
                   sync, opts.rounds)
    ref = _timeit(lambda: torch.matmul(ta, tb), sync, opts.rounds)
    flops = 2 * n ** 3
    np.testing.assert_allclose(dc.copy_to_host()[:64, :64], (ta @ tb).cpu().numpy()[:64, :64],
                               rtol=1e-3, atol=1e-2)
    rows.append(("SGEMM 4096^3", f"{flops / ours / 1e12:.1f} TFLOP/s",
                 f"{flops / ref / 1e12:.1f} TFLOP/s", f"{ref / ours * 100:.0f} % of cuBLAS",
                 ">= 50 %"))

    # conv2d 3x3 64->64, 56x56, batch 32
    x = rng.standard_normal((32, 64, 56, 56)).astype(np.float32)
    w = (rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32)
    dx, dw, dy = to_device(x), to_device(w), device_array((32, 64, 56, 56), np.float32)
    tx, tw = torch.from_numpy(x).to(dev), torch.from_numpy(w).to(dev)
    ours = _timeit(lambda: conv2d_nchw(dx, dw, dy, (1, 1), (1, 1), (1, 1), 1), sync,
                   opts.rounds)
    ref = _timeit(lambda: torch.nn.functional.conv2d(tx, tw, padding=1), sync, opts.rounds)
    np.testing.assert_allclose(
        dy.copy_to_host()[:2, :8], torch.nn.functional.conv2d(tx, tw, padding=1)
        .cpu().numpy()[:2, :8], rtol=1e-3, atol=1e-3)
    rows.append(("conv2d 3x3 64->64 56^2 b32", f"{ours * 1e3:.3f} ms", f"{ref * 1e3:.3f} ms",
                 f"{ours / ref:.2f}x cuDNN", "<= 3x"))

    # elementwise add, 256 MiB per operand
    rows.append(_elementwise_row(torch, dev, sync, opts.rounds))

    if not opts.skip_resnet:
        for batch, goal in ((1, 5), (32, 3)):
            rows.append(_resnet_row(torch, dev, sync, opts.rounds, batch, goal))

    head = ("quantity", "relay_ref (numba.cuda)", "torch", "ratio", "target")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


def _elementwise_row(torch: object, dev: object, sync: Callable[[], None],
                     rounds: int) -> tuple[str, str, str, str, str]:
    from relay_ref.compute.cuda import to_device
    from relay_ref.executor.cuda_fused import build_cuda_elementwise
    from relay_ref.ir.expr import Call, Op, Var
    from relay_ref.ir.types import TensorType

    n = 256 * 2 ** 20 // 4
    ty = TensorType((n,), "float32")
    p, q = Var("p", ty), Var("q", ty)
    body = Call(Op("add"), (p, q), None, (), None)
    kernel = build_cuda_elementwise((p, q), body, {p: ty, q: ty, body: ty})
    a = np.ones(n, np.float32)
    da, db = to_device(a), to_device(a)
    out = kernel([da, db])
    ta, tb = torch.from_numpy(a).to(dev), torch.from_numpy(a).to(dev)  # type: ignore[attr-defined]
    tout = torch.empty_like(ta)  # type: ignore[attr-defined]
    ours = _timeit(lambda: kernel([da, db], out), sync, rounds)
    ref = _timeit(lambda: torch.add(ta, tb, out=tout), sync, rounds)  # type: ignore[attr-defined]
    moved = 3 * a.nbytes
    return ("elementwise add 256 MiB", f"{moved / ours / 1e12:.2f} TB/s",
            f"{moved / ref / 1e12:.2f} TB/s", f"{ref / ours * 100:.0f} % of torch", ">= 85 %")


def _resnet_row(torch: object, dev: object, sync: Callable[[], None], rounds: int,
                batch: int, goal: int) -> tuple[str, str, str, str, str]:
    name = f"resnet50 batch {batch}"
    try:
        import io

        import onnx
        import torchvision  # type: ignore[import-not-found]

        import relay_ref as rr
        from relay_ref.frontend.onnx import from_onnx

        model = torchvision.models.resnet50().eval()
        x = torch.randn(batch, 3, 224, 224)  # type: ignore[attr-defined]
        buf = io.BytesIO()
        torch.onnx.export(model, (x,), buf, opset_version=17,  # type: ignore[attr-defined]
                          dynamo=False)
        mod, params = from_onnx(onnx.load_from_string(buf.getvalue()))
        exe = rr.compile(mod, params, target="cuda")
        xn = x.numpy()
        got = exe(xn)
        got = got[0] if isinstance(got, tuple) else got
        tmodel = model.to(dev)
        with torch.no_grad():  # type: ignore[attr-defined]
            want = tmodel(x.to(dev)).cpu().numpy()
            # the same work as exe(xn): the input to the device, the output back
            ref = _timeit(lambda: tmodel(x.to(dev)).cpu(), sync, rounds)
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
        ours = _timeit(lambda: exe(xn), sync, rounds)
        print(f"{name}: {exe.plan.device_launches} launches per call, host steps: "
              f"{', '.join(exe.plan.host_ops) or 'none'}")
    except Exception as err:  # noqa: BLE001 - reported in the table, not fatal
        return (name, "not measured", "", f"{type(err).__name__}: {err}"[:80], f"<= {goal}x")
    return (name, f"{ours * 1e3:.2f} ms", f"{ref * 1e3:.2f} ms", f"{ours / ref:.2f}x torch",
            f"<= {goal}x")


if __name__ == "__main__":
    sys.exit(main())
