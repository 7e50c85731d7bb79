""":derive EXPR in the kernel (commands.py, Session.derive_of), in process: the derivation
as text/plain and a collapsible text/html tree; an ill-typed EXPR shows the tree, then
raises the RelayTypeError the kernel reports; the argument's own bindings are part of the
derivation (a T-Let root), and :type types them in context."""

from __future__ import annotations

import pytest
from relay_kernel.commands import Context, run_command, split_command
from relay_kernel.session import Session

import relay_ref as rr


class _Collect:
    def __init__(self) -> None:
        self.bundles: list[dict] = []

    def stream(self, text: str, name: str = "stdout") -> None: ...

    def display(self, bundle: dict) -> None:
        self.bundles.append(bundle)

    def result(self, bundle: dict) -> None:
        self.bundles.append(bundle)

    def page(self, text: str) -> None: ...


def test_derive_command() -> None:
    session, out = Session(), _Collect()
    session.run("let %x = 1f;", "In[1]")
    ctx = Context(session, "In[2]", out)
    run_command(ctx, *split_command(":derive add(%x, 2f)"))
    (bundle,) = out.bundles
    assert bundle["text/plain"] == (
        "T-App-Op  %x + 2f : float32\n"
        "  hole ?t1 := float32  by T-Rel Broadcast at %x + 2f\n"
        "  T-Var  %x : float32\n"
        "  T-Const  2f : float32\n"
        "  T-Rel  Broadcast(float32, float32, ?t1): ?t1 := float32")
    assert "<details open" in bundle["text/html"] and 'data-rule="T-Var"' in bundle["text/html"]
    with pytest.raises(rr.RelayTypeError, match="dtypes differ"):
        run_command(ctx, *split_command(":derive add(%x, 2)"))
    assert "error: add: dtypes differ: float32 vs int32" in out.bundles[-1]["text/plain"]


def test_derive_keeps_the_argument_s_lets() -> None:
    session, out = Session(), _Collect()
    ctx = Context(session, "In[1]", out)
    run_command(ctx, *split_command(":derive let %y = 2; %y"))
    assert out.bundles[-1]["text/plain"] == (
        "T-Let  let %y = 2; %y : int32\n"
        "  T-Const  2 : int32\n"
        "  T-Var  %y : int32")
    # two derivations in one notebook: their HTML anchors differ
    run_command(ctx, *split_command(":derive let %z = 2; %z"))
    first, second = (b["text/html"] for b in out.bundles)
    assert first.split("id='")[1][:9] != second.split("id='")[1][:9]
    # :type too: the literal's parameter is typed by the call after it
    assert rr.astext(session.type_of("let %f = fn (%x) { %x }; %f(1)", "In[2]")) == "int32"
