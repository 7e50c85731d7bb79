"""Text syntax of symbolic shapes and the Relax forms (spec/syntax.md S-SymDim, S-NDim,
S-MatchCast, S-DPS, S-Dataflow, Pr-SymDim, Pr-Relax): what they read to, that they print
back to the same IR (Pr-RoundTrip), the lexer traps, and located errors for bad input."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.ir import expr as E
from relay_ref.ir.shape import ANY, floordiv, sym
from relay_ref.ir.types import TensorType, TupleType
from relay_ref.ops.registry import NoAttrs
from relay_ref.ops.symbolic import DPSAttrs, MatchCastAttrs
from relay_ref.syntax.parser import parse_type
from relay_ref.syntax.short_text import short_text
from relay_ref.testing import strategies

H = '#[version = "0.0.5"]\n'
N, M = sym("n"), sym("m")
F = "float32"

PROGRAM = H + '''def @main(%x: Tensor[(n, 4), float32], %t: (Tensor[(n, 4), float32],)) {
  %0 = add(%x, 1f);
  let %y = match_cast(%0, Tensor[(m, 4), float32]);
  let %z = call_dps_packed("my_add", (%y, %x), Tensor[(n, 4), float32]);
  let %z1 = call_tir("k", (%x,), (Tensor[(n-1, 4), float32], Tensor[(floordiv(n, 2)), int64]));
  let %z2 = call_tir("k", %t, Tensor[(4 * n + 2), float32]);
  let %z3 = call_tir("k", (), Tensor[(3), float32]);
  let %w = dataflow {
    let %a = add(%z, %y);
    let %b = multiply(%a, %a);
    (%b, %a)
  };
  concatenate((%w.0, %x))
}
'''


def _bindings(mod: rr.IRModule) -> dict[str, E.Expr]:
    out, e = {}, mod["main"].body
    while isinstance(e, E.Let):
        out[e.var.name_hint] = e.value
        e = e.body
    return out


def _round_trip(mod: rr.IRModule) -> str:
    text = rr.astext(mod)
    again = rr.parse(text, "printed")
    assert rr.alpha_equal(mod, again), text
    assert rr.structural_hash(mod) == rr.structural_hash(again)
    assert rr.astext(again) == text
    return text


def test_the_forms_read_to_calls_of_the_ops() -> None:
    b = _bindings(rr.parse(PROGRAM))
    mc = b["y"]
    assert isinstance(mc, E.Call) and mc.op == E.Op("match_cast")
    assert mc.attrs == MatchCastAttrs(TensorType((M, 4), F))
    dps = b["z"]
    assert dps.op == E.Op("call_dps_packed") and len(dps.args) == 1
    assert isinstance(dps.args[0], E.Tuple) and len(dps.args[0].fields) == 2
    assert dps.attrs == DPSAttrs("my_add", TensorType((N, 4), F))
    z1 = b["z1"]
    assert z1.op == E.Op("call_tir") and len(z1.args[0].fields) == 1
    assert z1.attrs.out_type == TupleType((TensorType((N - 1, 4), F),
                                           TensorType((floordiv(N, 2),), "int64")))
    assert isinstance(b["z2"].args[0], E.Var)  # a bare variable holding a tuple, as written
    assert b["z2"].attrs.out_type == TensorType((N * 4 + 2,), F)
    assert isinstance(b["z3"].args[0], E.Tuple) and b["z3"].args[0].fields == ()
    df = b["w"]
    assert df.op == E.Op("dataflow") and isinstance(df.attrs, NoAttrs)
    assert isinstance(df.args[0], E.Let) and df.args[0].var.name_hint == "a"


def test_the_forms_print_back_in_their_own_syntax() -> None:
    text = _round_trip(rr.parse(PROGRAM))
    for part in ('match_cast(%0, Tensor[(m, 4), float32])',
                 'call_dps_packed("my_add", (%y, %x), Tensor[(n, 4), float32])',
                 'call_tir("k", (%x,), (Tensor[(n - 1, 4), float32], '
                 'Tensor[(floordiv(n, 2)), int64]))',
                 'call_tir("k", %t, Tensor[(n * 4 + 2), float32])',
                 'call_tir("k", (), Tensor[(3), float32])',
                 'let %w = dataflow {\n    let %a = add(%z, %y);'):
        assert part in text, text
    assert "type=" not in text and "func_name" not in text


def test_hand_built_calls_round_trip() -> None:
    x = E.Var("x", TensorType((N, 3), F))
    inner = E.Call(E.Op("nn.relu"), (x,), NoAttrs())
    a = E.Var("a")
    body = E.Let(a, inner, E.Tuple((a, a)))
    df = E.Call(E.Op("dataflow"), (body,), NoAttrs())
    mc = E.Call(E.Op("match_cast"), (E.TupleGetItem(df, 0),),
                MatchCastAttrs(TensorType((M, 3), F)))
    dps = E.Call(E.Op("call_tir"), (E.Tuple((mc, inner)),),
                 DPSAttrs("k", TupleType((TensorType((M * N,), F), TensorType((), "int32")))))
    mod = rr.IRModule({"main": E.Function((x,), dps)})
    text = _round_trip(mod)
    assert "dataflow {" in text and "match_cast(" in text and 'call_tir("k"' in text


def test_nested_dataflow_in_an_argument_and_a_block_with_only_an_output() -> None:
    src = H + '''def @main(%x: Tensor[(n), float32]) {
  add(dataflow { %x }, dataflow { let %a = negative(%x); %a })
}'''
    mod = rr.parse(src)
    text = _round_trip(mod)
    assert text.count("dataflow {") == 2


@pytest.mark.parametrize("text, dims", [
    ("Tensor[(n * 4), float32]", (N * 4,)),
    ("Tensor[(4 * n), float32]", (N * 4,)),
    ("Tensor[(2 * (n + 1)), float32]", (N * 2 + 2,)),
    ("Tensor[(n-1, n -1, n - 1), float32]", (N - 1,) * 3),  # the lexer trap: minus, not -1
    ("Tensor[(n - -1), float32]", (N + 1,)),
    ("Tensor[(n + m - m, 2 * 3), float32]", (N, 6)),
    ("Tensor[(floordiv(n * 4 + 2, 2), floormod(n * 4, 2)), float32]", (N * 2 + 1, 0)),
    ("Tensor[(min(n, m), max(n, n)), float32]", (None, N)),
    ("Tensor[(?, n, 3), float32]", (ANY, N, 3)),
    ("Tensor[ndim=2, float32]", (ANY, ANY)),
    ("Tensor[ndim=0, float32]", ()),
])
def test_dimensions_read_canonically_and_round_trip(text: str, dims: tuple) -> None:
    ty = parse_type(text)
    assert isinstance(ty, TensorType) and len(ty.shape) == len(dims)
    for got, want in zip(ty.shape, dims, strict=True):
        if want is not None:
            assert got == want, (text, ty.shape)
    assert parse_type(rr.astext(ty)) == ty


def test_expressions_keep_their_minus_reading() -> None:
    mod = rr.parse(H + "def @main(%x: Tensor[(n), float32]) { %x-1f }")
    assert "subtract(%x, 1f)" in rr.astext(mod)
    mod = rr.parse(H + "def @main(%x: int32) { match (%x) { _ => 1 }; match? (%x) { _ => 2 } }")
    assert "match (%x)" in rr.astext(mod) and "match? (%x)" in rr.astext(mod)
    mod = rr.parse(H + "def @main(%x: int32) { let %match_cast = %x; let %dataflow = "
                       "%match_cast; %dataflow }")
    assert "let %match_cast = %x" in rr.astext(mod)


@pytest.mark.parametrize("body, message, note", [
    ("match_cast(%x)", "expected ','", "the form is match_cast(value, Type)"),
    ("match_cast(%x, 3)", "expected a type", "the form is match_cast"),
    ("match_cast(%x, fn (int32) -> int32)", "tensor type or a tuple of tensor types", None),
    ("match_cast(%x, Tensor[(foo(n, 2)), float32])", "unknown function 'foo'", None),
    ("match_cast(%x, Tensor[(n), float32)", "expected ']'", None),
    ("call_dps_packed(f, (%x,), Tensor[(n), float32])", "expected a string",
     'call_dps_packed("name"'),
    ('call_dps_packed("", (%x,), Tensor[(n), float32])', "name of a registered function",
     None),
    ('call_tir("f", (%x,))', "expected ','", 'call_tir("name"'),
    ('call_tir("f", (%x,), Tensor[(n), float32], 3)', "expected ')'", "the form is"),
    ('call_tir("f", (%x,), int32 -> int32)', "expected ')'", None),
    ("dataflow { }", "expected an expression", None),
    ("dataflow { let %a = %x; }", "expected an expression", None),
    ("dataflow(%x)", "expected '{'", None),
])
def test_malformed_forms_are_located_parse_errors(body: str, message: str,
                                                  note: str | None) -> None:
    src = H + f"def @main(%x: Tensor[(n), float32]) {{\n  {body}\n}}"
    with pytest.raises(rr.ParseError, match=re.escape(message)) as info:
        rr.parse(src)
    span = info.value.diagnostics[0].span
    assert span is not None and span.line == 3 and span.column >= 3
    if note is not None:
        assert note in str(info.value), str(info.value)


@pytest.mark.parametrize("ty, message, note", [
    ("Tensor[ndim=-1, float32]", "ndim must be a non-negative integer", None),
    ("Tensor[ndim=2.5f, float32]", "ndim must be a non-negative integer", None),
    ("Tensor[nd=2, float32]", "expected a shape or 'ndim='", None),
    ("Tensor[(n - n - 1), float32]", "non-negative", None),
    ("Tensor[(2.5f), float32]", "non-negative integer", None),
    ("Tensor[(floordiv(n, 0)), float32]", "floordiv by zero", None),
    ("Tensor[(floormod(n, 2 - 2)), float32]", "floormod by zero", None),
    ("Tensor[(n/2), float32]", "plain name", "floordiv(n, 2)"),
    ("Tensor[(n / 2), float32]", "after 'n'", "floordiv(n, 2)"),
    ("Tensor[(n % 2), float32]", "'%' must be directly followed", "floormod(n, 2)"),
    ("Tensor[(n.a), float32]", "plain name", None),
    ("Tensor[(-n), float32]", "expected", None),
    ("Tensor[(n +), float32]", "expected", None),
    ("Tensor[(pow(n, 2)), float32]", "unknown function 'pow'", None),
    ("Tensor[(99999999999999999999), float32]", "does not fit", None),
])
def test_malformed_dimensions_are_located_parse_errors(ty: str, message: str,
                                                       note: str | None) -> None:
    src = H + f"def @main(\n  %x: {ty}) {{ %x }}"
    with pytest.raises(rr.ParseError, match=re.escape(message)) as info:
        rr.parse(src)
    span = info.value.diagnostics[0].span
    assert span is not None and span.line == 3 and span.column >= 7, str(info.value)
    if note is not None:
        assert note in str(info.value), str(info.value)


def test_short_text_writes_the_forms() -> None:
    b = _bindings(rr.parse(PROGRAM))
    assert short_text(b["y"]) == "match_cast(%x + 1f, Tensor[(m, 4), float32])"
    assert short_text(b["z"]) == \
        'call_dps_packed("my_add", (%y, %x), Tensor[(n, 4), float32])'
    assert short_text(b["w"]).startswith("dataflow { let %a = %z + %y; ")


def test_comments_in_and_around_the_forms_survive_fmt() -> None:
    from collections import Counter

    from relay_ref.syntax.comments import comment_texts

    src = H + '''def @main(%x: Tensor[(n, 4), float32] /* the input */) {
  // before the block
  let %w = dataflow { // opens
    let %a = add(%x, %x); // trailing a
    /* before result */
    %a // result
    // end of block
  }; // after block
  let %y = match_cast(%w /* inside */, Tensor[(m, 4), float32]); // cast
  call_tir("f", (%y,), Tensor[(m, 4), float32]) // tail
}
'''

    def fmt(text: str) -> str:
        return rr.astext(rr.parse(text), omit_prelude=True)

    out = fmt(src)
    assert Counter(comment_texts(out)) == Counter(comment_texts(src)), out
    assert fmt(out) == out
    assert rr.alpha_equal(rr.parse(out), rr.parse(src))
    assert "    %a // result\n    // end of block\n  }; // after block" in out


# ---- generated programs with symbolic dimensions and the Relax forms anywhere -------------


@settings(max_examples=60, deadline=None)
@given(strategies.modules(symbolic=True))
def test_generated_symbolic_modules_round_trip(mod: rr.IRModule) -> None:
    text = rr.astext(mod)
    again = rr.parse(text, "printed", prelude=False)
    assert rr.alpha_equal(mod, again), text
    assert rr.structural_hash(mod) == rr.structural_hash(again)
    assert rr.astext(again) == text


@settings(max_examples=60, deadline=None)
@given(strategies.exprs(symbolic=True))
def test_generated_symbolic_exprs_round_trip(expr: E.Expr) -> None:
    text = rr.astext(expr)
    again = rr.parse_expr(text, "printed", prelude=False)
    assert rr.alpha_equal(expr, again), text
    assert rr.astext(again) == text


@settings(max_examples=100, deadline=None)
@given(strategies.types(symbolic=True))
def test_generated_symbolic_types_round_trip(ty: object) -> None:
    assert rr.alpha_equal(parse_type(rr.astext(ty)), ty)


# ---- fuzzing: mutations of the forms never raise anything but a located ParseError ---------

_FUZZ_TOKENS = ["match_cast", "call_dps_packed", "call_tir", "dataflow", "(", ")", "{", "}",
                "[", "]", ",", ";", '"f"', '"', "Tensor", "ndim=", "ndim", "=", "n", "m",
                "-", "-1", "+", "*", "/", "%", "floordiv", "floormod(", "min", "?", "0",
                "99999999999999999999", "float32", "let", "%x", "%a", "%0", "fn", "\n"]
_FUZZ_TOKEN_RE = re.compile(r"\s+|[A-Za-z_%@][\w/.]*|\d+\w*|.", re.S)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_token_mutations_of_the_forms_give_located_parse_errors(data: st.DataObject) -> None:
    tokens = _FUZZ_TOKEN_RE.findall(PROGRAM)
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(tokens) - 1))
        op = data.draw(st.sampled_from(["replace", "delete", "insert"]))
        if op == "replace":
            tokens[pos] = data.draw(st.sampled_from(_FUZZ_TOKENS))
        elif op == "delete":
            del tokens[pos]
        else:
            tokens.insert(pos, data.draw(st.sampled_from(_FUZZ_TOKENS)))
    try:
        mod = rr.parse("".join(tokens), "fuzz.relay")
    except rr.ParseError as err:
        assert err.diagnostics and err.diagnostics[0].span is not None and err.render()
    else:
        _round_trip(mod)
