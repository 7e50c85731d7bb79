"""Generators of *well-typed* Relay programs, built as IR (spec/typing.md).

* ``well_typed_modules()``: a hypothesis strategy of ``(IRModule, expected type of @main)``.
  Generation is type-directed: pick a type, then an expression of that type from the rules
  of spec/typing.md (T-Let, T-If, T-Tuple, T-Proj, T-Fn/T-App, T-App-Op, T-Constructor,
  T-Match, T-Ref, T-Op...). Every binder is annotated (lets, parameters, return types) except
  a ``let`` bound to a reference or to an operator used as a value, whose types follow from
  their values; so every generated program's types are fully determined, and its ``@main``
  has exactly the chosen type.
* ``let_chain_module(n)``, ``graph_chain_module(n)``, ``resnet_like_module()``: large
  programs for the depth tests and ``benchmarks/typecheck.py``.

Invariants: only operators from the registry are used, with valid attributes; no node is
shared except where a generator documents it (graph bindings); every ``Var`` is bound once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from relay_ref.ir.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay_ref.ir.module import IRModule, TypeData
from relay_ref.ir.types import (
    FuncType,
    GlobalTypeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)
from relay_ref.ops.registry import get_op, make_attrs

__all__ = [
    "box_adt", "graph_chain_module", "let_chain_module", "resnet_like_module", "types",
    "well_typed_modules",
]


# -- a module-local ADT and a polymorphic global ------------------------------------------

def box_adt() -> TypeData:
    """``type Box[A] { Full(A), Empty }``."""
    header = GlobalTypeVar("Box")
    a = TypeVar("A")
    full = Constructor("Full", (a,), header, 0)
    empty = Constructor("Empty", (), header, 1)
    return TypeData(header, (a,), (full, empty))


def _ident_global() -> Function:
    """``def @ident[T](%v: T) -> T { %v }``."""
    t = TypeVar("T")
    v = Var("v", t)
    return Function((v,), v, t, (t,))


# -- types ----------------------------------------------------------------------------------

SCALARS = ("float32", "int32")
SHAPES = ((), (2,), (2, 3))


def _tensor_types() -> st.SearchStrategy[Type]:
    return st.builds(TensorType, st.sampled_from(SHAPES), st.sampled_from(SCALARS))


def types(box: GlobalTypeVar | None = None, depth: int = 2) -> st.SearchStrategy[Type]:
    """Types of generated values: tensors, tuples, functions, ``Box[...]``, ``ref``."""
    base = _tensor_types()
    if depth <= 0:
        return base
    inner = types(box, depth - 1)
    options = [
        base,
        st.lists(inner, min_size=0, max_size=3).map(lambda fs: TupleType(tuple(fs))),
        st.builds(lambda a, r: FuncType((a,), r), inner, inner),
    ]
    if box is not None:
        options.append(inner.map(lambda t: TypeCall(box, (t,))))
    return st.one_of(*options)


# -- expressions of a given type ------------------------------------------------------------

@dataclass
class _Ctx:
    """Generation context: variables in scope with their types, the module's pieces."""

    env: list[tuple[Var, Type]] = field(default_factory=list)
    box: TypeData | None = None
    counter: list[int] = field(default_factory=lambda: [0])

    def fresh(self, stem: str, ty: Type) -> Var:
        self.counter[0] += 1
        return Var(f"{stem}{self.counter[0]}", ty)

    def bind(self, var: Var, ty: Type) -> _Ctx:
        return _Ctx(self.env + [(var, ty)], self.box, self.counter)


def _op(name: str, args: tuple[Expr, ...], **attrs: object) -> Call:
    get_op(name)  # the registry must know it
    return Call(Op(name), args, make_attrs(name, attrs))


def _constant(ty: TensorType, seed: int) -> Expr:
    """A literal of a tensor type: a scalar constant, broadcast when the shape is not ()."""
    value = np.array(seed % 7, dtype=ty.dtype)
    scalar = Constant(value)
    if not ty.shape:
        return scalar
    return _op("broadcast_to", (scalar,), shape=tuple(ty.shape))


