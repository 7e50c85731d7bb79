"""First-order reverse mode for pure dataflow functions (spec/ad.md section 5; TVM's
``FirstOrderGradient``).

The function's body may use operators, ``let``, tuples, projections, constants and its
parameters, nothing else (AD-First-Order); anything else is a located error saying to use
``mode="higher_order"``. The output is straight-line code without references or closures:
the forward bindings (one per node, in evaluation order), then the reverse pass over them
in reverse order, where each binding's adjoint is the sum of its users' contributions
(the op rules, the fields of a tuple, the projections of a tuple), and the result
``(value, (adjoints of the parameters))``. A node without a contribution has adjoint
``zeros_like`` (a parameter) or takes no reverse step.

Invariant: every forward value is computed once (shared nodes too) and every adjoint
expression is bound once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from relay_ref.ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import FuncType, TensorType, TupleType, Type, is_complete
from relay_ref.ir.visitor import dataflow_operands
from relay_ref.ops.grad_common import op as make_call
from relay_ref.ops.registry import GradientUnsupported, get_op
from relay_ref.passes.gradient_common import (
    Block,
    ad_error,
    has_float,
    type_text,
)
from relay_ref.passes.rewrite import rewrite

__all__ = ["FirstOrderAD"]

_USE_HO = "; use mode='higher_order'"



@dataclass
class FirstOrderAD:
    """The first-order transform over one type-checked module."""

    mod: IRModule
    extra: dict[Expr, Type] = field(default_factory=dict)

    def extend(self, mod: IRModule) -> IRModule:
        return mod

    def type_of(self, e: Expr) -> Type | None:
        t = self.extra.get(e)
        return t if t is not None else self.mod.checked_types.get(e)

    def wrapper(self, target: GlobalVar | Function, ty: FuncType,
                where: Expr | None = None) -> Function:
        fn = target if isinstance(target, Function) else self.mod.functions[target.name]
        for t in (*ty.arg_types, ty.ret_type):
            self._check_type(t, where)
        params = tuple(Var(p.name_hint, t) for p, t in zip(fn.params, ty.arg_types,
                                                           strict=True))
        env: dict[Var, Var] = dict(zip(fn.params, params, strict=True))
        for p, t in zip(params, ty.arg_types, strict=True):
            self.extra[p] = t
        blk = Block()
        tape: list[tuple[Var, Expr, Expr]] = []  # (forward var, its value, original node)
        out = self._forward(fn.body, env, blk, tape, {})
        adj: dict[Var, object] = {}
        self._add(adj, out, self._ones(ty.ret_type, out, blk), ty.ret_type, blk)
        for var, value, node in reversed(tape):
            g = adj.get(var)
            if g is None:
                continue
            vty = self.type_of(var)
            match value:
                case Call(Op() as o):
                    self._reverse_op(o, value, var, vty, g, node, adj, blk)
                case Tuple(fields):
                    assert isinstance(vty, TupleType)
                    for i, (f, fty) in enumerate(zip(fields, vty.fields, strict=True)):
                        # an op rule's adjoint of a tuple argument is one tuple value
                        part = g[i] if isinstance(g, list) else TupleGetItem(g, i)
                        if part is not None:
                            self._add(adj, f, part, fty, blk)
                case TupleGetItem(tup, index):
                    tty = self.type_of(tup)
                    assert isinstance(tty, TupleType)
                    parts: list[object] = [None] * len(tty.fields)
                    parts[index] = g
                    self._add(adj, tup, parts, tty, blk)
        grads = Tuple(tuple(self._materialise(adj.get(p), t, p, blk)
                            for p, t in zip(params, ty.arg_types, strict=True)))
        return Function(params, blk.finish(Tuple((out, grads))),
                        TupleType((ty.ret_type, TupleType(ty.arg_types))),
                        span=getattr(where, "span", None))

    def _check_type(self, ty: Type, where: Expr | None) -> None:
        match ty:
            case TensorType():
                return
            case TupleType(fields):
                for f in fields:
                    self._check_type(f, where)
                return
        raise ad_error(f"first_order mode differentiates tensors and tuples of tensors, not "
                       f"{type_text(ty)}{_USE_HO}", where, "AD-First-Order")

    # -- forward: one binding per node -----------------------------------------------------
    def _forward(self, e: Expr, env: dict[Var, Var], blk: Block,
                 tape: list[tuple[Var, Expr, Expr]], memo: dict[int, Var]) -> Var:
        while isinstance(e, Let):
            if isinstance(e.value, Function):
                raise ad_error(f"first_order mode cannot differentiate a local function"
                               f"{_USE_HO}", e.value, "AD-First-Order")
            env[e.var] = self._forward(e.value, env, blk, tape, memo)
            e = e.body
        if isinstance(e, Var):
            return env[e]
        hit = memo.get(id(e))
        if hit is not None:
            return hit
        if isinstance(e, Call | Tuple | TupleGetItem):
            self._forward_operands(e, env, blk, tape, memo)
        match e:
            case Constant():
                value: Expr = e
            case Tuple(fields):
                value = Tuple(tuple(self._forward(f, env, blk, tape, memo) for f in fields))
            case TupleGetItem(tup, index):
                value = TupleGetItem(self._forward(tup, env, blk, tape, memo), index)
            case Call(Op() as o, args) if o.name != "gradient":
                value = Call(o, tuple(self._forward(a, env, blk, tape, memo) for a in args),
                             e.attrs, e.type_args)
            case _:
                what = {"If": "an if", "Match": "a match", "Function": "a function",
                        "RefCreate": "a reference", "RefRead": "a reference read",
                        "RefWrite": "a reference write", "Call": "a call of a function",
                        "GlobalVar": "a global", "Constructor": "a constructor",
                        "Op": "an operator used as a value"}.get(type(e).__name__,
                                                                  type(e).__name__)
                if isinstance(e, Call) and isinstance(e.op, Constructor):
                    what = f"a constructor ({e.op.name})"
                elif isinstance(e, Call) and isinstance(e.op, GlobalVar):
                    what = f"a call of a global function (@{e.op.name})"
                raise ad_error(f"first_order mode cannot differentiate {what}{_USE_HO}", e,
                               "AD-First-Order")
        ty = self.mod.checked_types.get(e)
        var = blk.push(value, "x", ty if is_complete(ty) else None) if not isinstance(
            value, Var) else value
        self.extra[var] = ty
        if isinstance(value, Call):
            self.extra[value] = ty
        memo[id(e)] = var
        tape.append((var, value, e))
        return var

    def _forward_operands(self, root: Expr, env: dict[Var, Var], blk: Block,
                          tape: list[tuple[Var, Expr, Expr]], memo: dict[int, Var]) -> None:
        """Bind the operands under ``root`` (not ``root`` itself) in the order ``_forward``
        reaches them (post-order, left to right), iteratively, while they are operator
        calls, tuples, projections, constants or variables: a 10 000-node graph-form chain
        needs no deep stack. Stops at the first other node (a ``let``...), leaving it and
        what follows to the recursion, so the bindings come out in the same order."""
        stack: list[tuple[Expr, bool]] = [(c, False) for c in reversed(dataflow_operands(root))]
        while stack:
            node, expanded = stack.pop()
            if isinstance(node, Var) or id(node) in memo:
                continue
            if expanded:  # its operands are bound: one level of recursion
                self._forward(node, env, blk, tape, memo)
                continue
            if isinstance(node, Constant):
                self._forward(node, env, blk, tape, memo)
                continue
            if not isinstance(node, Call | Tuple | TupleGetItem) or (
                    isinstance(node, Call) and not isinstance(node.op, Op)):
                return
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(dataflow_operands(node)))

    # -- reverse ---------------------------------------------------------------------------
    def _reverse_op(self, o: Op, call: Call, var: Var, vty: Type, g: object, node: Expr,
                    adj: dict[Var, object], blk: Block) -> None:
        arg_types = [self.type_of(a) for a in call.args]
        if not (has_float(vty) and any(has_float(t) for t in arg_types)):
            return
        opdef = get_op(o.name)
        if opdef.differentiable is not True or opdef.gradient is None:
            why = opdef.differentiable if isinstance(opdef.differentiable, str) else \
                "it has no reverse rule yet"
            raise ad_error(f"operator {o.name} is not differentiable: {why}", node,
                           "AD-App-Op")
        out_grad = blk.push(self._materialise(g, vty, var, blk), "g")
        self.extra[out_grad] = vty
        try:
            grads = opdef.gradient(call, out_grad, self.type_of)
        except GradientUnsupported as err:
            raise ad_error(str(err), node, "AD-App-Op") from None
        for a, t, grad in zip(call.args, arg_types, grads, strict=True):
            if grad is None or not has_float(t):
                continue
            grad = rewrite(grad, lambda n: var if n is call else None)
            self._add(adj, a, blk.push(grad, "da"), t, blk)

    def _add(self, adj: dict[Var, object], var: Expr, g: object, ty: Type,
             blk: Block) -> None:
        """``adj[var] += g`` (structured: a tuple's adjoint is a list, None is zero)."""
        if not isinstance(var, Var):  # a constant: no adjoint
            return
        adj[var] = self._sum(adj.get(var), g, blk)

    def _sum(self, a: object, b: object, blk: Block) -> object:
        if a is None:
            return b
        if b is None:
            return a
        if isinstance(a, list) or isinstance(b, list):
            la = a if isinstance(a, list) else [TupleGetItem(a, i) for i in range(len(b))]
            lb = b if isinstance(b, list) else [TupleGetItem(b, i) for i in range(len(a))]
            return [self._sum(x, y, blk) for x, y in zip(la, lb, strict=True)]
        return blk.push(make_call("add", a, b), "acc")

    def _materialise(self, g: object, ty: Type, like: Expr, blk: Block) -> Expr:
        if g is None:
            return make_call("zeros_like", like) if isinstance(ty, TensorType) else Tuple(
                tuple(self._materialise(None, f, TupleGetItem(like, i), blk)
                      for i, f in enumerate(ty.fields)))
        if isinstance(g, list):
            assert isinstance(ty, TupleType)
            return Tuple(tuple(self._materialise(x, f, TupleGetItem(like, i), blk)
                               for i, (x, f) in enumerate(zip(g, ty.fields, strict=True))))
        return g  # type: ignore[return-value]

    def _ones(self, ty: Type, out: Expr, blk: Block) -> object:
        if isinstance(ty, TensorType):
            return blk.push(make_call("ones_like", out), "seed")
        assert isinstance(ty, TupleType)
        return [self._ones(f, blk.push(TupleGetItem(out, i), "o"), blk)
                for i, f in enumerate(ty.fields)]
