"""LambdaLift (TVM's ``lambda_lift.cc``): local functions become globals.

Guarantee. After the pass no function literal remains inside a global's body (except
``Primitive=1`` functions, left alone as in TVM). A literal ``fn (%p...) { body }`` with free
variables ``%v1 ... %vk`` becomes a global ``@lifted_<global>_<i>(%v1, ..., %vk)`` returning
``fn (%p...) { body }`` (a closure over its parameters), used as ``@lifted(%v1, ..., %vk)``;
with no free variables it becomes ``@lifted(%p...) { body }``, used as ``@lifted``. A
let-bound recursive function (``let %f = fn ... { ... %f ... }``) refers to itself through its
new global: ``%f`` inside becomes ``@lifted(%v1, ..., %vk)`` (or ``@lifted``). Inner functions
are lifted first, so a lifted body has no literals left either. The result type-checks and
gives the same values. A global whose literals capture shared nodes of an enclosing scope
(spec/semantics.md 2.3) is put in A-normal form first, so the captured values become free
variables (lifted, the literal would evaluate those nodes again at each call).

The lifted globals' parameters carry the types ``infer_types`` gave the free variables and
parameters (it runs first when the module has none), and their return types are annotated,
so each lifted global type-checks on its own; type variables of an enclosing polymorphic
global become type parameters of the lifted one.

Cost: linear in the program plus, per lifted function, its free-variable computation (linear
in its size); nested literals therefore cost their nesting depth times their size.
"""

from __future__ import annotations

from dataclasses import replace

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import (
    Call,
    Expr,
    Function,
    GlobalVar,
    Let,
    Var,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.sharing import sharing_plan
from relay_ref.ir.types import FuncType, free_type_vars
from relay_ref.ir.visitor import free_vars
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.rewrite import fresh_copy, rewrite, with_children
from relay_ref.passes.to_a_normal_form import to_a_normal_form_function
from relay_ref.typecheck.infer import infer_types


def _substitute(expr: Expr, mapping: dict[Var, Expr]) -> Expr:
    return rewrite(expr, lambda n: mapping.get(n) if isinstance(n, Var) else None)


class _Lifter:
    def __init__(self, mod: IRModule, name: str) -> None:
        self.mod = mod
        self.types = mod.checked_types
        self.prefix = f"lifted_{name}_"
        self.lifted: dict[str, Function] = {}
        self.memo: dict[int, Expr] = {}
        self.keep: list[Expr] = []

    def fresh_name(self) -> str:
        i = len(self.lifted)
        while f"{self.prefix}{i}" in self.mod.functions or f"{self.prefix}{i}" in self.lifted:
            i += 1
        return f"{self.prefix}{i}"

    def visit(self, node: Expr) -> Expr:
        got = self.memo.get(id(node))
        if got is not None:
            return got
        match node:
            case Let(var, Function() as fn, body) if not fn.attr("Primitive", 0):
                out = with_children(node, (self.lift(fn, var), self.visit(body)))
            case Function() if not node.attr("Primitive", 0):
                out = self.lift(node, None)
            case _:
                out = with_children(node, [self.visit(k) for k in children(node)])
        self.memo[id(node)] = out
        self.keep.append(node)
        return out

    def typed(self, var: Var) -> Var:
        """A fresh parameter for ``var`` annotated with its checked type."""
        ty = var.type_annotation or self.types.get(var)
        return Var(var.name_hint, ty, var.span)

    def lift(self, fn: Function, rec: Var | None) -> Expr:
        """Lift ``fn`` (its inner literals first); the expression that replaces it."""
        body = self.visit(fn.body)
        inner = with_children(fn, (body,))
        assert isinstance(inner, Function)
        captured = [v for v in free_vars(inner) if v is not rec]
        name = self.fresh_name()
        gv = GlobalVar(name)
        self.lifted[name] = None  # type: ignore[assignment]  # reserve the name
        # Parameters of the lifted global: fresh, typed copies of the captured variables.
        new_captured = [self.typed(v) for v in captured]
        mapping: dict[Var, Expr] = dict(zip(captured, new_captured, strict=True))
        use: Expr = Call(gv, tuple(captured)) if captured else gv
        if rec is not None:
            mapping[rec] = Call(gv, tuple(new_captured)) if captured else gv
        params = tuple(self.typed(p) for p in inner.params)
        mapping.update(zip(inner.params, params, strict=True))
        fn_ty = self.types.get(fn)
        ret = inner.ret_type or (fn_ty.ret_type if isinstance(fn_ty, FuncType) else None)
        new_body = _substitute(fresh_copy(inner.body), mapping)
        tvars = free_type_vars(*(p.type_annotation for p in (*new_captured, *params)), ret)
        own = [t for t in tvars if t not in inner.type_params]
        closure = replace(inner, params=params, body=new_body, ret_type=ret)
        if captured:
            global_fn = Function(tuple(new_captured), closure, fn_ty, tuple(own))
            global_fn = replace(global_fn, ret_type=fn_ty if isinstance(fn_ty, FuncType)
                                else None)
        else:
            global_fn = replace(closure, type_params=tuple(inner.type_params) + tuple(own))
        self.lifted[name] = global_fn
        return use


@register_pass
class LambdaLift(Pass):
    """Lift local functions to globals (see the module docstring)."""

    name = "LambdaLift"
    opt_level = 0

    def __call__(self, mod: IRModule) -> IRModule:
        # a literal that captures a shared node of an enclosing scope (spec/semantics.md
        # 2.3) would, lifted, evaluate that node at each call: bind it explicitly first
        # (ToANormalForm), so the literal captures it as a free variable
        explicit = {n: to_a_normal_form_function(f) if sharing_plan(f).captures else f
                    for n, f in mod.functions.items()}
        if any(explicit[n] is not f for n, f in mod.functions.items()):
            mod = replace(mod, functions=explicit, checked_types={}, global_types={})
        mod = mod if mod.checked_types else infer_types(mod)
        functions: dict[str, Function] = {}
        changed = False
        for name, fn in mod.functions.items():
            lifter = _Lifter(mod, name)
            body = run_deep(lambda f=fn, lf=lifter: lf.visit(f.body))
            functions[name] = fn if body is fn.body else replace(fn, body=body)
            functions.update(lifter.lifted)
            changed = changed or body is not fn.body
        if not changed:
            return mod
        return replace(mod, functions=functions, checked_types={}, global_types={})
