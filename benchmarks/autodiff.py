"""One training step of a small CNN: ``rr.compile`` of Relay's AD against ``jax.jit``, CPU.

    python benchmarks/autodiff.py [--rounds 7] [--batch 32] [--threads 2] [--markdown]
                                  [--profile]

The model (MNIST-sized, float32): 1x28x28 images -> conv2d 3x3 (8 filters, padding 1) ->
bias_add -> relu -> max_pool2d 2x2 -> conv2d 3x3 (16) -> bias_add -> relu -> max_pool2d 2x2
-> batch_flatten -> dense (10) -> bias_add -> log_softmax, mean cross entropy against
one-hot labels; batch 32, seeded weights and data. What is timed, each against jax:

* **step**: the training step written in Relay text, ``gradient(@loss)`` (expanded by the
  higher-order AD pass when ``rr.compile`` runs, which simplifies the expansion by
  PartialEvaluate + DeadCodeElimination before its default pipeline: ``exe.plan`` lists
  them) followed by an SGD update of the six parameters; jax: ``jax.jit`` of
  ``value_and_grad(loss)`` followed by the same update. Both return the loss and the new
  parameters.
* **gradients, first_order**: ``rr.compile(rr.gradient(loss, "first_order"))`` (straight-line
  reverse pass); jax: ``jax.jit(value_and_grad(loss, argnums=all))``, the loss and the
  gradient of every input.
* **gradients, higher_order + PE + DCE**: ``rr.gradient(loss)`` simplified by
  PartialEvaluate + DeadCodeElimination, then ``rr.compile``; the same jax function.

Outputs are compared with jax's first (float32: rtol 1e-3, atol 1e-5). Threads: numba's
``prange`` pool and NumPy's OpenBLAS use 2 threads by default on this 2-core machine (the
executor's settings, benchmarks/README.md "Executor: thread settings"); jax's CPU client
(XLA) sizes its intra-op Eigen pool to the cores it sees, also 2 here, and has no flag that
sets a count. ``--threads 1`` makes all three single-threaded instead, before anything is
imported: ``NUMBA_NUM_THREADS=1``, ``OPENBLAS_NUM_THREADS=1`` and
``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``. The
settings in effect are printed under the table.

Timing (../shared/reference/performance.md, as benchmarks/models.py): after warm-up calls,
interleaved rounds in this process, the order alternating between rounds, 0.12 s sleeps
between implementations, each measurement the mean of a loop lasting at least 0.2 s; each
ratio is the median over rounds of the per-round ratio relay / jax, with the lowest and
highest (they show the machine's load). Compile times (``rr.compile``, including the AD
expansion and its simplification; jax's trace + XLA compile at the first call) are printed
too.
``--profile`` then prints where the step's time goes: the step compiled with
``profile=True``, per kernel (``exe.stats``; "reference" steps are the ops without a CPU
kernel, ``exe.plan`` names them) the median over rounds of 10 calls of its time per call.
Results are recorded in benchmarks/README.md ("Autodiff: a CNN training step vs jax").
"""

from __future__ import annotations

import argparse
import os
import sys

if __name__ == "__main__" and "--threads" in sys.argv[1:]:
    # before numba, NumPy's OpenBLAS and jax start their thread pools
    _n = sys.argv[sys.argv.index("--threads") + 1]
    if _n == "1":
        os.environ["NUMBA_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = "1"
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_"
                                   "eigen=false intra_op_parallelism_threads=1").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from interleave import blas_threads, one_round, per_call  # noqa: E402  (benchmarks/interleave.py)

import relay_ref as rr  # noqa: E402

SLEEP = 0.12  # seconds between implementations (thread pools wind down)
TARGET_SECONDS = 0.2  # each measurement loops for at least this long
C, S, F1, F2, K = 1, 28, 8, 16, 10  # channels, image side, filters, filters, classes
LR = 0.1
NAMES = ("x", "y", "w1", "b1", "w2", "b2", "w3", "b3")


