"""rr.partition and rr.compile(targets=...) (spec/byoc.md BYOC-Partition, BYOC-Extern)
with a reference backend (regions run by the interpreter): the partitioned program prints
and parses back alpha-equal, computes what the original computes (interpreter and
compiled), and each region is compiled once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.byoc import UnknownCompiler, unregister_backend
from relay_ref.byoc.reference import register_reference_backend

PROGRAM = """
def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(4, 4), float32]) -> Tensor[(2, 4), float32] {
  %0 = nn.dense(%x, %w);
  %1 = nn.relu(%0);
  %2 = exp(%1);
  %3 = add(%2, %1);
  nn.relu(%3)
}
"""


@pytest.fixture
def backend() -> Iterator[Any]:
    be = register_reference_backend("tpart", ["nn.dense", "nn.relu", "add"])
    yield be
    unregister_backend("tpart")


def arrays(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((2, 4)).astype("float32"),
            rng.standard_normal((4, 4)).astype("float32"))


def regions(mod: rr.IRModule) -> dict[str, str]:
    return {n: str(f.attr("Compiler")) for n, f in mod.functions.items()
            if f.attr("Compiler") is not None}


def test_partition_values_and_round_trip(backend: Any) -> None:
    mod = rr.parse(PROGRAM)
    out = rr.partition(mod, ["tpart"])
    assert regions(out) and set(regions(out).values()) == {"tpart"}
    assert rr.alpha_equal(rr.parse(rr.astext(out)), out)
    x, w = arrays()
    want = rr.evaluate(mod, x, w)
    np.testing.assert_allclose(rr.evaluate(out, x, w), want, rtol=1e-5, atol=1e-6)
    exe = rr.compile(out)
    np.testing.assert_allclose(exe(x, w), want, rtol=1e-5, atol=1e-6)
    assert backend.codegen.calls == len(regions(out))
    assert {r.name for r in exe.plan.regions} == set(regions(out))


def test_compile_with_targets_and_params(backend: Any) -> None:
    mod = rr.parse(PROGRAM)
    x, w = arrays(1)
    exe = rr.compile(mod, {"w": w}, targets=["tpart"])
    np.testing.assert_allclose(exe(x), rr.evaluate(mod, x, w), rtol=1e-5, atol=1e-6)
    assert backend.codegen.calls >= 1
    assert all(r.backend == "tpart" for r in exe.plan.regions)


def test_params_are_bound_into_the_region(backend: Any) -> None:
    from relay_ref.ir.expr import Constant
    from relay_ref.ir.visitor import post_order

    x, w = arrays(2)
    out = rr.partition(rr.parse(PROGRAM), "tpart", {"w": w})
    assert [p.name_hint for p in out.functions["main"].params] == ["x"]
    inside = [n for name in regions(out) for n in post_order(out.functions[name].body)
              if type(n) is Constant and n.data.shape == (4, 4)]
    assert inside


def test_unknown_target(backend: Any) -> None:
    with pytest.raises(UnknownCompiler, match="did you mean 'tpart'"):
        rr.partition(rr.parse(PROGRAM), ["tpar"])
    with pytest.raises(rr.RelayError):
        rr.compile(rr.parse(PROGRAM), targets=["tpar"])


@pytest.mark.parametrize("targets, error", [([], ValueError), ([3], TypeError),
                                            (5, TypeError), ({"tpar": 1}, TypeError),
                                            ({"tpar"}, TypeError)])
def test_bad_targets(targets: Any, error: type) -> None:
    with pytest.raises(error):
        rr.partition(rr.parse(PROGRAM), targets)


@pytest.mark.parametrize("name", ["ort", "tpart"])
def test_a_backend_passed_as_target_says_to_use_targets(backend: Any, name: str) -> None:
    """``target=`` is the host's (cpu, cuda): a BYOC backend's name there, built-in or
    registered, is refused with the keyword it belongs to."""
    with pytest.raises(rr.RelayError) as info:
        rr.compile(rr.parse(PROGRAM), target=name)
    assert isinstance(info.value, ValueError)
    assert f"{name!r} is a BYOC backend: pass targets=[{name!r}]" in str(info.value)


def test_a_backend_object_as_a_target_names_its_type(backend: Any) -> None:
    with pytest.raises(TypeError) as info:
        rr.partition(rr.parse(PROGRAM), [backend])
    message = str(info.value)
    assert "not Backend" in message and "'tpart'" in message
    assert "Support(" not in message and len(message) < 150
