"""AnnotateTarget (BYOC-Annotate, spec/byoc.md): mark where each backend's regions begin
and end, as TVM's ``AnnotateTarget`` (``annotate_target.cc``, ``include_non_call_ops=True``).

Every dataflow node gets a *target*: an operator call the first backend (in ``targets``
order) that supports it (``op_supported``), a call of a ``Composite`` function the backend
owning it among ``targets`` (``composite_owner(name, targets)``: the first of them whose
pattern table has the name, else the one its prefix names), any other call ``"default"``;
a tuple of tensors whose only use is a call with a backend target that target (it joins
the call's region, so its fields, not a tuple, are the region's inputs: TVM gives it the
target its fields agree on, which made tuple-typed region parameters no backend takes);
any other tuple or projection the target its operands agree on (``"default"`` when they
differ).
Each operand of a node is then wrapped: ``compiler_end(arg, <arg's target>)`` when the
operand has a target (an annotated node, except a call with no arguments), then
``compiler_begin(..., <node's target>)``; a variable or constant operand gets the
``compiler_begin`` only. A node used twice gets one ``compiler_end`` per use (TVM's form).
A global function's body gets ``compiler_end`` with its target.

Region boundaries: ``let``, ``if``, ``match``, references, calls of globals, closures,
constructors and non-composite ``fn`` literals are ``"default"`` (their operands are ended
and begun as ``"default"``; the branches of ``if``/``match`` and function bodies are only
ended, as TVM does for ``if``), so no region crosses them. Only values of a tensor type or
a tuple of tensors are annotated (the annotation operators' domain); others pass through
and count as ``"default"``. A rerun on annotated input re-derives the annotations: existing
``compiler_end`` targets are kept, a non-default ``compiler_begin`` on a call's first operand
fixes the call's target (so annotating for A then for B equals annotating for (A, B)).

Invariants: the annotations are identities, so the result computes what the input does;
composite functions and ``Compiler``/``Primitive`` globals are not entered; one iterative
sweep, linear in distinct nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from relay_ref.ir.expr import (
    Call,
    Expr,
    Function,
    If,
    Let,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ir.visitor import children_outside, post_order
from relay_ref.ops.annotation import CompilerAttrs
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.compiler_support import (
    DEFAULT,
    CallInfo,
    Support,
    composite_owner,
    get_support,
    op_supported,
)
from relay_ref.passes.regions import BEGIN, END, is_begin, is_end
from relay_ref.passes.rewrite import map_functions, with_children

__all__ = ["AnnotateTarget", "annotate_function"]

def _annotatable(ty: Type | None) -> bool:
    if isinstance(ty, TensorType):
        return True
    return isinstance(ty, TupleType) and all(isinstance(f, TensorType) for f in ty.fields)


def _stop(fn: Function) -> bool:
    return fn.attr("Composite") is not None or fn.attr("Primitive") is not None


class _Annotator:
    """One function's annotation (module docstring); ``types`` are the checked types of
    the original nodes, ``target`` and ``type_of`` are kept for the rebuilt ones."""

    def __init__(self, supports: Sequence[Support], types: dict[Expr, Type]) -> None:
        self.supports = supports
        self.order = tuple(s.name for s in supports)
        self.types = types
        self.target: dict[int, str] = {}
        self.ty: dict[int, Type | None] = {}
        self.keep: list[Expr] = []
        #: a tuple's target when its one consumer is a supported call (``joins``)
        self.joins: dict[int, str] = {}

    def note(self, new: Expr, ty: Type | None, target: str | None = None) -> Expr:
        self.keep.append(new)
        self.ty[id(new)] = ty
        if target is not None:
            self.target[id(new)] = target
        return new

    def wrap(self, name: str, expr: Expr, target: str) -> Expr:
        return self.note(Call(Op(name), (expr,), CompilerAttrs(target)), self.ty.get(id(expr)))

    def end(self, expr: Expr) -> Expr:
        """``expr`` ended with its target (if-branches, bodies: no begin follows)."""
        t = self.target.get(id(expr))
        if t is None or not _annotatable(self.ty.get(id(expr))):
            return expr
        return self.note(self.wrap(END, expr, t), self.ty.get(id(expr)), t)

    def args(self, args: Sequence[Expr], target: str | None = None
             ) -> tuple[str, tuple[Expr, ...]]:
        """TVM's ``AnnotateArgs``: each operand ended with its own target and begun with
        ``target`` (or, when None, the target the operands agree on)."""
        ref = ""
        ends: list[tuple[Expr, bool]] = []
        for arg in args:
            ok = _annotatable(self.ty.get(id(arg)))
            arg_target = self.target.get(id(arg), DEFAULT) if ok else DEFAULT
            if ok and id(arg) in self.target and not (isinstance(arg, Call) and not arg.args):
                ends.append((self.wrap(END, arg, arg_target), ok))
            else:
                ends.append((arg, ok))
            ref = arg_target if ref in ("", arg_target) else DEFAULT
        chosen = target if target is not None else (ref or DEFAULT)
        return chosen, tuple(self.wrap(BEGIN, e, chosen) if ok else e for e, ok in ends)

    def call_target(self, pre: Call) -> str:
        if pre.args and is_begin(pre.args[0]) \
                and pre.args[0].attrs.compiler != DEFAULT:  # type: ignore[union-attr]
            return pre.args[0].attrs.compiler  # type: ignore[union-attr]
        if isinstance(pre.op, Op):
            info = CallInfo.of(pre, self.types.get)
            for support in self.supports:
                if op_supported(support, info):
                    return support.name
        elif isinstance(pre.op, Function) and pre.op.attr("Composite") is not None:
            owner = composite_owner(str(pre.op.attr("Composite")), self.order)
            if owner is not None:
                return owner
        return DEFAULT

    def visit(self, pre: Expr, post: Expr) -> Expr:  # noqa: PLR0911 - one case per kind
        ty = self.types.get(pre)
        if is_begin(pre):
            return post.args[0]  # type: ignore[attr-defined]
        if is_end(pre):
            inner = post.args[0]  # type: ignore[attr-defined]
            self.target.setdefault(id(inner), pre.attrs.compiler)  # type: ignore[union-attr]
            return inner
        if isinstance(pre, Call):
            target = self.call_target(pre)
            callee = pre.op if isinstance(pre.op, Function) and _stop(pre.op) \
                else post.op  # type: ignore[attr-defined]
            _, args = self.args(post.args, target)  # type: ignore[attr-defined]
            new = Call(callee, args, post.attrs, post.type_args,  # type: ignore[attr-defined]
                       post.span)  # type: ignore[attr-defined]
            return self.note(new, ty, target)
        if isinstance(pre, Tuple):
            target, fields = self.args(post.fields,  # type: ignore[attr-defined]
                                       self.joins.get(id(pre)))
            return self.note(Tuple(fields, post.span), ty, target)  # type: ignore[attr-defined]
        if isinstance(pre, TupleGetItem):
            target, (tup,) = self.args((post.tuple_value,))  # type: ignore[attr-defined]
            return self.note(TupleGetItem(tup, pre.index, post.span),  # type: ignore
                             ty, target)
        if isinstance(pre, Function):
            if _stop(pre):
                return self.note(pre, ty)
            return self.note(with_children(post, [self.end(post.body)]), ty)  # type: ignore
        if isinstance(pre, Let | RefCreate | RefRead | RefWrite):
            _, kids = self.args(tuple(children(post)), DEFAULT)
            return self.note(with_children(post, kids), ty, DEFAULT)
        if isinstance(pre, If | Match):
            kids = [self.end(k) for k in children(post)]
            return self.note(with_children(post, kids), ty, DEFAULT)
        return self.note(post, ty)


def _tuple_joins(ann: _Annotator, nodes: Sequence[Expr],
                 enter: Callable[[Expr], Sequence[Expr]]) -> dict[int, str]:
    """The tuples of tensors whose only use (looking through ``compiler_begin`` /
    ``compiler_end``, for a rerun on annotated input) is a call with a backend target: they
    take that target, so the tuple is built inside the call's region (its fields are the
    region's inputs, never a tuple-typed parameter)."""
    users: dict[int, list[Expr]] = {}
    for node in nodes:
        for kid in enter(node):
            users.setdefault(id(kid), []).append(node)
    out: dict[int, str] = {}
    for node in nodes:
        if not isinstance(node, Tuple) or not _annotatable(ann.types.get(node)):
            continue
        found, todo = [], list(users.get(id(node), ()))
        while todo:
            user = todo.pop()
            if is_begin(user) or is_end(user):
                todo.extend(users.get(id(user), ()))
            else:
                found.append(user)
        if len(found) == 1 and isinstance(found[0], Call):
            target = ann.call_target(found[0])
            if target != DEFAULT:
                out[id(node)] = target
    return out


