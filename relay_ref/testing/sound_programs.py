"""Generator of well-typed programs for the soundness property (spec/semantics.md 7).

``sound_programs()`` is a hypothesis strategy of ``SoundCase``: a module whose ``@main``
takes no arguments, the type the generator built its body at, the *features* the program
uses (``FEATURES``) and the *marks*: nodes whose evaluation the census looks for in a trace
(``relay_ref.testing.census``). Generation is type-directed from the rules of
spec/typing.md 3, like ``typed_strategies.well_typed_modules`` (which other property tests
keep using unchanged), but aimed at what the soundness theorems are about:

* ``ref`` types in results and environments (T-Ref, T-ReadRef, T-WriteRef), and *aliasing*:
  ``let %s = %r; ref_write(%s, e); ref_read(%r)`` (the write is seen through both names);
* closures that *escape* (returned in a tuple, a ``Box``, a ``ref`` or from a function) and
  are called later, possibly capturing references;
* ``match`` whose scrutinee is computed (an ``if`` choosing the constructor, a variable, a
  reference's contents), so every clause can be taken; clauses in either order, wildcards;
* ``match?`` (partial: E-Match-Fail when the value is ``Empty``);
* *unannotated binders* (lets, let-recursive functions' accumulators, parameters of applied
  function literals, ``@main``'s result type): inference fills them;
* *recursion*: a let-recursive loop with a decreasing counter (E-Let-Rec, E-App-Rec) and a
  recursive polymorphic global ``@len`` over a generated list;
* ``?`` dimensions in annotations (lets, parameters of function literals): with
  ``mismatched_dims=False`` (the default) the values that flow through them have the static
  extents, so every cast must pass; ``True`` also lets a value of another extent reach a
  static type through ``?`` (a gradual cast that must fail, located: spec/semantics.md 4),
  and only a program where that happened has the feature ``"?-mismatch"``;
* operators that can fail: integer ``divide`` (by zero) and ``take(..., mode="fast")`` (an
  out-of-range index);
* constructors and operators as function values (V-CtorFn, V-Op), a closure owning a cell
  called twice, nodes reached by two edges (E-Shared), and in some results a cyclic store
  (``type Node { N(ref(Node)), End }``, a cell holding itself).

The helpers (``_expr``, ``_intro`` ...) take hypothesis's ``draw`` and draw directly rather
than building a strategy per node: strategy construction (and hypothesis's validation of
each new one) cost about five times the rest of a draw.

Invariant: every program is well typed by construction (the caller asserts
``rr.infer_types`` succeeds: a generator bug fails loudly). Every binder a type could not be
inferred for is annotated (an unannotated ``let`` binds only values whose type their own
syntax fixes; an unannotated parameter belongs to a function literal applied on the spot).
Marked nodes are unique objects (never a shared ``Var``), so a trace event names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np
from hypothesis import strategies as st

from relay_ref.ir.expr import (
    Call,
    Clause,
    Constant,
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
from relay_ref.ir.shape import ANY
from relay_ref.ir.types import (
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    subterms,
)
from relay_ref.ops.registry import get_op, make_attrs
from relay_ref.testing.typed_strategies import box_adt

__all__ = ["FEATURES", "SoundCase", "list_adt", "node_adt", "sound_programs"]

#: What a program may use (``SoundCase.features``); the census counts each.
FEATURES = ("ref-result", "alias", "escape", "match", "match?", "unannotated", "recursion",
            "?", "?-mismatch", "divide", "take", "op-value", "cycle", "shared")

F32, I32 = TensorType((), "float32"), TensorType((), "int32")
BOOL = TensorType((), "bool")
SHAPES = ((), (2,))
SCALARS = ("float32", "int32")


@dataclass(frozen=True)
class SoundCase:
    """A generated program. ``marks`` maps a mark kind (``"clause"``, ``"escape"``,
    ``"recursion"``) to the nodes of that kind: a clause body, the body of a closure that
    escapes, the body of a recursive function; ``clauses`` lists, per generated ``match``,
    its clause bodies in order (the census checks which were taken)."""

    module: IRModule
    type: Type
    features: frozenset[str]
    marks: dict[str, tuple[Expr, ...]] = field(default_factory=dict, hash=False)
    clauses: tuple[tuple[Expr, ...], ...] = ()

    def text(self) -> str:
        """The program in Relay syntax (for failure messages)."""
        from relay_ref.syntax.printer import astext

        return astext(self.module)


def list_adt() -> TypeData:
    """``type Lst[A] { LCons(A, Lst[A]), LNil }``."""
    from relay_ref.ir.expr import Constructor

    header = GlobalTypeVar("Lst")
    a = TypeVar("A")
    cons = Constructor("LCons", (a, TypeCall(header, (a,))), header, 0)
    nil = Constructor("LNil", (), header, 1)
    return TypeData(header, (a,), (cons, nil))


def node_adt() -> TypeData:
    """``type Node { N(ref(Node)), End }``: values that can make a cyclic store."""
    from relay_ref.ir.expr import Constructor

    header = GlobalTypeVar("Node")
    link = Constructor("N", (RefType(TypeCall(header, ())),), header, 0)
    end = Constructor("End", (), header, 1)
    return TypeData(header, (), (link, end))


def _cycle(node: TypeData, ctx: _Ctx) -> Expr:
    """``let %r = ref(End); ref_write(%r, N(%r)); %r``: a cell that holds itself."""
    link, end = node.constructors
    cell, unit = ctx.fresh("cyc", None), ctx.fresh("u", None)
    return Let(cell, RefCreate(Call(end, ())),
               Let(unit, RefWrite(cell, Call(link, (cell,))), cell))


def _len_global(lst: TypeData) -> Function:
    """``def @len[A](%l: Lst[A]) -> int32 { match (%l) { LCons(_, %t) => 1 + @len(%t),
    LNil => 0 } }``: a recursive polymorphic global (T-Global, E-Global)."""
    a = TypeVar("A")
    cons, nil = lst.constructors
    arg = Var("l", TypeCall(lst.header, (a,)))
    tail = Var("t")
    one = Constant(np.array(1, "int32"))
    body = Match(arg, (
        Clause(PatternConstructor(cons, (PatternWildcard(), PatternVar(tail))),
               _op("add", (one, Call(GlobalVar("len"), (tail,))))),
        Clause(PatternConstructor(nil, ()), Constant(np.array(0, "int32")))))
    return Function((arg,), body, I32, (a,))


def _ident_global() -> Function:
    """``def @ident[T](%v: T) -> T { %v }``."""
    t = TypeVar("T")
    v = Var("v", t)
    return Function((v,), v, t, (t,))


def _op(name: str, args: tuple[Expr, ...], **attrs: object) -> Call:
    get_op(name)  # the registry must know it
    return Call(Op(name), args, make_attrs(name, attrs))


def _unique(e: Expr) -> Expr:
    """``e`` as a node no other edge reaches (``(e,).0`` for a shared atom), for marks."""
    if isinstance(e, Var | GlobalVar | Op):
        return TupleGetItem(Tuple((e,)), 0)
    return e


# -- types ----------------------------------------------------------------------------------

@cache
def _tensor_types() -> st.SearchStrategy[TensorType]:
    return st.builds(TensorType, st.sampled_from(SHAPES), st.sampled_from(SCALARS))


@cache
def _types(box: GlobalTypeVar, depth: int) -> st.SearchStrategy[Type]:
    """Tensors, tuples, unary functions, ``Box[T]`` and ``ref(T)``."""
    base = _tensor_types()
    if depth <= 0:
        return base
    inner = _types(box, depth - 1)
    return st.one_of(
        base,
        st.lists(inner, min_size=0, max_size=2).map(lambda fs: TupleType(tuple(fs))),
        st.builds(lambda a, r: FuncType((a,), r), _tensor_types(), inner),
        inner.map(lambda t: TypeCall(box, (t,))),
        inner.map(RefType),
    )


def _has_function(ty: Type) -> bool:
    """Whether a function type occurs in ``ty`` (such values need an annotated binder)."""
    return any(isinstance(t, FuncType) for t in subterms(ty))


def _has_ref(ty: Type) -> bool:
    """Whether a reference type occurs in ``ty``."""
    return any(isinstance(t, RefType) for t in subterms(ty))


def _gradual(ty: TensorType) -> TensorType:
    """``ty`` with every dimension ``?``."""
    return TensorType(tuple(ANY for _ in ty.shape), ty.dtype)


# -- expressions of a given type ------------------------------------------------------------

@dataclass
class _Ctx:
    """Generation state: variables in scope with their (static) types, the ADTs, what the
    program uses so far (shared by all scopes of one program)."""

    box: TypeData
    lst: TypeData
    mismatched_dims: bool
    env: list[tuple[Var, Type]] = field(default_factory=list)
    counter: list[int] = field(default_factory=lambda: [0])
    features: set[str] = field(default_factory=set)
    marks: dict[str, list[Expr]] = field(default_factory=dict)
    clauses: list[tuple[Expr, ...]] = field(default_factory=list)

    def fresh(self, stem: str, ty: Type | None) -> Var:
        self.counter[0] += 1
        return Var(f"{stem}{self.counter[0]}", ty)

    def bind(self, *pairs: tuple[Var, Type]) -> _Ctx:
        return _Ctx(self.box, self.lst, self.mismatched_dims, self.env + list(pairs),
                    self.counter, self.features, self.marks, self.clauses)

    def mark(self, kind: str, node: Expr) -> Expr:
        node = _unique(node)
        self.marks.setdefault(kind, []).append(node)
        return node


def _constant(ty: TensorType, seed: int) -> Expr:
    """A literal of a tensor type: a scalar constant, broadcast when the shape is not ()."""
    scalar = Constant(np.array(seed % 7, dtype=ty.dtype))
    if not ty.shape:
        return scalar
    return _op("broadcast_to", (scalar,), shape=tuple(int(d) for d in ty.shape))


def _forms(ty: Type, ctx: _Ctx, leaf: bool) -> list[str]:
    """The generation rules that can build an expression of ``ty``."""
    kinds = ["intro"]
    if any(t == ty for _, t in ctx.env):
        kinds += ["var", "var"]
    if leaf:
        return kinds
    kinds += ["let", "let", "if", "proj", "apply", "match", "match", "match?", "match?", "read",
              "alias", "escape", "escape", "counter", "loop", "poly", "share"]
    if isinstance(ty, TensorType):
        kinds += ["gradual", "gradual"]
        if ty.dtype == "int32":
            kinds += ["divide", "divide", "divide"]
        if ty == I32:
            kinds += ["len"]
        if not ty.shape:
            kinds += ["take", "take"]
    return kinds


def _expr(draw: st.DrawFn, ty: Type, ctx: _Ctx, depth: int, kind: str | None = None
          ) -> Expr:
    """An expression of type ``ty`` (see the module docstring), by the form ``kind`` when
    given (one of ``_forms``)."""
    if kind is None:
        kind = draw(st.sampled_from(_forms(ty, ctx, depth <= 0)))
    sub = depth - 1
    if kind == "var":
        return draw(st.sampled_from([v for v, t in ctx.env if t == ty]))
    if kind == "let":  # T-Let, annotated or not
        t2 = draw(_types(ctx.box.header, 1))
        value = _expr(draw, t2, ctx, sub)
        annotate = _has_function(t2) or draw(st.booleans())
        if not annotate:
            ctx.features.add("unannotated")
        var = ctx.fresh("v", t2 if annotate else None)
        return Let(var, value, _expr(draw, ty, ctx.bind((var, t2)), sub))
    if kind == "if":  # T-If on a computed condition
        return If(_condition(draw, ctx, sub), _expr(draw, ty, ctx, sub),
                  _expr(draw, ty, ctx, sub))
    if kind == "proj":  # T-Proj of a tuple built here
        other = draw(_tensor_types())
        fields = [_expr(draw, ty, ctx, sub), _expr(draw, other, ctx, sub)]
        index = draw(st.integers(0, 1))
        if index:
            fields.reverse()
        return TupleGetItem(Tuple(tuple(fields)), index)
    if kind == "apply":  # T-Fn + T-App of a literal; an unannotated parameter is inferred
        t2 = draw(_tensor_types())
        annotate = draw(st.booleans())
        if not annotate:
            ctx.features.add("unannotated")
        param = ctx.fresh("p", t2 if annotate else None)
        body = _expr(draw, ty, ctx.bind((param, t2)), sub)
        return Call(Function((param,), body, ty if draw(st.booleans()) else None),
                    (_expr(draw, t2, ctx, sub),))
    if kind in ("match", "match?"):  # T-Match on a computed Box value
        return _match(draw, ty, ctx, sub, complete=kind == "match")
    if kind == "read":  # T-ReadRef of a computed reference
        return RefRead(_expr(draw, RefType(ty), ctx, sub))
    if kind == "alias":  # two names for one cell; the write through one is read by the other
        ctx.features.add("alias")
        cell, alias = ctx.fresh("r", None), ctx.fresh("s", None)
        unit = ctx.fresh("u", None)
        first = _expr(draw, ty, ctx, sub)
        second = _expr(draw, ty, ctx, sub)
        inner = ctx.bind((cell, RefType(ty)), (alias, RefType(ty)))
        rest = RefRead(cell) if draw(st.booleans()) else _expr(draw, ty, inner, sub)
        return Let(cell, RefCreate(first), Let(alias, cell,
                                               Let(unit, RefWrite(alias, second), rest)))
    if kind == "escape":
        return _escape(draw, ty, ctx, sub)
    if kind == "counter":
        return _counter(draw, ty, ctx, sub)
    if kind == "loop":
        return _loop(draw, ty, ctx, sub)
    if kind == "share":  # one node reached by two edges (a graph binding, E-Shared 3.18)
        ctx.features.add("shared")
        node = _expr(draw, ty, ctx, sub)
        other = ctx.fresh("z", None)
        return If(_condition(draw, ctx, sub), Let(other, node, node), node) \
            if draw(st.booleans()) else TupleGetItem(Tuple((node, node)), 1)
    if kind == "poly":  # T-Global + T-App at a type argument
        return Call(GlobalVar("ident"), (_expr(draw, ty, ctx, sub),))
    if kind == "gradual":
        return _gradual_expr(draw, ty, ctx, sub)
    if kind == "divide":  # integer division: stuck (operator failure) on a zero divisor
        ctx.features.add("divide")
        divisor = Constant(np.array(draw(st.integers(0, 2)), "int32")) \
            if draw(st.booleans()) else _expr(draw, I32, ctx, sub)
        return _op("divide", (_expr(draw, ty, ctx, sub), divisor))
    if kind == "take":  # take with mode=fast: stuck on an out-of-range index
        ctx.features.add("take")
        assert isinstance(ty, TensorType)
        data = _expr(draw, TensorType((2,), ty.dtype), ctx, sub)
        index = Constant(np.array(draw(st.sampled_from((0, 1, 2))), "int32"))
        return _op("take", (data, index), axis=0, mode="fast")
    if kind == "len":  # the recursive global over a generated list
        ctx.features.add("recursion")
        elem = draw(_tensor_types())
        cons, nil = ctx.lst.constructors
        empty = ctx.fresh("n", TypeCall(ctx.lst.header, (elem,)))
        node: Expr = empty
        for _ in range(draw(st.integers(0, 3))):
            node = Call(cons, (_expr(draw, elem, ctx, max(sub - 1, 0)), node))
        call = Call(GlobalVar("len"), (node,))
        return Let(empty, Call(nil, ()), call)
    return _intro(draw, ty, ctx, max(sub, 0))


def _condition(draw: st.DrawFn, ctx: _Ctx, depth: int) -> Expr:
    """A computed ``bool`` scalar (T-App-Op of a comparison)."""
    ty = draw(st.sampled_from((F32, I32)))
    name = draw(st.sampled_from(("less", "greater_equal", "equal")))
    return _op(name, (_expr(draw, ty, ctx, depth), _expr(draw, ty, ctx, depth)))


def _match(draw: st.DrawFn, ty: Type, ctx: _Ctx, depth: int, complete: bool) -> Expr:
    """T-Match on a computed ``Box[t]``: both clauses reachable; ``match?`` has only the
    ``Full`` clause (E-Match-Fail on ``Empty``)."""
    full, empty = ctx.box.constructors
    t2 = draw(_types(ctx.box.header, 1))
    scrutinee = _expr(draw, TypeCall(ctx.box.header, (t2,)), ctx, depth)
    var = ctx.fresh("m", t2 if draw(st.booleans()) else None)
    if var.type_annotation is None:
        ctx.features.add("unannotated")
    full_clause = Clause(PatternConstructor(full, (PatternVar(var),)),
                         ctx.mark("clause", _expr(draw, ty, ctx.bind((var, t2)), depth)))
    if not complete:
        ctx.features.add("match?")
        ctx.clauses.append((full_clause.rhs,))
        return Match(scrutinee, (full_clause,), complete=False)
    ctx.features.add("match")
    other = ctx.mark("clause", _expr(draw, ty, ctx, depth))
    if draw(st.booleans()):
        clauses = (Clause(PatternConstructor(empty, ()), other), full_clause)
    else:
        pattern = PatternConstructor(empty, ()) if draw(st.booleans()) else PatternWildcard()
        clauses = (full_clause, Clause(pattern, other))
    ctx.clauses.append(tuple(c.rhs for c in clauses))
    return Match(scrutinee, clauses, complete=True)


def _escape(draw: st.DrawFn, ty: Type, ctx: _Ctx, depth: int) -> Expr:
    """A closure (capturing what is in scope) leaves the expression that made it -- in a
    tuple, a ``Box``, a reference, or as a function's result -- and is called later."""
    ctx.features.add("escape")
    arg_ty = draw(_tensor_types())
    param = ctx.fresh("x", arg_ty)
    body = ctx.mark("escape", _expr(draw, ty, ctx.bind((param, arg_ty)), depth))
    closure = Function((param,), body, ty if draw(st.booleans()) else None)
    fty = FuncType((arg_ty,), ty)
    arg = _expr(draw, arg_ty, ctx, depth)
    route = draw(st.sampled_from(("tuple", "box", "ref", "maker")))
    holder = ctx.fresh("h", None)
    if route == "tuple":
        other = _expr(draw, draw(_tensor_types()), ctx, depth)
        return Let(holder, Tuple((other, closure)), Call(TupleGetItem(holder, 1), (arg,)))
    if route == "box":
        full, empty = ctx.box.constructors
        g = ctx.fresh("g", None)
        return Let(holder, Call(full, (closure,)), Match(holder, (
            Clause(PatternConstructor(full, (PatternVar(g),)), Call(g, (arg,))),
            Clause(PatternConstructor(empty, ()), _expr(draw, ty, ctx, depth)))))
    if route == "ref":
        return Let(holder, RefCreate(closure), Call(RefRead(holder), (arg,)))
    maker = Function((), closure, fty if draw(st.booleans()) else None)
    return Let(holder, maker, Call(Call(holder, ()), (arg,)))


