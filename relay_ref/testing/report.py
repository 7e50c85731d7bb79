"""``CheckReport``: what one ``check_pass`` run exercised, and its verdict.

A check proves something only about the programs on which the pass *fired*: changed the
program (the result is not alpha-equal to the input) and both programs returned values
that were compared. ``fired < min_fired`` makes the run *vacuous* (``check_pass`` raises
``VacuousCheck`` unless ``allow_vacuous``). ``summary()`` is the one-line verdict a command
line prints; ``text()`` adds the focus and what the changed regions held.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["CheckReport"]


@dataclass(frozen=True)
class CheckReport:
    """One ``check_pass`` run.

    ``generated``: programs checked in the main run (the focus search's ``probed``
    programs not included); ``changed``: those the pass changed; ``compared``: those whose
    two runs both returned values that were compared; ``fired``: changed *and* compared
    (what ``min_fired`` bounds). ``operators`` / ``forms``: in how many changed programs
    each operator / expression form occurred inside a changed region. ``focus``: the names
    the run was focused on (empty: unfocused); ``focus_source``: ``"given"`` (the caller's),
    ``"pilot"`` (inferred from the pilot sample), ``"search"`` (found by trying op families
    and forms), ``"none"`` (the pass fired often enough unfocused), ``"rerun"`` (the pilot
    said no focus was needed but the unfocused run was vacuous: rerun focused on what it
    changed there), ``"unfocused"``
    (``focus=()``: nothing inferred), ``"not found"`` (the
    search found nothing that makes the pass fire) or ``"programs"`` (the caller's programs:
    no focus). ``seconds``: wall time of the whole check, search included. The counts of a
    failed check stop at the failing program (then shrinking). ``extra``: programs drawn
    beyond ``examples`` because a focused run fired fewer than ``min_fired`` times
    (``check_pass``'s extra draws, up to ``MORE_FACTOR`` times ``examples`` in all;
    included in ``generated``)."""

    pass_name: str
    generated: int
    changed: int
    compared: int
    fired: int
    min_fired: int
    focus: tuple[str, ...] = ()
    focus_source: str = "none"
    probed: int = 0
    operators: Mapping[str, int] = field(default_factory=dict)
    forms: Mapping[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    allow_vacuous: bool = False
    #: a counterexample was found (the ``PassCheckError`` this report is attached to)
    failed: bool = False
    #: programs drawn beyond ``examples`` (the focused run fired rarely; in ``generated``)
    extra: int = 0

    @property
    def vacuous(self) -> bool:
        """Fewer than ``min_fired`` programs were changed and compared (nor all of them, nor
        any). ``min_fired=0`` asks for nothing: such a check is never vacuous."""
        if self.min_fired == 0:
            return False
        return self.fired < min(self.min_fired, self.generated) or self.fired == 0

    @property
    def verdict(self) -> str:
        """``"counterexample"`` (the check failed), ``"ok"``, or ``"vacuous"``
        (``"vacuous (allowed)"`` with ``allow_vacuous``)."""
        if self.failed:
            return "counterexample"
        if not self.vacuous:
            return "ok"
        return "vacuous (allowed)" if self.allow_vacuous else "vacuous"

    def summary(self) -> str:
        """``NAME: 183 of 200 programs changed, 171 changed and compared -- ok``."""
        focus = f" (focus: {', '.join(self.focus)})" if self.focus else ""
        return (f"{self.pass_name}: {self.changed} of {self.generated} programs changed, "
                f"{self.fired} changed and compared{focus} -- {self.verdict}")

    def text(self) -> str:
        """The summary, then how the focus was chosen and the changed regions' contents."""
        lines = [self.summary()]
        how = {"given": "as given", "pilot": "inferred from a pilot sample",
               "search": "found by probing operators, op families and forms",
               "none": "none needed (the pass fired often enough unfocused)",
               "rerun": "what an unfocused run changed (it fired too rarely)",
               "not found": "nothing found that makes the pass fire",
               "unfocused": "none (focus=(): the generator's ordinary spread)",
               "programs": "none (the caller's programs)"}.get(self.focus_source,
                                                                 self.focus_source)
        lines.append(f"  focus: {how}; {self.probed} programs probed to choose it")
        if self.extra:
            first = self.generated - self.extra
            lines.append(f"  drawn: {first} programs, then {self.extra} more (the pass fired "
                         f"fewer than {self.min_fired} times in the first {first})")
        if self.operators:
            lines.append("  operators in changed regions: " + _top(self.operators))
        if self.forms:
            lines.append("  forms in changed regions: " + _top(self.forms))
        lines.append(f"  time: {self.seconds:.1f} s")
        return "\n".join(lines)


def _top(counts: Mapping[str, int], n: int = 12) -> str:
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    more = f", ... ({len(items) - n} more)" if len(items) > n else ""
    return ", ".join(f"{k} ({v})" for k, v in items[:n]) + more
