"""The nine ``light_*`` models (random weights by role, ``relay_ref.testing.onnx_light``)
compiled with ``rr.compile(mod, params, targets=[...])`` for the built-in ``ort`` and
``xla`` backends (each large model for one of them) equal onnxruntime on the original
model, with the tolerances of tests/frontend/test_onnx_light.py; and with a backend that
takes only convolutions (the ``ort`` codegen, every ``nn.conv2d`` its own region): many
regions, same values. The large models are marked slow (they still run in CI: one test
each)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np
import onnx
import pytest

import relay_ref as rr
from relay_ref.byoc import register_backend, unregister_backend
from relay_ref.byoc.ort import ort_codegen, supported_ops
from relay_ref.frontend.onnx import from_onnx
from relay_ref.ir.expr import Call, Op
from relay_ref.ir.visitor import post_order
from relay_ref.testing import onnx_light

SMALL = ("bvlc_alexnet", "inception_v1", "shufflenet", "squeezenet", "zfnet512")
LARGE = ("densenet121", "inception_v2", "resnet50", "vgg19")
assert sorted(SMALL + LARGE) == sorted(onnx_light.NAMES)


def _case(name: str) -> tuple[onnx.ModelProto, dict, list[np.ndarray]]:
    """The variant, its inputs, onnxruntime's outputs (``onnx_light.case``, cached)."""
    return onnx_light.case(name)


def _as_list(value: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in value] if isinstance(value, tuple | list) \
        else [np.asarray(value)]


_check = onnx_light.assert_matches_onnxruntime


@functools.cache
def _imported(name: str) -> tuple[rr.IRModule, dict[str, np.ndarray]]:
    """The variant imported (shared by the tests of one model; nothing mutates it)."""
    return from_onnx(_case(name)[0])


def _compiled(name: str, targets: list[str]) -> tuple[Any, list[np.ndarray], list[np.ndarray]]:
    _, feeds, want = _case(name)
    mod, params = _imported(name)
    exe = rr.compile(mod, params, targets=targets)
    return exe, _as_list(exe(**feeds)), want


#: the large models run once each (one target, two each), marked slow
LARGE_TARGET = {"densenet121": "ort", "inception_v2": "ort", "resnet50": "xla", "vgg19": "xla"}
assert sorted(LARGE_TARGET) == sorted(LARGE)
CASES = [pytest.param(n, t, id=f"{t}-{n}") for n in SMALL for t in ("ort", "xla")] + [
    pytest.param(n, t, id=f"{t}-{n}", marks=pytest.mark.slow) for n, t in LARGE_TARGET.items()]


@pytest.mark.parametrize("name, target", CASES)
def test_light_model_partitioned_equals_onnxruntime(name: str, target: str) -> None:
    exe, got, want = _compiled(name, [target])
    _check(name, got, want)
    # every operator of these models is the backend's: one region holds them all
    (region,) = exe.plan.regions
    assert region.backend == target, str(exe.plan)
    mod, _ = _imported(name)
    assert region.ops == sum(1 for n in post_order(mod["main"].body)
                             if type(n) is Call and type(n.op) is Op)


# -- a backend that takes only convolutions: many regions -----------------------------------

CONV_ONLY = "tconv_ort"


@pytest.fixture
def conv_only() -> Iterator[Any]:
    """The ``ort`` codegen behind a support table of ``nn.conv2d`` alone (with ort's own
    predicate), no cost model: every convolution is a region of its own."""
    be = register_backend(CONV_ONLY, supported_ops={"nn.conv2d": supported_ops()["nn.conv2d"]},
                          codegen=ort_codegen, replace=True)
    yield be
    unregister_backend(CONV_ONLY)


@pytest.mark.parametrize("name", ["squeezenet", "shufflenet"])
def test_ort_supporting_only_conv2d(conv_only: Any, name: str) -> None:
    _, feeds, want = _case(name)
    mod, params = _imported(name)
    convs = rr.astext(mod).count("nn.conv2d(")
    part = rr.partition(mod, [CONV_ONLY], params)
    names = [n for n, f in part.functions.items() if f.attr("Compiler") == CONV_ONLY]
    assert len(names) >= 10  # many regions
    for n in names:  # each region is convolutions only
        body = rr.astext(part[n])
        assert "nn.conv2d(" in body and "nn.relu(" not in body and "concatenate(" not in body
    assert sum(rr.astext(part[n]).count("nn.conv2d(") for n in names) == convs
    exe = rr.compile(part)
    assert len(exe.plan.regions) == len(names)
    assert all(r.backend == CONV_ONLY for r in exe.plan.regions), str(exe.plan)
    _check(name, _as_list(exe(**feeds)), want)
