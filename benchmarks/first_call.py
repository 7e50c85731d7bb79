"""First call of a compiled ResNet-50-sized program, cold and warm, and its steady state.

    python benchmarks/first_call.py [--warm-runs 3] [--rounds 7] [--no-ort] [--markdown]

The program is ``relay_ref.testing.typed_strategies.resnet_like_module()`` (ResNet-50's
layout: 53 convolutions each followed by batch norm, 16 bottlenecks, global pooling, dense,
softmax; batch 1, 224x224) with every weight bound by ``params=``: He-scaled normal
convolution and dense weights, batch-norm gamma in [0.5, 1], beta and mean ~ N(0, 0.1), var
in [0.5, 1.5] (../shared/reference/performance.md section 2).

* **cold**: a fresh subprocess with ``RELAY_REF_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` both
  pointing at a new empty temporary directory: every numba kernel compiles.
* **warm**: new subprocesses with the same directories, now filled by the cold run.

Each subprocess times ``rr.compile(mod, params=...)`` and the first ``exe(x)`` (building
the module and drawing the weights are not counted; importing relay_ref and numpy is
printed separately). Target: compile + first call <= 2 s warm, <= 5 s cold (issue 30).

Then, in this process (same warm cache), the compiled logits (the program without its final
softmax) are checked once against ``rr.evaluate`` on the same module and weights (allclose
rtol 1e-3), and the steady-state latency per inference is timed against onnxruntime
(2 intra-op threads) on the same network, exported node by node to ONNX from the Relay
graph: interleaved rounds, 0.12 s sleeps, median of per-round ratios.
``--profile-cold`` also lists numba's compile timers per kernel specialisation (what the cold
first call compiles). ``--baseline DIR [--pairs N]`` only compares cold and warm compile +
first call with another checkout (e.g. main), alternating, with load averages.
Results are recorded in benchmarks/README.md ("Executor: first call").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

_START = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import relay_ref as rr  # noqa: E402
from relay_ref.ir.expr import Call, Function, Op, TupleGetItem  # noqa: E402
from relay_ref.ir.module import IRModule  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import at_least  # noqa: E402  (benchmarks/load.py)

from relay_ref.testing.typed_strategies import resnet_like_module  # noqa: E402

_IMPORTED = time.perf_counter()
SLEEP = 0.12
WARM_TARGET, COLD_TARGET = 2.0, 5.0


def weights(mod: IRModule, seed: int) -> dict[str, np.ndarray]:
    """Random weights for every ``@main`` parameter but ``data``, drawn by role."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in mod.functions["main"].params:
        shape = tuple(int(d) for d in p.type_annotation.shape)
        role = p.name_hint.rsplit("_", 1)[0]
        if role in ("conv", "fc"):
            value = rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))
        elif role == "gamma":
            value = rng.uniform(0.5, 1.0, shape)
        elif role == "var":
            value = rng.uniform(0.5, 1.5, shape)
        elif role in ("beta", "mean", "fc_bias"):
            value = rng.standard_normal(shape) * 0.1
        else:
            continue  # data: the input
        out[p.name_hint] = value.astype("float32")
    return out


def image(seed: int) -> np.ndarray:
    return np.random.default_rng(seed + 1).standard_normal((1, 3, 224, 224)).astype("float32")


def logits_module(mod: IRModule) -> IRModule:
    """The same program without its final softmax (a sharper equality check)."""
    main = mod.functions["main"]
    assert isinstance(main.body, Call) and main.body.op == Op("nn.softmax")
    return IRModule({"main": Function(main.params, main.body.args[0])})


# -- child: one fresh process ------------------------------------------------------------------


def child(seed: int, profile: bool) -> None:
    """Time rr.compile + the first call in this (fresh) process; print one JSON line."""
    mod = resnet_like_module()
    params, x = weights(mod, seed), image(seed)
    built = time.perf_counter()
    exe = rr.compile(mod, params=params, profile=profile)
    compiled = time.perf_counter()
    y = exe(x)
    first = time.perf_counter()
    assert y.shape == (1, 1000) and np.all(np.isfinite(y))
    print(json.dumps({"import": _IMPORTED - _START, "build": built - _IMPORTED,
                      "compile": compiled - built, "first_call": first - compiled,
                      "plan": str(exe.plan),
                      "profile": exe.stats.table() if profile else "",
                      "numba": numba_compiles() if profile else []}))


