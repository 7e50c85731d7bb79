"""FoldScaleAxis (TVM ``src/relay/transforms/fold_scale_axis.cc``): fold a per-channel
``multiply`` by a scale into the weights of the ``nn.conv2d`` / ``nn.conv3d`` / ``nn.dense``
next to it, so that (after FoldConstant) the multiplication costs nothing at run time. The
batch-norm scale that SimplifyInference leaves after a convolution is the main customer.

Two directions, each a *prepare* analysis and a *transform*, as TVM:

* **Backward** (``conv -> ... -> multiply(y, s)``, the batch-norm case). Prepare, bottom-up:
  a consumer (conv2d/conv3d/dense) offers to absorb a scale on its output channel axis; the
  offer passes up through ``nn.relu`` / ``nn.leaky_relu`` (then the scale must be a
  constant >= 0), ``add`` / ``subtract`` (of a per-channel term, or of two offering
  branches of the same shape) and ``nn.bias_add`` -- but only through nodes used exactly
  once. Transform: a ``multiply`` whose operand carries an offer, by a scale that broadcasts
  along exactly those axes, disappears; the scale is pushed down: the per-channel terms of
  ``add``/``bias_add`` are multiplied by it, and the consumer's weight becomes
  ``multiply(w, expand_dims(s, ...))`` on its output-channel axis.
* **Forward** (``multiply(x, s) -> ... -> conv``). Prepare, top-down (from users to
  producers): a conv2d/conv3d/dense asks for a scale on its input-channel axis; the request
  passes back through relu / leaky_relu (scale >= 0) and add/subtract (the other operand is
  divided by the scale); a node's request is the intersection of all its users' requests,
  so one user that cannot take a scale stops it. Transform: the ``multiply`` becomes a
  pending (value, scale) pair that flows to the consumer, whose weight is multiplied by the
  scale on its input-channel axis (output-channel axis for a depthwise conv).

Which convolutions: ``groups == 1`` or depthwise (O == groups, I == 1, TVM's rule), any plain
layout (NCHW/OIHW, NHWC/HWIO, ...; the channel axes are read from the layout strings);
``nn.dense`` with 2-d data. The weight's dtype must be the scale's.

What may be folded (``scale_value``, ``safe_product``), where TVM folds any scale:

* the scale is a constant (a constant subgraph counts: it is evaluated) whose elements are
  all finite and nonzero, and > 0 where it passes a relu. A zero scale is kept because
  ``(x . w) * 0`` is NaN where ``x . w`` overflows but ``x . (w * 0)`` is 0; an infinite
  one because ``w * inf`` turns the 0 of ``0 * w`` into NaN.
* every product the fold introduces -- the weight times the scale, a bias or an ``add``'s
  other operand times it (backward), an ``add``'s other operand divided by it (forward) --
  either cannot enlarge anything (a multiply by ``|s| <= 1``, a divide by ``|s| >= 1``) or
  is a constant of magnitude at most ``headroom`` (the square root of the largest finite
  value: 1.8e19 for float32); a constant product is computed now and must be finite, and
  nonzero where the operand is (no underflow to 0). So a product known only at run time
  is folded only when it cannot overflow whatever the operand is. Integer products always
  qualify (wrap-around multiplication is associative); integer division never (it rounds).

A multiply that fails either test stays as written. Other departures from TVM, all for
correctness: through ``add`` of two offering branches both branches' requirements count
(TVM keeps the left one's only, so it can push a negative scale through a relu on the
right); ``nn.dense`` only with 2-d data; a pending scale that a user cannot take is
re-applied there (TVM aborts: "outstanding scale"); TVM's forward rewriter also folds
``(a, b).0`` to ``a``, which is not done here (it would drop effects).

``FoldScaleAxis`` = ``BackwardFoldScaleAxis`` then ``ForwardFoldScaleAxis``. TVM appends
``FoldConstant``; here run it after (``// pass: FoldScaleAxis, FoldConstant``) to fold
``multiply(constant_weight, constant_scale)``.

Guarantee: the result type-checks with the same types and computes the same values up to
float rounding. In particular it never turns a finite result into inf or NaN through what
it folds, whatever the magnitudes of the weights and scales: no folded weight, bias or
quotient is infinite, NaN or underflowed to 0 (``dense(x, w) * 1e38`` with ``w = 4`` stays
as written: ``w * 1e38`` overflows), and none that enlarges values exceeds ``headroom``
(``dense(x, w) * 1e38`` with ``w = 1`` stays too: ``x = [4, -4]`` gives ``0 * 1e38 = 0``
but ``4e38 - 4e38`` is NaN). What remains is reassociation -- ``(x . w) * s`` becomes
``x . (w * s)``, ``x * s + b`` becomes ``(x + b / s) * s`` -- for data themselves beyond
``headroom / n`` (sums of ``n`` terms): there one program may overflow, or round, where
the other does not, as summing in another order may. Needs types (infers them when
absent). Linear in the number of distinct nodes (plus evaluating the constant scales and
products, as FoldConstant would); iterative (no recursion on deep graphs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from relay_ref.ir.expr import Call, Expr, Function, Op, children
from relay_ref.ir.module import IRModule
from relay_ref.ir.shape import is_symbolic
from relay_ref.ir.types import TensorType, Type
from relay_ref.ir.visitor import post_order
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.fold_constant import constant_value
from relay_ref.passes.pattern_utils import (
    expand_bias_to_match_axis,
    match_broadcast_to_left_axes,
    op_call,
    reshape_or_expand_to_match_axis,
)
from relay_ref.passes.pattern_utils import (
    tensor_type as _static_tensor_type,
)
from relay_ref.passes.rewrite import map_functions, with_children
from relay_ref.typecheck.infer import infer_types

Types = dict[Expr, Type]


@dataclass(frozen=True, slots=True)
class Message:
    """A scale that may be folded: along ``axes`` (sorted, non-empty) of the node's value;
    ``require_positive`` when it passes a relu (the scale must be a constant >= 0)."""

    axes: tuple[int, ...]
    require_positive: bool = False


def intersect(a: Message | None, b: Message | None) -> Message | None:
    """Both requests at once: common axes (None when there are none), either's sign rule."""
    if a is None or b is None:
        return None
    axes = tuple(sorted(set(a.axes) & set(b.axes)))
    return Message(axes, a.require_positive or b.require_positive) if axes else None