def tensor(*shape: int) -> str:
    return f"Tensor[({', '.join(map(str, shape))},), float32]"


def relay_text(batch: int) -> tuple[str, str]:
    """The loss as ``@main`` and the training step (``@loss`` and ``@main``)."""
    flat = F2 * (S // 4) ** 2
    sig = (f"%x: {tensor(batch, C, S, S)}, %y: {tensor(batch, K)}, "
           f"%w1: {tensor(F1, C, 3, 3)}, %b1: {tensor(F1)}, %w2: {tensor(F2, F1, 3, 3)}, "
           f"%b2: {tensor(F2)}, %w3: {tensor(K, flat)}, %b3: {tensor(K)}")
    loss = f"""def @loss({sig}) -> float32 {{
  let %c1 = nn.relu(nn.bias_add(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]), %b1));
  let %h1 = nn.max_pool2d(%c1, pool_size=[2, 2], strides=[2, 2]);
  let %c2 = nn.relu(nn.bias_add(nn.conv2d(%h1, %w2, padding=[1, 1, 1, 1]), %b2));
  let %h2 = nn.max_pool2d(%c2, pool_size=[2, 2], strides=[2, 2]);
  let %z = nn.bias_add(nn.dense(nn.batch_flatten(%h2), %w3), %b3);
  negative(sum(nn.log_softmax(%z) * %y)) / {batch}f
}}
"""
    updates = ", ".join(f"%{p} - {LR}f * %g.{i}" for i, p in enumerate(NAMES) if i >= 2)
    step = loss + f"""
def @main({sig}) {{
  let %r = gradient(@loss)({", ".join("%" + n for n in NAMES)});
  let %g = %r.1;
  (%r.0, ({updates}))
}}
"""
    return loss.replace("@loss", "@main"), step


def jax_functions(batch: int) -> tuple[Callable, Callable]:
    """``jax.jit`` of the training step and of value_and_grad over every input."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def pool(r):
        return lax.reduce_window(r, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def conv(x, w, b):
        c = lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return jax.nn.relu(c + b[None, :, None, None])

    def loss(x, y, w1, b1, w2, b2, w3, b3):
        h = pool(conv(pool(conv(x, w1, b1)), w2, b2))
        z = h.reshape(batch, -1) @ w3.T + b3
        return -jnp.sum(jax.nn.log_softmax(z) * y) / batch

    grads = jax.value_and_grad(loss, argnums=tuple(range(len(NAMES))))

    def step(x, y, *params):
        value, g = jax.value_and_grad(loss, argnums=tuple(range(2, len(NAMES))))(x, y, *params)
        return value, tuple(p - LR * d for p, d in zip(params, g, strict=True))

    return jax.jit(step), jax.jit(grads)


def inputs(batch: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    flat = F2 * (S // 4) ** 2
    arrays = [rng.normal(size=(batch, C, S, S)), np.eye(K)[rng.integers(0, K, batch)],
              rng.normal(size=(F1, C, 3, 3)) * 0.3, rng.normal(size=F1) * 0.1,
              rng.normal(size=(F2, F1, 3, 3)) * 0.1, rng.normal(size=F2) * 0.1,
              rng.normal(size=(K, flat)) * 0.05, rng.normal(size=K) * 0.1]
    return [a.astype("float32") for a in arrays]


def leaves(value) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in leaves(v)]
    return [np.asarray(value)]


def block(value):
    """Wait for jax's asynchronous dispatch to finish (every array of the result)."""
    import jax

    return jax.block_until_ready(value)


@dataclass
class Row:
    """One comparison (seconds per call)."""

    name: str
    relay_fn: Callable[[], object]
    jax_fn: Callable[[], object]
    compile_s: float
    relay: float = 0.0
    jax: float = 0.0
    ratio: float = 0.0
    spread: tuple[float, float] = (0.0, 0.0)
    error: float = 0.0  # largest |relay - jax| / max(|jax|, 1e-3) over the outputs


def check(row: Row, got, want) -> None:
    worst = 0.0
    for g, w in zip(leaves(got), leaves(want), strict=True):
        w = np.asarray(w)
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-3, atol=1e-5):
            raise SystemExit(f"{row.name}: relay and jax differ (shapes {g.shape} / {w.shape}, "
                             f"max |d| {np.max(np.abs(g - w)):.3g})")
        worst = max(worst, float(np.max(np.abs(g - w) / np.maximum(np.abs(w), 1e-3))))
    row.error = worst


