"""relay_ref.byoc.register_backend (spec/byoc.md BYOC-Support, BYOC-Composite): what it
normalises, registers and refuses."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.byoc import (
    Backend,
    CodegenUnsupported,
    Composite,
    UnknownCompiler,
    backend_names,
    ensure_backends,
    get_backend,
    register_backend,
    unregister_backend,
)
from relay_ref.byoc.reference import register_reference_backend
from relay_ref.ir.types import TensorType
from relay_ref.passes.compiler_support import (
    RegionCost,
    Support,
    composite_owner,
    get_support,
    register_support,
    support_names,
)
from relay_ref.passes.pattern import is_op, wildcard


@pytest.fixture
def clean() -> Iterator[None]:
    yield
    for name in ("tb1", "tb2"):
        unregister_backend(name)


def add_relu() -> object:
    return is_op("nn.relu")(is_op("add")(wildcard(), wildcard()))


def test_collection_of_names_registers_a_support_table(clean: None) -> None:
    be = register_backend("tb1", supported_ops=["add", "nn.relu"])
    assert isinstance(be, Backend) and be.codegen is None
    support = get_support("tb1")
    assert dict(support.ops) == {"add": None, "nn.relu": None}
    assert get_backend("tb1") is be
    assert "tb1" in backend_names() and "tb1" in support_names()


def test_mapping_predicates_and_pattern_tuples(clean: None) -> None:
    def only_float(info: object) -> bool:
        return True

    def check(info: object) -> bool:
        return True

    pat = add_relu()
    be = register_backend("tb1", supported_ops={"add": only_float, "nn.relu": None},
                          patterns=[("tb1.add_relu", pat), ("tb1.add_relu2", pat, check)],
                          min_region_size=2)
    assert be.support.ops["add"] is only_float and be.support.ops["nn.relu"] is None
    assert be.support.patterns == (Composite("tb1.add_relu", pat),
                                   Composite("tb1.add_relu2", pat, check))
    assert be.support.min_region_size == 2
    assert composite_owner("tb1.add_relu2") == "tb1"


def test_unknown_operator_is_a_value_error_with_a_hint(clean: None) -> None:
    with pytest.raises(ValueError, match="did you mean 'nn.relu'"):
        register_backend("tb1", supported_ops=["add", "nn.rleu"])
    assert "tb1" not in backend_names() and "tb1" not in support_names()


@pytest.mark.parametrize("patterns", [[("tb1.bad", "add")], [("tb1.bad",)], ["add"]])
def test_bad_pattern_is_a_type_error(clean: None, patterns: list) -> None:
    with pytest.raises(TypeError):
        register_backend("tb1", supported_ops=["add"], patterns=patterns)
    assert "tb1" not in backend_names()


def test_duplicate_name_refused_unless_replace(clean: None) -> None:
    register_backend("tb1", supported_ops=["add"])
    with pytest.raises(ValueError, match="already registered"):
        register_backend("tb1", supported_ops=["nn.relu"])
    assert dict(get_support("tb1").ops) == {"add": None}
    register_backend("tb1", supported_ops=["nn.relu"], replace=True)
    assert dict(get_support("tb1").ops) == {"nn.relu": None}


@pytest.mark.parametrize("kwargs, error", [
    ({"supported_ops": "add"}, TypeError),
    ({"supported_ops": ["add"], "codegen": 3}, TypeError),
    ({"supported_ops": {"add": 3}}, TypeError),
    ({"supported_ops": ["add"], "min_region_size": -1}, TypeError),
])
def test_bad_arguments(clean: None, kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        register_backend("tb1", **kwargs)


OPS_ARE = ("supported_ops must be a collection of operator names or a mapping of operator "
           "name to predicate (or None), not ")


@pytest.mark.parametrize("kwargs, says", [
    ({"supported_ops": None}, OPS_ARE + "NoneType"),
    ({"supported_ops": 3}, OPS_ARE + "int"),
    ({"supported_ops": ["add"], "patterns": None}, "patterns must be a sequence of "
     "(name, pattern), (name, pattern, check) or Composite entries, not NoneType"),
])
def test_a_non_collection_is_a_type_error_naming_the_argument(clean: None, kwargs: dict,
                                                              says: str) -> None:
    with pytest.raises(TypeError) as info:
        register_backend("tb1", **kwargs)
    assert str(info.value) == f"register_backend: {says}"
    assert "tb1" not in backend_names() and "tb1" not in support_names()


def test_default_is_reserved() -> None:
    with pytest.raises(ValueError, match="host"):
        register_backend("default", supported_ops=["add"])


def test_unregister_forgets_both_tables(clean: None) -> None:
    register_backend("tb1", supported_ops=["add"])
    unregister_backend("tb1")
    assert "tb1" not in backend_names() and "tb1" not in support_names()
    with pytest.raises(UnknownCompiler):
        get_backend("tb1")


def test_unknown_backend_has_a_hint(clean: None) -> None:
    register_backend("tb2", supported_ops=["add"])
    with pytest.raises(UnknownCompiler, match="did you mean 'tb2'") as info:
        ensure_backends(["tb3"])
    assert isinstance(info.value, rr.RelayError)


def test_codegen_unsupported_is_a_relay_error() -> None:
    err = CodegenUnsupported("no")
    assert isinstance(err, rr.RelayError) and isinstance(err, ValueError)


def test_region_summaries_count_as_the_cost_model(clean: None) -> None:
    """``exe.plan.regions`` and the ``worth`` callback see one count (``call_flops``):
    the same operator calls and estimated operations, a composite's inner calls included."""
    seen: list[RegionCost] = []
    register_reference_backend("tb1", ["nn.conv2d", "nn.relu", "reshape", "mean", "add"],
                               [("tb1.add_relu", add_relu())],
                               worth=lambda c: seen.append(c) or True)
    mod = rr.parse("""def @main(%x: Tensor[(1, 3, 8, 8), float32],
                                %w: Tensor[(4, 3, 3, 3), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
      %1 = nn.relu(add(%0, %0));
      mean(reshape(%1, newshape=[4, 64]), axis=[1])
    }""")
    exe = rr.compile(mod, targets=["tb1"])
    [region] = exe.plan.regions
    assert len(seen) == 1 and region.backend == "tb1"
    assert (region.ops, region.flops) == (seen[0].ops, seen[0].flops)
    assert region.ops == 5 and region.flops > 4 * 3 * 9 * 64  # the conv's multiply-adds


