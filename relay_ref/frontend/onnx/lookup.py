"""The converter table, loaded: ``lookup(op_type, version)`` and ``table()``.

Both import every converter family (``ops_*.py``) first, which registers their converters
in ``registry.py``; the families import only ``registry``'s decorator, so the import graph
stays acyclic (registry <- families <- lookup).
"""

from __future__ import annotations

from relay_ref.frontend.onnx.registry import Converter, registered, registered_op_types


def lookup(op_type: str, version: int) -> Converter | None:
    """The converter of ``op_type`` at op version ``version``, None when there is none."""
    _load()
    for entry in registered(op_type):
        if entry.handles(version):
            return entry
    return None


def table() -> dict[str, tuple[Converter, ...]]:
    """Every registered converter, by op type (for documentation and tests)."""
    _load()
    return {k: tuple(sorted(registered(k), key=lambda c: c.since))
            for k in sorted(registered_op_types())}


def _load() -> None:
    # Importing the families registers their converters (idempotent).
    from relay_ref.frontend.onnx import (  # noqa: F401
        ops_control,
        ops_control_scan,
        ops_data_dependent,
        ops_extra,
        ops_extra_attention,
        ops_extra_loss,
        ops_extra_quant,
        ops_extra_rnn,
        ops_extra_scatter,
        ops_image,
        ops_math,
        ops_nn,
        ops_reduce,
        ops_tensor,
    )