def build(batch: int) -> tuple[list[Row], float]:
    """Compile and check the three comparisons; jax's first-call (trace + compile) time."""
    loss_text, step_text = relay_text(batch)
    args = inputs(batch)
    jax_step, jax_grads = jax_functions(batch)
    start = time.perf_counter()
    want_step = block(jax_step(*args))
    want_grads = block(jax_grads(*args))
    jax_compile = time.perf_counter() - start

    def compiled(make: Callable[[], rr.IRModule]) -> tuple[Callable, float]:
        start = time.perf_counter()
        exe = rr.compile(make())
        exe(*args)  # the first call loads or compiles the numba kernels
        return exe, time.perf_counter() - start

    rows = []
    step, t = compiled(lambda: rr.parse(step_text))
    rows.append(Row("step: gradient(@loss) + SGD (higher-order AD)",
                    lambda: step(*args), lambda: block(jax_step(*args)), t))
    check(rows[-1], step(*args), want_step)
    first, t = compiled(lambda: rr.gradient(rr.parse(loss_text), "first_order"))
    rows.append(Row("gradients: first_order", lambda: first(*args),
                    lambda: block(jax_grads(*args)), t))
    check(rows[-1], first(*args), want_grads)
    simple, t = compiled(lambda: rr.optimize(rr.gradient(rr.parse(loss_text)),
                                             ["PartialEvaluate", "DeadCodeElimination"]))
    rows.append(Row("gradients: higher_order + PE + DCE", lambda: simple(*args),
                    lambda: block(jax_grads(*args)), t))
    check(rows[-1], simple(*args), want_grads)
    return rows, jax_compile


def measure(rows: list[Row], rounds: int) -> None:
    """Interleaved rounds over every row's two callables (see the module docstring)."""
    entries = []
    for i, row in enumerate(rows):
        for _ in range(2):  # warm both
            row.relay_fn()
            row.jax_fn()
        entries.append((f"relay{i}", row.relay_fn,
                        max(1, int(TARGET_SECONDS / per_call(row.relay_fn, 1)))))
        entries.append((f"jax{i}", row.jax_fn,
                        max(1, int(TARGET_SECONDS / per_call(row.jax_fn, 1)))))
    got: dict[str, list[float]] = {label: [] for label, _, _ in entries}
    for r in range(rounds):
        for label, t in one_round(r, entries, SLEEP).items():
            got[label].append(t)
    for i, row in enumerate(rows):
        relay, jx = got[f"relay{i}"], got[f"jax{i}"]
        ratios = [a / b for a, b in zip(relay, jx, strict=True)]
        row.relay, row.jax = statistics.median(relay), statistics.median(jx)
        row.ratio = statistics.median(ratios)
        row.spread = (min(ratios), max(ratios))


def settings() -> str:
    """The thread settings in effect (after numba and jax started)."""
    import jax

    from relay_ref.compute.cpu import numba  # the package sets the OpenMP policy first

    blas = blas_threads()
    return (f"numba threads {numba.get_num_threads()} (OMP_WAIT_POLICY="
            f"{os.environ.get('OMP_WAIT_POLICY')}), numpy OpenBLAS threads {blas}; jax "
            f"{jax.__version__} on {jax.devices()[0].platform}, XLA_FLAGS="
            f"{os.environ.get('XLA_FLAGS', '(unset: one intra-op thread per core)')}; "
            f"numpy {np.__version__}, numba {numba.__version__}, Python "
            f"{platform.python_version()}, {os.cpu_count()} CPUs "
            f"({len(os.sched_getaffinity(0))} usable)")


