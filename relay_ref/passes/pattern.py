"""The dataflow pattern language: patterns over expressions, a matcher, and rule tables.

One language for every rewrite written as rules (SimplifyExpr, SimplifyInference, FuseOps's
node kinds, the BYOC partitioning passes to come), with the semantics of TVM's
``relay.dataflow_pattern`` (``python/tvm/relay/dataflow_pattern``, ``dataflow_matcher.cc``)
where TVM has them.

**Patterns** are frozen dataclasses compared by identity (``eq=False``, as expressions are):
two ``wildcard()`` are two different pattern variables, and a match maps each pattern node
to the expression it matched. Constructors::

    wildcard()                 any expression
    is_expr(e)                 the node ``e`` itself (identity; an ``Op`` by name)
    is_op("add")               the operator ``add`` (the callee, not a call of it)
    is_op_kind(k, ...)         any operator whose registry ``op_pattern`` is one of ``k``
    is_var(name=None)          a variable (with that name hint, if given)
    is_constant()              a constant
    is_tuple([p, ...])         a tuple with those fields (``None``: any fields)
    is_tuple_get_item(p, i)    a projection of ``p`` (index ``i``; ``None``: any index)
    p(a, b, ...)               a call whose callee matches ``p`` and arguments ``a, b``
                               (``p()`` with no arguments: a call with none; plain
                               expressions are lifted with ``is_expr``)
    p.call_any()               a call of ``p`` with any arguments
    p | q                      ``p`` or else ``q``
    p.optional(f)              ``p | f(p)``: ``p``, optionally consumed by ``f(p)`` (TVM)
    p.has_attr({...})          ``p`` whose call attributes (or function attributes, or, on
                               an ``Op``, registry fields; ``"TOpPattern"`` is
                               ``op_pattern``) have these values
    p.has_type(t)              ``p`` whose checked type equals ``t``
    p.has_dtype(d)             ``p`` of a tensor type of dtype ``d``
    p.has_shape(s)             ``p`` of a tensor type of shape ``s``
    p.where(pred, doc="")      ``p`` where ``pred(expr, match)`` holds; ``match`` gives the
                               bindings made so far (``match[q]``) and ``type_of``

**Matching** (``match(pattern, expr, type_of=None)`` or ``Matcher``): the semantics of TVM's
matcher. A pattern node that occurs twice in a pattern must match the same expression both
times (``x = wildcard(); is_op("add")(x, x)`` matches ``add(%a, %a)`` only); a call pattern
of ``add`` or ``multiply`` also matches the call with its two arguments swapped (TVM's
commutative matching). Unlike TVM, the matcher backtracks fully: an alternative or a
commuted argument order that matches locally but makes a later constraint fail is undone
and the next one is tried (TVM commits to the first local success), so ``where``
predicates that read other bindings are exact. Types come from ``type_of`` (a node without
a known type fails every type constraint). Cost: each attempt visits at most the
(pattern node, expression) pairs the pattern reaches, a number bounded by the pattern, not
the program; ``Matcher.visits`` counts them. Recursion is over the pattern's depth only.
``Match.inputs()`` lists what a composite function made of a match takes as arguments
(TVM's partitioner's choice), and ``find_matches`` every match in a program: what BYOC's
MergeComposite builds on.

**Rule tables** (``Rule(doc, pattern, rewrite)``, ``RuleTable``): ``rewrite(match)`` returns
the replacement of ``match.expr`` or ``None`` (no change). ``rewrite_fixpoint(expr, table)``
(``rewrite_module(mod, table)`` for every global function) rewrites bottom-up: each
distinct node is visited once per sweep (memoised by identity: a node used twice is matched
and rewritten once, and stays shared), after its children; the rules are tried at the
rebuilt node, the first whose pattern matches and whose rewrite returns an expression wins,
and the result is tried again (at most ``max_local`` times). Sweeps repeat until one
changes nothing (at most ``max_sweeps``). Each sweep is linear in the number of distinct
nodes (a table is indexed by the expression class and operator at each rule's root, so a
node is only tried against rules that could match it); iterative, so a 10 000-node chain
does not touch Python's recursion limit. With ``keep_types`` a rebuilt or rewritten node
inherits the recorded type of the node it replaces (for type-preserving rules), so type
constraints keep working on rewritten programs.

What is *not* written here: PartialEvaluate (``partial_eval.py``) is an evaluator over
partially-static values (environments, closures, references, residual lets), not a set of
local rewrites of operator calls; its "rules" are the cases of an interpreter, so it keeps
its own machinery. ``passes/rewrite.py`` is the traversal every pass rebuilds with
(``with_children``, ``rewrite``); the driver here is built on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from relay_ref.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType, Type
from relay_ref.passes.rewrite import map_functions, with_children

TypeOf = Callable[[Expr], "Type | None"]

#: Operators whose call patterns also match with the two arguments swapped (TVM).
COMMUTATIVE_OPS = frozenset({"add", "multiply"})

_REGISTRY_ALIASES = {"TOpPattern": "op_pattern"}


def _no_type(expr: Expr) -> Type | None:
    return None


# == patterns ==========================================================================

class DFPattern:
    """Base of all patterns (see the module docstring for the constructors)."""

    __slots__ = ()

    def __call__(self, *args: DFPattern | Expr) -> CallPattern:
        return CallPattern(self, tuple(_lift(a) for a in args))

    def call_any(self) -> CallPattern:
        """A call of this callee with any arguments."""
        return CallPattern(self, None)

    def __or__(self, other: DFPattern) -> AltPattern:
        return AltPattern(self, _lift(other))

    def optional(self, option: Callable[[DFPattern], DFPattern]) -> AltPattern:
        """``self | option(self)`` (TVM): ``self``, or ``self`` consumed by the option."""
        return self | option(self)

    def has_attr(self, attrs: Mapping[str, Any]) -> AttrPattern:
        return AttrPattern(self, tuple((k, _norm(v)) for k, v in attrs.items()))

    def has_type(self, ty: Type) -> TypePattern:
        return TypePattern(self, ty)

    def has_dtype(self, dtype: str) -> DataTypePattern:
        return DataTypePattern(self, str(dtype))

    def has_shape(self, shape: Sequence[object]) -> ShapePattern:
        return ShapePattern(self, tuple(shape))

    def where(self, pred: Callable[[Expr, Match], bool], doc: str = "") -> PredicatePattern:
        return PredicatePattern(self, pred, doc)

    def match(self, expr: Expr, type_of: TypeOf | None = None) -> Match | None:
        """The bindings of a match of ``self`` at ``expr``, or None."""
        return Matcher(type_of).match(self, expr)


def _lift(p: DFPattern | Expr) -> DFPattern:
    if isinstance(p, DFPattern):
        return p
    if isinstance(p, Expr):
        return ExprPattern(p)
    raise TypeError(f"not a pattern: {p!r}")


def _norm(v: object) -> object:
    """Attribute values compare as tuples (lists and tuples alike), recursively."""
    if isinstance(v, list | tuple):
        return tuple(_norm(x) for x in v)
    return v


_PAT = dict(frozen=True, slots=True, eq=False)


@dataclass(**_PAT)
class WildcardPattern(DFPattern):
    """Any expression."""


@dataclass(**_PAT)
class ExprPattern(DFPattern):
    """The node ``expr`` itself (identity); an ``Op`` matches any ``Op`` of its name."""

    expr: Expr


@dataclass(**_PAT)
class OperatorPattern(DFPattern):
    """An operator (``Op``) named ``name``."""

    name: str


@dataclass(**_PAT)
class OpKindPattern(DFPattern):
    """An operator whose registry fusion kind (``OpDef.op_pattern``) is in ``kinds``;
    an unknown operator's kind is OPAQUE."""

    kinds: frozenset[int]


