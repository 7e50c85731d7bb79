"""Type-directed generation of small well-typed programs with arguments, for ``check_pass``.

``programs()`` is a hypothesis strategy of ``IRModule``\\ s whose ``@main`` takes tensor
parameters and returns a first-order value; ``arguments(param_types)`` draws values for
them. Together they reach (spec/typing.md):

* every expression form: ``let``; sharing through graph bindings (an operator call reused
  as the argument of a later one, equal operands ``f(%a, %a)``); tuples and projection;
  ``if`` on computed conditions; closures (capturing their environment) and higher-order
  calls (a function passed to a function, an operator used as a value); recursion with a
  bounded depth (a let-bound or global loop counting a constant ``0..3`` down); global
  functions; ADTs (``List``, ``Box``) matched with nested and overlapping clauses in any
  order; references read after a write;
* every registered operator with attributes: ``op_table()`` asks each operator's own type
  relation which argument types and attributes it accepts (the defaults, the op's
  ``attr_examples`` and ``arg_examples`` from the registry, and, for attributes without
  defaults, values synthesised from the attrs schema), so an operator registered later is
  generated without touching this module;
* values that expose bugs: arguments are drawn from small pools (negatives, zeros, halves,
  many ties), shapes include rank 3 and broadcastable unit dimensions; with ``edge=True``
  (what ``check_pass`` uses) one floating-point tensor in ``EDGE_ODDS`` (an argument, or a
  constant of the program) also draws from ``edge_values``: +-1e38, +-3e38, +-1e-38 and
  +-inf for float32, where a rewrite that folds or reassociates products overflows
  (``w * s`` is inf where ``(x . w) * s`` is not).

Invariants: every generated module type-checks and its ``@main`` has the annotated return
type; every ``Var`` is bound once and every binder is annotated; recursion depth is at most
3 per loop, so every evaluation terminates; only operator calls are shared (graph
bindings), never binders. Hypothesis shrinks towards the first alternative of each choice
(a parameter or a constant, shallow depth), so counterexamples are small and readable.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import random
import typing
from collections.abc import Iterable
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
    Pattern,
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
    AnyDim,
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)
from relay_ref.ops.registry import OpDef, all_ops, make_attrs
from relay_ref.ops.symbolic import SYMBOLIC_OPS
from relay_ref.suggest import did_you_mean
from relay_ref.testing.focus import FOCUS_FORMS, Focus, focus_values

__all__ = ["EDGE_ODDS", "FORMS", "OpTable", "Sig", "arguments", "edge_values", "family_of",
           "focus_sigs", "op_table", "programs", "resolve_focus", "value_pool"]

# -- the type universe --------------------------------------------------------------------

SHAPES: tuple[tuple[int, ...], ...] = ((), (3,), (2, 3), (2, 1, 3))
DTYPES = ("float32", "int32", "bool")
#: tensor types expressions are generated at (float32 scalars first: the simplest)
TENSORS = tuple(TensorType(s, d) for d in DTYPES for s in SHAPES)
BOOL = TensorType((), "bool")
F32 = TensorType((), "float32")
#: operator-table-only candidates (the generator reaches them through op results)
IMAGE = TensorType((1, 2, 4, 4), "float32")
IMAGES = (IMAGE, TensorType((1, 2, 4), "float32"), TensorType((1, 2, 2, 2, 2), "float32"))
KERNEL = TensorType((2, 2, 1, 1), "float32")
VEC = TensorType((2,), "float32")
QUANTIZED = (TensorType((2, 3), "int8"), TensorType((2, 3), "uint8"), TensorType((2, 3), "float32"))
INT = TensorType((), "int32")
#: float32 three times as often as bool, int32 twice
_WEIGHTED = tuple(t for t in TENSORS for _ in range({"float32": 3, "int32": 2}.get(t.dtype, 1)))
MAX_PARAMS = 4
#: how many steps a generated loop takes at most (its counter is a constant 0..LOOP_MAX)
LOOP_MAX = 3

#: the expression forms ``programs`` draws from; ``stats`` counts them (coverage tests)
FORMS = ("leaf", "op", "share", "let", "if", "proj", "apply", "hof", "loop", "match",
         "ref", "global", "anylet", "callvar", "opvalue", "focus", "dup")


def value_pool(dtype: str) -> tuple:
    """Element values arguments and constants are drawn from (first: the shrink target)."""
    if dtype == "bool":
        return (False, True)
    if dtype.startswith("float"):
        return (0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0)
    if dtype.startswith("uint"):
        return (0, 1, 2, 3, 5, 7)
    return (0, 1, -1, 2, -2, 3, -3, 5)


#: With ``edge=True``, one floating-point tensor in ``EDGE_ODDS`` draws its elements from
#: ``value_pool + edge_values`` (half of them near the ends of the range, then).
EDGE_ODDS = 8


def edge_values(dtype: str) -> tuple:
    """Values near the ends of a floating-point ``dtype``'s range (() for other dtypes):
    +-big (1e38 for float32: times 4 it overflows), +-near the largest finite (3e38:
    doubled it overflows), +-tiny (1e-38: below the smallest normal, so its products
    underflow) and +-inf. Ordinary results computed from them (``1e38 * 0``,
    ``1e38 - 1e38``, ``3e38 * 0.5``) are where a rewrite that folds or reorders products
    changes a finite value."""
    try:
        info = np.finfo(np.dtype(dtype))
    except (TypeError, ValueError):
        return ()
    big = 10.0 ** int(np.floor(np.log10(float(info.max))))
    near = float(np.floor(float(info.max) / big) * big)
    tiny = 10.0 ** int(np.floor(np.log10(float(info.tiny))))
    return (big, -big, near, -near, tiny, -tiny, np.inf, -np.inf)


# -- the operator table --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Sig:
    """A well-typed call: ``op`` on arguments of ``args`` types with ``attrs`` gives ``out``
    (as the op's own relation says)."""

    op: str
    args: tuple[Type, ...]
    attrs: object
    out: Type
    #: a focused tuple-valued call used through one field: ``out`` is that field's type and
    #: the call is projected (``nn.batch_norm(...).0``: what rewrites of such ops match)
    proj: int | None = None
    whole: Type | None = None  # with ``proj``: the call's own (tuple) type


@dataclass
class OpTable:
    """Every signature found, indexed by operator and by result type."""

    by_op: dict[str, list[Sig]] = field(default_factory=dict)
    by_out: dict[Type, dict[str, list[Sig]]] = field(default_factory=dict)
    levels: dict[str, int] = field(default_factory=dict)  # TVM's support level, by op
    families: dict[str, list[str]] = field(default_factory=dict)  # op names by family
    family: dict[str, str] = field(default_factory=dict)  # and the family of each op

    def add(self, sig: Sig) -> None:
        self.by_op.setdefault(sig.op, []).append(sig)
        self.by_out.setdefault(sig.out, {}).setdefault(sig.op, []).append(sig)


_TABLE: tuple[int, OpTable] | None = None
_SIGS_PER_OP = 64
_SIGS_PER_ATTRS = 10


def op_table() -> OpTable:
    """The signature table of every registered operator (built once; rebuilt when the
    registry grew). Cost: one relation call per candidate, about 0.5 s in all."""
    global _TABLE
    ops = all_ops()
    if _TABLE is None or _TABLE[0] != len(ops):
        table = OpTable()
        for op in ops.values():
            if op.name in SYMBOLIC_OPS:  # generated in place by symbolic_programs
                continue
            table.levels[op.name] = op.support_level
            for sig in _signatures(op):
                table.add(sig)
            table.family[op.name] = family_of(op.name)
            if op.name in table.by_op:
                table.families.setdefault(table.family[op.name], []).append(op.name)
        _TABLE = (len(ops), table)
    return _TABLE[1]


def family_of(op_name: str) -> str:
    """The op family (its module in ``relay_ref.ops``): ``reduce``, ``nn``, ``transform``..."""
    op = all_ops()[op_name]
    return op.reference.__module__.rsplit(".", 1)[-1]


def _signatures(op: OpDef) -> list[Sig]:
    """Signatures of ``op``: candidate attributes x candidate argument types, as accepted by
    its relation; synthesised attributes are tried when nothing else type-checks."""
    args_cands = _arg_candidates(op)
    out = _accepted(op, _attr_candidates(op), args_cands)
    if not out:
        out = _accepted(op, _synthesised_attrs(op), args_cands)
    return out


def _accepted(op: OpDef, attr_cands: list[object], arg_cands: list[tuple[Type, ...]],
              empty: bool = False) -> list[Sig]:
    """The well-typed ``(attrs, args)`` combinations (``empty``: zero extents allowed, for
    focused calls, ``relay_ref.testing.focus``)."""
    out: list[Sig] = []
    seen: set[tuple] = set()
    for attrs in attr_cands:
        found = 0
        for args in arg_cands:
            if found >= _SIGS_PER_ATTRS:
                break
            try:
                ty = op.relation(list(args), attrs)
            except Exception:  # noqa: BLE001 - a relation refusing (RelationError) or worse
                continue
            if not isinstance(ty, Type) or not _concrete(ty, dynamic=True, empty=empty):
                continue
            if empty and not all(_concrete(a, empty=True) for a in args):
                continue
            key = (args, repr(attrs))
            if key in seen:
                continue
            seen.add(key)
            out.append(Sig(op.name, args, attrs, ty))
            found += 1
            if len(out) >= _SIGS_PER_OP:
                return out
    return out


def _concrete(ty: Type, dynamic: bool = False, empty: bool = False) -> bool:
    """No holes and no zero extents (unless ``empty``); ``?`` extents only when ``dynamic``
    (a ``dyn.*`` result is only ever let-bound: nothing is generated at such a type)."""
    match ty:
        case TensorType():
            return all((type(d) is int and (d > 0 or (empty and d == 0)))
                       or (dynamic and isinstance(d, AnyDim)) for d in ty.shape)
        case TupleType(fields):
            return all(_concrete(f, dynamic, empty) for f in fields)
    return False


def _attr_candidates(op: OpDef) -> list[object]:
    found: list[object] = []
    examples = list(getattr(op, "attr_examples", ()) or ())
    for items in [{}] + examples:
        try:
            found.append(make_attrs(op.name, dict(items)))
        except Exception:  # noqa: BLE001 - no defaults for a required attribute
            continue
    return found


def _synthesised_attrs(op: OpDef) -> list[object]:
    """Attribute values for an op none of whose candidates type-checked: a few values for
    each field that is required or defaults to ``None``/``""``, from its annotation (ints,
    floats, int lists, dtypes, layouts)."""
    hints = typing.get_type_hints(op.attrs)
    required = [f.name for f in dataclasses.fields(op.attrs)
                if f.default in (None, "") or (f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING)]  # type: ignore[misc]
    choices = [_values_for(hints.get(name, object)) for name in required]
    found = []
    for combo in itertools.islice(itertools.product(*choices), 16):
        try:
            found.append(make_attrs(op.name, dict(zip(required, combo, strict=True))))
        except Exception:  # noqa: BLE001
            continue
    return found


def _values_for(hint: object) -> tuple:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, __import__("types").UnionType):
        inner = [a for a in args if a is not type(None)]
        return _values_for(inner[0]) + ((None,) if type(None) in args else ())
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return ((1,), (0,), (1, 1), (2,), (-1,))
        return (tuple(1 for _ in args), tuple(2 for _ in args))
    return {int: (1, 0, 2), float: (1.0, 0.5), bool: (False, True),
            str: ("float32", "int32", "NCHW")}.get(hint, (None,))  # type: ignore[arg-type]


