"""The ``gradient`` aspect's tables (the rule: ``relay_ref/ops/__init__.py``; the registry's
"Differentiation protocol", spec/ad.md).

Each ``grad_*.py`` family module holds ``RULES`` (op -> (reverse, forward)) and
``NOT_DIFFERENTIABLE`` (op -> why not) as data; ``FAMILIES`` lists those modules, and
``fallback_reasons`` gives the ops no family classifies a reason from their namespace
(``NAMESPACE_REASONS``) or by name (``OTHER_REASONS``). The package attaches the families'
tables first, then the fallback reasons of the ops still unclassified. An op no table names
keeps ``differentiable = None``; ``tests/ops/test_gradients.py`` requires that none does.
"""

from __future__ import annotations

from collections.abc import Container, Iterable

from relay_ref.ops import (
    grad_elementwise,
    grad_nn,
    grad_norm,
    grad_pool,
    grad_reduce,
    grad_transform,
)

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
    # Relax's constructs (ops/symbolic.py): no rules yet. match_cast and dataflow are
    # identities on values, but AD over shape refinement and dataflow blocks is not
    # specified (spec/ad.md); a packed function is an opaque user kernel.
    "match_cast": "Relax shape refinement (checked at run time): AD over it is not "
                  "specified yet",
    "dataflow": "Relax dataflow block: AD over blocks is not specified yet",
    "call_dps_packed": "an opaque user kernel (rr.register_packed) without a gradient",
    "call_tir": "an opaque user kernel (rr.register_packed) without a gradient",
}


def fallback_reasons(names: Iterable[str], classified: Container[str]) -> dict[str, str]:
    """The reason of each op in ``names`` that ``classified`` lacks and that
    ``OTHER_REASONS`` or a namespace of ``NAMESPACE_REASONS`` covers (by name first)."""
    out: dict[str, str] = {}
    for name in names:
        if name in classified:
            continue
        if name in OTHER_REASONS:
            out[name] = OTHER_REASONS[name]
            continue
        for prefix, why in NAMESPACE_REASONS.items():
            if name.startswith(prefix):
                out[name] = why
                break
    return out
