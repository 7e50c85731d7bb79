"""The pass manager (``relay_ref.passes.manager``): one pipeline for ``rr.optimize``,
``relay opt`` and ``rr.compile``; pass specs with options; the ``BindParams`` pass; no
import cycle among the pass modules."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import relay_ref as rr
from relay_ref import repl
from relay_ref.executor.compile import DEFAULT_PASSES
from relay_ref.passes import (
    Pass,
    PassSpecError,
    Pipeline,
    make_pass,
    register_pass,
    split_specs,
    unregister_pass,
)
from relay_ref.passes.bind_params import BindParams
from relay_ref.passes.fuse_ops import FuseOps, primitive_functions
from relay_ref.passes.manager import PassError

LOG: list[str] = []


class _Log(Pass):
    """Records its tag, changes nothing (a registered pass with an option)."""

    name = "TestLogPass"
    opt_level = 3

    def __init__(self, tag: str = "") -> None:
        self.tag = tag

    def __call__(self, mod: rr.IRModule) -> rr.IRModule:
        LOG.append(self.tag)
        return mod


class _Bad(Pass):
    """Fails on purpose: raises, or returns an ill-typed module."""

    name = "TestBadPass"
    opt_level = 0

    def __init__(self, mode: str = "raise") -> None:
        self.mode = mode

    def __call__(self, mod: rr.IRModule) -> rr.IRModule:
        if self.mode == "raise":
            raise KeyError("boom")
        return rr.parse("def @main(%x: Tensor[(2), float32]) -> int32 { %x }")


@pytest.fixture
def logging_passes():
    register_pass(_Log)
    register_pass(_Bad)
    LOG.clear()
    yield
    unregister_pass(_Log.name)
    unregister_pass(_Bad.name)


FOLDABLE = rr.parse("def @main(%x: Tensor[(2), float32]) { exp(add(%x, add(1f, 2f))) }")
CHAIN = rr.parse("def @main(%x: Tensor[(4), float32]) { exp(exp(exp(exp(exp(%x))))) }")

MODEL = """
def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(3, 4), float32], %b: Tensor[(3), float32],
          %g: Tensor[(3), float32], %beta: Tensor[(3), float32], %mean: Tensor[(3), float32],
          %var: Tensor[(3), float32]) {
  %0 = nn.dense(%x, %w, units=3);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.batch_norm(%1, %g, %beta, %mean, %var);
  nn.relu(%2.0)
}
def @again(%x: Tensor[(2, 4), float32], %w: Tensor[(3, 4), float32],
           %b: Tensor[(3), float32], %g: Tensor[(3), float32], %beta: Tensor[(3), float32],
           %mean: Tensor[(3), float32], %var: Tensor[(3), float32]) {
  @main(%x, %w, %b, %g, %beta, %mean, %var)
}
"""


def _weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {"w": rng.normal(size=(3, 4)).astype("float32"),
            "b": rng.normal(size=3).astype("float32"),
            "g": rng.uniform(0.5, 2, 3).astype("float32"),
            "beta": rng.normal(size=3).astype("float32"),
            "mean": rng.normal(size=3).astype("float32"),
            "var": rng.uniform(0.5, 2, 3).astype("float32")}


def _numpy_model(x: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    y = x @ p["w"].T + p["b"]
    y = (y - p["mean"]) / np.sqrt(p["var"] + 1e-5) * p["g"] + p["beta"]
    return np.maximum(y, 0)


# ---- one pipeline ------------------------------------------------------------------------

def test_optimize_and_compile_run_the_same_passes(monkeypatch, logging_passes):
    from relay_ref.passes.fold_constant import FoldConstant

    fold = _counting(monkeypatch, FoldConstant)
    rr.optimize(FOLDABLE, DEFAULT_PASSES)
    by_optimize = len(fold)
    rr.compile(FOLDABLE)
    assert by_optimize == len(fold) - by_optimize >= 1
    specs = ["TestLogPass(tag='a')", "FoldConstant", "TestLogPass(tag='a')",
             "TestLogPass(tag='b')", "FuseOps"]
    rr.optimize(FOLDABLE, specs)
    by_optimize_log = list(LOG)
    LOG.clear()
    exe = rr.compile(FOLDABLE, passes=specs)
    assert LOG == by_optimize_log == ["a", "a", "b"]
    assert exe.plan.passes == ("TestLogPass(tag='a')", "FoldConstant",
                               "TestLogPass(tag='a')", "TestLogPass(tag='b')", "FuseOps")


def test_compile_runs_its_declared_pipeline_as_optimize_would():
    mod, params = rr.parse(MODEL), _weights()
    exe = rr.compile(mod, params)
    want = rr.optimize(mod, [BindParams(params), *DEFAULT_PASSES])
    assert rr.alpha_equal(exe.module, want)
    assert exe.plan.passes == Pipeline(DEFAULT_PASSES).specs() == DEFAULT_PASSES


def _counting(monkeypatch, cls) -> list[int]:
    """Count the runs of the built-in pass class ``cls``."""
    real, calls = cls.__call__, []

    def counted(self, mod):
        calls.append(1)
        return real(self, mod)

    monkeypatch.setattr(cls, "__call__", counted)
    return calls


def test_an_idempotent_pass_is_not_rerun_on_its_own_output(monkeypatch, logging_passes):
    from relay_ref.passes.dead_code import DeadCodeElimination
    from relay_ref.passes.fold_constant import FoldConstant

    dce, fold = _counting(monkeypatch, DeadCodeElimination), _counting(monkeypatch, FoldConstant)
    Pipeline(["FoldConstant", "DeadCodeElimination", "FoldConstant"])(FOLDABLE)
    assert fold == [1] and dce == [1]  # DCE changed nothing: FoldConstant's own output
    Pipeline(["FoldConstant", "FuseOps", "FoldConstant"])(FOLDABLE)
    assert fold == [1, 1, 1]  # FuseOps changed the module: FoldConstant runs again
    Pipeline(["TestLogPass(tag='a')", "TestLogPass(tag='a')"])(FOLDABLE)
    assert LOG == ["a", "a"]  # a user's pass promises nothing: run twice
    calls: list[int] = []

    def user(mod):
        calls.append(1)
        return mod

    Pipeline([user, user])(FOLDABLE)
    assert calls == [1, 1]


def test_a_pass_not_declared_idempotent_runs_every_time_it_is_listed(monkeypatch):
    """Only a class declaring ``idempotent`` is skipped on its own output; rr.optimize runs
    every other listed pass (PartialEvaluate unfolds further on a second run)."""
    from relay_ref.passes.manager import declares_idempotent
    from relay_ref.passes.partial_eval import PartialEvaluate

    src = '''
    def @f(%n: int32, %x: float32) -> float32 {
      if (equal(%n, 0)) { %x } else { @f(subtract(%n, 1), add(%x, 1f)) }
    }
    def @main(%x: float32) -> float32 { @f(100, %x) }
    '''
    mod = rr.parse(src)
    once = rr.optimize(mod, ["PartialEvaluate"])
    twice = rr.optimize(once, ["PartialEvaluate"])
    assert not rr.alpha_equal(once, twice)  # the reproducer needs a pass that is not
    assert rr.alpha_equal(rr.optimize(mod, ["PartialEvaluate", "PartialEvaluate"]), twice)
    assert not declares_idempotent(PartialEvaluate())
    # Two BindParams with different weights share a spec (keys only): both run.
    assert not declares_idempotent(BindParams({"w": np.ones(2)}))
    runs = _counting(monkeypatch, PartialEvaluate)
    Pipeline(["PartialEvaluate", "PartialEvaluate"])(once)
    assert runs == [1, 1]


def test_idempotence_is_declared_by_the_class_itself():
    """A subclass of an idempotent pass may behave otherwise: it does not inherit it."""
    from relay_ref.passes.fold_constant import FoldConstant
    from relay_ref.passes.manager import declares_idempotent

    class Mine(FoldConstant):
        pass

    assert declares_idempotent(FoldConstant()) and not declares_idempotent(Mine())


def test_types_are_checked_only_after_a_pass_that_changed_the_module(monkeypatch):
    import relay_ref.typecheck.infer as infer

    checked = rr.infer_types(FOLDABLE)
    real, count = infer.infer_types, []

    def counting(mod):
        count.append(1)
        return real(mod)

    monkeypatch.setattr(infer, "infer_types", counting)
    out = Pipeline([lambda m: m, "DeadCodeElimination"])(checked)
    assert out is checked and count == []
    out = Pipeline(["FoldConstant"])(checked)
    assert out is not checked and len(count) >= 1 and out.checked_types


def test_selection_follows_opt_level_required_and_disabled(logging_passes):
    names = ["TestLogPass(tag='a')", "FoldConstant"]
    assert [p.name for p in Pipeline(names).selected()] == ["TestLogPass", "FoldConstant"]
    assert [p.name for p in Pipeline(names, opt_level=2).selected()] == ["FoldConstant"]
    assert [p.name for p in Pipeline(names, opt_level=2, required=["TestLogPass"],
                                     disabled="FoldConstant").selected()] == ["TestLogPass"]


def test_a_failing_builtin_pass_is_an_internal_error_naming_it(monkeypatch):
    from relay_ref.passes.fold_constant import FoldConstant

    def broken(self, mod):
        raise KeyError("boom")

    monkeypatch.setattr(FoldConstant, "__call__", broken)
    with pytest.raises(PassError) as info:
        rr.optimize(FOLDABLE, ["DeadCodeElimination", "FoldConstant"])
    assert info.value.pass_label == "FoldConstant" and isinstance(info.value.cause, KeyError)
    assert "internal error: pass FoldConstant failed (KeyError" in info.value.render()
    monkeypatch.setattr(FoldConstant, "__call__", lambda self, mod: _Bad("ill")(mod))
    with pytest.raises(PassError) as info:
        rr.compile(FOLDABLE, passes=["FoldConstant"])
    assert not isinstance(info.value, rr.RelayTypeError)  # not the user's program
    assert "internal error: the output of pass FoldConstant does not type-check" in \
        info.value.render()


def test_what_a_users_pass_raises_propagates(logging_passes):
    def broken(mod):
        raise ZeroDivisionError("mine")

    with pytest.raises(ZeroDivisionError, match="mine"):
        rr.optimize(FOLDABLE, [broken])
    with pytest.raises(KeyError, match="boom"):  # registered, but the user's
        rr.optimize(FOLDABLE, ["TestBadPass"])
    with pytest.raises(rr.RelayTypeError) as info:
        rr.optimize(FOLDABLE, ["TestBadPass(mode='ill-typed')"])
    assert "the output of pass TestBadPass(mode='ill-typed') does not type-check" in \
        info.value.render()


# ---- pass specs and options --------------------------------------------------------------

def test_specs_split_at_top_level_commas_only():
    text = "FuseOps(max_depth=8), FoldConstant,X(a=[1, 2], b='c,d)'),,Y"
    assert [piece for piece, _ in split_specs(text)] == [
        "FuseOps(max_depth=8)", "FoldConstant", "X(a=[1, 2], b='c,d)')", "Y"]
    assert [at for _, at in split_specs(text)] == [0, 22, 35, 58]
    for bad, where in (("FuseOps(max_depth=8", 7), ("A,B)", 3), ("A(x='y)", 4)):
        with pytest.raises(PassSpecError) as info:
            split_specs(bad)
        assert info.value.start == where, (bad, info.value)


def test_options_are_read_as_literals():
    p = make_pass("FuseOps(max_depth=8)")
    assert isinstance(p, FuseOps) and p.max_depth == 8 and p.fuse_opt_level == 2
    q = make_pass("FuseOps(1, 3, link_params=True)")
    assert (q.fuse_opt_level, q.max_depth, q.link_params) == (1, 3, True)
    assert make_pass(q.spec()).spec() == q.spec() == \
        "FuseOps(fuse_opt_level=1, max_depth=3, link_params=True)"
    assert make_pass("FoldConstant()").spec() == "FoldConstant"


@pytest.mark.parametrize(("spec", "words"), [
    ("FuseOps(depth=8)", ["FuseOps has no option 'depth'", "did you mean 'max_depth'",
                          "fuse_opt_level, max_depth, link_params"]),
    ("FuseOps(max_depth='8')", ["max_depth='8'", "expected an int"]),
    ("FuseOps(max_depth=True)", ["expected an int"]),
    ("FoldConstant(3)", ["FoldConstant takes no options"]),
    ("FoldConstant(x=1)", ["FoldConstant has no option 'x'", "takes no options"]),
    ("FuseOps(max_depth=8, max_depth=9)", ["option 'max_depth' given twice"]),
    ("FuseOps(**{'max_depth': 8})", ["'**' is not allowed"]),
    ("FuseOps(max_depth=8)x", ["must end with ')'"]),
    ("FuseOps(max_depth=8)(1)", ["cannot read the options"]),
    ("Fuse Ops", ["is not a pass name"]),
    ("FuseOpz(max_depth=8)", ["names no pass: 'FuseOpz'", "did you mean 'FuseOps'"]),
])
def test_bad_options_are_value_errors_naming_the_pass(spec, words):
    with pytest.raises(ValueError) as info:
        make_pass(spec)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_option_values_are_never_evaluated(tmp_path):
    target = tmp_path / "pwned"
    spec = f"FuseOps(max_depth=open({str(target)!r}, 'w').write('x'))"
    with pytest.raises(PassSpecError, match="must be Python literals") as info:
        rr.optimize(CHAIN, [spec])
    assert not target.exists()
    assert spec[info.value.start:info.value.end].startswith("open(")


@pytest.mark.parametrize("spec", [
    "FuseOps(max_depth=" + "-" * 5000 + "1)",     # Python's parser: RecursionError
    "FuseOps(max_depth=" + "-" * 20000 + "1)",    # MemoryError (and too long)
    "FuseOps(max_depth=" + "[" * 300 + "]" * 300 + ")",
    "FuseOps(max_depth=" + "(" * 40 + "1" + ")" * 40 + ")",
    "FuseOps(max_depth=\x001)",
    "FuseOps(max_depth=" + "9" * 5000 + ")",
    "FoldConstant," * 2000,
])
def test_every_malformed_spec_is_a_located_spec_error(spec):
    from relay_ref.passes.spec import MAX_TEXT

    with pytest.raises(PassSpecError) as info:
        rr.optimize(CHAIN, spec)
    err = info.value
    assert err.text == spec and 0 <= err.start < err.end <= len(spec)
    assert len(err.message) < 300  # the message quotes the text cut short
    if len(spec) > MAX_TEXT:
        assert "too long" in err.message and err.start == MAX_TEXT
    with pytest.raises(PassSpecError):
        make_pass(spec.rstrip(","))


def test_fuse_ops_depth_through_spec_object_and_compile():
    small = rr.optimize(CHAIN, ["FuseOps(max_depth=2)"])
    assert len(primitive_functions(small)) == 3  # five exps in groups of at most two
    assert len(primitive_functions(rr.optimize(CHAIN, ["FuseOps"]))) == 1
    assert rr.alpha_equal(small, rr.optimize(CHAIN, [FuseOps(max_depth=2)]))
    exe = rr.compile(CHAIN, passes="FuseOps(max_depth=2)")
    assert exe.plan.passes == ("FuseOps(max_depth=2)",)
    assert rr.alpha_equal(exe.module, small)
    x = np.linspace(-1, 0, 4).astype("float32")
    np.testing.assert_allclose(exe(x), rr.evaluate(CHAIN, x), rtol=1e-6)


# ---- BindParams ------------------------------------------------------------------------

def test_bind_params_pass_compiled_equals_evaluated_and_numpy():
    mod, params = rr.parse(MODEL), _weights()
    x = np.random.default_rng(1).normal(size=(2, 4)).astype("float32")
    exe = rr.compile(mod, params)
    want = _numpy_model(x, params)
    np.testing.assert_allclose(exe(x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rr.evaluate(mod, x, *params.values()), want, rtol=1e-5,
                               atol=1e-6)
    bound = rr.optimize(mod, [BindParams(params)])
    assert [p.name_hint for p in bound["main"].params] == ["x"]
    assert "main_unbound" in bound.functions  # @again still calls the full signature
    np.testing.assert_allclose(rr.evaluate(bound, x), want, rtol=1e-5, atol=1e-6)
    args = [x, *params.values()]
    np.testing.assert_allclose(rr.evaluate(bound, *args, entry="again"), want, rtol=1e-5,
                               atol=1e-6)
    # the REPL's helper (relay run --params, relay import --embed) is this pass
    assert rr.alpha_equal(repl.bind_params(mod, "main", params), bound)


def test_bind_params_options_and_errors():
    mod = rr.parse("def @main(%x: Tensor[(2), float32], %w: Tensor[(2), float32]) "
                   "{ add(%x, %w) }")
    out = rr.optimize(mod, ["BindParams(params={'w': [1.0, 2.0]})", "FoldConstant"])
    np.testing.assert_array_equal(rr.evaluate(out, np.zeros(2, "float32")), [1, 2])
    assert make_pass("BindParams") is not None and \
        rr.optimize(mod, ["BindParams"]).functions.keys() == {"main"}
    with pytest.raises(rr.RelayError, match=r"params names no parameter of @main: 'v'"):
        rr.optimize(mod, [BindParams({"v": np.zeros(2, "float32")})])
    with pytest.raises(rr.RelayError, match=r"params\['w'\] does not fit %w"):
        rr.optimize(mod, [BindParams({"w": np.zeros(3, "float32")})])
    with pytest.raises(TypeError, match="params must be a dict"):
        BindParams([1, 2])  # type: ignore[arg-type]


def test_one_bind_params_helper_accepting_entry_with_or_without_its_sigil():
    """``relay_ref.repl.bind_params`` (relay run --params, relay import --embed) is the
    pass module's helper, whose one check names a missing entry however it is written."""
    from relay_ref.passes import bind_params as module

    mod = rr.parse("def @main(%x: Tensor[(2), float32], %w: Tensor[(2), float32]) "
                   "{ add(%x, %w) }")
    w = {"w": np.ones(2, "float32")}
    assert repl.bind_params is module.bind_params
    plain = repl.bind_params(mod, "main", w)
    assert rr.alpha_equal(repl.bind_params(mod, "@main", w), plain)
    assert rr.alpha_equal(rr.optimize(mod, [BindParams(w, entry="@main")]), plain)
    assert [p.name_hint for p in plain["main"].params] == ["x"] and plain.checked_types
    assert repl.bind_params(mod, "@main", {}).checked_types  # nothing bound: typed
    for entry in ("mian", "@mian"):
        for params in (w, {}):
            with pytest.raises(rr.RelayError, match=r"run: the module has no function "
                               r"@mian; did you mean @main\?"):
                repl.bind_params(mod, entry, params, label="run")
        with pytest.raises(rr.RelayError, match="no function @mian"):
            rr.optimize(mod, [BindParams(w, entry=entry)])