TUPLE_OF_TWO_PRODUCERS = """
def @main(%x: Tensor[(1, 4, 32, 32), float32], %w: Tensor[(4, 2, 3, 3), float32]) {
  %0 = nn.conv2d_transpose(%x, %w, channels=2, kernel_size=[3, 3]);
  %1 = (%0, tanh(%0));
  exp(concatenate(%1, axis=1))
}"""


@pytest.mark.parametrize("target", ["ort", "xla"])
def test_tuple_from_two_producers_runs_on_the_backend(target: str) -> None:
    """The tuple joins its concatenate's region (AnnotateTarget): the region's parameters
    are tensors, so the backend compiles it instead of refusing a tuple parameter."""
    mod = rr.parse(TUPLE_OF_TWO_PRODUCERS)
    exe = rr.compile(mod, targets=[target])
    part = rr.partition(mod, targets=[target])
    [region] = [r for r in exe.plan.regions if "concatenate" in rr.astext(part[r.name])]
    assert region.backend == target, region.note
    assert all(isinstance(p.type_annotation, TensorType) for p in part[region.name].params)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 32, 32), dtype="float32")
    w = rng.standard_normal((4, 2, 3, 3), dtype="float32")
    np.testing.assert_allclose(exe(x, w), rr.evaluate(mod, x, w), rtol=1e-5, atol=1e-5)


def test_composite_owner_is_among_the_partitioned_targets(clean: None) -> None:
    """A backend re-using a built-in's composite name owns the composites it is
    partitioned for (the owner is asked among the targets, in order)."""
    pat = is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()),
                                                wildcard()))
    mod = rr.parse("""def @main(%x: Tensor[(1, 8, 16, 16), float32],
                                %w: Tensor[(8, 8, 3, 3), float32], %b: Tensor[(8), float32]) {
      nn.relu(nn.bias_add(nn.conv2d(%x, %w), %b))
    }""")
    ensure_backends(["ort"])
    register_backend("tb1", supported_ops=[], patterns=[("ort.conv2d_bias_relu", pat)])
    part = rr.partition(mod, targets=["tb1"])
    assert [f.attr("Compiler") for f in part.functions.values()
            if f.attr("Compiler")] == ["tb1"]
    assert composite_owner("ort.conv2d_bias_relu", ["tb1"]) == "tb1"
    assert composite_owner("ort.conv2d_bias_relu", ["ort", "tb1"]) == "ort"
    assert composite_owner("ort.conv2d_bias_relu", ["xla"]) is None


@pytest.mark.parametrize("name, bad", [("my-backend", "'-'"), ("my backend", "' '"),
                                       ("ünï", "'ü'"), ("1st", "'1'")])
def test_backend_name_must_be_an_identifier(clean: None, name: str, bad: str) -> None:
    with pytest.raises(ValueError, match=f"backend name must be an identifier.*{bad}"):
        register_backend(name, supported_ops=["add"])
    assert name not in backend_names() and name not in support_names()


def test_an_identifier_backend_name_round_trips(clean: None) -> None:
    """The outlined functions' names parse back (why names are identifiers)."""
    register_backend("tb_1", supported_ops=["nn.relu"])
    mod = rr.parse("def @main(%x: Tensor[(4), float32]) { tanh(nn.relu(%x)) }")
    part = rr.partition(mod, targets=["tb_1"])
    assert rr.alpha_equal(rr.parse(rr.astext(part)), part)


@pytest.mark.parametrize("comp, bad", [('tb1."x', '\'"\''), ("tb1.a\\b", r"'\\\\'"),
                                       ("tb1.a\nb", r"'\\n'")])
def test_composite_name_must_print_in_a_string(clean: None, comp: str, bad: str) -> None:
    with pytest.raises(ValueError, match=f"composite name .* cannot contain {bad}"):
        register_backend("tb1", supported_ops=["add"], patterns=[(comp, add_relu())])
    assert "tb1" not in backend_names() and "tb1" not in support_names()


def test_register_support_checks_the_names_too() -> None:
    """The passes' own table (``register_support``) refuses the same names."""
    with pytest.raises(ValueError, match="cannot contain '-'"):
        register_support(Support("tb-1", {}))
    with pytest.raises(ValueError, match="cannot contain '\"'"):
        register_support(Support("tb1", {}, (Composite('tb1."', add_relu()),)))
    assert "tb-1" not in support_names() and "tb1" not in support_names()
