"""Training steps for the DTR runtime's tests (``tests/dtr/test_runtime*.py``): each a
module whose ``@main`` returns the loss and an SGD step of its weights, through
``gradient(@loss)`` (simplified by ``rr.compile``, spec/ad.md AD-Grad-Op), plus a recursive
TreeLSTM-style model over a tree ADT (closures and recursion: ``rr.gradient``'s
higher-order mode). ``MODELS[name]() -> (module, args)``; args are float32 arrays or ADT
values, drawn from a fixed seed. ``benchmarks/dtr.py`` builds its larger steps with the same
builders (``training_step``, ``resnet``, ``treelstm``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import relay_ref as rr
from relay_ref.interpreter.values import ConstructorValue


def _t(*shape: int) -> str:
    return f"Tensor[({', '.join(map(str, shape))},), float32]"


def arrays(shapes: list[tuple[int, ...]], seed: int, scale: float = 0.5) -> list[np.ndarray]:
    """float32 arrays of ``shapes``, normal with deviation ``scale``, from ``seed``."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * scale).astype("float32") for s in shapes]


def training_step(params: list[tuple[str, tuple[int, ...]]], weights: list[str],
                  body: str) -> str:
    """``@loss(params) { body }`` and ``@main``: the loss and an SGD step of ``weights``."""
    sig = ", ".join(f"%{n}: {_t(*s)}" for n, s in params)
    names = [n for n, _ in params]
    args = ", ".join("%" + n for n in names)
    updates = ", ".join(f"%{w} - 0.01f * %g.1.{names.index(w)}" for w in weights)
    return f"""def @loss({sig}) -> float32 {{ {body} }}
def @main({sig}) {{
  let %g = gradient(@loss)({args});
  (%g.0, ({updates},))
}}"""


def mlp() -> tuple[rr.IRModule, list[Any]]:
    params = [("x", (256, 32)), ("w1", (48, 32)), ("w2", (48, 48)), ("w3", (48, 48)),
              ("w4", (8, 48))]
    body = """let %h1 = nn.relu(nn.dense(%x, %w1));
      let %h2 = tanh(nn.dense(%h1, %w2));
      let %h3 = nn.relu(nn.dense(%h2, %w3));
      let %o = nn.dense(%h3, %w4);
      sum(%o * %o)"""
    return rr.parse(training_step(params, ["w1", "w2", "w3", "w4"], body)), \
        arrays([s for _, s in params], 1)


def cnn() -> tuple[rr.IRModule, list[Any]]:
    params = [("x", (4, 3, 12, 12)), ("w1", (8, 3, 3, 3)), ("gm", (8,)), ("b", (8,)),
              ("m", (8,)), ("v", (8,)), ("w2", (8, 8, 3, 3)), ("w3", (4, 8))]
    body = """let %c1 = nn.conv2d(%x, %w1, padding=[1, 1]);
      let %bn = nn.batch_norm(%c1, %gm, %b, %m, %v);
      let %r1 = nn.relu(%bn.0);
      let %c2 = nn.relu(nn.conv2d(%r1, %w2, padding=[1, 1]));
      let %p = nn.max_pool2d(%c2, pool_size=[2, 2], strides=[2, 2]);
      let %f = nn.global_avg_pool2d(%p);
      let %o = nn.dense(reshape(%f, newshape=[4, 8]), %w3);
      sum(%o * %o)"""
    args = arrays([s for _, s in params], 2)
    args[5] = np.abs(args[5]) + 0.5  # a positive variance
    return rr.parse(training_step(params, ["w1", "gm", "b", "w2", "w3"], body)), args