def _arg_candidates(op: OpDef) -> list[tuple[Type, ...]]:
    cands: list[tuple[Type, ...]] = []
    for example in getattr(op, "arg_examples", ()) or ():
        cands += _expand_example(example)
    counts = [op.num_inputs] if op.num_inputs >= 0 else [1, 2]
    rng = random.Random(op.name)  # deterministic per op
    for n in counts:
        if n == 0:
            cands.append(())
            continue
        cands += [(t,) * n for t in TENSORS]
        if n == 1:
            cands += [(TupleType((t, t)),) for t in TENSORS[:8]]
            cands += [(TupleType((a, b)),) for a, b in itertools.permutations(TENSORS[:4], 2)]
        if n <= 2:  # image-like data (NCW, NCHW, NCDHW) and a kernel
            cands += [(t,) + (KERNEL, VEC)[:n - 1] for t in IMAGES]
        if n >= 3:  # quantized operators: data, then (scale, zero point) pairs
            for k, data in itertools.product((1, 2), QUANTIZED):
                for pair in ((F32, INT), (INT, F32)):
                    rest = (pair * n)[:n - k]
                    if len(rest) == n - k:
                        cands.append((data,) * k + rest)
        if n == 2:
            cands += [(a, b) for a in TENSORS for b in TENSORS if a != b
                      and (a.dtype == b.dtype or b.dtype == "int32")]
        else:
            cands += [(BOOL,) + (t,) * (n - 1) for t in TENSORS[:4]]
            cands += [(IMAGE, VEC) + (VEC,) * (n - 2), (IMAGE, KERNEL) + (VEC,) * (n - 2)]
            cands += [(TensorType(t.shape, "bool"),) + (t,) * (n - 1) for t in TENSORS[:4]]
            cands += [tuple(rng.choice(TENSORS) for _ in range(n)) for _ in range(24)]
    return cands


