"""Converters of ONNX's loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss,
composed from Relay ops as ONNX's function bodies define them.

For scores ``x`` of shape (N, C, d1 ...) and class indices ``t`` of shape (N, d1 ...):

    loss[n, d]  = -x[n, t[n, d], d] * w[n, d]
    w[n, d]     = weight[t[n, d]] (1 without ``weight``), 0 where t[n, d] == ignore_index
    reduction   none: loss; sum: sum(loss); mean: sum(loss) / sum(w)

(the mean divides by the element count when neither ``weight`` nor ``ignore_index`` is
given, which is the same thing). SoftmaxCrossEntropyLoss is the same applied to
``log_softmax(x)`` over axis 1, with that as its optional second output. An ignored
position's class index is replaced by 0 before gathering, so any ``ignore_index`` value
(even out of [0, C)) is safe.
"""

from __future__ import annotations

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr

REDUCTIONS = ("none", "sum", "mean")


def _check(ctx: NodeContext) -> list[str]:
    reduction = str(ctx.attr("reduction", "mean"))
    return [] if reduction in REDUCTIONS else [f"reduction={reduction!r}"]


def _nll(ctx: NodeContext, x: Expr) -> Expr:
    """The loss of log-probabilities ``x`` against ``ctx``'s inputs 1 (classes) and 2
    (weight), with the node's ``ignore_index`` and ``reduction``."""
    target = ctx.need(1)
    if ctx.rank(0) < 2 or ctx.rank(1) != ctx.rank(0) - 1:
        raise ConvertError(f"scores of rank {ctx.rank(0)} do not fit classes of rank "
                           f"{ctx.rank(1)} (expected (N, C, d...) and (N, d...))")
    tdtype = ctx.dtype(1)
    ignore = ctx.attr("ignore_index")
    ignored = None
    if ignore is not None:
        ignored = ctx.call("equal", target, ctx.scalar(int(ignore), tdtype))
        target = ctx.call("where", ignored, ctx.call("zeros_like", target), target)
    picked = ctx.call("gather", x, ctx.call("expand_dims", target, axis=1, num_newaxis=1),
                      axis=1)
    loss = ctx.call("negative", ctx.call("squeeze", picked, axis=[1]))
    dtype = ctx.builder.tensor_type(x).dtype
    weight = ctx.input(2)
    w = None
    if weight is not None:
        w = ctx.call("take", weight, target, axis=0, mode="clip")
    if ignored is not None:
        keep = ctx.call("cast", ctx.call("logical_not", ignored), dtype=dtype)
        w = keep if w is None else ctx.call("multiply", w, keep)
    if w is not None:
        loss = ctx.call("multiply", loss, w)
    reduction = str(ctx.attr("reduction", "mean"))
    if reduction == "none":
        return loss
    total = ctx.call("sum", loss)
    if reduction == "sum":
        return total
    if w is None:
        return ctx.call("mean", loss)
    return ctx.call("divide", total, ctx.call("sum", w))


@converter("NegativeLogLikelihoodLoss", since=12, check=_check)
def negative_log_likelihood_loss(ctx: NodeContext) -> Expr:
    return _nll(ctx, ctx.need(0))


@converter("SoftmaxCrossEntropyLoss", since=12, outputs=2, check=_check)
def softmax_cross_entropy_loss(ctx: NodeContext) -> tuple[Expr, Expr]:
    """(loss, log_softmax(scores) over axis 1)."""
    log_prob = ctx.call("nn.log_softmax", ctx.need(0), axis=1)
    return _nll(ctx, log_prob), log_prob
