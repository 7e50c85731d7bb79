"""rr.compile of partitioned programs (spec/byoc.md BYOC-Extern, BYOC-Fallback).

Hand-written partitioned programs in TVM's printed form (``Compiler="..."`` globals with
composites inside) compiled with a reference backend (regions run by the interpreter) and
a NumPy codegen: the values equal ``rr.evaluate`` of the same program; each region's codegen
runs once, at compile time; a codegen that refuses leaves the region to the host with a
note; a failure inside a region's callable is a located ``RelayRuntimeError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.byoc import CodegenUnsupported, register_backend, unregister_backend
from relay_ref.byoc.reference import register_reference_backend
from relay_ref.ir.expr import Call, Constant, Function, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.visitor import post_order

TWO_OUTPUTS = '''
def @tvmgen_default_{b}_main_0(%{b}_0_i0: Tensor[(2, 3), float32],
    %{b}_0_i1: Tensor[(2, 3), float32], Compiler="{b}", Primitive=1, Inline=1,
    global_symbol="tvmgen_default_{b}_main_0")
    -> (Tensor[(2, 3), float32], Tensor[(2, 3), float32]) {{
  %0 = fn (%FunctionVar_0_0: Tensor[(2, 3), float32], %FunctionVar_0_1: Tensor[(2, 3), float32],
    PartitionedFromPattern="add_nn.relu_", Composite="{b}.add_relu") -> Tensor[(2, 3), float32] {{
    %1 = add(%FunctionVar_0_0, %FunctionVar_0_1);
    nn.relu(%1)
  }};
  %2 = %0(%{b}_0_i0, %{b}_0_i1);
  %3 = multiply(%2, %{b}_0_i1);
  (%2, %3)
}}

def @tvmgen_default_{b}_main_1(%{b}_1_i0: Tensor[(2, 3), float32], Compiler="{b}", Primitive=1,
    Inline=1, global_symbol="tvmgen_default_{b}_main_1") -> Tensor[(2, 3), float32] {{
  %0 = multiply(%{b}_1_i0, %{b}_1_i0);
  nn.relu(%0)
}}

def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {{
  %0 = @tvmgen_default_{b}_main_0(%x, %y);
  %1 = %0.0;
  %2 = %0.1;
  %3 = subtract(%1, %2);
  %4 = exp(%3);
  %5 = @tvmgen_default_{b}_main_1(%4);
  add(%5, %1)
}}
'''

REGIONS = ("tvmgen_default_{b}_main_0", "tvmgen_default_{b}_main_1")


def program(backend: str) -> rr.IRModule:
    return rr.parse(TWO_OUTPUTS.format(b=backend))


def inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((2, 3)).astype("float32"),
            rng.standard_normal((2, 3)).astype("float32"))


@pytest.fixture
def backend() -> Iterator[Any]:
    be = register_reference_backend("tref", ["add", "nn.relu", "multiply"])
    yield be
    unregister_backend("tref")


# -- a NumPy codegen: what a vendor writes ------------------------------------------------

NUMPY_OPS = {"add": np.add, "multiply": np.multiply, "subtract": np.subtract,
             "nn.relu": lambda a: np.maximum(a, 0)}


class NumpyCodegen:
    """Compiles a region to a closure over NumPy: the body's nodes in post-order (a
    composite's body evaluated on its arguments); counts its compilations."""

    def __init__(self) -> None:
        self.calls = 0
        self.saw_types = True

    def __call__(self, func: Function, types: Any) -> Any:
        self.calls += 1
        self.saw_types &= all(node in types for node in post_order(func.body)
                              if not isinstance(node, Op | Function))
        for node in post_order(func.body):
            if type(node) is Call and type(node.op) is Op and node.op.name not in NUMPY_OPS:
                raise CodegenUnsupported(f"no NumPy kernel for {node.op.name}")

        def run(*args: Any) -> Any:
            return _eval(func, list(args))

        return run


