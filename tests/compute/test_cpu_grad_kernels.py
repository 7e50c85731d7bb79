"""The training step's gradient kernels (``relay_ref/ops/cpu_grad.py`` over
``compute/cpu/conv_grad.py`` and ``pool_grad.py``) against the ops' NumPy references:
``nn.conv2d_transpose``, ``nn.max_pool2d_grad``, ``nn.avg_pool2d_grad`` and conv2d's weight
gradient as AD emits it (``cpu_grad.conv2d_many_taps`` behind ``cpu_nn.conv2d``), over
random shapes and every attribute, with and without ``out=`` (``check_kernel``: the value,
``out`` written and returned, arguments untouched); integer dtypes and other layouts run
the reference. Then a conv/pool CNN's gradient through ``rr.compile`` against
``rr.evaluate`` and jax.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tensor_kernel_check import check_kernel

import relay_ref as rr
from relay_ref.compute.cpu import parallel
from relay_ref.ops import cpu_grad
from relay_ref.ops.layout import from_canonical
from relay_ref.ops.nn import pad4
from relay_ref.ops.registry import get_op, make_attrs

# sums of a few dozen products of values in [-1, 1]
TOL = {"rtol": 1e-4, "atol": 1e-4}
DTYPES = st.sampled_from(["float32", "float32", "float64", "float64", "int32"])
PADDING = st.lists(st.integers(0, 3), min_size=1, max_size=4).filter(lambda p: len(p) != 3)


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype.startswith("int"):
        return rng.integers(-4, 5, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def _shape(n: int, c: int, h: int, w: int, layout: str) -> tuple[int, ...]:
    dims = {"N": n, "C": c, "H": h, "W": w}
    return tuple(dims[a] for a in layout)


# -- nn.conv2d_transpose -----------------------------------------------------------------

@st.composite
def transpose_cases(draw: st.DrawFn) -> tuple[list, dict]:
    """(args, attrs) of a conv2d_transpose with a non-empty output."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    cg = draw(st.sampled_from([1, 1, 2, 3]))  # 1: the direct kernel; 2, 3: GEMM + col2im
    og = draw(st.integers(1, 3))
    c = groups * cg
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    output_padding = tuple(draw(st.integers(0, max(s, d) - 1))
                           for s, d in zip(strides, dilation, strict=True))
    padding = tuple(draw(PADDING))
    h, w = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    pt, pl, pb, pr = pad4(padding)
    oh = (h - 1) * strides[0] - pt - pb + dilation[0] * (kh - 1) + 1 + output_padding[0]
    ow = (w - 1) * strides[1] - pl - pr + dilation[1] * (kw - 1) + 1 + output_padding[1]
    assume(oh > 0 and ow > 0)
    dtype = draw(DTYPES)
    data_layout = draw(st.sampled_from(["NCHW"] * 5 + ["NHWC"]))
    kernel_layout = draw(st.sampled_from(["IOHW", "IOHW", "OIHW", "HWOI"]))
    n = draw(st.integers(1, 3))
    data = _rand(rng, _shape(n, c, h, w, data_layout), dtype)
    weight = from_canonical(_rand(rng, (c, og, kh, kw), dtype), kernel_layout, "IOHW")
    attrs = {"strides": strides, "padding": padding, "dilation": dilation, "groups": groups,
             "output_padding": output_padding, "data_layout": data_layout,
             "kernel_layout": kernel_layout, "channels": og * groups,
             "kernel_size": (kh, kw)}
    if draw(st.booleans()):
        attrs["out_dtype"] = dtype
    return [data, np.ascontiguousarray(weight)], attrs


@settings(max_examples=120, deadline=None)
@given(case=transpose_cases())
def test_conv2d_transpose_matches_reference(case: tuple) -> None:
    args, attrs = case
    check_kernel("nn.conv2d_transpose", args, attrs, **TOL)