def _counter(draw: st.DrawFn, ty: Type, ctx: _Ctx, depth: int) -> Expr:
    """A closure owning a cell: each call writes it and returns its contents; called twice,
    the second call sees the first's write (closures capture locations, 2.2)."""
    ctx.features.add("escape")
    cell, f = ctx.fresh("k", None), ctx.fresh("f", None)
    first, unit = ctx.fresh("y", None), ctx.fresh("u", None)
    arg_ty = draw(_tensor_types())
    param = ctx.fresh("x", arg_ty)
    inner = ctx.bind((cell, RefType(ty)), (param, arg_ty))
    update = _expr(draw, ty, inner, depth)
    body = ctx.mark("escape", Let(unit, RefWrite(cell, update), RefRead(cell)))
    func = Function((param,), body, ty if draw(st.booleans()) else None)
    calls = Let(first, Call(f, (_expr(draw, arg_ty, ctx, depth),)),
                Call(f, (_expr(draw, arg_ty, ctx, depth),)))
    return Let(cell, RefCreate(_expr(draw, ty, ctx, depth)), Let(f, func, calls))


def _loop(draw: st.DrawFn, ty: Type, ctx: _Ctx, depth: int) -> Expr:
    """``let %l = fn (%n: int32, %acc) { if (%n < 1) { %acc } else { %l(%n - 1, step) } };
    %l(k, init)``: E-Let-Rec, E-App-Rec with a decreasing counter (terminates)."""
    ctx.features.add("recursion")
    loop = ctx.fresh("loop", None)
    n = ctx.fresh("n", I32)
    annotate = _has_function(ty) or draw(st.booleans())
    if not annotate:
        ctx.features.add("unannotated")
    acc = ctx.fresh("acc", ty if annotate else None)
    inner = ctx.bind((n, I32), (acc, ty))
    one = Constant(np.array(1, "int32"))
    step = _expr(draw, ty, inner, depth)
    body = If(_op("less", (n, one)), acc,
              Call(loop, (_op("subtract", (n, Constant(np.array(1, "int32")))), step)))
    func = Function((n, acc), ctx.mark("recursion", body), ty)
    count = Constant(np.array(draw(st.integers(0, 3)), "int32"))
    return Let(loop, func, Call(loop, (count, _expr(draw, ty, ctx, depth))))


