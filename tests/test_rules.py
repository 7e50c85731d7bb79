"""``relay_ref.rules`` (the rules of spec/ by name) and ``relay rule``, run as a user runs it.

Invariants checked: a rule's text is the block that defines it (a heading's section, a table
row, a list item); unknown names raise ``KeyError`` / exit 2 naming the closest rules;
``rule_html`` escapes and carries the rule's text; the spec is found inside an installed
package first (pyproject.toml ships it there); ``relay rule T-App`` prints exactly the rule.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from relay_ref import rules

ROOT = Path(__file__).resolve().parent.parent


def relay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay_ref", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120,
                          env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})


T_APP = """\
T-App  (spec/typing.md 3.8 T-App)

3.8 T-App
`Δ; Γ ⊢ f : fn[A1…Ak](τ1, …, τn) -> τ`, type arguments `σ1…σk` (written `f[σ…](…)`, or
fresh holes when omitted), `Δ; Γ ⊢ ei : τi[σ/A]` ⟹ `Δ; Γ ⊢ f(e1, …, en) : τ[σ/A]`.
A call instantiates the callee's type parameters — with the explicit type arguments when
given (exactly `k` of them), else with fresh holes — and each argument must have its
parameter's type; the arity must match. A callee whose type is a hole becomes
`fn(τ1…τn) -> _`.
"""


def test_relay_rule_prints_the_rule_as_the_spec_writes_it() -> None:
    done = relay("rule", "T-App")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == T_APP


def test_relay_rule_list_names_every_rule_by_family() -> None:
    done = relay("rule", "--list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "S-…  syntax: reading the text format (syntax.md 1-5)"
    assert "  T-App             spec/typing.md 3.8 T-App" in lines
    assert "  K-BaseType        spec/typing.md 1.1 K-BaseType" in lines
    listed = [line.split()[0] for line in lines if line.startswith("  ")]
    by_family = [n for f in rules.FAMILIES for n in rules.all_rules() if rules.family(n) == f]
    assert listed == by_family  # each once, by family, in spec order
    heads = [line.split("-", 1)[0] for line in lines if not line.startswith(" ")]
    assert heads == list(rules.FAMILIES)


def test_relay_rule_unknown_name_is_a_usage_error_with_suggestions() -> None:
    done = relay("rule", "T-Apply")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("relay: error: no rule T-Apply in spec/; did you mean T-App, "
                           "T-App-Op or E-App? ('relay rule --list' lists them)\n")


def test_relay_rule_several_names_and_case(capsys: pytest.CaptureFixture[str]) -> None:
    from relay_ref.cli import main

    assert main(["rule", "e-ref", "P-Var"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("E-Ref  (spec/semantics.md 3.15 E-Ref)\n")
    # A table row prints as `column: cell` lines under its numbered section.
    assert out.endswith("P-Var  (spec/semantics.md 3.13 E-Match and the pattern-matching "
                        "rules)\n\nrule: P-Var\njudgement: `v ▷ x ⊣ {x ↦ v}`\n"
                        "in words: a variable matches any value and binds it\n")
    assert main(["rule"]) == 2 and main(["rule", "T-App", "--list"]) == 2
    assert main(["rule", "T-App", "Nope-Rule"]) == 2  # nothing printed for a bad list
    assert capsys.readouterr().out == ""


def test_lookup_and_its_did_you_mean() -> None:
    rule = rules.lookup("K-BaseType")
    assert (rule.file, rule.section, rule.family) == ("typing.md", "1.1 K-BaseType", "K")
    assert rule.text.startswith("| # | rule | judgement | in words |\n|---|")
    assert rules.lookup("E-If-False").section == "3.12 E-If-True and E-If-False"
    assert rules.lookup("E-If-False").text == rules.lookup("E-If-True").text  # shared
    assert rules.lookup("PE-Let-Rec").text.startswith("- **PE-Let** / **PE-Let-Rec**: bind")
    with pytest.raises(KeyError) as err:
        rules.lookup("t-app")  # lookup is exact; find is what people type
    assert err.value.args[0] == ("no rule t-app in spec/; did you mean T-App, E-App or "
                                 "T-App-Op?")
    assert rules.find("t-app") is rules.lookup("T-App")
    assert rules.find("Q-Nothing") is None
    assert rules.did_you_mean("Zzzz") == ""


def test_rule_html_carries_the_rule_and_escapes() -> None:
    tag = rules.rule_html("T-Op")
    assert tag.startswith('<abbr class="relay-rule" data-rule="T-Op" title="spec/typing.md 3.10')
    assert tag.endswith(">T-Op</abbr>")
    assert "-&gt; α where R_op" in tag and "->" not in tag.split(">T-Op<")[0]
    assert rules.rule_html("<T-Nope>") == "&lt;T-Nope&gt;"
    linked = rules.link_rules('<b title="T-App">T-App</b> and T-Nope, E-If-*')
    assert linked.startswith('<b title="T-App"><abbr class="relay-rule" data-rule="T-App"')
    assert linked.endswith("</abbr></b> and T-Nope, E-If-*")


def test_the_spec_is_found_in_an_installed_package_first(tmp_path: Path) -> None:
    """pyproject.toml puts spec/ into the wheel as relay_ref/spec, where ``spec_dir`` looks
    first (an installed package has no checkout beside it)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    force = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force["spec"] == "relay_ref/spec"
    assert rules.spec_dir() == ROOT / "spec"
    package = tmp_path / "site" / "relay_ref"
    (package / "spec").mkdir(parents=True)
    shutil.copy(ROOT / "relay_ref" / "rules.py", package / "rules.py")
    (package / "spec" / "typing.md").write_text("### 3.1 **T-Var**\nThe installed one.\n")
    spec = importlib.util.spec_from_file_location("installed_rules", package / "rules.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["installed_rules"] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["installed_rules"]
    assert module.spec_dir() == package / "spec"
    assert list(module.all_rules()) == ["T-Var"]
    assert module.lookup("T-Var").text == "### 3.1 **T-Var**\nThe installed one."