def numba_compiles() -> list[tuple[str, float, float]]:
    """(kernel, compile s, of which LLVM s) for every numba specialisation this process
    compiled or loaded from the cache (a cache load shows ~0 s), slowest first: numba's own
    timers (``compiler_lock`` includes the callees compiled for it; ``llvm_lock`` is
    LLVM's optimisation and code generation)."""
    import gc

    from numba.core.registry import CPUDispatcher

    rows = []
    for obj in gc.get_objects():
        if isinstance(obj, CPUDispatcher):
            for sig in obj.signatures:
                timers = obj.get_metadata(sig).get("timers", {})
                name = f"{obj.py_func.__module__}.{obj.__name__}"
                if name.startswith("relay_ref_kernels."):  # generated: name by its kind only
                    name = "relay_ref_kernels.<generated>." + obj.__name__
                rows.append((name, timers.get("compiler_lock", 0.0),
                             timers.get("llvm_lock", 0.0)))
    return sorted(rows, key=lambda r: -r[1])


def spawn(cache: str, seed: int, profile: bool = False, tree: Path = ROOT) -> dict[str, Any]:
    """One child process on the checkout ``tree`` (this one by default) with both kernel
    caches in ``cache``."""
    env = dict(os.environ, RELAY_REF_CACHE_DIR=cache, NUMBA_CACHE_DIR=cache)
    if tree != ROOT:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), str(tree / "kernel")])
    command = [sys.executable, str(tree / "benchmarks" / "first_call.py"), "--child", "--seed",
               str(seed)]
    start = time.perf_counter()
    proc = subprocess.run(command + (["--profile"] if profile else []), env=env,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"child process failed:\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process"] = wall
    return result


# -- ONNX export of the Relay graph ------------------------------------------------------------


def _pads(padding: tuple[int, ...]) -> list[int]:
    """Relay padding (1, 2 or 4 numbers: top, left, bottom, right) as ONNX pads."""
    p = list(padding)
    if len(p) == 1:
        p = p * 4
    elif len(p) == 2:
        p = [p[0], p[1], p[0], p[1]]
    return p


