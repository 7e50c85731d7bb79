"""MergeCompilerRegions (TVM ``src/relay/transforms/merge_compiler_regions.cc``): merge each
annotated region into its parent regions of the same target, greedily, never making a
region that depends on itself (spec/byoc.md, BYOC-Merge).

**Algorithm** (TVM's). Regions come from ``relay_ref.passes.regions.find_regions``. Each
region is visited after its parent regions (the regions whose ends feed its begins), in an
explicit depth-first order (iterative: a 2 000-region chain is fine). Visiting region ``R``:

1. ``R``'s *restrictions* (regions it must never merge with) receive every parent's
   restrictions;
2. for each parent ``P`` (in the order of ``R``'s inputs): a parent of another target joins
   the restrictions (anything reaching ``R`` through it must stay apart); a parent of the
   same target not restricted is merged into ``R``, and every restriction set naming ``P``
   names ``R`` instead.

The diamond: ``a -> b(default) -> d`` and ``a -> c -> d`` with ``a, c, d`` for target
``t``: ``c`` merges ``a``; ``d``'s restrictions hold ``b``'s parent ``a`` (now ``c``), so
``d`` does not merge ``c``: the result ``{a, c}`` ``{b}`` ``{d}`` is acyclic.

**Rewrite**: ``compiler_begin(compiler_end(x))`` with both annotations in one merged region
becomes ``x``; every other annotation stays (the output is still annotated, for
PartitionGraph). Functions with a ``Compiler`` attribute are left alone, and so are
regions that malformed annotations touch (``find_regions(strict=False)``: they merge with
nothing).

Guarantee: the values are unchanged (annotations are identities), types are unchanged, and
the regions of the result are convex and mutually acyclic (BYOC-Convex) when the input's
were. Idempotent on its own output.
"""

from __future__ import annotations

from collections.abc import Callable

from relay_ref.ir.expr import Expr, Function, children
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import post_order
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.regions import (
    RegionSet,
    find_regions,
    is_begin,
    is_end,
    region_graph_acyclic,
)
from relay_ref.passes.rewrite import map_functions, with_children

__all__ = ["MergeCompilerRegions", "merge_regions"]


class _Restrictions:
    """Per region, the regions it must never merge with, and the inverse index (which
    regions name a region), so renaming a merged region costs its holders only."""

    def __init__(self, n: int) -> None:
        self.sets: list[set[int]] = [set() for _ in range(n)]
        self.holders: list[set[int]] = [set() for _ in range(n)]

    def add(self, region: int, other: int) -> None:
        self.sets[region].add(other)
        self.holders[other].add(region)

    def rename(self, old: int, new: int) -> None:
        """Every set naming ``old`` names ``new`` instead (``old`` merged into ``new``)."""
        for holder in self.holders[old]:
            self.sets[holder].discard(old)
            self.add(holder, new)
        self.holders[old] = set()


def _merge_plan(rs: RegionSet) -> list[int]:
    """Region number -> the number of the region it ends up in (TVM's greedy merge)."""
    n = len(rs.regions)
    into = list(range(n))

    def find(i: int) -> int:
        while into[i] != i:
            into[i] = into[into[i]]
            i = into[i]
        return i

    parents: list[list[int]] = []
    for region in rs.regions:  # parent regions, in the order of the region's inputs
        seen: dict[int, None] = {}
        for begin in region.ins:
            idx = rs.owner.get(id(begin.args[0]))
            if idx is not None:
                seen[idx] = None
        parents.append(list(seen))
    restrict = _Restrictions(n)
    visited = [False] * n
    for start in range(n):
        if visited[start]:
            continue
        stack: list[tuple[int, bool]] = [(start, False)]
        while stack:
            idx, expanded = stack.pop()
            if expanded:
                _visit(idx, rs, parents[idx], restrict, into, find)
                continue
            if visited[idx]:
                continue
            visited[idx] = True
            stack.append((idx, True))
            for parent in reversed(parents[idx]):
                if not visited[parent]:
                    stack.append((parent, False))
    return [find(i) for i in range(n)]


def _visit(idx: int, rs: RegionSet, parents: list[int], restrict: _Restrictions,
           into: list[int], find: Callable[[int], int]) -> None:
    """TVM's step for region ``idx``, its parents already visited (module docstring)."""
    target = rs.regions[idx].target
    valid = rs.regions[idx].valid
    live: dict[int, None] = {}  # the parents' current regions (one may have merged)
    for p in parents:
        root = find(p)
        if root != idx:
            live[root] = None
    for p in live:
        for other in tuple(restrict.sets[p]):
            if other != idx:
                restrict.add(idx, other)
    mine = restrict.sets[idx]
    for p in live:
        if rs.regions[p].target != target or not (valid and rs.regions[p].valid) \
                or rs.regions[p].scope != rs.regions[idx].scope or rs.ordered:
            restrict.add(idx, p)  # BYOC-Merge: one target, one scope, order unobservable
            continue
        if p in mine:
            continue
        into[p] = idx  # P merges into R
        restrict.rename(p, idx)
    if idx in mine:  # a merged parent named R in R's own set
        mine.discard(idx)
        restrict.holders[idx].discard(idx)


def merge_regions(fn: Function) -> Function:
    """``fn`` with its regions merged (see the module docstring)."""
    if fn.attr("Compiler") is not None:
        return fn
    rs = find_regions(fn.body, strict=False)
    if not rs.regions:
        return fn
    final = _merge_plan(rs)
    owner = rs.owner
    done: dict[int, Expr] = {}
    for node in post_order(fn.body):
        if (is_begin(node) and is_end(node.args[0]) and id(node) in owner
                and final[owner[id(node)]] == final[owner[id(node.args[0])]]):
            inner = node.args[0]
            out = done[id(inner.args[0])]
        else:
            out = with_children(node, (done[id(k)] for k in children(node)))
        done[id(node)] = out
    body = done[id(fn.body)]
    if body is fn.body:
        return fn
    # BYOC-Convex: a path the restrictions cannot see (through a function literal: a
    # closure body's region feeding a call of that closure) may still join two merged
    # regions; then the function keeps its regions unmerged (each one call: convex)
    if not region_graph_acyclic(body, find_regions(body, strict=False)):
        return fn
    return Function(fn.params, body, fn.ret_type, fn.type_params, fn.attrs, fn.span)


@register_pass
class MergeCompilerRegions(Pass):
    """Merge adjacent annotated regions of one target without creating cycles (TVM's
    MergeCompilerRegions; see the module docstring). No options."""

    name = "MergeCompilerRegions"
    idempotent = True
    opt_level = 0

    def __call__(self, mod: IRModule) -> IRModule:
        return map_functions(mod, lambda name, fn: merge_regions(fn))