def _op_name(expr: Expr) -> str | None:
    if isinstance(expr, Call) and isinstance(expr.op, Op):
        return expr.op.name
    return None


# -- convolutions and dense: where the channel axes are ---------------------------------

@dataclass(frozen=True, slots=True)
class _ConvInfo:
    data_c: int  # C in data_layout
    out_c: int  # C in out_layout (data_layout when empty)
    ko: int  # O in kernel_layout
    ki: int  # I in kernel_layout
    kernel_ndim: int
    depthwise: bool


def _conv_info(call: Call, types: Types) -> _ConvInfo | None:
    """Channel axes of a foldable conv2d/conv3d: groups == 1 or depthwise, plain layouts,
    weight dtype = data dtype = output dtype (the scale's)."""
    attrs = call.attrs
    data, weight, out = (tensor_type(types, e) for e in (call.args[0], call.args[1], call))
    if data is None or weight is None or out is None:
        return None
    if not (data.dtype == weight.dtype == out.dtype):
        return None
    dl, kl = attrs.data_layout, attrs.kernel_layout
    ol = attrs.out_layout or dl
    if not (dl.isupper() and kl.isupper() and ol.isupper()):
        return None  # blocked layouts: not supported by nn.conv2d here
    o, i = weight.shape[kl.index("O")], weight.shape[kl.index("I")]
    depthwise = o == attrs.groups and i == 1
    if attrs.groups != 1 and not depthwise:
        return None
    return _ConvInfo(dl.index("C"), ol.index("C"), kl.index("O"), kl.index("I"), len(kl),
                     depthwise)


def _dense_ok(call: Call, types: Types) -> bool:
    data, weight, out = (tensor_type(types, e) for e in (call.args[0], call.args[1], call))
    return (data is not None and weight is not None and out is not None and data.ndim == 2
            and data.dtype == weight.dtype == out.dtype)


