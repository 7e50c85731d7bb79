"""``gradient(f)`` in the Relay kernel (session rule 8): cells expand gradient calls as
``relay run`` and ``relay check`` expand a file's, on every path (a plain cell, ``let``,
``:trace``, ``:time``, ``:time --compile``, ``:load``, ``:check``, ``:type``, ``:derive``),
with the same values and the same refusals. Through one real kernel for the module; each
test starts with ``:reset``. The expected values are ``rr.evaluate``'s on the same program
written as a file (what ``relay run`` prints)."""

from __future__ import annotations

import re

import pytest
from kernel_harness import RelayKernel, Result

import relay_ref as rr
from relay_ref.repl import type_text, value_text


@pytest.fixture(scope="module")
def k():
    kernel = RelayKernel()
    yield kernel
    kernel.shutdown()


def run_ok(k: RelayKernel, code: str) -> Result:
    res = k.execute(code)
    assert res.ok, f"cell failed:\n{code}\n{res.error}"
    return res


def run_err(k: RelayKernel, code: str, ename: str = "RelayError") -> Result:
    res = k.execute(code)
    assert res.reply["status"] == "error", f"cell did not fail:\n{code}\n{res.outputs}"
    assert res.reply["ename"] == ename, res.error
    assert "Traceback (most recent call last)" not in res.error
    return res


def as_file(defs: str, body: str) -> str:
    """What ``relay run`` prints for ``defs`` and ``def @main() { body }``."""
    mod = rr.parse(f"{defs}\ndef @main() {{ {body} }}")
    return value_text(rr.evaluate(mod))


def one_line(text: str | None) -> str:
    return " ".join((text or "").split())


# (definitions, gradient target, arguments): a scalar function, two parameters, tensors, a
# function literal, a function of an ADT, a function calling another global
CASES = [
    ("def @sq(%x: float32) { %x * %x }", "@sq", "3f"),
    ("def @two(%x: float32, %y: float32) { %x * %y + %x }", "@two", "2f, 5f"),
    ("def @dot(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) { sum(%x * %y) }",
     "@dot", "arange(1f, 4f, 1f), arange(2f, 5f, 1f)"),
    ("", "fn (%x: float32) { %x * %x * %x }", "2f"),
    ("type Pair { P(float32, float32) }\n"
     "def @area(%p: Pair) -> float32 { match (%p) { P(%a, %b) => %a * %b } }",
     "@area", "P(2f, 3f)"),
    ("def @cube(%x: float32) { %x * %x * %x }\ndef @twice(%x: float32) { @cube(%x) * 2f }",
     "@twice", "1.5f"),
]
IDS = ["scalar", "two-params", "tensors", "literal", "adt", "calls-a-global"]


@pytest.mark.parametrize(("defs", "target", "args"), CASES, ids=IDS)
def test_every_path_gives_relay_runs_value(k, tmp_path, defs, target, args):
    call = f"gradient({target})({args})"
    want = as_file(defs, call)
    run_ok(k, ":reset")
    if defs:
        run_ok(k, defs)  # defined in an earlier cell
    assert one_line(run_ok(k, call).value) == want
    # let-bound: within the cell, and as a session binding used by later cells
    assert one_line(run_ok(k, f"let %g = gradient({target}); %g({args})").value) == want
    run_ok(k, f"let %h = gradient({target});")
    assert one_line(run_ok(k, f"%h({args})").value) == want
    assert one_line(run_ok(k, f"(%h({args}), 1).0").value) == want
    for trace in (":trace", ":trace --values"):
        res = run_ok(k, f"{trace} {call}")
        assert one_line(res.value) == want
        assert "E-App" in res.of("display_data")[0]["data"]["text/plain"]
    res = run_ok(k, f":time {call}")
    assert one_line(res.value) == want and "time:" in res.stdout
    # a file with the definitions and a @main using the gradient, loaded
    (tmp_path / "prog.relay").write_text(f"{defs}\ndef @main() {{ {call} }}\n")
    run_ok(k, ":reset")
    res = run_ok(k, f":load {tmp_path / 'prog.relay'}")
    assert "@main" in res.stdout
    assert one_line(run_ok(k, "@main()").value) == want
    # and the checks accept it
    res = run_ok(k, f":check {call}")
    assert res.value.startswith("ok:")
    shown = run_ok(k, f":type gradient({target})").value.split(" : ")[-1]
    typed = rr.infer_types(rr.parse(f"{defs}\ndef @main() {{ gradient({target}) }}"))
    assert "".join(shown.split()) == "".join(
        type_text(typed.global_types["main"].ret_type).split())
    run_ok(k, f":derive {call}")