def _expand_example(example: tuple) -> list[tuple[Type, ...]]:
    """An op's ``arg_examples`` entry: a tuple of argument specs, each a ``Type``, a shape
    (tried as float32 and int32), a ``(shape, dtype)`` pair or a list of specs (a tuple
    argument, e.g. ``[((2, 3), "int8"), ((1, 3), "int8")]``)."""
    def options(spec: object) -> list[Type]:
        if isinstance(spec, Type):
            return [spec]
        if isinstance(spec, list):
            fields = _expand_example(tuple(spec))
            return [TupleType(f) for f in fields]
        if (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], str)):
            return [TensorType(tuple(spec[0]), spec[1])]
        return [TensorType(tuple(spec), "float32"),  # type: ignore[arg-type]
                TensorType(tuple(spec), "int32")]  # type: ignore[arg-type]
    per_arg = [options(s) for s in example]
    if per_arg and all(len(o) == 2 for o in per_arg):  # shapes only: one dtype for all
        return [tuple(o[0] for o in per_arg), tuple(o[1] for o in per_arg)]
    return [tuple(c) for c in itertools.product(*per_arg)]


# -- module-local ADTs -----------------------------------------------------------------------

def _list_adt() -> TypeData:
    """``type List[A] { Nil, Cons(A, List[A]) }``."""
    header, a = GlobalTypeVar("List"), TypeVar("A")
    nil = Constructor("Nil", (), header, 0)
    cons = Constructor("Cons", (a, TypeCall(header, (a,))), header, 1)
    return TypeData(header, (a,), (nil, cons))


def _box_adt() -> TypeData:
    """``type Box[A] { Full(A), Empty }``."""
    header, a = GlobalTypeVar("Box"), TypeVar("A")
    return TypeData(header, (a,), (Constructor("Full", (a,), header, 0),
                                   Constructor("Empty", (), header, 1)))


# -- the generator ---------------------------------------------------------------------------

Env = tuple[tuple[Var, Type], ...]
_VALUE_OPS = ("add", "subtract", "multiply", "maximum", "minimum")
_UNARY_VALUE_OPS = ("negative", "abs", "copy", "zeros_like", "ones_like")