@dataclass(**_PAT)
class VarPattern(DFPattern):
    """A variable; with ``name``, one with that name hint."""

    name: str | None = None


@dataclass(**_PAT)
class ConstantPattern(DFPattern):
    """A constant."""


@dataclass(**_PAT)
class CallPattern(DFPattern):
    """A call of ``op`` on ``args`` (``None``: any arguments)."""

    op: DFPattern
    args: tuple[DFPattern, ...] | None


@dataclass(**_PAT)
class TuplePattern(DFPattern):
    """A tuple whose fields match ``fields`` (``None``: any fields)."""

    fields: tuple[DFPattern, ...] | None


@dataclass(**_PAT)
class TupleGetItemPattern(DFPattern):
    """A projection ``tuple.index`` (``index`` None: any index)."""

    tuple_value: DFPattern
    index: int | None = None


@dataclass(**_PAT)
class AltPattern(DFPattern):
    """``left``, or else ``right``."""

    left: DFPattern
    right: DFPattern


@dataclass(**_PAT)
class AttrPattern(DFPattern):
    """``pattern`` with attribute values ``attrs`` (module docstring)."""

    pattern: DFPattern
    attrs: tuple[tuple[str, object], ...]


@dataclass(**_PAT)
class TypePattern(DFPattern):
    """``pattern`` whose type equals ``type``."""

    pattern: DFPattern
    type: Type


