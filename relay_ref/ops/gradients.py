"""Installs the built-in differentiation rules (registry protocol "Differentiation protocol",
spec/ad.md): each ``grad_*.py`` family module holds ``RULES`` (op -> (reverse, forward)) and
``NOT_DIFFERENTIABLE`` (op -> why not) as data; ``apply_builtin_gradients`` registers both
with ``set_gradient``. It runs after every family registered its ops
(``relay_ref/ops/__init__.py``)."""

from __future__ import annotations

from relay_ref.ops import grad_elementwise, grad_reduce, grad_transform
from relay_ref.ops.grad_common import register_rules

FAMILIES = (grad_elementwise, grad_reduce, grad_transform)


def apply_builtin_gradients() -> None:
    """Register every family's rules and reasons (idempotent)."""
    for family in FAMILIES:
        register_rules(family.RULES, family.NOT_DIFFERENTIABLE)
