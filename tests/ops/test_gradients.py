"""The differentiation side of the op registry (registry protocol "Differentiation
protocol", spec/ad.md): every op is classified, every differentiable op has both rules,
and ``set_gradient`` keeps its invariants."""

from __future__ import annotations

import numpy as np
import pytest

from relay_ref.ops import registry
from relay_ref.ops.registry import all_ops, get_op, register_op, set_gradient
from tests.ops.gradcheck import forward_value, reverse_values


def test_every_op_is_classified() -> None:
    unclassified = sorted(n for n, o in all_ops().items() if o.differentiable is None)
    assert not unclassified, f"differentiable: set True (rules) or a reason: {unclassified}"


def test_the_core_ops_are_differentiable() -> None:
    for name in ("add", "multiply", "exp", "sum", "reshape", "take", "nn.dense",
                 "nn.conv2d", "nn.softmax", "nn.relu", "concatenate", "where"):
        assert get_op(name).differentiable is True, name
    assert "boolean" in get_op("equal").differentiable
    assert "integer" in get_op("argmax").differentiable


def test_differentiable_ops_have_both_rules_and_the_others_a_reason() -> None:
    for name, op in all_ops().items():
        if op.differentiable is True:
            assert callable(op.gradient) and callable(op.tangent), name
        elif op.differentiable is not None:
            assert isinstance(op.differentiable, str) and op.differentiable.strip(), name
            assert op.gradient is None and op.tangent is None, name


def test_rules_have_a_docstring_of_their_math() -> None:
    for name, op in all_ops().items():
        if op.differentiable is True:
            for rule in (op.gradient, op.tangent):
                assert (rule.__doc__ or "").strip(), f"{name}: {rule.__qualname__}"


def test_set_gradient_needs_both_rules_or_a_reason() -> None:
    def rule(*_: object) -> tuple:
        return ()

    with pytest.raises(ValueError, match="both"):
        set_gradient("exp", reverse=rule)
    with pytest.raises(ValueError, match="not both"):
        set_gradient("exp", reverse=rule, forward=rule, why_not="no")
    assert get_op("exp").differentiable is True


def test_set_gradient_on_a_user_op() -> None:
    op = register_op("test.grad_identity", relation=lambda ts, a: ts[0],
                     reference=lambda args, a: args[0], num_inputs=1, override=True)
    try:
        assert op.differentiable is None
        done = set_gradient("test.grad_identity", why_not="a test op")
        assert done.differentiable == "a test op" and done.gradient is None
        assert get_op("test.grad_identity").differentiable == "a test op"
    finally:  # other tests enumerate the registry
        registry._REGISTRY.pop("test.grad_identity", None)


def test_exp_rules_on_values() -> None:
    x = np.array([[0.5, -1.0, 2.0]])
    g = np.array([[1.0, 2.0, 3.0]])
    (dx,) = reverse_values("exp", [x], {}, g)
    np.testing.assert_allclose(dx, g * np.exp(x))
    np.testing.assert_allclose(forward_value("exp", [x], {}, [g]), g * np.exp(x))


def test_add_undoes_broadcasting() -> None:
    x, y = np.ones((2, 3)), np.ones((3,))
    g = np.arange(6.0).reshape(2, 3)
    dx, dy = reverse_values("add", [x, y], {}, g)
    np.testing.assert_allclose(dx, g)
    np.testing.assert_allclose(dy, g.sum(axis=0))
    assert dy.shape == (3,)


def test_unhandled_attributes_raise_gradient_unsupported() -> None:
    from relay_ref.ops.registry import GradientUnsupported

    x = np.ones((2, 3, 4))
    ind = np.zeros((2, 1), dtype="int64")
    with pytest.raises(GradientUnsupported, match="take: .*batch_dims"):
        reverse_values("take", [x, ind], {"axis": 1, "batch_dims": 1}, np.ones((2, 1, 4)))
    data, w = np.ones((1, 4, 4, 2)), np.ones((1, 1, 2, 2))
    with pytest.raises(GradientUnsupported, match="nn.conv2d: .*NHWC"):
        reverse_values("nn.conv2d", [data, w], {"data_layout": "NHWC", "kernel_layout": "HWIO"},
                       np.ones((1, 4, 4, 2)))