def tensor_type(types: Types, expr: Expr) -> TensorType | None:
    """``expr``'s tensor type when its dimensions are numbers or symbolic (issue 29: a
    symbolic batch folds as a static one does; the scaled axes must be numbers, which
    ``_match`` and ``_add_sub_fwd`` check); None for ``?`` dimensions or another type."""
    ty = types.get(expr)
    if isinstance(ty, TensorType) and all(isinstance(d, int) or is_symbolic(d)
                                          for d in ty.shape):
        return ty
    return _static_tensor_type(types, expr)


def _match(types: Types, lhs: Expr, rhs: Expr, axes: tuple[int, ...],
           rhs_value: Expr | None = None) -> tuple[bool, Expr | None]:
    tl, tr = tensor_type(types, lhs), tensor_type(types, rhs)
    if tl is None or tr is None or not all(isinstance(tl.shape[a], int) for a in axes
                                           if a < tl.ndim):
        return False, None
    return match_broadcast_to_left_axes(tl, tr, axes, rhs_value)


# -- what may be folded (see the module docstring) ----------------------------------------

def scale_value(scale: Expr, positive: bool) -> np.ndarray | None:
    """The value of a scale that may be folded: a constant (subgraph) of a float or integer
    dtype whose elements are all finite and nonzero (> 0 when ``positive``: it passes a
    relu). None for anything else: such a multiply stays as written."""
    value = constant_value(scale)
    if value is None or value.dtype.kind not in "fiu":
        return None
    if not np.all(np.isfinite(value)) or not np.all(value > 0 if positive else value != 0):
        return None
    return value


def headroom(dtype: np.dtype) -> float:
    """The largest magnitude an enlarged folded constant may have: the square root of the
    dtype's largest finite value (1.8e19 for float32), so that its products with data up
    to that size, and their short sums, stay finite."""
    return float(np.sqrt(np.finfo(dtype).max))


def safe_product(op: str, operand: Expr, shaped: Expr, scale: np.ndarray) -> bool:
    """Whether ``op(operand, shaped)`` -- a ``multiply`` or ``divide`` the fold introduces,
    ``shaped`` being the scale ``scale`` shaped to broadcast against ``operand`` -- is safe
    (floats): it either cannot enlarge anything (multiply by ``|s| <= 1``, divide by
    ``|s| >= 1``) or is a constant within ``headroom``; and a constant operand gives a
    product whose elements are all finite and nonzero where the operand's are (computed
    now, as FoldConstant will compute it). An operand known only at run time therefore
    needs a scale that cannot enlarge it. Integers: a multiply always (wrap-around
    products are associative), a divide never (it rounds)."""
    if scale.dtype.kind != "f":
        return op == "multiply"
    magnitude = np.abs(scale)
    shrinks = bool(np.all(magnitude <= 1) if op == "multiply" else np.all(magnitude >= 1))
    value = constant_value(operand)
    if value is None:
        return shrinks
    out = constant_value(op_call(op, operand, shaped))
    if out is None or not np.all(np.isfinite(out)):
        return False
    if np.any((out == 0) & np.broadcast_to(value != 0, out.shape)):
        return False  # underflowed to 0: the scale is lost for that element
    return shrinks or bool(np.all(np.abs(out) <= headroom(out.dtype)))


# == forward ===========================================================================

@dataclass(frozen=True, slots=True, eq=False)
class Scaled:
    """A pending scale (TVM's ``ScaledExpr``): the value is ``value`` times ``scale`` along
    ``axes``; ``plain`` is the same value computed without folding (used by a user that
    cannot take the scale); ``constant`` is the scale's value (``scale_value``)."""

    value: Expr
    scale: Expr
    axes: tuple[int, ...]
    plain: Expr
    constant: np.ndarray


def realize(x: Expr | Scaled) -> Expr:
    return x.plain if isinstance(x, Scaled) else x


ForwardPrep = Callable[[Call, Message | None, Types], list[Message | None]]
ForwardRewrite = Callable[[Call, list, Message | None, Types], "Expr | Scaled | None"]


def _relu_fwd_prep(call: Call, out: Message | None, types: Types) -> list[Message | None]:
    return [Message(out.axes, True) if out else None]


def _add_sub_fwd_prep(call: Call, out: Message | None, types: Types) -> list[Message | None]:
    lhs, rhs = call.args
    if out is not None:
        if _match(types, lhs, rhs, out.axes)[0]:
            return [out, None]
        if _match(types, rhs, lhs, out.axes)[0]:
            return [None, out]
    return [None, None]


