""":trace --values EXPR in the kernel, in process: the value trace as text/plain and as
text/html whose rule names carry the spec's text; the plain :trace is unchanged."""

from __future__ import annotations

import pytest
from relay_kernel.commands import Context, run_command, split_command
from relay_kernel.display import CommandError
from relay_kernel.session import Session


class _Collect:
    def __init__(self) -> None:
        self.bundles: list[dict] = []

    def stream(self, text: str, name: str = "stdout") -> None: ...

    def display(self, bundle: dict) -> None:
        self.bundles.append(bundle)

    def result(self, bundle: dict) -> None:
        self.bundles.append(bundle)

    def page(self, text: str) -> None: ...


def test_trace_values_command() -> None:
    session, out = Session(), _Collect()
    session.run("let %c = ref(1);", "In[1]")
    ctx = Context(session, "In[2]", out)
    run_command(ctx, *split_command(":trace --values ref_write(%c, ref_read(%c) + 1)"))
    trace, result = out.bundles
    assert trace["text/plain"] == (
        "E-Write  ref_write(%c, ref_read(%c) + 1) ⇒ ()   σ[ℓ0 ↦ 2]\n"
        "  E-Var  %c ⇒ ℓ0\n"
        "  E-App-Op  ref_read(%c) + 1 ⇒ 2\n"
        "    E-Read  ref_read(%c) ⇒ 1   σ(ℓ0) = 1\n"
        "      E-Var  %c ⇒ ℓ0\n"
        "    E-Const  1 ⇒ 1")
    html = trace["text/html"]
    assert html.count('class="relay-rule"') == 6 and 'data-rule="E-Write"' in html
    assert "σ[ℓ0 ↦ 2]" in html
    assert result["text/plain"] == "()"
    run_command(ctx, *split_command(":trace\nlet %x = 1; %x"))  # plain: no values
    assert out.bundles[-2]["text/plain"] == "E-Let  let %x = 1; %x\n  E-Const  1\n  E-Var  %x"
    with pytest.raises(CommandError, match="needs an expression"):
        run_command(ctx, *split_command(":trace --values"))


def test_trace_of_a_stuck_expression_then_the_error() -> None:
    from relay_ref.repl import RelayRuntimeError

    session, out = Session(), _Collect()
    ctx = Context(session, "In[1]", out)
    code = "let %l: List[int32] = Nil; match? (%l) { Cons(%x, _) => %x }"
    for option, lines in (("--values ", [
            "  E-Match-Fail  match? (%l) { ... } ⇒ stuck",
            "    E-Var  %l ⇒ Nil",
            "    P-Ctor  Nil ▷ Cons(%x, _)   fails: Nil is not Cons (clause 1 of 1)",
            "    E-Match-Fail  stuck: no match clause matched the value Nil"]), ("", [
            "  E-Match-Fail  match? (%l) { ... }",
            "    E-Var  %l",
            "    E-Match-Fail  stuck: no match clause matched the value Nil"])):
        out.bundles.clear()
        with pytest.raises(RelayRuntimeError, match=r"the value Nil \[E-Match-Fail\]"):
            run_command(ctx, *split_command(f":trace {option}{code}"))
        (trace,) = out.bundles  # the trace, shown before the error
        assert trace["text/plain"].splitlines()[-len(lines):] == lines
    with pytest.raises(CommandError, match=r"unknown option --value; did you mean --values\? "
                                           r"\(:trace \[--values\]"):
        run_command(ctx, *split_command(":trace --value 1"))
