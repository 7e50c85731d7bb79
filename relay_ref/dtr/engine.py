"""The DTR engine: a greedy online cache between a program and its tensor memory
(spec/dtr.md; Kirisame et al., ICLR 2021). Shared by the runtime (``relay_ref/dtr/runtime.py``,
which passes kernels as ``compute``) and the simulator (``relay_ref/dtr/simulator.py``, which
passes ``compute=None`` and only accounts).

Model (spec/dtr.md §1). A ``Tensor`` is a handle: the ``Call`` that made it (None for a
constant), its index among the call's outputs, and its ``Storage`` (the buffer). Several
tensors may view one storage (``aliases``): the storage is accounted once and evicting it
evicts every view. Each storage has a size, a resident flag, a lock count, a pinned flag,
a cost c0 (the sum of the costs of the distinct calls whose outputs view it), a last access
time on the clock (the cumulative compute of every call run, first runs and replays) and an
external reference count (the program's handles: 1 per output at birth, ``retain`` +1,
``release`` -1).

Rules (spec/dtr.md §3): D-Alloc (room is made for a call's outputs before it runs),
D-Evict (the evictable storage of lowest score goes first), D-OOM (nothing evictable left),
D-Remat (an evicted argument is recomputed by replaying its call, its own evicted arguments
first: an explicit work stack, never Python recursion), D-Lock (a call's arguments are
locked while it runs or waits for its other arguments), D-Access (last access and the
clock), D-Multi (a call's outputs are recomputed together; copies of outputs still
resident are dropped), D-Alias (views share their storage), D-Pin (constants),
D-Release-Eager, D-Release-Ignore, D-Banish, D-Free (a pinned result the program dropped),
D-Output.

Invariants, checked by tests/dtr: ``memory`` is the sum of the sizes of the resident
storages; ``memory <= budget`` after every operation (an output of unknown size is admitted
once its kernel has run, room made first: the process itself held it over the budget for
that moment, the one allocation in flight spec/dtr.md §2 allows); a tensor is ``defined`` only
while its storage is resident; a locked or pinned storage is never evicted; the values a
replay computes are the values the first run computed (operators are pure: spec/dtr.md §6).

After ``DTROutOfMemory`` the engine is spent: read ``stats`` (``oom`` is set), nothing else.
"""

from __future__ import annotations

import numbers
import random as _random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from relay_ref.dtr.errors import DTRError, DTROutOfMemory
from relay_ref.dtr.heuristics import Heuristic, get_heuristic
from relay_ref.dtr.stats import DTREvent, DTRStats
from relay_ref.dtr.unionfind import UnionFind
from relay_ref.suggest import did_you_mean

__all__ = ["ACCESS_CONVENTIONS", "DEALLOC_POLICIES", "Call", "DTREvent", "DTROutOfMemory",
           "DTRStats", "Engine", "Storage", "Tensor"]

DEALLOC_POLICIES = ("eager", "banish", "ignore")
ACCESS_CONVENTIONS = ("lock", "simrd")


class Storage:
    """A buffer (spec/dtr.md §1). Fields are read by heuristics and tests; only the engine
    writes them. ``cost``: c0, the summed cost of the distinct calls viewing it;
    ``last_access``: the clock at its last use or birth; ``refs``: external references
    (the program's) over all its tensors; ``banished``: freed for good (D-Banish)."""

    __slots__ = ("_cost_calls", "_uf", "banished", "consumers", "cost", "id", "last_access",
                 "locks", "pinned", "refs", "resident", "size", "tensors")

    def __init__(self, sid: int, size: int) -> None:
        self.id = sid
        self.size = size
        self.resident = False
        self.locks = 0
        self.pinned = False
        self.banished = False
        self.cost = 0.0
        self.last_access = 0.0
        self.refs = 0
        self.tensors: list[Tensor] = []  # tensors[0] is the root (not a view)
        self.consumers: list[Call] = []  # calls that read one of its tensors (first run)
        #: the ids of the calls counted in ``cost``: an int while there is one (most
        #: storages: no container allocated), a set once views add others
        self._cost_calls: int | set[int] | None = None
        self._uf: int | None = None  # union-find node while evicted (dtr_eq)

    @property
    def evicted(self) -> bool:
        """Not resident and not banished: it can be rematerialised."""
        return not self.resident and not self.banished

    @property
    def evictable(self) -> bool:
        return self.resident and self.locks == 0 and not self.pinned and not self.banished

    def __repr__(self) -> str:
        state = ("banished" if self.banished else "pinned" if self.pinned
                 else "resident" if self.resident else "evicted")
        return f"<Storage {self.id} {self.size}B {state} locks={self.locks} refs={self.refs}>"


