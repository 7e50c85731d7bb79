"""The rules of ``spec/``, by name: ``lookup("T-App")`` is the rule as the spec writes it.

**Definition syntax** (spec/README.md says the same): a rule is defined exactly where its
name is written in bold, ``**T-App**``, outside code. Its text is the block around the bold
name:

* in a heading (``### 3.8 **T-App**``): the heading's section, up to the next heading of the
  same or a higher level; several names in one heading (``### 3.12 **E-If-True** and
  **E-If-False**``) share the section;
* in a table row (``| 1.1 | **K-BaseType** | ... |``): the table's header and that row;
* in a list item (``- **PE-Var**: ...``): the item with its continuation lines, and the
  blocks after a blank line that are indented into the item (S-BinOp's operator table);
* anywhere else: its paragraph, and the blocks after it (code, tables, prose: T-Rel's
  outcome grammar and examples) up to the next heading or the next block defining a rule.

Everywhere else (code, messages, other spec text) a rule name is a *citation*. A name is a
family prefix, a hyphen and capitalised parts (``E-App-Closure``); ``FAMILIES`` lists the
prefixes, one judgement each; ``E-If-*`` cites every rule starting ``E-If-`` (``select``).
``tests/test_rule_citations.py`` checks that every citation names a rule, that every rule is
defined once and cited where it is implemented.

``spec_dir()`` is the installed wheel's ``relay_ref/spec`` (pyproject.toml force-includes
``spec/`` there), else the checkout's ``spec/``. The rules are read once per process.

Layer: rank 0, importing only ``relay_ref.suggest`` (rank 0 too), so every layer may cite
through it.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass
from pathlib import Path

from relay_ref.suggest import close_names, hint

# Prefix -> the judgement family it names (one prefix, one family), in spec order.
FAMILIES: dict[str, str] = {
    "S": "syntax: reading the text format (syntax.md 1-5)",
    "Pr": "printing: the canonical text (syntax.md 6)",
    "K": "kinding: Δ ⊢ τ : K (typing.md 1)",
    "T": "expression typing: Δ; Γ ⊢ e : τ (typing.md 3-6)",
    "TP": "pattern typing: Δ ⊢ p : τ ⇒ Γ' (typing.md 3.13)",
    "V": "value and store typing: Σ ⊢ v : τ, ⊢ σ : Σ (semantics.md 1)",
    "E": "evaluation: ρ; σ ⊢ e ⇒ v; σ' (semantics.md 3)",
    "P": "pattern matching: v ▷ p ⊣ θ (semantics.md 3.13)",
    "Stuck": "stuck states: run-time errors (semantics.md 4)",
    "A": "host arguments: Python values for parameters (semantics.md 4.1)",
    "PE": "partial evaluation: ρ; σ; L ⊢ e ⇝ p; σ'; L' (partial_eval.md 2)",
    "Reify": "reification of static values (partial_eval.md 3)",
    "Tidy": "tidy-up of the residual program (partial_eval.md 5)",
    "AD": "automatic differentiation: the type and term transforms (ad.md 1-6)",
    "D": "dynamic tensor rematerialization: the budgeted runtime (dtr.md 3)",
    "BYOC": "partitioning for external compilers (byoc.md)",
    "Shape": "symbolic shapes: dimension algebra, relations, run-time binding (typing.md 5, "
             "semantics.md 8)",
}

# A rule name: a family prefix, then capitalised parts, the first of two characters or more.
# Not part of a longer word or name: ``E-If-*`` cites no single rule and is not matched; nor
# are ``A-Za-z`` and ``[A-Z]``.
_PREFIXES = "|".join(sorted(FAMILIES, key=len, reverse=True))
NAME_RE = re.compile(rf"(?<![\w-])(?:{_PREFIXES})-[A-Z][A-Za-z0-9]+(?:-[A-Z][A-Za-z0-9]*)*"
                     r"(?![\w-])")
_BOLD_RE = re.compile(r"\*\*([^*\n]+?)\*\*")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_ITEM_RE = re.compile(r"^(\s*)(?:[-*+]|\d+\.)\s")
_NUMBERED_RE = re.compile(r"^\d+(?:\.\d+)*\.?$")


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of ``spec/``. ``section`` is the heading it is under, or its numbered table
    row (``"1.1 K-BaseType"``); ``text`` is the block that defines it, as written."""

    name: str  # "T-App"
    file: str  # "typing.md"
    section: str  # "3.8 T-App"
    text: str  # the rule as written in spec/ (judgement, premises, conclusion, prose)
    line: int = 0  # 1-based line of the definition in ``file``

    @property
    def family(self) -> str:
        return family(self.name)

    @property
    def where(self) -> str:
        """``spec/typing.md 3.8 T-App``: how code cites it."""
        return f"spec/{self.file} {self.section}"

    def plain(self) -> str:
        """The text without markdown emphasis; a table row as ``column: cell`` lines."""
        return plain_text(self.text)