def test_conv2d_transpose_weight_view_and_out_dtype_fallback() -> None:
    """A non-contiguous weight view is read as is; a widening out_dtype runs the reference."""
    rng = np.random.default_rng(1)
    x = _rand(rng, (2, 4, 5, 5), "float32")
    w = _rand(rng, (3, 3, 2, 4), "float32").transpose(3, 2, 0, 1)  # (4, 2, 3, 3) IOHW view
    check_kernel("nn.conv2d_transpose", [x, w], {"strides": (2, 2), "padding": (1, 1)}, **TOL)
    want = check_kernel("nn.conv2d_transpose", [x, w], {"out_dtype": "float64"}, **TOL)
    assert want is not None and want.dtype == np.float64


# -- conv2d's weight gradient (the many-taps path of cpu_nn.conv2d) ----------------------------

@st.composite
def weight_grad_cases(draw: st.DrawFn) -> tuple[list, dict]:
    """The conv2d AD's ``_conv2d_rev`` emits for a conv2d of x (N, C, H, W) by an OIHW weight:
    data transpose(x) (C, N, H, W), weight transpose(g) (O, N, OH, OW), strides and dilation
    swapped."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n, c, o = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(PADDING))
    pt, pl, pb, pr = pad4(padding)
    h, w = draw(st.integers(4, 14)), draw(st.integers(4, 14))
    oh = (h + pt + pb - ((kh - 1) * dilation[0] + 1)) // strides[0] + 1
    ow = (w + pl + pr - ((kw - 1) * dilation[1] + 1)) // strides[1] + 1
    assume(oh > 0 and ow > 0)
    dtype = draw(st.sampled_from(["float32", "float64"]))
    data = _rand(rng, (c, n, h, w), dtype)
    weight = _rand(rng, (o, n, oh, ow), dtype)
    attrs = {"strides": dilation, "dilation": strides, "padding": padding}
    return [data, weight], attrs


@settings(max_examples=80, deadline=None)
@given(case=weight_grad_cases())
def test_conv2d_weight_gradient_matches_reference(case: tuple) -> None:
    args, attrs = case
    check_kernel("nn.conv2d", args, attrs, **TOL)


def test_the_training_steps_weight_gradients_take_the_many_taps_path() -> None:
    """The benchmark CNN's two weight gradients (benchmarks/autodiff.py) are many-taps
    convolutions, and equal the reference."""
    rng = np.random.default_rng(2)
    for (c, n, s), o in (((1, 4, 28), 8), ((8, 4, 14), 16)):
        args = [_rand(rng, (c, n, s, s), "float32"), _rand(rng, (o, n, s, s), "float32")]
        attrs = {"padding": (1, 1, 1, 1)}
        geo = type("Geo", (), {"groups": 1, "kh": s, "kw": s, "oh": 3, "ow": 3})
        assert cpu_grad.many_taps(geo)
        want = check_kernel("nn.conv2d", args, attrs, rtol=1e-4, atol=1e-3)
        assert want is not None and want.shape == (c, o, 3, 3)


# -- nn.max_pool2d_grad / nn.avg_pool2d_grad ---------------------------------------------

@st.composite
def pool_grad_cases(draw: st.DrawFn, avg: bool) -> tuple[list, dict]:
    """(args, attrs) of a pool gradient: out_grad of the pooled shape, and the data, with
    many ties (small integers), sometimes -inf and NaN (max)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(PADDING))
    pt, pl, pb, pr = pad4(padding)
    h = max(1, (kh - 1) * dilation[0] + 1 - pt - pb) + draw(st.integers(0, 5))
    w = max(1, (kw - 1) * dilation[1] + 1 - pl - pr) + draw(st.integers(0, 5))
    layout = draw(st.sampled_from(["NCHW", "NCHW", "NCHW", "NHWC", "NHWC", "CHWN"]))
    attrs = {"pool_size": (kh, kw), "strides": strides, "dilation": dilation,
             "padding": padding, "layout": layout, "ceil_mode": draw(st.booleans())}
    if avg:
        attrs["count_include_pad"] = draw(st.booleans())
    dtype = draw(st.sampled_from(["float32", "float64"]))
    shape = _shape(draw(st.integers(1, 3)), draw(st.integers(1, 3)), h, w, layout)
    data = rng.integers(-2, 3, shape).astype(dtype)  # ties in most windows
    if not avg and draw(st.booleans()):
        special = rng.random(shape)
        data[special < 0.15] = -np.inf
        data[special > 0.95] = np.nan
    pool = "nn.avg_pool2d" if avg else "nn.max_pool2d"
    pooled = get_op(pool).reference([data], make_attrs(pool, attrs))
    return [_rand(rng, pooled.shape, dtype), data], attrs