class Call:
    """One operator call (a closure: replaying it recomputes its outputs). ``sizes[i]``:
    bytes of output ``i`` (0 for a view; filled in after the first run where it was None);
    ``aliases[i]``: the argument index output ``i`` views, or None."""

    __slots__ = ("aliases", "args", "compute", "cost", "id", "name", "outputs", "sizes",
                 "span")

    def __init__(self, cid: int, name: str, args: tuple[Tensor, ...], sizes: list[int | None],
                 cost: float, compute: Callable[[list], Sequence] | None,
                 aliases: tuple[int | None, ...], span: Any) -> None:
        self.id, self.name, self.args, self.sizes = cid, name, args, sizes
        self.cost, self.compute, self.aliases, self.span = cost, compute, aliases, span
        self.outputs: list[Tensor] = []

    def __repr__(self) -> str:
        return f"<Call {self.id} {self.name}>"


class Tensor:
    """A handle on one value (spec/dtr.md §1). ``call`` is None for a constant;
    ``is_alias``: a view of another tensor's storage; ``defined``: its value is resident
    (``value`` holds it when a kernel computed it; the simulator keeps None)."""

    __slots__ = ("call", "defined", "id", "index", "is_alias", "name", "refs", "storage",
                 "value")

    def __init__(self, tid: int, storage: Storage, call: Call | None, index: int,
                 is_alias: bool, name: str = "") -> None:
        self.id, self.storage, self.call, self.index = tid, storage, call, index
        self.is_alias, self.name = is_alias, name
        self.defined = False
        self.value: Any = None
        self.refs = 1

    @property
    def size(self) -> int:
        """The bytes of its storage (a view reports its base's)."""
        return self.storage.size

    def __repr__(self) -> str:
        label = self.name or (self.call.name if self.call else "constant")
        return f"<Tensor {self.id} {label} {'defined' if self.defined else 'evicted'}>"


@dataclass(slots=True)
class _Frame:
    """A pending call on the D-Remat work stack. ``todo``: its arguments still to lock, last
    first (None until it starts); ``locked``: those locked so far (D-Lock)."""

    call: Call
    first: bool  # the program's own call (not a replay)
    target: Tensor | None = None  # the output a replay is for (None: the first run)
    todo: list[Tensor] | None = None
    locked: list[Tensor] = field(default_factory=list)


def _default_sizeof(value: Any) -> int:
    return int(getattr(value, "nbytes", 0))