class _Gen:
    """One program being drawn: main's parameters (created on demand), global functions,
    the ADTs used, shareable operator calls, and a count of each form drawn."""

    def __init__(self, draw: st.DrawFn, table: OpTable, stats: dict[str, int] | None,
                 budget: int = 12, edge: bool = False, focus: Focus | None = None) -> None:
        self.draw, self.table, self.stats = draw, table, stats
        self.edge = edge  # constants sometimes near the float range (``EDGE_ODDS``)
        self.focus = focus if focus else None
        #: focused signatures by result type (``focus_sigs``)
        self.fsigs: dict[Type, list[Sig]] = {}
        for name in (focus.ops if focus else ()):
            for sig in focus_sigs(name):  # (``?`` results are never generated at)
                if _concrete(sig.out, empty=True):
                    self.fsigs.setdefault(sig.out, []).append(sig)
                    if isinstance(sig.out, TupleType):  # and each tensor field of it
                        for i, f in enumerate(sig.out.fields):
                            if isinstance(f, TensorType):
                                self.fsigs.setdefault(f, []).append(
                                    dataclasses.replace(sig, out=f, proj=i,
                                                        whole=sig.out))
        for sig in (focus.sigs if focus else ()):  # seen firing: half its op's calls
            same = [s for s in self.fsigs.get(sig.out, []) if s.op == sig.op]
            self.fsigs.setdefault(sig.out, []).extend([sig] * max(1, len(same)))
        self.params: list[Var] = []
        self.globals: dict[str, Function] = {}
        self.adts: dict[str, TypeData] = {}
        self.pool: list[tuple[Expr, Type, Env, object]] = []
        self.scope: object = "main"
        self.count = 0
        self.nglobals = 0
        #: forms (and operator calls) left to draw: bounds the size, hence the run time
        self.budget = budget

    def level(self, name: str) -> int:
        return self.table.levels.get(name, 10)

    # -- drawing helpers
    def pick(self, seq: typing.Sequence) -> typing.Any:
        return seq[0] if len(seq) == 1 else self.draw(st.sampled_from(seq))

    def spread(self, seq: typing.Sequence) -> typing.Any:
        """Like ``pick``, but (nearly) uniform: hypothesis favours the first element of a
        ``sampled_from``, which would make ``abs`` and ``add`` most of the operators."""
        x = self.draw(st.integers(0, 2**16 - 1))  # small values are the likeliest: scramble
        return seq[(x * 2654435761) % 2**32 % len(seq)]

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def fresh(self, stem: str, ty: Type | None) -> Var:
        self.count += 1
        return Var(f"{stem}{self.count}", ty)

    def note(self, form: str) -> None:
        if self.stats is not None:
            self.stats[form] = self.stats.get(form, 0) + 1

    def adt(self, name: str) -> TypeData:
        if name not in self.adts:
            self.adts[name] = _list_adt() if name == "List" else _box_adt()
        return self.adts[name]

    # -- types
    def tensor_type(self) -> TensorType:
        return self.pick(_WEIGHTED)

    def a_type(self, depth: int, first_order: bool = False) -> Type:
        if depth <= 0:
            return self.tensor_type()
        kinds = ["tensor", "tensor", "tensor", "tuple", "list", "box"]
        if not first_order:
            kinds += ["fn", "ref"]
        kind = self.pick(kinds)
        if kind == "tensor":
            return self.tensor_type()
        if kind == "tuple":
            return TupleType((self.tensor_type(), self.a_type(depth - 1, first_order)))
        if kind in ("list", "box"):
            header = self.adt("List" if kind == "list" else "Box").header
            return TypeCall(header, (self.tensor_type(),))
        if kind == "fn":
            return FuncType((self.tensor_type(),), self.tensor_type())
        return RefType(self.tensor_type())

    # -- expressions
    def expr(self, ty: Type, env: Env, depth: int) -> Expr:
        """An expression of type ``ty`` using the variables of ``env`` (and main's
        parameters), at most ``depth`` forms deep."""
        if depth <= 0 or self.budget <= 0:
            return self.leaf(ty, env, ops=depth == 0 and self.budget > 0)
        self.budget -= 1
        forms = ["leaf"]
        tensor = isinstance(ty, TensorType)
        if tensor and ty in self.table.by_out:
            forms += ["op"] * 12
            if any(self.shareable(ty, env)):
                forms += ["share"] * (4 if self.focus else 1)
        if not tensor:
            forms += ["intro", "intro"]
        forms += ["let", "if", "proj", "apply", "hof", "loop", "match", "match", "ref", "ref",
                  "global", "anylet", "anylet"]
        if self.callees(ty, env):
            forms.append("callvar")
        if self.focus is not None:
            # half the draws: a focused operator call (where one gives ``ty``) or form
            focused = [f for f in self.focus.forms if (f != "share" or "share" in forms)
                       and (f != "dup" or "op" in forms)]
            focused += ["focus"] * 2 if ty in self.fsigs else []
            if focused and self.spread((True, False)):
                return getattr(self, "f_" + self.spread(focused))(ty, env, depth - 1)
        form = self.pick(forms)
        return getattr(self, "f_" + form)(ty, env, depth - 1)

    def shareable(self, ty: Type, env: Env) -> list[Expr]:
        return [node for node, t, e, scope in self.pool
                if t == ty and scope is self.scope and env[:len(e)] == e]

    def callees(self, ty: Type, env: Env) -> list[tuple[Var, FuncType]]:
        return [(v, t) for v, t in env if isinstance(t, FuncType) and t.ret_type == ty]

    def leaf(self, ty: Type, env: Env, ops: bool = False) -> Expr:
        """A variable, parameter, constant or a literal of leaves; with ``ops``, also an
        operator call on leaves (most operators sit at the bottom of programs)."""
        if ops and ty in self.fsigs and self.spread((True, False)):
            self.budget -= 1
            return self.f_focus(ty, env, -1)
        if ops and ty in self.table.by_out and self.flag():
            self.budget -= 1
            return self.f_op(ty, env, -1)
        self.note("leaf")
        found: list[typing.Callable[[], Expr]] = []
        found += [lambda v=v: v for v, t in reversed(env) if t == ty]  # innermost first
        if isinstance(ty, TensorType) and self.scope == "main":
            found[min(1, len(found)):0] = [lambda: self.param(ty)] * 3
        for v, t in env:
            if isinstance(t, TupleType):
                found += [lambda v=v, i=i: TupleGetItem(v, i)
                          for i, f in enumerate(t.fields) if f == ty]
            if isinstance(t, RefType) and t.value == ty:
                found.append(lambda v=v: RefRead(v))
        found.append(lambda: self.intro(ty, env, 0))
        return self.spread(found)()

    def param(self, ty: TensorType) -> Expr:
        same = [p for p in self.params if p.type_annotation == ty]
        options = same + ([None] if len(self.params) < MAX_PARAMS else [])
        if not options:
            return self.constant(ty)
        chosen = self.pick(options)
        if chosen is None:
            chosen = Var(f"p{len(self.params)}", ty)
            self.params.append(chosen)
        return chosen

    def other_leaf(self, ty: TensorType, avoid: Expr) -> Expr:
        """A parameter of ``ty`` other than ``avoid`` (a new one if room), else a constant."""
        if self.scope == "main":
            others = [p for p in self.params if p.type_annotation == ty and p is not avoid]
            if others:
                return others[0]
            if len(self.params) < MAX_PARAMS:
                param = Var(f"p{len(self.params)}", ty)
                self.params.append(param)
                return param
        return self.constant(ty)

    def constant(self, ty: TensorType) -> Expr:
        pool = value_pool(ty.dtype)
        if self.focus is not None:  # the focused ops' values that matter
            pool += focus_values(self.focus.ops, ty.dtype, self.edge)
        if self.edge and edge_values(ty.dtype) and _edge_drawn(self.draw):
            pool += edge_values(ty.dtype)
        scalar = Constant(np.array(self.pick(pool), dtype=ty.dtype))
        if not ty.shape:
            return scalar
        return Call(Op("broadcast_to"), (scalar,),
                    make_attrs("broadcast_to", {"shape": tuple(ty.shape)}))

    def intro(self, ty: Type, env: Env, depth: int) -> Expr:
        """The introduction form of ``ty`` with sub-expressions ``depth`` deep."""
        sub = (lambda t, e=env: self.leaf(t, e)) if depth <= 0 else (
            lambda t, e=env: self.expr(t, e, depth - 1))
        match ty:
            case TensorType():
                return self.constant(ty)
            case TupleType(fields):
                return Tuple(tuple(sub(f) for f in fields))
            case FuncType((arg,), ret):
                if arg == ret and self.flag():
                    ok = [n for n in _UNARY_VALUE_OPS if arg.dtype != "bool"]  # type: ignore
                    if ok:
                        return Op(self.pick(ok))
                x = self.fresh("x", arg)
                return Function((x,), sub(ret, env + ((x, arg),)), ret)
            case TypeCall(header, (elem,)):
                td = self.adt(header.name)
                if header.name == "Box":
                    full, empty = td.constructors
                    if self.flag():
                        return self.annotated_empty(empty, ty)
                    return Call(full, (sub(elem),))
                nil, cons = td.constructors
                length = self.draw(st.integers(1, 3)) if depth > 0 else 1
                if self.flag():
                    return self.annotated_empty(nil, ty)
                out: Expr = Call(nil, ())
                for _ in range(length):
                    out = Call(cons, (sub(elem), out))
                return out
            case RefType(value):
                return RefCreate(sub(value))
        raise AssertionError(f"no introduction form for {ty!r}")

    def annotated_empty(self, ctor: Constructor, ty: Type) -> Expr:
        var = self.fresh("e", ty)  # the annotation fixes the constructor's type argument
        return Let(var, Call(ctor, ()), var)

    # -- one method per form (``depth`` is already one less than the caller's)
    def f_leaf(self, ty: Type, env: Env, depth: int) -> Expr:
        return self.leaf(ty, env)

    def f_intro(self, ty: Type, env: Env, depth: int) -> Expr:
        return self.intro(ty, env, depth + 1)

    def f_op(self, ty: Type, env: Env, depth: int) -> Expr:
        """T-App-Op: an operator call whose relation gives ``ty``; operands may be equal."""
        self.note("op")
        by_op = self.table.by_out[ty]
        names = sorted(by_op)
        # TVM's support level 1 (the basic operators) three times as often as the rest
        binary = [n for n in names for _ in range(3 if self.level(n) <= 1 else 1)
                  if any(_symmetric(s) for s in by_op[n])]
        if binary and self.draw(st.integers(0, 3)):  # 3/4 of the calls: f(T, T) operators
            # (where operand order and ties matter)
            sig = self.spread([s for s in by_op[self.spread(binary)] if _symmetric(s)])
        else:  # a family first (each equally often), then one of its operators
            families = sorted({self.table.family[n] for n in names})
            family = self.spread(families)
            sig = self.spread(by_op[self.spread([n for n in names
                                                 if self.table.family[n] == family])])
        args: list[Expr] = []
        for i, t in enumerate(sig.args):
            # equal operands: a quarter of the calls, half of the comparisons
            ties = 1 if isinstance(ty, TensorType) and ty.dtype == "bool" else 3
            if i and t == sig.args[0] and self.draw(st.integers(0, ties)) == ties:
                args.append(args[0])  # equal operands, one shared node
                continue
            arg = self.expr(t, env, depth)
            if i and arg is args[0] and isinstance(t, TensorType):
                # not asked for equal operands: a leaf other than the first operand (both
                # would otherwise often be the first parameter, hiding operand order)
                arg = self.other_leaf(t, args[0])
            args.append(arg)
        if (sig.op in _VALUE_OPS and len(args) == 2 and sig.args == (ty, ty)
                and self.flag()):
            self.note("opvalue")  # T-Op: the operator as a value, let-bound then called
            f = self.fresh("f", None)
            return Let(f, Op(sig.op), Call(f, tuple(args)))
        call = Call(Op(sig.op), tuple(args), sig.attrs)
        self.pool.append((call, ty, env, self.scope))
        return call

    def f_focus(self, ty: Type, env: Env, depth: int, other_than: str = "") -> Expr:
        """A call of a focused operator giving ``ty`` (``focus_sigs``; each operator equally
        often, then one of its signatures, ``other_than`` excluded when another gives
        ``ty``): operands fed by another focused operator (a chain, ``conv -> multiply``),
        by other expressions, a constant of values that matter, or equal; shareable."""
        self.note("focus")
        ops = sorted({s.op for s in self.fsigs[ty]})
        op = self.spread([o for o in ops if o != other_than] or ops)
        sig = self.spread([s for s in self.fsigs[ty] if s.op == op])
        args: list[Expr] = []
        constants = self.focus.constants if self.focus else ()
        for i, t in enumerate(sig.args):
            if i and constants and isinstance(t, TensorType) and self.flag():
                # a constant operand seen making the pass fire (x * 1, x + 0)
                value = np.full(tuple(t.shape), self.spread(constants), dtype=t.dtype)
                args.append(Constant(value))
                continue
            if (t in self.fsigs and self.budget > 0 and isinstance(t, TensorType)
                    and any(s.op != sig.op for s in self.fsigs[t]) and self.flag()):
                self.budget -= 1
                args.append(self.f_focus(t, env, depth - 1, other_than=sig.op))
                continue
            if i and t == sig.args[0] and self.draw(st.integers(0, 3)) == 3:
                args.append(args[0])  # equal operands (x - x, maximum(x, x))
                continue
            # a constant of values that matter: a quarter of the first operands, half of
            # the others (a scale, a bias, a bound: what rewrites fold) and of those at a
            # type no operator gives (a leaf anyway)
            if isinstance(t, TensorType) and self.draw(st.integers(0, 3)) >= (
                    3 if t in self.table.by_out and not i else 2):
                args.append(self.values_constant(t))
                continue
            arg = self.expr(t, env, depth)
            if i and arg is args[0] and isinstance(t, TensorType):
                arg = self.other_leaf(t, args[0])
            if isinstance(t, TupleType) and (not isinstance(arg, Tuple) or self.flag()):
                # a tuple literal of distinct operands (where their order matters)
                fields: list[Expr] = []
                for f in t.fields:
                    field = self.expr(f, env, depth)
                    if fields and any(field is g for g in fields) and isinstance(f, TensorType):
                        field = self.other_leaf(f, fields[0])
                    fields.append(field)
                arg = Tuple(tuple(fields))
            args.append(arg)
        call = Call(Op(sig.op), tuple(args), sig.attrs)
        if sig.proj is not None:  # a field of a tuple-valued call (shareable as the tuple)
            self.pool.append((call, sig.whole, env, self.scope))
            return TupleGetItem(call, sig.proj)
        self.pool.append((call, ty, env, self.scope))
        return call

    def values_constant(self, ty: TensorType) -> Expr:
        """A constant tensor whose elements are drawn from the pool and the focused ops'
        values that matter (half the time from those alone): half the time elements that
        differ, else one value."""
        special = focus_values(self.focus.ops if self.focus else (), ty.dtype, self.edge)
        seed = self.draw(st.integers(0, 2**32 - 1))
        # half the time the focused ops' values only (identities, thresholds, inf/nan)
        pool = special if special and seed % 4 >= 2 else value_pool(ty.dtype) + special
        rng = np.random.default_rng(seed)
        values = np.array(pool, dtype=ty.dtype)
        if seed % 2:  # half the time one value throughout (a uniform scale, all ties)
            values = values[rng.integers(len(values)):][:1]
        data = rng.choice(values, size=tuple(ty.shape))
        return Constant(np.asarray(data, dtype=ty.dtype))

    def comparison(self, env: Env, depth: int) -> Expr:
        """A condition comparing two operands of one non-bool type (``less(%a, %b)``,
        half the time on equal operands): where strict and non-strict comparisons differ."""
        sigs = [s for sigs in self.table.by_out.get(BOOL, {}).values() for s in sigs
                if _symmetric(s) and s.args[0].dtype != "bool"]  # type: ignore[union-attr]
        if not sigs:
            return self.expr(BOOL, env, depth)
        sig = self.spread(sigs)
        a = self.expr(sig.args[0], env, depth)
        b = a if self.flag() else self.expr(sig.args[1], env, depth)
        return Call(Op(sig.op), (a, b), sig.attrs)

    def f_share(self, ty: Type, env: Env, depth: int) -> Expr:
        self.note("share")
        return self.pick(self.shareable(ty, env))

    def f_dup(self, ty: Type, env: Env, depth: int) -> Expr:
        """An operator call equal to an earlier one but a distinct node (a common
        subexpression written twice, where ``share`` reuses the node itself)."""
        self.note("dup")
        earlier = self.shareable(ty, env)
        if earlier and self.flag():
            return dataclasses.replace(self.pick(earlier))
        node = self.f_op(ty, env, depth)  # a call, then both it and its copy used
        sigs = [s for sigs in self.table.by_out[ty].values() for s in sigs
                if s.args == (ty, ty)]
        if not sigs or not isinstance(node, Call):
            return node
        sig = self.spread(sigs)
        return Call(Op(sig.op), (node, dataclasses.replace(node)), sig.attrs)

    def f_let(self, ty: Type, env: Env, depth: int) -> Expr:
        self.note("let")
        t2 = ty if self.flag() else self.a_type(1)
        var = self.fresh("x", t2)
        value = self.expr(t2, env, depth)
        return Let(var, value, self.expr(ty, env + ((var, t2),), depth))

    def f_if(self, ty: Type, env: Env, depth: int) -> Expr:
        self.note("if")
        cond = self.comparison(env, depth) if self.flag() else self.expr(BOOL, env, depth)
        return If(cond, self.expr(ty, env, depth), self.expr(ty, env, depth))

    def f_proj(self, ty: Type, env: Env, depth: int) -> Expr:
        self.note("proj")
        other = self.a_type(0)
        fields = [self.expr(ty, env, depth), self.expr(other, env, depth)]
        index = 1 if self.flag() else 0
        if index:
            fields.reverse()
        return TupleGetItem(Tuple(tuple(fields)), index)

    def f_apply(self, ty: Type, env: Env, depth: int) -> Expr:
        """A closure (capturing ``env``) bound by a let, then called."""
        self.note("apply")
        t2 = self.a_type(0)
        x = self.fresh("x", t2)
        fty = FuncType((t2,), ty)
        f = self.fresh("f", fty)
        fn = Function((x,), self.expr(ty, env + ((x, t2),), depth), ty)
        return Let(f, fn, Call(f, (self.expr(t2, env, depth),)))

    def f_hof(self, ty: Type, env: Env, depth: int) -> Expr:
        """A higher-order function applied to a function value (a closure or an op)."""
        self.note("hof")
        t2 = self.a_type(0)
        fty = FuncType((t2,), ty)
        g, y = self.fresh("g", fty), self.fresh("y", t2)
        inner: Expr = Call(g, (y,))
        if t2 == ty and self.flag():
            inner = Call(g, (inner,))
        h = self.fresh("h", FuncType((fty, t2), ty))
        return Let(h, Function((g, y), inner, ty),
                   Call(h, (self.expr(fty, env, depth), self.expr(t2, env, depth))))

    def loop_body(self, ty: Type, env: Env, depth: int, callee: Expr) -> Function:
        n, acc = self.fresh("n", INT), self.fresh("acc", ty)
        step = self.expr(ty, env + ((n, INT), (acc, ty)), depth)
        one = Constant(np.array(1, "int32"))
        attrs = make_attrs("less", {})
        minus_one = Constant(np.array(-1, "int32"))
        body = If(Call(Op("less"), (n, one), attrs), acc,
                  Call(callee, (Call(Op("add"), (n, minus_one), make_attrs("add", {})),
                                step)))
        return Function((n, acc), body, ty)

    def f_loop(self, ty: Type, env: Env, depth: int) -> Expr:
        """Bounded recursion: a let-bound function counting a constant 0..3 down."""
        self.note("loop")
        loop = self.fresh("loop", FuncType((INT, ty), ty))
        fn = self.loop_body(ty, env, depth, loop)
        count = Constant(np.array(self.spread(range(LOOP_MAX + 1)), "int32"))
        return Let(loop, fn, Call(loop, (count, self.expr(ty, env, depth))))

    def f_match(self, ty: Type, env: Env, depth: int) -> Expr:
        """T-Match on a List (nested, overlapping clauses in a drawn order) or a Box."""
        self.note("match")
        elem = self.tensor_type()
        if self.flag():
            full, empty = self.adt("Box").constructors
            data = self.expr(TypeCall(full.belong_to, (elem,)), env, depth)
            a = self.fresh("a", elem)
            rest = PatternConstructor(empty, ()) if self.flag() else PatternWildcard()
            return Match(data, (Clause(PatternConstructor(full, (PatternVar(a),)),
                                       self.expr(ty, env + ((a, elem),), depth)),
                                Clause(rest, self.expr(ty, env, depth))))
        nil, cons = self.adt("List").constructors
        lty = TypeCall(cons.belong_to, (elem,))
        data = self.expr(lty, env, depth)
        names = [n for n in ("cons2", "cons1", "single", "nil") if self.flag()] or ["cons1"]
        order = self.draw(st.permutations(names))
        clauses = []
        for name in order:
            pat, binds = self.list_pattern(name, nil, cons, elem, lty)
            clauses.append(Clause(pat, self.expr(ty, env + binds, depth)))
        if not {"cons1", "nil"} <= set(order):
            clauses.append(Clause(PatternWildcard(), self.expr(ty, env, depth)))
        return Match(data, tuple(clauses))

    def list_pattern(self, name: str, nil: Constructor, cons: Constructor, elem: Type,
                     lty: Type) -> tuple[Pattern, Env]:
        a = self.fresh("a", elem)
        if name == "nil":
            return PatternConstructor(nil, ()), ()
        if name == "cons1":
            rest = self.fresh("rest", lty)
            return PatternConstructor(cons, (PatternVar(a), PatternVar(rest))), (
                (a, elem), (rest, lty))
        if name == "single":
            return PatternConstructor(cons, (PatternVar(a), PatternConstructor(nil, ()))), (
                (a, elem),)
        b = self.fresh("b", elem)
        inner = PatternConstructor(cons, (PatternVar(b), PatternWildcard()))
        return PatternConstructor(cons, (PatternVar(a), inner)), ((a, elem), (b, elem))

    def f_ref(self, ty: Type, env: Env, depth: int) -> Expr:
        """T-Ref, T-WriteRef, T-ReadRef: a cell written, then read."""
        self.note("ref")
        rty = RefType(ty)
        r, u = self.fresh("r", rty), self.fresh("u", TupleType(()))
        inner = env + ((r, rty),)
        write = RefWrite(r, self.expr(ty, inner, depth))
        tail = self.expr(ty, inner, depth) if self.flag() else RefRead(r)
        return Let(r, RefCreate(self.expr(ty, env, depth)), Let(u, write, tail))

    def f_global(self, ty: Type, env: Env, depth: int) -> Expr:
        """A call of a new global function (recursive: a bounded loop) from main."""
        self.note("global")
        name = f"g{self.nglobals}"
        self.nglobals += 1
        saved = self.scope
        self.scope = name
        if self.flag():
            fn = self.loop_body(ty, (), depth, GlobalVar(name))
            args: tuple[Expr, ...] = ()
            self.scope = saved
            count = Constant(np.array(self.spread(range(LOOP_MAX + 1)), "int32"))
            args = (count, self.expr(ty, env, depth))
        else:
            t2 = self.a_type(0)
            x = self.fresh("x", t2)
            fn = Function((x,), self.expr(ty, ((x, t2),), depth), ty)
            self.scope = saved
            args = (self.expr(t2, env, depth),)
        self.globals[name] = fn
        return Call(GlobalVar(name), args)

    def f_anylet(self, ty: Type, env: Env, depth: int) -> Expr:
        """Any operator (by name, then signature), let-bound and maybe used by the body."""
        self.note("anylet")
        family = self.spread(sorted(self.table.families))  # each family equally often
        sig = self.spread(self.table.by_op[self.spread(self.table.families[family])])
        args = tuple(self.expr(t, env, depth) for t in sig.args)
        var = self.fresh("x", sig.out)
        call = Call(Op(sig.op), args, sig.attrs)
        return Let(var, call, self.expr(ty, env + ((var, sig.out),), depth))

    def f_callvar(self, ty: Type, env: Env, depth: int) -> Expr:
        self.note("callvar")
        f, fty = self.pick(self.callees(ty, env))
        return Call(f, tuple(self.expr(t, env, depth) for t in fty.arg_types))


