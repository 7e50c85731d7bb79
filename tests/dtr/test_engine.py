"""The DTR engine's rules (spec/dtr.md §3-4) on small hand-made states: the paper's Figure 1
neighbourhoods, each heuristic's choice, the union-find approximation against the exact
e*, remat chains without recursion, banishing, views, multi-output replays, out of memory.
"""

from __future__ import annotations

import pytest

from relay_ref.dtr import DTRError, DTROutOfMemory, Engine, get_heuristic


def _figure1(engine: Engine):
    """t1 = f(t0), t2 = f(t1), t3 = f(t1), t4 = f(t2, t3), t5 = f(t3), t6 = f(t4, t5)
    (spec/dtr.md §4); costs 1, 2, 3, 4, 5, 6; t1, t4, t5 released (eager: evicted)."""
    t = {0: engine.constant(1, name="t0")}
    edges = {1: [0], 2: [1], 3: [1], 4: [2, 3], 5: [3], 6: [4, 5]}
    for i, parents in edges.items():
        (t[i],) = engine.call(f"f{i}", [t[p] for p in parents], [1], float(i), None)
    for i in (1, 4, 5):
        engine.release(t[i])
    return t


def test_figure1_evicted_neighbourhoods():
    e = Engine(None, heuristic="dtr_eq")
    t = _figure1(e)
    assert {i for i, x in t.items() if x.defined} == {0, 2, 3, 6}
    nb = e.evicted_neighbourhood
    assert nb(t[2].storage) == {t[1].storage, t[4].storage}
    assert nb(t[3].storage) == {t[1].storage, t[4].storage, t[5].storage}
    # costs: exact and union-find agree here (no phantom, no undirected detour)
    assert e.estar_cost(t[2].storage) == 2 + 1 + 4
    assert e.estar_cost(t[3].storage) == 3 + 1 + 4 + 5
    assert e.eq_cost(t[2].storage) == 2 + 1 + 4
    assert e.eq_cost(t[3].storage) == 3 + 1 + 4 + 5
    assert e.ancestors_cost(t[3].storage) == 3 + 1  # msps: evicted ancestors only


def test_union_find_overapproximates_through_an_undirected_path():
    """A -> S, A -> B with A and B evicted: e*(S) = {A}, but ẽ*(S) is A's class {A, B}
    (edge directions forgotten, spec/dtr.md §4.1)."""
    e = Engine(None, heuristic="dtr_eq")
    c = e.constant(1)
    (a,) = e.call("A", [c], [1], 10.0, None)
    (s,) = e.call("S", [a], [1], 1.0, None)
    (b,) = e.call("B", [a], [1], 100.0, None)
    e.release(a)
    e.release(b)
    assert e.evicted_neighbourhood(s.storage) == {a.storage}
    assert e.estar_cost(s.storage) == 1 + 10
    assert e.eq_cost(s.storage) == 1 + 10 + 100
    # rematerialising A subtracts its cost from the class: B's phantom neighbour remains
    e.value(a)
    assert e.eq_cost(s.storage) == 1.0  # A resident again: no evicted neighbour of S


def _state(heuristic: str, seed: int = 0) -> tuple[Engine, dict]:
    """c (pinned, 1 B); a: 2 B cost 1; b: 1 B cost 10; d: 4 B cost 1; e: 1 B cost 1; the
    budget is full (9 B). At clock 13 the staleness is a 12, b 2, d 1, e 0."""
    eng = Engine(9, heuristic=heuristic, seed=seed, trace=True)
    c = eng.constant(1, name="c")
    out = {}
    for name, size, cost in (("a", 2, 1.0), ("b", 1, 10.0), ("d", 4, 1.0), ("e", 1, 1.0)):
        (out[name],) = eng.call(name, [c], [size], cost, None)
    return eng, {"c": c, **out}


@pytest.mark.parametrize(("heuristic", "victim"), [
    ("lru", "a"),  # 1/s: a 1/12 lowest
    ("size", "d"),  # 1/m: d 1/4 lowest
    ("dtr_local", "a"),  # c0/(m s): a 1/24, b 5, d 1/4, e inf
    ("dtr", "a"),  # nothing evicted yet: e* empty, as dtr_local
    ("dtr_eq", "a"),
    ("msps", "d"),  # (c0 + e_R)/m: a 1/2, b 10, d 1/4, e 1
    ("ablation(s=0,m=0,c=local)", "e"),  # c0: a, d, e tie at 1: the last scanned wins
    ("ablation(s=1,m=0,c=none)", "a"),  # = lru
])
def test_each_heuristic_chooses_its_victim(heuristic, victim):
    eng, t = _state(heuristic)
    assert eng.memory == 9 and eng.clock == 13
    eng.call("g", [t["c"]], [1], 1.0, None)  # needs one byte: exactly one eviction
    evicted = [name for name, x in t.items() if not x.defined]
    assert evicted == [victim]
    assert [ev.name for ev in eng.events if ev.kind == "evict"] == [victim]
    assert eng.memory <= 9


