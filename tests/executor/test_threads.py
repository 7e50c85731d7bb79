"""The thread policy (issue 30): the work pool's contract (``compute/cpu/parallel.py``), the
split GEMMs (``compute/cpu/blas.py``) and convolutions (``ops/cpu_nn.py``) against NumPy and
the op's reference with 1, 2 and 3 threads, and ``rr.compile(threads=...)``: equal outputs,
errors, the plan's line, BLAS's thread count restored after each call.

Splits normally start at ``blas.SPLIT_FLOPS``; the tests lower it to 0 so that small shapes
take every split path. No timing is asserted (speed is measured in ``benchmarks/``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import ThreadpoolController, threadpool_limits

import relay_ref as rr
from relay_ref.compute.cpu import blas, parallel
from relay_ref.diagnostics import RelayError
from relay_ref.executor import threads as policy
from relay_ref.ops import cpu_nn
from relay_ref.ops.registry import get_op, make_attrs, op_kernel


@contextlib.contextmanager
def pool(n: int, split_flops: int = 0) -> Iterator[None]:
    """The pool at ``n`` threads and the split threshold at ``split_flops``, restored."""
    old = parallel.threads(), blas.SPLIT_FLOPS, cpu_nn._DEPTHWISE_SPLIT  # noqa: SLF001
    parallel.set_threads(n)
    blas.SPLIT_FLOPS = cpu_nn._DEPTHWISE_SPLIT = split_flops  # noqa: SLF001
    try:
        yield
    finally:
        parallel.set_threads(old[0])
        blas.SPLIT_FLOPS, cpu_nn._DEPTHWISE_SPLIT = old[1:]  # noqa: SLF001


# -- run_tasks ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("count", [0, 1, 2, 3, 7, 50])
def test_run_tasks_runs_every_index_once(n: int, count: int) -> None:
    seen: list[int] = []
    with pool(n):
        for _ in range(5):
            seen.clear()
            parallel.run_tasks(count, seen.append)
            assert sorted(seen) == list(range(count))


def test_one_thread_runs_in_order_on_the_caller() -> None:
    where: list[tuple[int, int]] = []
    with pool(1):
        parallel.run_tasks(6, lambda i: where.append((i, threading.get_ident())))
    assert where == [(i, threading.get_ident()) for i in range(6)]


def test_tasks_that_release_the_gil_use_the_workers() -> None:
    """Task 0 waits (GIL released) until task 1 has started: only a worker can start it.
    (No deadlock if none did: the wait times out and the caller runs task 1 itself.)"""
    idents: dict[int, int] = {}
    started = threading.Event()

    def task(i: int) -> None:
        idents[i] = threading.get_ident()
        if i == 0:
            started.wait(timeout=30)
        else:
            started.set()

    with pool(2):
        parallel.run_tasks(2, task)
    assert started.is_set() and idents[0] != idents[1]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_an_exception_is_raised_after_every_started_task_finished(n: int) -> None:
    running = [0]
    finished: list[int] = []
    lock = threading.Lock()

    def task(i: int) -> None:
        with lock:
            running[0] += 1
        try:
            time.sleep(0.001)
            if i == 2:
                raise KeyError(i)
        finally:
            with lock:
                running[0] -= 1
                finished.append(i)

    with pool(n), pytest.raises(KeyError):
        parallel.run_tasks(8, task)
    assert running[0] == 0
    assert 2 in finished
    # the pool still works afterwards
    seen: list[int] = []
    with pool(n):
        parallel.run_tasks(5, seen.append)
    assert sorted(seen) == list(range(5))


def test_a_task_calling_run_tasks_runs_it_serially() -> None:
    inner: list[tuple[int, int]] = []
    lock = threading.Lock()

    def task(i: int) -> None:
        me = threading.get_ident()
        parallel.run_tasks(3, lambda j: (lock.acquire(), inner.append((i * 3 + j, me)),
                                         lock.release()))

    with pool(2):
        parallel.run_tasks(4, task)
    assert sorted(k for k, _ in inner) == list(range(12))
    for i in range(4):  # each nested call ran on the thread of its task
        assert len({t for k, t in inner if k // 3 == i}) == 1


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2"])
def test_set_threads_rejects_bad_counts(bad: object) -> None:
    with pytest.raises(ValueError):
        parallel.set_threads(bad)  # type: ignore[arg-type]


# -- GEMM splits ----------------------------------------------------------------------------

def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    # per-chunk GEMMs may block K differently: a few ulps of the magnitude of the sums
    tol = 1e-4 if got.dtype == np.float32 else 1e-10
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 200), k=st.integers(1, 80), n=st.integers(1, 300),
       ta=st.booleans(), tb=st.booleans(), vector=st.booleans(),
       dtype=st.sampled_from(["float32", "float64"]), threads=st.integers(1, 3),
       seed=st.integers(0, 2**16))
def test_gemm_matches_np_dot(m: int, k: int, n: int, ta: bool, tb: bool, vector: bool,
                             dtype: str, threads: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(dtype)
    a = a.T if ta else a
    if vector:
        b = rng.uniform(-1, 1, k).astype(dtype)
    else:
        b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(dtype)
        b = b.T if tb else b
    want = np.dot(a, b)
    with pool(threads):
        assert_close(blas.gemm(a, b), want)
        out = np.full(want.shape, np.nan, dtype)
        assert blas.gemm(a, b, out) is out
    assert_close(out, want)


@settings(max_examples=40, deadline=None)
@given(batch=st.sampled_from([(1, 1), (3, 3), (4, 1), (1, 3)]), m=st.integers(1, 40),
       k=st.integers(1, 30), n=st.integers(1, 70), ta=st.booleans(), tb=st.booleans(),
       threads=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_batch_matmul_matches_the_reference(batch: tuple[int, int], m: int, k: int, n: int,
                                            ta: bool, tb: bool, threads: int,
                                            seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (batch[0], k, m) if ta else (batch[0], m, k)).astype("float32")
    y = rng.uniform(-1, 1, (batch[1], n, k) if tb else (batch[1], k, n)).astype("float32")
    attrs = make_attrs("nn.batch_matmul", {"transpose_a": ta, "transpose_b": tb})
    want = get_op("nn.batch_matmul").reference([x, y], attrs)
    with pool(threads):
        assert_close(op_kernel("nn.batch_matmul")([x, y], attrs), np.asarray(want))


@settings(max_examples=40, deadline=None)
@given(lead=st.sampled_from([(), (5,), (3, 7)]), k=st.integers(1, 40), n=st.integers(1, 90),
       ta=st.booleans(), tb=st.booleans(), threads=st.integers(1, 3),
       seed=st.integers(0, 2**16))
def test_dense_and_matmul_match_the_reference(lead: tuple[int, ...], k: int, n: int,
                                              ta: bool, tb: bool, threads: int,
                                              seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (*lead, k)).astype("float32")
    w = rng.uniform(-1, 1, (n, k)).astype("float32")
    with pool(threads):
        attrs = make_attrs("nn.dense", {})
        assert_close(op_kernel("nn.dense")([x, w], attrs),
               np.asarray(get_op("nn.dense").reference([x, w], attrs)))
        if ta and len(lead) >= 1:
            a = np.ascontiguousarray(np.swapaxes(x.reshape(-1, lead[-1], k), -1, -2))
        else:
            a, ta = x, False
        b = w if tb else np.ascontiguousarray(w.T)
        attrs = make_attrs("nn.matmul", {"transpose_a": ta, "transpose_b": tb})
        assert_close(op_kernel("nn.matmul")([a, b], attrs),
               np.asarray(get_op("nn.matmul").reference([a, b], attrs)))


# -- conv2d ---------------------------------------------------------------------------------

@st.composite
def conv_cases(draw: st.DrawFn) -> tuple[tuple, tuple, dict]:
    """(data shape, OIHW weight shape, attrs) in NCHW, with shapes and output-channel counts
    that take each split of ``_conv_nchw`` / ``_conv_nhwc`` (depthwise ones included)."""
    n = draw(st.integers(1, 5))
    if draw(st.integers(0, 4)) == 0:  # depthwise, channel multiplier 1 or 2
        groups, cg = draw(st.integers(2, 9)), 1
        og = draw(st.integers(1, 2))
    else:
        groups = draw(st.sampled_from([1, 1, 1, 2]))
        cg = draw(st.integers(1, 6))
        og = draw(st.sampled_from([1, 3, 8, 40]))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilation = (draw(st.integers(1, 2)), 1)
    padding = (draw(st.integers(0, 1)), draw(st.integers(0, 2)))
    h = (kh - 1) * dilation[0] + 1 + draw(st.integers(0, 12))
    w = (kw - 1) * dilation[1] + 1 + draw(st.integers(0, 12))
    attrs = {"strides": strides, "dilation": dilation, "padding": padding, "groups": groups}
    return (n, cg * groups, h, w), (og * groups, cg, kh, kw), attrs


@settings(max_examples=60, deadline=None)
@given(case=conv_cases(), layout=st.sampled_from(["NCHW", "NHWC"]),
       threads=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_conv2d_splits_match_the_reference(case: tuple, layout: str, threads: int,
                                           seed: int) -> None:
    data_shape, weight_shape, attrs = case
    rng = np.random.default_rng(seed)
    data = rng.uniform(-1, 1, data_shape).astype("float32")
    weight = rng.uniform(-1, 1, weight_shape).astype("float32")
    if layout == "NHWC":
        data = np.ascontiguousarray(data.transpose(0, 2, 3, 1))
        weight = np.ascontiguousarray(weight.transpose(2, 3, 1, 0))
        attrs = {**attrs, "data_layout": "NHWC", "kernel_layout": "HWIO"}
    at = make_attrs("nn.conv2d", attrs)
    want = np.asarray(get_op("nn.conv2d").reference([data, weight], at))
    kernel = op_kernel("nn.conv2d")
    for split in (0, blas.SPLIT_FLOPS):  # every split path, then the real thresholds
        # (the depthwise threshold is lower: the small cases split at 0 only)
        with pool(threads, split):
            assert_close(kernel([data, weight], at), want)
            out = np.full(want.shape, np.nan, "float32")
            assert kernel([data, weight], at, out=out) is out
            assert_close(out, want)


# -- rr.compile(threads=...) ----------------------------------------------------------------

CNN = """
def @main(%x: Tensor[(2, 3, 20, 20), float32], %w1: Tensor[(16, 3, 3, 3), float32],
          %w2: Tensor[(24, 16, 3, 3), float32], %w3: Tensor[(10, 24), float32]) {
  %0 = nn.relu(nn.conv2d(%x, %w1, padding=[1, 1]));
  %1 = nn.max_pool2d(%0, pool_size=[2, 2], strides=[2, 2]);
  %2 = nn.relu(nn.conv2d(%1, %w2, strides=[2, 2], padding=[1, 1]));
  %3 = nn.global_avg_pool2d(%2);
  nn.dense(nn.batch_flatten(%3), %w3)
}
"""


def _cnn_args() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype("float32")
            for s in [(2, 3, 20, 20), (16, 3, 3, 3), (24, 16, 3, 3), (10, 24)]]


def _blas_threads() -> int:
    return min(lc.num_threads for lc in ThreadpoolController().lib_controllers
               if lc.user_api == "blas")


def test_threads_one_and_two_give_equal_outputs() -> None:
    mod = rr.parse(CNN)
    args = _cnn_args()
    want = rr.evaluate(mod, *args)
    one = rr.compile(mod, threads=1)
    two = rr.compile(mod, threads=2)
    old = blas.SPLIT_FLOPS
    blas.SPLIT_FLOPS = 0  # the small convolutions split too
    try:
        a, b = one(*args), two(*args)
    finally:
        blas.SPLIT_FLOPS = old
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b, want, rtol=1e-4, atol=1e-4)
    assert one.threads.threads == 1 and two.threads.threads == 2


@pytest.mark.parametrize("bad", [0, -2, "x", "2", 1.0, True])
def test_bad_thread_counts_are_relay_errors(bad: object) -> None:
    with pytest.raises(RelayError, match="thread count must be an int >= 1"):
        rr.compile(rr.parse(CNN), threads=bad)


@pytest.mark.parametrize("text", ["many", "\u00b2", "0", "-2", "1.5", "+3", "3_0", "00"])
def test_bad_environment_counts_are_relay_errors(monkeypatch: pytest.MonkeyPatch,
                                                 text: str) -> None:
    monkeypatch.setenv("RELAY_REF_NUM_THREADS", text)  # '\u00b2'.isdigit() is True
    with pytest.raises(RelayError, match=r"\$RELAY_REF_NUM_THREADS") as info:
        rr.compile(rr.parse(CNN))
    assert info.value.message.endswith(f"not {text!r}")  # '0' quoted as '-2' is


@pytest.mark.parametrize(("text", "n"), [("\uff13", 3), (" 2 ", 2), ("\u0663", 3), ("007", 7)])
def test_environment_counts_are_decimal_digits(monkeypatch: pytest.MonkeyPatch, text: str,
                                               n: int) -> None:
    """What ``str.isdecimal`` accepts (full-width and Arabic-Indic digits too), as
    ``relay run --threads`` reads it."""
    monkeypatch.setenv("RELAY_REF_NUM_THREADS", text)
    assert policy.resolve().threads == n


def test_counts_past_the_limit_are_relay_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    most = policy.limit()
    assert most >= policy.MAX_LIMIT == 64
    assert policy.resolve(most).threads == most  # the limit itself is accepted
    for bad in (most + 1, 10**30, 2**31):
        with pytest.raises(RelayError, match=rf"compile: threads: .*at most {most} "):
            rr.compile(rr.parse(CNN), threads=bad)
    with pytest.raises(RelayError, match=r"at most .*not a 14000-bit number"):
        policy.resolve(1 << 13999)
    for text in (str(most + 1), "9" * 30, "9" * 5000):  # int() refuses 5000 digits
        monkeypatch.setenv("RELAY_REF_NUM_THREADS", text)
        with pytest.raises(RelayError, match=rf"\$RELAY_REF_NUM_THREADS: .*at most {most} "):
            rr.compile(rr.parse(CNN))
    with pytest.raises(RelayError, match=r"--threads: .*at most"):
        policy.resolve(most + 1, "--threads")


def test_the_count_comes_from_the_argument_then_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RELAY_REF_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    assert policy.resolve().source.endswith("CPUs available") or "at most" in \
        policy.resolve().source
    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")
    assert policy.resolve().threads == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "4,2")
    assert (policy.resolve().threads, policy.resolve().source) == (4, "$OMP_NUM_THREADS")
    monkeypatch.setenv("RELAY_REF_NUM_THREADS", "1")
    assert policy.resolve() == policy.ThreadPolicy(1, 1, 1, "$RELAY_REF_NUM_THREADS")
    assert policy.resolve(np.int64(2)).threads == 2
    assert policy.resolve(2).source == "compile(threads=...)"


def _relay_run(capsys: pytest.CaptureFixture[str], tmp_path, *flags: str) -> tuple:
    from relay_ref.cli import main

    prog = tmp_path / "p.relay"
    prog.write_text("def @main(%a: Tensor[(4,), float32]) { %a + %a }")
    np.save(tmp_path / "a.npy", np.ones(4, "float32"))
    code = main(["run", "--compile", *flags, str(prog), str(tmp_path / "a.npy")])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(("text", "n"), [("3", 3), ("\uff13", 3), (" 2", 2)])
def test_cli_counts_read_as_the_environments(capsys, tmp_path, text: str, n: int) -> None:
    code, out, err = _relay_run(capsys, tmp_path, "--plan", "--threads", text)
    assert code == 0, err
    assert f"threads: {n} (work pool {n}, " in err and "from --threads)" in err


@pytest.mark.parametrize("text", ["\u00b2", "0", "-2", "+3", "3_0", "1.5", "9" * 5000])
def test_bad_cli_counts_are_usage_errors(capsys, tmp_path, text: str) -> None:
    with pytest.raises(SystemExit) as info:
        _relay_run(capsys, tmp_path, "--threads", text)
    assert info.value.code == 2
    assert "--threads" in capsys.readouterr().err


def test_cli_counts_past_the_limit_are_located_errors(capsys, tmp_path) -> None:
    code, out, err = _relay_run(capsys, tmp_path, "--threads", str(policy.limit() + 1))
    assert (code, out) == (1, "")
    assert f"--threads: the thread count must be at most {policy.limit()} " in err


def test_help_and_docstrings_state_the_default_and_the_limit(capsys) -> None:
    from relay_ref.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for doc in (text, " ".join(rr.compile.__doc__.split())):
        assert "else the CPUs available, at most 8" in doc
        assert "at most max(64, 4 x the CPUs available)" in doc.replace("``", "")


def test_the_plan_shows_the_policy() -> None:
    exe = rr.compile(rr.parse(CNN), threads=2)
    line = exe.plan.threads
    assert line.startswith("threads: 2 (work pool 2, BLAS 1 per call, numba ")
    assert "from compile(threads=...)" in line
    assert line in str(exe.plan).splitlines()


def test_blas_threads_are_restored_after_each_call() -> None:
    exe = rr.compile(rr.parse(CNN), threads=2)
    args = _cnn_args()
    seen: list[int] = []
    with threadpool_limits(2, user_api="blas"):
        before = _blas_threads()
        exe(*args)
        assert _blas_threads() == before
        with pytest.raises(RelayError):  # a failing call restores it too
            exe(*args[:-1], np.zeros((10, 23), "float32"))
        assert _blas_threads() == before
        # during a call BLAS runs on one thread: observed from inside the dense kernel
        old = blas.dense

        def spy(x: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            seen.append(_blas_threads())
            return old(x, w, out)

        blas.dense = spy
        try:
            exe(*args)
        finally:
            blas.dense = old
        assert _blas_threads() == before
    assert seen and set(seen) == {1}


def test_the_scope_is_skipped_where_it_changes_nothing() -> None:
    exe = rr.compile(rr.parse("def @main(%a: int32) -> int32 { %a + 1 }"), threads=2)
    assert exe(np.int32(2)) == 3
    assert (exe._thread_scope, exe._thread_blas) == (False, False)  # noqa: SLF001
    exe = rr.compile(rr.parse("def @main(%a: Tensor[(4,), float32]) { %a + %a }"))
    assert (exe._thread_scope, exe._thread_blas) == (True, False)  # noqa: SLF001
    exe = rr.compile(rr.parse(CNN))
    assert (exe._thread_scope, exe._thread_blas) == (True, True)  # noqa: SLF001


def test_executables_with_other_policies_run_concurrently() -> None:
    """Two threads, two policies: each thread keeps its own pool count (the pool runs one
    job at a time: the other's tasks run serially meanwhile), the results stay right and
    BLAS is restored once both are done."""
    mod = rr.parse(CNN)
    args = _cnn_args()
    want = rr.evaluate(mod, *args)
    exes = [rr.compile(mod, threads=1), rr.compile(mod, threads=2)]
    failures: list[BaseException] = []
    old = blas.SPLIT_FLOPS
    blas.SPLIT_FLOPS = 0

    def loop(exe: object) -> None:
        try:
            for _ in range(15):
                np.testing.assert_allclose(exe(*args), want, rtol=1e-4, atol=1e-4)
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            failures.append(err)

    try:
        with threadpool_limits(2, user_api="blas"):
            before = _blas_threads()
            workers = [threading.Thread(target=loop, args=(e,)) for e in exes]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            assert _blas_threads() == before
    finally:
        blas.SPLIT_FLOPS = old
    assert not failures, failures[0]


def test_blas_is_limited_on_any_thread() -> None:
    """A call on another thread than the one that last set a limit with threadpoolctl (which
    lets only that one set it again) still runs BLAS on one thread, and restores it."""
    exe = rr.compile(rr.parse(CNN), threads=2)
    args = _cnn_args()
    seen: list[int] = []
    old = blas.dense

    def spy(x: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        seen.append(_blas_threads())
        return old(x, w, out)

    with threadpool_limits(2, user_api="blas"):  # this (main) thread takes control
        before = _blas_threads()
        blas.dense = spy
        try:
            worker = threading.Thread(target=exe, args=args)
            worker.start()
            worker.join()
        finally:
            blas.dense = old
        assert _blas_threads() == before
    assert seen and set(seen) == {1}
