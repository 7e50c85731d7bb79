"""apache-tvm's Relax as the live oracle for symbolic shapes (issue 29, item 9).

Every program of ``relax_programs.PROGRAMS`` is written in this project's text and in
TVMScript; for each:

1. **Shapes** (spec/typing.md T-ShapeScope, T-ShapeCall, T-MatchCast, Shape-Broadcast,
   Shape-Rel): in every function defined in both versions, the result's type and the type
   of every variable bound in both have TVM's dtype and rank, and each dimension TVM knows
   is provably equal (TVM's analyzer, variables matched by name) to ours; and whenever TVM
   proves two of the dimensions there (parameters included) equal, this project's own
   prover (``symdim.prove_equal``) proves ours equal too.
2. **Values** (spec/semantics.md Shape-Bind, Shape-MatchCast, Shape-DPS): ``rr.evaluate``
   and the Relax VM (compiled once per program for ``llvm``) agree on random inputs at two
   sizes of the shape variables.
3. **Refusals** (``REFUSALS``): what TVM refuses when parsing/checking, this project refuses
   with a ``ParseError`` or ``RelayTypeError``; what TVM refuses at run time, this project
   refuses with a ``RelayRuntimeError`` (or statically, where a refusal allows it); the
   first diagnostic is located, at the line the refusal names. (The converse is not
   required: Relay's ``split`` refuses an index beyond the dimension, TVM clamps it.)

The programs of the symbolic generator (``relay_ref.testing.symbolic_programs``), translated
to TVMScript by ``relax_oracle.to_tvmscript``, get the shape and value comparisons too (20
examples).

Skipped only when apache-tvm is not installed (the ``dev`` extra installs it). TVM parses
and compiles each program once (``_tvm_side``, cached for the module): the whole module
takes about 10 s of CPU.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

# Skipped only where apache-tvm is absent; an installed TVM that fails to import is an error
# (pytest.importorskip would skip that too).
if importlib.util.find_spec("tvm") is None:
    pytest.skip("apache-tvm (the Relax oracle) is not installed: pip install -e '.[tvm]'",
                allow_module_level=True)
import tvm  # noqa: E402 - fails loudly when installed but broken
from relax_programs import PACKED, PROGRAMS, REFUSALS, SIZES, Program  # noqa: E402

import relay_ref as rr  # noqa: E402
from relay_ref.testing import relax_oracle as ro  # noqa: E402
from relay_ref.testing.symbolic_programs import PACKED as GENERATED_PACKED  # noqa: E402
from relay_ref.testing.symbolic_programs import symbolic_cases  # noqa: E402

_BY_NAME = {p.name: p for p in PROGRAMS}


@pytest.fixture(scope="module", autouse=True)
def _packed_functions() -> None:
    """The corpus's packed functions, registered with both systems (same NumPy code)."""
    for name, fn in PACKED.items():
        rr.register_packed(name, fn, replace=True)
        ro.register_tvm_packed(name, fn)


@functools.cache
def _tvm_side(name: str) -> tuple:
    """TVM's module and its VM for the program ``name``: parsed and compiled once."""
    mod = ro.parse_tvmscript(_BY_NAME[name].tvm)
    return mod, ro.compile_module(mod)


@functools.cache
def _relay_side(name: str) -> object:
    """Our type-checked module for the program ``name`` (``RelayError`` propagates)."""
    return rr.infer_types(rr.parse(_BY_NAME[name].relay, source_name=f"{name}.relay"))


# ---- the corpus itself ----------------------------------------------------------------------

REQUIRED = {"broadcast", "reshape", "transpose", "concatenate", "split", "strided_slice",
            "dense", "matmul", "batch_matmul", "conv2d", "pooling", "reduction", "take",
            "expand_dims", "squeeze", "pad", "call deduction", "match_cast", "dataflow",
            "MLP", "CNN", "call_dps_packed"}


def test_corpus_covers_the_issue() -> None:
    """At least 30 programs, uniquely named, covering every family issue 29 lists."""
    names = [p.name for p in PROGRAMS] + [r.name for r in REFUSALS]
    assert len(PROGRAMS) >= 30
    assert len(names) == len(set(names))
    covered = {part.strip() for p in PROGRAMS for part in p.covers.split(",")}
    assert REQUIRED <= covered, sorted(REQUIRED - covered)


# ---- 1. shapes ------------------------------------------------------------------------------


