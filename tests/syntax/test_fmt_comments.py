"""Comments survive formatting (spec/syntax.md, Pr-Comments): each comment is attached to the
construct it precedes or follows and printed next to it; comments never affect the IR.

Invariants, on every shipped example, every golden program and generated programs with
comments sprinkled in: (a) the multiset of comment texts is unchanged by ``fmt``; (b) ``fmt``
is idempotent; (c) ``parse(fmt(x))`` is alpha-equal to ``parse(x)``."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.syntax.comments import comment_texts
from relay_ref.testing import strategies

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "examples").glob("*.relay")) + sorted(
    p for p in (ROOT / "tests" / "programs").rglob("*.relay")
    if "expect-error: parse" not in p.read_text())


def fmt(text: str, *, prelude: bool = True) -> str:
    """What ``relay fmt`` prints (without the final newline)."""
    return rr.astext(rr.parse(text, prelude=prelude), omit_prelude=True)


def check_invariants(text: str, *, prelude: bool = True) -> str:
    out = fmt(text, prelude=prelude)
    assert Counter(comment_texts(out)) == Counter(comment_texts(text)), out  # (a)
    assert fmt(out, prelude=prelude) == out  # (b)
    assert rr.alpha_equal(rr.parse(out, prelude=prelude), rr.parse(text, prelude=prelude))  # (c)
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_and_golden_programs_keep_their_comments(path: Path) -> None:
    text = path.read_text()
    out = check_invariants(text)
    if comment_texts(text):
        assert comment_texts(out), "every comment was lost"


MANY = """\
// file comment, before the header
#[version = "0.0.5"] // trailing the header

/* A block comment
   spanning lines /* with a nested one */ inside. */

// leads the type definition
type Shape {
  // leads Circle
  Circle(float32), // trails Circle
  Square(float32),
  // before the type's closing brace
}

// leads @area
def @area(%s: Shape, // trails parameter %s
          // leads parameter %scale
          %scale: float32) -> float32 {
  // leads the let
  let %k = 2f; // trails the let
  match (%s) {
    // leads the Circle arm
    Circle(%r) => {
      // leads the arm's result
      %r * %r * %k // trails the arm's result
    }, // trails the Circle arm
    Square(%a) => %a * %a, // trails the Square arm
    // before the match's closing brace
  }
  // before the body's closing brace
} // trails @area

def @main() -> float32 {
  if (True) {
    // inside the then branch
    @area(Circle(1f), 1f)
  } else {
    @area(Square(2f), 1f) // inside the else branch
  }
}
// at the end of the file
"""

MANY_FORMATTED = """\
// file comment, before the header
#[version = "0.0.5"] // trailing the header
/* A block comment
   spanning lines /* with a nested one */ inside. */

// leads the type definition
type Shape {
  // leads Circle
  Circle(float32), // trails Circle
  Square(float32),
  // before the type's closing brace
}

// leads @area
def @area(
  %s: Shape, // trails parameter %s
  // leads parameter %scale
  %scale: float32
) -> float32 {
  // leads the let
  let %k = 2f; // trails the let
  match (%s) {
    // leads the Circle arm
    Circle(%r) => {
      // leads the arm's result
      %0 = multiply(%r, %r);
      multiply(%0, %k) // trails the arm's result
    }, // trails the Circle arm
    Square(%a) => {
      multiply(%a, %a)
    }, // trails the Square arm
    // before the match's closing brace
  }
  // before the body's closing brace
} // trails @area

def @main() -> float32 {
  if (True) {
    // inside the then branch
    @area(Circle(1f), 1f)
  } else {
    @area(Square(2f), 1f) // inside the else branch
  }
}

// at the end of the file"""


def test_comments_in_every_position_print_next_to_their_construct() -> None:
    assert check_invariants(MANY) == MANY_FORMATTED


def test_comments_are_trivia_for_equality_and_hashing() -> None:
    bare = rr.parse(re.sub(r"//[^\n]*", "", MANY.replace(
        "/* A block comment\n   spanning lines /* with a nested one */ inside. */", "")))
    assert not comment_texts(rr.astext(bare))
    commented = rr.parse(MANY)
    assert commented.comments is not None and bare.comments is None
    assert rr.alpha_equal(commented, bare)
    assert rr.structural_hash(commented) == rr.structural_hash(bare)
    assert rr.alpha_equal(rr.infer_types(commented), rr.infer_types(bare))


TVM_TYPED = """\
#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32] /* ty=Tensor[(3), float32] */) -> Tensor[(3), float32] {
  %0 = exp(%x) /* ty=Tensor[(3), float32] */;
  %1 = negative(%0) /* ty=Tensor[(3), float32] */;
  add(%1, %0) /* ty=Tensor[(3), float32] */
}
"""