def profile_step(batch: int, rounds: int) -> str:
    """The step's time per kernel (``profile=True``): medians over ``rounds`` rounds of 10
    calls, slowest first, with the load average."""
    _, step_text = relay_text(batch)
    args = inputs(batch)
    exe = rr.compile(rr.parse(step_text), profile=True)
    for _ in range(3):
        exe(*args)
    per: dict[str, list[float]] = {}
    totals = []
    for _ in range(rounds):
        exe.stats.kernels.clear()
        for _ in range(10):
            exe(*args)
        for label, (_, secs) in exe.stats.kernels.items():
            per.setdefault(label, []).append(secs / 10)
        totals.append(sum(secs for _, secs in exe.stats.kernels.values()) / 10)
    lines = [f"step profile ({rounds} rounds of 10 calls; load average "
             f"{os.getloadavg()[0]:.2f}): kernels {statistics.median(totals) * 1e3:.2f} ms "
             f"per call (median)"]
    for label, times in sorted(per.items(), key=lambda kv: -statistics.median(kv[1])):
        lines.append(f"  {label[:72]:72} {statistics.median(times) * 1e3:8.3f} ms")
    return "\n".join(lines)


HEADS = ["what", "relay ms", "jax ms", "relay / jax", "rounds' range", "relay compile s",
         "max rel. diff"]


def table_rows(rows: list[Row]) -> list[list[str]]:
    return [[r.name, f"{r.relay * 1e3:.2f}", f"{r.jax * 1e3:.2f}", f"{r.ratio:.1f}x",
             f"{r.spread[0]:.1f}-{r.spread[1]:.1f}", f"{r.compile_s:.2f}", f"{r.error:.1e}"]
            for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(
        description="A small CNN's training step through rr.compile (Relay AD) and jax.jit "
                    "on the CPU, same threads: outputs checked, then interleaved rounds.")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--batch", type=int, default=32, help="images per step (default 32)")
    parser.add_argument("--threads", choices=("1", "2"), default="2",
                        help="2: every library's default on this 2-core machine; 1: numba, "
                             "OpenBLAS and XLA single-threaded (set before importing them)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--profile", action="store_true",
                        help="then print the step's time per kernel (profile=True)")
    args = parser.parse_args()

    from rich.console import Console

    load0 = os.getloadavg()
    console = Console(stderr=True)
    with console.status("compiling and checking (relay and jax)"):
        rows, jax_compile = build(args.batch)
    with console.status(f"{args.rounds} interleaved rounds"):
        measure(rows, args.rounds)
    load = os.getloadavg()
    note = (f"batch {args.batch}, float32; {args.rounds} rounds; jax first call (trace + "
            f"compile of both functions) {jax_compile:.2f} s; {settings()}; load average "
            f"before/after {load0[0]:.2f} / {load[0]:.2f}")
    if args.markdown:
        print("| " + " | ".join(HEADS) + " |")
        print("|" + "---|" * len(HEADS))
        for line in table_rows(rows):
            print("| " + " | ".join(line) + " |")
        print(f"\n{note}")
        if args.profile:
            print(f"\n{profile_step(args.batch, args.rounds)}")
        return
    from rich.table import Table

    table = Table(title="a small CNN's training step: rr.compile (Relay AD) vs jax.jit, CPU")
    for h in HEADS:
        table.add_column(h, justify="left" if h == "what" else "right")
    for line in table_rows(rows):
        table.add_row(*line)
    out = Console(width=max(Console().width, 140))
    out.print(table)
    out.print(note)
    if args.profile:
        out.print(profile_step(args.batch, args.rounds), markup=False)


if __name__ == "__main__":
    main()
