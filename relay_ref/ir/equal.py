"""Alpha-equivalence and a matching structural hash, over modules, expressions, types and
patterns.

Definition (``alpha_equal``): two terms are equal when they have the same shape, the same
literals, operators, attributes, global names and constructor names, and their variables
correspond one-to-one (a function's attributes are a map: their order does not matter):
* a binder (``let`` variable, parameter, pattern variable, type parameter) corresponds to the
  binder in the same position of the other term, and uses must follow that correspondence;
* free variables (and free type variables and ``_`` holes) correspond by first occurrence, as
  if bound around the whole term, so ``parse(astext(e))`` compares equal to ``e``.
Graph sharing is not observable: a DAG equals the tree it unfolds to. Pairs of nodes already
compared are memoised, so shared sub-graphs are compared once (linear time on DAGs).

``structural_hash`` ignores variable identity (a variable hashes as "a variable of this
annotation"), so ``alpha_equal(a, b)`` implies ``structural_hash(a) == structural_hash(b)``.

Both are iterative (explicit stacks): deep terms never hit the recursion limit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relay_ref.ir import expr as E
from relay_ref.ir import types as T
from relay_ref.ir.module import IRModule, TypeData

__all__ = ["alpha_equal", "structural_hash"]


class _NotEqual(Exception):
    pass


def _by_key(item: tuple[str, object]) -> str:
    return item[0]


def _same_fn_attrs(a: E.AttrItems, b: E.AttrItems) -> bool:
    """Function attributes are a map (TVM's ``DictAttrs``, printed in hash order): the same
    keys with equal values, in any order."""
    if a == b:
        return True
    return len(a) == len(b) and sorted(a, key=_by_key) == sorted(b, key=_by_key)


class _Eq:
    def __init__(self) -> None:
        self.fwd: dict[Any, Any] = {}  # left binder -> right binder (Vars, TypeVars, holes)
        self.bwd: dict[Any, Any] = {}
        self.done: set[tuple[int, int]] = set()
        self.stack: list[tuple[Any, Any]] = []

    # -- variables ---------------------------------------------------------------------------
    def bind(self, a: Any, b: Any) -> None:
        """Make ``a`` and ``b`` correspond (a binder: overrides an earlier correspondence)."""
        self.fwd[a] = b
        self.bwd[b] = a

    def use(self, a: Any, b: Any) -> None:
        fa, fb = self.fwd.get(a), self.bwd.get(b)
        if fa is None and fb is None:  # free on both sides: correspond by first occurrence
            self.bind(a, b)
        elif fa is not b or fb is not a:
            raise _NotEqual

    # -- driver ----------------------------------------------------------------------------
    def push(self, a: Any, b: Any) -> None:
        self.stack.append((a, b))

    def push_all(self, xs: Any, ys: Any) -> None:
        if len(xs) != len(ys):
            raise _NotEqual
        for x, y in zip(reversed(xs), reversed(ys), strict=True):
            self.stack.append((x, y))

    def run(self) -> None:
        stack = self.stack
        while stack:
            a, b = stack.pop()
            if a is None or b is None:
                if a is not b:
                    raise _NotEqual
                continue
            if type(a) is not type(b):
                raise _NotEqual
            key = (id(a), id(b))
            if isinstance(a, E.Expr) and not isinstance(a, E.Var):
                if key in self.done:
                    continue
                self.done.add(key)
            self.step(a, b)

    def step(self, a: Any, b: Any) -> None:
        match a:
            # -- types --
            case T.TensorType():
                if a.shape != b.shape or a.dtype != b.dtype:
                    raise _NotEqual
            case T.TupleType(fields):
                self.push_all(fields, b.fields)
            case T.FuncType(args, ret, tps):
                if len(tps) != len(b.type_params):
                    raise _NotEqual
                for x, y in zip(tps, b.type_params, strict=True):
                    if x.kind != y.kind:
                        raise _NotEqual
                    self.bind(x, y)
                self.push(ret, b.ret_type)
                self.push_all(args, b.arg_types)
            case T.TypeVar() | T.IncompleteType():
                if a.kind != b.kind:
                    raise _NotEqual
                self.use(a, b)
            case T.GlobalTypeVar(name):
                if name != b.name:
                    raise _NotEqual
            case T.TypeCall(func, args):
                if func.name != b.func.name:
                    raise _NotEqual
                self.push_all(args, b.args)
            case T.RefType(value):
                self.push(value, b.value)
            # -- expressions --
            case E.Var():
                self.use(a, b)
            case E.GlobalVar(name) | E.Op(name):
                if name != b.name:
                    raise _NotEqual
            case E.Constructor():
                if a.name != b.name or a.tag != b.tag or a.belong_to.name != b.belong_to.name:
                    raise _NotEqual
            case E.Constant(data):
                other = b.data
                if data.dtype != other.dtype or data.shape != other.shape:
                    raise _NotEqual
                if not np.array_equal(data, other, equal_nan=data.dtype.kind == "f"):
                    raise _NotEqual
            case E.Tuple(fields):
                self.push_all(fields, b.fields)
            case E.TupleGetItem(tup, index):
                if index != b.index:
                    raise _NotEqual
                self.push(tup, b.tuple_value)
            case E.Let(var, value, body):
                self.bind_var(var, b.var)
                self.push(body, b.body)
                self.push(value, b.value)
            case E.Call(op, args, attrs, type_args):
                if attrs != b.attrs:
                    raise _NotEqual
                self.push_all(type_args, b.type_args)
                self.push_all(args, b.args)
                self.push(op, b.op)
            case E.Function(params, body, ret, tps, attrs):
                if not _same_fn_attrs(attrs, b.attrs) or len(tps) != len(b.type_params):
                    raise _NotEqual
                for x, y in zip(tps, b.type_params, strict=True):
                    self.bind(x, y)
                if len(params) != len(b.params):
                    raise _NotEqual
                self.push(body, b.body)
                self.push(ret, b.ret_type)
                for x, y in zip(params, b.params, strict=True):
                    self.bind_var(x, y)
            case E.If(cond, then, else_):
                self.push(else_, b.false_branch)
                self.push(then, b.true_branch)
                self.push(cond, b.cond)
            case E.Match(data, clauses, complete):
                if complete != b.complete or len(clauses) != len(b.clauses):
                    raise _NotEqual
                for x, y in reversed(list(zip(clauses, b.clauses, strict=True))):
                    self.push(x.rhs, y.rhs)
                    self.push(x.lhs, y.lhs)
                self.push(data, b.data)
            case E.RefCreate(value):
                self.push(value, b.value)
            case E.RefRead(ref):
                self.push(ref, b.ref)
            case E.RefWrite(ref, value):
                self.push(value, b.value)
                self.push(ref, b.ref)
            # -- patterns (binders are bound when the pattern is reached, before the rhs) --
            case E.PatternWildcard():
                pass
            case E.PatternVar(var):
                self.bind_var(var, b.var)
            case E.PatternConstructor(ctor, pats):
                self.push_all(pats, b.patterns)
                self.push(ctor, b.constructor)
            case E.PatternTuple(pats):
                self.push_all(pats, b.patterns)
            case _:
                raise TypeError(f"alpha_equal: unsupported node {type(a).__name__}")

    def bind_var(self, a: E.Var, b: E.Var) -> None:
        self.bind(a, b)
        # The annotation is compared right away (it is never deep).
        sub = _Eq()
        sub.fwd, sub.bwd = self.fwd, self.bwd
        sub.push(a.type_annotation, b.type_annotation)
        sub.run()

    # -- modules -------------------------------------------------------------------------------
    def type_data(self, a: TypeData, b: TypeData) -> None:
        if a.name != b.name or a.is_extern != b.is_extern:
            raise _NotEqual
        if len(a.type_vars) != len(b.type_vars) or len(a.constructors) != len(b.constructors):
            raise _NotEqual
        for x, y in zip(a.type_vars, b.type_vars, strict=True):
            self.bind(x, y)
        for ca, cb in zip(a.constructors, b.constructors, strict=True):
            if ca.name != cb.name or ca.tag != cb.tag:
                raise _NotEqual
            self.push_all(ca.inputs, cb.inputs)
        self.run()


def alpha_equal(a: Any, b: Any) -> bool:
    """Equality modulo bound-variable names (see the module docstring). Accepts modules,
    expressions, types, patterns, and ``TypeData``."""
    eq = _Eq()
    try:
        if isinstance(a, IRModule) or isinstance(b, IRModule):
            if not (isinstance(a, IRModule) and isinstance(b, IRModule)):
                return False
            if set(a.type_definitions) != set(b.type_definitions):
                return False
            if set(a.functions) != set(b.functions):
                return False
            for name, td in a.type_definitions.items():
                eq.type_data(td, b.type_definitions[name])
            for name, fn in a.functions.items():
                eq.push(fn, b.functions[name])
                eq.run()
            return True
        if isinstance(a, TypeData) or isinstance(b, TypeData):
            if not (isinstance(a, TypeData) and isinstance(b, TypeData)):
                return False
            eq.type_data(a, b)
            return True
        eq.push(a, b)
        eq.run()
        return True
    except _NotEqual:
        return False


# ---- hashing ---------------------------------------------------------------------------------

def _mix(*parts: Any) -> int:
    return hash(parts)


def structural_hash(node: Any) -> int:
    """A hash consistent with ``alpha_equal`` (equal terms hash equal)."""
    if isinstance(node, IRModule):
        parts = []
        for name in sorted(node.type_definitions):
            parts.append((name, structural_hash(node.type_definitions[name])))
        for name in sorted(node.functions):
            parts.append(("@" + name, structural_hash(node.functions[name])))
        return hash(tuple(parts))
    if isinstance(node, TypeData):
        return _mix("TypeData", node.name, len(node.type_vars),
                    tuple((c.name, tuple(structural_hash(t) for t in c.inputs))
                          for c in node.constructors))
    memo: dict[int, int] = {}
    keep: list[Any] = []  # keeps memo keys alive
    stack: list[tuple[Any, bool]] = [(node, False)]
    while stack:
        x, ready = stack.pop()
        if x is None:
            continue
        k = id(x)
        if k in memo:
            continue
        kids = _hash_children(x)
        if not ready:
            stack.append((x, True))
            for kid in kids:
                if kid is not None and id(kid) not in memo:
                    stack.append((kid, False))
            continue
        memo[k] = _node_hash(x, [memo.get(id(c), 0) if c is not None else 0 for c in kids])
        keep.append(x)
    return memo[id(node)]


def _hash_children(x: Any) -> list[Any]:
    match x:
        case T.TupleType(fields):
            return list(fields)
        case T.FuncType(args, ret):
            return [*args, ret]
        case T.TypeCall(_, args):
            return list(args)
        case T.RefType(value):
            return [value]
        case E.Var(_, ann):
            return [ann]
        case E.Tuple(fields):
            return list(fields)
        case E.TupleGetItem(tup):
            return [tup]
        case E.Let(var, value, body):
            return [var, value, body]
        case E.Call(op, args, _, type_args):
            return [op, *args, *type_args]
        case E.Function(params, body, ret):
            return [*params, body, ret]
        case E.If(c, t, f):
            return [c, t, f]
        case E.Match(data, clauses):
            out = [data]
            for clause in clauses:
                out += [clause.lhs, clause.rhs]
            return out
        case E.RefCreate(v) | E.RefRead(v):
            return [v]
        case E.RefWrite(r, v):
            return [r, v]
        case E.PatternVar(var):
            return [var]
        case E.PatternConstructor(_, pats) | E.PatternTuple(pats):
            return list(pats)
    return []


def _node_hash(x: Any, kids: list[int]) -> int:
    tag = type(x).__name__
    match x:
        case T.TensorType(shape, dtype):
            return _mix(tag, shape, dtype)
        case T.TypeVar(_, kind) | T.IncompleteType(kind):
            return _mix(tag, int(kind))
        case T.GlobalTypeVar(name):
            return _mix(tag, name)
        case T.TypeCall(func):
            return _mix(tag, func.name, *kids)
        case T.FuncType(_, _, tps):
            return _mix(tag, len(tps), *kids)
        case E.GlobalVar(name) | E.Op(name):
            return _mix(tag, name)
        case E.Constructor(name, _, belong_to, t):
            return _mix(tag, name, belong_to.name, t)
        case E.Constant(data):
            if data.size > 64:
                return _mix(tag, str(data.dtype), data.shape)
            if data.dtype.kind == "f":  # NaN payloads and -0.0 compare equal: normalise
                data = np.where(np.isnan(data), np.nan, data + 0.0).astype(data.dtype)
            return _mix(tag, str(data.dtype), data.shape, data.tobytes())
        case E.TupleGetItem(_, index):
            return _mix(tag, index, *kids)
        case E.Call(_, _, attrs):
            try:
                h = hash(attrs)
            except TypeError:
                h = 0
            return _mix(tag, h, *kids)
        case E.Function(_, _, _, tps, attrs):
            try:
                h = hash(frozenset(attrs))  # a map: the order of its items is not hashed
            except TypeError:
                h = 0
            return _mix(tag, len(tps), h, *kids)
        case E.Match(_, _, complete):
            return _mix(tag, complete, *kids)
        case E.PatternConstructor(ctor):
            return _mix(tag, ctor.name, *kids)
    return _mix(tag, *kids)