def test_tvm_type_comments_are_kept_verbatim_in_place() -> None:
    out = check_invariants(TVM_TYPED)
    assert out == """\
#[version = "0.0.5"]
def @main(
  %x: Tensor[(3), float32] /* ty=Tensor[(3), float32] */
) -> Tensor[(3), float32] {
  %0 = exp(%x) /* ty=Tensor[(3), float32] */;
  %1 = negative(%0) /* ty=Tensor[(3), float32] */;
  add(%1, %0) /* ty=Tensor[(3), float32] */
}"""
    bare = TVM_TYPED.replace(" /* ty=Tensor[(3), float32] */", "")
    assert rr.alpha_equal(rr.parse(TVM_TYPED), rr.parse(bare))
    assert rr.structural_hash(rr.parse(TVM_TYPED)) == rr.structural_hash(rr.parse(bare))


def test_renumbered_graph_bindings_keep_their_comments() -> None:
    out = check_invariants("""\
def @f(%x: int32) -> int32 {
  %7 = add(%x, 1); // seven
  // before nine
  %9 = multiply(%7, %7); // nine
  subtract(%9, %7)
}""")
    assert """
  %0 = add(%x, 1); // seven
  // before nine
  %1 = multiply(%0, %0); // nine
  subtract(%1, %0)
""" in out


def test_comments_that_cannot_stay_in_place_go_before_their_statement() -> None:
    out = check_invariants("""\
def @f(%x: int32) -> int32 {
  %3 = (%x, %x); // a graph binding printed inline
  let %y = add(%3.0, /* inside an expression */ 1);
  let %z = add(%y, 1) // a line comment before the semicolon
  ;
  %z
}""")
    assert """
  // a graph binding printed inline
  /* inside an expression */
  let %y = add((%x, %x).0, 1);
  let %z = add(%y, 1); // a line comment before the semicolon
  %z
""" in out


def test_inlined_graph_bindings_comments_lead_the_statement_printing_them() -> None:
    # TVM's batch_norm pattern: `%1 = nn.batch_norm(...) /* ty=... */; %2 = %1.0;` prints
    # the call inline (used once); its comment leads the statement it is printed in, in
    # source order, never the top of the body.
    out = check_invariants("""\
def @main(%x: Tensor[(1, 2), float32], %g: Tensor[(2), float32]) {
  %0 = nn.relu(%x) /* ty=R0 */;
  %1 = nn.batch_norm(%0, %g, %g, %g, %g) /* ty=(A) */;
  %2 = %1.0;
  %3 = nn.batch_norm(%2, %g, %g, %g, %g) /* ty=(B) */;
  %4 = %3.0;
  %5 = subtract(%4, %4); // C
  nn.relu(%5) /* ty=R1 */
}""")
    assert """{
  %0 = nn.relu(%x) /* ty=R0 */;
  /* ty=(A) */
  /* ty=(B) */
  %1 = nn.batch_norm(nn.batch_norm(%0, %g, %g, %g, %g).0, %g, %g, %g, %g).0;
  %2 = subtract(%1, %1); // C
  nn.relu(%2) /* ty=R1 */
}""" in out


def test_leading_comments_go_before_the_bindings_a_statement_prints() -> None:
    out = check_invariants("""\
def @f(%x: Tensor[(4), float32]) {
  // the whole block
  let %h = nn.relu(add(exp(%x), %x)); // h
  %h
}""")
    assert """{
  // the whole block
  %0 = exp(%x);
  %1 = add(%0, %x);
  let %h = nn.relu(%1); // h
""" in out


def test_free_vars_fn_literal_params_and_strings() -> None:
    out = check_invariants("""\
def @f(%x: int32) -> int32 {
  free_var %z: int32; // zed
  let %w = fn (%a: int32, // first
               %b: int32) { add(%a, %b) };
  let %u = fn (%c: int32, Compiler="x//y") { %c };
  %w(%z, %x)
}""")
    assert "  free_var %z: int32; // zed\n" in out
    assert "fn (\n    %a: int32, // first\n    %b: int32\n  ) {" in out
    assert 'Compiler="x//y"' in out and "x//y" not in "".join(comment_texts(out))


@pytest.mark.parametrize("text, expected", [
    ("// only a comment\n", '#[version = "0.0.5"]\n// only a comment'),
    ('/* before */ #[version = "0.0.5"]\n// after\n',
     '/* before */\n#[version = "0.0.5"]\n// after'),
    ("def @f() { 1 } // trails @f\n/* between */\ndef @g() { 2 }\n// last\n",
     '#[version = "0.0.5"]\ndef @f() {\n  1\n} // trails @f\n\n/* between */\n'
     'def @g() {\n  2\n}\n\n// last'),
    ("type T { A, /* x */ B }", '#[version = "0.0.5"]\ntype T {\n  A, /* x */\n  B,\n}'),
    ("type T {\n  A,\n  /* x */ B\n}", '#[version = "0.0.5"]\ntype T {\n  A,\n  /* x */\n  B,\n}'),
    ("extern type E // e\n", '#[version = "0.0.5"]\nextern type E // e'),
    ("def @f() {\n  let %a = 1; /* x */ // y\n  %a\n}",
     '#[version = "0.0.5"]\ndef @f() {\n  let %a = 1; /* x */ // y\n  %a\n}'),
    ("def @f() {\n  // a\n\n  // b\n\n  let %a = 1;\n  %a\n}",
     '#[version = "0.0.5"]\ndef @f() {\n  // a\n\n  // b\n\n  let %a = 1;\n  %a\n}'),
])
def test_module_level_and_small_cases(text: str, expected: str) -> None:
    assert check_invariants(text) == expected