def _eval(func: Function, args: list[Any]) -> Any:
    env: dict[Any, Any] = dict(zip(func.params, args, strict=True))
    for node in post_order(func.body, enter=lambda n: () if type(n) is Function else
                           _kids(n)):
        if node in env or type(node) in (Op, Function):
            continue
        if type(node) is Constant:
            env[node] = node.data
        elif type(node) is Tuple:
            env[node] = tuple(env[f] for f in node.fields)
        elif type(node) is TupleGetItem:
            env[node] = env[node.tuple_value][node.index]
        elif type(node) is Call and type(node.op) is Function:
            env[node] = _eval(node.op, [env[a] for a in node.args])
        elif type(node) is Call:
            env[node] = NUMPY_OPS[node.op.name](*(env[a] for a in node.args))
        elif type(node) is not Var:
            raise AssertionError(node)
    return env[func.body]


def _kids(node: Any) -> tuple[Any, ...]:
    from relay_ref.ir.expr import children

    return tuple(children(node))


# -- values, and the codegen once per region -------------------------------------------------

def test_values_equal_the_interpreter_and_codegen_runs_once_per_region(backend: Any) -> None:
    mod = program("tref")
    x, y = inputs()
    exe = rr.compile(mod)
    assert backend.codegen.calls == 2  # one per region, at compile time
    for seed in range(3):
        x, y = inputs(seed)
        np.testing.assert_allclose(exe(x, y), rr.evaluate(mod, x, y), rtol=1e-6)
    assert backend.codegen.calls == 2  # not per call
    names = {f.attr("global_symbol") for f in backend.codegen.regions}
    assert names == {r.format(b="tref") for r in REGIONS}


def test_numpy_codegen_multi_output_region() -> None:
    codegen = NumpyCodegen()
    register_backend("tnp", supported_ops=["add", "nn.relu", "multiply"], codegen=codegen,
                     replace=True)
    try:
        mod = program("tnp")
        exe = rr.compile(mod)
        assert codegen.calls == 2 and codegen.saw_types
        for seed in range(3):
            x, y = inputs(seed)
            np.testing.assert_allclose(exe(x, y), rr.evaluate(mod, x, y), rtol=1e-6)
        assert codegen.calls == 2
        assert [r.backend for r in exe.plan.regions] == ["tnp", "tnp"]
    finally:
        unregister_backend("tnp")


def test_plan_and_profile_list_regions(backend: Any) -> None:
    exe = rr.compile(program("tref"), profile=True)
    exe(*inputs())
    text = str(exe.plan)
    first, second = (r.format(b="tref") for r in REGIONS)
    assert f"@{first}: tref, 3 ops" in text and f"@{second}: tref, 2 ops" in text
    assert {r.name: r.ops for r in exe.plan.regions} == {first: 3, second: 2}
    assert all(r.flops >= r.ops for r in exe.plan.regions)
    assert f"tref: {first}" in exe.stats.kernels and f"tref: {second}" in exe.stats.kernels


# -- fallback (BYOC-Fallback) ---------------------------------------------------------------

def test_a_codegen_relay_error_is_raised_not_a_fallback() -> None:
    """A RelayError other than CodegenUnsupported is the backend telling the user something
    to fix (a missing package): rr.compile raises it."""
    def needs(func: Function, types: Any) -> Any:
        raise rr.RelayError("backend 'tneeds' needs the vendor SDK")

    register_backend("tneeds", supported_ops=["add", "nn.relu", "multiply"], codegen=needs,
                     replace=True)
    try:
        with pytest.raises(rr.RelayError, match="vendor SDK") as err:
            rr.compile(program("tneeds"))
        assert not isinstance(err.value, CodegenUnsupported)
    finally:
        unregister_backend("tneeds")


@pytest.mark.parametrize("error", [CodegenUnsupported("no conv here"), ValueError("boom")])
def test_codegen_that_raises_falls_back_to_the_host(error: Exception) -> None:
    calls = []

    def refuse(func: Function, types: Any) -> Any:
        calls.append(func)
        raise error

    register_backend("tbad", supported_ops=["add", "nn.relu", "multiply"], codegen=refuse,
                     replace=True)
    try:
        mod = program("tbad")
        exe = rr.compile(mod)
        x, y = inputs()
        np.testing.assert_allclose(exe(x, y), rr.evaluate(mod, x, y), rtol=1e-6)
        assert len(calls) == 2
        assert [r.backend for r in exe.plan.regions] == ["host", "host"]
        said = getattr(error, "message", str(error))
        assert all(said in r.note and "tbad" in r.note for r in exe.plan.regions)
        assert "falls back to the host" in str(exe.plan)
        # the regions became ordinary host code: fused groups, no extern step
        assert all(s.kind != "extern" for s in exe.generated.sites)
    finally:
        unregister_backend("tbad")


