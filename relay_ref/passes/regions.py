"""Annotated regions (TVM ``src/relay/analysis/annotated_region_set.cc``): the parts of a
program that ``annotation.compiler_begin`` / ``compiler_end`` delimit (spec/byoc.md,
BYOC-Annotate, BYOC-Merge, BYOC-Convex).

A *region* starts at each ``compiler_end`` and grows down through the dataflow operands of
its members until it reaches ``compiler_begin`` annotations (its inputs); a node reached
from two regions joins them (a multi-output region: two ``compiler_end`` on nodes that share
members). Members are operator calls, composite calls (the ``Composite`` function literal
is the callee, not a member), tuples, projections and constants, plus the annotations.

* ``find_regions(expr)``: a ``RegionSet`` (``regions``, ``region_of(node)``); a region's
  ``nodes`` / ``ins`` (begins) / ``outs`` (ends) are in post-order, and regions are numbered
  by the post-order of their first end. Malformed annotations (a begin whose user is in no
  region, a member that is a variable, ``let``, ``if``...) are a ``RegionError`` at the node.
* ``is_begin`` / ``is_end`` / ``compiler_of``: the annotation tests.
* ``region_graph_acyclic(expr)`` / ``regions_convex(mod)``: whether contracting every region
  to one node leaves the dataflow graph acyclic: each region is convex (no path leaves it
  and re-enters it) and no two regions depend on each other (BYOC-Convex).
* ``node_scopes(order)``: the *scope* each node is computed in (BYOC-Convex): the function
  body is scope 0; each ``if`` branch, ``match`` clause and function-literal body (not a
  composite's or a primitive's) opens a child scope; a node used from several scopes is
  computed in their lowest common ancestor, as ``relay_ref.ir.sharing`` places shared
  nodes. A region's operator calls, tuples and projections must share one scope
  (``Region.scope``); a region spanning two is not valid: outlined, it would compute a
  branch's node outside its branch (a division the ``if`` guarded) or a closure's node
  where its parameters are not bound.
* ``effect_count(order)``: the nodes whose evaluation may have effects or depend on them
  (reference operations, calls of anything but an operator, constructor or composite).
  With two or more, the order of evaluation is observable (a ``ref_read`` after a
  ``ref_write``), and a region, whose call evaluates all its inputs before any of its
  members, may reorder them: in such a function (``RegionSet.ordered``) a valid region
  holds one call, and MergeCompilerRegions merges nothing.

Invariants: every walk is iterative and linear in distinct nodes (memoised by identity);
the ``RegionSet`` keeps the nodes it describes alive, so identity keys stay valid.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from relay_ref.diagnostics import RelayError
from relay_ref.ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    If,
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
from relay_ref.ir.visitor import dataflow_operands, post_order

__all__ = ["BEGIN", "END", "Region", "RegionError", "RegionSet", "compiler_of",
           "effect_count", "find_regions", "is_annotation", "is_begin", "is_composite_call",
           "is_end", "node_scopes", "region_graph_acyclic", "regions_convex"]

BEGIN = "annotation.compiler_begin"
END = "annotation.compiler_end"


class RegionError(RelayError, ValueError):
    """Annotations that do not delimit regions (a begin with no end above it, a region
    member that is not a dataflow node)."""


def _op_name(node: Expr) -> str | None:
    if type(node) is Call and type(node.op) is Op:
        return node.op.name
    return None


def is_begin(node: Expr) -> bool:
    """``annotation.compiler_begin(x, compiler=...)``."""
    return _op_name(node) == BEGIN


def is_end(node: Expr) -> bool:
    """``annotation.compiler_end(x, compiler=...)``."""
    return _op_name(node) == END


def is_annotation(node: Expr) -> bool:
    """A begin or an end annotation."""
    return _op_name(node) in (BEGIN, END)


def compiler_of(node: Call) -> str:
    """The ``compiler`` attribute of an annotation call."""
    return str(getattr(node.attrs, "compiler", ""))


def is_composite_call(node: Expr) -> bool:
    """A call of an inline ``Composite`` function literal (MergeComposite's output)."""
    return (type(node) is Call and type(node.op) is Function
            and node.op.attr("Composite") is not None)


def _member_ok(node: Expr) -> bool:
    if type(node) is Call:
        return type(node.op) is Op or is_composite_call(node)
    return type(node) in (Tuple, TupleGetItem, Constant)


@dataclass(frozen=True, slots=True, eq=False)
class Region:
    """One region: its number, target compiler, members (post-order, annotations
    included), inputs (begins) and outputs (ends), both in post-order; ``valid`` is false
    for a region malformed annotations touch (``find_regions(strict=False)``)."""

    id: int
    target: str
    nodes: tuple[Expr, ...]
    ins: tuple[Call, ...]
    outs: tuple[Call, ...]
    valid: bool = True
    scope: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class RegionSet:
    """The regions of one expression and the member -> region map (by node identity)."""

    regions: tuple[Region, ...]
    owner: dict[int, int] = field(repr=False)
    order: tuple[Expr, ...] = field(repr=False)  # every node walked (keeps ids valid)
    #: the function's evaluation order is observable (``effect_count`` >= 2): one call
    #: per valid region, no merging
    ordered: bool = False

    def region_of(self, node: Expr) -> Region | None:
        """The region ``node`` belongs to, if any."""
        idx = self.owner.get(id(node))
        return None if idx is None else self.regions[idx]


class _UnionFind:
    def __init__(self) -> None:
        self.parent: list[int] = []

    def make(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, i: int) -> int:
        root = i
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[i] != root:
            self.parent[i], i = root, self.parent[i]
        return root

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)
        return min(ra, rb)


