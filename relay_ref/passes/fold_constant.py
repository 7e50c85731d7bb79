"""FoldConstant (TVM's ``fold_constant.cc``): evaluate constant sub-graphs at compile time.

Guarantee. The result type-checks with the same types and gives the same values; every
folded node is replaced by a ``Constant`` (or a tuple of them) holding exactly what the
definitional interpreter (``relay_ref.interpreter.driver.evaluate``) computes for it, with the
dtype and shape the type checker gave the node. A node whose evaluation fails (``1 / 0`` on
integers, an out-of-range index) is left as it is: the pass never raises for it.

Rules, as TVM's ``ConstantFolder``:

* an operator call whose arguments are all constants or tuples of constants is evaluated,
  except: calls with no arguments (``zeros((1000, 1000))`` is cheaper to keep than to
  store), stateful operators (``effects.STATEFUL_OPS``), annotations and other
  non-computational operators (``SKIPPED_OPS``: their meaning is their position), and
  generators whose result is big: a call whose result (by its type) has more elements
  than its constant arguments together *and* more than ``GENERATED_LIMIT`` (1024) is kept,
  so ``full(0.001f, shape=[128, 784])``, ``broadcast_to(c, ...)`` or ``one_hot(i, 1f, 0f,
  depth=5000)`` stay a few bytes of text instead of a large ``#[metadata]`` constant (TVM
  folds them; a small one, ``full(1f, shape=[4])``, folds here too);
* ``shape_of(x)`` and ``ndarray_size(x)`` fold from ``x``'s *type* when it is static, whatever
  ``x`` is (TVM's ``EvaluateShapeOf``), unless ``x`` may have an effect, which is kept;
* ``let %v = c; body`` with ``c`` a constant: ``%v`` is replaced by ``c`` and the binding goes;
* ``if`` on a constant condition becomes the branch taken;
* ``(e1, ..., en).i`` becomes ``ei`` when the other fields are effect-free (TVM drops them
  whatever they are).

Calls of functions (closures, globals) are not evaluated: only primitives are.
Cost: linear in the number of distinct nodes, plus the folded operators' own work.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import RelayError
from relay_ref.interpreter.driver import evaluate
from relay_ref.ir.expr import (
    Call,
    Constant,
    Expr,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.effects import STATEFUL_OPS, Effects
from relay_ref.passes.rewrite import LetChainMutator
from relay_ref.passes.shared_uses import SharedUses
from relay_ref.typecheck.infer import infer_types

#: Operators never evaluated: annotations mean something where they are, not as values.
SKIPPED_OPS: frozenset[str] = frozenset({
    "on_device", "device_copy", "stop_gradient", "annotation.checkpoint",
    "annotation.compiler_begin", "annotation.compiler_end", "annotation.stop_fusion",
    "shape_of", "ndarray_size",
    # Relax's constructs: match_cast binds shape variables where it stands (T-MatchCast);
    # call_dps_packed/call_tir run a user's function, at run time
    "match_cast", "call_dps_packed", "call_tir",
})

#: A fold may make a constant bigger than its constant arguments together (a generator:
#: ``full``, ``broadcast_to``, ``one_hot``, ``tile``, ``repeat``; ``arange`` too, were its
#: type static) only when the result has at most this many elements (4 KB of float32).
GENERATED_LIMIT = 1024


def is_constant(expr: Expr) -> bool:
    """A constant or a (nested) tuple of constants (TVM's ``IsComplexConstant``)."""
    if isinstance(expr, Constant):
        return True
    return isinstance(expr, Tuple) and all(is_constant(f) for f in expr.fields)


def constant_value(expr: Expr) -> np.ndarray | None:
    """The tensor ``expr`` computes when it is an operator expression over constants only
    (no variable, function or effect: a constant subgraph, e.g. ``squeeze(c)``, ``ones(..)``
    or a batch-norm scale over bound statistics), as the interpreter computes it; None
    when it is not one, fails, or is not a tensor. Other passes use it to check a value
    (a scale, the product FoldConstant will make of it) before they rewrite with it."""
    stack, seen = [expr], set()
    while stack:  # depth first, stopping at the first variable (or other non-constant)
        node = stack.pop()
        if id(node) in seen or isinstance(node, Constant):
            continue
        seen.add(id(node))
        if not (isinstance(node, Call) and isinstance(node.op, Op)
                and node.op.name not in SKIPPED_OPS and node.op.name not in STATEFUL_OPS):
            return None
        stack.extend(node.args)
    try:
        with np.errstate(all="ignore"):
            value = evaluate(expr, typecheck=False)
    except (RelayError, ArithmeticError, ValueError):
        return None
    return np.asarray(value) if isinstance(value, np.ndarray | np.generic) else None


def _generates_big(ty: Type | None, args: tuple[Expr, ...]) -> bool:
    """Whether a call of type ``ty`` over the constants ``args`` makes a big constant out
    of small ones: its result has more than ``GENERATED_LIMIT`` elements and more than the
    ``args`` hold together. Decided from the type, before evaluating (a static type is
    what a fold needs anyway: ``_as_expr`` keeps shapes); an unknown type is not big."""
    def elements(t: object) -> int:  # of a type, or of a (tuple of) constant(s)
        if isinstance(t, TensorType | Constant):
            shape = t.shape if isinstance(t, TensorType) else t.data.shape
            return int(np.prod([d if isinstance(d, int) else 0 for d in shape]))
        fields = t.fields if isinstance(t, TupleType | Tuple) else ()
        return sum(elements(f) for f in fields)

    size = elements(ty)
    return size > GENERATED_LIMIT and size > sum(elements(a) for a in args)


def _as_expr(value: object, ty: Type | None) -> Expr | None:
    """The constant expression of an interpreter value of type ``ty`` (None: cannot)."""
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
        if isinstance(ty, TensorType):
            if str(arr.dtype) != ty.dtype or arr.shape != tuple(ty.shape):
                return None  # never change a dtype or a shape
        elif ty is not None:
            return None
        return Constant(arr)
    if isinstance(value, tuple):
        if isinstance(ty, TupleType):
            if len(ty.fields) != len(value):
                return None
            tys: list[Type | None] = list(ty.fields)
        elif ty is None:
            tys = [None] * len(value)
        else:
            return None
        fields = [_as_expr(v, t) for v, t in zip(value, tys, strict=True)]
        if any(f is None for f in fields):
            return None
        return Tuple(tuple(fields))  # type: ignore[arg-type]
    return None


class _Folder(LetChainMutator):
    def __init__(self, mod: IRModule, effects: Effects) -> None:
        super().__init__()
        self.mod = mod
        self.types = mod.checked_types
        self.effects = effects

    def bind(self, let: Let) -> Expr | None:
        value = self.visit(let.value)
        if isinstance(value, Constant) and self.as_precise(let, value):
            self.subst[let.var] = value  # let %v = c; ... %v ...  ->  ... c ...
            return None
        return value

    def as_precise(self, let: Let, value: Constant) -> bool:
        """Whether ``%v``'s type is the constant's own (no ``?`` where the constant has an
        extent): only then may ``c`` replace ``%v``. ``let %q: Tensor[(?)] = c3`` stays: its
        uses have the less precise type (a ref made of it may later hold another extent,
        spec/typing.md 5.1), which the constant's static type would contradict."""
        ty = self.types.get(let.var) or let.var.type_annotation
        if ty is None:
            return True
        return isinstance(ty, TensorType) and tuple(ty.shape) == value.data.shape \
            and all(isinstance(d, int) for d in ty.shape)

    def rebuilt(self, orig: Expr, node: Expr) -> Expr:
        return self.fold(orig, node)

    def fold(self, orig: Expr, node: Expr) -> Expr:
        match node:
            case Call(Op(name), args):
                return self.fold_call(orig, node, name, args)
            case If(cond, t, f) if (isinstance(cond, Constant) and cond.data.shape == ()
                                    and not self.shared.pins(orig)):
                return t if bool(cond.data) else f
            case TupleGetItem(Tuple(fields), i) if 0 <= i < len(fields):
                others = [f for j, f in enumerate(fields) if j != i]
                if not any(self.effects.stateful(f) for f in others) \
                        and not self.shared.pins(orig):
                    return fields[i]
        return node

    def fold_call(self, orig: Expr, node: Call, name: str, args: tuple[Expr, ...]) -> Expr:
        ty = self.types.get(orig)
        if name in ("shape_of", "ndarray_size") and len(args) == 1:
            arg_ty = self.types.get(orig.args[0])  # type: ignore[attr-defined]
            if (isinstance(arg_ty, TensorType) and all(isinstance(d, int) for d in arg_ty.shape)
                    and not self.effects.stateful(args[0])):
                shape = tuple(arg_ty.shape)
                data = shape if name == "shape_of" else int(np.prod(shape, dtype=np.int64))
                folded = _as_expr(np.array(data, dtype=node.attrs.dtype), ty)
                if folded is not None:
                    return folded
            return node
        if (not args or name in SKIPPED_OPS or name in STATEFUL_OPS
                or not all(is_constant(a) for a in args) or _generates_big(ty, args)):
            return node
        try:
            value = evaluate(node, typecheck=False)
        except (RelayError, ArithmeticError, ValueError):
            return node  # fails at run time: leave it for run time
        folded = _as_expr(value, ty)
        return node if folded is None else folded


def _needs_types(mod: IRModule) -> IRModule:
    return mod if mod.checked_types else infer_types(mod)


@register_pass
class FoldConstant(Pass):
    """Evaluate constant operator calls (see the module docstring)."""

    name = "FoldConstant"
    idempotent = True
    opt_level = 2

    def __call__(self, mod: IRModule) -> IRModule:
        mod = _needs_types(mod)
        effects = Effects(mod)
        folder = _Folder(mod, effects)
        folder.shared = SharedUses(mod.functions.values(), effects)  # spec/partial_eval.md 0
        functions = {}
        for n, f in mod.functions.items():
            body = run_deep(lambda f=f: folder.visit(f.body))
            functions[n] = f if body is f.body else replace(f, body=body)
        if all(functions[n] is f for n, f in mod.functions.items()):
            return mod
        return replace(mod, functions=functions, checked_types={}, global_types={})
