"""The soundness property is not vacuous: a fixed, seeded draw of generated programs
(``relay_ref.testing.sound_programs``), from both distributions the property runs on
(``mismatched_dims`` True and False, tests/test_soundness.py), shows each feature the
theorems of spec/semantics.md 7 are about happening, statically and at run time
(``relay_ref.testing.census``), and each outcome the property allows: a value returned, and
a stuck state of each allowed kind where it may occur."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from relay_ref.testing.census import CENSUS_KEYS, census
from relay_ref.testing.sound_programs import SoundCase, sound_programs

#: Programs drawn per mode (the property's two tests).
PROGRAMS = 200
#: The smallest share of the programs of both modes together each feature key must reach.
SHARE = 0.05
#: The outcomes (each program has exactly one) and the smallest share of a mode's programs
#: each must reach there; None: it must not happen there (no value of another extent
#: reaches a cast without ``mismatched_dims``, and a failed cast is then a violation).
OUTCOMES = {True: {"value": 0.15, "match-failed": 0.05, "op-failed": 0.05,
                   "cast failed": 0.15},
            False: {"value": 0.5, "match-failed": 0.05, "op-failed": 0.05,
                    "cast failed": None}}
#: Run-time casts checked and passed, in each mode.
PASSED_CASTS = 0.05


def _draw(n: int, mismatched_dims: bool) -> list[SoundCase]:
    """``n`` programs, the same on every run (derandomised generation, no database, no
    shrinking or replay)."""
    cases: list[SoundCase] = []

    @settings(max_examples=n, derandomize=True, database=None, phases=[Phase.generate],
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(sound_programs(mismatched_dims=mismatched_dims))
    def collect(case: SoundCase) -> None:
        cases.append(case)

    collect()
    return cases


@pytest.fixture(scope="module")
def census_by_mode() -> dict[bool, tuple[Counter[str], int]]:
    out = {}
    for mode in (True, False):
        cases = _draw(PROGRAMS, mode)
        assert len(cases) >= PROGRAMS * 0.9  # hypothesis may stop a little short
        counts = census(cases)
        assert counts["programs"] == len(cases)
        out[mode] = (counts, len(cases))
    return out


def test_each_feature_of_the_soundness_property_appears(census_by_mode) -> None:
    counts = sum((c for c, _ in census_by_mode.values()), Counter())
    n = sum(n for _, n in census_by_mode.values())
    shares = {key: counts[key] / n for key in CENSUS_KEYS}
    outcomes = set(OUTCOMES[True])
    rare = {key: share for key, share in shares.items()
            if key not in outcomes and share < SHARE}
    assert not rare, f"too rare in {n} programs: {rare} (all: {shares})"


@pytest.mark.parametrize("mismatched_dims", [True, False])
def test_each_allowed_outcome_appears_in_each_mode(census_by_mode, mismatched_dims) -> None:
    """A value, E-Match-Fail, an operator failing and (only with mismatched extents) a
    failed cast, each in a fair share of the programs of the mode; exactly one per program
    (nothing else is allowed); and casts that were checked and passed in both modes."""
    counts, n = census_by_mode[mismatched_dims]
    shares = {key: counts[key] / n for key in CENSUS_KEYS}
    for key, least in OUTCOMES[mismatched_dims].items():
        if least is None:
            assert counts[key] == 0, (key, shares)
        else:
            assert shares[key] >= least, (key, shares)
    assert sum(counts[key] for key in OUTCOMES[mismatched_dims]) == n, shares
    assert shares["cast checked and passed"] >= PASSED_CASTS, shares


def test_the_draw_is_deterministic() -> None:
    from relay_ref.syntax.printer import astext

    first = [astext(c.module) for c in _draw(20, True)]
    assert first == [astext(c.module) for c in _draw(20, True)]