@st.composite
def _expr(draw: st.DrawFn, ty: Type, ctx: _Ctx, depth: int) -> Expr:
    """An expression of type ``ty`` (see the module docstring)."""
    same = [v for v, t in ctx.env if t == ty]
    leaf = depth <= 0
    choices = ["intro"]
    if same:
        choices += ["var", "var"]
    if not leaf:
        choices += ["let", "if", "proj", "apply", "match", "ref", "poly"]
    kind = draw(st.sampled_from(choices))
    sub = depth - 1
    if kind == "var":
        return draw(st.sampled_from(same))
    if kind == "let":  # T-Let (annotated)
        t2 = draw(types(_header(ctx), 1))
        var = ctx.fresh("v", t2)
        value = draw(_expr(t2, ctx, sub))
        return Let(var, value, draw(_expr(ty, ctx.bind(var, t2), sub)))
    if kind == "if":  # T-If with a comparison (T-App-Op) as condition
        a = draw(_expr(TensorType((), "float32"), ctx, sub))
        b = draw(_expr(TensorType((), "float32"), ctx, sub))
        return If(_op("less", (a, b)), draw(_expr(ty, ctx, sub)), draw(_expr(ty, ctx, sub)))
    if kind == "proj":  # T-Proj from a tuple literal
        other = draw(_tensor_types())
        fields = [draw(_expr(ty, ctx, sub)), draw(_expr(other, ctx, sub))]
        if draw(st.booleans()):
            fields.reverse()
            return TupleGetItem(Tuple(tuple(fields)), 1)
        return TupleGetItem(Tuple(tuple(fields)), 0)
    if kind == "apply":  # T-App of a function literal (T-Fn)
        t2 = draw(_tensor_types())
        param = ctx.fresh("p", t2)
        body = draw(_expr(ty, ctx.bind(param, t2), sub))
        ret = ty if draw(st.booleans()) else None
        return Call(Function((param,), body, ret), (draw(_expr(t2, ctx, sub)),))
    if kind == "match" and ctx.box is not None:  # T-Match on Box (TP-Ctor, TP-Var, TP-Wild)
        full, empty = ctx.box.constructors
        t2 = draw(_tensor_types())
        scrutinee = Call(full, (draw(_expr(t2, ctx, sub)),))
        var = ctx.fresh("m", t2)
        clauses = (Clause(PatternConstructor(full, (PatternVar(var),)),
                          draw(_expr(ty, ctx.bind(var, t2), sub))),
                   Clause(PatternConstructor(empty, ()) if draw(st.booleans())
                          else PatternWildcard(), draw(_expr(ty, ctx, sub))))
        return Match(scrutinee, clauses, complete=True)
    if kind == "ref":  # T-Ref, T-WriteRef, T-ReadRef
        ctx.counter[0] += 1
        cell = Var(f"r{ctx.counter[0]}")  # unannotated: its type is ref(ty) (T-Let)
        write = RefWrite(cell, draw(_expr(ty, ctx, sub)))
        unit = ctx.fresh("u", TupleType(()))
        return Let(cell, RefCreate(draw(_expr(ty, ctx, sub))),
                   Let(unit, write, RefRead(cell)))
    if kind == "poly":  # T-Global + T-App instantiating @ident[T]
        return Call(GlobalVar("ident"), (draw(_expr(ty, ctx, sub)),))
    return draw(_intro(ty, ctx, max(sub, 0)))


#: operators whose type, used as a value, is ``fn(T) -> T`` for a tensor type ``T``
#: (Identity relation; spec/typing.md 3.10).
_UNARY_FLOAT = ("nn.relu", "negative", "abs", "copy", "ones_like", "zeros_like", "tanh")
_UNARY_INT = ("negative", "abs", "copy", "zeros_like", "ones_like")


def _header(ctx: _Ctx) -> GlobalTypeVar | None:
    return ctx.box.header if ctx.box is not None else None


@st.composite
def _intro(draw: st.DrawFn, ty: Type, ctx: _Ctx, depth: int) -> Expr:
    """The introduction form of ``ty`` (constant, tuple, function, constructor)."""
    match ty:
        case TensorType():
            if ty.dtype == "float32" and depth > 0 and draw(st.booleans()):
                a = draw(_expr(ty, ctx, depth - 1))
                b = draw(_expr(ty, ctx, depth - 1))
                name = draw(st.sampled_from(("add", "multiply", "maximum")))
                if draw(st.booleans()):
                    return _op(name, (a, b))
                # T-Op: the operator as a value, bound by an unannotated let, then called
                ctx.counter[0] += 1
                f = Var(f"f{ctx.counter[0]}")
                return Let(f, Op(name), Call(f, (a, b)))
            return _constant(ty, draw(st.integers(0, 100)))
        case TupleType(fields):
            return Tuple(tuple(draw(_expr(f, ctx, depth - 1)) for f in fields))
        case FuncType((arg,), ret) if (arg == ret and isinstance(arg, TensorType)
                                       and draw(st.booleans())):
            # T-Op: an identity-like operator as the function value itself
            names = _UNARY_FLOAT if arg.dtype == "float32" else _UNARY_INT
            return Op(draw(st.sampled_from(names)))
        case FuncType((arg,), ret):
            param = ctx.fresh("a", arg)
            return Function((param,), draw(_expr(ret, ctx.bind(param, arg), depth - 1)),
                            ret if draw(st.booleans()) else None)
        case TypeCall(_, (arg,)) if ctx.box is not None:
            full, empty = ctx.box.constructors
            if draw(st.booleans()):
                return Call(full, (draw(_expr(arg, ctx, depth - 1)),))
            var = ctx.fresh("e", ty)  # an annotated let fixes Empty's type argument
            return Let(var, Call(empty, ()), var)
    raise AssertionError(f"no introduction form for {ty!r}")