def _shape_problems(checked, mod, fn: str, assume: dict) -> list[str]:  # noqa: ANN001
    """The disagreements in the function ``fn`` (defined in both): its result, each variable
    bound in both versions, and the equalities TVM proves among all their dimensions and
    the parameters'."""
    out_ours, out_theirs = ro.relay_output_type(checked, fn), ro.output_of(mod, fn)
    problems = ro.compare_types(out_ours, out_theirs, f"@{fn} result", assume)
    pairs = list(ro.dim_pairs(out_ours, out_theirs))
    ours, theirs = ro.relay_bindings(checked, fn), ro.bindings_of(mod, fn)
    for var in sorted(set(ours) & set(theirs)):
        problems += ro.compare_types(ours[var], theirs[var], f"@{fn} %{var}", assume)
        pairs += ro.dim_pairs(ours[var], theirs[var])
    for param, tparam in zip(checked[fn].params, mod[fn].params, strict=True):
        pairs += ro.dim_pairs(checked.type_of(param), ro.struct_info(tparam.ty))
    return problems + ro.unproved_equalities(pairs, assume)


@pytest.mark.parametrize("name", [p.name for p in PROGRAMS])
def test_shapes_agree_with_tvm(name: str) -> None:
    program = _BY_NAME[name]
    mod, _ = _tvm_side(name)
    checked = _relay_side(name)
    theirs = {gv.name_hint for gv in mod.functions}
    functions = [fn for fn in checked.functions if fn in theirs]
    assert "main" in functions
    problems = [p for fn in functions for p in _shape_problems(checked, mod, fn, program.assume)]
    assert not problems, "\n".join([f"{name}: shapes disagree with TVM", *problems])


def test_shape_comparison_can_fail() -> None:
    """The comparison is not vacuous: a wrong dimension, a ``?`` where TVM knows the
    dimension, and an unproved equality are reported."""
    from relay_ref.ir.shape import ANY
    from relay_ref.ir.symdim import sym
    from relay_ref.ir.types import TensorType

    mod, _ = _tvm_side("concat_two_vars")  # TVM: (n + m, 4)
    theirs = ro.output_of(mod)
    n, m = sym("n"), sym("m")
    assert ro.compare_types(TensorType((m + n, 4), "float32"), theirs) == []
    assert ro.compare_types(TensorType((n + m + 1, 4), "float32"), theirs)
    assert ro.compare_types(TensorType((ANY, 4), "float32"), theirs)
    assert ro.compare_types(TensorType((n + m, 4), "float16"), theirs)
    tn = ro.struct_info(mod["main"].params[0].ty).shape[0]  # TVM's n
    assert ro.unproved_equalities([(n, tn), (n * 2 - n, tn)]) == []
    assert ro.unproved_equalities([(n, tn), (m, tn)])


def test_dimensions_convert_to_equal_primexprs() -> None:
    """``to_primexpr`` keeps a dimension's value: at several assignments, TVM's analyzer
    evaluates the converted expression to ``eval_dim``'s value (polynomials, floordiv and
    floormod by constants and by variables, min, max)."""
    from relay_ref.ir.symdim import dim_max, dim_min, eval_dim, floordiv, floormod, sym

    n, m = sym("n"), sym("m")
    dims = [n * n * 3 - n + 2, 2 * (n + 1), floordiv(n * 4 + 3, 4), floordiv(n, m) * m,
            floormod(n * n + 3, m), floordiv(n + 7, 3) - floormod(n, 2), dim_min(n, m) + 1,
            dim_max(n - 2, 0) * m, 5]
    for env in ({"n": 0, "m": 1}, {"n": 5, "m": 3}, {"n": 7, "m": 2}):
        for d in dims:
            variables: dict = {}
            expr = ro.to_primexpr(d, variables)
            analyzer = tvm.sym.Analyzer()
            for name, var in variables.items():
                analyzer.bind(var, tvm.tirx.const(env[name], "int64"))
            assert int(analyzer.simplify(expr)) == eval_dim(d, env), (d, env)


# ---- 2. values ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [p.name for p in PROGRAMS])
def test_values_agree_with_tvm(name: str) -> None:
    program: Program = _BY_NAME[name]
    _, vm = _tvm_side(name)
    relay_mod = rr.parse(program.relay, source_name=f"{name}.relay")
    for k, sizes in enumerate(program.sizes):
        args = ro.random_inputs(program.args, sizes, seed=k)
        theirs = ro.run_vm(vm, args)
        ours = rr.evaluate(relay_mod, *args)
        problems = ro.values_close(ours, theirs)
        assert not problems, "\n".join([f"{name} at {sizes}", *problems])


