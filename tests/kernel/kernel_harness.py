"""A small jupyter_client driver for the Relay kernel tests (one kernel per fixture)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.manager import start_new_kernel

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


@dataclass
class Result:
    """The reply to one ``execute_request`` and the IOPub messages it caused."""

    reply: dict[str, Any]
    outputs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.reply["status"] == "ok"

    def of(self, msg_type: str) -> list[dict[str, Any]]:
        return [c for t, c in self.outputs if t == msg_type]

    @property
    def value(self) -> str | None:
        """``text/plain`` of the execute_result (None when there is none)."""
        results = self.of("execute_result")
        assert len(results) <= 1
        return results[0]["data"]["text/plain"] if results else None

    @property
    def stdout(self) -> str:
        return "".join(c["text"] for c in self.of("stream") if c["name"] == "stdout")

    @property
    def error(self) -> str:
        """The error's traceback lines without colours, joined."""
        errors = self.of("error")
        return "\n".join(strip_ansi(line) for e in errors for line in e["traceback"])


class RelayKernel:
    """A running Relay kernel with a blocking client."""

    def __init__(self) -> None:
        self.km, self.kc = start_new_kernel(kernel_name="relay", startup_timeout=60)

    def execute(self, code: str, timeout: float = 60, **kwargs: Any) -> Result:
        msg_id = self.kc.execute(code, **kwargs)
        return self.collect(msg_id, timeout)

    def collect(self, msg_id: str, timeout: float = 60) -> Result:
        outputs: list[tuple[str, dict[str, Any]]] = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "status":
                if msg["content"]["execution_state"] == "idle":
                    break
                continue
            if kind != "execute_input":
                outputs.append((kind, msg["content"]))
        reply = self.kc.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=timeout)
        return Result(reply["content"], outputs)

    def request(self, method: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Send a shell request (``complete``, ``inspect``, ``is_complete`` ...); its reply."""
        msg_id = getattr(self.kc, method)(*args, **kwargs)
        reply = self.kc.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=30)
        return reply["content"]

    def shutdown(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
