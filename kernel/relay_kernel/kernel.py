"""``RelayKernel``: the Jupyter protocol around a ``Session`` (messages in, messages out).

Invariants:
* the kernel survives every cell: user errors (parse, type, runtime, command misuse)
  become error replies whose traceback is the rendered diagnostic, never Python frames;
  an exception that is not a ``RelayError`` is reported as an internal error (a bug) with
  its Python traceback, and the kernel carries on;
* an interrupt (SIGINT, ipykernel's default ``interrupt_mode``) stops the running cell --
  including evaluation on a helper thread the interpreter started -- and the next cell runs
  in the same session (rule 6 of ``session``);
* ``kernel_info`` never advertises a debugger (ipykernel adds one whenever ``debugpy`` is
  importable; this kernel cannot debug Relay);
* each cell's source is named ``In[n]`` with ``n`` its execution count.
"""

from __future__ import annotations

import ctypes
import fnmatch
import sys
import threading
import time
from typing import Any

from ipykernel.kernelbase import Kernel

from relay_kernel import __version__
from relay_kernel.commands import Context, run_command, show_outcome, split_command
from relay_kernel.display import error_content
from relay_kernel.editor import complete, inspect, is_complete
from relay_kernel.session import Session

BANNER = """Relay (TVM text format v0.0.5) -- relay_ref's definitional interpreter.
Cells hold definitions, `let %x = e;` bindings and an expression; :help lists the rules
and the :commands."""

STOP_TIMEOUT = 20.0
"""Seconds an interrupt waits for the cell's thread to stop (it is asked every 0.2 s)."""

# Threads owned by the Jupyter machinery are never interrupted.
_INFRA_MODULES = ("ipykernel", "zmq", "jupyter", "tornado", "asyncio", "anyio", "IPython",
                  "concurrent")


class _IOPub:
    """``commands.Output`` over IOPub; collects pager payloads and the result's text."""

    def __init__(self, kernel: RelayKernel, silent: bool) -> None:
        self.kernel = kernel
        self.silent = silent
        self.payload: list[dict[str, Any]] = []
        self.result_text = ""

    def stream(self, text: str, name: str = "stdout") -> None:
        if not self.silent:
            self.kernel.send_response(self.kernel.iopub_socket, "stream",
                                      {"name": name, "text": text})

    def display(self, bundle: dict[str, str]) -> None:
        if not self.silent:
            self.kernel.send_response(self.kernel.iopub_socket, "display_data",
                                      {"data": bundle, "metadata": {}})

    def result(self, bundle: dict[str, str]) -> None:
        self.result_text = bundle.get("text/plain", "")
        if not self.silent:
            self.kernel.send_response(
                self.kernel.iopub_socket, "execute_result",
                {"execution_count": self.kernel.execution_count, "data": bundle,
                 "metadata": {}})

    def page(self, text: str) -> None:
        self.payload.append({"source": "page", "data": {"text/plain": text}, "start": 0})