def test_time_compile_gives_relay_runs_values(k):
    # two inputs per compiled cell (each :time --compile calls it again for 0.5 s)
    (sq, _, sq_args), (two, _, two_args) = CASES[:2]
    want_sq = as_file(sq, f"gradient(@sq)({sq_args})")
    want_two = as_file(two, f"gradient(@two)({two_args})")
    run_ok(k, ":reset")
    run_ok(k, f"{sq}\n{two}")
    res = run_ok(k, f":time --compile (gradient(@sq)({sq_args}), gradient(@two)({two_args}))")
    assert one_line(res.value) == f"({want_sq}, {want_two})" and "compile" in res.stdout
    # a session binding and a binding of the compiled cell, called by the compiled expression
    run_ok(k, "let %g = gradient(@sq);")
    res = run_ok(k, f":time --compile let %q = gradient(@two);\n(%q({two_args}), %g({sq_args}))")
    assert one_line(res.value) == f"({want_two}, {want_sq})"
    assert one_line(run_ok(k, f"%q({two_args})").value) == want_two


def test_a_bound_gradient_keeps_the_definition_it_was_taken_of(k):
    run_ok(k, ":reset")
    run_ok(k, "def @sq(%x: float32) { %x * %x }")
    run_ok(k, "let %g = gradient(@sq);\nlet %y = 10f;")
    run_ok(k, "def @sq(%x: float32) { %x * %x * %x }")
    assert run_ok(k, "%g(3f)").value == "(9f, (6f,))"
    assert run_ok(k, "gradient(@sq)(3f)").value == "(27f, (27f,))"
    # a literal capturing a session binding, as a file's may capture a parameter
    res = run_ok(k, "gradient(fn (%x: float32) { %x * %y })(3f)")
    assert res.value == "(30f, (10f,))"
    # a definition taking a name the expansion made: the binding calling it is forgotten
    res = run_ok(k, "def @sq_grad(%x: float32) -> float32 { %x }")
    assert "forgot %g" in res.stdout
    run_err(k, "%g(3f)", "ParseError")
    assert run_ok(k, "@sq_grad(2f)").value == "2f"
    who = run_ok(k, ":who").value
    assert "@sq_rev" not in who and "%y" in who


# (definitions, gradient target, an argument): operators without a gradient rule, in a
# global and in a function literal
REFUSED = [
    ("def @so(%x: Tensor[(3), float32]) -> float32 { sum(sort(%x)) }", "@so",
     "arange(1f, 4f, 1f)"),
    ("def @tk(%x: Tensor[(3), float32]) { sum(topk(%x, k=2).0) }", "@tk",
     "arange(1f, 4f, 1f)"),
    ("", "fn (%x: Tensor[(3), float32]) { sum(sort(%x)) }", "arange(1f, 4f, 1f)"),
]


@pytest.mark.parametrize(("defs", "target", "arg"), REFUSED, ids=["sort", "topk", "literal"])
def test_refusals_are_relay_checks_and_change_nothing(k, tmp_path, defs, target, arg):
    mod = rr.parse(f"{defs}\ndef @main() {{ gradient({target}) }}", "prog.relay")
    with pytest.raises(rr.RelayError) as caught:  # what `relay check` reports
        rr.optimize(mod, ["ExpandGradient"])
    message = caught.value.diagnostics[0].message
    run_ok(k, ":reset")
    if defs:
        run_ok(k, defs)
    grad = f"gradient({target})"
    for code in [grad, f"{grad}({arg})", f"let %g = {grad};", f"let %g = {grad}; %g({arg})",
                 f"def @uses() {{ {grad} }}", f":check {grad}", f":check def @uses() {{ {grad} }}",
                 f":type {grad}", f":derive {grad}", f":trace {grad}({arg})",
                 f":trace --values {grad}", f":time {grad}", f":time --compile {grad}({arg})"]:
        res = run_err(k, code)
        assert res.of("error")[0]["evalue"] == message, code
        # located in the cells, at the operator; a note at the gradient call when apart
        assert re.search(r"^In\[\d+\]:1:\d+: error: ", res.error), res.error
        if defs:
            assert "note: in the gradient taken here" in res.error, res.error
    who = run_ok(k, ":who").value
    assert "@uses" not in who and "%g" not in who  # a refused cell changes nothing
    (tmp_path / "bad.relay").write_text(f"{defs}\ndef @main() {{ {grad} }}\n")
    run_ok(k, ":reset")
    res = run_err(k, f":load {tmp_path / 'bad.relay'}")
    assert res.of("error")[0]["evalue"] == message
    assert "bad.relay:" in res.error
    assert "(nothing defined yet)" in run_ok(k, ":who").value


def test_gradient_of_what_is_not_a_function_is_located(k):
    run_ok(k, ":reset")
    run_ok(k, "let %f = fn (%x: float32) { %x };")
    res = run_err(k, "gradient(%f)(1f)")
    assert "gradient(...) takes a global function (@f) or a function literal" in res.error
    assert "In[" in res.error and "^" in res.error


