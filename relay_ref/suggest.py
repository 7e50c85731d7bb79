"""Near names for a misspelt one: the "did you mean" of every message that names an unknown
thing -- an operator, a local, a constructor, a global, a type or data type, an attribute, a
pass, a rule, a ``relay`` subcommand or flag, a kernel command.

One helper, so every such message reads the same way: the hint follows the words naming the
unknown thing and comes before any list of the known ones::

    unknown operator 'nn.dens'; did you mean nn.dense?
    undefined global function @foldll; did you mean @foldl?
    unknown pass Fold; did you mean FoldConstant? (known passes: ...)

``did_you_mean(name, candidates)`` is that hint (``""`` when nothing is close);
``close_names`` the names themselves, for callers that word or rank the hint their own way
(``relay_ref.rules`` lists the rules extending a prefix first).

Invariants: matching is difflib's (``get_close_matches``, similarity ratio at least
``CUTOFF``) on lower-cased names, so a name differing only in case scores 1 and comes first;
among candidates that lower-case alike the first given is kept; ``name`` itself is never
suggested; the result depends only on the arguments. Imports nothing of relay_ref, so every
layer, the parser included, may use it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

__all__ = ["CUTOFF", "close_names", "did_you_mean", "hint", "or_list"]

CUTOFF = 0.6
"""difflib's default: ``nn.dens`` -> ``nn.dense`` (0.93), ``%yy`` -> ``%y`` (0.67), not ``%x``
-> ``%y`` (0)."""


def close_names(name: str, candidates: Iterable[str], *, limit: int = 1,
                cutoff: float = CUTOFF) -> list[str]:
    """At most ``limit`` of ``candidates`` close to ``name`` (case-insensitively), closest
    first, spelt as given; never ``name`` itself."""
    by_lower: dict[str, str] = {}
    for candidate in candidates:
        if candidate != name:
            by_lower.setdefault(candidate.lower(), candidate)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=limit, cutoff=cutoff)
    return [by_lower[c] for c in close]


def or_list(names: Sequence[str], conjunction: str = "or") -> str:
    """``A``, ``A or B``, ``A, B or C``."""
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} {conjunction} {names[-1]}"


def hint(names: Sequence[str], conjunction: str = "or") -> str:
    """``"; did you mean A?"`` (``A or B``, ...) for the given suggestions, ``""`` for none.
    ``conjunction="and"`` for one suggestion per unknown name (``relay opt --passes A,B``)."""
    return f"; did you mean {or_list(names, conjunction)}?" if names else ""


def did_you_mean(name: str, candidates: Iterable[str], *, sigil: str = "",
                 quote: bool = False, limit: int = 1, cutoff: float = CUTOFF) -> str:
    """The hint for an unknown ``name`` among ``candidates`` (both without ``sigil``, which
    is written before each suggestion: ``sigil="@"`` gives ``; did you mean @foldl?``);
    ``quote`` writes each as a Python string (``'FoldConstant'``); ``""`` when none is
    close."""
    near = [sigil + n for n in close_names(name, candidates, limit=limit, cutoff=cutoff)]
    return hint([repr(n) for n in near] if quote else near)