@settings(max_examples=120, deadline=None)
@given(case=pool_grad_cases(avg=False))
def test_max_pool2d_grad_matches_reference(case: tuple) -> None:
    args, attrs = case
    check_kernel("nn.max_pool2d_grad", args, attrs, **TOL)


@settings(max_examples=120, deadline=None)
@given(case=pool_grad_cases(avg=True))
def test_avg_pool2d_grad_matches_reference(case: tuple) -> None:
    args, attrs = case
    check_kernel("nn.avg_pool2d_grad", args, attrs, **TOL)


@pytest.mark.parametrize("dilation", [(1, 1), (2, 1)])
@pytest.mark.parametrize("padding", [(0, 0), (1, 1)])
def test_max_pool2d_grad_2x2_ties_nan_and_inf(dilation: tuple, padding: tuple) -> None:
    """The unrolled 2x2 window path: ties go to the first maximum, the first NaN wins, a
    window of -inf sends its gradient to its first in-bounds tap."""
    rng = np.random.default_rng(4)
    x = rng.integers(-1, 2, (2, 3, 8, 8)).astype("float32")
    x[0, 0, :2, :2] = -np.inf
    x[0, 1, 2:4, 2:4] = [[1.0, np.nan], [np.nan, 5.0]]
    x[1, 2, 4, 4] = np.nan
    attrs = {"pool_size": (2, 2), "strides": (2, 2), "dilation": dilation,
             "padding": padding}
    pooled = get_op("nn.max_pool2d").reference([x], make_attrs("nn.max_pool2d", attrs))
    g = _rand(rng, pooled.shape, "float32")
    check_kernel("nn.max_pool2d_grad", [g, x], attrs, **TOL)


@pytest.mark.parametrize("op", ["nn.max_pool2d_grad", "nn.avg_pool2d_grad"])
def test_pool_grad_windows_entirely_in_padding(op: str) -> None:
    """Padding wider than the window: corner windows see no input and give nothing back."""
    rng = np.random.default_rng(0)
    x = _rand(rng, (1, 3, 2, 2), "float32")
    g = _rand(rng, (1, 3, 3, 3), "float32")
    want = check_kernel(op, [g, x], {"pool_size": (2, 2), "strides": (3, 3),
                                     "padding": (3, 3, 3, 3)}, **TOL)
    assert want is not None and want.shape == x.shape


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_split_over_tasks_covers_every_plane(threads: int) -> None:
    """With more threads the pools' gradients split the planes into blocks (the last one
    shorter), conv2d_transpose into (image, group) tasks: the result does not change."""
    rng = np.random.default_rng(7)
    x = rng.integers(-2, 3, (3, 5, 7, 6)).astype("float64")
    pool = {"pool_size": (3, 2), "strides": (2, 1), "padding": (1, 0, 1, 1)}
    g = _rand(rng, (3, 5, 4, 6), "float64")
    before = parallel.threads()
    parallel.set_threads(threads)
    try:
        check_kernel("nn.max_pool2d_grad", [g, x], pool, **TOL)
        check_kernel("nn.avg_pool2d_grad", [g, x], pool, **TOL)
        w = _rand(rng, (6, 2, 3, 3), "float64")
        check_kernel("nn.conv2d_transpose", [_rand(rng, (3, 6, 4, 5), "float64"), w],
                     {"groups": 2, "strides": (2, 1)}, **TOL)
    finally:
        parallel.set_threads(before)


