"""Converters of ONNX's recurrent layers: RNN, GRU and LSTM (7, 14, 22), unrolled over the
(static) sequence length into Relay ops, as TVM's ONNX frontend did.

Per direction ``d`` (forward, reverse, or both for ``bidirectional``), with ``W[d]`` of
shape (G * H, input), ``R[d]`` (G * H, H), and biases ``B[d] = [Wb, Rb]``: the input
projection ``X W^T + Wb`` of every step is one ``nn.dense``; each step then adds ``h
R^T + Rb`` and applies ONNX's cell equations (gate orders: LSTM ``i o f c``, GRU ``z r
h``; GRU's ``linear_before_reset`` chooses where the reset gate applies; LSTM's peepholes
``P = [Pi, Po, Pf]``). ``clip`` bounds every activation's input to [-clip, clip]. With
``sequence_lens``, a step at or past a batch entry's length leaves its state unchanged and
writes 0 to ``Y``; the reverse direction, run from the last step down, so starts each
entry at its own last step with its initial state, as ONNX defines. Outputs:
``Y`` (seq, num_directions, batch, H), ``Y_h`` (num_directions, batch, H), LSTM's ``Y_c``;
``layout=1`` puts batch first in X, Y, the initial and final states.

Activations: every name ONNX lists, with its default alpha / beta (explicit
``activation_alpha`` / ``activation_beta`` are refused by the check).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                 "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
_ACTIVATIONS = ("Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
                "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus")


def _check(ctx: NodeContext) -> list[str]:
    out = []
    for name in ctx.attr("activations", []):
        if name not in _ACTIVATIONS:
            out.append(f"activation {name!r}")
    for key in ("activation_alpha", "activation_beta"):
        if ctx.attr(key) is not None:
            out.append(f"{key} (only each activation's default is supported)")
    if ctx.attr("direction", "forward") not in ("forward", "reverse", "bidirectional"):
        out.append(f"direction={ctx.attr('direction')!r}")
    if int(ctx.attr("input_forget", 0)):
        out.append("input_forget=1")
    return out


def _activation(ctx: NodeContext, name: str, dtype: str) -> Callable[[Expr], Expr]:
    def s(v: float) -> Expr:
        return ctx.scalar(v, dtype)

    match name:
        case "Sigmoid" | "Tanh":
            return lambda x: ctx.call(name.lower(), x)
        case "Relu":
            return lambda x: ctx.call("nn.relu", x)
        case "LeakyRelu":
            return lambda x: ctx.call("nn.leaky_relu", x, alpha=0.01)
        case "Affine":  # alpha 1, beta 0
            return lambda x: x
        case "ScaledTanh":  # alpha 1, beta 1
            return lambda x: ctx.call("tanh", x)
        case "HardSigmoid":
            return lambda x: ctx.call("clip", ctx.call("add", ctx.call("multiply", x, s(0.2)),
                                                       s(0.5)), a_min=0.0, a_max=1.0)
        case "ThresholdedRelu":
            return lambda x: ctx.call("where", ctx.call("greater", x, s(1.0)), x, s(0.0))
        case "Elu":
            return lambda x: ctx.call("where", ctx.call("less", x, s(0.0)),
                                      ctx.call("subtract", ctx.call("exp", x), s(1.0)), x)
        case "Softsign":
            return lambda x: ctx.call("divide", x,
                                      ctx.call("add", ctx.call("abs", x), s(1.0)))
        case "Softplus":
            return lambda x: ctx.call("log", ctx.call("add", ctx.call("exp", x), s(1.0)))
    raise ConvertError(f"activation {name!r}")


def _rows(ctx: NodeContext, x: Expr, k: int, size: int) -> Expr:
    """Rows (or, for 1-d x, elements) ``k * size ..< (k + 1) * size`` of ``x``."""
    return ctx.call("strided_slice", x, begin=[k * size], end=[(k + 1) * size], axes=[0])


def _recurrent(ctx: NodeContext) -> tuple[Expr, ...]:
    kind = ctx.node.op_type
    gates = _GATES[kind]
    layout = int(ctx.attr("layout", 0)) if ctx.version >= 14 else 0
    x = ctx.need(0)
    if layout:
        x = ctx.call("transpose", x, axes=[1, 0, 2])
    shape = ctx.static_shape(0, f"{kind}'s X")
    seq, batch, width = (shape[1], shape[0], shape[2]) if layout else shape
    dtype = ctx.dtype(0)
    w_shape = ctx.static_shape(1, "W")
    hidden = int(ctx.attr("hidden_size", w_shape[1] // gates))
    direction = ctx.attr("direction", "forward")
    n_dir = 2 if direction == "bidirectional" else 1
    lens = ctx.input(4)
    names = list(ctx.attr("activations", [])) or _DEFAULT_ACTS[kind] * n_dir
    per_dir = len(_DEFAULT_ACTS[kind])
    if len(names) != per_dir * n_dir:
        raise ConvertError(f"{len(names)} activations, expected {per_dir * n_dir}")
    clip = ctx.attr("clip")

    def state(i: int) -> Expr | None:
        s = ctx.input(i)
        if s is not None and layout:
            s = ctx.call("transpose", s, axes=[1, 0, 2])
        return s

    h0, c0 = state(5), state(6) if kind == "LSTM" else None
    flat = ctx.call("reshape", x, newshape=[seq * batch, width])
    ys, hs, cs = [], [], []
    for d in range(n_dir):
        w, r, b = _of(ctx, 1, d), _of(ctx, 2, d), _of(ctx, 3, d)
        p = _of(ctx, 7, d) if kind == "LSTM" else None
        assert w is not None and r is not None
        xw = ctx.call("nn.dense", flat, w, units=gates * hidden)
        if b is not None:
            xw = ctx.call("add", xw, _rows(ctx, b, 0, gates * hidden))
        xw = ctx.call("reshape", xw, newshape=[seq, batch, gates * hidden])
        rb = None if b is None else _rows(ctx, b, 1, gates * hidden)
        acts = [_activation(ctx, n, dtype) for n in names[d * per_dir:(d + 1) * per_dir]]
        if clip is not None:
            acts = [_clipped(ctx, f, float(clip)) for f in acts]
        zeros = ctx.const(np.zeros((batch, hidden), dtype))
        h = zeros if h0 is None else ctx.call("take", h0, ctx.const(np.int64(d)), axis=0)
        c = zeros if c0 is None else ctx.call("take", c0, ctx.const(np.int64(d)), axis=0)
        steps = range(seq - 1, -1, -1) if (direction == "reverse" or d == 1) else range(seq)
        out: list[Expr | None] = [None] * seq
        for t in steps:
            xt = ctx.call("take", xw, ctx.const(np.int64(t)), axis=0)
            cell = _CELLS[kind]
            h_new, c_new = cell(ctx, xt, h, c, r, rb, p, hidden, acts)
            if lens is not None:
                live = ctx.call("expand_dims", ctx.call(
                    "less", ctx.const(np.array(t, ctx.dtype(4))), lens), axis=1)
                out[t] = ctx.call("where", live, h_new, zeros)
                h_new = ctx.call("where", live, h_new, h)
                c_new = ctx.call("where", live, c_new, c)
            else:
                out[t] = h_new
            h, c = h_new, c_new
        ys.append(ctx.call("stack", ctx.builder.tuple(*out), axis=0))  # type: ignore[arg-type]
        hs.append(h)
        cs.append(c)
    y = ctx.call("stack", ctx.builder.tuple(*ys), axis=1)
    y_h = ctx.call("stack", ctx.builder.tuple(*hs), axis=0)
    y_c = ctx.call("stack", ctx.builder.tuple(*cs), axis=0)
    if layout:
        y = ctx.call("transpose", y, axes=[2, 0, 1, 3])
        y_h = ctx.call("transpose", y_h, axes=[1, 0, 2])
        y_c = ctx.call("transpose", y_c, axes=[1, 0, 2])
    return (y, y_h, y_c) if kind == "LSTM" else (y, y_h)


def _of(ctx: NodeContext, i: int, d: int) -> Expr | None:
    """Direction ``d``'s slice of input ``i`` (None when the input is absent)."""
    v = ctx.input(i)
    return None if v is None else ctx.call("take", v, ctx.const(np.int64(d)), axis=0)


