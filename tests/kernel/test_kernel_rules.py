"""Rules one command away in the kernel, in process: ``:rule NAME`` (text and HTML),
Shift-Tab on a rule name, and the links to the rules an error cites."""

from __future__ import annotations

import pytest
from relay_kernel.commands import Context, run_command, split_command
from relay_kernel.display import CommandError, error_content, rule_hint
from relay_kernel.editor import inspect
from relay_kernel.session import Session

import relay_ref as rr
from relay_ref import rules


class _Collect:
    def __init__(self) -> None:
        self.shown: list[dict] = []

    def stream(self, text: str, name: str = "stdout") -> None: ...

    def display(self, bundle: dict) -> None:
        self.shown.append(bundle)

    def result(self, bundle: dict) -> None: ...

    def page(self, text: str) -> None: ...


def _run(cell: str) -> list[dict]:
    out = _Collect()
    run_command(Context(Session(), "In[1]", out), *split_command(cell))
    return out.shown


def test_rule_command_shows_text_and_html() -> None:
    (bundle,) = _run(":rule T-Var")
    assert bundle["text/plain"] == ("T-Var  (spec/typing.md 3.1 T-Var)\n\n3.1 T-Var\n"
                                    "`Γ(%x) = τ` ⟹ `Δ; Γ ⊢ %x : τ`.\n"
                                    "A local variable has the type it was bound with.\n")
    page = bundle["text/html"]
    assert page.startswith('<div class="relay-rule-block"><b>T-Var</b>')
    assert "<code>Γ(%x) = τ</code> ⟹ <code>Δ; Γ ⊢ %x : τ</code>" in page
    (listing,) = _run(":rule --list")
    width = max(len(n) for n in rules.all_rules())
    assert f"  {'E-App-Closure':<{width}}  spec/semantics.md 3.8 E-App" in listing["text/plain"]
    assert _run(":rule e-let")[0]["text/plain"].startswith("E-Let  (spec/semantics.md 3.6")


def test_rule_command_unknown_name_suggests() -> None:
    with pytest.raises(CommandError, match=r"^no rule T-Apply in spec/; did you mean T-App, "
                                           r"T-App-Op or E-App\? \(:rule --list lists them\)$"):
        _run(":rule T-Apply")
    with pytest.raises(CommandError, match="usage: :rule NAME"):
        _run(":rule")
    # A name that rules extend suggests them (as `relay rule`); `--list PREFIX` is checked.
    with pytest.raises(CommandError, match=r"^no rule E-If in spec/; did you mean E-If-True "
                                           r"or E-If-False\? \(:rule --list lists them\)$"):
        _run(":rule E-If")
    with pytest.raises(CommandError, match=r"^unknown option --lst; did you mean --list\? "
                                           r"\(:rule takes rule names"):
        _run(":rule T-App --lst")
    with pytest.raises(CommandError, match=r"^no rule starts with Q \(families: S, Pr, K, "):
        _run(":rule --list T Q")


def test_rule_command_takes_several_names_and_wildcards() -> None:
    shown = _run(":rule T-Var E-If-* E-If-False")
    assert [b["text/plain"].split("  (")[0] for b in shown] == ["T-Var", "E-If-True, E-If-False"]
    assert shown[1]["text/html"].startswith(
        '<div class="relay-rule-block"><b>E-If-True, E-If-False</b>')
    (listing,) = _run(":rule --list P")
    assert listing["text/plain"].splitlines() == [
        "P-…  pattern matching: v ▷ p ⊣ θ (semantics.md 3.13)",
        *(f"  {n:<7}  spec/semantics.md 3.13 E-Match and the pattern-matching rules"
          for n in ("P-Wild", "P-Var", "P-Ctor", "P-Tuple"))]


def test_inspect_on_a_rule_name_shows_the_rule() -> None:
    code = "// T-App-Op: the call's relation\nadd(1, 2)"
    reply = inspect(code, 5, None)
    assert reply["found"]
    assert reply["data"]["text/plain"] == rules.format_rule(rules.lookup("T-App-Op"))
    assert inspect(code, code.index("add") + 1, None)["data"]["text/plain"] != \
        reply["data"]["text/plain"]  # an op name still shows the op


def test_errors_end_with_how_to_read_the_rules_they_cite() -> None:
    with pytest.raises(rr.RelayError) as err:
        rr.infer_types(rr.parse("def @main(%x: int32) -> bool { %x }"))
    hint = rule_hint(err.value)
    cited = [m.group(0) for m in rules.NAME_RE.finditer(str(err.value))]
    assert cited and all(n in hint for n in cited) and ":rule" in hint
    # one output: the hint is the traceback's last line, not a display of its own
    assert hint in error_content(err.value)["traceback"][-1]
    assert rule_hint(ValueError("T-App")) is None


def test_without_the_spec_errors_show_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """An install without spec/: no rule links (the error alone), and ``:rule`` says why."""
    with pytest.raises(rr.RelayError) as err:
        rr.infer_types(rr.parse("def @main(%x: int32) -> bool { %x }"))

    def missing() -> dict:
        raise FileNotFoundError("spec/ not found inside relay_ref or in the checkout")

    monkeypatch.setattr(rules, "all_rules", missing)
    assert rule_hint(err.value) is None
    with pytest.raises(CommandError, match="^spec/ not found inside relay_ref"):
        _run(":rule T-App")


def test_saved_notebooks_compare_rule_tags_by_name_not_tooltip() -> None:
    """notebook_outputs rule 9: a tooltip's spec text may change; the rule it names may not."""
    from notebook_outputs import normalise_outputs

    def html(tag: str) -> list[dict]:
        return [{"output_type": "display_data", "data": {"text/html": f"<b>{tag}</b> x"}}]

    now = rules.rule_html("T-App")
    reworded = now.replace("A call instantiates", "A call now instantiates")
    assert reworded != now
    assert normalise_outputs(html(now)) == normalise_outputs(html(reworded))
    assert normalise_outputs(html(now)) != normalise_outputs(html(rules.rule_html("T-Var")))
