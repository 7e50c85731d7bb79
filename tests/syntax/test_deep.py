"""Deep input (DESIGN.md "Depth"): parse, print and round-trip without RecursionError."""

from __future__ import annotations

import relay_ref as rr
from relay_ref import parse, parse_expr
from relay_ref.ir import expr as E
from relay_ref.syntax.printer import astext


def test_let_chain_10000() -> None:
    n = 10_000
    text = "".join(f"let %x{i} = {i};\n" for i in range(n)) + "%x0"
    e = parse_expr(text)
    printed = astext(e)
    again = parse_expr(printed)
    assert rr.alpha_equal(e, again) and astext(again) == printed
    assert rr.structural_hash(e) == rr.structural_hash(again)


def test_constructor_chain_100000() -> None:
    n = 100_000
    text = "def @main() { " + "".join(f"Cons({i}, " for i in range(n)) + "Nil" + ")" * n + " }"
    mod = parse(text)
    printed = astext(mod)
    again = parse(printed)
    assert rr.alpha_equal(mod, again)
    node = again["main"].body
    for _ in range(n):
        node = node.args[1]
    assert isinstance(node, E.Call) and node.op.name == "Nil"


def test_nested_parentheses_5000() -> None:
    n = 5_000
    e = parse_expr("(" * n + "1f" + ")" * n)
    assert isinstance(e, E.Constant) and astext(e) == "1f"
    t = parse_expr("(" * n + "1," + ")" * n)  # 5000 nested tuples
    printed = astext(t)
    assert rr.alpha_equal(parse_expr(printed), t)


def test_nested_functions_and_binops() -> None:
    n = 3_000
    e = parse_expr("".join(f"fn (%x{i}) {{ " for i in range(n)) + "1" + "}" * n)
    assert rr.alpha_equal(parse_expr(astext(e)), e)
    chain = parse_expr("free_var %a: int32; " + " + ".join(["%a"] * 5000))
    assert rr.alpha_equal(parse_expr(astext(chain)), chain)


def test_deeply_nested_types_print() -> None:
    # Was a RecursionError in type_to_text (List[List[...]] and ((...,),) 5 000 deep).
    n = 5_000
    for ty in ("List[" * n + "int32" + "]" * n, "(" * n + "int32" + ",)" * n,
               "fn () -> " * n + "int32"):
        mod = parse(f"def @main(%x: {ty}) {{ %x }}")
        assert rr.alpha_equal(parse(astext(mod)), mod)
        assert astext(mod["main"].params[0].type_annotation).startswith(ty[:20])