def test_random_is_seeded():
    def victims(seed):
        eng, t = _state("random", seed)
        for _ in range(3):
            eng.call("g", [t["c"]], [1], 1.0, None)
        return [ev.storage for ev in eng.events if ev.kind == "evict"]
    assert victims(1) == victims(1)
    assert len({tuple(victims(s)) for s in range(8)}) > 1


def test_unknown_heuristic_and_bad_arguments_are_clear():
    with pytest.raises(DTRError, match=r"did you mean dtr_eq\?.*known: dtr, dtr_eq"):
        Engine(10, heuristic="dtr_qe")
    with pytest.raises(DTRError, match="unknown ablation cost"):
        get_heuristic("ablation(s=1,m=1,c=foo)")
    with pytest.raises(DTRError, match="non-negative"):
        Engine(-1)
    with pytest.raises(DTRError, match="did you mean eager"):
        Engine(10, dealloc="eagre")


def test_a_chain_of_10000_evicted_tensors_is_rematerialised_without_recursion():
    n = 10_000
    eng = Engine(3 * 8, heuristic="lru")
    ts = [eng.constant(8, 0)]
    for _ in range(n):
        ts.extend(eng.call("inc", [ts[-1]], [8], 1.0, lambda a: [a[0] + 1]))
    assert not ts[n - 5].defined
    assert eng.value(ts[n - 5]) == n - 5
    assert eng.stats.rematerializations >= n - 10
    assert eng.stats.peak_bytes <= 24


def test_values_are_the_same_under_a_budget():
    def run(budget):
        eng = Engine(budget, heuristic="dtr_eq")
        xs = [eng.constant(8, 1), eng.constant(8, 2)]
        for i in range(60):
            a, b = xs[-1], xs[-2 - (i % 5)]
            xs.extend(eng.call("mix", [a, b], [8], 1.0 + i % 3,
                               lambda v, i=i: [(v[0] * 3 + v[1] + i) % 1000003]))
        return [eng.value(x) for x in xs], eng.stats
    free, s0 = run(None)
    tight, s1 = run(6 * 8)
    assert tight == free
    assert s0.rematerializations == 0 and s1.rematerializations > 0
    assert s1.peak_bytes <= 48 < s0.peak_bytes


def test_banish_frees_and_pins_children():
    eng = Engine(None, dealloc="banish")
    c = eng.constant(8, name="c")
    (a,) = eng.call("a", [c], [100], 1.0, None)
    (b,) = eng.call("b", [a], [10], 1.0, None)
    assert eng.memory == 118
    eng.release(a)
    assert a.storage.banished and not a.defined
    assert b.storage.pinned  # nothing can recompute b now (D-Banish, D-Pin)
    assert eng.memory == 18 and eng.stats.banished == 1
    # eager eviction keeps a in the graph instead (and pins nothing)
    eng2 = Engine(None, dealloc="eager")
    c2 = eng2.constant(8)
    (a2,) = eng2.call("a", [c2], [100], 1.0, None)
    (b2,) = eng2.call("b", [a2], [10], 1.0, None)
    eng2.release(a2)
    assert not a2.storage.banished and not a2.defined and not b2.storage.pinned
    assert eng2.stats.eager_evictions == 1


def test_banish_waits_for_evicted_dependents():
    eng = Engine(None, dealloc="banish")
    c = eng.constant(1)
    (a,) = eng.call("a", [c], [1], 1.0, None)
    (b,) = eng.call("b", [a], [1], 1.0, None)
    eng._evict(b.storage)  # b evicted: a is needed to recompute it
    eng.release(a)
    assert not a.storage.banished and a.defined
    eng.value(b)  # replaying b reads a; afterwards nothing depends on a: banished
    assert a.storage.banished and b.storage.pinned


def test_views_are_accounted_once_and_evicted_together():
    eng = Engine(None, dealloc="eager")
    c = eng.constant(8, 1)
    (a,) = eng.call("a", [c], [100], 1.0, lambda v: [v[0] + 1])
    (v,) = eng.call("view", [a], [100], 0.5, lambda v: [("view", v[0])], aliases=[0])
    assert v.storage is a.storage and v.is_alias
    assert eng.memory == 108
    assert a.storage.cost == 1.5  # c0 sums the calls viewing the storage
    eng.release(a)
    assert a.defined  # the view still references the storage
    eng.release(v)
    assert not a.defined and not v.defined and eng.memory == 8
    assert eng.value(v) == ("view", 2)  # replays a, then the view
    assert eng.stats.rematerializations == 2 and eng.memory == 108


def test_multi_output_replay_drops_resident_copies():
    eng = Engine(None, dealloc="eager")
    c = eng.constant(4, 10)
    x, y = eng.call("split", [c], [3, 5], 2.0, lambda v: [v[0] + 1, v[0] + 2])
    eng.release(x)
    assert not x.defined and y.defined and eng.memory == 9
    assert eng.value(x) == 11
    assert eng.memory == 12 and eng.stats.peak_bytes == 17  # both written, y's copy dropped
    assert eng.value(y) == 12 and eng.stats.rematerializations == 1