def _clipped(ctx: NodeContext, f: Callable[[Expr], Expr], clip: float
             ) -> Callable[[Expr], Expr]:
    return lambda v: f(ctx.call("clip", v, a_min=-clip, a_max=clip))


def _projection(ctx: NodeContext, h: Expr, r: Expr, rb: Expr | None, k: int,
                hidden: int) -> Expr:
    """``h R_k^T + Rb_k`` for gate ``k``."""
    y = ctx.call("nn.dense", h, _rows(ctx, r, k, hidden), units=hidden)
    return y if rb is None else ctx.call("add", y, _rows(ctx, rb, k, hidden))


def _gate(ctx: NodeContext, xt: Expr, k: int, hidden: int) -> Expr:
    return ctx.call("strided_slice", xt, begin=[k * hidden], end=[(k + 1) * hidden],
                    axes=[1])


def _rnn_cell(ctx, xt, h, c, r, rb, p, hidden, acts):  # noqa: ANN001, ANN202
    (f,) = acts
    return f(ctx.call("add", xt, _projection(ctx, h, r, rb, 0, hidden))), c


def _gru_cell(ctx, xt, h, c, r, rb, p, hidden, acts):  # noqa: ANN001, ANN202
    f, g = acts
    z = f(ctx.call("add", _gate(ctx, xt, 0, hidden), _projection(ctx, h, r, rb, 0, hidden)))
    rr = f(ctx.call("add", _gate(ctx, xt, 1, hidden), _projection(ctx, h, r, rb, 1, hidden)))
    if int(ctx.attr("linear_before_reset", 0)):
        rec = ctx.call("multiply", rr, _projection(ctx, h, r, rb, 2, hidden))
    else:
        rec = _projection(ctx, ctx.call("multiply", rr, h), r, rb, 2, hidden)
    hh = g(ctx.call("add", _gate(ctx, xt, 2, hidden), rec))
    one = ctx.scalar(1.0, ctx.dtype(0))
    h_new = ctx.call("add", ctx.call("multiply", ctx.call("subtract", one, z), hh),
                     ctx.call("multiply", z, h))
    return h_new, c


