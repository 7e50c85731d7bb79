"""Rule names in code and notebooks cite rules that ``spec/`` defines, and every rule of the
spec is cited where it is implemented (``relay_ref.rules``; spec/README.md).

Invariants checked:
* every rule name in ``relay_ref/``, ``kernel/`` (code, docstrings, messages), the notebooks
  (cells and saved outputs) and the spec's own text names a rule ``spec/`` defines; a
  wildcard such as ``E-If-*`` names the start of at least one rule;
* every rule is defined exactly once, in the file of its family (one prefix, one judgement
  family), and no bold text is a malformed definition (``**PE-Let / PE-Let-Rec**``);
* every rule is cited at least once in the modules that implement its family
  (``IMPLEMENTED_IN``), and pattern matching (P-*) and pattern typing (TP-*) are not cited
  on the other side (``NOT_IN``).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from relay_ref import rules

ROOT = Path(__file__).resolve().parent.parent

# Family -> the spec file that defines its rules.
FAMILY_FILES = {
    "S": "syntax.md", "Pr": "syntax.md",
    "K": "typing.md", "T": "typing.md", "TP": "typing.md",
    "V": "semantics.md", "E": "semantics.md", "P": "semantics.md", "Stuck": "semantics.md",
    "A": "semantics.md",
    "PE": "partial_eval.md", "Reify": "partial_eval.md", "Tidy": "partial_eval.md",
    "AD": "ad.md", "D": "dtr.md",
    "BYOC": "byoc.md",
    # Symbolic shapes: the dimension algebra and relations are typing, binding is semantics.
    "Shape": ("typing.md", "semantics.md"),
}

# Family -> where it is implemented: each rule must be cited in one of these (a file, or a
# directory and everything under it).
IMPLEMENTED_IN = {
    "S": ("relay_ref/syntax",),
    "Pr": ("relay_ref/syntax/printer.py", "relay_ref/syntax/comments.py"),
    # An operator's type (K-FnRel, with its K-Relation constraint) is built by the registry.
    "K": ("relay_ref/typecheck", "relay_ref/ops/registry.py"),
    "T": ("relay_ref/typecheck",),
    "TP": ("relay_ref/typecheck",),
    # value_conforms lives in interpreter/args.py; testing/soundness.py states the property.
    "V": ("relay_ref/interpreter/args.py", "relay_ref/testing/soundness.py"),
    "E": ("relay_ref/interpreter",),
    "P": ("relay_ref/interpreter",),
    "Stuck": ("relay_ref/interpreter",),
    "A": ("relay_ref/interpreter/args.py",),
    "PE": ("relay_ref/passes/partial_eval.py",),
    "Reify": ("relay_ref/passes/partial_eval.py",),
    "Tidy": ("relay_ref/passes/partial_eval.py",),
    "AD": ("relay_ref/passes/gradient.py", "relay_ref/passes/gradient_common.py",
           "relay_ref/passes/gradient_reverse.py", "relay_ref/passes/gradient_first_order.py",
           "relay_ref/passes/gradient_forward.py", "relay_ref/ops/gradient_op.py"),
    "D": ("relay_ref/dtr",),
    "BYOC": ("relay_ref/passes/compiler_support.py", "relay_ref/passes/merge_composite.py",
             "relay_ref/passes/annotate_target.py", "relay_ref/passes/merge_compiler_regions.py",
             "relay_ref/passes/partition_graph.py", "relay_ref/passes/regions.py",
             "relay_ref/byoc", "relay_ref/executor"),
    "Shape": ("relay_ref/ir/shape.py", "relay_ref/ir/symdim.py", "relay_ref/ops",
              "relay_ref/typecheck", "relay_ref/interpreter", "relay_ref/executor"),
}

_PREFIXES = "|".join(sorted(rules.FAMILIES, key=len, reverse=True))
_WILDCARD_RE = re.compile(rf"(?<![\w-])((?:{_PREFIXES})(?:-[A-Z][A-Za-z0-9]*)*)-\*")


@functools.cache
def _sources() -> dict[str, str]:
    """Path (relative to the checkout) -> the text to scan for citations."""
    texts: dict[str, str] = {}
    for base in ("relay_ref", "kernel/relay_kernel"):
        for path in sorted((ROOT / base).rglob("*.py")):
            texts[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        texts[str(path.relative_to(ROOT))] = _notebook_text(path)
    for path in sorted((ROOT / "spec").glob("*.md")):
        texts[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    return texts


def _notebook_text(path: Path) -> str:
    """A notebook's cell sources and saved text outputs, one line per line."""
    book = json.loads(path.read_text(encoding="utf-8"))
    parts: list[str] = []
    for cell in book.get("cells", []):
        parts.append("".join(cell.get("source", "")))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            for mime in ("text/plain", "text/html", "text/markdown"):
                parts.append("".join(out.get("data", {}).get(mime, "")))
    return "\n".join(parts)


@functools.cache
def _citations() -> list[tuple[str, int, str]]:
    """Every ``(path, line, name)`` cited in the scanned sources."""
    found = []
    for path, text in _sources().items():
        for number, line in enumerate(text.splitlines(), 1):
            found.extend((path, number, m.group(0)) for m in rules.NAME_RE.finditer(line))
    return found