@dataclass(**_PAT)
class DataTypePattern(DFPattern):
    """``pattern`` of a tensor type with dtype ``dtype``."""

    pattern: DFPattern
    dtype: str


@dataclass(**_PAT)
class ShapePattern(DFPattern):
    """``pattern`` of a tensor type with shape ``shape``."""

    pattern: DFPattern
    shape: tuple[object, ...]


@dataclass(**_PAT)
class PredicatePattern(DFPattern):
    """``pattern`` where ``pred(expr, match)`` holds (the hook for conditions the other
    constructors cannot say); ``doc`` says what it checks."""

    pattern: DFPattern
    pred: Callable[[Expr, Match], bool]
    doc: str = ""


def wildcard() -> WildcardPattern:
    return WildcardPattern()


def is_expr(expr: Expr) -> ExprPattern:
    return ExprPattern(expr)


def is_op(name: str) -> OperatorPattern:
    """The operator ``name`` (called: ``is_op(name)(args...)``). An unregistered name is a
    ``ValueError`` (with a near miss), as TVM refuses it: such a pattern could never match."""
    from relay_ref.ops.registry import all_ops, has_op
    from relay_ref.suggest import did_you_mean

    if not isinstance(name, str) or not has_op(name):
        raise ValueError(f"is_op: unknown operator {name!r}"
                         + did_you_mean(str(name), all_ops(), quote=True))
    return OperatorPattern(name)


def is_op_kind(*kinds: int) -> OpKindPattern:
    return OpKindPattern(frozenset(int(k) for k in kinds))


def is_var(name: str | None = None) -> VarPattern:
    return VarPattern(name or None)


def is_constant() -> ConstantPattern:
    return ConstantPattern()


def is_tuple(fields: Iterable[DFPattern | Expr] | None) -> TuplePattern:
    return TuplePattern(None if fields is None else tuple(_lift(f) for f in fields))


def is_tuple_get_item(tuple_value: DFPattern | Expr,
                      index: int | None = None) -> TupleGetItemPattern:
    return TupleGetItemPattern(_lift(tuple_value), index)


# == matching ==========================================================================