def to_onnx(mod: IRModule, params: dict[str, np.ndarray]) -> bytes:
    """The ops resnet_like_module uses, node for node, as an ONNX model (opset 17)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    main = mod.functions["main"]
    nodes, inits, names = [], [], {}
    inputs = []
    for p in main.params:
        if p.name_hint in params:
            inits.append(numpy_helper.from_array(params[p.name_hint], p.name_hint))
        else:
            shape = [int(d) for d in p.type_annotation.shape]
            inputs.append(helper.make_tensor_value_info(p.name_hint, TensorProto.FLOAT, shape))
        names[id(p)] = p.name_hint

    def emit(op: str, args: list[str], **attrs: Any) -> str:
        out = f"t{len(nodes)}"
        nodes.append(helper.make_node(op, args, [out], **attrs))
        return out

    # post-order walk without recursion (each shared node once)
    stack: list[tuple[Any, bool]] = [(main.body, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in names:
            continue
        kids = [e.tuple_value] if isinstance(e, TupleGetItem) else list(e.args)
        if not ready:
            stack.append((e, True))
            stack.extend((k, False) for k in kids if id(k) not in names)
            continue
        if isinstance(e, TupleGetItem):  # nn.batch_norm(...).0
            names[id(e)] = names[id(e.tuple_value)]
            continue
        a, args = e.attrs, [names[id(k)] for k in kids]
        op = e.op.name
        if op == "nn.conv2d":
            out = emit("Conv", args, kernel_shape=list(a.kernel_size), strides=list(a.strides),
                       pads=_pads(a.padding), dilations=list(a.dilation), group=a.groups)
        elif op == "nn.batch_norm":
            out = emit("BatchNormalization", args, epsilon=a.epsilon)
        elif op == "nn.max_pool2d":
            out = emit("MaxPool", args, kernel_shape=list(a.pool_size), strides=list(a.strides),
                       pads=_pads(a.padding))
        elif op == "nn.dense":
            out = emit("Gemm", args, transB=1)
        else:
            onnx_op = {"nn.relu": "Relu", "add": "Add", "nn.bias_add": "Add",
                       "nn.global_avg_pool2d": "GlobalAveragePool",
                       "nn.batch_flatten": "Flatten", "nn.softmax": "Softmax"}[op]
            out = emit(onnx_op, args)
        names[id(e)] = out
    output = helper.make_tensor_value_info(names[id(main.body)], TensorProto.FLOAT, [1, 1000])
    graph = helper.make_graph(nodes, "resnet_like", inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model.SerializeToString()


def ort_session(model: bytes) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


# -- parent --------------------------------------------------------------------------------------


def per_call(fn: Any, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def steady(exe: Any, sess: Any, x: np.ndarray, rounds: int, progress: Progress) -> dict:
    """Interleaved rounds of relay and ORT (ORT skipped when ``sess`` is None)."""
    impls = [("relay", lambda: exe(x))]
    if sess is not None:
        feeds = {"data_0": x}
        impls.append(("ort", lambda: sess.run(None, feeds)))
    counts = {k: max(1, int(0.3 / max(per_call(f, 1), 1e-6))) for k, f in impls}
    times: dict[str, list[float]] = {k: [] for k, _ in impls}
    task = progress.add_task("steady state", total=rounds)
    for r in range(rounds):
        for label, fn in (impls if r % 2 == 0 else impls[::-1]):
            time.sleep(SLEEP)
            times[label].append(per_call(fn, counts[label]))
        progress.advance(task)
    out = {k: statistics.median(v) for k, v in times.items()}
    if sess is not None:
        out["ratio"] = statistics.median(a / b for a, b in zip(times["relay"], times["ort"],
                                                               strict=True))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description="First call of a compiled ResNet-50-sized program (cold and warm numba "
                    "cache, fresh processes) and its steady-state latency vs onnxruntime.")
    parser.add_argument("--warm-runs", type=int, default=3,
                        help="warm-cache subprocesses (default 3; the median is reported)")
    parser.add_argument("--rounds", type=int, default=7,
                        help="interleaved steady-state rounds (default 7)")
    parser.add_argument("--no-ort", action="store_true", help="skip onnxruntime")
    parser.add_argument("--plan", action="store_true", help="also print exe.plan")
    parser.add_argument("--seed", type=int, default=0, help="weights' seed (default 0)")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--profile-cold", action="store_true",
                        help="run the cold process with profile=True and print the time of "
                             "each kernel group in its first call (mostly numba compiling)")
    parser.add_argument("--steady-only", action="store_true",
                        help="only the steady-state timing, in this process with the default "
                             "kernel caches (for comparing thread settings such as "
                             "OMP_WAIT_POLICY=active)")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="only compare cold and warm compile + first call with the "
                             "checkout DIR (e.g. main), alternating, --pairs rounds")
    parser.add_argument("--pairs", type=at_least(1), default=3,
                        help="rounds of --baseline (default 3)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.seed, args.profile)
        return
    if args.baseline is not None:
        compare(args.baseline.resolve(), args.pairs, args.seed)
        return
    cache = tempfile.mkdtemp(prefix="relay_ref_first_call_")
    try:
        _parent(args, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _parent(args: argparse.Namespace, cache: str) -> None:
    runs: list[tuple[str, dict[str, Any]]] = []
    with Progress(transient=True) as progress:
        if not args.steady_only:
            task = progress.add_task("cold process (compiles every kernel)",
                                     total=1 + args.warm_runs)
            runs.append(("cold", spawn(cache, args.seed, args.profile_cold)))
            progress.advance(task)
            for i in range(args.warm_runs):
                progress.update(task, description=f"warm process {i + 1}")
                runs.append(("warm", spawn(cache, args.seed)))
                progress.advance(task)
            # this process: the same (now warm) cache; numba is not imported yet
            os.environ["RELAY_REF_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"] = cache
        mod = resnet_like_module()
        params, x = weights(mod, args.seed), image(args.seed)
        check = {"evaluate": "not checked against rr.evaluate (--steady-only)"}
        if not args.steady_only:
            check = check_logits(mod, params, x)
        exe = rr.compile(mod, params=params)
        exe(x)
        sess = None
        if not args.no_ort:
            sess = ort_session(to_onnx(mod, params))
            want = sess.run(None, {"data_0": x})[0]
            got = exe(x)
            check["ort"] = (f"softmax vs ORT: max |d| {np.max(np.abs(got - want)):.2g}, "
                            f"allclose(rtol 1e-3, atol 1e-6) "
                            f"{np.allclose(got, want, rtol=1e-3, atol=1e-6)}")
        timing = steady(exe, sess, x, args.rounds, progress)
    report(runs, check, timing, args)
    if args.plan:
        print(runs[-1][1]["plan"] if runs else exe.plan)
    if args.profile_cold and runs:
        print("\ncold first call, per kernel group (compiling included):")
        print(runs[0][1]["profile"])
        compiles = runs[0][1]["numba"]
        print(f"\ncold numba compiles ({len(compiles)} specialisations, "
              f"{sum(r[1] for r in compiles):.2f} s; numba's timers, callees included):")
        for name, total, llvm in compiles:
            if total >= 0.01:
                print(f"  {total:6.2f} s (LLVM {llvm:5.2f} s)  {name}")


def compare(baseline: Path, pairs: int, seed: int) -> None:
    """Cold then warm compile + first call, this checkout and ``baseline`` alternating (the
    order flips every round), each pair in a fresh empty cache; the load average (1 min)
    before and after each pair; medians and the median of per-round ratios."""
    trees = [("this", ROOT), ("baseline", baseline)]
    rows, res = [], {name: {"cold": [], "warm": []} for name, _ in trees}
    for r in range(pairs):
        for name, tree in (trees if r % 2 == 0 else trees[::-1]):
            cache = tempfile.mkdtemp(prefix="relay_ref_first_call_")
            try:
                before = os.getloadavg()[0]
                cold, warm = spawn(cache, seed, tree=tree), spawn(cache, seed, tree=tree)
                after = os.getloadavg()[0]
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            for kind, run in (("cold", cold), ("warm", warm)):
                res[name][kind].append(run["compile"] + run["first_call"])
            rows.append(f"| {r + 1} | {name} | {cold['compile']:.2f} + {cold['first_call']:.2f}"
                        f" = {res[name]['cold'][-1]:.2f} | {warm['compile']:.2f} + "
                        f"{warm['first_call']:.2f} = {res[name]['warm'][-1]:.2f} | "
                        f"{before:.2f} -> {after:.2f} |")
    print(f"this: {ROOT}; baseline: {baseline}\n")
    print("| round | tree | cold: compile + first call s | warm: compile + first call s "
          "| load (1 min) |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    for kind in ("cold", "warm"):
        mine, base = res["this"][kind], res["baseline"][kind]
        ratio = statistics.median(a / b for a, b in zip(mine, base, strict=True))
        print(f"{kind}: this median {statistics.median(mine):.2f} s, baseline median "
              f"{statistics.median(base):.2f} s, median per-round ratio {ratio:.2f}")


def check_logits(mod: IRModule, params: dict[str, np.ndarray], x: np.ndarray) -> dict:
    logits = logits_module(mod)
    got = rr.compile(logits, params=params)(x)
    start = time.perf_counter()
    args = [params.get(p.name_hint, x) for p in logits.functions["main"].params]
    want = np.asarray(rr.evaluate(logits, *args))
    secs = time.perf_counter() - start
    ok = np.allclose(got, want, rtol=1e-3, atol=1e-3 * float(np.max(np.abs(want))))
    return {"evaluate": f"logits vs rr.evaluate ({secs:.1f} s): max |d| "
                        f"{np.max(np.abs(got - want)):.2g} of max |logit| "
                        f"{np.max(np.abs(want)):.3g}, allclose(rtol 1e-3) {ok}",
            "ok": bool(ok)}


def report(runs: list, check: dict, timing: dict, args: argparse.Namespace) -> None:
    rows = []
    warm = [r for kind, r in runs if kind == "warm"]
    for kind, r in runs:
        total = r["compile"] + r["first_call"]
        limit = COLD_TARGET if kind == "cold" else WARM_TARGET
        rows.append([kind, f"{r['import']:.2f}", f"{r['compile']:.2f}",
                     f"{r['first_call']:.2f}", f"{total:.2f}", f"{r['process']:.2f}",
                     f"<= {limit:g} s", "met" if total <= limit else "missed"])
    if warm:
        med = statistics.median(r["compile"] + r["first_call"] for r in warm)
        rows.append(["warm (median)", "", "", "", f"{med:.2f}", "", f"<= {WARM_TARGET:g} s",
                     "met" if med <= WARM_TARGET else "missed"])
    heads = ["cache", "import s", "rr.compile s", "first call s", "compile + first s",
             "process s", "target", "met"]
    steady_heads = ["steady state", "relay ms", "ORT ms", "relay / ORT"]
    steady_row = ["resnet_like_module, batch 1", f"{timing['relay'] * 1e3:.1f}",
                  f"{timing['ort'] * 1e3:.1f}" if "ort" in timing else "-",
                  f"{timing['ratio']:.2f}x" if "ratio" in timing else "-"]
    notes = [check["evaluate"]] + ([check["ort"]] if "ort" in check else []) + [
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, "
        f"Python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs; "
        f"{args.rounds} steady-state rounds"]
    if args.markdown:
        for hs, body in ((heads, rows), (steady_heads, [steady_row])):
            if not body:
                continue
            print("| " + " | ".join(hs) + " |")
            print("|" + "---|" * len(hs))
            for row in body:
                print("| " + " | ".join(row) + " |")
            print()
        print("\n".join(notes))
        return
    console = Console(width=max(Console().width, 130))
    for title, hs, body in (("first call of a compiled ResNet-50-sized program", heads, rows),
                            ("steady state per inference", steady_heads, [steady_row])):
        if not body:
            continue
        table = Table(title=title)
        for h in hs:
            table.add_column(h, justify="left" if h in ("cache", "steady state", "target",
                                                        "met") else "right")
        for row in body:
            table.add_row(*row)
        console.print(table)
    for line in notes:
        console.print(line)


if __name__ == "__main__":
    main()
