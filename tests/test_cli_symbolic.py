"""``relay run`` with arguments for parameters whose types have shape variables (issue 29):
the literal is checked outside the function, where its shape variables name nothing
(T-ShapeScope), so they are ``?`` there and the values bind them at the call (Shape-Bind)."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr

LIST_SUM = """def @main(%l: List[Tensor[(n), float32]], %y: Tensor[(n), float32]) {
  match (%l) { Nil => sum(%y), Cons(%h, %t) => sum(add(%h, %y)) }
}
"""
ONES = 'ones(shape=[{}], dtype="float32")'


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "lists.relay"
    path.write_text(LIST_SUM)
    return path


def _ok(proc):
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout.strip()


def test_check_accepts_and_run_takes_nil(relay, program):
    proc = relay("check", str(program))
    assert proc.returncode == 0 and proc.stderr.strip().endswith(": ok")
    assert _ok(relay("run", str(program), "Nil", ONES.format(3))) == "3f"
    assert _ok(relay("run", "--compile", str(program), "Nil", ONES.format(2))) == "2f"


def test_run_takes_cons_of_tensors(relay, program):
    cons = f"Cons({ONES.format(2)}, Cons({ONES.format(2)}, Nil))"
    assert _ok(relay("run", str(program), cons, ONES.format(2))) == "4f"


def test_bad_arguments_are_located_errors(relay, program):
    # a list whose tensors differ in length: the literal's own type error
    mixed = f"Cons({ONES.format(2)}, Cons({ONES.format(3)}, Nil))"
    proc = relay("run", str(program), mixed, ONES.format(2))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "<argument 1>:1:" in proc.stderr and "dimension 0 differs (3 vs 2)" in proc.stderr
    # the wrong dtype inside the list: the argument rule names the field
    ints = 'Cons(ones(shape=[2], dtype="int32"), Nil)'
    proc = relay("run", str(program), ints, ONES.format(2))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "Cons field 0" in proc.stderr and "int32" in proc.stderr


def test_python_adt_values_bind_like_the_cli(tmp_path):
    mod = rr.parse(LIST_SUM)
    cons, nil = mod.constructors["Cons"], mod.constructors["Nil"]

    def to_list(*arrays):
        out = rr.ConstructorValue(nil)
        for a in reversed(arrays):
            out = rr.ConstructorValue(cons, [np.asarray(a, dtype="float32"), out])
        return out

    y = np.arange(3, dtype="float32")
    exe = rr.compile(mod)
    for lst, want in ((to_list(), y.sum()), (to_list(np.ones(3)), (y + 1).sum())):
        np.testing.assert_allclose(rr.evaluate(mod, lst, y), want)
        np.testing.assert_allclose(exe(lst, y), want)


def test_tensors_inside_an_adt_argument_bind_its_shape_variables():
    """Shape-Bind inside an ADT value (relay_ref.interpreter.args): the list's tensors must
    agree on ``n``; the entry refuses the argument, located at the parameter."""
    mod = rr.parse(LIST_SUM)
    cons, nil = mod.constructors["Cons"], mod.constructors["Nil"]
    mixed = rr.ConstructorValue(cons, [np.ones(2, "float32"), rr.ConstructorValue(
        cons, [np.ones(3, "float32"), rr.ConstructorValue(nil)])])
    y = np.ones(2, "float32")
    for run in (lambda *a: rr.evaluate(mod, *a), rr.compile(mod)):
        with pytest.raises(rr.RelayRuntimeError) as err:
            run(mixed, y)
        assert "argument %l of @main: Cons field 0: dimension 0: n is 3 but the value " \
               "has 2" in str(err.value)
        assert err.value.diagnostics[0].span is not None