# ---- layering ----------------------------------------------------------------------------

PASSES_DIR = Path(rr.__file__).parent / "passes"
INFRA = {"relay_ref.passes", "relay_ref.passes.registry", "relay_ref.passes.manager"}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every import in ``path`` (function-level ones included)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, [a.name for a in node.names]))
    return out


def test_pass_modules_import_no_pass_infrastructure_above_base():
    """The registry imports every pass module, so no pass module may import the registry,
    the manager or the package (a cycle); nor another module's private names."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PASSES_DIR.glob("*.py")):
        me = "relay_ref.passes" + ("" if path.stem == "__init__" else f".{path.stem}")
        graph[me] = set()
        for module, names in _imports(path):
            targets = [f"{module}.{n}" for n in names] + [module]
            graph[me].update(t for t in targets if t.startswith("relay_ref.passes"))
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            assert not (module.startswith("relay_ref.") and private), (me, module, private)
        if me not in INFRA:
            assert not graph[me] & INFRA, (me, graph[me] & INFRA)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:  # the graph is small: recursion is fine
        state[node] = 1
        for nxt in graph.get(node, ()):
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join([*path, node, nxt])}"
            if nxt in graph and not state.get(nxt):
                visit(nxt, [*path, node])
        state[node] = 2

    for node in graph:
        if not state.get(node):
            visit(node, [])