def test_backend_without_codegen_runs_regions_on_the_host() -> None:
    register_backend("thost", supported_ops=["add", "nn.relu", "multiply"], replace=True)
    try:
        mod = program("thost")
        exe = rr.compile(mod)
        x, y = inputs()
        np.testing.assert_allclose(exe(x, y), rr.evaluate(mod, x, y), rtol=1e-6)
        assert all(r.backend == "host" and "no codegen" in r.note for r in exe.plan.regions)
    finally:
        unregister_backend("thost")


def test_host_composites_compile() -> None:
    mod = rr.parse('''
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = fn (%a: Tensor[(4), float32], %b: Tensor[(4), float32],
    PartitionedFromPattern="add_nn.relu_", Composite="none.add_relu") -> Tensor[(4), float32] {
    %1 = add(%a, %b);
    nn.relu(%1)
  };
  %2 = %0(%x, %y);
  multiply(%2, %x)
}
''')
    x = np.array([-1, 2, -3, 4], "float32")
    y = np.array([3, -1, 1, 1], "float32")
    np.testing.assert_allclose(rr.compile(mod)(x, y), rr.evaluate(mod, x, y))


# -- run-time failures, unknown backends -------------------------------------------------

def test_callable_raising_at_run_time_is_a_located_error() -> None:
    def codegen(func: Function, types: Any) -> Any:
        def run(*args: Any) -> Any:
            raise RuntimeError("device lost")
        return run

    register_backend("tfail", supported_ops=["add", "nn.relu", "multiply"], codegen=codegen,
                     replace=True)
    try:
        mod = program("tfail")
        exe = rr.compile(mod)
        with pytest.raises(rr.RelayRuntimeError) as info:
            exe(*inputs())
        err = info.value
        assert "tfail" in err.message and "tvmgen_default_tfail_main_0" in err.message
        assert "device lost" in err.message
        call = next(n for n in post_order(mod.functions["main"].body)
                    if type(n) is Call and getattr(n.op, "name", "") ==
                    "tvmgen_default_tfail_main_0")
        assert err.span is not None and err.span == call.span
    finally:
        unregister_backend("tfail")


def test_unknown_backend_in_compiler_attr_runs_on_the_host() -> None:
    """TVM's printed programs name backends nothing registers here (``dnnl``): their
    regions run on the host, with a note."""
    mod = rr.parse(TWO_OUTPUTS.format(b="nosuchbackend"))
    exe = rr.compile(mod)
    x, y = inputs()
    np.testing.assert_allclose(exe(x, y), rr.evaluate(mod, x, y), rtol=1e-6)
    assert all(r.backend == "host" and "'nosuchbackend' is not registered" in r.note
               for r in exe.plan.regions)
    assert len(exe.plan.regions) == 2


def test_memory_budget_with_regions_is_refused(backend: Any) -> None:
    with pytest.raises(rr.RelayError, match="DTR"):
        rr.compile(program("tref"), memory_budget=10**9)


# -- constants bound into a region called once ---------------------------------------------

def test_constant_arguments_are_bound_into_the_region() -> None:
    seen: list[Function] = []
    numpy = NumpyCodegen()

    def codegen(func: Function, types: Any) -> Any:
        seen.append(func)
        return numpy(func, types)

    register_backend("tconst", supported_ops=["add", "multiply"], codegen=codegen,
                     replace=True)
    try:
        mod = rr.parse('''
def @tvmgen_default_tconst_main_0(%i0: Tensor[(3), float32], %i1: float32, Compiler="tconst",
    Primitive=1, Inline=1, global_symbol="tvmgen_default_tconst_main_0") -> Tensor[(3), float32] {
  %0 = multiply(%i0, %i1);
  add(%0, %i0)
}
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  @tvmgen_default_tconst_main_0(%x, 2.5f)
}
''')
        x = np.array([1, -2, 3], "float32")
        exe = rr.compile(mod)
        np.testing.assert_allclose(exe(x), rr.evaluate(mod, x))
        (func,) = seen
        assert len(func.params) == 1
        assert any(type(n) is Constant for n in post_order(func.body))
    finally:
        unregister_backend("tconst")