def test_value_comparison_can_fail() -> None:
    a = np.ones((2, 3), "float32")
    assert ro.values_close(a, a) == []
    assert ro.values_close(a + 1e-3, a)
    assert ro.values_close(a.reshape(3, 2), a)
    assert ro.values_close((a, a), (a,))


# ---- generated programs ---------------------------------------------------------------------


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=symbolic_cases())
def test_generated_programs_agree_with_tvm(case) -> None:  # noqa: ANN001 - a SymbolicCase
    """The symbolic program generator's programs (relay_ref.testing.symbolic_programs),
    translated to TVMScript by ``ro.to_tvmscript``: TVM accepts them, the shapes agree as
    for the corpus, and the values agree at one size of the shape variables."""
    for name, fn in GENERATED_PACKED.items():
        ro.register_tvm_packed(name, fn)
    source = ro.to_tvmscript(case.module)
    mod = ro.parse_tvmscript(source)
    checked = rr.infer_types(case.module)
    problems = _shape_problems(checked, mod, "main", {})
    assert not problems, "\n".join(["shapes disagree with TVM", source, *problems])
    env = {"n": 3, "m": 2, "h": 7}
    args = case.arguments({v: env.get(v, 4) for v in case.param_vars}, seed=1)
    problems = ro.values_close(rr.evaluate(case.module, *args),
                               ro.run_vm(ro.compile_module(mod), args))
    assert not problems, "\n".join(["values disagree with TVM", source, *problems])


def test_translation_says_what_it_cannot_translate() -> None:
    """``to_tvmscript`` refuses an operator or type outside its subset by name, and what it
    translates TVM parses to the same result shape as the hand-written TVMScript."""
    conv = rr.parse(_BY_NAME["conv2d_same"].relay)
    with pytest.raises(ro.Untranslatable, match="nn.conv2d"):
        ro.to_tvmscript(conv)
    coarse = rr.parse("def @main(%x: Tensor[ndim=2, float32]) { nn.relu(%x) }")
    with pytest.raises(ro.Untranslatable, match=r"\?"):
        ro.to_tvmscript(coarse)
    mod = ro.parse_tvmscript(ro.to_tvmscript(rr.parse(_BY_NAME["concat_two_vars"].relay)))
    ours, theirs = ro.output_of(mod), ro.output_of(_tvm_side("concat_two_vars")[0])
    assert (ours.dtype, ours.ndim, str(ours.shape)) == (theirs.dtype, theirs.ndim,
                                                        str(theirs.shape))


# ---- 3. refusals ----------------------------------------------------------------------------


def _tvm_refuses(refusal) -> str:  # noqa: ANN001 - a Refusal
    """The stage at which TVM refuses the program ("static", "runtime" or "accepted")."""
    try:
        mod = ro.parse_tvmscript(refusal.tvm)
    except Exception:  # noqa: BLE001 - TVM's DiagnosticError and friends
        return "static"
    try:
        vm = ro.compile_module(mod)  # the VM looks its packed functions up when created
        ro.run_vm(vm, ro.random_inputs(refusal.args, refusal.sizes or SIZES[0]))
    except Exception:  # noqa: BLE001 - TVM's RuntimeError (a failed check in the VM)
        return "runtime"
    return "accepted"


@pytest.mark.parametrize("refusal", REFUSALS, ids=[r.name for r in REFUSALS])
def test_what_tvm_refuses_we_refuse(refusal) -> None:  # noqa: ANN001 - a Refusal
    assert _tvm_refuses(refusal) == refusal.stage, "the oracle changed its mind"
    allowed = tuple(getattr(rr, cls) for cls in refusal.relay_error)
    with pytest.raises(rr.RelayError) as info:
        mod = rr.parse(refusal.relay, source_name=f"{refusal.name}.relay")
        rr.infer_types(mod)
        assert refusal.stage == "runtime", "accepted statically what TVM refuses statically"
        rr.evaluate(mod, *ro.random_inputs(refusal.args, refusal.sizes or SIZES[0]))
    assert isinstance(info.value, allowed), f"{type(info.value).__name__}: {info.value}"
    span = info.value.diagnostics[0].span if info.value.diagnostics else None
    assert span is not None, f"the refusal has no source location: {info.value}"
    if refusal.line is not None:
        assert span.line == refusal.line, f"refused for another reason?\n{info.value}"