def resnet(blocks: int = 4, batch: int = 8, channels: int = 8, size: int = 12,
           scale: float = 0.2) -> tuple[rr.IRModule, list[Any]]:
    c = channels
    params = [("x", (batch, c, size, size))] + [(f"w{i}{j}", (c, c, 3, 3))
                                                 for i in range(blocks) for j in "ab"]
    lines, h = [], "%x"
    for i in range(blocks):
        lines.append(f"let %a{i} = nn.relu(nn.conv2d({h}, %w{i}a, padding=[1, 1]));")
        lines.append(f"let %h{i} = nn.relu(nn.conv2d(%a{i}, %w{i}b, padding=[1, 1]) + {h});")
        h = f"%h{i}"
    body = "\n      ".join(lines) + f"\n      sum({h} * {h})"
    weights = [n for n, _ in params[1:]]
    return rr.parse(training_step(params, weights, body)), arrays([s for _, s in params], 3, scale)


def attention() -> tuple[rr.IRModule, list[Any]]:
    s, d = 64, 16
    params = [("x", (s, d)), ("wq", (d, d)), ("wk", (d, d)), ("wv", (d, d)), ("wo", (d, d))]
    body = """let %q = nn.dense(%x, %wq);
      let %k = nn.dense(%x, %wk);
      let %v = nn.dense(%x, %wv);
      let %s = nn.softmax(nn.dense(%q, %k) * 0.25f);
      let %a = nn.dense(%s, transpose(%v));
      let %o = nn.dense(%a, %wo) + %x;
      let %n = nn.relu(%o);
      sum(%n * %n)"""
    return rr.parse(training_step(params, ["wq", "wk", "wv", "wo"], body)), \
        arrays([s_ for _, s_ in params], 4)


TREE = """
type Tree {{ Leaf(Tensor[({rows}, {width}), float32]), Node(Tree, Tree) }}
def @cell(%t: Tree, %wl: Tensor[({width}, {width}), float32],
          %wr: Tensor[({width}, {width}), float32]) -> Tensor[({rows}, {width}), float32] {{
  match (%t) {{
    Leaf(%v) => tanh(nn.dense(%v, %wl)),
    Node(%l, %r) => {{
      let %hl = @cell(%l, %wl, %wr);
      let %hr = @cell(%r, %wl, %wr);
      let %gate = sigmoid(nn.dense(%hl, %wr) + nn.dense(%hr, %wl));
      %gate * tanh(%hl + %hr) + (1f - %gate) * %hl
    }}
  }}
}}
def @main(%t: Tree, %wl: Tensor[({width}, {width}), float32],
          %wr: Tensor[({width}, {width}), float32]) -> float32 {{
  let %h = @cell(%t, %wl, %wr);
  sum(%h * %h)
}}"""


def treelstm(depth: int = 3, rows: int = 8, width: int = 16) -> tuple[rr.IRModule, list[Any]]:
    """A TreeLSTM-style cell by recursion over a complete binary tree of ``depth`` with
    ``(rows, width)`` leaves, differentiated by ``rr.gradient`` (higher-order mode:
    closures and recursion)."""
    mod = rr.gradient(rr.parse(TREE.format(rows=rows, width=width)))
    ctor = mod.constructors
    leaves = iter(arrays([(rows, width)] * (2 ** depth), 5))

    def build(d: int) -> Any:
        if d == 0:
            return ConstructorValue(ctor["Leaf"], (next(leaves),))
        return ConstructorValue(ctor["Node"], (build(d - 1), build(d - 1)))

    wl, wr = arrays([(width, width), (width, width)], 6, 0.3)
    return mod, [build(depth), wl, wr]


MODELS: dict[str, Callable[[], tuple[rr.IRModule, list[Any]]]] = {
    "mlp": mlp, "cnn": cnn, "resnet": resnet, "treelstm": treelstm, "attention": attention}


def leaves(value: Any) -> list[np.ndarray]:
    """Every tensor of a result (tuples, ADT values), in order."""
    out: list[np.ndarray] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (tuple, list)):
            stack.extend(reversed(v))
        elif hasattr(v, "fields"):
            stack.extend(reversed(v.fields))
        else:
            out.append(np.asarray(v))
    return out