def test_region_used_as_a_value(backend: Any) -> None:
    mod = rr.parse('''
def @tvmgen_default_tref_main_0(%i0: Tensor[(3), float32], Compiler="tref", Primitive=1,
    Inline=1, global_symbol="tvmgen_default_tref_main_0") -> Tensor[(3), float32] {
  %0 = multiply(%i0, %i0);
  nn.relu(%0)
}
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  let %f = @tvmgen_default_tref_main_0;
  %f(%x)
}
''')
    x = np.array([1, -2, 3], "float32")
    exe = rr.compile(mod)
    np.testing.assert_allclose(exe(x), rr.evaluate(mod, x))
    assert backend.codegen.calls == 1
    assert [s.kind for s in exe.generated.sites].count("extern") == 1


def test_result_of_the_wrong_shape_is_a_located_error() -> None:
    def codegen(func: Function, types: Any) -> Any:
        return lambda *args: np.zeros((3, 2), "float32")

    register_backend("tshape", supported_ops=["add", "nn.relu", "multiply"], codegen=codegen,
                     replace=True)
    try:
        mod = program("tshape")
        with pytest.raises(rr.RelayRuntimeError, match="tshape.*returned") as info:
            rr.compile(mod)(*inputs())
        assert info.value.span is not None
    finally:
        unregister_backend("tshape")


def test_region_called_twice_is_not_specialised() -> None:
    seen: list[Function] = []
    numpy = NumpyCodegen()

    def codegen(func: Function, types: Any) -> Any:
        seen.append(func)
        return numpy(func, types)

    register_backend("ttwice", supported_ops=["add", "multiply"], codegen=codegen,
                     replace=True)
    try:
        mod = rr.parse('''
def @tvmgen_default_ttwice_main_0(%i0: Tensor[(3), float32], %i1: float32,
    Compiler="ttwice", Primitive=1, Inline=1, global_symbol="tvmgen_default_ttwice_main_0")
    -> Tensor[(3), float32] {
  %0 = multiply(%i0, %i1);
  add(%0, %i0)
}
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  %0 = @tvmgen_default_ttwice_main_0(%x, 2.5f);
  @tvmgen_default_ttwice_main_0(%0, -1.5f)
}
''')
        x = np.array([1, -2, 3], "float32")
        np.testing.assert_allclose(rr.compile(mod)(x), rr.evaluate(mod, x))
        (func,) = seen
        assert len(func.params) == 2
    finally:
        unregister_backend("ttwice")


@pytest.mark.parametrize("refuse", [False, True])
def test_a_2000_op_region(refuse: bool) -> None:
    """Long regions: no Python recursion over their depth (built, or inlined on the
    host after a fallback)."""
    numpy = NumpyCodegen()

    def codegen(func: Function, types: Any) -> Any:
        if refuse:
            raise CodegenUnsupported("too long")
        return numpy(func, types)

    register_backend("tlong", supported_ops=["add", "nn.relu"], codegen=codegen, replace=True)
    try:
        body = ["  %0 = add(%i0, %i0);"]
        body += [f"  %{k} = nn.relu(%{k - 1});" for k in range(1, 2000)]
        mod = rr.parse(
            "def @r(%i0: Tensor[(3), float32], Compiler=\"tlong\", Primitive=1, Inline=1, "
            "global_symbol=\"r\") -> Tensor[(3), float32] {\n" + "\n".join(body)
            + "\n  add(%1999, %i0)\n}\n"
            "def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {\n  @r(%x)\n}\n")
        x = np.array([1, -2, 3], "float32")
        exe = rr.compile(mod)
        np.testing.assert_allclose(exe(x), rr.evaluate(mod, x))
        (region,) = exe.plan.regions
        assert region.ops == 2001 and region.backend == ("host" if refuse else "tlong")
    finally:
        unregister_backend("tlong")


