"""Hypothesis strategies for *syntactically* valid Relay programs (not necessarily well typed).

``modules()``, ``exprs()`` and ``types()`` draw IR directly, covering every expression,
pattern and type form of the text format, with:
* scoping respected (every local used is bound, or declared free at the top of an
  expression; constructors and globals used are defined in the module);
* duplicate and unusual variable names (``%x`` twice, ``%a/b``, ``%_``) to exercise the
  printer's renaming;
* graph sharing: an already generated node may be reused (only where all of its variables
  are in scope), so the printer's ``%N = ...;`` bindings are exercised;
* scalar literals of every printable dtype and non-scalar constants (metadata section).

With ``symbolic=True`` (``modules``, ``exprs``, ``types``) tensor types also get symbolic
dimensions (``n``, ``m * 4 + 1``, ``floordiv(n, 2)``; S-SymDim) and expressions the Relax
forms ``match_cast``, ``call_dps_packed`` / ``call_tir`` and ``dataflow { ... }`` (S-MatchCast,
S-DPS, S-Dataflow), in any position: their round trip (tests/syntax/test_symbolic_syntax.py).
It is off by default: the fuzz tests that type-check or run these programs choose it.

Invariant: for every drawn module ``m``, ``parse(astext(m), prelude=False)`` succeeds and is
alpha-equal to ``m`` (tests/syntax/test_roundtrip.py). Typed strategies live elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from relay_ref.ir import expr as E
from relay_ref.ir import types as T
from relay_ref.ir.module import IRModule, TypeData

__all__ = ["exprs", "modules", "types", "OP_CALLS"]

# (op name, attribute dicts to choose from) -- every op call carries make_attrs(name, d).
OP_CALLS: list[tuple[str, int, list[dict]]] = [
    ("add", 2, [{}]), ("subtract", 2, [{}]), ("multiply", 2, [{}]), ("divide", 2, [{}]),
    ("less", 2, [{}]), ("equal", 2, [{}]), ("negative", 1, [{}]), ("nn.relu", 1, [{}]),
    ("sum", 1, [{}, {"axis": [0], "keepdims": True}, {"axis": None, "exclude": True}]),
    ("nn.dense", 2, [{}, {"units": 4}, {"units": None, "out_dtype": "float32"}]),
    ("nn.conv2d", 2, [{}, {"strides": [2, 2], "padding": [1, 1], "data_layout": "NHWC"}]),
    ("concatenate", 1, [{"axis": 1}]),
]

_NAMES = ["x", "y", "x", "a/b", "_", "t0", "acc", "v1"]
_DTYPES = ["int32", "int64", "float32", "float16", "float64", "bool", "int8", "uint8"]
_FN_ATTRS = [("Primitive", st.just(1)), ("Compiler", st.sampled_from(["ccompiler", "dnnl"])),
             ("global_symbol", st.sampled_from(["f", "main_0"])),
             ("Inline", st.booleans())]


@dataclass
class _Ctx:
    """What is in scope while drawing: locals, type parameters, ADTs, globals, shareable
    nodes (each with the set of locals it needs)."""

    adts: list[TypeData]
    globals_: list[str]
    locals_: list[E.Var] = field(default_factory=list)
    tvars: list[T.TypeVar] = field(default_factory=list)
    pool: list[tuple[E.Expr, frozenset[E.Var]]] = field(default_factory=list)
    symbolic: bool = False  # symbolic dimensions and the Relax forms (module docstring)

    def with_locals(self, vs: list[E.Var]) -> _Ctx:
        return _Ctx(self.adts, self.globals_, self.locals_ + vs, self.tvars, self.pool,
                    self.symbolic)

    def with_tvars(self, tvs: list[T.TypeVar]) -> _Ctx:
        return _Ctx(self.adts, self.globals_, self.locals_, self.tvars + tvs, self.pool,
                    self.symbolic)


def _ops() -> list[tuple[str, int, list[dict]]]:
    from relay_ref.ops.registry import has_op

    return [entry for entry in OP_CALLS if has_op(entry[0])]


# ---- types -----------------------------------------------------------------------------------

def _draw_type(draw, ctx: _Ctx, depth: int) -> T.Type:
    choices = ["tensor", "scalar", "hole"]
    if ctx.tvars:
        choices.append("tvar")
    if depth > 0:
        choices += ["tuple", "func", "ref"]
        if ctx.adts:
            choices.append("adt")
    kind = draw(st.sampled_from(choices))
    if kind == "tensor":
        return _draw_tensor_type(draw, ctx)
    if kind == "scalar":
        return T.TensorType((), draw(st.sampled_from(_DTYPES)))
    if kind == "hole":
        return T.IncompleteType()
    if kind == "tvar":
        return draw(st.sampled_from(ctx.tvars))
    if kind == "tuple":
        n = draw(st.integers(0, 3))
        return T.TupleType(tuple(_draw_type(draw, ctx, depth - 1) for _ in range(n)))
    if kind == "func":
        n = draw(st.integers(0, 2))
        args = tuple(_draw_type(draw, ctx, depth - 1) for _ in range(n))
        return T.FuncType(args, _draw_type(draw, ctx, depth - 1))
    if kind == "ref":
        return T.RefType(_draw_type(draw, ctx, depth - 1))
    td = draw(st.sampled_from(ctx.adts))
    return T.TypeCall(td.header, tuple(_draw_type(draw, ctx, depth - 1) for _ in td.type_vars))


def _draw_tensor_type(draw, ctx: _Ctx) -> T.TensorType:
    dim = st.one_of(st.integers(0, 64), st.just(T.ANY))
    if ctx.symbolic:
        dim = st.one_of(dim, _SYM_DIMS)
    dims = draw(st.lists(dim, max_size=3))
    return T.TensorType(tuple(dims), draw(st.sampled_from(_DTYPES)))


def _sym_dim(tree: tuple) -> object:
    from relay_ref.ir import shape as SH

    op, a, b = tree
    a = SH.sym(a) if isinstance(a, str) else a
    return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
            "floordiv": lambda: SH.floordiv(a, b), "floormod": lambda: SH.floormod(a, b),
            "min": lambda: SH.dim_min(a, b), "max": lambda: SH.dim_max(a, b)}[op]()


#: symbolic dimensions (S-SymDim): a shape variable with one operation by a small number
#: (a negative constant result, e.g. ``n - n``, never: the first operand is a variable)
_SYM_DIMS = st.one_of(
    st.sampled_from(["n", "m", "batch"]).map(lambda v: _sym_dim(("+", v, 0))),
    st.tuples(st.sampled_from(["+", "-", "*", "floordiv", "floormod", "min", "max"]),
              st.sampled_from(["n", "m"]), st.integers(1, 5)).map(_sym_dim),
).filter(lambda d: not isinstance(d, int) or d >= 0)


def _draw_relax(draw, ctx: _Ctx, sub: int) -> E.Expr:
    """A Relax form (S-MatchCast, S-DPS, S-Dataflow) over drawn sub-expressions: only its
    syntax is valid (its types need not fit)."""
    from relay_ref.ops.registry import make_attrs
    from relay_ref.ops.symbolic import DPSAttrs, MatchCastAttrs

    def out_type() -> T.Type:
        if draw(st.integers(0, 3)) == 0:
            return T.TupleType(tuple(_draw_tensor_type(draw, ctx)
                                     for _ in range(draw(st.integers(0, 2)))))
        return _draw_tensor_type(draw, ctx)

    which = draw(st.sampled_from(["match_cast", "call_dps_packed", "call_tir", "dataflow"]))
    if which == "match_cast":
        return E.Call(E.Op(which), (_draw_expr(draw, ctx, sub),), MatchCastAttrs(out_type()))
    if which == "dataflow":
        return E.Call(E.Op(which), (_draw_expr(draw, ctx, sub),), make_attrs(which, {}))
    if draw(st.integers(0, 3)) == 0:  # the arguments as one expression (a tuple's variable)
        args: E.Expr = _draw_expr(draw, ctx, sub)
    else:
        args = E.Tuple(tuple(_draw_expr(draw, ctx, sub) for _ in range(draw(st.integers(0, 2)))))
    name = draw(st.sampled_from(["f", "my.kernel", "add_one"]))
    return E.Call(E.Op(which), (args,), DPSAttrs(name, out_type()))


# ---- expressions -----------------------------------------------------------------------------

def _new_var(draw, ctx: _Ctx, annotate: bool = True) -> E.Var:
    ann = None
    if annotate and draw(st.booleans()):
        ann = _draw_type(draw, ctx, 1)
    return E.Var(draw(st.sampled_from(_NAMES)), ann)


def _constant(draw) -> E.Constant:
    dtype = draw(st.sampled_from(_DTYPES))
    shape = () if draw(st.integers(0, 4)) else tuple(draw(st.lists(st.integers(1, 3),
                                                                    min_size=1, max_size=2)))
    if dtype == "bool":
        value = draw(st.booleans())
    elif dtype.startswith("float"):
        value = draw(st.floats(allow_nan=True, allow_infinity=True, width=16))
    elif dtype.startswith("uint"):
        value = draw(st.integers(0, 255))
    else:
        value = draw(st.integers(-128, 127))
    return E.Constant(np.full(shape, value, dtype=dtype))


def _draw_expr(draw, ctx: _Ctx, depth: int) -> E.Expr:
    leaves = ["const", "const"]
    if ctx.locals_:
        leaves += ["var", "var", "var"]
    if ctx.globals_:
        leaves.append("global")
    if ctx.adts:
        leaves.append("ctor")
    usable = [n for n, need in ctx.pool if need <= set(ctx.locals_)]
    if usable:
        leaves.append("shared")
    kinds = list(leaves)
    if depth > 0:
        kinds += ["tuple", "proj", "let", "let", "op", "call", "fn", "if", "match", "ref",
                  "seq"]
        if ctx.symbolic:
            kinds += ["relax", "relax"]
    kind = draw(st.sampled_from(kinds))
    sub = depth - 1
    node: E.Expr
    if kind == "const":
        return _constant(draw)
    if kind == "var":
        return draw(st.sampled_from(ctx.locals_))
    if kind == "global":
        return E.GlobalVar(draw(st.sampled_from(ctx.globals_)))
    if kind == "shared":
        return draw(st.sampled_from(usable))
    if kind == "ctor":
        td = draw(st.sampled_from(ctx.adts))
        if not td.constructors:
            return _constant(draw)
        ctor = draw(st.sampled_from(td.constructors))
        if ctor.inputs and draw(st.booleans()):
            return ctor  # a constructor as a first-class function
        args = tuple(_draw_expr(draw, ctx, max(sub, 0)) for _ in ctor.inputs)
        return E.Call(ctor, args)
    if kind == "tuple":
        n = draw(st.integers(0, 3))
        node = E.Tuple(tuple(_draw_expr(draw, ctx, sub) for _ in range(n)))
    elif kind == "proj":
        node = E.TupleGetItem(_draw_expr(draw, ctx, sub), draw(st.integers(0, 3)))
    elif kind == "let":
        var = _new_var(draw, ctx)
        value_ctx = ctx
        recursive = draw(st.integers(0, 3)) == 0
        if recursive:  # a let-bound function that may call itself
            value_ctx = ctx.with_locals([var])
            before = len(ctx.pool)
            value = _draw_fn(draw, value_ctx, sub)
            # a node inside the function that mentions its own variable is not shared with
            # the let's body: TVM's graph form cannot print it (spec/semantics.md 2.3, the
            # Stuck-Var exception), and the printer would bind it before the let
            ctx.pool[before:] = [(n, need) for n, need in ctx.pool[before:]
                                 if var not in need]
        else:
            value = _draw_expr(draw, ctx, sub)
        node = E.Let(var, value, _draw_expr(draw, ctx.with_locals([var]), sub))
    elif kind == "seq":  # `e1; e2`
        node = E.Let(E.Var("_"), _draw_expr(draw, ctx, sub), _draw_expr(draw, ctx, sub))
    elif kind == "op":
        from relay_ref.ops.registry import make_attrs

        ops = _ops()
        if not ops:
            return _constant(draw)
        name, arity, attr_choices = draw(st.sampled_from(ops))
        attrs = make_attrs(name, draw(st.sampled_from(attr_choices)))
        args = tuple(_draw_expr(draw, ctx, sub) for _ in range(arity))
        node = E.Call(E.Op(name), args, attrs)
    elif kind == "call":
        callee = _draw_expr(draw, ctx, sub)
        if isinstance(callee, E.Constructor) or (
                isinstance(callee, E.Call) and isinstance(callee.op, E.Constructor)
                and not callee.args):
            callee = E.Tuple(())
        n = draw(st.integers(0, 2))
        targs: tuple[T.Type, ...] = ()
        if draw(st.integers(0, 4)) == 0:
            targs = (_draw_type(draw, ctx, 1),)
        node = E.Call(callee, tuple(_draw_expr(draw, ctx, sub) for _ in range(n)), None, targs)
    elif kind == "fn":
        node = _draw_fn(draw, ctx, sub)
    elif kind == "relax":
        node = _draw_relax(draw, ctx, sub)
    elif kind == "if":
        node = E.If(*(_draw_expr(draw, ctx, sub) for _ in range(3)))
    elif kind == "match":
        data = _draw_expr(draw, ctx, sub)
        clauses = []
        for _ in range(draw(st.integers(1, 3))):
            bound: list[E.Var] = []
            pat = _draw_pattern(draw, ctx, 2, bound)
            clauses.append(E.Clause(pat, _draw_expr(draw, ctx.with_locals(bound), sub)))
        node = E.Match(data, tuple(clauses), draw(st.booleans()))
    else:  # ref
        which = draw(st.sampled_from(["new", "read", "write"]))
        if which == "new":
            node = E.RefCreate(_draw_expr(draw, ctx, sub))
        elif which == "read":
            node = E.RefRead(_draw_expr(draw, ctx, sub))
        else:
            node = E.RefWrite(_draw_expr(draw, ctx, sub), _draw_expr(draw, ctx, sub))
    if not isinstance(node, E.Function):
        ctx.pool.append((node, frozenset(ctx.locals_)))
    return node


def _draw_fn(draw, ctx: _Ctx, depth: int) -> E.Function:
    tvs = [T.TypeVar(n) for n in draw(st.lists(st.sampled_from(["A", "B"]), max_size=2,
                                                unique=True))]
    inner = ctx.with_tvars(tvs)
    params = [_new_var(draw, inner) for _ in range(draw(st.integers(0, 3)))]
    ret = _draw_type(draw, inner, 1) if draw(st.booleans()) else None
    attrs = []
    if draw(st.integers(0, 3)) == 0:
        key, values = draw(st.sampled_from(_FN_ATTRS))
        attrs.append((key, draw(values)))
    body = _draw_expr(draw, inner.with_locals(params), depth)
    return E.Function(tuple(params), body, ret, tuple(tvs), tuple(attrs))


def _draw_pattern(draw, ctx: _Ctx, depth: int, bound: list[E.Var]) -> E.Pattern:
    kinds = ["wild", "var"]
    if depth > 0:
        kinds += ["tuple"]
        if ctx.adts and any(td.constructors for td in ctx.adts):
            kinds += ["ctor", "ctor"]
    kind = draw(st.sampled_from(kinds))
    if kind == "wild":
        return E.PatternWildcard()
    if kind == "var":
        var = _new_var(draw, ctx)
        bound.append(var)
        return E.PatternVar(var)
    if kind == "tuple":
        n = draw(st.integers(0, 3))
        return E.PatternTuple(tuple(_draw_pattern(draw, ctx, depth - 1, bound)
                                    for _ in range(n)))
    td = draw(st.sampled_from([td for td in ctx.adts if td.constructors]))
    ctor = draw(st.sampled_from(td.constructors))
    return E.PatternConstructor(ctor, tuple(_draw_pattern(draw, ctx, depth - 1, bound)
                                            for _ in ctor.inputs))


# ---- ADTs and modules ------------------------------------------------------------------------

def _draw_adts(draw) -> list[TypeData]:
    names = draw(st.lists(st.sampled_from(["List", "Tree", "Opt", "Pair", "Handle"]),
                          max_size=3, unique=True))
    headers = {n: T.GlobalTypeVar(n) for n in names}
    out: list[TypeData] = []
    ctor_count = 0
    for name in names:
        tvs = [T.TypeVar(v) for v in draw(st.lists(st.sampled_from(["A", "B"]), max_size=2,
                                                    unique=True))]
        if draw(st.integers(0, 5)) == 0:
            out.append(TypeData(headers[name], tuple(tvs), (), is_extern=True))
            continue
        ctx = _Ctx([], []).with_tvars(tvs)
        ctors = []
        for tag in range(draw(st.integers(0, 3))):
            n_in = draw(st.integers(0, 2))
            inputs = []
            for _ in range(n_in):
                if names and draw(st.booleans()):
                    other = headers[draw(st.sampled_from(names))]
                    inputs.append(T.TypeCall(other, ()))
                else:
                    inputs.append(_draw_type(draw, ctx, 1))
            ctors.append(E.Constructor(f"C{ctor_count}", tuple(inputs), headers[name], tag))
            ctor_count += 1
        out.append(TypeData(headers[name], tuple(tvs), tuple(ctors)))
    return out


@st.composite
def types(draw, max_depth: int = 3, symbolic: bool = False) -> T.Type:
    """A type of any form (no ADTs, no free type variables)."""
    return _draw_type(draw, _Ctx([], [], symbolic=symbolic), max_depth)


@st.composite
def exprs(draw, max_depth: int = 4, symbolic: bool = False) -> E.Expr:
    """An expression, possibly with free variables (printed as ``free_var`` lines)."""
    free = [E.Var(n) for n in draw(st.lists(st.sampled_from(["x", "y", "z"]), max_size=2))]
    ctx = _Ctx([], [], symbolic=symbolic).with_locals(free)
    return _draw_expr(draw, ctx, max_depth)


@st.composite
def modules(draw, max_depth: int = 4, symbolic: bool = False) -> IRModule:
    """A module of ADTs and ``def``s that may call each other (no free variables)."""
    adts = _draw_adts(draw)
    names = draw(st.lists(st.sampled_from(["main", "f", "g", "h"]), min_size=1, max_size=3,
                          unique=True))
    functions = {}
    for name in names:
        ctx = _Ctx(adts, names, symbolic=symbolic)
        functions[name] = _draw_fn(draw, ctx, max_depth)
    return IRModule(functions, {td.name: td for td in adts})