def _conv_fwd_prep(call: Call, out: Message | None, types: Types) -> list[Message | None]:
    info = _conv_info(call, types)
    return [Message((info.data_c,)) if info else None, None]


def _dense_fwd_prep(call: Call, out: Message | None, types: Types) -> list[Message | None]:
    return [Message((1,)) if _dense_ok(call, types) else None, None]


#: Forward prepare rules: op -> (call, its request, types) -> requests to its arguments.
FORWARD_PREP: dict[str, ForwardPrep] = {
    "nn.relu": _relu_fwd_prep,  # relu(x * s) = relu(x) * s when s >= 0
    "nn.leaky_relu": _relu_fwd_prep,  # likewise
    "add": _add_sub_fwd_prep,  # x * s + b = (x + b / s) * s: the scaled side only
    "subtract": _add_sub_fwd_prep,  # likewise
    "nn.conv2d": _conv_fwd_prep,  # asks for a scale on the input channels
    "nn.conv3d": _conv_fwd_prep,  # likewise
    "nn.dense": _dense_fwd_prep,  # asks for a scale on the reduction axis
}


def _multiply_fwd(call: Call, args: list, msg: Message | None, types: Types) -> Scaled | None:
    if msg is None or any(isinstance(a, Scaled) for a in args):
        return None
    lhs, rhs = args
    plain = with_children(call, (call.op, lhs, rhs))
    for i, (value, other) in enumerate(((lhs, rhs), (rhs, lhs))):
        ok, scale = _match(types, call.args[i], call.args[1 - i], msg.axes, other)
        if ok and scale is not None:
            constant = scale_value(scale, msg.require_positive)
            if constant is not None:
                return Scaled(value, scale, msg.axes, plain, constant)
    return None


def _relu_fwd(call: Call, args: list, msg: Message | None, types: Types) -> Scaled | None:
    x = args[0]
    if not isinstance(x, Scaled):
        return None
    value = with_children(call, (call.op, x.value))
    return Scaled(value, x.scale, x.axes, with_children(call, (call.op, x.plain)),
                  x.constant)


def _add_sub_fwd(call: Call, args: list, msg: Message | None, types: Types) -> Scaled | None:
    lhs, rhs = args
    if isinstance(lhs, Scaled) == isinstance(rhs, Scaled):
        return None
    s = lhs if isinstance(lhs, Scaled) else rhs
    ty = tensor_type(types, call.args[0] if s is lhs else call.args[1])
    if ty is None or not all(isinstance(ty.shape[a], int) for a in s.axes if a < ty.ndim):
        return None
    scale = reshape_or_expand_to_match_axis(s.scale, ty.shape, s.axes)
    other = call.args[1] if s is lhs else call.args[0]
    if scale is None or not safe_product("divide", other, scale, s.constant):
        return None
    if s is lhs:
        value = with_children(call, (call.op, lhs.value, op_call("divide", rhs, scale)))
    else:
        value = with_children(call, (call.op, op_call("divide", lhs, scale), rhs.value))
    plain = with_children(call, (call.op, realize(lhs), realize(rhs)))
    return Scaled(value, s.scale, s.axes, plain, s.constant)


def _conv_fwd(call: Call, args: list, msg: Message | None, types: Types) -> Expr | None:
    data, weight = args
    info = _conv_info(call, types)
    if not isinstance(data, Scaled) or isinstance(weight, Scaled) or info is None:
        return None
    if data.axes != (info.data_c,):
        return None
    axis = info.ko if info.depthwise else info.ki
    scale = expand_bias_to_match_axis(data.scale, info.kernel_ndim, (axis,))
    if not safe_product("multiply", call.args[1], scale, data.constant):
        return None
    return with_children(call, (call.op, data.value, op_call("multiply", weight, scale)))


def _dense_fwd(call: Call, args: list, msg: Message | None, types: Types) -> Expr | None:
    data, weight = args
    if not isinstance(data, Scaled) or isinstance(weight, Scaled) or data.axes != (1,):
        return None
    if not safe_product("multiply", call.args[1], data.scale, data.constant):
        return None
    return with_children(call, (call.op, data.value, op_call("multiply", weight, data.scale)))