def _gradual_expr(draw: st.DrawFn, ty: TensorType, ctx: _Ctx, depth: int) -> Expr:
    """A tensor passing through a ``?`` annotation (a let or a parameter) back to the static
    type ``ty``, often through an annotated let of type ``(ty,)`` (a T-Let cast point, so a
    deep run-time cast checks it); with ``mismatched_dims`` the value may have another extent."""
    ctx.features.add("?")
    loose = _gradual(ty)
    value_ty = ty
    if ctx.mismatched_dims and ty.shape and draw(st.sampled_from((True, False))):
        value_ty = TensorType(tuple(3 for _ in ty.shape), ty.dtype)
        ctx.features.add("?-mismatch")  # a cast (or a broadcast) may now fail, rightly
    value = _expr(draw, value_ty, ctx, depth)
    var = ctx.fresh("q", loose)
    body = var if draw(st.booleans()) else _expr(draw, ty, ctx.bind((var, ty)), depth)
    if draw(st.booleans()):
        out: Expr = Let(var, value, body)
    else:
        out = Call(Function((var,), body, loose if draw(st.booleans()) else None), (value,))
    if ty.shape and ("?-mismatch" in ctx.features or draw(st.booleans())):
        # let %b: (ty,) = (out,); %b.0
        back = ctx.fresh("b", TupleType((ty,)))
        out = Let(back, Tuple((out,)), TupleGetItem(back, 0))
    return out


