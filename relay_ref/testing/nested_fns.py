"""Programs whose types grow with their depth: nested functions, for the occurs check.

Each generator takes a depth ``n`` and returns the text of a module whose ``@main`` nests
``n`` functions (or ``n`` steps of a chain), so that the type of the outermost expression
has size proportional to ``n``. A type checker that re-walks the whole type at every level
(an occurs check or a resolution that does not share work, spec/typing.md 6.1) costs
``n**2`` on them; ``step_count`` at ``n`` and ``2n`` shows it (tests/typecheck/
test_occurs_growth.py), ``benchmarks/typecheck.py`` times them.

    >>> print(nested_fns(2, annotated=True))
    def @main() { fn (%x0: float32) { fn (%x1: float32) { %x0 } } }

Shapes marked "unknown" in ``NESTED_SHAPES`` leave a type nothing determines (a parameter
never used), so checking them ends with a located "cannot infer" error: that path (the
T-Resolve scan over every node's type) has to be linear too.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "NESTED_SHAPES", "UNKNOWN", "applied_closures", "curried_tuples", "higher_order_chain",
    "nested_fns", "ref_chain", "shared_tuples",
]


def nested_fns(n: int, annotated: bool = False) -> str:
    """``fn (%x0) { fn (%x1) { ... fn (%xn-1) { %x0 } } }``: the type of level ``k`` is a
    chain of ``n - k`` function types. Parameters are ``float32`` when ``annotated``; else
    ``%x1``... are never determined (a located error)."""
    ann = ": float32" if annotated else ""
    head = "".join(f"fn (%x{i}{ann}) {{ " for i in range(n))
    return f"def @main() {{ {head}%x0{' }' * n} }}"


def applied_closures(n: int) -> str:
    """``(fn (%x1) { (fn (%x2) { ... %x0 ... })(%x1) })(%x0)``: each closure is applied
    at once to the previous parameter; every parameter's type comes from its argument."""
    head = "".join(f"(fn (%x{i}) {{ " for i in range(1, n + 1))
    tail = "".join(f" }})(%x{i - 1})" for i in range(n, 0, -1))
    return f"def @main(%x0: float32) {{ {head}%x0{tail} }}"


def curried_tuples(n: int) -> str:
    """``fn (%x0: float32) { (%x0, fn (%x1: float32) { (%x1, ...) }) }``: a curried chain
    whose result type nests a pair per level."""
    head = "".join(f"fn (%x{i}: float32) {{ (%x{i}, " for i in range(n))
    return f"def @main() {{ {head}%x0{') }' * n} }}"


def higher_order_chain(n: int) -> str:
    """``fn (%f0, ..., %fn) { let %y1 = %f1(%f0); let %y2 = %f2(%f1); ... }``: each step
    binds the hole of ``%fi`` to a function type taking the previous one (whose type is the
    whole chain so far). The results are never determined (a located error)."""
    params = ", ".join(f"%f{i}" for i in range(n + 1))
    lets = "".join(f"let %y{i} = %f{i}(%f{i - 1}); " for i in range(1, n + 1))
    return f"def @main() {{ fn ({params}) {{ {lets}%y{n} }} }}"


def ref_chain(n: int) -> str:
    """``let %vi = ref_read(%ri); let %wi = if (%c) { %vi } else { (%vi-1, %vi-1) }``: the
    hole of ``%vi`` is already mentioned (``%ri`` is bound to ``ref(%vi)``) when it is bound
    to a pair of the previous one, so the occurs check cannot take its fresh-hole shortcut.
    The parameters' types stay unknown (a located error)."""
    params = ", ".join(f"%r{i}" for i in range(n + 1))
    body = "let %v0 = ref_read(%r0); " + "".join(
        f"let %v{i} = ref_read(%r{i}); "
        f"let %w{i} = if (%c) {{ %v{i} }} else {{ (%v{i - 1}, %v{i - 1}) }}; "
        for i in range(1, n + 1))
    return f"def @main(%c: bool) {{ fn ({params}) {{ {body}%w{n} }} }}"


def shared_tuples(n: int) -> str:
    """``let %xi = (%xi-1, %xi-1)``: the type of ``%xn`` is a DAG with ``2**n`` paths
    through ``n`` objects; a walk over types that does not memoise by identity never ends.
    ``%x0``'s type stays unknown (a located error)."""
    lets = "".join(f"let %x{i} = (%x{i - 1}, %x{i - 1}); " for i in range(1, n + 1))
    return f"def @main() {{ fn (%x0) {{ {lets}%x{n} }} }}"


#: The shapes by name: a function from a depth to module text.
NESTED_SHAPES: dict[str, Callable[[int], str]] = {
    "nested fn": nested_fns,
    "nested fn, annotated": lambda n: nested_fns(n, annotated=True),
    "applied closures": applied_closures,
    "curried tuples": curried_tuples,
    "higher-order chain": higher_order_chain,
    "ref chain": ref_chain,
    "shared tuples": shared_tuples,
}

#: The shapes whose checking ends with a "cannot infer" error.
UNKNOWN = frozenset({"nested fn", "higher-order chain", "ref chain", "shared tuples"})