class Match:
    """A successful match of ``pattern``: ``expr`` (the node matched), ``bindings``
    (pattern node -> expression), ``type_of`` and ``ctx`` (whatever the driver's caller
    passed)."""

    __slots__ = ("pattern", "expr", "bindings", "type_of", "ctx")

    def __init__(self, pattern: DFPattern, expr: Expr, bindings: dict[DFPattern, Expr],
                 type_of: TypeOf, ctx: object = None) -> None:
        self.pattern = pattern
        self.expr = expr
        self.bindings = bindings
        self.type_of = type_of
        self.ctx = ctx

    def inputs(self) -> list[Expr]:
        """The expressions a composite function made of this match takes as arguments,
        as TVM's partitioner chooses them: what the pattern's leaves matched (wildcards,
        variables, ``is_expr``), and the arguments of ``call_any()`` calls and the fields
        of ``is_tuple(None)`` tuples; not operators or functions, nor constants matched by
        ``is_constant()`` or ``is_expr(c)`` (they are embedded, as TVM does). Each once, in
        the pattern's post-order."""
        out: dict[int, Expr] = {}

        def add(e: Expr, embed: bool = False) -> None:
            if not (embed or isinstance(e, Op | Function)):
                out.setdefault(id(e), e)

        for p in _pattern_post_order(self.pattern):
            e = self.bindings.get(p)
            if e is None:
                continue
            if isinstance(p, CallPattern) and p.args is None:
                for a in e.args:  # type: ignore[attr-defined]
                    add(a)
            elif isinstance(p, TuplePattern) and p.fields is None:
                for f in e.fields:  # type: ignore[attr-defined]
                    add(f)
            elif not _pattern_children(p):
                add(e, embed=isinstance(p, ConstantPattern)
                    or (isinstance(p, ExprPattern) and isinstance(e, Constant)))
        return list(out.values())

    def __getitem__(self, pattern: DFPattern) -> Expr:
        return self.bindings[pattern]

    def get(self, pattern: DFPattern) -> Expr | None:
        return self.bindings.get(pattern)

    def __contains__(self, pattern: DFPattern) -> bool:
        return pattern in self.bindings


class Matcher:
    """Matches patterns against expressions (module docstring). ``visits`` counts the
    (pattern node, expression) pairs tried, over every ``match`` call of this matcher."""

    def __init__(self, type_of: TypeOf | None = None) -> None:
        self.type_of: TypeOf = type_of or _no_type
        self.visits = 0
        self._bound: dict[DFPattern, Expr] = {}
        self._view: Match | None = None

    def match(self, pattern: DFPattern, expr: Expr, ctx: object = None) -> Match | None:
        self._bound = {}
        self._view = Match(pattern, expr, self._bound, self.type_of, ctx)
        for _ in self._visit(pattern, expr):
            out = self._view
            out.bindings = dict(self._bound)
            return out
        return None

    # Each ``_visit`` is a generator: it yields once per way ``pattern`` matches ``expr``
    # consistently with the bindings made so far, with its own bindings in ``_bound``
    # while suspended, and undoes them before trying the next way or returning.
    def _visit(self, p: DFPattern, e: Expr) -> Iterator[None]:
        got = self._bound.get(p)
        if got is not None:
            # the same node again; an operator is the same by name (the parser makes one
            # ``Op`` per occurrence: ``r = is_op("nn.relu")`` used twice matches both)
            if got is e or (type(got) is Op and type(e) is Op and got.name == e.name):
                yield None
            return
        self.visits += 1
        for _ in self._cases(p, e):
            self._bound[p] = e
            yield None
            del self._bound[p]

    def _all(self, pats: Sequence[DFPattern], exprs: Sequence[Expr],
             i: int = 0) -> Iterator[None]:
        if i == len(pats):
            yield None
            return
        for _ in self._visit(pats[i], exprs[i]):
            yield from self._all(pats, exprs, i + 1)

    def _cases(self, p: DFPattern, e: Expr) -> Iterator[None]:
        match p:
            case WildcardPattern():
                yield None
            case ExprPattern(x):
                if x is e or (isinstance(x, Op) and isinstance(e, Op) and x.name == e.name):
                    yield None
            case OperatorPattern(name):
                if isinstance(e, Op) and e.name == name:
                    yield None
            case OpKindPattern(kinds):
                if isinstance(e, Op) and int(op_kind(e.name)) in kinds:
                    yield None
            case VarPattern(name):
                if isinstance(e, Var) and (name is None or e.name_hint == name):
                    yield None
            case ConstantPattern():
                if isinstance(e, Constant):
                    yield None
            case CallPattern(op, args):
                if not isinstance(e, Call):
                    return
                for _ in self._visit(op, e.op):
                    if args is None:
                        yield None
                    elif len(args) == len(e.args):
                        yield from self._all(args, e.args)
                        if (len(args) == 2 and isinstance(e.op, Op)
                                and e.op.name in COMMUTATIVE_OPS):
                            yield from self._all(args[::-1], e.args)
            case TuplePattern(fields):
                if not isinstance(e, Tuple):
                    return
                if fields is None:
                    yield None
                elif len(fields) == len(e.fields):
                    yield from self._all(fields, e.fields)
            case TupleGetItemPattern(tup, index):
                if isinstance(e, TupleGetItem) and index in (None, e.index):
                    yield from self._visit(tup, e.tuple_value)
            case AltPattern(left, right):
                yield from self._visit(left, e)
                yield from self._visit(right, e)
            case AttrPattern(inner, attrs):
                for _ in self._visit(inner, e):
                    if all(_attr_matches(e, k, v) for k, v in attrs):
                        yield None
            case TypePattern(inner, ty):
                for _ in self._visit(inner, e):
                    if self.type_of(e) == ty:
                        yield None
            case DataTypePattern(inner, dtype):
                for _ in self._visit(inner, e):
                    t = self.type_of(e)
                    if isinstance(t, TensorType) and t.dtype == dtype:
                        yield None
            case ShapePattern(inner, shape):
                for _ in self._visit(inner, e):
                    t = self.type_of(e)
                    if isinstance(t, TensorType) and tuple(t.shape) == shape:
                        yield None
            case PredicatePattern(inner, pred):
                for _ in self._visit(inner, e):
                    assert self._view is not None
                    if pred(e, self._view):
                        yield None
            case _:
                raise TypeError(f"unknown pattern {type(p).__name__}")


