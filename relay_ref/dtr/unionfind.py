"""A union-find with a running cost sum per set: the equivalence classes of h_DTR^eq
(spec/dtr.md §4, rule D-Evict; papers.md 2.1, the paper's appendix C.2).

Nodes are small integers handed out by ``make``. Each root carries the sum of the costs of
the nodes of its set; ``union`` adds the sums of two distinct sets, ``add`` changes a set's
sum (rematerialisation subtracts the node's cost: union-find cannot split, so the set keeps
a "phantom" member of cost zero). ``find`` uses path halving and ``union`` union by size:
both iterative, so no Python recursion whatever the sets' shapes.

Invariant: ``total(find(i))`` is the sum of the costs given to ``make`` for the nodes of
``i``'s set, plus every ``add`` on that set.
"""

from __future__ import annotations

__all__ = ["UnionFind"]


class UnionFind:
    """Disjoint sets of integer nodes, each set with a cost sum."""

    __slots__ = ("_parent", "_size", "_sum")

    def __init__(self) -> None:
        self._parent: list[int] = []
        self._size: list[int] = []
        self._sum: list[float] = []

    def __len__(self) -> int:
        return len(self._parent)

    def make(self, cost: float) -> int:
        """A new singleton set of cost ``cost``; its node."""
        self._parent.append(len(self._parent))
        self._size.append(1)
        self._sum.append(cost)
        return len(self._parent) - 1

    def find(self, i: int) -> int:
        """The root of ``i``'s set (path halving)."""
        parent = self._parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, a: int, b: int) -> int:
        """Merge the sets of ``a`` and ``b`` (summing their costs once); the new root."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if self._size[ra] < self._size[rb]:
            ra, rb = rb, ra
        self._parent[rb] = ra
        self._size[ra] += self._size[rb]
        self._sum[ra] += self._sum[rb]
        return ra

    def total(self, i: int) -> float:
        """The cost sum of ``i``'s set."""
        return self._sum[self.find(i)]

    def add(self, i: int, delta: float) -> None:
        """Add ``delta`` to the cost sum of ``i``'s set."""
        self._sum[self.find(i)] += delta