# -- a codegen's callable: read-only inputs, results described briefly, located ----------

RELU_OF_SHARED = '''def @main(%x: Tensor[(4), float32]) {
  %0 = tanh(%x);
  add(nn.relu(%0), %0)
}'''
RELU_OF_INPUT = '''def @main(%x: Tensor[(4), float32]) {
  add(nn.relu(%x), %x)
}'''


def _relu_call(mod: rr.IRModule) -> Call:
    return next(n for n in post_order(mod.functions["main"].body)
                if type(n) is Call and getattr(n.op, "name", "") == "nn.relu")


@pytest.mark.parametrize("text", [RELU_OF_SHARED, RELU_OF_INPUT], ids=["shared", "input"])
def test_a_codegen_writing_into_its_inputs_is_a_located_error(text: str) -> None:
    """Regions get read-only views: a callable writing into an input fails, located at the
    region's source line, and neither host values nor the caller's array change."""
    register_backend("tinpl", supported_ops=["nn.relu"], replace=True,
                     codegen=lambda f, t: (lambda a: np.maximum(a, 0, out=a)))
    try:
        mod = rr.parse(text)
        x = np.array([-1, 2, -3, 4], "float32")
        before = x.copy()
        with pytest.raises(rr.RelayRuntimeError) as info:
            rr.compile(mod, targets=["tinpl"])(x)
        err = info.value
        assert "must not write into its inputs" in err.message
        assert "'tinpl'" in err.message and "@tvmgen_default_tinpl_main_0" in err.message
        assert err.span == _relu_call(mod).span
        np.testing.assert_array_equal(x, before)
    finally:
        unregister_backend("tinpl")


def test_reading_codegens_see_read_only_inputs_and_run() -> None:
    seen: list[bool] = []

    def codegen(func: Function, types: Any) -> Any:
        def run(a: np.ndarray) -> np.ndarray:
            seen.append(a.flags.writeable)
            return np.maximum(a, 0)
        return run

    register_backend("tread", supported_ops=["nn.relu"], codegen=codegen, replace=True)
    try:
        mod = rr.parse(RELU_OF_INPUT)
        x = np.array([-1, 2, -3, 4], "float32")
        np.testing.assert_allclose(rr.compile(mod, targets=["tread"])(x),
                                   rr.evaluate(mod, x))
        assert seen == [False]
        assert x.flags.writeable
    finally:
        unregister_backend("tread")


def test_partitioned_region_errors_point_at_the_source_line() -> None:
    """The region call PartitionGraph makes carries the span of the region's original
    node: a wrong result is reported there, not at ``def @main``."""
    register_backend("tshape2", supported_ops=["nn.relu"], replace=True,
                     codegen=lambda f, t: (lambda a: np.zeros(3, "float32")))
    try:
        mod = rr.parse(RELU_OF_SHARED)
        with pytest.raises(rr.RelayRuntimeError) as info:
            rr.compile(mod, targets=["tshape2"])(np.ones(4, "float32"))
        err = info.value
        assert err.span == _relu_call(mod).span
        assert err.span != mod.functions["main"].span
        assert "returned ((3,), 'float32')" in err.message and "((4,), 'float32')" in err.message
    finally:
        unregister_backend("tshape2")


def test_a_nested_list_result_is_described_briefly() -> None:
    register_backend("tlist", supported_ops=["nn.relu"], replace=True,
                     codegen=lambda f, t: (lambda a: [[0.0] * 16] * 2))
    try:
        mod = rr.parse(RELU_OF_SHARED)
        with pytest.raises(rr.RelayRuntimeError) as info:
            rr.compile(mod, targets=["tlist"])(np.ones(4, "float32"))
        message = info.value.message
        assert "a list of length 2" in message
        assert "float64" not in message and len(message) < 200
    finally:
        unregister_backend("tlist")
