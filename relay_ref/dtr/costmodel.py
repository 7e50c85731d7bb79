"""The DTR runtime's cost models: ``c0`` of a kernel step (spec/dtr.md, Cost).

* ``"flops"``: deterministic, from the step's argument shapes and attributes, by the ops'
  ``cost`` aspect (``relay_ref.ops.costs``, defined beside the ops). A single operator's
  step (kind ``op`` / ``single``) costs its op's formula; a fused kernel (kind ``fused``,
  label ``conv2d+bias_add+relu``) the sum over its ops: the first op with a formula of its
  own (the anchor: conv2d, dense, ...) on the kernel's arguments and result, every other op
  its result's elements (what ``default_cost`` gives an elementwise op). Unknown shapes
  (a result without a static type) count the first argument's elements.
* ``"unit"``: 1 per step.
* ``"measured"``: the kernel's wall time (``time.perf_counter`` around ``site.call``), as the
  paper's prototype measures it; the cost a step is admitted with is the time of that site's
  previous run (its first run: the flops estimate at 1 ns per operation), and replays time
  themselves again. Not deterministic: logs from it do not replay to the same evictions.

Invariant: a cost is a positive finite float; the same step on the same shapes costs the
same under ``flops`` and ``unit`` (so a log written under them replays exactly).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relay_ref.ops.costs import default_cost
from relay_ref.ops.registry import get_op

__all__ = ["SiteCost", "site_cost"]

#: ``cost(args) -> float`` of one site, on the step's argument values
SiteCost = Callable[[Sequence[Any]], float]


def _shape(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else ()


def _op_cost(name: str) -> Callable[..., int] | None:
    try:
        return get_op(name).cost
    except (KeyError, ValueError, TypeError):
        return None


def site_cost(site: Any, model: str) -> SiteCost:
    """The cost function of ``site`` (a ``relay_ref.executor.runtime.Site``: its kind,
    label, static result shape and ``call.attrs``) under ``model`` (``"flops"`` or
    ``"unit"``; ``"measured"`` is kept by the runtime and starts from ``"flops"``)."""
    if model == "unit":
        return lambda args: 1.0
    attrs = getattr(site.call, "attrs", None)
    out = site.shape
    if site.kind == "fused":
        names = [n for n in site.label.split("+") if n]
        formulas = [(n, _op_cost(n)) for n in names]
        anchor = next((i for i, (_, f) in enumerate(formulas) if f is not None), None)

        def fused(args: Sequence[Any]) -> float:
            shapes = [_shape(a) for a in args]
            res = out if out is not None else (shapes[0] if shapes else ())
            rest = int(np.prod(res, dtype=np.int64)) if res else 1
            total = 0
            for i, (_, formula) in enumerate(formulas):
                if i == anchor and formula is not None:
                    total += _guarded(formula, shapes, res, None)
                else:
                    total += max(rest, 1)
            return float(max(total, 1))

        return fused
    formula = _op_cost(site.label) or default_cost

    def single(args: Sequence[Any]) -> float:
        shapes = [_shape(a) for a in args]
        res = out if out is not None else (shapes[0] if shapes else ())
        return float(_guarded(formula, shapes, res, attrs))

    return single


def _guarded(formula: Callable[..., int], shapes: list[tuple[int, ...]],
             out: tuple[int, ...], attrs: object) -> int:
    """The formula's value, or the output's elements when the formula cannot read the
    shapes it was given (a fused kernel's arguments are not the anchor's exactly)."""
    try:
        value = int(formula(shapes, out, attrs))
    except (IndexError, TypeError, ValueError, ZeroDivisionError):
        value = default_cost(shapes, out, attrs)
    return max(value, 1)
