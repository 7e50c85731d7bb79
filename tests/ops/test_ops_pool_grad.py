"""nn.max_pool2d_grad / nn.avg_pool2d_grad (relay_ref/ops/nn.py) against jax: the vjp of
the same pool written with ``lax.reduce_window`` (float64, NCHW; strides, dilation,
padding, ceil_mode, count_include_pad), and the relation's checks of out_grad."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, run_op

from relay_ref.ir.types import TensorType
from relay_ref.ops.nn import pad4, pool_out
from relay_ref.ops.registry import RelationError, get_op, make_attrs

DIFF_TESTED = {"nn.max_pool2d_grad", "nn.avg_pool2d_grad"}

RNG = np.random.default_rng(7)

_PLAIN = {"pool_size": (2, 2)}
_PADDED = {"pool_size": (3, 2), "strides": (2, 1), "padding": (1, 0, 0, 1)}
_CEIL = {"pool_size": (2, 2), "strides": (2, 2), "padding": (1, 0, 1, 1), "ceil_mode": True}
_DILATED = {"pool_size": (2, 3), "strides": (1, 2), "dilation": (2, 1), "padding": (1, 1)}
CASES = [  # (kind, attrs): every attribute at least once per kind, overlapping windows
    ("max", _PLAIN), ("max", _PADDED), ("max", _CEIL), ("max", _DILATED),
    ("avg", _PLAIN), ("avg", {**_PADDED, "count_include_pad": True}), ("avg", _CEIL),
    ("avg", {**_CEIL, "count_include_pad": True}), ("avg", _DILATED),
]


def jax_pool(kind: str, attrs: dict, hw: tuple[int, int]) -> object:
    """The pool as jax computes it: padding (explicit, then ceil_mode's extra rows) filled
    with -inf for max; avg divides the window sum by a count of the counted positions
    (explicit padding counts with count_include_pad, the extra never)."""
    import jax.numpy as jnp
    from jax import lax

    (kh, kw), (sh, sw) = attrs["pool_size"], attrs.get("strides", (1, 1))
    dh, dw = attrs.get("dilation", (1, 1))
    pt, pl, pb, pr = pad4(attrs.get("padding", (0, 0)))
    ceil = attrs.get("ceil_mode", False)
    h, w = hw
    oh, ow = (pool_out(h, kh, sh, pt + pb, dh, ceil), pool_out(w, kw, sw, pl + pr, dw, ceil))
    eh = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - (h + pt + pb))
    ew = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - (w + pl + pr))
    pads = ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew))
    win = dict(window_dimensions=(1, 1, kh, kw), window_strides=(1, 1, sh, sw),
               padding=pads, window_dilation=(1, 1, dh, dw))

    def pool(x: object) -> object:
        if kind == "max" and (dh, dw) != (1, 1):  # jax has no dilated max-pool vjp: the max
            xp = jnp.pad(x, pads, constant_values=-jnp.inf)  # of the window's strided slices
            taps = [xp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                       j * dw:j * dw + (ow - 1) * sw + 1:sw]
                    for i in range(kh) for j in range(kw)]
            return jnp.max(jnp.stack(taps), axis=0)
        if kind == "max":
            return lax.reduce_window(x, -jnp.inf, lax.max, **win)
        total = lax.reduce_window(x, 0.0, lax.add, **win)
        inside = 1.0 if attrs.get("count_include_pad", False) else 0.0
        mask = jnp.pad(jnp.ones((1, 1, h, w)), ((0, 0), (0, 0), (pt, pb), (pl, pr)),
                       constant_values=inside)
        mask = jnp.pad(mask, ((0, 0), (0, 0), (0, eh), (0, ew)))
        count = lax.reduce_window(mask, 0.0, lax.add, window_dimensions=(1, 1, kh, kw),
                                  window_strides=(1, 1, sh, sw), padding="VALID",
                                  window_dilation=(1, 1, dh, dw))
        return total / jnp.maximum(count, 1.0)
    return pool


@pytest.mark.parametrize(("kind", "attrs"), CASES, ids=[f"{k}-{i}" for i, (k, _) in
                                                     enumerate(CASES)])
def test_pool_grad_vs_jax_vjp(kind: str, attrs: dict) -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x = RNG.standard_normal((2, 3, 7, 6))
    y, vjp = jax.vjp(jax.jit(jax_pool(kind, attrs, (7, 6))), x)
    close(run_op(f"nn.{kind}_pool2d", [x], **attrs), np.asarray(y), 1e-12, 1e-12)
    g = RNG.standard_normal(np.shape(y))
    ours = run_op(f"nn.{kind}_pool2d_grad", [g, x], **attrs)
    close(ours, np.asarray(vjp(g)[0]), 1e-12, 1e-12)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_grad_in_nhwc_is_the_nchw_grad_transposed(kind: str) -> None:
    attrs = {"pool_size": (3, 2), "strides": (2, 1), "padding": (1, 1)}
    x = RNG.standard_normal((1, 2, 6, 5)).astype("float32")
    g = RNG.standard_normal(run_op(f"nn.{kind}_pool2d", [x], **attrs).shape).astype("float32")
    nchw = run_op(f"nn.{kind}_pool2d_grad", [g, x], **attrs)
    nhwc = run_op(f"nn.{kind}_pool2d_grad", [g.transpose(0, 2, 3, 1), x.transpose(0, 2, 3, 1)],
                  **attrs, layout="NHWC")
    close(nhwc, nchw.transpose(0, 2, 3, 1))


def test_max_pool_grad_sends_everything_to_the_first_maximum() -> None:
    x = np.array([[[[1.0, 3.0, 3.0], [0.0, 3.0, 2.0]]]])
    g = np.array([[[[10.0, 100.0]]]])
    out = run_op("nn.max_pool2d_grad", [g, x], pool_size=(2, 2))
    np.testing.assert_array_equal(out, [[[[0.0, 110.0, 0.0], [0.0, 0.0, 0.0]]]])


def test_relation_checks_out_grad_against_the_pooled_type() -> None:
    rel = get_op("nn.avg_pool2d_grad").relation
    at = make_attrs("nn.avg_pool2d_grad", {"pool_size": (2, 2), "strides": (2, 2)})
    data = TensorType((1, 2, 5, 5), "float32")
    assert rel([TensorType((1, 2, 2, 2), "float32"), data], at) == data
    with pytest.raises(RelationError, match=r"out_grad must have the pooled type \(1, 2, 2, 2\)"):
        rel([TensorType((1, 2, 3, 3), "float32"), data], at)
    with pytest.raises(RelationError, match="floating point"):
        rel([TensorType((1, 2, 2, 2), "int32"), TensorType((1, 2, 5, 5), "int32")], at)
