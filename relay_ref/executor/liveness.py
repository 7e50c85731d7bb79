"""Static liveness of kernel results, for the runtime's ``release`` (``runtime.py``).

``releasable(func, run_args)`` finds the values of one function whose every read is a
``run`` argument. ``run_args(call)`` is the code generator's word on a call of an operator
or of a fused (``Primitive``) group: None when the call is not a kernel step (a scalar
fast path computed by a Python operator, a group that cannot be planned and runs as an
ordinary function), else the positions of the arguments it passes *as they are* in the
argument list of ``run`` and reads in no other way (a group's 0-d parameter is converted
by ``np.asarray`` first, a group's tuple step puts its parameter in a tuple: those
positions are left out). A value is releasable when:

* it is a call of an operator or group that is a kernel step (``run_args`` not None; the
  code generator releases it only where a ``run`` computed it: a group whose result is a
  tuple or projection step is never released);
* every read of it is at a position of a kernel step's ``run_args``. Any other read keeps
  it: a tuple, a projection, a reference, an ``if`` / ``match``, a call of a function or
  closure (which may keep it), a position outside ``run_args``, the function's result, or
  a nested function literal capturing it (through the ``let`` variable bound to it). A
  ``let``-bound variable is its value (reading ``%x`` reads the value bound to it).

The code generator emits ``_release`` for such a value once all of its readers have been
emitted, and only when the value and all of its readers are computed in the function's
top block (not inside a branch, a ``match`` clause or a lazily computed shared node), so
the release runs exactly once per activation, after the last read, on every path. This
holds in every function, control flow elsewhere in it or not.

The walk covers the function's own body: nested function literals are not entered (they
are functions of their own, analysed when generated; ``free_vars`` says what they
capture, memoised by the caller across one generation) and planned groups' bodies
neither (their steps' liveness is the group's own, ``codegen.group_call``). Linear in the
body.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from relay_ref.ir.expr import Call, Expr, Function, Let, Op, Var, children
from relay_ref.ir.visitor import free_vars as _free_vars

__all__ = ["RunArgs", "releasable"]

#: a kernel-step call -> the positions of its arguments read only as ``run`` arguments
#: (None: the call is not a kernel step)
RunArgs = Callable[[Call], Collection[int] | None]


def _step_call(node: Expr) -> bool:
    """A call of an operator or of a fused group (possibly a kernel step)."""
    if type(node) is not Call:
        return False
    op = node.op
    return type(op) is Op or (type(op) is Function and op.attr("Primitive") is not None)


def releasable(func: Function, run_args: RunArgs,
               free_vars: Callable[[Function], Collection[Var]] = _free_vars
               ) -> dict[Expr, list[Expr]]:
    """Kernel-step values of ``func`` read only as ``run`` arguments: value -> its
    distinct readers (see the module docstring)."""
    alias: dict[Var, Expr] = {}
    captured: set[Var] = set()
    steps: dict[Expr, Collection[int] | None] = {}
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
        kids: tuple[Expr, ...] | list[Expr]
        if _step_call(node):
            positions = steps[node] = run_args(node)  # type: ignore[arg-type]
            if positions is not None and type(node.op) is Function:
                stack.extend(node.args)  # a planned group: its body is not walked
                continue
        stack.extend(children(node))

    def resolve(e: Expr) -> Expr:
        while type(e) is Var and e in alias:
            e = alias[e]
        return e

    readers: dict[Expr, list[Expr]] = {}
    plain: set[Expr] = set()  # values read otherwise than as a ``run`` argument
    for node in order:
        kind = type(node)
        if kind is Function:
            continue
        if kind is Let:
            # ``let %x = v; body``: the Let reads ``body`` (its value is the Let's), not
            # ``v``; reading ``%x`` reads ``v``
            kids = (node.body,)
        elif node in steps and steps[node] is not None:
            positions = steps[node]
            kids = node.args  # type: ignore[attr-defined]
            for i, arg in enumerate(kids):
                if i not in positions:  # type: ignore[operator]
                    plain.add(resolve(arg))
        else:
            kids = tuple(children(node))
            plain.update(resolve(k) for k in kids)
        for kid in dict.fromkeys(resolve(k) for k in kids):
            readers.setdefault(kid, []).append(node)
    result = func.body
    while type(result) is Let:
        result = result.body
    plain.add(resolve(result))
    plain.update(resolve(v) for v in captured)
    return {node: users for node, users in readers.items()
            if node not in plain and steps.get(node) is not None}