def test_every_cited_rule_is_defined_in_the_spec() -> None:
    cited = _citations()
    assert len(cited) > 300  # the scan does see the code's citations
    unknown = []
    for path, line, name in cited:
        try:
            rules.lookup(name)
        except KeyError as err:
            unknown.append(f"{path}:{line}: {err.args[0]}")
    assert not unknown, "rule names cited but not defined in spec/:\n" + "\n".join(unknown)


def test_wildcards_name_the_start_of_some_rule() -> None:
    names = list(rules.all_rules())
    bad = []
    for path, text in _sources().items():
        for number, line in enumerate(text.splitlines(), 1):
            for m in _WILDCARD_RE.finditer(line):
                stem = m.group(1) + "-"
                if not any(n.startswith(stem) for n in names):
                    bad.append(f"{path}:{number}: {m.group(0)} matches no rule")
    assert not bad, "\n".join(bad)


def test_each_rule_is_defined_once_in_its_familys_file() -> None:
    defined = rules.definitions()
    assert len(defined) > 150
    twice = [f"{r.name} (spec/{r.file}:{r.line})" for r in defined
             if Counter(d.name for d in defined)[r.name] > 1]
    assert not twice, "defined more than once:\n" + "\n".join(twice)
    assert set(FAMILY_FILES) == set(rules.FAMILIES) == set(IMPLEMENTED_IN)
    def files(family: str) -> tuple[str, ...]:
        where = FAMILY_FILES[family]
        return (where,) if isinstance(where, str) else where

    misplaced = [f"{r.name} in spec/{r.file}, its family is in spec/{' or '.join(files(r.family))}"
                 for r in defined if r.file not in files(r.family)]
    assert not misplaced, "\n".join(misplaced)
    # Every family has rules, and every rule's text names it (its own block).
    assert {r.family for r in defined} == set(rules.FAMILIES)
    assert all(r.name in r.text for r in defined)


def test_no_bold_text_is_a_malformed_definition() -> None:
    """A bold rule name is a definition; bold text that contains a rule name and is not
    exactly one (``**PE-Let / PE-Let-Rec**``, ``**S-Rel.**``) would silently define
    nothing."""
    bold = re.compile(r"\*\*([^*\n]+?)\*\*")
    bad = []
    for path in sorted((ROOT / "spec").glob("*.md")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in bold.finditer(line):
                text = m.group(1)
                if rules.NAME_RE.search(text) and not rules.NAME_RE.fullmatch(text):
                    bad.append(f"spec/{path.name}:{number}: **{text}**")
    assert not bad, "bold text that is not exactly a rule name:\n" + "\n".join(bad)


# Families that must not be cited in these places: matching (P-*) is a run-time judgement,
# pattern typing (TP-*) a static one ("P-" once meant both, and printing).
NOT_IN = {
    "P": ("relay_ref/typecheck",),
    "TP": ("relay_ref/interpreter", "relay_ref/executor"),
}


def test_pattern_rules_are_cited_by_the_judgement_they_belong_to() -> None:
    bad = [f"{path}:{line}: {name} (family {rules.family(name)})"
           for path, line, name in _citations()
           if any(path.startswith(p + "/") for p in NOT_IN.get(rules.family(name), ()))]
    assert not bad, "rules cited outside their judgement:\n" + "\n".join(bad)


def _cited_in(prefixes: tuple[str, ...], citations: list[tuple[str, int, str]]) -> set[str]:
    return {name for path, _, name in citations
            if any(path == p or path.startswith(p + "/") for p in prefixes)}


@pytest.mark.parametrize("family", list(rules.FAMILIES))
def test_every_rule_is_cited_where_it_is_implemented(family: str) -> None:
    citations = _citations()
    where = IMPLEMENTED_IN[family]
    cited = _cited_in(where, citations)
    missing = [f"{r.name} ({r.where})" for r in rules.all_rules().values()
               if r.family == family and r.name not in cited]
    assert not missing, (f"rules of family {family} not cited in {', '.join(where)}:\n"
                         + "\n".join(missing))


def test_names_are_recognised_exactly() -> None:
    """The citation pattern: a family prefix and capitalised parts, nothing longer."""
    text = "E-App-Closure, [T-App] E-If-* A-Za-z [A-Z] xT-Var T-Var2 TP-Ctor."
    assert [m.group(0) for m in rules.NAME_RE.finditer(text)] == [
        "E-App-Closure", "T-App", "T-Var2", "TP-Ctor"]
    assert [m.group(0) for m in _WILDCARD_RE.finditer("E-If-* and PE-*")] == ["E-If-*", "PE-*"]


def test_the_spec_index_lists_every_rule() -> None:
    index = (ROOT / "spec" / "README.md").read_text(encoding="utf-8")
    listed = {m.group(0) for m in rules.NAME_RE.finditer(index)}
    assert set(rules.all_rules()) <= listed, sorted(set(rules.all_rules()) - listed)