def find_regions(expr: Expr, *, strict: bool = True) -> RegionSet:
    """The regions of ``expr`` (see the module docstring). ``strict``: malformed
    annotations are a ``RegionError``; else the regions they touch are marked ``valid=False``
    (the passes leave those alone: PartitionGraph removes their annotations, which are
    identities, so a program with stray annotations still means what it meant)."""
    order = tuple(post_order(expr))
    state = _State(strict)
    owner = state.owner
    for node in reversed(order):  # every user before its operands
        if is_end(node):
            reg = owner.get(id(node))
            if reg is None:
                reg = state.make(compiler_of(node))
                owner[id(node)] = reg
            elif state.target_of(reg) != compiler_of(node):
                state.bad(reg, f"compiler_end for {compiler_of(node)!r} inside a region for "
                               f"{state.target_of(reg)!r}", node)
            state.claim(node.args[0], reg, node)
        elif is_begin(node):
            if id(node) not in owner and strict:
                raise RegionError(f"compiler_begin for {compiler_of(node)!r} is not under "
                                  f"a compiler_end of its region", node.span)
        elif id(node) in owner:
            reg = owner[id(node)]
            if not _member_ok(node):
                state.bad(reg, f"a region for {state.target_of(reg)!r} reaches a "
                               f"{type(node).__name__}, which is not an annotated input", node)
                continue
            for arg in dataflow_operands(node):
                state.claim(arg, reg, node)
    return state.collect(order)