def _edge_drawn(draw: st.DrawFn) -> bool:
    """One draw in ``EDGE_ODDS`` is an edge draw (shrinking goes to 0: ordinary values)."""
    return draw(st.integers(0, EDGE_ODDS - 1)) == EDGE_ODDS - 1


def _symmetric(sig: Sig) -> bool:
    """A call on two operands of one type: where operand order and ties matter."""
    return len(sig.args) == 2 and sig.args[0] == sig.args[1]


@st.composite
def programs(draw: st.DrawFn, max_depth: int = 3, max_forms: int = 12,
             stats: dict[str, int] | None = None, edge: bool = False,
             focus: Focus | None = None) -> IRModule:
    """A well-typed module ``@main(%p0, ...) -> T`` (see the module docstring); ``T`` is
    first-order (tensors, tuples, ADTs). At most ``max_depth`` forms nest and at most
    ``max_forms`` forms and operator calls are drawn (beyond them, leaves): programs stay
    small, so that checking and two evaluations take a few milliseconds. ``stats``, when
    given, counts the forms drawn. ``edge``: floating-point constants are sometimes drawn
    near the ends of the range (``edge_values``). ``focus`` (``relay_ref.testing.focus``):
    most programs contain the focused operators / forms, in varied contexts (the
    result of ``@main``, or under ``if``, in closures, shared, fed by and feeding other ops),
    their operands drawn from the ops' values that matter."""
    gen = _Gen(draw, op_table(), stats, max_forms, edge, focus)
    outs = sorted((t for t in gen.fsigs if isinstance(t, TensorType | TupleType)), key=repr)
    # types several focused operators give: where they feed each other (conv -> multiply)
    chained = [t for t in outs if len({s.op for s in gen.fsigs[t]}) > 1]
    # and the types of signatures seen making the pass fire
    hinted = sorted({s.out for s in focus.sigs if s.out in gen.fsigs}, key=repr) if focus \
        else []
    if outs and gen.spread((True, True, False)):  # mostly: @main returns a focused call's type
        ret = gen.spread(hinted if hinted and gen.flag() else
                         chained if chained and gen.flag() else outs)
    else:
        ret = gen.a_type(1, first_order=True)
    depth = draw(st.integers(1, max_depth))
    if ret in gen.fsigs and gen.spread((True, False)):
        body = gen.f_focus(ret, (), depth - 1)
    else:
        body = gen.expr(ret, (), depth)
    main = Function(tuple(gen.params), body, ret)
    functions = dict(gen.globals)
    functions["main"] = main
    return IRModule(functions, {td.name: td for td in gen.adts.values()})