class RelayKernel(Kernel):
    """A wrapper kernel for Relay; the semantics live in ``relay_kernel.session``."""

    implementation = "relay_kernel"
    implementation_version = __version__
    banner = BANNER
    language_info = {
        "name": "relay",
        "version": "0.0.5",
        "mimetype": "text/x-relay",
        "file_extension": ".relay",
        "pygments_lexer": "relay",
        # JupyterLab 4 / Notebook 7 have no Relay mode; Rust's colours fn/let/match/if/else,
        # numbers, comments, `->` and `#[...]` (see docs/kernel.md).
        "codemirror_mode": "rust",
    }
    help_links = [
        {"text": "Relay language reference (TVM)",
         "url": "https://tvm.apache.org/docs/reference/langref/index.html"},
        {"text": "Relay paper (arXiv 1904.08368)", "url": "https://arxiv.org/abs/1904.08368"},
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.relay = Session()
        # (session, line, input, output) for history requests
        self._history: list[tuple[int, int, str, str]] = []
        self._warm_up()

    @staticmethod
    def _warm_up() -> None:
        """Import the parser, checker, interpreter and op library now, not in cell 1.
        (relay_ref.deepstack keeps its recursion limit below what its 1 GiB stack holds, so
        a non-terminating recursion is a ``RelayRuntimeError``, not a dead kernel.)"""
        try:
            from relay_ref.repl import warm_up

            warm_up()
        except Exception:  # reported when a cell needs it
            pass

    @property
    def kernel_info(self) -> dict[str, Any]:
        info = super().kernel_info
        info["supported_features"] = [f for f in info.get("supported_features", [])
                                      if f != "debugger"]
        info["debugger"] = False
        return info

    # -- execute -----------------------------------------------------------------------
    async def do_execute(  # type: ignore[override]
        self, code: str, silent: bool, store_history: bool = True,
        user_expressions: dict | None = None, allow_stdin: bool = False, **_: Any,
    ) -> dict[str, Any]:
        out = _IOPub(self, silent)
        source_name = f"In[{self.execution_count}]"
        ctx = Context(self.relay, source_name, out)
        threads_before = set(threading.enumerate())
        def cell() -> None:
            cmd = split_command(code)
            if cmd is not None:
                run_command(ctx, *cmd)
            elif code.strip():
                show_outcome(ctx, self.relay.run(code, source_name))

        try:
            self._run_deep(cell)
        except KeyboardInterrupt as err:
            self._stop_threads(threads_before)
            return self._error(err, silent)
        except Exception as err:
            return self._error(err, silent)
        finally:
            if store_history and not silent:
                self._history.append((1, self.execution_count, code, out.result_text))
        return {"status": "ok", "execution_count": self.execution_count,
                "payload": out.payload, "user_expressions": {}}

    def _error(self, err: BaseException, silent: bool) -> dict[str, Any]:
        content = error_content(err)  # one output, the cited rules' hint included
        if not silent:
            self.send_response(self.iopub_socket, "error", content)
        return {"status": "error", "execution_count": self.execution_count, **content}

    @staticmethod
    def _run_deep(job: Any) -> Any:
        """Run the whole cell on one big-stack thread (relay_ref's ``run_deep``), so the
        parser, checker and interpreter all run inside it and start no threads of their own;
        on an interrupt, stop that thread and wait until it has really finished.

        Why: after ``Thread.join`` is interrupted by ``KeyboardInterrupt``, CPython 3.11 may
        report the thread as stopped while it still runs, so ``run_deep`` restores the
        recursion limit (1000) under a checker or interpreter still thousands of frames deep,
        and the process aborts ("Cannot recover from stack overflow": the kernel dies).
        ``stop`` below raises ``KeyboardInterrupt`` in the worker and waits on an event the
        worker sets itself, before ``run_deep`` lowers the limit."""
        try:
            from relay_ref.repl import run_deep
        except ImportError:
            return job()
        done = threading.Event()
        ident: list[int] = []

        def work() -> Any:
            ident.append(threading.get_ident())
            try:
                return job()
            finally:
                done.set()

        def running() -> bool:
            # The worker's own frames, not ``is_alive``/``done`` (the exception may land
            # inside ``done.set()`` itself).
            return bool(ident) and not done.is_set() and ident[0] in sys._current_frames()

        def stop() -> None:
            deadline = time.monotonic() + STOP_TIMEOUT
            while running() and time.monotonic() < deadline:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(ident[0]), ctypes.py_object(KeyboardInterrupt))
                done.wait(0.2)

        return run_deep(work, on_interrupt=stop, name="relay-cell")

    def _stop_threads(self, before: set[threading.Thread]) -> None:
        """Raise ``KeyboardInterrupt`` in threads the interrupted cell started (the
        interpreter's big-stack evaluation thread) and wait for them to finish."""
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            alive = [t for t in threading.enumerate()
                     if t not in before and t.is_alive() and t.ident is not None
                     and t is not threading.current_thread()
                     and not type(t).__module__.startswith(_INFRA_MODULES)]
            if not alive:
                return
            for t in alive:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(t.ident), ctypes.py_object(KeyboardInterrupt))
            for t in alive:
                t.join(0.2)

    # -- editor support ----------------------------------------------------------------
    async def do_complete(self, code: str, cursor_pos: int) -> dict[str, Any]:  # type: ignore[override]
        return complete(code, cursor_pos, self.relay)

    async def do_inspect(  # type: ignore[override]
        self, code: str, cursor_pos: int, detail_level: int = 0, omit_sections: Any = (),
    ) -> dict[str, Any]:
        return inspect(code, cursor_pos, self.relay)

    async def do_is_complete(self, code: str) -> dict[str, Any]:  # type: ignore[override]
        return is_complete(code, self.relay)

    # -- history -----------------------------------------------------------------------
    async def do_history(  # type: ignore[override]
        self, hist_access_type: str, output: bool, raw: bool, session: int | None = None,
        start: int | None = None, stop: int | None = None, n: int | None = None,
        pattern: str | None = None, unique: bool = False,
    ) -> dict[str, Any]:
        rows = list(self._history)
        if hist_access_type == "tail":
            rows = rows[-n:] if n else rows
        elif hist_access_type == "range":
            lo = start or 0
            hi = stop if stop is not None else 1 << 62
            rows = [r for r in rows if (session in (None, 0, r[0])) and lo <= r[1] < hi]
        elif hist_access_type == "search":
            rows = [r for r in rows if fnmatch.fnmatchcase(r[2], pattern or "*")]
            if unique:
                seen: set[str] = set()
                kept = []
                for r in reversed(rows):
                    if r[2] not in seen:
                        seen.add(r[2])
                        kept.append(r)
                rows = kept[::-1]
            if n:
                rows = rows[-n:]
        else:
            rows = []
        if output:
            history = [(s, line, (inp, res)) for s, line, inp, res in rows]
        else:
            history = [(s, line, inp) for s, line, inp, _ in rows]
        return {"status": "ok", "history": history}
