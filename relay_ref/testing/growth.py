"""Programs shaped like real networks, and a machine-independent measure of cost.

Real networks are DAGs with heavy sharing: every residual block uses its input twice, so a
chain of ``n`` blocks has ``2**n`` paths from the output to the input. A traversal that
walks paths instead of nodes (a missing ``visited`` set) is exponential on them. The
generators here build such programs as text, in the form TVM prints them (graph bindings
``%i = ...;``) and as ``let`` chains; ``step_count`` measures the work of a phase as the
number of Python lines it executes, which, unlike time, is the same on every machine
and every run, so tests can assert that the work grows linearly.

    >>> text = residual_chain(1000)
    >>> calls = step_count(lambda: rr.parse(text))
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = [
    "SHAPES", "branching_chain", "step_count", "closure_chain", "doubling_chain",
    "let_residual_chain", "nested_tuple", "residual_chain", "shadowing_chain",
]


def residual_chain(n: int, shape: str = "(8)") -> str:
    """``%i = add(%i-1, nn.relu(%i-1))``: ``n`` ResNet-style blocks, each node used twice."""
    lines = [f"def @main(%x: Tensor[{shape}, float32]) {{", "  %0 = add(%x, nn.relu(%x));"]
    lines += [f"  %{i} = add(%{i - 1}, nn.relu(%{i - 1}));" for i in range(1, n)]
    lines += [f"  %{n - 1}", "}"]
    return "\n".join(lines)


def doubling_chain(n: int) -> str:
    """``%k = add(%k-1, %k-1)``: ``2**n`` paths through ``n`` nodes (a scalar result)."""
    lines = ["def @main(%x: float32) {", "  %0 = add(%x, %x);"]
    lines += [f"  %{i} = add(%{i - 1}, %{i - 1});" for i in range(1, n)]
    lines += [f"  %{n - 1}", "}"]
    return "\n".join(lines)


def let_residual_chain(n: int, shape: str = "(8)") -> str:
    """The residual chain written with ``let``: each bound variable used twice."""
    lines = [f"def @main(%x0: Tensor[{shape}, float32]) {{"]
    lines += [f"  let %x{i} = add(%x{i - 1}, nn.relu(%x{i - 1}));" for i in range(1, n + 1)]
    lines += [f"  %x{n}", "}"]
    return "\n".join(lines)


def shadowing_chain(n: int, shape: str = "(8)") -> str:
    """The residual chain with every ``let`` rebinding the same name ``%x`` (as converters
    and hand-written code often do): a printer must rename ``n`` binders in linear time."""
    lines = [f"def @main(%x: Tensor[{shape}, float32]) {{"]
    lines += ["  let %x = add(%x, nn.relu(%x));"] * n
    lines += ["  %x", "}"]
    return "\n".join(lines)


def branching_chain(n: int, shape: str = "(8)") -> str:
    """Each node adds the three before it (DenseNet-like fan-in): each used three times."""
    lines = [f"def @main(%x: Tensor[{shape}, float32]) {{",
             "  %0 = nn.relu(%x);", "  %1 = add(%0, %x);", "  %2 = add(%1, %0);"]
    lines += [f"  %{i} = add(add(%{i - 1}, %{i - 2}), multiply(%{i - 3}, 0.5f));"
              for i in range(3, n)]
    lines += [f"  %{n - 1}", "}"]
    return "\n".join(lines)


def closure_chain(n: int, shape: str = "(8)") -> str:
    """Residual blocks computed inside closures that capture the shared running value:
    every block is ``let %fi = fn () { add(%xi, nn.relu(%xi)) }; let %x(i+1) = %fi();``."""
    lines = [f"def @main(%x0: Tensor[{shape}, float32]) {{"]
    for i in range(n):
        lines.append(f"  let %f{i} = fn () {{ add(%x{i}, nn.relu(%x{i})) }};")
        lines.append(f"  let %x{i + 1} = %f{i}();")
    lines += [f"  %x{n}", "}"]
    return "\n".join(lines)


def nested_tuple(n: int, shape: str = "(8)") -> str:
    """A tuple nested ``n`` deep, ``(((%x,),),)``, as a result (a value and a type ``n``
    deep: every walk over values and types must be iterative and linear)."""
    return (f"def @main(%x: Tensor[{shape}, float32]) {{\n  " + "(" * n + "%x" + ",)" * n
            + "\n}")


#: The shapes above by name, each a function from a size to program text with one tensor
#: (or, for ``doubling``, scalar) float32 parameter.
SHAPES: dict[str, Callable[[int], str]] = {
    "residual": residual_chain,
    "doubling": doubling_chain,
    "let_residual": let_residual_chain,
    "shadowing": shadowing_chain,
    "branching": branching_chain,
    "closure": closure_chain,
    "nested_tuple": nested_tuple,
}


class _StepCounter:
    """A trace function counting the lines executed (``line`` events) in every frame."""

    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps = 0

    def __call__(self, frame: Any, event: str, arg: Any) -> Any:
        self.steps += 1
        return self


_profile_lock = threading.Lock()


def step_count(fn: Callable[[], Any]) -> int:
    """The work ``fn()`` does, as the number of Python lines it executes (and frames it
    enters), on this thread and on threads started meanwhile (``evaluate`` runs on a
    deep-stack thread).

    Deterministic for deterministic code, so a test can compare it across sizes; unlike a
    count of calls it also sees a loop that goes quadratic inside one function. Work done
    in C (a NumPy kernel, a ``dict`` look-up) counts as the line that asked for it."""
    counter = _StepCounter()
    with _profile_lock:
        previous = sys.gettrace()
        threading.settrace(counter)
        sys.settrace(counter)
        try:
            fn()
        finally:
            sys.settrace(previous)
            threading.settrace(None)  # type: ignore[arg-type]
    return counter.steps