# st.composite writes the return type as SearchStrategy['IRModule'], a name its own module
# does not know: the resolved type, so that signature readers (pdoc, help()) need no lookup
_signature = inspect.signature(programs)
programs.__signature__ = _signature.replace(  # type: ignore[attr-defined]
    parameters=[p.replace(annotation=Focus | None) if p.name == "focus" else p
                for p in _signature.parameters.values()],
    return_annotation=st.SearchStrategy[IRModule])
programs.__annotations__["return"] = st.SearchStrategy[IRModule]
programs.__annotations__["focus"] = Focus | None


def arguments(param_types: typing.Sequence[Type], edge: bool = False,
              focus: Focus | None = None) -> st.SearchStrategy[tuple]:
    """Values for parameters of these types: tensors with elements from ``value_pool``
    (shrinking towards zeros), tuples of those. ``edge``: one floating-point tensor in
    ``EDGE_ODDS`` also draws from ``edge_values`` (shrinking towards ordinary values).
    ``focus``: the pool also holds the focused operators' values that matter
    (``relay_ref.testing.focus.focus_values``)."""
    ops = focus.ops if focus else ()
    names = sorted(_shape_vars_of(param_types))
    if not names:
        return st.tuples(*(_value(t, edge, ops) for t in param_types))
    # Shape-Bind: one value per shape variable, shared by every parameter mentioning it
    # (1..SYM_MAX: small; an environment giving some dimension a negative size is skipped)
    types = tuple(param_types)
    envs = st.fixed_dictionaries({v: st.integers(1, SYM_MAX) for v in names}).filter(
        lambda env: _concrete_types(types, env) is not None)
    return envs.flatmap(lambda env: st.tuples(
        *(_value(t, edge, ops) for t in _concrete_types(types, env))))  # type: ignore[union-attr]