def _pattern_children(p: DFPattern) -> tuple[DFPattern, ...]:
    match p:
        case CallPattern(op, args):
            return (op, *(args or ()))
        case TuplePattern(fields):
            return tuple(fields or ())
        case TupleGetItemPattern(tup):
            return (tup,)
        case AltPattern(left, right):
            return (left, right)
        case (AttrPattern(inner) | TypePattern(inner) | DataTypePattern(inner)
              | ShapePattern(inner) | PredicatePattern(inner)):
            return (inner,)
    return ()


def _pattern_post_order(p: DFPattern) -> list[DFPattern]:
    """Each node of pattern ``p`` once, after its sub-patterns (iterative)."""
    out: list[DFPattern] = []
    seen: set[int] = set()
    stack: list[tuple[DFPattern, bool]] = [(p, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            out.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((k, False) for k in reversed(_pattern_children(node)))
    return out


def op_kind(name: str) -> int:
    """The registry's fusion kind of operator ``name`` (OPAQUE when unknown)."""
    from relay_ref.ops.registry import OpPattern, get_op, has_op

    return get_op(name).op_pattern if has_op(name) else OpPattern.OPAQUE


_MISSING = object()


def _attr_matches(e: Expr, key: str, value: object) -> bool:
    if isinstance(e, Op):
        from relay_ref.ops.registry import get_op, has_op

        if not has_op(e.name):
            return False
        got = getattr(get_op(e.name), _REGISTRY_ALIASES.get(key, key), _MISSING)
    elif isinstance(e, Call):
        got = getattr(e.attrs, key, _MISSING) if e.attrs is not None else _MISSING
    elif isinstance(e, Function):
        got = e.attr(key)
        got = _MISSING if got is None else got
    else:
        return False
    return got is not _MISSING and _norm(got) == value


def match(pattern: DFPattern, expr: Expr, type_of: TypeOf | None = None) -> Match | None:
    """The match of ``pattern`` at ``expr`` (its bindings), or None."""
    return Matcher(type_of).match(pattern, expr)


# == rule tables and the driver ========================================================

Rewrite = Callable[[Match], "Expr | None"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One rewrite: where ``pattern`` matches a node, ``rewrite(match)`` gives its
    replacement (or None: the rule does not apply after all). ``doc`` is the one-line
    statement of the rule (``"x + 0 -> x"``)."""

    doc: str
    pattern: DFPattern
    rewrite: Rewrite


RootKey = tuple[type, "str | None"]


def root_keys(p: DFPattern) -> frozenset[RootKey] | None:
    """What a node matched by ``p`` must be: a set of ``(expression class, operator
    name)`` keys (name ``"*"``: any callee; ``None`` for nodes that are not calls), or
    None (anything). Used to index rule tables; conservative (may admit more)."""
    match p:
        case CallPattern(OperatorPattern(name)):
            return frozenset({(Call, name)})
        case CallPattern():
            return frozenset({(Call, "*")})
        case TuplePattern():
            return frozenset({(Tuple, None)})
        case TupleGetItemPattern():
            return frozenset({(TupleGetItem, None)})
        case ConstantPattern():
            return frozenset({(Constant, None)})
        case VarPattern():
            return frozenset({(Var, None)})
        case AltPattern(left, right):
            a, b = root_keys(left), root_keys(right)
            return None if a is None or b is None else a | b
        case (AttrPattern(inner) | TypePattern(inner) | DataTypePattern(inner)
              | ShapePattern(inner) | PredicatePattern(inner)):
            return root_keys(inner)
    return None


def _node_key(node: Expr) -> RootKey:
    if isinstance(node, Call):
        return (Call, node.op.name if isinstance(node.op, Op) else "")
    return (type(node), None)


@dataclass(frozen=True, slots=True)
class RuleTable:
    """Rules tried in order; indexed by what each pattern's root can match (``root_keys``):
    a node is only tried against the rules that could match it."""

    rules: tuple[Rule, ...]
    _roots: tuple[frozenset[RootKey] | None, ...] = field(
        init=False, repr=False, compare=False)
    _index: dict[RootKey, tuple[Rule, ...]] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", tuple(self.rules))
        for rule in self.rules:
            if not isinstance(rule, Rule):
                raise TypeError(f"RuleTable: each rule must be a Rule(doc, pattern, rewrite), "
                                f"not {type(rule).__name__}")
        object.__setattr__(self, "_roots", tuple(root_keys(r.pattern) for r in self.rules))
        object.__setattr__(self, "_index", {})

    def candidates(self, node: Expr) -> tuple[Rule, ...]:
        """The rules whose pattern could match ``node`` (in table order)."""
        key = _node_key(node)
        got = self._index.get(key)
        if got is None:
            cls, name = key
            got = self._index[key] = tuple(
                rule for rule, keys in zip(self.rules, self._roots, strict=True)
                if keys is None or key in keys or (cls is Call and (Call, "*") in keys))
        return got


@dataclass(slots=True)
class RewriteStats:
    """Work done by ``rewrite_fixpoint``: sweeps, nodes visited, matcher visits, rules
    fired (by ``doc``)."""

    sweeps: int = 0
    nodes: int = 0
    visits: int = 0
    fired: dict[str, int] = field(default_factory=dict)


class Rewriter:
    """The driver (module docstring). ``types`` (node -> type, by the node) and the types
    inherited by rebuilt nodes (``keep_types``) answer ``type_of``."""

    def __init__(self, table: RuleTable, *, types: Mapping[Expr, Type] | None = None,
                 keep_types: bool = False, ctx: object = None, max_local: int = 8,
                 max_sweeps: int = 16, stats: RewriteStats | None = None) -> None:
        self.table = table
        self.types = types if types is not None else {}
        self.keep_types = keep_types
        self.new_types: dict[int, Type] = {}
        self.ctx = ctx
        self.max_local = max_local
        self.max_sweeps = max_sweeps
        self.stats = stats if stats is not None else RewriteStats()
        self.matcher = Matcher(self.type_of)
        self.keep: list[Expr] = []  # keeps the ids used as keys alive

    def type_of(self, node: Expr) -> Type | None:
        got = self.new_types.get(id(node))
        return got if got is not None else self.types.get(node)

    def _inherit(self, new: Expr, ty: Type | None) -> None:
        if self.keep_types and ty is not None and new is not None \
                and self.type_of(new) is None:
            self.new_types[id(new)] = ty
            self.keep.append(new)

    def run(self, expr: Expr) -> Expr:
        """``expr`` rewritten until a sweep changes nothing (or ``max_sweeps``)."""
        for _ in range(self.max_sweeps):
            out = self.sweep(expr)
            if out is expr:
                break
            expr = out
        return expr

    def sweep(self, expr: Expr) -> Expr:
        """One bottom-up pass over the distinct nodes of ``expr`` (iterative)."""
        self.stats.sweeps += 1
        done: dict[int, Expr] = {}
        stack: list[tuple[Expr, bool]] = [(expr, False)]
        while stack:
            cur, expanded = stack.pop()
            if id(cur) in done:
                continue
            if not expanded:
                stack.append((cur, True))
                stack.extend((k, False) for k in children(cur) if id(k) not in done)
                continue
            self.stats.nodes += 1
            out = with_children(cur, [done[id(k)] for k in children(cur)])
            ty = self.type_of(cur)
            if out is not cur:
                self._inherit(out, ty)
            done[id(cur)] = self.apply(out, ty)
            self.keep.append(cur)
        return done[id(expr)]

    def apply(self, node: Expr, ty: Type | None) -> Expr:
        """``node`` rewritten by the first applicable rule, repeatedly (``max_local``)."""
        for _ in range(self.max_local):
            for rule in self.table.candidates(node):
                before = self.matcher.visits
                m = self.matcher.match(rule.pattern, node, self.ctx)
                self.stats.visits += self.matcher.visits - before
                if m is None:
                    continue
                out = rule.rewrite(m)
                if out is not None and not isinstance(out, Expr):
                    raise TypeError(f"rule {rule.doc!r}: its rewrite returned "
                                    f"{type(out).__name__}, not an expression (or None)")
                if out is not None and out is not node:
                    self.stats.fired[rule.doc] = self.stats.fired.get(rule.doc, 0) + 1
                    self._inherit(out, ty)
                    node = out
                    break
            else:
                return node
        return node


def rewrite_fixpoint(expr: Expr, table: RuleTable | Sequence[Rule], **options: Any) -> Expr:
    """``expr`` rewritten by ``table`` to a fixpoint (``Rewriter``'s options)."""
    if not isinstance(table, RuleTable):
        table = RuleTable(tuple(table))
    return Rewriter(table, **options).run(expr)


def rewrite_module(mod: IRModule, table: RuleTable | Sequence[Rule],
                   **options: Any) -> IRModule:
    """Every global function of ``mod`` rewritten by ``table`` to a fixpoint
    (``Rewriter``'s options; ``types`` defaults to ``mod.checked_types``). The module
    itself when nothing changed; otherwise its recorded types are dropped."""
    if not isinstance(table, RuleTable):
        table = RuleTable(tuple(table))
    options.setdefault("types", mod.checked_types)
    rewriter = Rewriter(table, **options)
    return map_functions(mod, lambda name, fn: rewriter.run(fn))  # type: ignore[arg-type]


def find_matches(pattern: DFPattern, expr: Expr,
                 type_of: TypeOf | None = None) -> list[Match]:
    """Every match of ``pattern`` at a node of ``expr`` (each distinct node once, in
    post-order): what a partitioner (MergeComposite) starts from."""
    from relay_ref.ir.visitor import post_order

    matcher = Matcher(type_of)
    out = []
    for node in post_order(expr):
        m = matcher.match(pattern, node)
        if m is not None:
            out.append(m)
    return out
