"""The nine ``light_*`` models of the ``onnx`` wheel, with their weights redrawn at random
by role (``relay_ref.testing.onnx_light``; the shipped 0.02 fills hide errors), import,
type-check and match onnxruntime on the same variant: the outputs and the pre-softmax
logits. Every model runs through ``rr.compile``; the small ones also through
``rr.evaluate``. The largest are marked slow (they still run in CI)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx_case import as_list

import relay_ref as rr
from relay_ref.frontend.onnx import from_onnx
from relay_ref.testing import onnx_light

SMALL = ("bvlc_alexnet", "inception_v1", "shufflenet", "squeezenet", "zfnet512")
LARGE = ("densenet121", "inception_v2", "resnet50", "vgg19")
assert sorted(SMALL + LARGE) == sorted(onnx_light.NAMES)


def _case(name: str) -> tuple[onnx.ModelProto, dict, list[np.ndarray]]:
    """The variant (logits as an extra output), its inputs and onnxruntime's outputs, 2
    threads (``onnx_light.case``, cached per process)."""
    return onnx_light.case(name)


_check = onnx_light.assert_matches_onnxruntime


def _params(name: str) -> pytest.param:
    marks = [pytest.mark.slow] if name in LARGE else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [_params(n) for n in onnx_light.NAMES])
def test_light_model_compiled_matches_onnxruntime(name: str) -> None:
    model, feeds, want = _case(name)
    mod, params = from_onnx(model)
    rr.infer_types(mod)
    exe = rr.compile(mod, params=params)
    _check(name, as_list(exe(**feeds)), want)


@pytest.mark.parametrize("name", SMALL)
def test_light_model_evaluated_matches_onnxruntime(name: str) -> None:
    model, feeds, want = _case(name)
    mod, params = from_onnx(model)
    _check(name, as_list(rr.evaluate(mod, *feeds.values(), *params.values())), want)


@pytest.mark.parametrize("name", onnx_light.NAMES)
def test_shipped_light_model_imports_and_type_checks(name: str) -> None:
    """The model as shipped: its ConstantOfShape weights become ``full`` calls (no
    parameters for them), its ``*_SHAPE`` initializers constants."""
    mod, params = from_onnx(onnx_light.model_path(name))
    checked = rr.infer_types(mod)
    main = mod["main"]
    assert [p.name_hint for p in main.params][:1] != []
    assert all(not k.endswith("_SHAPE") for k in params)
    ret = checked.global_types["main"].ret_type
    assert "1000" in rr.astext(ret)


def test_variant_replaces_every_constant_of_shape():
    model = onnx_light.random_variant(onnx.load(onnx_light.model_path("squeezenet")))
    assert not [n for n in model.graph.node if n.op_type == "ConstantOfShape"]
    again = onnx_light.random_variant(onnx.load(onnx_light.model_path("squeezenet")))
    assert model.SerializeToString() == again.SerializeToString()  # seeded