#: Forward transform rules: op -> (call, new args, its request, types) -> result or None.
FORWARD_REWRITE: dict[str, ForwardRewrite] = {
    "multiply": _multiply_fwd,  # multiply(x, s) -> pending (x, s) when requested
    "nn.relu": _relu_fwd,  # relu((x, s)) -> (relu(x), s)
    "nn.leaky_relu": _relu_fwd,  # likewise
    "add": _add_sub_fwd,  # (x, s) + b -> (x + b / s, s) when b / s is safe
    "subtract": _add_sub_fwd,  # likewise
    "nn.conv2d": _conv_fwd,  # conv((x, s), w) -> conv(x, w * s on I) when w * s is safe
    "nn.conv3d": _conv_fwd,  # likewise
    "nn.dense": _dense_fwd,  # dense((x, s), w) -> dense(x, w * s) when w * s is safe
}


def forward_fold(fn: Function, types: Types) -> Function:
    """ForwardFoldScaleAxis on one function (see the module docstring)."""
    order = list(post_order(fn))
    msgs: dict[int, Message | None] = {id(fn): None}

    def update(node: Expr, m: Message | None) -> None:
        key = id(node)
        msgs[key] = intersect(msgs[key], m) if key in msgs else m

    for node in reversed(order):  # every user before what it uses
        name = _op_name(node)
        if name in FORWARD_PREP:
            assert isinstance(node, Call)
            for arg, m in zip(node.args, FORWARD_PREP[name](node, msgs.get(id(node)), types),
                              strict=True):
                update(arg, m)
        else:
            for kid in children(node):
                update(kid, None)
    if not any(m is not None for m in msgs.values()):
        return fn

    done: dict[int, Expr | Scaled] = {}
    for node in order:
        kids = [done[id(k)] for k in children(node)]
        name = _op_name(node)
        if name in FORWARD_REWRITE:
            assert isinstance(node, Call)
            out = FORWARD_REWRITE[name](node, kids[1:], msgs.get(id(node)), types)
            if out is not None:
                done[id(node)] = out
                continue
        done[id(node)] = with_children(node, [realize(k) for k in kids])
    out = realize(done[id(fn)])
    assert isinstance(out, Function)
    return out


# == backward ==========================================================================

BackwardPrep = Callable[[Call, list[Message | None], Types], "tuple[Message, str] | None"]
#: (call, message, scale, side, types) -> (argument index, scale shaped for it) for each
#: argument the transform multiplies by the scale.
BackwardTransform = Callable[[Call, Message, Expr, str, Types], "tuple[tuple[int, Expr], ...]"]


def _relu_bwd_prep(call: Call, ins: list[Message | None], types: Types):
    return (Message(ins[0].axes, True), "") if ins[0] else None


def _add_sub_bwd_prep(call: Call, ins: list[Message | None], types: Types):
    lhs, rhs = call.args
    tl, tr = tensor_type(types, lhs), tensor_type(types, rhs)
    if tl is None or tr is None:
        return None
    a, b = ins
    if a and b and a.axes == b.axes and tl.shape == tr.shape:
        return Message(a.axes, a.require_positive or b.require_positive), "both"
    if a and _match(types, lhs, rhs, a.axes)[0]:
        return a, "lhs"
    if b and _match(types, rhs, lhs, b.axes)[0]:
        return b, "rhs"
    return None


def _bias_add_bwd_prep(call: Call, ins: list[Message | None], types: Types):
    data = tensor_type(types, call.args[0])
    m = ins[0]
    if m and data is not None and m.axes == (call.attrs.axis % data.ndim,):
        return m, ""
    return None


def _conv_bwd_prep(call: Call, ins: list[Message | None], types: Types):
    info = _conv_info(call, types)
    return (Message((info.out_c,)), "") if info else None


def _dense_bwd_prep(call: Call, ins: list[Message | None], types: Types):
    return (Message((1,)), "") if _dense_ok(call, types) else None