class Engine:
    """The DTR runtime state (spec/dtr.md). ``budget``: bytes, or None for no budget (then
    nothing is evicted but by a dealloc policy; the peak is measured). ``heuristic``: a
    name of ``relay_ref.dtr.heuristics`` or a ``Heuristic``. ``dealloc``: ``"eager"``,
    ``"banish"`` or ``"ignore"``. ``seed``: for ``random``. ``trace``: record ``events``.
    ``sizeof``: the bytes of a computed value whose size was given as None (default: its
    ``nbytes``). ``access``: when last accesses are recorded (D-Access): ``"lock"`` (the
    default: an argument as it is locked for a call, every run's outputs as it ends) or
    ``"simrd"`` (the paper's artifact: every argument as the call starts, replayed outputs
    keep their consumer's access; reproduces the artifact's numbers)."""

    def __init__(self, budget: int | None, *, heuristic: str | Heuristic = "dtr_eq",
                 dealloc: str = "eager", seed: int = 0, trace: bool = False,
                 sizeof: Callable[[Any], int] | None = None, access: str = "lock") -> None:
        if access not in ACCESS_CONVENTIONS:
            raise DTRError(f"unknown access convention {access!r}"
                           f"{did_you_mean(str(access), ACCESS_CONVENTIONS)} "
                           f"(known: {', '.join(ACCESS_CONVENTIONS)})")
        self.access = access
        self._simrd_access = access == "simrd"
        if budget is not None and (isinstance(budget, bool)
                                   or not isinstance(budget, numbers.Integral) or budget < 0):
            raise DTRError(f"a DTR budget is a non-negative number of bytes (int) or None, "
                           f"not {budget!r}")
        if dealloc not in DEALLOC_POLICIES:
            raise DTRError(f"unknown dealloc policy {dealloc!r}"
                           f"{did_you_mean(str(dealloc), DEALLOC_POLICIES)} "
                           f"(known: {', '.join(DEALLOC_POLICIES)})")
        self.budget = None if budget is None else int(budget)
        self.heuristic: Heuristic = get_heuristic(heuristic)
        self.dealloc = dealloc
        self.trace = trace
        self.events: list[DTREvent] = []
        self._sizeof = sizeof or _default_sizeof
        self._rng = _random.Random(seed)
        self._uf = UnionFind() if self.heuristic.uses_eq else None
        # evictions whose eq-class joins wait for the first score (see _flush_uf)
        self._uf_pending: list[Storage] | None = [] if self._uf is not None else None
        self._pool: dict[Storage, None] = {}  # the evictable storages, insertion-ordered
        self._storages: list[Storage] = []
        self._next_id = 0
        self.clock = 0.0
        self.memory = 0
        self.pinned_memory = 0
        # statistics (DTRStats)
        self._peak = 0
        self._peak_pinned = 0
        self._base = 0.0
        self._remat = 0.0
        self._execs = 0
        self._remats = 0
        self._evictions = 0
        self._eager = 0
        self._banished = 0
        self._accesses = 0
        self._scores = 0
        self._oom = False

    # ---- public API ---------------------------------------------------------------------

    def constant(self, nbytes: int, value: Any = None, name: str = "") -> Tensor:
        """A pinned tensor of ``nbytes`` (an input, a weight, a literal): D-Pin. Counted in
        the budget; room is made for it as for a call's output (D-Alloc)."""
        self._make_room(int(nbytes), name or "constant", None, ())
        s = self._new_storage(int(nbytes))
        t = self._new_tensor(s, None, 0, False, name)
        s.resident = True
        s.pinned = True
        t.defined = True
        t.value = value
        s.last_access = self.clock
        self._grow(s.size)
        self.pinned_memory += s.size
        self._peak_pinned = max(self._peak_pinned, self.pinned_memory)
        self._event("allocate", name or "constant", None, s)
        return t

    def call(self, name: str, args: Sequence[Tensor], sizes: Sequence[int | None],
             cost: float, compute: Callable[[list], Sequence] | None,
             aliases: Sequence[int | None] = (), span: Any = None) -> list[Tensor]:
        """Run an operator (D-Alloc, D-Remat, D-Lock, D-Access): rematerialise the evicted
        ``args`` (replaying their calls), lock the arguments, make room for the outputs'
        ``sizes`` (bytes; None: known only after ``compute``, admitted then), run
        ``compute([arg values])`` (None: account only), and return one new tensor per
        output, each with one external reference. ``aliases[i] = j``: output ``i`` is a
        view of argument ``j``'s storage (its size is ignored: accounted once, D-Alias).
        ``cost`` advances the clock. Raises ``DTROutOfMemory`` (D-OOM)."""
        n = len(sizes)
        ready = True
        for a in args:
            if not a.defined:
                if a.storage.banished:
                    raise DTRError(f"call {name}: argument {a!r} was banished (freed for "
                                   "good)")
                ready = False
        if aliases:
            al = tuple(aliases) + (None,) * (n - len(aliases))
            if len(al) != n:
                raise DTRError(f"call {name}: {len(aliases)} aliases for {n} outputs")
            for i, j in enumerate(al):
                if j is not None and not 0 <= j < len(args):
                    raise DTRError(f"call {name}: output {i} aliases argument {j}, but "
                                   f"there are {len(args)} arguments")
            sz = [0 if al[i] is not None else (None if s is None else int(s))
                  for i, s in enumerate(sizes)]
        else:
            al = (None,) * n
            sz = [None if s is None else int(s) for s in sizes]
        c = Call(self._fresh(), name, tuple(args), sz, float(cost), compute, al, span)
        if ready and (self.budget is None
                      or (None not in sz and self.memory + sum(sz) <= self.budget)):
            # the fast path: nothing to rematerialise and the outputs fit, so nothing is
            # evicted while the call runs and its arguments need no locks (D-Lock guards
            # against evictions only); D-Access as at lock time, in either convention
            clock = self.clock
            for a in args:
                a.storage.last_access = clock
            self._execute(c, True)
            pool = self._pool
            for a in args:  # where unlocking would put them: last in the pool's order
                if pool.pop(a.storage, 0) is None:
                    pool[a.storage] = None
            if self.dealloc == "banish":
                for a in args:
                    if a.storage.refs == 0:
                        self._try_banish(a.storage)
        else:
            self._run_stack(_Frame(c, True))
        return list(c.outputs)

    def value(self, t: Tensor) -> Any:
        """``t``'s value, rematerialised first if evicted (D-Remat); an access (D-Access)."""
        self._ensure(t)
        t.storage.last_access = self.clock
        return t.value

    def ensure(self, t: Tensor) -> None:
        """Make ``t`` defined (rematerialising it if evicted) without touching its value."""
        self._ensure(t)

    def retain(self, t: Tensor) -> Tensor:
        """One more external reference to ``t`` (the log's COPY); returns ``t``."""
        t.refs += 1
        t.storage.refs += 1
        return t

    def release(self, t: Tensor) -> None:
        """The program dropped a reference to ``t``; at the storage's last one, the dealloc
        policy acts: D-Release-Eager (evict), D-Banish (free for good when no evicted
        tensor depends on it, pinning its children), D-Release-Ignore (nothing)."""
        if t.refs <= 0:
            raise DTRError(f"release of {t!r}, which has no reference left")
        t.refs -= 1
        s = t.storage
        s.refs -= 1
        if self.trace:
            name = t.call.name if t.call else (t.name or "constant")
            self._event("release", name, t.call.span if t.call else None, s)
        if s.refs > 0:
            return
        if self.dealloc == "eager":
            # D-Release-Eager: evict (never a pinned or locked storage)
            if s.resident and not s.pinned and s.locks == 0 and not s.banished:
                self._eager += 1
                self._evict(s)
        elif self.dealloc == "banish":
            self._try_banish(s)
        # D-Release-Ignore: nothing

    def pin(self, t: Tensor, *, keep_value: bool = False) -> None:
        """D-Pin for a computed result the program now holds itself (the runtime returns it
        as a plain array): ``t`` is made resident if evicted, its storage pinned (never
        evicted) and counted in the pinned bytes. Unless ``keep_value``, the engine forgets
        the value: the program's reference is then the only one (so ``free`` can follow
        its death), and a replay reading ``t`` gets None from the engine (the caller's
        kernel must hold the value itself, as the runtime's closures do)."""
        self._ensure(t)
        s = t.storage
        if not keep_value:
            t.value = None
        if s.pinned or s.banished:
            return
        s.pinned = True
        self._pool.pop(s, None)
        self.pinned_memory += s.size
        self._peak_pinned = max(self._peak_pinned, self.pinned_memory)
        self._event("pin", _label(s), t.call.span if t.call else None, s)

    def free(self, t: Tensor) -> None:
        """D-Free: the program's own copy of the pinned ``t`` died and nothing will read it
        again (the caller guarantees that no replay needs it): its storage is freed for
        good, unless another tensor still held views it. Nothing is pinned in its place
        (unlike D-Banish: the caller's guarantee replaces the dependents' check)."""
        s = t.storage
        if not s.pinned or s.banished:
            return
        if self._uf_pending is not None:
            self._flush_uf()
        if any(x is not t and x.defined and x.refs > 0 for x in s.tensors):
            return  # viewed by a tensor still held
        s.pinned = False
        s.banished = True
        if s.resident:
            s.resident = False
            self.pinned_memory -= s.size
            self.memory -= s.size
        self._pool.pop(s, None)
        for x in s.tensors:
            x.defined = False
            x.value = None
        if s._uf is not None and self._uf is not None:
            self._uf.add(s._uf, -s.cost)
            s._uf = None
        self._banished += 1
        self._drop_replays(s)
        self._event("banish", _label(s), t.call.span if t.call else None, s)

    def require_resident(self, tensors: Iterable[Tensor]) -> None:
        """D-Output: every tensor given is made resident (rematerialised if evicted) and
        kept so (locked for good): the outputs that must be resident at the end of a run."""
        for t in tensors:
            if t.storage.banished:
                continue
            self._ensure(t)
            self._lock(t.storage)

    @property
    def remat_compute(self) -> float:
        """The cost of the replays so far (cheaper to read than a ``stats`` snapshot)."""
        return self._remat

    def storages(self) -> list[Storage]:
        """Every storage made so far, in creation order (resident, evicted or banished):
        for pictures of the resident set over time (the paper's Figure 5)."""
        return list(self._storages)

    def resident_storages(self) -> list[Storage]:
        """The resident storages now, in creation order."""
        return [s for s in self._storages if s.resident]

    @property
    def stats(self) -> DTRStats:
        """A snapshot of the statistics so far (spec/dtr.md §5)."""
        base = self._base
        slowdown = (base + self._remat) / base if base > 0 else 1.0
        return DTRStats(
            budget=self.budget, heuristic=self.heuristic.name, dealloc=self.dealloc,
            peak_bytes=self._peak, pinned_bytes=self._peak_pinned, memory_bytes=self.memory,
            base_compute=base, remat_compute=self._remat, slowdown=slowdown,
            op_executions=self._execs, rematerializations=self._remats,
            evictions=self._evictions, eager_evictions=self._eager, banished=self._banished,
            heuristic_evaluations=self._accesses, score_evaluations=self._scores,
            thrashed=slowdown >= 2.0, oom=self._oom)

    # ---- metadata for the heuristics (relay_ref.dtr.heuristics.Metadata) ---------------

    def staleness(self, s: Storage) -> float:
        """s(S) = clock - last_access(S) (D-Access)."""
        self._accesses += 1
        return self.clock - s.last_access

    def local_cost(self, s: Storage) -> float:
        """c0(S)."""
        self._accesses += 1
        return s.cost

    def random(self) -> float:
        """A seeded U(0, 1) draw (h_rand)."""
        return self._rng.random()

    def estar_cost(self, s: Storage) -> float:
        """c0(S) + Σ c0 over e*(S): the evicted storages reachable from S through evicted
        storages, following arguments (ancestors) or consumers (descendants)."""
        return s.cost + sum(x.cost for x in self.evicted_neighbourhood(s))

    def ancestors_cost(self, s: Storage) -> float:
        """c0(S) + Σ c0 over e_R(S), the evicted ancestors reachable through evicted ones."""
        return s.cost + sum(x.cost for x in self._closure(s, up=True, down=False))

    def eq_cost(self, s: Storage) -> float:
        """c0(S) + the cost sums of the distinct union-find classes of S's evicted
        neighbours (ẽ*, spec/dtr.md §4.1)."""
        uf = self._uf
        if uf is None:
            raise DTRError(f"heuristic {self.heuristic.name} reads eq-class costs but does "
                           "not declare uses_eq")
        if self._uf_pending is not None:
            self._flush_uf()
        roots = {uf.find(n._uf) for n in self._neighbours(s) if n._uf is not None}
        self._accesses += len(roots)
        return s.cost + sum(uf.total(r) for r in roots)

    def evicted_neighbourhood(self, s: Storage) -> set[Storage]:
        """e*(S) (spec/dtr.md §4): evicted ancestors and evicted descendants of S, each
        reached through evicted storages only."""
        return self._closure(s, up=True, down=True)

    # ---- internals ----------------------------------------------------------------------

    def _fresh(self) -> int:
        self._next_id += 1
        return self._next_id

    def _new_storage(self, size: int) -> Storage:
        s = Storage(self._fresh(), size)
        self._storages.append(s)
        return s

    def _new_tensor(self, s: Storage, call: Call | None, index: int, is_alias: bool,
                    name: str = "") -> Tensor:
        t = Tensor(self._fresh(), s, call, index, is_alias, name)
        s.tensors.append(t)
        s.refs += 1
        return t

    def _grow(self, nbytes: int) -> None:
        self.memory += nbytes
        if self.memory > self._peak:
            self._peak = self.memory

    def _event(self, kind: str, name: str, span: Any, s: Storage | None) -> None:
        if self.trace:
            self.events.append(DTREvent(kind, name, span, s.id if s else -1,
                                        s.size if s else 0, self.clock))

    def _parents(self, s: Storage) -> list[Storage]:
        out: list[Storage] = []
        for t in s.tensors:
            if t.call is not None:
                for a in t.call.args:
                    if a.storage is not s:
                        out.append(a.storage)
        self._accesses += len(out)
        return out

    def _children(self, s: Storage) -> list[Storage]:
        out: list[Storage] = []
        for c in s.consumers:
            for o in c.outputs:
                if o.storage is not s:
                    out.append(o.storage)
        self._accesses += len(out)
        return out

    def _neighbours(self, s: Storage) -> list[Storage]:
        """S's evicted parents and children (D-Evict's eq-class update reads these)."""
        out: list[Storage] = []
        count = 0
        for t in s.tensors:
            if t.call is not None:
                for a in t.call.args:
                    x = a.storage
                    if x is not s:
                        count += 1
                        if not x.resident and not x.banished:
                            out.append(x)
        for c in s.consumers:
            for o in c.outputs:
                x = o.storage
                if x is not s:
                    count += 1
                    if not x.resident and not x.banished:
                        out.append(x)
        self._accesses += count
        return out

    def _closure(self, s: Storage, *, up: bool, down: bool) -> set[Storage]:
        """Evicted storages reachable from ``s`` through evicted storages (iterative)."""
        seen: set[Storage] = set()
        for direction in ((True, False), (False, True)):
            if not (up if direction[0] else down):
                continue
            stack = [s]
            while stack:
                x = stack.pop()
                nxt = self._parents(x) if direction[0] else self._children(x)
                for n in nxt:
                    if n.evicted and n not in seen and n is not s:
                        seen.add(n)
                        stack.append(n)
        return seen

    def _lock(self, s: Storage) -> None:
        """D-Lock: a locked storage is not evictable."""
        s.locks += 1
        self._pool.pop(s, None)

    def _unlock(self, s: Storage) -> None:
        s.locks -= 1
        if s.locks == 0 and s.resident and not s.pinned and not s.banished:
            self._pool[s] = None

    def _evict(self, s: Storage) -> None:
        """D-Evict's effect: free S, undefine every tensor viewing it; for dtr_eq, S joins
        the union-find classes of its evicted neighbours."""
        s.resident = False
        self._pool.pop(s, None)
        self.memory -= s.size
        for t in s.tensors:
            t.defined = False
            t.value = None
        self._evictions += 1
        if self._uf is not None:
            if self._uf_pending is not None:
                self._uf_pending.append(s)
            else:
                self._uf_join(s)
        if self.trace:
            root = s.tensors[0] if s.tensors else None
            self._event("evict", _label(s), root.call.span if root and root.call else None,
                        s)

    @staticmethod
    def _drop_replays(s: Storage) -> None:
        """S was freed for good: a call all of whose outputs are now banished can never be
        replayed, so its kernel closure (and the arguments it holds, pinned arrays among
        them) is dropped."""
        for t in s.tensors:
            c = t.call
            if c is not None and c.compute is not None and all(
                    o.storage.banished for o in c.outputs):
                c.compute = None

    def _uf_join(self, s: Storage) -> None:
        """S (just evicted) joins the union-find classes of its evicted neighbours."""
        node = self._uf.make(s.cost)
        for n in self._neighbours(s):
            if n._uf is not None:
                self._uf.union(n._uf, node)
        s._uf = node

    def _flush_uf(self) -> None:
        """Apply the pending eq-class joins. Until the first score, the first replay or the
        first banish or free, storages are evicted only by a release and never come back,
        so the evicted set only grows and its classes (the connected components of evicted
        neighbours, each class's cost the sum of its members') do not depend on the order
        of the joins: joining them now gives the classes joining at each eviction gave.
        A budget never reached (no eviction for room) never pays for them."""
        pending = self._uf_pending
        if pending is None:
            return
        self._uf_pending = None
        for s in pending:
            if s._uf is None and not s.resident and not s.banished:
                self._uf_join(s)

    def _choose(self) -> Storage:
        """D-Evict: the evictable storage of lowest score (the last of equal ones; a score
        of 0 ends the scan)."""
        if self._uf_pending is not None:
            self._flush_uf()
        score = self.heuristic.score
        best: Storage | None = None
        best_score = float("inf")
        for s in self._pool:
            self._scores += 1
            self._accesses += 1
            v = score(self, s)
            if v <= best_score:
                best, best_score = s, v
                if v == 0:
                    break
        assert best is not None
        return best

    def _make_room(self, need: int, name: str, span: Any, locked: Sequence[Storage]) -> None:
        """D-Alloc: evict (D-Evict) until ``need`` more bytes fit the budget; D-OOM when
        nothing evictable is left."""
        if self.budget is None:
            return
        while self.memory + need > self.budget:
            if not self._pool:
                self._oom = True
                working = need + sum(s.size for s in dict.fromkeys(locked))
                raise DTROutOfMemory(budget=self.budget, pinned_bytes=self.pinned_memory,
                                     name=name, span=span, working_set=working,
                                     in_use=self.memory, needed=need)
            self._evict(self._choose())

    def _ensure(self, t: Tensor) -> None:
        if t.defined:
            return
        if t.storage.banished:
            raise DTRError(f"{t!r} was banished (freed for good) and cannot be recomputed")
        if t.call is None:
            raise DTRError(f"{t!r} is a constant that is not resident")  # pinned: unreachable
        self._run_stack(_Frame(t.call, False, t))

    def _run_stack(self, bottom: _Frame) -> None:
        """D-Remat with D-Lock: a call starting locks its defined arguments at once, then
        makes each undefined one defined in turn (pushing the call that made it) and locks
        it; when all are locked it runs. Iterative: chains of any length. On an exception
        every lock taken here is released."""
        if self._uf_pending is not None:
            self._flush_uf()
        stack = [bottom]
        try:
            while stack:
                f = stack[-1]
                c = f.call
                if f.target is not None and f.target.defined:
                    # a sibling's replay defined it meanwhile (D-Multi)
                    self._unlock_args(stack.pop())
                    continue
                if f.todo is None:  # the call starts
                    if self._simrd_access:
                        for a in c.args:  # D-Access (simrd): every argument, now
                            a.storage.last_access = self.clock
                    f.todo = []
                    for a in c.args:
                        if a.defined:
                            self._lock_arg(f, a)
                        else:
                            f.todo.append(a)
                    f.todo.reverse()
                    continue
                if f.todo:
                    a = f.todo[-1]
                    if a.defined:
                        self._lock_arg(f, a)
                        f.todo.pop()
                    elif a.storage.banished or a.call is None:
                        raise DTRError(f"call {c.name}: argument {a!r} cannot be recomputed")
                    else:
                        stack.append(_Frame(a.call, False, a))
                    continue
                self._execute(c, f.first)
                self._unlock_args(stack.pop())
        except BaseException:
            while stack:
                self._unlock_args(stack.pop())
            raise

    def _lock_arg(self, f: _Frame, a: Tensor) -> None:
        if not self._simrd_access:
            a.storage.last_access = self.clock  # D-Access (lock)
        self._lock(a.storage)
        f.locked.append(a)

    def _unlock_args(self, f: _Frame) -> None:
        for a in f.locked:
            self._unlock(a.storage)
        if self.dealloc == "banish":
            for a in f.locked:
                if a.storage.refs == 0:
                    self._try_banish(a.storage)
        f.locked = []

    def _execute(self, c: Call, first: bool) -> None:
        """Run (or replay) ``c`` with its arguments locked: D-Alloc, then compute, then
        define the outputs (D-Multi drops the copies of outputs still resident)."""
        known = 0
        for size in c.sizes:
            if size is not None:
                known += size
        if self.budget is not None and self.memory + known > self.budget:
            self._make_room(known, c.name, c.span, [a.storage for a in c.args])
        values: Sequence | None = None
        if c.compute is not None:
            values = c.compute([a.value for a in c.args])
            if len(values) != len(c.sizes):
                raise DTRError(f"call {c.name}: its kernel returned {len(values)} values "
                               f"for {len(c.sizes)} outputs")
        self.clock += c.cost
        self._execs += 1
        if first:
            self._base += c.cost
            self._first_outputs(c, values)
        else:
            self._remat += c.cost
            self._remats += 1
            self._replay_outputs(c, values)
            if self._simrd_access:
                return  # a replayed storage keeps the access its consumer gave it (D-Access)
        for o in c.outputs:
            o.storage.last_access = self.clock

    def _first_outputs(self, c: Call, values: Sequence | None) -> None:
        sizes = c.sizes
        if None in sizes:
            # unknown sizes: measured, then admitted (D-Alloc after the fact)
            unknown = [i for i, s in enumerate(sizes) if s is None]
            for i in unknown:
                sizes[i] = self._sizeof(values[i]) if values is not None else 0
            self._grow(sum(sizes[i] for i in range(len(sizes)) if i not in unknown))
            extra = sum(sizes[i] for i in unknown)
            self._make_room(extra, c.name, c.span, [a.storage for a in c.args])
            self._grow(extra)
        else:
            self._grow(sum(sizes))
        args = c.args
        if len(args) == 1:
            args[0].storage.consumers.append(c)
        else:
            seen: set[int] = set()
            for a in args:
                if id(a.storage) not in seen:
                    seen.add(id(a.storage))
                    a.storage.consumers.append(c)
        outputs = c.outputs
        cid, cost = c.id, c.cost
        for i, size in enumerate(sizes):
            j = c.aliases[i]
            if j is None:
                s = self._new_storage(size)
                s.resident = True
                t = self._new_tensor(s, c, i, False)
                self._pool[s] = None
            else:
                s = args[j].storage  # D-Alias
                t = self._new_tensor(s, c, i, True)
            counted = s._cost_calls
            if counted is None:
                s._cost_calls = cid
                s.cost += cost
            elif type(counted) is int:
                if counted != cid:
                    s._cost_calls = {counted, cid}
                    s.cost += cost
            elif cid not in counted:
                counted.add(cid)
                s.cost += cost
            t.defined = True
            t.value = values[i] if values is not None else None
            outputs.append(t)
        if self.trace:
            for t in outputs:
                if not t.is_alias:
                    self._event("allocate", c.name, c.span, t.storage)

    def _replay_outputs(self, c: Call, values: Sequence | None) -> None:
        self._grow(sum(c.sizes))  # the kernel writes every output (D-Multi)
        for i, t in enumerate(c.outputs):
            s = t.storage
            if t.defined:
                if c.aliases[i] is None:
                    self.memory -= c.sizes[i]  # a copy of a resident output: dropped
                continue
            if c.aliases[i] is None and not s.resident:
                s.resident = True
                if s._uf is not None and self._uf is not None:
                    self._uf.add(s._uf, -s.cost)  # eq class: S leaves (phantom stays)
                    s._uf = None
                if s.locks == 0 and not s.pinned:
                    self._pool[s] = None
                self._event("rematerialize", c.name, c.span, s)
            t.defined = True
            t.value = values[i] if values is not None else None

    def _try_banish(self, first: Storage) -> None:
        """D-Banish: free S for good when the program holds no reference, nothing runs with
        it and no evicted tensor depends on it; its children (resident) become pinned
        (D-Pin). A parent whose last evicted dependent was S is tried next (a worklist)."""
        if self._uf_pending is not None:
            self._flush_uf()
        work = [first]
        while work:
            s = work.pop()
            if s.refs > 0 or s.banished or s.locks > 0:
                continue
            children = self._children(s)
            if any(not x.resident and not x.banished for x in children):
                continue
            if any(o.storage is not s and not o.defined and not o.storage.banished
                   for cc in s.consumers for o in cc.outputs):
                continue  # an undefined view depending on S
            if s.resident:
                self.memory -= s.size
                if s.pinned:
                    self.pinned_memory -= s.size
            s.resident = False
            s.banished = True
            s.pinned = False
            self._pool.pop(s, None)
            if s._uf is not None and self._uf is not None:
                self._uf.add(s._uf, -s.cost)  # gone for good: no longer a cost to anyone
                s._uf = None
            for t in s.tensors:
                t.defined = False
                t.value = None
            self._banished += 1
            self._drop_replays(s)
            self._event("banish", _label(s), None, s)
            for x in children:
                if x.resident and not x.pinned and not x.banished:
                    x.pinned = True  # D-Pin: nothing can recompute it now
                    self._pool.pop(x, None)
                    self.pinned_memory += x.size
                    self._peak_pinned = max(self._peak_pinned, self.pinned_memory)
                    self._event("pin", _label(x), None, x)
            work.extend(p for p in self._parents(s) if p.refs == 0 and not p.banished)


def _label(s: Storage) -> str:
    """The name of the call that made S's root (``constant`` for a constant)."""
    root = s.tensors[0] if s.tensors else None
    if root is None or root.call is None:
        return (root.name if root else "") or "constant"
    return root.call.name
