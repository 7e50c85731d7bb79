"""The whole prelude type-checks (issue 4, 'Done when')."""

from __future__ import annotations

import relay_ref as rr
from relay_ref.prelude import load_prelude


def test_full_prelude_type_checks() -> None:
    mod = rr.infer_types(load_prelude())
    assert set(mod.global_types) == set(mod.functions)
    expected = {
        "id": "fn [A](A) -> A",
        "map": "fn [A, B](fn (A) -> B, List[A]) -> List[B]",
        "foldr": "fn [A, B](fn (A, B) -> B, B, List[A]) -> B",
        "zip": "fn [A, B](List[A], List[B]) -> List[(A, B)]",
        "sum": "fn (List[int32]) -> int32",
        "length": "fn [A](List[A]) -> int32",
    }
    for name, text in expected.items():
        assert rr.alpha_equal(mod.global_types[name], rr.parse_type(text)
                              if hasattr(rr, "parse_type") else _parse_type(text)), name


def _parse_type(text: str):
    from relay_ref.prelude import prelude_fallback
    from relay_ref.syntax.parser import parse_type

    return parse_type(text, fallback=prelude_fallback())