def _lstm_cell(ctx, xt, h, c, r, rb, p, hidden, acts):  # noqa: ANN001, ANN202
    f, g, hf = acts

    def pre(k: int) -> Expr:
        return ctx.call("add", _gate(ctx, xt, k, hidden), _projection(ctx, h, r, rb, k, hidden))

    def peep(v: Expr, k: int, cell: Expr) -> Expr:
        return v if p is None else ctx.call("add", v, ctx.call("multiply", _rows(
            ctx, p, k, hidden), cell))

    i = f(peep(pre(0), 0, c))
    fg = f(peep(pre(2), 2, c))
    cc = g(pre(3))
    c_new = ctx.call("add", ctx.call("multiply", fg, c), ctx.call("multiply", i, cc))
    o = f(peep(pre(1), 1, c_new))
    return ctx.call("multiply", o, hf(c_new)), c_new


_CELLS = {"RNN": _rnn_cell, "GRU": _gru_cell, "LSTM": _lstm_cell}


@converter("RNN", since=7, static_inputs=(), outputs=2, check=_check)
def rnn(ctx: NodeContext) -> tuple[Expr, ...]:
    return _recurrent(ctx)


@converter("GRU", since=7, outputs=2, check=_check)
def gru(ctx: NodeContext) -> tuple[Expr, ...]:
    return _recurrent(ctx)


@converter("LSTM", since=7, outputs=3, check=_check)
def lstm(ctx: NodeContext) -> tuple[Expr, ...]:
    return _recurrent(ctx)