def family(name: str) -> str:
    """The family prefix of a rule name (``"E-App-Rec"`` -> ``"E"``)."""
    return name.split("-", 1)[0]


def spec_dir() -> Path:
    """The spec inside an installed wheel, else the checkout's ``spec/`` (as the parser
    finds ``grammar/relay.lark``)."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "spec", package.parent / "spec"):
        if (candidate / "typing.md").is_file():
            return candidate
    raise FileNotFoundError("spec/ not found inside relay_ref or in the checkout")


_FILE_ORDER = ("syntax.md", "typing.md", "semantics.md", "partial_eval.md")


def spec_files() -> list[Path]:
    """The spec's rule files, in the order a reader goes (syntax, typing, semantics, then
    the rest); ``README.md`` is the index: it cites, never defines."""
    files = [p for p in spec_dir().glob("*.md") if p.name != "README.md"]
    rank = {name: i for i, name in enumerate(_FILE_ORDER)}
    return sorted(files, key=lambda p: (rank.get(p.name, len(rank)), p.name))


@functools.cache
def definitions() -> tuple[Rule, ...]:
    """Every definition in ``spec/``, in file and line order, duplicates included (the
    citation test reports those; ``all_rules`` keeps the first)."""
    found: list[Rule] = []
    for path in spec_files():
        found.extend(_parse(path.name, path.read_text(encoding="utf-8")))
    return tuple(found)


@functools.cache
def all_rules() -> dict[str, Rule]:
    """Every rule by name, in spec order."""
    rules: dict[str, Rule] = {}
    for rule in definitions():
        rules.setdefault(rule.name, rule)
    return rules


def lookup(name: str) -> Rule:
    """The rule named ``name``; ``KeyError`` naming the closest rules when there is none."""
    rules = all_rules()
    rule = rules.get(name)
    if rule is not None:
        return rule
    raise KeyError(f"no rule {name} in spec/{did_you_mean(name)}")


def find(name: str) -> Rule | None:
    """The rule named ``name``, else the one rule whose name differs from it only in case
    (``t-app``), else None: for what people type (``relay rule``, ``:rule``)."""
    rules = all_rules()
    if name in rules:
        return rules[name]
    folded = [r for n, r in rules.items() if n.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


def starting(prefix: str) -> list[Rule]:
    """The rules a prefix names, in spec order, case-insensitively: ``E-If-*`` and ``E-If-``
    (with or without the hyphen) name E-If-True and E-If-False; ``T`` (a family) names every
    T- rule, not TP-; ``E-App`` names E-App and the E-App-... rules. A trailing ``*`` is
    allowed and ignored."""
    key = prefix.rstrip("*").lower()
    if not key:
        return []
    whole = key if key.endswith("-") else key + "-"
    return [r for n, r in all_rules().items()
            if n.lower() == key or n.lower().startswith(whole)]


def select(name: str) -> list[Rule]:
    """What people type (``relay rule``, ``:rule``): a name (``find``), or a wildcard
    ``PREFIX*`` for every rule ``starting`` it (``E-If-*``: E-If-True, E-If-False, as
    spec/README.md's citations mean it); ``[]`` when nothing matches."""
    if name.endswith("*"):
        return starting(name)
    rule = find(name)
    return [rule] if rule is not None else []


def suggestions(name: str) -> list[str]:
    """Known rule names close to ``name``: the rules that extend it, all of them (``E-If-``,
    with or without the hyphen -> E-If-True, E-If-False; ``P-`` -> the P- rules), else up
    to three close in spelling (the one differing only in case first)."""
    rules = all_rules()
    same_case = [n for n in rules if n.lower() == name.lower()]
    extending = [r.name for r in starting(name.rstrip("*").rstrip("-") or name)
                 if r.name.lower() != name.lower()]
    if extending:
        return list(dict.fromkeys(same_case + extending))
    return list(dict.fromkeys(same_case + close_names(name, rules, limit=3)))[:3]


def did_you_mean(name: str) -> str:
    """``"; did you mean T-App?"``, ``"; did you mean E-If-True or E-If-False?"``, for more
    than four rules extending ``name`` their count and the first three; or ``""``."""
    near = suggestions(name)
    if not near:
        return ""
    if len(near) > 4:
        stem = name.rstrip("*").rstrip("-")
        return (f"; did you mean one of the {len(near)} rules starting {stem}- "
                f"({', '.join(near[:3])}, ...; {stem}-* names them all)?")
    return hint(near)


def known() -> dict[str, Rule]:
    """``all_rules()``, or no rules when ``spec/`` is missing (a broken install): the links
    and tooltips of errors, traces and derivations are extras, and they are right without."""
    try:
        return all_rules()
    except FileNotFoundError:
        return {}


TOOLTIP_CHARS = 600
"""A tooltip shows at most about this many characters of the rule (whole lines), then
points at ``:rule NAME``: derivations and traces tag every node, so a tag's size bounds
theirs (a rule with its tables and examples is several KB)."""


def rule_html(name: str) -> str:
    """``name`` as an HTML tag for Jupyter output whose tooltip shows the rule's text (its
    first ``TOOLTIP_CHARS`` characters) and where it is; the plain escaped name when no rule
    has that name (or spec/ is missing)."""
    rule = known().get(name)
    if rule is None:
        return html.escape(name)
    text = rule.plain()
    if len(text) > TOOLTIP_CHARS:
        cut = text.rfind("\n", 0, TOOLTIP_CHARS)
        text = text[: cut if cut > 0 else TOOLTIP_CHARS].rstrip() + (
            f"\n\n... (the whole rule: :rule {name})")
    title = html.escape(f"{rule.where}\n\n{text}", quote=True)
    return (f'<abbr class="relay-rule" data-rule="{html.escape(name, quote=True)}" '
            f'title="{title}" style="cursor: help; text-decoration: underline dotted;">'
            f"{html.escape(name)}</abbr>")


def shared(found: list[Rule]) -> list[tuple[Rule, tuple[str, ...]]]:
    """``found`` without repeats, rules defined by one block (E-If-True and E-If-False share
    a heading) together: each block once, with the names of the rules it defines, in order."""
    blocks: dict[tuple[str, str], tuple[Rule, list[str]]] = {}
    for rule in found:
        _, names = blocks.setdefault((rule.file, rule.text), (rule, []))
        if rule.name not in names:
            names.append(rule.name)
    return [(rule, tuple(names)) for rule, names in blocks.values()]


def format_rule(rule: Rule, names: tuple[str, ...] = ()) -> str:
    """The rule for a terminal or a notebook's text output: its name (or ``names``, the
    rules its block defines, from ``shared``) and where it is, a blank line, then its text
    (``Rule.plain``)."""
    return f"{', '.join(names or (rule.name,))}  ({rule.where})\n\n{rule.plain()}\n"


def rule_block_html(rule: Rule, names: tuple[str, ...] = ()) -> str:
    """The rule as an HTML block for Jupyter: a heading line (as ``format_rule``'s), then
    the text (pre-formatted, inline code as ``<code>``, other rule names linked by
    ``link_rules``)."""
    body = re.sub(r"`([^`\n]+)`", r"<code>\1</code>", html.escape(rule.plain()))
    body = link_rules(body)
    return (f'<div class="relay-rule-block"><b>{html.escape(", ".join(names or (rule.name,)))}'
            '</b> '
            f'<span style="opacity: 0.7">({html.escape(rule.where)})</span>'
            f'<pre style="white-space: pre-wrap">{body}</pre></div>')


def format_index(prefixes: tuple[str, ...] | list[str] = ()) -> str:
    """Every rule by family, one line each (``relay rule --list``); with ``prefixes``, only
    the rules ``starting`` one of them (``T``: the T family) under their families' lines."""
    chosen = {r.name for p in prefixes for r in starting(p)} if prefixes else set(all_rules())
    lines: list[str] = []
    by_family: dict[str, list[Rule]] = {}
    for rule in all_rules().values():
        if rule.name in chosen:
            by_family.setdefault(rule.family, []).append(rule)
    width = max(len(n) for n in chosen)
    for prefix, description in FAMILIES.items():
        if prefixes and prefix not in by_family:
            continue
        lines.append(f"{prefix}-…  {description}")
        lines.extend(f"  {r.name:<{width}}  spec/{r.file} {r.section}"
                     for r in by_family.get(prefix, []))
    return "\n".join(lines) + "\n"


_TAG_RE = re.compile(r"(<[^>]*>)")


def link_rules(escaped: str) -> str:
    """``escaped`` (HTML) with each known rule name in its text (not inside tags) replaced
    by ``rule_html``: how errors, traces and derivations link their rule tags."""
    rules = known()

    def link(match: re.Match[str]) -> str:
        word = match.group(0)
        return rule_html(word) if word in rules else word

    parts = _TAG_RE.split(escaped)
    return "".join(p if i % 2 else NAME_RE.sub(link, p) for i, p in enumerate(parts))


def plain_text(text: str) -> str:
    """Markdown text without ``**`` emphasis and heading marks; a table (header, rule line,
    rows) as ``column: cell`` lines per row, rows apart by a blank line; code blocks and
    everything else as written."""
    lines = text.splitlines()
    out: list[str] = []
    header: list[str] | None = None
    rows = 0
    fence = False
    for line in lines:
        fence ^= line.lstrip().startswith("```")
        stripped = line.strip()
        # A table row starts and ends with a bar (indented: a table inside a list item); a
        # grammar's `| alternative` lines in code are not tables.
        if not fence and len(stripped) > 1 and stripped[0] == stripped[-1] == "|":
            cells, indent = _cells(line), line[:len(line) - len(line.lstrip())]
            if header is None:
                header, rows = cells, 0
            elif not all(set(c) <= set("-: ") for c in cells):
                if rows:
                    out.append("")  # rows apart, so each reads as one entry
                rows += 1
                out.extend(f"{indent}{h}: {c}" if h else indent + c
                           for h, c in zip(header, cells, strict=False)
                           if c and h != "#")  # the number is in the rule's section
            continue
        header = None
        heading = _HEADING_RE.match(line)
        out.append(heading.group(2) if heading else line)
    return "\n".join(out).replace("**", "")


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _parse(file: str, source: str) -> list[Rule]:
    """The definitions in one spec file."""
    lines = source.splitlines()
    in_code = [False] * len(lines)
    fence = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fence = not fence
            in_code[i] = True
        else:
            in_code[i] = fence
    headings = [(i, len(m.group(1)), m.group(2)) for i, line in enumerate(lines)
                if not in_code[i] and (m := _HEADING_RE.match(line))]
    names_at: dict[int, list[str]] = {}
    for i, line in enumerate(lines):
        if in_code[i] or line.startswith("    ") and not _ITEM_RE.match(line):
            continue
        names = [m.group(1) for m in _BOLD_RE.finditer(_strip_code_spans(line))
                 if NAME_RE.fullmatch(m.group(1))]
        if names:
            names_at[i] = names
    blocks = _Blocks(lines, in_code, {j for j, _, _ in headings}, set(names_at))
    found: list[Rule] = []
    for i, names in names_at.items():
        line = lines[i]
        heading = next(((j, lvl, t) for j, lvl, t in reversed(headings) if j <= i), None)
        section = _unbold(heading[2]) if heading else file
        if heading and heading[0] == i:
            end = next((j for j, lvl, _ in headings if j > i and lvl <= heading[1]), len(lines))
            text = "\n".join(lines[i:end]).strip()
        elif line.startswith("|"):
            text, number = _table_row(lines, i)
            if number:
                section = f"{number} {names[0]}"
        elif (item := _item_start(lines, i)) is not None:
            text = blocks.list_item(item)
        else:
            text = blocks.paragraph(i)
        found.extend(Rule(name, file, section, text, i + 1) for name in names)
    return found


def _strip_code_spans(line: str) -> str:
    """``line`` without its inline code (a bold name inside backticks is not a definition)."""
    return re.sub(r"`[^`]*`", "", line)


def _unbold(text: str) -> str:
    return text.replace("**", "")


def _table_row(lines: list[str], i: int) -> tuple[str, str]:
    """The table header, its rule line and row ``i``; and the row's number (its first cell
    when that is ``1.1``-like), for the section."""
    start = i
    while start > 0 and lines[start - 1].startswith("|"):
        start -= 1
    rows = [lines[start], lines[start + 1], lines[i]] if i > start + 1 else [lines[i]]
    first = _cells(lines[i])[0]
    return "\n".join(rows), first if _NUMBERED_RE.match(first) else ""


def _item_start(lines: list[str], i: int) -> int | None:
    """The list item line ``i`` is in (its first line), if any."""
    j = i
    while j >= 0 and lines[j].strip():
        if _ITEM_RE.match(lines[j]):
            return j
        if not lines[j].startswith(" "):
            return None
        j -= 1
    return None


@dataclass(frozen=True, slots=True)
class _Blocks:
    """One spec file's lines, for cutting out a list item's or a paragraph's rule text.
    ``in_code``: the line is inside (or is a fence of) a fenced code block; ``headings`` and
    ``defining``: the line numbers of headings and of lines that define rules."""

    lines: list[str]
    in_code: list[bool]
    headings: set[int]
    defining: set[int]

    def _blank(self, j: int) -> bool:
        return not self.lines[j].strip() and not self.in_code[j]

    def _next_block(self, end: int) -> tuple[int, int] | None:
        """The block (a paragraph, a table, a code block: lines up to a blank line outside
        fenced code) after the blank lines from ``end``; None at a heading or the end."""
        start = end
        while start < len(self.lines) and self._blank(start):
            start += 1
        if start == len(self.lines) or start in self.headings:
            return None
        stop = start + 1
        while stop < len(self.lines) and not self._blank(stop) and stop not in self.headings:
            stop += 1
        return start, stop

    def list_item(self, i: int) -> str:
        """The list item starting at line ``i``: its lines and every block after a blank
        line that is indented past the item's marker (a table, code or a paragraph of the
        item, as S-BinOp's operator table), up to the next item of the same list."""
        lines = self.lines
        indent = len(_ITEM_RE.match(lines[i]).group(1))

        def inside(j: int) -> bool:
            line = lines[j]
            item = _ITEM_RE.match(line)
            return (not item or len(item.group(1)) > indent) and (
                self.in_code[j] or len(line) - len(line.lstrip()) > indent)

        def through(j: int) -> int:  # past the item's lines from j on, up to a blank line
            while j < len(lines) and lines[j].strip() and inside(j):
                j += 1
            return j

        end = through(i + 1)
        while (block := self._next_block(end)) is not None and inside(block[0]):
            end = through(block[0])
            if end < block[1]:  # the list goes on with its next item
                break
        return "\n".join(lines[i:end]).strip()

    def paragraph(self, i: int) -> str:
        """The paragraph around line ``i``, then the blocks after it (code, tables, more
        prose: T-Rel's outcome grammar and examples) up to the next heading or the next
        block that defines a rule."""
        lines = self.lines
        start = i
        while start > 0 and lines[start - 1].strip() and start - 1 not in self.headings:
            start -= 1
        end = i + 1
        while end < len(lines) and lines[end].strip() and end not in self.headings:
            end += 1
        while (block := self._next_block(end)) is not None and not any(
                j in self.defining for j in range(*block)):
            end = block[1]
        return "\n".join(lines[start:end]).strip()