def test_sizes_known_after_compute_are_admitted():
    class Arr:
        def __init__(self, n):
            self.nbytes = n
    eng = Engine(100)
    c = eng.constant(10, Arr(10))
    (a,) = eng.call("a", [c], [None], 1.0, lambda v: [Arr(40)])
    (b,) = eng.call("b", [a], [None], 1.0, lambda v: [Arr(40)])
    (d,) = eng.call("d", [b], [None], 1.0, lambda v: [Arr(40)])
    assert a.call.sizes == [40] and not a.defined and eng.memory == 90
    assert eng.value(a).nbytes == 40


def test_a_budget_below_the_pinned_bytes_is_out_of_memory():
    eng = Engine(10)
    eng.constant(8)
    with pytest.raises(DTROutOfMemory) as info:
        eng.constant(8, name="w")
    err = info.value
    assert (err.budget, err.pinned_bytes, err.name) == (10, 8, "w")
    assert "[D-OOM]" in str(err) and eng.stats.oom


def test_out_of_memory_names_the_operator_and_its_working_set():
    eng = Engine(30)
    c = eng.constant(10)
    (a,) = eng.call("a", [c], [10], 1.0, None)
    with pytest.raises(DTROutOfMemory) as info:
        eng.call("big", [a, c], [15], 1.0, None, span="here")
    assert info.value.name == "big" and info.value.op_span == "here"
    assert info.value.working_set == 15 + 10 + 10
    assert a.storage.locks == 0  # locks are released on the way out


def test_trace_records_each_kind_of_event_with_the_callers_span():
    eng = Engine(24, heuristic="lru", trace=True)
    c = eng.constant(8, 0, name="c")
    (a,) = eng.call("a", [c], [8], 1.0, lambda v: [v[0] + 1], span="span-a")
    (b,) = eng.call("b", [a], [8], 1.0, lambda v: [v[0] + 1], span="span-b")
    (d,) = eng.call("d", [b], [8], 1.0, lambda v: [v[0] + 1], span="span-d")  # evicts a
    assert eng.value(a) == 1  # rematerialises a (evicting b)
    eng.release(d)
    kinds = [(ev.kind, ev.name, ev.span) for ev in eng.events]
    assert kinds == [
        ("allocate", "c", None), ("allocate", "a", "span-a"), ("allocate", "b", "span-b"),
        ("evict", "a", "span-a"), ("allocate", "d", "span-d"), ("evict", "b", "span-b"),
        ("rematerialize", "a", "span-a"), ("release", "d", "span-d"), ("evict", "d", "span-d")]
    assert [s.id for s in eng.resident_storages()] == [c.storage.id, a.storage.id]
    assert len(eng.storages()) == 4


def test_pin_and_free_a_result_the_program_holds():
    eng = Engine(100, dealloc="eager")
    c = eng.constant(10, 1)
    (a,) = eng.call("a", [c], [30], 1.0, lambda v: [v[0] + 1])
    eng.pin(a)  # D-Pin: the program holds a's value now
    assert a.storage.pinned and a.value is None and a.defined
    assert eng.stats.pinned_bytes == 40 and a.storage not in eng._pool
    (b,) = eng.call("b", [c], [60], 1.0, lambda v: [v[0] + 2])
    assert a.defined and b.defined and eng.memory == 100
    eng.free(a)  # D-Free: the program's value died
    assert a.storage.banished and not a.defined and eng.memory == 70
    assert eng.pinned_memory == 10 and eng.stats.banished == 1
    eng.free(a)  # idempotent
    assert eng.memory == 70
    (d,) = eng.call("d", [c], [5], 1.0, lambda v: [7])
    eng.pin(d, keep_value=True)
    assert eng.value(d) == 7


def test_a_waiting_call_keeps_its_defined_arguments():
    """D-Lock: g(b, a) with b evicted and a defined locks a before b is rematerialised
    (simrd's order, not the arguments'), so making room for b's replay evicts something
    else, although a is the stalest (lru)."""
    eng = Engine(4, heuristic="lru", trace=True)
    c = eng.constant(1, 0)
    (a,) = eng.call("a", [c], [1], 1.0, lambda v: [1])
    (b,) = eng.call("b", [c], [1], 1.0, lambda v: [2])
    (d,) = eng.call("d", [c], [1], 1.0, lambda v: [3])
    eng._evict(b.storage)
    (x,) = eng.call("x", [c], [1], 1.0, lambda v: [4])  # memory full again: c, a, d, x
    assert eng.value(eng.call("g", [b, a], [0], 1.0, lambda v: [v[0] - v[1]])[0]) == 1
    assert a.defined and not d.defined  # d, not the stalest a, made room for b


def test_access_conventions():
    with pytest.raises(DTRError, match="did you mean simrd"):
        Engine(10, access="simdr")
    for access in ("lock", "simrd"):
        eng = Engine(None, access=access)
        c = eng.constant(1)
        (a,) = eng.call("a", [c], [1], 2.0, None)
        eng._evict(a.storage)
        (g,) = eng.call("g", [a], [1], 3.0, None)  # replays a (clock 4), then g (clock 7)
        # lock: a is touched as it is locked (after its replay); simrd: when g starts
        assert a.storage.last_access == (4.0 if access == "lock" else 2.0)
