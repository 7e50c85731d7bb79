"""Public functions given arguments of the wrong Python type raise a ``TypeError`` that
names the function and the parameter (DESIGN.md 4: no internal exception escapes)."""

from __future__ import annotations

import pytest

import relay_ref as rr

MOD = "def @main() { 1 }"

CASES = [
    (lambda: rr.parse(None), "parse: text must be a str, not NoneType"),
    (lambda: rr.parse(b"def @main() { 1 }"), "parse: text must be a str, not bytes"),
    (lambda: rr.parse(MOD, source_name=5), "parse: source_name must be a str, not int"),
    (lambda: rr.parse(MOD, base_module="x"), "parse: base_module must be an IRModule"),
    (lambda: rr.parse_expr(3), "parse_expr: text must be a str, not int"),
    (lambda: rr.parse_expr("1", source_name=None), "parse_expr: source_name must be a str"),
    (lambda: rr.infer_types("text"), "infer_types: mod must be an IRModule, not str"),
    (lambda: rr.astext(42), "astext: node must be an IRModule, an Expr or a Type, not int"),
    (lambda: rr.alpha_equal(1, rr.parse_expr("1")), "alpha_equal: a must be an IRModule"),
    (lambda: rr.alpha_equal(rr.parse_expr("1"), "1"), "alpha_equal: b must be an IRModule"),
    (lambda: rr.structural_hash([1]), "structural_hash: node must be an IRModule"),
    (lambda: rr.evaluate("text"), "evaluate: program must be an IRModule or an Expr, not str"),
    (lambda: rr.evaluate(rr.parse(MOD), entry=3), "evaluate: entry must be a str, not int"),
    (lambda: rr.evaluate(rr.parse_expr("1"), module=3), "evaluate: module must be an IRModule"),
    (lambda: rr.evaluate(rr.parse(MOD), max_depth=0), "evaluate: max_depth must be a positive"),
]


@pytest.mark.parametrize("call,message", CASES, ids=[m.split(" must")[0] for _, m in CASES])
def test_wrong_python_type_is_a_type_error_naming_the_parameter(call, message):
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value).startswith(message)
    assert not isinstance(info.value, rr.RelayError)


def test_right_types_still_work():
    mod = rr.parse(MOD, source_name="m.relay")
    assert rr.evaluate(mod) == 1 and rr.alpha_equal(mod, rr.parse(MOD))
    assert rr.astext(rr.parse_expr("1")) == "1"
