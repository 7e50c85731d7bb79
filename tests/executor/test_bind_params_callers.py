"""Binding an entry's parameters (``rr.compile(params=)``, ``relay run --params``) leaves
every other use of the entry as it was (the ``BindParams`` pass,
``relay_ref.passes.bind_params``).

The shipped example ``examples/mlp.relay`` has a ``@demo`` calling ``@main`` with all five
arguments; binding ``@main``'s weights must not break it (issue 23). The property test
generates modules whose other functions use the entry in each way a program can: a global
calling it, the entry calling itself, a closure calling it, it passed as a value (to a
global applying it); and checks, for a random set of bound parameters, that the bound
entry on the remaining arguments gives what the original gives on all of them, and that
every other global gives what it gave before.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.passes.bind_params import bind_params

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp.relay"
SHAPES = {"x": (1, 784), "w1": (128, 784), "b1": (128,), "w2": (10, 128), "b2": (10,)}


def _mlp_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(23)
    return {k: (rng.standard_normal(s) * 0.05).astype("float32") for k, s in SHAPES.items()}


def _printed(text: str) -> np.ndarray:
    return np.array([float(v) for v in text.replace("f", " ").replace("[", " ")
                     .replace("]", " ").replace(",", " ").split()], dtype="float32")


def test_shipped_example_runs_with_params(relay, tmp_path: Path) -> None:
    """``relay run examples/mlp.relay --params W.npz x.npy``, interpreted and compiled."""
    arrays = _mlp_arrays()
    weights = {k: v for k, v in arrays.items() if k != "x"}
    np.savez(tmp_path / "W.npz", **weights)
    np.save(tmp_path / "x.npy", arrays["x"])
    mod = rr.parse(MLP.read_text(), str(MLP))
    expected = rr.evaluate(mod, *arrays.values()).ravel()
    for flags in ([], ["--compile"]):
        result = relay("run", *flags, MLP, "--params", "W.npz", "x.npy", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        np.testing.assert_allclose(_printed(result.stdout), expected, rtol=1e-5)


def test_shipped_example_compiles_with_params() -> None:
    arrays = _mlp_arrays()
    mod = rr.parse(MLP.read_text(), str(MLP))
    weights = {k: v for k, v in arrays.items() if k != "x"}
    exe = rr.compile(mod, params=weights)
    np.testing.assert_allclose(exe(arrays["x"]), rr.evaluate(mod, *arrays.values()),
                               rtol=1e-5)
    bound = bind_params(rr.infer_types(mod), "main", weights)
    assert [p.name_hint for p in bound.functions["main"].params] == ["x"]
    assert "main_unbound" in bound.functions  # what @demo calls now
    np.testing.assert_array_equal(rr.evaluate(bound, entry="demo"),
                                  rr.evaluate(mod, entry="demo"))


def test_an_entry_nothing_refers_to_gains_no_function() -> None:
    mod = rr.parse("def @main(%x: float32, %w: float32) -> float32 { %x * %w }",
                   prelude=False)
    bound = bind_params(rr.infer_types(mod), "main", {"w": np.float32(3)})
    assert list(bound.functions) == ["main"]
    assert float(rr.evaluate(bound, 2.0)) == 6.0


def test_the_unbound_name_is_fresh() -> None:
    mod = rr.parse("""
