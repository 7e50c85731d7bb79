"""The soundness property is not vacuous: a fixed, seeded draw of generated programs
(``relay_ref.testing.sound_programs``) shows each feature the theorems of
spec/semantics.md 7 are about happening, statically and at run time
(``relay_ref.testing.census``)."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings

from relay_ref.testing.census import CENSUS_KEYS, census
from relay_ref.testing.sound_programs import SoundCase, sound_programs

PROGRAMS = 200
#: The smallest share (of PROGRAMS) each census key must reach.
SHARE = 0.05


def _draw(n: int) -> list[SoundCase]:
    """``n`` programs, the same on every run (derandomised generation, no database, no
    shrinking or replay)."""
    cases: list[SoundCase] = []

    @settings(max_examples=n, derandomize=True, database=None, phases=[Phase.generate],
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(sound_programs())
    def collect(case: SoundCase) -> None:
        cases.append(case)

    collect()
    return cases


def test_each_feature_of_the_soundness_property_appears() -> None:
    cases = _draw(PROGRAMS)
    assert len(cases) >= PROGRAMS * 0.9  # hypothesis may stop a little short
    counts = census(cases)
    assert counts["programs"] == len(cases)
    shares = {key: counts[key] / len(cases) for key in CENSUS_KEYS}
    rare = {key: share for key, share in shares.items() if share < SHARE}
    assert not rare, f"features too rare in {len(cases)} programs: {rare} (all: {shares})"
    # both outcomes of the property are exercised: values and allowed stuck states
    assert counts["value"] < len(cases)


def test_the_draw_is_deterministic() -> None:
    from relay_ref.syntax.printer import astext

    first = [astext(c.module) for c in _draw(20)]
    assert first == [astext(c.module) for c in _draw(20)]