#: the largest value ``arguments`` gives a shape variable
SYM_MAX = 4


def _shape_vars_of(types: typing.Iterable[Type]) -> set[str]:
    from relay_ref.ir.shape import shape_vars

    out: set[str] = set()
    stack = list(types)
    while stack:
        t = stack.pop()
        if isinstance(t, TensorType):
            out |= shape_vars(t.shape)
        elif isinstance(t, TupleType):
            stack.extend(t.fields)
    return out


def _concrete_types(types: tuple[Type, ...], env: dict[str, int]) -> list[Type] | None:
    """``types`` with the shape variables of ``env`` evaluated; None if a dimension is
    negative there (or still symbolic)."""
    from relay_ref.ir.shape import substitute_shape

    def conc(t: Type) -> Type | None:
        if isinstance(t, TupleType):
            fields = [conc(f) for f in t.fields]
            return None if any(f is None for f in fields) else TupleType(tuple(fields))
        if isinstance(t, TensorType):
            shape = substitute_shape(t.shape, env)
            if any(isinstance(d, int) and d < 0 for d in shape) or \
                    not all(isinstance(d, int | AnyDim) for d in shape):
                return None
            return TensorType(shape, t.dtype)
        return t

    out = [conc(t) for t in types]
    return None if any(t is None for t in out) else out  # type: ignore[return-value]