@st.composite
def well_typed_modules(draw: st.DrawFn, max_depth: int = 3
                       ) -> tuple[IRModule, FuncType]:
    """``(module, type of @main)`` with ``@main: fn () -> T`` for a drawn type ``T``."""
    box = box_adt()
    ty = draw(types(box.header, 2))
    ctx = _Ctx(box=box)
    depth = draw(st.integers(1, max_depth))
    body = draw(_expr(ty, ctx, depth))
    main = Function((), body, ty)
    mod = IRModule({"ident": _ident_global(), "main": main}, {"Box": box})
    return mod, FuncType((), ty)


# -- large programs ---------------------------------------------------------------------------

def let_chain_module(n: int, shape: tuple[int, ...] = (4,)) -> IRModule:
    """``@main(%x)`` with ``n`` chained lets ``let %vi = add(%v(i-1), %x);`` (depth n)."""
    ty = TensorType(shape, "float32")
    x = Var("x", ty)
    vars_ = [Var(f"v{i}") for i in range(n)]
    body: Expr = vars_[-1] if n else x
    for i in range(n - 1, -1, -1):
        prev = vars_[i - 1] if i else x
        body = Let(vars_[i], Call(Op("add"), (prev, x), make_attrs("add", {})), body)
    return IRModule({"main": Function((x,), body)})


def graph_chain_module(n: int, shape: tuple[int, ...] = (4,)) -> IRModule:
    """``@main(%x)`` whose body nests ``n`` calls (graph bindings ``%i = add(%(i-1), %x)``)
    with no lets: the call tree is ``n`` deep."""
    ty = TensorType(shape, "float32")
    x = Var("x", ty)
    node: Expr = x
    attrs = make_attrs("add", {})
    for _ in range(n):
        node = Call(Op("add"), (node, x), attrs)
    return IRModule({"main": Function((x,), node)})


def resnet_like_module(blocks: tuple[int, ...] = (3, 4, 6, 3), batch: int = 1,
                       image: int = 224) -> IRModule:
    """A ResNet-50-shaped dataflow graph (bottleneck blocks, NCHW): stem conv7x7/2 + bn +
    relu + maxpool, ``blocks`` bottlenecks per stage, global pooling, dense. Weights are
    parameters of ``@main``; each block's input node is shared by the residual branch and
    the shortcut (a graph binding). About 180 operator calls and 50 projections for the
    default configuration, as in TVM's resnet50 workload."""
    params: list[Var] = []

    def weight(name: str, shape: tuple[int, ...]) -> Var:
        v = Var(f"{name}_{len(params)}", TensorType(shape, "float32"))
        params.append(v)
        return v

    def call(name: str, *args: Expr, **attrs: object) -> Expr:
        return Call(Op(name), args, make_attrs(name, attrs))

    def conv_bn(x: Expr, cin: int, cout: int, k: int, stride: int, relu: bool) -> Expr:
        w = weight("conv", (cout, cin, k, k))
        y = call("nn.conv2d", x, w, strides=(stride, stride), padding=(k // 2, k // 2),
                 channels=cout, kernel_size=(k, k))
        bn = call("nn.batch_norm", y, weight("gamma", (cout,)), weight("beta", (cout,)),
                  weight("mean", (cout,)), weight("var", (cout,)))
        out: Expr = TupleGetItem(bn, 0)
        return call("nn.relu", out) if relu else out

    data = weight("data", (batch, 3, image, image))
    x = conv_bn(data, 3, 64, 7, 2, True)
    x = call("nn.max_pool2d", x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    cin = 64
    for stage, count in enumerate(blocks):
        width = 64 * 2 ** stage
        cout = width * 4
        for i in range(count):
            stride = 2 if (i == 0 and stage > 0) else 1
            y = conv_bn(x, cin, width, 1, 1, True)
            y = conv_bn(y, width, width, 3, stride, True)
            y = conv_bn(y, width, cout, 1, 1, False)
            shortcut = conv_bn(x, cin, cout, 1, stride, False) if i == 0 else x
            x = call("nn.relu", call("add", y, shortcut))
            cin = cout
    x = call("nn.global_avg_pool2d", x)
    x = call("nn.batch_flatten", x)
    x = call("nn.dense", x, weight("fc", (1000, cin)), units=1000)
    x = call("nn.bias_add", x, weight("fc_bias", (1000,)))
    main = Function(tuple(params), call("nn.softmax", x))
    return IRModule({"main": main})
