"""Converter of ONNX's Attention (23, 24, 25), composed from Relay ops as ONNX's function
body defines it (scaled dot-product attention, with grouped-query heads, a KV cache, masks
and a soft cap).

With Q (B, Hq, Sq, D), K (B, Hkv, Skv, D), V (B, Hkv, Skv, Dv) -- 3-D inputs (B, S, H*D)
are split into heads first and the output merged back:

    s        = sqrt(scale)            (scale default 1/sqrt(D), cast to Q's dtype)
    K, V     = concat(past, K / V) on axis 2 when a cache is given: also outputs 1 and 2
    K, V     = each KV head repeated Hq/Hkv times (grouped-query attention)
    qk       = (Q*s) @ (K*s)^T        then softcap*tanh(qk/softcap) when softcap > 0
    bias     = mask (bool: 0 / -inf; padded with -inf to Skv) + causal + window + padding
    P        = softmax(qk + bias) over the last axis; rows whose bias is all -inf are 0
    Y        = P @ V

The causal and sliding-window terms are constants of the static (Sq, Skv) when their offset
is a number (the cache length or 0); with ``nonpad_kv_seqlen`` (24+) and no cache they are
computed per batch from it. Output 3 is qk (after the soft cap) for modes 0 and 1, qk +
bias for mode 2, P for mode 3: what ONNX's reference implementation and the node tests'
expected outputs do (the operator's documentation puts the bias at mode 1 and the soft
cap at mode 2).
"""

from __future__ import annotations

import math

import numpy as np

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext
from relay_ref.frontend.onnx.dtypes import promote, relay_dtype
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr


