"""Bad input to the BYOC flow through the public API (``rr.partition``,
``rr.compile(targets=...)``, ``relay partition``), spec/byoc.md BYOC-Support and
BYOC-Fallback: what is refused is a located ``RelayError`` (or a ``TypeError`` at
registration), what a backend fails on falls back to the host with a note in ``exe.plan``
and the right value. Complements tests/byoc/test_backend.py, test_compile_regions.py and
test_partition_api.py (the same failures on hand-written partitioned programs, and the
registration checks), which are not repeated here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.byoc import UnknownCompiler, register_backend, unregister_backend
from relay_ref.byoc.ort import ort_codegen
from relay_ref.byoc.reference import ReferenceCodegen
from relay_ref.ir.expr import Call, Function
from relay_ref.ir.types import TensorType
from relay_ref.ir.visitor import post_order
from relay_ref.passes.pattern import is_op, wildcard

NAME = "tbad_in"
SRC = """def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = add(%x, %y);
  %1 = nn.relu(%0);
  multiply(%1, %y)
}"""
OPS = ["add", "nn.relu", "multiply"]


def arrays() -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(6, dtype="float32").reshape(2, 3) - 2.5
    return x, np.full((2, 3), 1.5, "float32")


def want() -> np.ndarray:
    x, y = arrays()
    return np.maximum(x + y, 0) * y


@pytest.fixture
def backend() -> Iterator[Callable[..., Any]]:
    def make(**kwargs: Any) -> Any:
        kwargs.setdefault("supported_ops", OPS)
        return register_backend(NAME, replace=True, **kwargs)

    yield make
    unregister_backend(NAME)


def compiled(**kwargs: Any) -> Any:
    return rr.compile(rr.parse(SRC), targets=[NAME], **kwargs)


def region_calls(mod: rr.IRModule) -> list[str]:
    return [n for n, f in mod.functions.items() if f.attr("Compiler") == NAME]


# -- unknown backends ---------------------------------------------------------------------

def test_unknown_backend_names_the_registered_ones(backend: Any) -> None:
    backend()
    mod = rr.parse(SRC)
    for run in (lambda: rr.partition(mod, ["tbad_inn"]),
                lambda: rr.compile(mod, targets=["tbad_inn"])):
        with pytest.raises(UnknownCompiler) as info:
            run()
        text = info.value.message
        assert "unknown backend 'tbad_inn'" in text and f"did you mean '{NAME}'" in text
        assert "ort" in text and "xla" in text  # the built-in ones are listed too
    # nothing ran: the module is unchanged, and a known target in the list does not help
    with pytest.raises(UnknownCompiler):
        rr.partition(mod, [NAME, "nosuch"])
    assert rr.alpha_equal(mod, rr.parse(SRC))


def test_cli_partition_with_one_unknown_target_among_known_ones(relay: Any,
                                                               tmp_path: Path) -> None:
    path = tmp_path / "p.relay"
    path.write_text(SRC)
    result = relay("partition", "--target", "ort", "--target", "xlaa", path)
    assert result.returncode == 2 and result.stdout == ""  # a usage error
    assert result.stderr.startswith("relay: error: --target: unknown backend 'xlaa'")
    assert "did you mean 'xla'" in result.stderr


# -- patterns ---------------------------------------------------------------------------------

def add_relu() -> Any:
    return is_op("nn.relu")(is_op("add")(wildcard(), wildcard()))


def composites(mod: rr.IRModule) -> list[str]:
    return [str(n.op.attr("Composite")) for f in mod.functions.values()
            for n in post_order(f.body) if type(n) is Call and type(n.op) is Function]


@pytest.mark.parametrize("shape, dtype, matches", [
    ((2, 3), "float32", True),   # the control: the right type matches
    ((9, 9), "float32", False),  # another shape
    ((2, 3), "int32", False),    # another dtype
])
def test_pattern_of_a_type_the_program_does_not_have(backend: Any, shape: tuple, dtype: str,
                                                     matches: bool) -> None:
    """A composite whose pattern asks for a type the matched call does not have: no
    match, no error; the operators the backend supports are still partitioned."""
    pattern = add_relu().has_type(TensorType(shape, dtype))
    backend(supported_ops=["multiply"], patterns=[(f"{NAME}.add_relu", pattern)],
            codegen=ReferenceCodegen())
    part = rr.partition(rr.parse(SRC), [NAME])
    assert composites(part) == ([f"{NAME}.add_relu"] if matches else [])
    assert len(region_calls(part)) == 1
    x, y = arrays()
    np.testing.assert_allclose(rr.compile(part)(x, y), want(), rtol=1e-6)


@pytest.mark.parametrize("not_a_pattern", [
    rr.parse("def @main(%x: float32) { %x }")["main"],  # a Relay function
    lambda expr: True,                                  # a predicate
    None,
])
def test_pattern_that_is_not_a_pattern_is_a_type_error(backend: Any,
                                                       not_a_pattern: Any) -> None:
    with pytest.raises(TypeError, match="must be a DFPattern"):
        backend(patterns=[(f"{NAME}.p", not_a_pattern)])
    from relay_ref.byoc import backend_names

    assert NAME not in backend_names()


# -- support predicates and codegens ------------------------------------------------------------

def test_support_predicate_that_raises_is_located(backend: Any) -> None:
    def boom(info: Any) -> bool:
        raise KeyError("no layout")

    backend(supported_ops={"add": boom, "nn.relu": None})
    for run in (lambda: rr.partition(rr.parse(SRC), [NAME]), lambda: compiled()):
        with pytest.raises(rr.RelayError) as info:
            run()
        err = info.value
        assert f"backend '{NAME}'" in err.message and "'add'" in err.message
        assert "no layout" in err.message
        assert err.span is not None and (err.span.line, err.span.column) == (2, 8)


@pytest.mark.parametrize("codegen, says", [
    (lambda func, types: 42, "returned int, not a callable"),
    (lambda func, types: 1 / 0, "ZeroDivisionError"),
])
def test_codegen_failure_falls_back_with_a_note(backend: Any, codegen: Any, says: str) -> None:
    """Through rr.compile(targets=...): a codegen that raises or returns no callable leaves
    the region to the host, noted in the plan; the value is right."""
    backend(codegen=codegen)
    exe = compiled()
    (region,) = exe.plan.regions
    assert region.backend == "host" and NAME in region.note and says in region.note
    assert "falls back to the host" in str(exe.plan)
    np.testing.assert_allclose(exe(*arrays()), want(), rtol=1e-6)


def test_region_the_ort_exporter_cannot_express_falls_back(backend: Any) -> None:
    """A backend using the ort codegen that claims an operator the ONNX exporter lacks
    (argsort): CodegenUnsupported, the region runs on the host, the note says why."""
    backend(supported_ops=["argsort", "add"], codegen=ort_codegen)
    mod = rr.parse("def @main(%x: Tensor[(2, 3), float32]) { argsort(add(%x, %x)) }")
    part = rr.partition(mod, [NAME])
    assert len(region_calls(part)) == 1
    exe = rr.compile(part)
    (region,) = exe.plan.regions
    assert region.backend == "host" and "ort:" in region.note and "argsort" in region.note
    x = np.array([[3, 1, 2], [0, -1, 5]], "float32")
    np.testing.assert_array_equal(exe(x), np.argsort(x + x, axis=-1).astype("int32"))
    np.testing.assert_array_equal(exe(x), rr.evaluate(mod, x))


@pytest.mark.parametrize("result, says", [
    (np.zeros((3, 2), "float32"), "((3, 2), 'float32')"),              # shape
    (np.zeros((2, 3), "float64"), "((2, 3), 'float64')"),              # dtype
    ((np.zeros((2, 3), "float32"),), "(((2, 3), 'float32'),)"),        # a tuple
])
def test_region_returning_the_wrong_value_is_a_located_runtime_error(
        backend: Any, result: Any, says: str) -> None:
    backend(codegen=lambda func, types: lambda *args: result)
    exe = compiled()
    with pytest.raises(rr.RelayRuntimeError) as info:
        exe(*arrays())
    err = info.value
    assert f"backend '{NAME}' returned {says}" in err.message
    assert "((2, 3), 'float32')" in err.message and err.span is not None


def test_region_callable_raising_is_a_located_runtime_error(backend: Any) -> None:
    def codegen(func: Any, types: Any) -> Any:
        def run(*args: Any) -> Any:
            raise MemoryError("device out of memory")
        return run

    backend(codegen=codegen)
    with pytest.raises(rr.RelayRuntimeError, match="device out of memory") as info:
        compiled()(*arrays())
    assert NAME in info.value.message and info.value.span is not None
