"""Generated logs in the paper's format for the tests (tests/dtr): the linear chain of
Theorem 3.1 (spec/dtr.md §9), unit size and unit cost."""

from __future__ import annotations

import math

from relay_ref.dtr.log import format_line


def chain_log(n: int, size: int = 1, time: int = 1) -> list[str]:
    """A forward pass t1 = f(t0), ..., tn = f(tn-1) over a constant t0, then a backward
    pass gn = df(tn); g(i-1) = b(t(i-1), gi), releasing gi and ti once used: every tensor
    ``size`` bytes, every call ``time`` ns. 2n + 1 calls."""
    lines = [format_line({"ANNOTATION": "START", "INSTRUCTION": "ANNOTATE"}),
             format_line({"INSTRUCTION": "CONSTANT", "NAME": "t0"}),
             format_line({"INSTRUCTION": "MEMORY", "MEMORY": str(size), "NAME": "t0"})]

    def call(name: str, args: list[str], res: str) -> None:
        lines.append(format_line({"ARGS": args, "INSTRUCTION": "CALL", "NAME": name,
                                  "RESULT": [res], "TIME": str(time)}))
        lines.append(format_line({"INSTRUCTION": "MEMORY", "MEMORY": str(size), "NAME": res}))
        lines.append(format_line({"ALIAS": "-1", "INSTRUCTION": "ALIAS", "NAME": res}))

    def release(name: str) -> None:
        lines.append(format_line({"INSTRUCTION": "RELEASE", "NAME": name}))

    for i in range(1, n + 1):
        call("f", [f"t{i - 1}"], f"t{i}")
    lines.append(format_line({"ANNOTATION": "BACKWARD", "INSTRUCTION": "ANNOTATE"}))
    call("df", [f"t{n}"], f"g{n}")
    for i in range(n, 0, -1):
        call("b", [f"t{i - 1}", f"g{i}"], f"g{i - 1}")
        release(f"g{i}")
        release(f"t{i}")
    return lines


def sqrt_budget(n: int, size: int = 1) -> int:
    """Theorem 3.1's budget, 2·ceil(sqrt(n)) tensors."""
    return 2 * math.ceil(math.sqrt(n)) * size


def residual_log(blocks: int = 4, act: int = 1000, weight: int = 100) -> list[str]:
    """A small residual network's training step written as the paper's PyTorch logs are
    (the artifact ships no licence, so its logs are not copied here; this follows their
    conventions): inputs and weights as CONSTANT + MEMORY, COPY of each argument before a
    CALL, RELEASE after, a multi-output batch norm (4 results), a view (``view`` with ALIAS
    0), an in-place ``relu_`` (MUTATE), COPY_FROM, START and BACKWARD annotations, TIME in
    nanoseconds as strings."""
    out = [format_line({"ANNOTATION": "START", "INSTRUCTION": "ANNOTATE"})]
    k = [0]

    def fresh() -> str:
        k[0] += 1
        return f"x{k[0]}"

    def const(size: int) -> str:
        n = fresh()
        out.append(format_line({"INSTRUCTION": "CONSTANT", "NAME": n}))
        out.append(format_line({"INSTRUCTION": "MEMORY", "MEMORY": str(size), "NAME": n}))
        return n

    def call(name: str, args: list[str], sizes: list[int], time: int,
             aliases: list[int] | None = None) -> list[str]:
        res = [fresh() for _ in sizes]
        out.append(format_line({"ARGS": args, "INSTRUCTION": "CALL", "NAME": name,
                                "RESULT": res, "TIME": str(time)}))
        for r, s, a in zip(res, sizes, aliases or [-1] * len(sizes), strict=True):
            out.append(format_line({"INSTRUCTION": "MEMORY", "MEMORY": str(s), "NAME": r}))
            out.append(format_line({"ALIAS": str(a), "INSTRUCTION": "ALIAS", "NAME": r}))
        return res

    def release(*names: str) -> None:
        out.extend(format_line({"INSTRUCTION": "RELEASE", "NAME": n}) for n in names)

    x = const(act)
    ws = [(const(weight), const(8), const(8)) for _ in range(blocks)]
    saved = []
    h = x
    for i, (w, g, b) in enumerate(ws):
        c = call("cudnn_convolution", [h, w], [act], 700_000 + 1000 * i)[0]
        y, m, v, r = call("cudnn_batch_norm", [c, g, b], [act, 8, 8, 8], 2_000_000)
        out.append(format_line({"ARGS": [y], "INSTRUCTION": "MUTATE", "MUTATE": [0],
                                "NAME": "relu_", "TIME": "600000"}))
        s = call("add", [y, h], [act], 30_000)[0]
        saved.append((h, c, y, w))
        release(m, v, r)
        h = s
    flat = call("view", [h], [0], 1_000, [0])[0]
    loss = call("sum", [flat], [8], 20_000)[0]
    out.append(format_line({"ANNOTATION": "BACKWARD", "INSTRUCTION": "ANNOTATE"}))
    grad = call("ones_like", [loss], [act], 10_000)[0]
    release(flat, loss)
    for h_in, c, y, w in reversed(saved):
        gy = call("threshold_backward", [grad, y], [act], 500_000)[0]
        gc = call("cudnn_batch_norm_backward", [gy, c], [act], 2_500_000)[0]
        gw = call("cudnn_convolution_backward_weight", [gc, h_in], [weight], 900_000)[0]
        gh = call("cudnn_convolution_backward_input", [gc, w], [act], 900_000)[0]
        ng = call("add", [gh, grad], [act], 30_000)[0]
        acc = fresh()
        out.append(format_line({"DST": acc, "INSTRUCTION": "COPY", "SRC": gw}))
        out.append(format_line({"DST": acc, "INSTRUCTION": "COPY_FROM", "SRC": gw}))
        release(gy, gc, gh, grad, y, c, gw, acc)
        grad = ng
    return out