def _heads(ctx: NodeContext, x: Expr, heads: int, what: str) -> Expr:
    """(B, S, H*D) -> (B, H, S, D)."""
    b, s, hidden = ctx.builder.tensor_type(x).shape
    if not all(isinstance(d, int) for d in (b, s, hidden)) or heads <= 0 or hidden % heads:
        raise ConvertError(f"{what} of shape ({b}, {s}, {hidden}) does not split into "
                           f"{heads} heads")
    x = ctx.call("reshape", x, newshape=[b, s, heads, hidden // heads])
    return ctx.call("transpose", x, axes=[0, 2, 1, 3])


def _bmm(ctx: NodeContext, a: Expr, b: Expr, transpose_b: bool) -> Expr:
    """a @ b (or a @ b^T) over 4-D tensors of equal leading dims."""
    sa = ctx.builder.tensor_type(a).shape
    sb = ctx.builder.tensor_type(b).shape
    if not all(isinstance(d, int) for d in (*sa, *sb)):
        raise ConvertError("Attention needs static shapes")
    lead = [int(d) for d in sa[:2]]
    n = math.prod(lead)
    a3 = ctx.call("reshape", a, newshape=[n, int(sa[2]), int(sa[3])])
    b3 = ctx.call("reshape", b, newshape=[n, int(sb[2]), int(sb[3])])
    y = ctx.call("nn.batch_matmul", a3, b3, transpose_b=transpose_b)
    rows, cols = int(sa[2]), int(sb[2]) if transpose_b else int(sb[3])
    return ctx.call("reshape", y, newshape=[*lead, rows, cols])


def _allowed(sq: int, skv: int, offset: int, left: int, right: int,
             causal: bool) -> np.ndarray:
    """Which keys j each query i attends, with the frontier at i + offset."""
    diff = (np.arange(sq)[:, None] + offset) - np.arange(skv)[None, :]
    ok = np.ones((sq, skv), dtype=bool)
    if causal:
        ok &= diff >= 0
    if left >= 0:
        ok &= diff <= left
    if right >= 0:
        ok &= -diff <= right
    return ok


def _check(ctx: NodeContext) -> list[str]:
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    return [] if mode in (0, 1, 2, 3) else [f"qk_matmul_output_mode={mode}"]


@converter("Attention", since=23, outputs=4, check=_check)
def attention(ctx: NodeContext) -> tuple[Expr, Expr | None, Expr | None, Expr | None]:
    q, k, v = ctx.need(0), ctx.need(1), ctx.need(2)
    mask, past_k, past_v = ctx.input(3), ctx.input(4), ctx.input(5)
    nonpad = ctx.input(6) if ctx.version >= 24 else None
    dtype = ctx.dtype(0)
    three_d = ctx.rank(0) == 3
    if three_d:
        hq, hkv = int(ctx.attr("q_num_heads", 0)), int(ctx.attr("kv_num_heads", 0))
        q, k, v = (_heads(ctx, q, hq, "Q"), _heads(ctx, k, hkv, "K"),
                   _heads(ctx, v, hkv, "V"))
    elif ctx.rank(0) != 4:
        raise ConvertError(f"Q must be 3-D or 4-D, found rank {ctx.rank(0)}")
    sq_shape = ctx.builder.tensor_type(q).shape
    batch, hq, sq, d = (int(x) for x in sq_shape)  # type: ignore[arg-type]
    scale = ctx.attr("scale")
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    s = ctx.const(np.array(np.sqrt(scale), dtype=dtype))

    if (past_k is None) != (past_v is None):
        raise ConvertError("past_key and past_value must be given together")
    past_len = 0
    if past_k is not None:
        past_len = int(ctx.builder.tensor_type(past_k).shape[2])  # type: ignore[arg-type]
        k = ctx.call("concatenate", ctx.builder.tuple(past_k, k), axis=2)
        v = ctx.call("concatenate", ctx.builder.tuple(past_v, v), axis=2)
    present_k, present_v = k, v
    hkv = int(ctx.builder.tensor_type(k).shape[1])  # type: ignore[arg-type]
    skv = int(ctx.builder.tensor_type(k).shape[2])  # type: ignore[arg-type]
    if hq != hkv:
        if hq % hkv:
            raise ConvertError(f"{hq} query heads are not a multiple of {hkv} KV heads")
        k = ctx.call("repeat", k, repeats=hq // hkv, axis=1)
        v = ctx.call("repeat", v, repeats=hq // hkv, axis=1)

    # A float mask of another type (U) than Q's: the scores are computed in the promoted
    # type of the two (a float32 mask over float16 Q: float32), as the reference does.
    score = dtype
    if mask is not None and ctx.dtype(3) not in ("bool", dtype):
        score = promote(dtype, ctx.dtype(3))
        if ctx.dtype(3) != score:
            mask = ctx.call("cast", mask, dtype=score)
    bias = _bias(ctx, mask, nonpad, score, batch, sq, skv, past_len)

    qk = _bmm(ctx, ctx.call("multiply", q, s), ctx.call("multiply", k, s), transpose_b=True)
    softcap = float(ctx.attr("softcap", 0.0))
    if softcap > 0:
        cap = ctx.scalar(softcap, dtype)
        qk = ctx.call("multiply", ctx.call("tanh", ctx.call("divide", qk, cap)), cap)
    scores = qk if score == dtype else ctx.call("cast", qk, dtype=score)
    with_bias = scores = scores if bias is None else ctx.call("add", scores, bias)
    if score != dtype:
        with_bias = ctx.call("cast", with_bias, dtype=dtype)
    precision = ctx.attr("softmax_precision")
    soft_dtype = relay_dtype(int(precision)) if precision is not None else score
    if soft_dtype and soft_dtype != score:
        scores = ctx.call("cast", scores, dtype=soft_dtype)
    p = ctx.call("nn.softmax", scores, axis=-1)
    if bias is not None:  # rows with no key to attend: 0, not NaN
        dead = ctx.call("equal", ctx.call("max", bias, axis=[-1], keepdims=True),
                        ctx.scalar(-np.inf, score))
        p = ctx.call("where", dead, ctx.call("zeros_like", p), p)
    if soft_dtype and soft_dtype != dtype:
        p = ctx.call("cast", p, dtype=dtype)
    y = _bmm(ctx, p, v, transpose_b=False)
    if three_d:
        y = ctx.call("transpose", y, axes=[0, 2, 1, 3])
        y = ctx.call("reshape", y, newshape=[batch, sq, -1])

    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    qk_out = {3: p, 2: with_bias}.get(mode, qk)
    return y, present_k, present_v, qk_out


def _bias(ctx: NodeContext, mask: Expr | None, nonpad: Expr | None, dtype: str, batch: int,
          sq: int, skv: int, past_len: int) -> Expr | None:
    """The additive bias (0 / -inf, or the float mask's values) broadcastable to
    (B, H, Sq, Skv), None when nothing masks."""
    ninf = ctx.scalar(-np.inf, dtype)
    bias = None
    if mask is not None:
        mt = ctx.builder.tensor_type(mask)
        if mt.dtype == "bool":
            mask = ctx.call("where", mask, ctx.call("zeros", shape=list(mt.shape),
                                                    dtype=dtype), ninf)
        width = mt.shape[-1]
        if not isinstance(width, int):
            raise ConvertError("the attention mask needs a static last dim")
        if width < skv:
            pads = [[0, 0]] * (len(mt.shape) - 1) + [[0, skv - width]]
            mask = ctx.call("nn.pad", mask, ninf, pad_width=pads)
        bias = mask
    causal = bool(int(ctx.attr("is_causal", 0)))
    left = int(ctx.attr("left_window_size", -1))
    right = int(ctx.attr("right_window_size", -1))
    if causal or left >= 0 or right >= 0:
        if nonpad is not None and past_len == 0:
            frontier = _per_batch_allowed(ctx, nonpad, sq, skv, left, right, causal)
        else:
            frontier = ctx.const(_allowed(sq, skv, past_len, left, right, causal))
        term = ctx.call("where", frontier, ctx.const(np.zeros((), dtype=dtype)), ninf)
        bias = term if bias is None else ctx.call("add", bias, term)
    if nonpad is not None:
        seq = ctx.const(np.arange(skv, dtype=ctx.builder.tensor_type(nonpad).dtype))
        keep = ctx.call("less", ctx.call("reshape", seq, newshape=[1, skv]),
                        ctx.call("reshape", nonpad, newshape=[batch, 1]))
        keep = ctx.call("reshape", keep, newshape=[batch, 1, 1, skv])
        term = ctx.call("where", keep, ctx.const(np.zeros((), dtype=dtype)), ninf)
        bias = term if bias is None else ctx.call("add", bias, term)
    return bias


def _per_batch_allowed(ctx: NodeContext, nonpad: Expr, sq: int, skv: int, left: int,
                       right: int, causal: bool) -> Expr:
    """(B, 1, Sq, Skv): the frontier of batch b at i + nonpad[b] - Sq."""
    it = ctx.builder.tensor_type(nonpad).dtype
    offset = ctx.call("subtract", ctx.call("reshape", nonpad, newshape=[-1, 1, 1, 1]),
                      ctx.scalar(sq, it))
    i = ctx.const(np.arange(sq, dtype=it).reshape(1, 1, sq, 1))
    j = ctx.const(np.arange(skv, dtype=it).reshape(1, 1, 1, skv))
    diff = ctx.call("subtract", ctx.call("add", i, offset), j)
    zero = ctx.scalar(0, it)
    ok = ctx.call("greater_equal", diff, zero) if causal else None
    for bound, sign in ((left, 1), (right, -1)):
        if bound >= 0:
            side = diff if sign > 0 else ctx.call("negative", diff)
            term = ctx.call("less_equal", side, ctx.scalar(bound, it))
            ok = term if ok is None else ctx.call("logical_and", ok, term)
    assert ok is not None
    return ok
