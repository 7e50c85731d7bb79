"""Inline (TVM's ``inline.cc``): inline calls of globals marked ``Inline=1``.

Guarantee. Every call ``@g(a1, ..., an)`` of a global ``@g`` whose function has the
attribute ``Inline`` set (non-zero) and which is not recursive (``@g`` cannot reach itself
through the globals it mentions) is replaced by ``let %p1 = a1; ...; let %pn = an; body``
with a fresh copy of ``@g``'s parameters and body, so arguments are evaluated once, left to
right, before the body, as in a call. Calls inside inlined bodies are inlined too. A global
marked ``Inline`` that is no longer mentioned anywhere afterwards is removed (as TVM does),
except ``@main``. The result type-checks with the same types and gives the same values.

Never inlined: recursive globals (directly or mutually), polymorphic globals (their
parameter annotations mention type parameters that mean nothing at the call site), uses of
``@g`` that are not calls (``@g`` passed as a value stays a reference).
``max_size`` (off by default) also inlines unmarked non-recursive globals of at most that
many nodes.

Cost: linear in the size of the result (inlined bodies are copies).
"""

from __future__ import annotations

from dataclasses import replace

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import Call, Expr, Function, GlobalVar, Let
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import post_order
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.rewrite import fresh_copy, rewrite


def _mentions(fn: Function) -> set[str]:
    return {n.name for n in post_order(fn) if isinstance(n, GlobalVar)}


def recursive_globals(mod: IRModule) -> set[str]:
    """Globals that can reach themselves through the globals they mention."""
    edges = {name: _mentions(fn) & set(mod.functions) for name, fn in mod.functions.items()}
    out = set()
    for start in edges:
        seen: set[str] = set()
        stack = list(edges[start])
        while stack:
            g = stack.pop()
            if g == start:
                out.add(start)
                break
            if g not in seen:
                seen.add(g)
                stack.extend(edges[g])
    return out


@register_pass
class Inline(Pass):
    """Inline globals marked ``Inline=1`` (see the module docstring)."""

    name = "Inline"
    idempotent = True
    opt_level = 1

    def __init__(self, max_size: int | None = None) -> None:
        self.max_size = max_size

    def candidates(self, mod: IRModule) -> set[str]:
        recursive = recursive_globals(mod)
        out = set()
        for name, fn in mod.functions.items():
            if name in recursive or fn.type_params:
                continue
            marked = bool(fn.attr("Inline", 0))
            small = (self.max_size is not None and name != "main"
                     and sum(1 for _ in post_order(fn)) <= self.max_size)
            if marked or small:
                out.add(name)
        return out

    def __call__(self, mod: IRModule) -> IRModule:
        inline = self.candidates(mod)
        if not inline:
            return mod
        done: dict[str, Function] = {}

        def body_of(name: str) -> Function:
            """``@name`` with the calls in it inlined (memoised; no cycles among these)."""
            if name not in done:
                done[name] = replace_calls(mod.functions[name])
            return done[name]

        def rule(node: Expr) -> Expr | None:
            if (isinstance(node, Call) and isinstance(node.op, GlobalVar)
                    and node.op.name in inline
                    and len(node.args) == len(mod.functions[node.op.name].params)):
                callee = fresh_copy(body_of(node.op.name))
                assert isinstance(callee, Function)
                out = callee.body
                for param, arg in reversed(list(zip(callee.params, node.args, strict=True))):
                    out = Let(param, arg, out)
                return out
            return None

        def replace_calls(fn: Function) -> Function:
            return rewrite(fn, rule)  # type: ignore[return-value]

        functions = run_deep(lambda: {n: body_of(n) for n in mod.functions})
        used = set().union(*(_mentions(f) for f in functions.values()))
        functions = {n: f for n, f in functions.items()
                     if not (n in inline and n != "main" and n not in used
                             and f.attr("Inline", 0))}
        return replace(mod, functions=functions, checked_types={}, global_types={})
