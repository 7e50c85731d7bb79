"""Installs the built-in differentiation rules (registry protocol "Differentiation protocol",
spec/ad.md): each ``grad_*.py`` family module holds ``RULES`` (op -> (reverse, forward)) and
``NOT_DIFFERENTIABLE`` (op -> why not) as data; ``apply_builtin_gradients`` registers both
with ``set_gradient``. It runs after every family registered its ops
(``relay_ref/ops/__init__.py``)."""

from __future__ import annotations

from relay_ref.ops import (
    grad_elementwise,
    grad_nn,
    grad_norm,
    grad_pool,
    grad_reduce,
    grad_transform,
)
from relay_ref.ops.grad_common import register_rules
from relay_ref.ops.registry import all_ops

FAMILIES = (grad_elementwise, grad_reduce, grad_transform, grad_nn, grad_pool,
            grad_norm)

#: whole op namespaces without rules, and why (applied to their ops not classified above).
NAMESPACE_REASONS: dict[str, str] = {
    "qnn.": "quantized: integer arithmetic with requantization",
    "vision.": "vision op: boxes, scores and indices (not implemented yet)",
    "dyn.": "dynamic shapes: not implemented yet (the static form has rules)",
    "image.": "not implemented yet (interpolation / sampling weights)",
}
#: single ops registered elsewhere, when their module has not classified them itself.
OTHER_REASONS: dict[str, str] = {
    "gradient": "a program transformation (expanded by the AD pass before evaluation), "
                "not a numeric function",
}


def apply_builtin_gradients() -> None:
    """Register every family's rules and reasons (idempotent)."""
    for family in FAMILIES:
        register_rules(family.RULES, family.NOT_DIFFERENTIABLE)
    for name, opdef in all_ops().items():
        if opdef.differentiable is None:
            for prefix, why in NAMESPACE_REASONS.items():
                if name.startswith(prefix):
                    register_rules({}, {name: why})
            if name in OTHER_REASONS:
                register_rules({}, {name: OTHER_REASONS[name]})