#: operators whose type, used as a value, is ``fn(T) -> T`` for a tensor type ``T``
_UNARY_FLOAT = ("negative", "abs", "copy", "zeros_like", "ones_like", "tanh")
_UNARY_INT = ("negative", "abs", "copy", "zeros_like", "ones_like")
_FLOAT_OPS = ("add", "multiply", "maximum", "subtract")
_INT_OPS = ("add", "multiply", "subtract", "maximum")


def _intro(draw: st.DrawFn, ty: Type, ctx: _Ctx, depth: int) -> Expr:
    """The introduction form of ``ty`` (constant, tuple, function, constructor, ref)."""
    match ty:
        case TensorType():
            if depth > 0 and draw(st.booleans()):
                a = _expr(draw, ty, ctx, depth - 1)
                b = _expr(draw, ty, ctx, depth - 1)
                names = _FLOAT_OPS if ty.dtype == "float32" else _INT_OPS
                name = draw(st.sampled_from(names))
                if draw(st.booleans()):
                    return _op(name, (a, b))
                # T-Op: the operator as a value, bound by an unannotated let, then called
                ctx.features.add("op-value")
                f = ctx.fresh("f", None)
                return Let(f, Op(name), Call(f, (a, b)))
            return _constant(ty, draw(st.integers(0, 100)))
        case TupleType(fields):
            return Tuple(tuple(_expr(draw, f, ctx, depth - 1) for f in fields))
        case FuncType((arg,), ret) if draw(st.integers(0, 3)) == 0 and (
                ret == TypeCall(ctx.box.header, (arg,))
                or (ret == arg and isinstance(arg, TensorType))):
            # V-CtorFn / V-Op: a constructor or an operator as the function value, bound by
            # an annotated let (its type is not fixed by its syntax)
            if isinstance(ret, TypeCall):
                callee: Expr = ctx.box.constructors[0]
            else:
                ctx.features.add("op-value")
                names = _UNARY_FLOAT if arg.dtype == "float32" else _UNARY_INT
                callee = Op(draw(st.sampled_from(names)))
            var = ctx.fresh("c", ty)
            return Let(var, callee, var)
        case FuncType((arg,), ret):
            loose = isinstance(arg, TensorType) and arg.shape and draw(st.booleans())
            if loose:
                ctx.features.add("?")
            param = ctx.fresh("a", _gradual(arg) if loose else arg)
            return Function((param,), _expr(draw, ret, ctx.bind((param, arg)), depth - 1),
                            ret if draw(st.booleans()) else None)
        case TypeCall(_, (arg,)):
            full, empty = ctx.box.constructors
            choice = draw(st.sampled_from(("full", "empty", "if")))
            filled = Call(full, (_expr(draw, arg, ctx, depth - 1),)) if choice != "empty" \
                else None
            var = ctx.fresh("e", ty)  # an annotated let fixes Empty's type argument
            nothing = Let(var, Call(empty, ()), var)
            if choice == "full":
                return filled
            if choice == "empty":
                return nothing
            return If(_condition(draw, ctx, max(depth - 1, 0)), filled, nothing)
        case RefType(inner):
            return RefCreate(_expr(draw, inner, ctx, depth - 1))
    raise AssertionError(f"no introduction form for {ty!r}")