@pytest.mark.parametrize("limit", [0, 1 << 30])
def test_temporaries_fresh_or_reused(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """Column and patch temporaries come from the thread's reused buffer, or fresh above
    the size limit; a smaller call after a larger one reuses a prefix: same values."""
    monkeypatch.setattr(cpu_grad, "SCRATCH_MAX_BYTES", limit)
    rng = np.random.default_rng(8)
    for s in (9, 5):
        x, w = _rand(rng, (2, 4, s, s), "float32"), _rand(rng, (4, 3, 3, 3), "float32")
        check_kernel("nn.conv2d_transpose", [x, w], {"padding": (1, 1)}, **TOL)
        args = [_rand(rng, (3, 2, s, s), "float64"), _rand(rng, (4, 2, s, s), "float64")]
        check_kernel("nn.conv2d", args, {"padding": (1, 1)}, **TOL)


# -- a CNN's gradient, compiled -----------------------------------------------------------

CNN = """
def @main(%x: Tensor[(2, 4, 9, 9), float64], %w1: Tensor[(6, 2, 3, 3), float64],
          %w2: Tensor[(4, 6, 2, 2), float64], %y: Tensor[(2, 4, 6, 4), float64]) -> float64 {
  let %c1 = nn.relu(nn.conv2d(%x, %w1, strides=[2, 1], padding=[1, 0, 2, 1], groups=2));
  let %p1 = nn.max_pool2d(%c1, pool_size=[2, 3], strides=[1, 2], padding=[1, 1],
                          ceil_mode=True);
  let %c2 = nn.conv2d(%p1, %w2, dilation=[1, 2]);
  let %p2 = nn.avg_pool2d(%c2, pool_size=[2, 2], strides=[1, 1], padding=[1, 1],
                          count_include_pad=True);
  sum(%p2 * %y)
}"""


def test_compiled_cnn_gradient_equals_evaluate() -> None:
    """A strided, padded, grouped, dilated conv/pool CNN: the compiled gradient (these
    kernels) equals the interpreter's (the references)."""
    mod = rr.gradient(rr.parse(CNN), "first_order")
    main = mod["main"]
    shapes = [tuple(int(d) for d in p.type_annotation.shape) for p in main.params]
    rng = np.random.default_rng(5)
    args = [rng.normal(size=s) for s in shapes]
    want_value, want_grads = rr.evaluate(mod, *args)
    value, grads = rr.compile(mod)(*args)
    np.testing.assert_allclose(value, want_value, rtol=1e-10)
    for got, want in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)
    assert all(np.abs(g).max() > 1e-3 for g in grads)


def test_compiled_cnn_gradient_equals_jax() -> None:
    """The same CNN's gradients through ``rr.compile`` against ``jax.grad``."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp, lax = jax.numpy, jax.lax

    def loss(x, w1, w2, y):
        c1 = jax.nn.relu(lax.conv_general_dilated(
            x, w1, (2, 1), ((1, 2), (0, 1)), feature_group_count=2,
            dimension_numbers=("NCHW", "OIHW", "NCHW")))
        # ceil_mode: one extra bottom row and right column of -inf
        p1 = lax.reduce_window(c1, -jnp.inf, lax.max, (1, 1, 2, 3), (1, 1, 1, 2),
                               ((0, 0), (0, 0), (1, 1), (1, 2)))
        c2 = lax.conv_general_dilated(p1, w2, (1, 1), ((0, 0), (0, 0)), rhs_dilation=(1, 2),
                                      dimension_numbers=("NCHW", "OIHW", "NCHW"))
        p2 = lax.reduce_window(c2, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 1, 1),
                               ((0, 0), (0, 0), (1, 1), (1, 1))) / 4
        return jnp.sum(p2 * y)

    mod = rr.gradient(rr.parse(CNN), "first_order")
    shapes = [tuple(int(d) for d in p.type_annotation.shape) for p in mod["main"].params]
    rng = np.random.default_rng(6)
    args = [rng.normal(size=s) for s in shapes]
    value, grads = rr.compile(mod)(*args)
    want_value, want_grads = jax.value_and_grad(loss, argnums=(0, 1, 2, 3))(*args)
    np.testing.assert_allclose(value, want_value, rtol=1e-9)
    for got, want in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)