def test_base_module_comments_are_kept() -> None:
    base = rr.parse("// about f\ndef @f() -> int32 { 1 }")
    mod = rr.parse("def @g() -> int32 { @f() } // g", base_module=base)
    out = rr.astext(mod)
    assert "// about f\ndef @f()" in out and "} // g" in out


def test_expressions_and_uncommented_modules_print_as_before() -> None:
    mod = rr.parse("def @f(%x: int32) { add(%x, 1) }")
    assert mod.comments is None
    assert rr.astext(mod) == '#[version = "0.0.5"]\ndef @f(%x: int32) {\n  add(%x, 1)\n}'
    assert rr.astext(rr.parse_expr("add(1, /* c */ 2)")) == "add(1, 2)"


# ---- generated programs with comments at statement boundaries -----------------------------

_KINDS = ["none", "none", "lead_line", "lead_block", "lead_multi", "trail_line",
          "trail_block", "nested", "after_comma"]


def _sprinkle(text: str, kinds: list[str]) -> str:
    """Comments put around the lines of printed text: whole lines before a line, at its end,
    and after a ``, `` outside strings. The ``#[metadata]`` section is left alone."""
    lines = text.split("\n")
    out: list[str] = []
    in_meta = False
    for i, line in enumerate(lines):
        in_meta = in_meta or line.startswith("#[metadata]")
        kind = "none" if in_meta else kinds[i % len(kinds)]
        tag = f"c{i}"
        if kind == "lead_line":
            out.append(f"// {tag}")
        elif kind == "lead_block":
            out.append(f"/* {tag} */")
        elif kind == "lead_multi":
            out.append(f"/* {tag}\n   spans lines */")
        elif kind == "trail_line":
            line += f" // {tag}"
        elif kind == "trail_block":
            line += f" /* {tag} */"
        elif kind == "nested":
            line += f" /* {tag} /* nested */ */"
        elif kind == "after_comma":
            k = line.find(", ")
            if k >= 0 and line[:k].count('"') % 2 == 0:
                line = line[:k + 2] + f"/* {tag} */ " + line[k + 2:]
        out.append(line)
    return "\n".join(out)


@settings(max_examples=60)
@given(strategies.modules(max_depth=3), st.lists(st.sampled_from(_KINDS), min_size=1,
                                                  max_size=40))
def test_generated_programs_keep_sprinkled_comments(mod: rr.IRModule,
                                                    kinds: list[str]) -> None:
    text = _sprinkle(rr.astext(mod), kinds)
    out = check_invariants(text, prelude=False)
    assert rr.alpha_equal(rr.parse(out, prelude=False), mod)
    tags = re.findall(r"c\d+", text)
    assert Counter(re.findall(r"c\d+", out)) == Counter(tags)


def _boundaries(text: str) -> list[int]:
    """Offsets between tokens (at whitespace, or after ``,;{}()``), outside comments,
    strings and the ``#[metadata]`` section."""
    out = []
    end = text.find("#[metadata]")
    end = len(text) if end < 0 else end
    skip = re.compile(r'//[^\n]*|/\*|"[^"]*"')
    i = 0
    while i < end:
        m = skip.match(text, i)
        if m is not None and m.group() == "/*":
            depth, k = 0, i
            while True:
                mm = re.compile(r"/\*|\*/").search(text, k)
                assert mm is not None
                depth += 1 if mm.group() == "/*" else -1
                k = mm.end()
                if depth == 0:
                    break
            i = k
            continue
        if m is not None:
            i = m.end()
            continue
        if text[i] in " \n\t":
            out.append(i)
        elif text[i] in ",;{}()":
            out.append(i + 1)
        i += 1
    return out


_GOLDEN_TEXTS = [p.read_text() for p in FILES]


@settings(max_examples=60)
@given(st.sampled_from(range(len(_GOLDEN_TEXTS))),
       st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["line", "block", "multi"])),
                min_size=1, max_size=12))
def test_golden_programs_keep_comments_between_any_tokens(index: int, picks) -> None:
    text = _GOLDEN_TEXTS[index]
    spots = _boundaries(text)
    for n, (where, kind) in sorted(enumerate(picks), key=lambda x: -spots[x[1][0] %
                                                                          len(spots)]):
        at = spots[where % len(spots)]
        note = {"line": f" // k{n}\n", "block": f" /* k{n} */ ",
                "multi": f"\n/* k{n}\n  spans lines */\n"}[kind]
        text = text[:at] + note + text[at:]
    check_invariants(text)