#: Backward prepare rules: op -> (call, its arguments' offers, types) -> its offer and,
#: for add/subtract, which side takes the scale ("both", "lhs", "rhs").
BACKWARD_PREP: dict[str, BackwardPrep] = {
    "nn.relu": _relu_bwd_prep,  # relu(y) * s = relu(y * s) when s >= 0
    "nn.leaky_relu": _relu_bwd_prep,  # likewise
    "add": _add_sub_bwd_prep,  # (y + b) * s = y * s + b * s
    "subtract": _add_sub_bwd_prep,  # likewise
    "nn.bias_add": _bias_add_bwd_prep,  # bias_add(y, b) * s = bias_add(y * s, b * s)
    "nn.conv2d": _conv_bwd_prep,  # conv(x, w) * s = conv(x, w * s on O)
    "nn.conv3d": _conv_bwd_prep,  # likewise
    "nn.dense": _dense_bwd_prep,  # dense(x, w) * s = dense(x, w * s on units)
}


def _nothing_bwd(call: Call, m: Message, scale: Expr, side: str,
                 types: Types) -> tuple[tuple[int, Expr], ...]:
    return ()


def _add_sub_bwd(call: Call, m: Message, scale: Expr, side: str,
                 types: Types) -> tuple[tuple[int, Expr], ...]:
    if side == "both":
        return ()
    scaled = 0 if side == "lhs" else 1  # the offering side; the other one is multiplied
    ty = tensor_type(types, call.args[scaled])
    assert ty is not None
    shaped = reshape_or_expand_to_match_axis(scale, ty.shape, m.axes)
    assert shaped is not None
    return ((1 - scaled, shaped),)


def _bias_add_bwd(call: Call, m: Message, scale: Expr, side: str,
                  types: Types) -> tuple[tuple[int, Expr], ...]:
    return ((1, scale),)


def _conv_bwd(call: Call, m: Message, scale: Expr, side: str,
              types: Types) -> tuple[tuple[int, Expr], ...]:
    info = _conv_info(call, types)
    assert info is not None
    return ((1, expand_bias_to_match_axis(scale, info.kernel_ndim, (info.ko,))),)


def _dense_bwd(call: Call, m: Message, scale: Expr, side: str,
               types: Types) -> tuple[tuple[int, Expr], ...]:
    return ((1, expand_bias_to_match_axis(scale, 2, (0,))),)


#: Backward transform rules: op -> which arguments of a node asked to absorb ``scale`` are
#: multiplied by it, and the scale shaped for each (the offering arguments absorb it in
#: turn, see ``_PASSES_TO``).
BACKWARD_TRANSFORM: dict[str, BackwardTransform] = {
    "nn.relu": _nothing_bwd,  # the input took the scale
    "nn.leaky_relu": _nothing_bwd,  # likewise
    "add": _add_sub_bwd,  # the non-offering side is multiplied by the scale
    "subtract": _add_sub_bwd,  # likewise
    "nn.bias_add": _bias_add_bwd,  # the bias is multiplied by the scale
    "nn.conv2d": _conv_bwd,  # the weight is multiplied on its O axis
    "nn.conv3d": _conv_bwd,  # likewise
    "nn.dense": _dense_bwd,  # the weight is multiplied on its units axis
}

#: Which arguments of an absorbing node absorb the scale in turn (by add's side).
_PASSES_TO: dict[str, Callable[[str], tuple[int, ...]]] = {
    "nn.relu": lambda side: (0,),
    "nn.leaky_relu": lambda side: (0,),
    "add": lambda side: {"both": (0, 1), "lhs": (0,), "rhs": (1,)}[side],
    "subtract": lambda side: {"both": (0, 1), "lhs": (0,), "rhs": (1,)}[side],
    "nn.bias_add": lambda side: (0,),
}