def annotate_function(fn: Function, supports: Sequence[Support],
                      types: dict[Expr, Type]) -> Function:
    """``fn`` with its regions annotated for ``supports`` (module docstring)."""
    ann = _Annotator(supports, types)
    done: dict[int, Expr] = {}
    enter = children_outside(_stop, root=fn)
    nodes = list(post_order(fn, enter=enter))
    ann.joins = _tuple_joins(ann, nodes, enter)
    for node in nodes:
        kids = list(enter(node))
        post = node if not kids else with_children(node, [done[id(k)] for k in kids])
        done[id(node)] = ann.visit(node, post)
    return done[id(fn)]  # type: ignore[return-value]


@register_pass
class AnnotateTarget(Pass):
    """Annotate the regions of ``targets`` (none when empty: the pass changes nothing
    unless backends are named, as TVM's does; a name nothing registered is
    ``UnknownCompiler``); see the module docstring."""

    name = "AnnotateTarget"
    opt_level = 0

    def __init__(self, targets: Sequence[str] = ()) -> None:
        self.targets = targets

    def __call__(self, mod: IRModule) -> IRModule:
        names = (self.targets,) if isinstance(self.targets, str) else tuple(self.targets)
        supports = [get_support(n) for n in names]
        if not supports:
            return mod
        original = mod
        if not mod.checked_types:
            from relay_ref.typecheck.infer import infer_types

            mod = infer_types(mod)
        types = mod.checked_types

        def run(name: str, fn: Function) -> Function:
            if fn.attr("Compiler") is not None or fn.attr("Primitive") is not None:
                return fn
            return annotate_function(fn, supports, types)

        out = map_functions(mod, run)
        return original if out is mod else out
