"""Single operators through ``rr.compile`` against onnxruntime with the same 2 threads.

    python benchmarks/ops.py [--rounds 9] [--only conv dense ...] [--plans] [--load N]
                             [--markdown]

Each case is a one-operator Relay module compiled with ``rr.compile`` (weights, biases and
batch-norm statistics bound with ``params=``, as a model binds them) and the same operator as
a one-node ONNX model run by onnxruntime (CPU EP, ``intra_op_num_threads=2``,
``inter_op_num_threads=1``, weights as initializers). Before timing, both run a few times
(numba compiles on the first call) and their outputs are compared (``np.allclose``); a case
whose outputs differ is reported, not timed.

Timing follows ../shared/reference/performance.md: rounds interleave the two implementations
in this process (the order alternates between rounds), each measurement is the mean of a
loop of calls long enough to last ~30 ms, the harness sleeps 0.12 s between implementations
(OpenBLAS, libgomp and ORT pools keep spinning after a call), and the ratio is the median
over rounds of the per-round ratio relay / ORT (the lowest and highest per-round ratio are
printed too: on a shared 2-core machine they show how much load disturbed the run). The
tiny-op row is the per-call cost of ``exe(a, b)`` on two (4,) tensors in microseconds (and
of ``sess.run`` for the same Add). ``--load N``: ``N`` busy processes (``benchmarks/load.py``)
compete for the cores while the rounds run (both runtimes under the same load); the note
gives the load average before and after.
Results are recorded in benchmarks/README.md ("Executor: operators vs onnxruntime").
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interleave import blas_threads, one_round, per_call  # noqa: E402  (benchmarks/interleave.py)
from load import busy, competing, loadavg, process_count  # noqa: E402  (benchmarks/load.py)

import relay_ref as rr  # noqa: E402

F32 = "float32"
SLEEP = 0.12  # seconds between implementations (thread pools wind down)
TARGET_SECONDS = 0.03  # each measurement loops for at least this long


@dataclass(frozen=True)
class Case:
    """One operator: the Relay ``@main`` text, its bound ``params`` and call ``inputs``
    (in parameter order), the equivalent ONNX node, and the target ratio to ORT
    (``limit``; for ``tiny`` an absolute bound in microseconds)."""

    name: str
    kind: str  # conv2d | dense | elementwise | batch_norm | softmax | global pool | ...
    limit: float
    relay: str
    inputs: dict[str, np.ndarray]
    params: dict[str, np.ndarray] = field(default_factory=dict)
    onnx_op: str = ""
    onnx_attrs: dict[str, Any] = field(default_factory=dict)
    onnx_inputs: tuple[str, ...] = ()  # names, from inputs and params, in ONNX order
    rtol: float = 1e-5
    atol: float = 1e-6
    tiny: bool = False


def _tensor(shape: tuple[int, ...]) -> str:
    return f"Tensor[({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''}), float32]"


def _main(body: str, inputs: dict[str, np.ndarray], params: dict[str, np.ndarray]) -> str:
    sig = ", ".join(f"%{k}: {_tensor(v.shape)}" for k, v in {**inputs, **params}.items())
    return f"def @main({sig}) {{\n  {body}\n}}\n"


def cases(rng: np.random.Generator) -> list[Case]:
    """The operators of issue 12's "Done when", with random inputs and He-scaled weights."""

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(F32)

    def he(*shape: int) -> np.ndarray:
        return normal(*shape, scale=float(np.sqrt(2.0 / np.prod(shape[1:]))))

    out: list[Case] = []

    def add(name: str, kind: str, limit: float, body: str, inputs: dict, params: dict,
            onnx_op: str, onnx_inputs: tuple[str, ...], **kw: Any) -> None:
        out.append(Case(name, kind, limit, _main(body, inputs, params), inputs, params,
                        onnx_op, kw.pop("onnx_attrs", {}), onnx_inputs, **kw))

    x56 = normal(1, 64, 56, 56)
    add("conv2d 3x3 (1,64,56,56)x(64,64,3,3) pad 1", "conv2d", 3.0,
        "nn.conv2d(%x, %w, padding=[1, 1], channels=64, kernel_size=[3, 3])",
        {"x": x56}, {"w": he(64, 64, 3, 3)}, "Conv", ("x", "w"),
        onnx_attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, rtol=1e-3, atol=1e-4)
    add("conv2d 1x1 (1,256,56,56)->64", "conv2d", 3.0,
        "nn.conv2d(%x, %w, channels=64, kernel_size=[1, 1])",
        {"x": normal(1, 256, 56, 56)}, {"w": he(64, 256, 1, 1)}, "Conv", ("x", "w"),
        onnx_attrs={"kernel_shape": [1, 1]}, rtol=1e-3, atol=1e-4)
    add("depthwise 3x3 (1,64,56,56) groups=64", "conv2d", 3.0,
        "nn.conv2d(%x, %w, padding=[1, 1], groups=64, channels=64, kernel_size=[3, 3])",
        {"x": x56}, {"w": he(64, 1, 3, 3)}, "Conv", ("x", "w"),
        onnx_attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "group": 64},
        rtol=1e-4, atol=1e-5)
    add("dense 4096x4096, batch 1", "dense", 1.5, "nn.dense(%x, %w, units=4096)",
        {"x": normal(1, 4096)}, {"w": he(4096, 4096)}, "Gemm", ("x", "w"),
        onnx_attrs={"transB": 1}, rtol=1e-3, atol=1e-4)
    add("dense 1024x1024, batch 64", "dense", 1.5, "nn.dense(%x, %w, units=1024)",
        {"x": normal(64, 1024)}, {"w": he(1024, 1024)}, "Gemm", ("x", "w"),
        onnx_attrs={"transB": 1}, rtol=1e-3, atol=1e-4)
    add("relu (1,64,56,56)", "elementwise", 1.5, "nn.relu(%x)", {"x": x56}, {},
        "Relu", ("x",))
    add("broadcast add (1,64,56,56)+(64,1,1)", "elementwise", 1.5, "add(%x, %b)",
        {"x": x56}, {"b": normal(64, 1, 1)}, "Add", ("x", "b"))
    gamma, beta, mean = normal(64), normal(64), normal(64)
    var = rng.uniform(0.5, 1.5, 64).astype(F32)
    add("batch_norm (1,64,56,56)", "batch_norm", 1.5,
        "nn.batch_norm(%x, %gamma, %beta, %mean, %var).0", {"x": x56},
        {"gamma": gamma, "beta": beta, "mean": mean, "var": var}, "BatchNormalization",
        ("x", "gamma", "beta", "mean", "var"), onnx_attrs={"epsilon": 1e-5},
        rtol=1e-4, atol=1e-5)
    add("softmax (1,1000)", "softmax", 1.5, "nn.softmax(%x)", {"x": normal(1, 1000)}, {},
        "Softmax", ("x",), onnx_attrs={"axis": -1}, atol=1e-7)
    add("softmax (64,1000)", "softmax", 1.5, "nn.softmax(%x)", {"x": normal(64, 1000)}, {},
        "Softmax", ("x",), onnx_attrs={"axis": -1}, atol=1e-7)
    add("max_pool2d 3x3/2 pad 1 (1,64,112,112)", "max_pool", 10.0,
        "nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])",
        {"x": normal(1, 64, 112, 112)}, {}, "MaxPool", ("x",),
        onnx_attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
    add("global_avg_pool2d (1,2048,7,7)", "global pool", 1.5, "nn.global_avg_pool2d(%x)",
        {"x": normal(1, 2048, 7, 7)}, {}, "GlobalAveragePool", ("x",))
    add("tiny add (4,)+(4,), per call", "tiny op call", 5.0, "add(%a, %b)",
        {"a": normal(4), "b": normal(4)}, {}, "Add", ("a", "b"), tiny=True)
    return out


def onnx_session(case: Case, out_shape: tuple[int, ...]) -> Any:
    """A one-node ONNX model of ``case`` in an ORT session with 2 intra-op threads."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    inputs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
              for k, v in case.inputs.items()]
    inits = [numpy_helper.from_array(v, k) for k, v in case.params.items()]
    node = helper.make_node(case.onnx_op, list(case.onnx_inputs), ["y"], **case.onnx_attrs)
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
    graph = helper.make_graph([node], case.name, inputs, [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])



def calls_for(fn: Callable[[], object]) -> int:
    """How many calls make a measurement last about ``TARGET_SECONDS``."""
    t = per_call(fn, 3)
    return max(3, int(TARGET_SECONDS / max(t, 1e-7)))


@dataclass
class Row:
    case: Case
    relay: float | None = None  # median seconds per call
    ort: float | None = None
    ratio: float | None = None  # median of per-round ratios
    spread: tuple[float, float] | None = None  # lowest and highest per-round ratio
    note: str = ""
    plan: str = ""


def prepare(case: Case) -> tuple[Row, Callable[[], object] | None, Callable[[], object] | None]:
    """Compile, warm up and check one case; the row plus the two callables to time."""
    row = Row(case)
    args = list(case.inputs.values())
    try:
        exe = rr.compile(rr.parse(case.relay), params=case.params or None)
        for _ in range(3):  # the first call compiles numba kernels
            got = exe(*args)
        row.plan = str(exe.plan)
    except Exception as err:  # noqa: BLE001 - a failing case is reported, not fatal
        row.note = f"relay error: {type(err).__name__}: {str(err).splitlines()[0][:120]}"
        return row, None, None
    got = np.asarray(got)
    sess = onnx_session(case, got.shape)
    feeds = dict(case.inputs)
    for _ in range(3):
        want = sess.run(None, feeds)[0]
    if got.shape != want.shape or not np.allclose(got, want, rtol=case.rtol, atol=case.atol):
        diff = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("nan")
        row.note = (f"WRONG: differs from ORT (shape {got.shape} vs {want.shape}, "
                    f"max |d| {diff:.3g})")
        return row, None, None
    return row, (lambda: exe(*args)), (lambda: sess.run(None, feeds))


def measure(rows: list[tuple[Row, Any, Any]], rounds: int, progress: Progress) -> None:
    """Interleaved rounds for every prepared case (see the module docstring)."""
    task = progress.add_task("timing", total=len(rows) * rounds)
    for row, relay_fn, ort_fn in rows:
        progress.update(task, description=row.case.name)
        if relay_fn is None:
            progress.advance(task, rounds)
            continue
        n_relay, n_ort = calls_for(relay_fn), calls_for(ort_fn)
        t_relay, t_ort, ratios = [], [], []
        for r in range(rounds):
            got = one_round(r, [("relay", relay_fn, n_relay), ("ort", ort_fn, n_ort)], SLEEP)
            t_relay.append(got["relay"])
            t_ort.append(got["ort"])
            ratios.append(got["relay"] / got["ort"])
            progress.advance(task)
        row.relay, row.ort = statistics.median(t_relay), statistics.median(t_ort)
        row.ratio = statistics.median(ratios)
        row.spread = (min(ratios), max(ratios))


def verdict(row: Row) -> str:
    if row.ratio is None:
        return "-"
    value = row.relay * 1e6 if row.case.tiny else row.ratio
    return "met" if value <= row.case.limit else "missed"


def settings() -> str:
    """The thread settings in effect (after the executor imported numba)."""
    import onnxruntime

    from relay_ref.compute.cpu import numba  # the package sets the OpenMP policy first

    blas = blas_threads()
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "(not started)"
    return (f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, NUMBA_THREADING_LAYER="
            f"{os.environ.get('NUMBA_THREADING_LAYER')} (layer in use: {layer}), numba threads "
            f"{numba.get_num_threads()}, numpy OpenBLAS threads {blas}; onnxruntime "
            f"{onnxruntime.__version__} intra_op 2 / inter_op 1; numpy {np.__version__}, "
            f"numba {numba.__version__}, Python {platform.python_version()}, "
            f"{os.cpu_count()} CPUs")


def _fmt_time(row: Row, t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t * 1e6:.2f} us" if row.case.tiny else f"{t * 1e3:.3f}"


def table_rows(rows: list[Row]) -> list[list[str]]:
    body = []
    for row in rows:
        c = row.case
        target = f"<= {c.limit:g} us" if c.tiny else f"<= {c.limit:g}x"
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
        spread = "-" if row.spread is None else f"{row.spread[0]:.2f}-{row.spread[1]:.2f}"
        body.append([c.name, _fmt_time(row, row.relay), _fmt_time(row, row.ort), ratio, spread,
                     f"{c.kind} {target}", verdict(row) if not row.note else row.note])
    return body


HEADS = ["op", "relay ms", "ORT ms", "relay / ORT", "rounds' range", "target", "met"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Single operators through rr.compile against onnxruntime with the same "
                    "2 threads (interleaved rounds, outputs checked first).",
        epilog="Times are medians over rounds (ms per call; the tiny-op row in us).")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (default 9)")
    parser.add_argument("--only", nargs="+", metavar="WORD", default=None,
                        help="run only the cases whose name contains one of these words")
    parser.add_argument("--plans", action="store_true",
                        help="also print each case's exe.plan")
    parser.add_argument("--seed", type=int, default=0, help="random inputs' seed (default 0)")
    parser.add_argument("--load", type=process_count, default=0, metavar="N",
                        help="N busy processes compete for the cores during the rounds "
                             "(benchmarks/load.py; default 0)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    load0 = loadavg()
    selected = [c for c in cases(np.random.default_rng(args.seed))
                if args.only is None or any(w in c.name for w in args.only)]
    prepared = []
    with Progress(transient=True) as progress:
        task = progress.add_task("compile + check", total=len(selected))
        for case in selected:
            progress.update(task, description=f"compile + check: {case.name}")
            prepared.append(prepare(case))
            progress.advance(task)
        with competing(args.load):
            measure(prepared, args.rounds, progress)
    rows = [row for row, _, _ in prepared]
    note = (f"{settings()}; " + (f"{busy(args.load)} competing (--load)"
                                 if args.load else "no competing processes started")
            + f"; load average (1 min) before/after {load0:.2f} / {loadavg():.2f}")
    if args.markdown:
        print("| " + " | ".join(HEADS) + " |")
        print("|" + "---|" * len(HEADS))
        for line in table_rows(rows):
            print("| " + " | ".join(line) + " |")
        print(f"\n{note}; {args.rounds} rounds")
    else:
        table = Table(title="single operators: rr.compile vs onnxruntime (2 threads)")
        for h in HEADS:
            table.add_column(h, justify="left" if h in ("op", "target", "met") else "right")
        for line in table_rows(rows):
            table.add_row(*line)
        console = Console(width=max(Console().width, 150))
        console.print(table)
        console.print(f"{note}; {args.rounds} rounds")
    if args.plans:
        for row in rows:
            print(f"\n== {row.case.name}\n{row.plan}")


if __name__ == "__main__":
    main()