def test_expand_gradient_calls_in_process():
    """``relay_ref.repl.expand_gradient_calls``: unchanged without gradient calls; an
    expression keeps its free variables (a REPL's bindings) and its value."""
    from relay_ref.ir.visitor import free_vars
    from relay_ref.repl import (
        TensorType,
        Var,
        evaluate_checked,
        expand_gradient_calls,
        parse_program,
    )

    mod = rr.infer_types(rr.parse("def @sq(%x: float32) { %x * %x }"))
    y = Var("y")
    plain = parse_program("@sq(%y)", module=mod, scope={"y": y}).expr
    assert expand_gradient_calls(mod, [plain], {y: TensorType((), "float32")}) == (
        mod, [plain])
    program = parse_program("(gradient(fn (%x: float32) { %x * %y })(3f), gradient(@sq)(%y))",
                            module=mod, scope={"y": y})
    out, [expr] = expand_gradient_calls(mod, [program.expr], {y: TensorType((), "float32")})
    assert "sq" in out.functions and "main" not in out.functions
    assert [v.name_hint for v in free_vars(expr)] == ["y"]
    value = evaluate_checked(expr, out, {y: rr.evaluate(rr.parse_expr("2f"))})
    assert value_text(value) == "((6f, (2f,)), (4f, (4f,)))"


def test_a_gradient_closure_written_into_a_session_ref_keeps_its_helpers(k):
    """A closure calling what an expansion made survives the cell through a session ref
    (written by the trailing expression, or by an `e;` statement): what it calls is kept."""
    sq = "def @sq(%x: float32) { %x * %x }"
    grad_y = "fn (%y: float32) -> float32 { gradient(@sq)(%y).0 }"
    run_ok(k, ":reset")
    run_ok(k, sq)
    run_ok(k, "let %r = ref(fn (%x: float32) -> float32 { %x });")
    run_ok(k, f"ref_write(%r, {grad_y})")  # the trailing expression
    want = as_file(sq, f"let %r = ref(fn (%x: float32) -> float32 {{ %x }}); "
                       f"ref_write(%r, {grad_y}); ref_read(%r)(3f)")
    assert one_line(run_ok(k, "ref_read(%r)(3f)").value) == want == "9f"
    run_ok(k, "1f")  # a later cell that makes no helpers keeps them too
    assert one_line(run_ok(k, "ref_read(%r)(3f)").value) == want

    cube = "def @cube(%x: float32) { %x * %x * %x }"
    ty = "(float32, (float32,))"
    start = f"let %r = ref(fn (%x: float32) -> {ty} {{ (%x, (%x,)) }});"
    run_ok(k, ":reset")
    run_ok(k, cube)
    run_ok(k, start)
    run_ok(k, "ref_write(%r, gradient(@cube));")  # an `e;` statement
    want = as_file(cube, f"{start} ref_write(%r, gradient(@cube)); ref_read(%r)(2f)")
    assert one_line(run_ok(k, "ref_read(%r)(2f)").value) == want == "(8f, (12f,))"
    # a ref inside a binding's value, written in the same cell as the binding
    run_ok(k, f"let %p = (ref(fn (%x: float32) -> {ty} {{ (%x, (%x,)) }}), 1);\n"
              "ref_write(%p.0, gradient(@cube));")
    assert one_line(run_ok(k, "ref_read(%p.0)(2f)").value) == want


def test_rebinding_a_gradient_does_not_pile_up_helpers(k):
    """Rebinding `let %g = gradient(@sq);` drops what only the old value called: the kept
    helpers stay those the live values call (the kernel, and a Session in process)."""
    from relay_kernel.session import Session

    sq = "def @sq(%x: float32) { %x * %x }"
    want = as_file(sq, "gradient(@sq)(3f)")
    run_ok(k, ":reset")
    run_ok(k, sq)
    for _ in range(30):
        run_ok(k, "let %g = gradient(@sq);")
    assert one_line(run_ok(k, "%g(3f)").value) == want
    who = run_ok(k, ":who").value
    assert who.count("%g") == 1

    session = Session()
    session.run(sq, "In[1]")
    sizes = []
    for n in range(30):
        session.run("let %g = gradient(@sq);", f"In[{n + 2}]")
        gen = session.generated
        sizes.append(len(gen.functions) + len(gen.type_definitions))
    assert max(sizes) <= 4, sizes
    assert len(session.env) == 1  # the shadowed bindings' values are not kept either
    assert value_text(session.run("%g(3f)", "In[40]").value) == want
    # a value calling no helper any more (rebound to a plain function): none are kept
    session.run("let %g = fn (%x: float32) { %x };", "In[41]")
    assert not session.generated.functions and not session.generated.type_definitions