def _absorbable(node: Expr, m: Message, scale: Expr, constant: np.ndarray,
                offers: dict[int, tuple[Message, str]], types: Types) -> bool:
    """Whether every product that absorbing ``scale`` into ``node`` (and, through relu /
    add / bias_add, into the nodes below it) introduces is safe (``safe_product``)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        name = _op_name(cur)
        assert isinstance(cur, Call) and name is not None
        side = offers[id(cur)][1]
        for i, shaped in BACKWARD_TRANSFORM[name](cur, m, scale, side, types):
            if not safe_product("multiply", cur.args[i], shaped, constant):
                return False
        stack.extend(cur.args[i] for i in _PASSES_TO.get(name, lambda side: ())(side))
    return True


def backward_fold(fn: Function, types: Types) -> Function:
    """BackwardFoldScaleAxis on one function (see the module docstring)."""
    order = list(post_order(fn))
    uses: dict[int, int] = {}
    for node in order:
        for kid in children(node):
            uses[id(kid)] = uses.get(id(kid), 0) + 1
    offers: dict[int, tuple[Message, str]] = {}
    for node in order:  # prepare, bottom-up; only through nodes used once
        name = _op_name(node)
        if name in BACKWARD_PREP and uses.get(id(node), 0) == 1:
            assert isinstance(node, Call)
            ins = [offers[id(a)][0] if id(a) in offers else None for a in node.args]
            offer = BACKWARD_PREP[name](node, ins, types)
            if offer is not None:
                offers[id(node)] = offer
    if not offers:
        return fn

    # Decide, top-down, which multiplies go and which nodes absorb which scale.
    absorb: dict[int, tuple[Message, Expr]] = {}
    dropped: dict[int, int] = {}  # multiply -> index of the operand that replaces it
    for node in reversed(order):
        name = _op_name(node)
        if name is None:
            continue
        assert isinstance(node, Call)
        if name == "multiply":
            lhs, rhs = node.args
            if id(lhs) in offers:
                m = offers[id(lhs)][0]
                ok, scale = _match(types, lhs, rhs, m.axes, rhs)
                keep = 0
            elif id(rhs) in offers:
                m = offers[id(rhs)][0]
                ok, scale = _match(types, rhs, lhs, m.axes, lhs)
                keep = 1
            else:
                continue
            if not ok or scale is None:
                continue
            constant = scale_value(scale, m.require_positive)
            if constant is not None and _absorbable(node.args[keep], m, scale, constant,
                                                    offers, types):
                dropped[id(node)] = keep
                absorb[id(node.args[keep])] = (m, scale)
        elif id(node) in absorb and name in _PASSES_TO:
            m, scale = absorb[id(node)]
            for i in _PASSES_TO[name](offers[id(node)][1]):
                absorb[id(node.args[i])] = (m, scale)

    done: dict[int, Expr] = {}
    for node in order:
        kids = [done[id(k)] for k in children(node)]
        name = _op_name(node)
        if id(node) in dropped:
            done[id(node)] = kids[1 + dropped[id(node)]]
        elif id(node) in absorb:
            assert isinstance(node, Call) and name is not None
            m, scale = absorb[id(node)]
            args = kids[1:]
            for i, shaped in BACKWARD_TRANSFORM[name](node, m, scale, offers[id(node)][1],
                                                      types):
                args[i] = op_call("multiply", args[i], shaped)
            done[id(node)] = with_children(node, (node.op, *args))
        else:
            done[id(node)] = with_children(node, kids)
    out = done[id(fn)]
    assert isinstance(out, Function)
    return out


# == the passes ========================================================================

def _run(mod: IRModule, fold: Callable[[Function, Types], Function]) -> IRModule:
    if not mod.checked_types:
        mod = infer_types(mod)
    types = mod.checked_types
    return map_functions(mod, lambda name, fn: fold(fn, types))


@register_pass
class BackwardFoldScaleAxis(Pass):
    """Fold ``multiply`` by a per-channel scale into the conv/dense before it."""

    name = "BackwardFoldScaleAxis"
    idempotent = True
    opt_level = 3

    def __call__(self, mod: IRModule) -> IRModule:
        return _run(mod, backward_fold)


@register_pass
class ForwardFoldScaleAxis(Pass):
    """Fold ``multiply`` by a per-channel scale into the conv/dense after it."""

    name = "ForwardFoldScaleAxis"
    idempotent = True
    opt_level = 3

    def __call__(self, mod: IRModule) -> IRModule:
        return _run(mod, forward_fold)


@register_pass
class FoldScaleAxis(Pass):
    """``BackwardFoldScaleAxis``, ``ForwardFoldScaleAxis``, then ``FoldConstant``, as TVM's
    ``FoldScaleAxis`` (src/relay/transforms/fold_scale_axis.cc: a ``Sequential`` of the
    three), so constant weights come out already scaled."""

    name = "FoldScaleAxis"
    idempotent = True
    opt_level = 3

    def __call__(self, mod: IRModule) -> IRModule:
        from relay_ref.passes.fold_constant import FoldConstant

        return FoldConstant()(ForwardFoldScaleAxis()(BackwardFoldScaleAxis()(mod)))
