"""``relay_ref.rules`` (the rules of spec/ by name) and ``relay rule``, run as a user runs it.

Invariants checked: a rule's text is the block that defines it (a heading's section, a table
row, a list item); unknown names raise ``KeyError`` / exit 2 naming the closest rules;
``rule_html`` escapes and carries the rule's text; the spec is found inside an installed
package first (pyproject.toml ships it there); ``relay rule T-App`` prints exactly the rule.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from relay_ref import rules

ROOT = Path(__file__).resolve().parent.parent


T_APP = """\
T-App  (spec/typing.md 3.8 T-App)

3.8 T-App
`Δ; Γ ⊢ f : fn[A1…Ak](τ1, …, τn) -> τ`, type arguments `σ1…σk` (written `f[σ…](…)`, or
fresh holes when omitted), `Δ; Γ ⊢ ei : τ'i`, `τ'i ~ τi[σ/A]` (5.1) ⟹
`Δ; Γ ⊢ f(e1, …, en) : τ[σ/A]`.
A call instantiates the callee's type parameters — with the explicit type arguments when
given (exactly `k` of them), else with fresh holes — and each argument's type must be
consistent with its parameter's type; the arity must match. An argument whose type is only
consistent (`@f((%y,))` with `%y : Tensor[(?), float32]` for a parameter of type
`(Tensor[(3), float32],)`) is a cast point `⟨τ'i ⇒ τi[σ/A]⟩`. A callee whose type is a hole
becomes `fn(τ'1…τ'n) -> _`. A constructor call (T-Constructor) is a T-App.
"""


def test_relay_rule_prints_the_rule_as_the_spec_writes_it(relay) -> None:
    done = relay("rule", "T-App")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == T_APP


def test_relay_rule_list_names_every_rule_by_family(relay) -> None:
    done = relay("rule", "--list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "S-…  syntax: reading the text format (syntax.md 1-5)"
    width = max(len(n) for n in rules.all_rules())  # names aligned to the longest
    assert f"  {'T-App':<{width}}  spec/typing.md 3.8 T-App" in lines
    assert f"  {'K-BaseType':<{width}}  spec/typing.md 1.1 K-BaseType" in lines
    listed = [line.split()[0] for line in lines if line.startswith("  ")]
    by_family = [n for f in rules.FAMILIES for n in rules.all_rules() if rules.family(n) == f]
    assert listed == by_family  # each once, by family, in spec order
    heads = [line.split("-", 1)[0] for line in lines if not line.startswith(" ")]
    assert heads == list(rules.FAMILIES)


def test_relay_rule_unknown_name_is_a_usage_error_with_suggestions(relay) -> None:
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
    assert main(["rule"]) == 2
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
    assert err.value.args[0] == "no rule t-app in spec/; did you mean T-App or T-App-Op?"
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


# ---- a rule's text: its code blocks, tables and following prose (T7) -----------------------

SPEC = """\
## 2. Things

Intro, defining nothing.

**S-Para** reads

```
p ::= q

r ::= s
```

More about S-Para: it continues.

    indented code, still S-Para's

**S-Next** defines the next rule, so S-Para stops before it.

* **S-Item** first line,
  continued:

  | op | name |
  |---|---|
  | `+` | add |
  | `*` | multiply |

  A closing paragraph of the item.
* **S-Other** the next item.

Prose after the list, nobody's.