class _State:
    """The region discovery's tables: owners, union-find of regions, targets, validity."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.uf = _UnionFind()
        self.target: list[str] = []
        self.valid: list[bool] = []
        self.owner: dict[int, int] = {}

    def make(self, target: str) -> int:
        self.target.append(target)
        self.valid.append(bool(target))
        if not target and self.strict:
            raise RegionError("a compiler_end without a compiler name")
        return self.uf.make()

    def target_of(self, reg: int) -> str:
        return self.target[self.uf.find(reg)]

    def bad(self, reg: int, message: str, node: Expr) -> None:
        if self.strict:
            raise RegionError(message, getattr(node, "span", None))
        self.valid[self.uf.find(reg)] = False

    def claim(self, arg: Expr, reg: int, user: Expr) -> None:
        """``arg`` joins region ``reg`` (merging the regions when it is in another)."""
        if is_end(arg):
            self.bad(reg, f"the output of a region for {compiler_of(arg)!r} is used inside "
                          f"a region without a compiler_begin", user)
            return
        have = self.owner.get(id(arg))
        if have is None:
            self.owner[id(arg)] = reg
            return
        ra, rb = self.uf.find(have), self.uf.find(reg)
        if ra == rb:
            return
        ok = self.valid[ra] and self.valid[rb]
        if self.target[ra] != self.target[rb]:
            self.bad(reg, f"regions for {self.target[ra]!r} and {self.target[rb]!r} share a "
                          f"node", user)
            ok = False
        root = self.uf.union(ra, rb)
        self.valid[root] = ok

    def collect(self, order: tuple[Expr, ...]) -> RegionSet:
        uf, owner = self.uf, self.owner
        number: dict[int, int] = {}  # union-find root -> region number
        members: list[list[Expr]] = []
        for node in order:  # numbered by the post-order of the first end
            if is_end(node):
                root = uf.find(owner[id(node)])
                if root not in number:
                    number[root] = len(members)
                    members.append([])
        final: dict[int, int] = {}
        for node in order:
            reg = owner.get(id(node))
            if reg is not None:
                idx = number[uf.find(reg)]
                final[id(node)] = idx
                members[idx].append(node)
        roots = sorted(number, key=number.__getitem__)
        scopes = node_scopes(order)
        ordered = effect_count(order) >= 2
        regions = []
        for i, (root, nodes) in enumerate(zip(roots, members, strict=True)):
            computed = [n for n in nodes if type(n) in (Call, Tuple, TupleGetItem)
                        and not is_annotation(n)]
            where = {scopes[id(n)] for n in computed}
            calls = sum(1 for n in computed if type(n) is Call)
            valid = self.valid[root] and len(where) <= 1 and not (ordered and calls > 1)
            regions.append(Region(i, self.target[root], tuple(nodes),
                                  tuple(n for n in nodes if is_begin(n)),
                                  tuple(n for n in nodes if is_end(n)), valid,
                                  min(where, default=0)))
        return RegionSet(tuple(regions), final, order, ordered)


def node_scopes(order: tuple[Expr, ...]) -> dict[int, int]:
    """Node identity -> the scope it is computed in (module docstring); ``order`` is the
    post-order of one expression (its root last). Linear: users are visited before their
    operands (reversed post-order), each edge once, and a lowest common ancestor climbs
    the scope tree, whose depth is the nesting of branches and closures."""
    parent: list[int] = [-1]
    depth: list[int] = [0]

    def child(of: int) -> int:
        parent.append(of)
        depth.append(depth[of] + 1)
        return len(parent) - 1

    def lca(a: int, b: int) -> int:
        while depth[a] > depth[b]:
            a = parent[a]
        while depth[b] > depth[a]:
            b = parent[b]
        while a != b:
            a, b = parent[a], parent[b]
        return a

    scope: dict[int, int] = {}
    if order:
        scope[id(order[-1])] = 0

    def use(node: Expr, ctx: int) -> None:
        have = scope.get(id(node))
        scope[id(node)] = ctx if have is None else lca(have, ctx)

    for node in reversed(order):
        here = scope[id(node)]
        kind = type(node)
        if kind is If:
            use(node.cond, here)
            use(node.true_branch, child(here))
            use(node.false_branch, child(here))
        elif kind is Match:
            use(node.data, here)
            for clause in node.clauses:
                use(clause.rhs, child(here))
        elif kind is Function and node.attr("Composite") is None \
                and node.attr("Primitive") is None:
            use(node.body, child(here))
        else:
            for kid in children(node):
                use(kid, here)
    return scope


def effect_count(order: tuple[Expr, ...]) -> int:
    """How many nodes of ``order`` may have effects (module docstring)."""
    count = 0
    for node in order:
        kind = type(node)
        if kind in (RefCreate, RefRead, RefWrite):
            count += 1
        elif kind is Call and type(node.op) not in (Op, Constructor) \
                and not is_composite_call(node):
            count += 1
    return count


def region_graph_acyclic(expr: Expr, regions: RegionSet | None = None,
                         contract: frozenset[int] | None = None) -> bool:
    """Whether the dataflow graph of ``expr`` with each region contracted to one node is
    acyclic (Kahn's algorithm; linear). Non-dataflow edges (a let's body, a function's body)
    count as edges too: a region must not depend on what depends on it in any way.
    ``contract``: the numbers of the regions to contract (default: all)."""
    from relay_ref.ir.expr import children

    rs = find_regions(expr) if regions is None else regions
    key: dict[int, int] = {}  # node id -> contracted vertex
    count = len(rs.regions)
    for node in rs.order:
        idx = rs.owner.get(id(node))
        if idx is None or (contract is not None and idx not in contract):
            key[id(node)] = count
            count += 1
        else:
            key[id(node)] = idx
    succ: list[set[int]] = [set() for _ in range(count)]
    for node in rs.order:
        user = key[id(node)]
        for kid in children(node):
            src = key.get(id(kid))
            if src is not None and src != user:
                succ[src].add(user)
    indeg = [0] * count
    for targets in succ:
        for t in targets:
            indeg[t] += 1
    queue = deque(v for v in range(count) if indeg[v] == 0)
    seen = 0
    while queue:
        v = queue.popleft()
        seen += 1
        for t in succ[v]:
            indeg[t] -= 1
            if indeg[t] == 0:
                queue.append(t)
    return seen == count


def regions_convex(mod: IRModule) -> bool:
    """Whether every function of ``mod`` has convex, mutually acyclic regions
    (BYOC-Convex): true of MergeCompilerRegions' output, and trivially of PartitionGraph's
    (no annotations are left)."""
    return all(region_graph_acyclic(fn.body) for fn in mod.functions.values())
