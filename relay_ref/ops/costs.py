"""The ``cost`` aspect: each operator's compute cost from its argument shapes and attributes.

``BUILTIN_COSTS`` maps an op name to ``cost(arg_shapes, out_shape, attrs) -> int``: the
number of multiply-adds (counted as 2) or element operations one call does, a deterministic
model of its run time (``rr.compile(..., cost="flops")``, the DTR runtime's ``c0(t)``,
spec/dtr.md). ``arg_shapes`` are the shapes of the tensor arguments in order (``()`` for a
scalar or a non-tensor argument), ``out_shape`` the result's (the first field's, for a
tuple). An op named nowhere here costs its output's element count
(``default_cost``): elementwise ops, reductions of small windows, layout changes. Attached
by ``relay_ref.ops`` (``registry.attach("cost", ...)``; the rule in its docstring).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

__all__ = ["BUILTIN_COSTS", "CostFn", "default_cost"]

Shape = tuple[int, ...]
#: ``cost(arg_shapes, out_shape, attrs) -> int``
CostFn = Callable[[Sequence[Shape], Shape, object], int]


def _n(shape: Shape) -> int:
    return math.prod(int(d) for d in shape)


def default_cost(args: Sequence[Shape], out: Shape, attrs: object) -> int:
    """One operation per output element (at least 1)."""
    return max(_n(out), 1)


def _input_elements(args: Sequence[Shape], out: Shape, attrs: object) -> int:
    """One operation per input element (reductions, normalisations)."""
    return max(_n(args[0]) if args else 0, _n(out), 1)


def _contract_last(args: Sequence[Shape], out: Shape, attrs: object) -> int:
    """``2 * out * K`` with ``K`` the contracted extent: the first argument's last axis
    (or its second-to-last when ``transpose_a``): dense, matmul, batch_matmul."""
    a = args[0] if args else ()
    k = 1
    if a:
        k = a[-2] if getattr(attrs, "transpose_a", False) and len(a) >= 2 else a[-1]
    return max(2 * _n(out) * int(k), 1)


def _conv(args: Sequence[Shape], out: Shape, attrs: object) -> int:
    """``2 * out * (in_channels / groups) * prod(kernel)``: the weight's elements per output
    channel (OIHW, HWIO or any layout: the weight's size over its output-channel extent)."""
    w = args[1] if len(args) > 1 else ()
    layout = str(getattr(attrs, "kernel_layout", "OIHW") or "OIHW")
    o_axis = layout.find("O") if "O" in layout and len(layout) == len(w) else 0
    per_out = _n(w) // max(int(w[o_axis]), 1) if w else 1
    return max(2 * _n(out) * per_out, 1)


def _conv_transpose(args: Sequence[Shape], out: Shape, attrs: object) -> int:
    """``2 * data * prod(weight) / in_channels``: each input element scatters into
    ``out_channels / groups * prod(kernel)`` outputs."""
    d = args[0] if args else ()
    w = args[1] if len(args) > 1 else ()
    per_in = _n(w) // max(int(w[0]), 1) if w else 1
    return max(2 * _n(d) * per_in, _n(out), 1)


def _pool(args: Sequence[Shape], out: Shape, attrs: object) -> int:
    """``out * prod(pool_size)``: each output reads one window."""
    window = math.prod(int(p) for p in getattr(attrs, "pool_size", ()) or (1,))
    return max(_n(out) * window, 1)


#: op name -> its cost formula (ops named nowhere: ``default_cost``)
BUILTIN_COSTS: dict[str, CostFn] = {
    "nn.dense": _contract_last,
    "nn.matmul": _contract_last,
    "nn.batch_matmul": _contract_last,
    "nn.conv1d": _conv,
    "nn.conv2d": _conv,
    "nn.conv3d": _conv,
    "nn.conv2d_transpose": _conv_transpose,
    "nn.max_pool2d": _pool,
    "nn.avg_pool2d": _pool,
    "nn.global_avg_pool2d": _input_elements,
    "nn.global_max_pool2d": _input_elements,
    "sum": _input_elements,
    "mean": _input_elements,
    "max": _input_elements,
    "min": _input_elements,
    "variance": _input_elements,
    "nn.softmax": _input_elements,
    "nn.log_softmax": _input_elements,
    "nn.batch_norm": _input_elements,
    "nn.layer_norm": _input_elements,
}