def @main(%x: float32, %w: float32) -> float32 { %x * %w }
def @main_unbound() -> float32 { 1f }
def @c() -> float32 { @main(2f, 5f) + @main_unbound() }
""", prelude=False)
    bound = bind_params(rr.infer_types(mod), "main", {"w": np.float32(3)})
    assert list(bound.functions) == ["main", "main_unbound1", "main_unbound", "c"]
    assert float(rr.evaluate(bound, entry="c")) == 11.0
    assert float(rr.evaluate(bound, 2.0)) == 6.0


# -- generated modules ------------------------------------------------------------------------

CALLERS = ("global", "closure", "value", "self", "self_closure")


@st.composite
def entry_programs(draw: st.DrawFn) -> tuple[str, list[str], dict[str, np.ndarray],
                                                list[str]]:
    """(program text, @main's parameter names, a value for each, the names to bind):
    ``@main(%n: int32, %p0 ... %pK)`` and globals that use ``@main`` in the drawn ways."""
    shape = draw(st.sampled_from([(), (3,), (2, 3)]))
    ty = "float32" if shape == () else \
        f"Tensor[({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''}), float32]"
    k = draw(st.integers(1, 3))
    names = [f"p{i}" for i in range(k)]
    kinds = draw(st.lists(st.sampled_from(CALLERS), min_size=1, max_size=3, unique=True))
    ops = [draw(st.sampled_from(["add", "subtract", "multiply", "maximum"]))
           for _ in range(k - 1)]
    base = "%p0"
    for op, name in zip(ops, names[1:], strict=True):
        base = f"{op}({base}, %{name})"
    # arguments a recursive call passes: the parameters permuted, one of them scaled
    perm = draw(st.permutations(names))
    scaled = draw(st.sampled_from(names))
    rec_args = ", ".join(f"multiply(%{p}, 0.5f)" if p == scaled else f"%{p}" for p in perm)
    params = ", ".join(["%n: int32", *(f"%{p}: {ty}" for p in names)])
    fn_type = f"fn (int32, {', '.join([ty] * k)}) -> {ty}"

    def const(v: float) -> str:
        dims = ", ".join(map(str, shape))
        return f"{v}f" if shape == () else f"full({v}f, shape=[{dims}], dtype=\"float32\")"

    consts = ", ".join(const(draw(st.sampled_from([-1.5, 0.25, 2.0]))) for _ in names)
    if "self" in kinds:  # the entry calls itself
        body = f"if (%n > 0) {{ add(@main(%n - 1, {rec_args}), %p0) }} else {{ {base} }}"
    elif "self_closure" in kinds:  # ... through a closure capturing its parameters
        body = (f"let %again = fn (%m: int32) -> {ty} {{ @main(%m, {rec_args}) }};\n"
                f"  if (%n > 0) {{ subtract(%again(%n - 1), %p0) }} else {{ {base} }}")
    else:
        body = base
    lines = [f"def @main({params}) -> {ty} {{\n  {body}\n}}"]
    if "global" in kinds:
        lines.append(f"def @c_global() -> {ty} {{ @main(2, {consts}) }}")
    if "closure" in kinds:
        lines.append(f"def @c_closure() -> {ty} {{\n"
                     f"  let %f = fn (%m: int32) -> {ty} {{ @main(%m, {consts}) }};\n"
                     f"  %f(1)\n}}")
    if "value" in kinds:
        lines.append(f"def @apply(%g: {fn_type}, %m: int32) -> {ty} {{ %g(%m, {consts}) }}")
        lines.append(f"def @c_value() -> {ty} {{ @apply(@main, 3) }}")
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    values: dict[str, np.ndarray] = {"n": np.array(draw(st.integers(0, 3)), "int32")}
    for p in names:
        values[p] = rng.uniform(-2, 2, shape).astype("float32")
    bound = draw(st.lists(st.sampled_from(["n", *names]), min_size=1, unique=True))
    return "\n".join(lines) + "\n", ["n", *names], values, bound


def _split(names: list[str], values: dict[str, np.ndarray], bound: list[str]
           ) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    return {n: values[n] for n in bound}, [values[n] for n in names if n not in bound]


@settings(max_examples=40)
@given(entry_programs())
def test_binding_keeps_every_other_use_of_the_entry(case) -> None:
    text, names, values, bound = case
    mod = rr.infer_types(rr.parse(text, prelude=False))
    weights, rest = _split(names, values, bound)
    expected = rr.evaluate(mod, *values.values())
    out = bind_params(mod, "main", weights)
    assert [p.name_hint for p in out.functions["main"].params] == \
        [n for n in names if n not in bound]
    np.testing.assert_array_equal(rr.evaluate(out, *rest), expected, err_msg=text)
    for name in mod.functions:
        if name.startswith("c_"):  # every caller gives what it gave
            np.testing.assert_array_equal(rr.evaluate(out, entry=name),
                                          rr.evaluate(mod, entry=name), err_msg=text)
    assert ("main_unbound" in out.functions) == (text.count("@main") > 1)


@settings(max_examples=6)
@given(entry_programs())
def test_compile_with_params_keeps_every_other_use_of_the_entry(case) -> None:
    text, names, values, bound = case
    mod = rr.parse(text, prelude=False)
    weights, rest = _split(names, values, bound)
    expected = rr.evaluate(mod, *values.values())
    np.testing.assert_allclose(rr.compile(mod, params=weights)(*rest), expected,
                               rtol=1e-5, err_msg=text)


@pytest.mark.parametrize("kind", CALLERS)
def test_each_kind_of_caller_compiles(kind: str) -> None:
    """One fixed program per kind of use, compiled with params (the property test above
    compiles only a few drawn ones)."""
    uses = {"global": "def @c() -> float32 { @main(2, 1f, 3f) }",
            "closure": "def @c() -> float32 { let %f = fn (%m: int32) { @main(%m, 1f, 3f) };"
                       " %f(2) }",
            "value": "def @ap(%g: fn (int32, float32, float32) -> float32) -> float32 "
                     "{ %g(1, 1f, 3f) }\ndef @c() -> float32 { @ap(@main) }",
            "self": "", "self_closure": ""}
    body = {"self": "if (%n > 0) { @main(%n - 1, %b, %a) + %a } else { %a * %b }",
            "self_closure": "let %r = fn (%m: int32) -> float32 { @main(%m, %b, %a) };"
                            " if (%n > 0) { %r(%n - 1) - %a } else { %a * %b }"
            }.get(kind, "%a * %b")
    text = f"def @main(%n: int32, %a: float32, %b: float32) -> float32 {{ {body} }}\n" + \
        uses[kind]
    mod = rr.parse(text, prelude=False)
    args = (np.int32(3), np.float32(1.5), np.float32(-2))
    expected = rr.evaluate(mod, *args)
    exe = rr.compile(mod, params={"b": args[2]})
    assert float(exe(args[0], args[1])) == pytest.approx(float(expected))
    if "c" in mod.functions:
        bound = bind_params(rr.infer_types(mod), "main", {"b": args[2]})
        assert float(rr.compile(bound, entry="c")()) == \
            pytest.approx(float(rr.evaluate(mod, entry="c")))