def _value(ty: Type, edge: bool, ops: tuple[str, ...] = ()) -> st.SearchStrategy:
    match ty:
        case TensorType(shape, dtype) if all(isinstance(d, int) for d in shape):
            # elements from the pool, chosen by a drawn seed: varied values (hypothesis
            # draws small integers most often, and pool[0] everywhere hides most bugs) with
            # many ties; shrinking goes to seed 0, a fixed mix
            base = value_pool(dtype) + focus_values(ops, dtype, edge)
            pool = np.array(base, dtype=dtype)
            if edge and edge_values(dtype):  # the pool widened one time in EDGE_ODDS
                wide = np.array(base + edge_values(dtype), dtype=dtype)
                return st.tuples(st.integers(0, EDGE_ODDS - 1), st.integers(0, 2**32 - 1)).map(
                    lambda drawn: np.random.default_rng(drawn[1]).choice(
                        wide if drawn[0] == EDGE_ODDS - 1 else pool, size=shape))
            return st.integers(0, 2**32 - 1).map(
                lambda seed: np.random.default_rng(seed).choice(pool, size=shape))
        case TupleType(fields):
            return st.tuples(*(_value(f, edge, ops) for f in fields))
    raise TypeError(f"cannot generate arguments of type {ty!r} (tensors and tuples only)")


def resolve_focus(focus: str | Iterable[str] | Focus | None) -> Focus:
    """The ``Focus`` named by ``focus``: a comma-separated string or names (operators, op
    families, ``FOCUS_FORMS``). Raises ``ValueError`` for an unknown name."""
    if focus is None:
        return Focus()
    if isinstance(focus, Focus):
        return focus
    names = [n.strip() for n in (focus.split(",") if isinstance(focus, str) else focus)]
    names = [n for n in names if n]
    table = op_table()
    ops: list[str] = []
    forms: list[str] = []
    for name in names:
        if name in table.by_op:
            ops.append(name)
        elif name in table.families:
            ops += table.families[name]
        elif name in FOCUS_FORMS:
            forms.append(FOCUS_FORMS[name])
        else:
            known = [*table.by_op, *table.families, *FOCUS_FORMS]
            extra = (" (it has no generated calls)" if name in all_ops() else "")
            if name in SYMBOLIC_OPS:
                extra = (" (its calls are generated by relay_ref.testing.symbolic_programs: "
                         "check_pass(pass_, programs=symbolic_programs()))")
            raise ValueError(f"check_pass: focus {name!r} is not an operator, op family or "
                             f"expression form{extra}{did_you_mean(name, known, quote=True)}"
                             f" (families: {', '.join(sorted(table.families))}; forms: "
                             f"{', '.join(FOCUS_FORMS)})")
    if not names:
        raise ValueError("check_pass: focus names nothing")
    return Focus(tuple(dict.fromkeys(ops)), tuple(dict.fromkeys(forms)), tuple(names))


@functools.cache
def focus_sigs(op_name: str) -> tuple:
    """Signatures (``programs.Sig``) for focused calls of ``op_name``: those from its
    ``values`` table first (attributes x argument types; zero extents allowed), then its
    ordinary ones."""
    op = all_ops()[op_name]
    ordinary = list(op_table().by_op.get(op_name, ()))
    values = op.values
    if values is None or not (values.attrs or values.args):
        return tuple(ordinary)
    attrs: list[object] = []
    for items in values.attrs or ({},):
        try:
            attrs.append(make_attrs(op_name, dict(items)))
        except Exception:  # noqa: BLE001 - a table entry this op refuses: skipped
            continue
    if not values.attrs:
        attrs += [s.attrs for s in ordinary[:1]]
    args = [a for spec in values.args for a in _expand_example(spec)] + _arg_candidates(op)
    special = _accepted(op, attrs, args, empty=True)
    return tuple(special + ordinary)