## 3. Next
"""


def test_a_rules_text_takes_its_code_tables_and_prose() -> None:
    found = {r.name: r for r in rules._parse("syntax.md", SPEC)}
    assert list(found) == ["S-Para", "S-Next", "S-Item", "S-Other"]
    assert found["S-Para"].text == (
        "**S-Para** reads\n\n```\np ::= q\n\nr ::= s\n```\n\n"
        "More about S-Para: it continues.\n\n    indented code, still S-Para's")
    assert found["S-Next"].text == ("**S-Next** defines the next rule, so S-Para stops "
                                    "before it.")
    assert found["S-Item"].text == (
        "* **S-Item** first line,\n  continued:\n\n  | op | name |\n  |---|---|\n"
        "  | `+` | add |\n  | `*` | multiply |\n\n  A closing paragraph of the item.")
    assert found["S-Other"].text == "* **S-Other** the next item."
    # A table of several rows: `column: cell` lines, rows apart; indentation kept.
    assert found["S-Item"].plain() == (
        "* S-Item first line,\n  continued:\n\n  op: `+`\n  name: add\n\n  op: `*`\n"
        "  name: multiply\n\n  A closing paragraph of the item.")


def test_rules_followed_by_code_or_a_table_keep_them_in_the_spec() -> None:
    t_rel = rules.lookup("T-Rel").plain()
    assert "o ::= answer(θ, done)" in t_rel and "| fail(m)" in t_rel  # the outcome grammar
    assert "⤳ not yet   (waits on both holes)" in t_rel  # the examples
    assert "T-Resolve" not in t_rel  # the next section (6.3) is not T-Rel's
    assert "o ::= answer(θ, done)" in rules.rule_html("T-Rel")  # so do the tooltips
    s_binop = rules.lookup("S-BinOp").plain()
    assert "operators: `<` `<=` `>` `>=`" in s_binop and "There is no unary minus" in s_binop
    assert "S-Call" not in s_binop
    assert "program ::= header? definition* stmt* expr?" in rules.lookup("S-Program").text
    assert "S-FreeGlobal" not in rules.lookup("S-Prelude").text


# ---- finding rules as people type them (T9, T10) ------------------------------------------

def test_wildcards_prefixes_and_suggestions() -> None:
    names = lambda found: [r.name for r in found]  # noqa: E731
    assert names(rules.select("E-If-*")) == ["E-If-True", "E-If-False"]
    assert names(rules.select("e-app*")) == ["E-App", "E-App-Closure", "E-App-Rec",
                                             "E-App-Ctor", "E-App-Op"]
    assert rules.select("E-If") == [] and rules.select("Q-*") == []
    assert rules.did_you_mean("E-If") == "; did you mean E-If-True or E-If-False?"
    assert rules.did_you_mean("P-") == "; did you mean P-Wild, P-Var, P-Ctor or P-Tuple?"
    assert rules.did_you_mean("T") == (
        "; did you mean one of the 27 rules starting T- (T-Expr, T-Var, T-Global, ...; "
        "T-* names them all)?")
    assert names(rules.starting("T")) == [n for n in rules.all_rules() if n.startswith("T-")]
    assert rules.starting("") == []


def test_relay_rule_wildcard_prints_a_shared_block_once(capsys) -> None:
    from relay_ref.cli import main

    assert main(["rule", "E-If-*", "E-If-True"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("E-If-True, E-If-False  (spec/semantics.md 3.12 E-If-True and "
                          "E-If-False)\n\n3.12 E-If-True and E-If-False\n")
    assert out.count("3.12 E-If-True and E-If-False") == 2  # the header and the text, once
    assert main(["rule", "E-If"]) == 2
    assert capsys.readouterr().err == (
        "relay: error: no rule E-If in spec/; did you mean E-If-True or E-If-False? "
        "('relay rule --list' lists them)\n")


def test_relay_rule_list_filters_by_prefix(capsys) -> None:
    from relay_ref.cli import main

    assert main(["rule", "--list", "TP", "T-App"]) == 0
    assert capsys.readouterr().out == (
        "T-…  expression typing: Δ; Γ ⊢ e : τ (typing.md 3-6)\n"
        "  T-App     spec/typing.md 3.8 T-App\n"
        "  T-App-Op  spec/typing.md 3.9 T-App-Op\n"
        "TP-…  pattern typing: Δ ⊢ p : τ ⇒ Γ' (typing.md 3.13)\n"
        "  TP-Wild   spec/typing.md 3.13 T-Match and the pattern typing rules\n"
        "  TP-Var    spec/typing.md 3.13 T-Match and the pattern typing rules\n"
        "  TP-Ctor   spec/typing.md 3.13 T-Match and the pattern typing rules\n"
        "  TP-Tuple  spec/typing.md 3.13 T-Match and the pattern typing rules\n")  # aligned
    assert main(["rule", "--list", "T", "Q"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("relay: error: --list Q: no rule starts with Q (families: "
                            f"{', '.join(rules.FAMILIES)})\n")


def test_without_the_spec_links_fall_back_and_relay_rule_says_so(monkeypatch, capsys) -> None:
    """An install without spec/: rule tags are plain text, ``relay rule`` a clear error."""
    from relay_ref.cli import main

    def missing() -> dict:
        raise FileNotFoundError("spec/ not found inside relay_ref or in the checkout")

    monkeypatch.setattr(rules, "all_rules", missing)
    assert rules.rule_html("T-App") == "T-App"
    assert rules.link_rules("<b>T-App</b> at E-Let") == "<b>T-App</b> at E-Let"
    assert main(["rule", "T-App"]) == 70
    assert capsys.readouterr().err == ("relay: error: spec/ not found inside relay_ref or in "
                                       "the checkout\n")


def test_the_spec_index_describes_each_family_as_rules_does() -> None:
    """spec/README.md's index rows and ``FAMILIES`` say the same (V is ``Σ ⊢ v : τ``)."""
    index = (ROOT / "spec" / "README.md").read_text(encoding="utf-8")
    rows = {cells[0].removesuffix("-…"): cells[1] for line in index.splitlines()
            if line.startswith("| ") and (cells := rules._cells(line))[0].endswith("-…")}
    assert rows == rules.FAMILIES
    assert rules.FAMILIES["V"].startswith("value and store typing: Σ ⊢ v : τ, ⊢ σ : Σ")
