"""Property tests on generated well-typed programs (relay_ref.testing.typed_strategies):
inference succeeds with the intended type, and printing then re-parsing a program gives a
program that infers the same types."""

from __future__ import annotations

from hypothesis import given

import relay_ref as rr
from relay_ref.ir.visitor import post_order
from relay_ref.testing.typed_strategies import well_typed_modules


@given(well_typed_modules())
def test_generated_programs_are_well_typed(case) -> None:
    mod, expected = case
    out = rr.infer_types(mod)
    assert out.global_types["main"] == expected
    for node in post_order(mod["main"]):
        assert node in out.checked_types


@given(well_typed_modules())
def test_printed_and_reparsed_program_infers_the_same_types(case) -> None:
    mod, _ = case
    before = rr.infer_types(mod)
    text = rr.astext(mod)
    after = rr.infer_types(rr.parse(text, "<printed>", prelude=False))
    assert set(after.global_types) == set(before.global_types)
    for name, ty in before.global_types.items():
        assert rr.alpha_equal(after.global_types[name], ty), (name, text)
    # Same multiset of node types, up to the printer's choice of nodes.
    types_before = sorted(rr.astext(t) for t in before.checked_types.values())
    types_after = sorted(rr.astext(t) for t in after.checked_types.values())
    assert types_before == types_after, text
