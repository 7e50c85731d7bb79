"""Static liveness of kernel results, for the runtime's ``release`` (``runtime.py``).

``releasable(func)`` finds the values of one function whose every reader is known: the
results of calls of fused groups and operators (the values kernel steps produce) that the
function reads only as arguments of other such calls. A value is left out when anything
else reads it: a tuple, a projection, a reference, an ``if`` / ``match``, a call of a
function or closure (which may keep it), the function's result, or a nested function
literal capturing it (through the ``let`` variable bound to it). A ``let``-bound variable
is its value (reading ``%x`` reads the value bound to it).

The code generator emits ``_release`` for such a value once all of its readers have been
emitted, and only when the value and all of its readers are computed in the function's
top block (not inside a branch or a lazily computed shared node), so the release runs
exactly once per activation, after the last read, on every path.

The walk covers the function's own body: nested function literals are not entered (they
are functions of their own, analysed when generated) and fused groups' bodies neither
(their steps' liveness is the group's own, ``codegen.group_call``). Linear in the body.
"""

from __future__ import annotations

from relay_ref.ir.expr import Call, Expr, Function, Let, Op, Var, children
from relay_ref.ir.visitor import free_vars

__all__ = ["releasable"]


def _kernel_call(node: Expr) -> bool:
    """A call of an operator or of a fused group (its value is a kernel step's)."""
    if type(node) is not Call:
        return False
    op = node.op
    return type(op) is Op or (type(op) is Function and op.attr("Primitive") is not None)


def releasable(func: Function) -> dict[Expr, list[Expr]]:
    """Kernel-call values of ``func`` read only by kernel calls: value -> its distinct
    readers (see the module docstring)."""
    alias: dict[Var, Expr] = {}
    captured: set[Var] = set()
    readers: dict[Expr, list[Expr]] = {}
    seen: set[int] = set()
    stack: list[Expr] = [func.body]
    order: list[Expr] = []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        kind = type(node)
        if kind is Function:  # a nested function literal: what it captures
            captured.update(free_vars(node))
            continue
        if kind is Let:
            alias[node.var] = node.value
        if kind is Call and type(node.op) is Function and node.op.attr("Primitive") is not None:
            kids = node.args  # a group: its body is planned, not walked
        else:
            kids = tuple(children(node))
        stack.extend(kids)

    def resolve(e: Expr) -> Expr:
        while type(e) is Var and e in alias:
            e = alias[e]
        return e

    for node in order:
        kind = type(node)
        if kind is Function:
            continue
        if kind is Let:
            # ``let %x = v; body``: the Let reads ``body`` (its value is the Let's), not
            # ``v``; reading ``%x`` reads ``v``
            kids: tuple[Expr, ...] = (node.body,)
        elif kind is Call and type(node.op) is Function and \
                node.op.attr("Primitive") is not None:
            kids = node.args
        else:
            kids = tuple(children(node))
        for kid in dict.fromkeys(resolve(k) for k in kids):
            readers.setdefault(kid, []).append(node)
    result = func.body
    while type(result) is Let:
        result = result.body
    result = resolve(result)
    dead_vars = {resolve(v) for v in captured}
    out: dict[Expr, list[Expr]] = {}
    for node, users in readers.items():
        if node is result or node in dead_vars or not _kernel_call(node):
            continue
        if all(_kernel_call(u) for u in users):
            out[node] = users
    return out