@st.composite
def sound_programs(draw: st.DrawFn, max_depth: int = 3, mismatched_dims: bool = False
                   ) -> SoundCase:
    """A ``SoundCase`` whose ``@main: fn () -> T`` (``T`` drawn; ``@main``'s result type
    annotated or left to inference). See the module docstring."""
    box, lst, node = box_adt(), list_adt(), node_adt()
    ty = draw(_types(box.header, 2))
    ctx = _Ctx(box, lst, mismatched_dims)
    depth = draw(st.integers(1, max_depth))
    # A few leading lets (annotated: their values' types are drawn, not fixed by syntax)
    # give the body more to use; scalars often, so the operators that fail appear.
    # The first may be a hazard: an operator that fails on some of its values.
    steps: list[tuple[Var, Expr]] = []
    hazard = draw(st.sampled_from((None, None, "divide", "take")))
    for i in range(draw(st.integers(0 if hazard is None else 1, 2))):
        t = draw(st.one_of(st.sampled_from((I32, F32, TensorType((2,), "int32"))),
                           _types(box.header, 1)))
        form = hazard if i == 0 else None
        if form is not None:
            t = I32 if form == "divide" else draw(st.sampled_from((I32, F32)))
        var = ctx.fresh("w", t)
        steps.append((var, _expr(draw, t, ctx, depth, form)))
        ctx = ctx.bind((var, t))
    body = _expr(draw, ty, ctx, depth)
    for var, value in reversed(steps):
        body = Let(var, value, body)
    if mismatched_dims or draw(st.booleans()):
        # (body, w(g)): a tensor through ``?`` (``_gradual_expr``) inside a tuple, a cell or
        # a Box, where no tensor annotation checks it: only a deep cast does (issue 26); it
        # must pass where the extents are the static ones
        loose_ty = TensorType((2,), draw(st.sampled_from(SCALARS)))
        through = _gradual_expr(draw, loose_ty, ctx, 1)
        wrap = draw(st.sampled_from(("tuple", "ref", "box")))
        if wrap == "tuple":
            extra: tuple[Type, Expr] = (TupleType((loose_ty,)), Tuple((through,)))
        elif wrap == "ref":
            extra = (RefType(loose_ty), RefCreate(through))
        else:
            extra = (TypeCall(box.header, (loose_ty,)), Call(box.constructors[0], (through,)))
        ty = TupleType((ty, extra[0]))
        body = Tuple((body, extra[1]))
    if _has_ref(ty):
        ctx.features.add("ref-result")
    if draw(st.integers(1, 6)) == 6:  # a cyclic store in the result: (body, %r)
        ctx.features.add("cycle")
        ty = TupleType((ty, RefType(TypeCall(node.header, ()))))
        body = Tuple((body, _cycle(node, ctx)))
    annotate = draw(st.booleans())
    if not annotate:
        ctx.features.add("unannotated")
    main = Function((), body, ty if annotate else None)
    mod = IRModule({"ident": _ident_global(), "len": _len_global(lst), "main": main},
                   {"Box": box, "Lst": lst, "Node": node})
    return SoundCase(mod, ty, frozenset(ctx.features),
                     {k: tuple(v) for k, v in ctx.marks.items()}, tuple(ctx.clauses))
