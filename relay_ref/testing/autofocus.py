"""``check_pass``'s automatic focus: find what a pass rewrites before checking it.

Strategy (``infer_focus``), all without running programs (only the pass and the type
checker), so it costs a fraction of the check itself:

1. **Pilot.** ``PILOT`` unfocused generated programs go through the pass. If it changed
   enough of them that the main run should fire ``4 * min_fired`` times unfocused, no
   focus is needed. Otherwise, if it changed any, the focus is what sat at the top of the
   changed regions (``relay_ref.testing.regions``: the operators or forms rewritten),
   sharpened by the one-call programs of those operators (``with_hints``, below): a pilot
   that saw ``x * 1`` once must not give a weaker focus than the search would (``multiply``
   without its constant 1, on which the pass fires a few times in 200, not 60).
2. **Search**, when the pilot never saw the pass fire: first one-call programs of every
   operator (``focus_sigs`` signatures: on distinct parameters, on equal operands, on
   constants of its values that matter, on constant 0s / 1s after a parameter, nested
   in itself; about a millisecond each); if the pass changed
   any, the focus is what it rewrote there, and the signatures and constant operands on
   which it fired are drawn for half the focused calls (``Focus.sigs``,
   ``Focus.constants``: ``x * 1`` with a scalar 1 becomes common, not one call in 100).
   Otherwise each op family in turn (smallest
   first), then each expression form (``FOCUS_FORMS``), as ``PER_FAMILY`` generated
   programs focused on it; the first on which the pass fires gives the focus (the changed
   regions' tops, as above); this stops after ``budget`` generated programs.

A pass that raises during the search counts as firing there (the check then finds the
crash). The result is a ``Focus`` (empty: unfocused), how it was found and how many
programs were probed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as Settings
from hypothesis import strategies as st

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import Call, Constant, Expr, Function, Op, Tuple, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType, TupleType
from relay_ref.testing.focus import FOCUS_FORMS, Focus, focus_values
from relay_ref.testing.programs import Sig, focus_sigs, op_table, resolve_focus
from relay_ref.testing.programs import programs as generated_programs
from relay_ref.testing.regions import changed, changed_regions, summarise
from relay_ref.typecheck.infer import infer_types

__all__ = ["PER_FAMILY", "PILOT", "focus_of", "infer_focus", "with_hints"]

PILOT = 40
PER_FAMILY = 6
#: how many region tops the focus keeps (the most frequent)
MAX_FOCUS = 4

Pass = Callable[[IRModule], IRModule]


def _fired(pass_: Pass, mod: IRModule) -> frozenset[str] | None:
    """The region tops where ``pass_`` changed ``mod`` (None: unchanged or ill-typed)."""
    try:
        before = infer_types(mod)
    except Exception:  # noqa: BLE001 - a probe the type checker refuses: skipped
        return None
    try:
        after = pass_(before)
        if not isinstance(after, IRModule):
            return frozenset(("(the pass raised)",))
        if not changed(before, after):
            return None
        return summarise(changed_regions(before, after)).roots or frozenset(("(program)",))
    except Exception:  # noqa: BLE001 - a crash is the pass firing (check_pass reports it)
        return frozenset(("(the pass raised)",))


def _sample(strategy: st.SearchStrategy, count: int, base: Settings | None = None
            ) -> list[IRModule]:
    """``count`` modules drawn from ``strategy`` (``base``: the check's settings, so a
    derandomized check samples the same programs every run)."""
    found: list[IRModule] = []

    @Settings(base, max_examples=count, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(strategy)
    def draw(mod: IRModule) -> None:
        found.append(mod)

    draw()
    return found


def focus_of(tops: Counter) -> Focus:
    """The focus named by the most frequent tops of changed regions (operators and forms a
    focus can name; at most ``MAX_FOCUS``)."""
    names = [n for n, _ in tops.most_common() if not n.startswith("(")]
    table = op_table()
    keep = [n for n in names if n in table.by_op or n in FOCUS_FORMS][:MAX_FOCUS]
    return resolve_focus(keep) if keep else Focus()


def infer_focus(pass_: Pass, *, examples: int, min_fired: int, edge: bool,
                budget: int = 300, settings: Settings | None = None,
                trust_pilot: bool = True) -> tuple[Focus, str, int]:
    """``(focus, source, probed)`` for ``check_pass`` (see the module docstring);
    ``source`` is ``"none"``, ``"pilot"``, ``"search"`` or ``"not found"``. ``settings``:
    the hypothesis settings the samples start from (the check's). ``trust_pilot=False``
    (a rerun after an unfocused run that was vacuous): never answer "none needed"."""
    def run() -> tuple[Focus, str, int]:
        pilot = _sample(generated_programs(edge=edge), min(PILOT, examples), settings)
        tops: Counter = Counter()
        fired = 0
        for mod in pilot:
            found = _fired(pass_, mod)
            if found is not None:
                fired += 1
                tops.update(found)
        probed = len(pilot)
        if trust_pilot and fired * examples >= 4 * min_fired * max(len(pilot), 1):
            return Focus(), "none", probed
        if fired:
            focus, sharpening = with_hints(pass_, focus_of(tops))
            return focus, ("pilot" if focus else "none"), probed + sharpening
        hints, n = _probe(pass_, sorted(op_table().by_op), tops)  # every operator: cheap
        probed += n
        spent = 0
        if not tops:
            for mods in _search_space(edge, settings):
                for mod in mods:
                    probed, spent = probed + 1, spent + 1
                    found = _fired(pass_, mod)
                    if found is not None:
                        tops.update(found)
                if tops or spent >= budget:
                    break
        focus = _hinted(focus_of(tops), hints)
        return focus, ("search" if focus else "not found"), probed
    return run_deep(run)


def with_hints(pass_: Pass, focus: Focus) -> tuple[Focus, int]:
    """``focus`` sharpened by the one-call programs of its operators: the signatures and
    constant operands on which ``pass_`` fires there (``Focus.sigs``, ``Focus.constants``),
    and how many programs that probed. A focus inferred from changed regions (the pilot's,
    or an unfocused run's) names the operators only; without this its check draws the
    pattern the pass rewrites as rarely as the ordinary generator does."""
    if not focus.ops or focus.sigs or focus.constants:
        return focus, 0
    hints, probed = run_deep(lambda: _probe(pass_, focus.ops, Counter()))
    if any(variant == "params" for _, variant in hints):
        # It fires on an op applied to plain parameters: the focus draws that often
        # already, and pinning signatures would only keep the shrinker from small ones.
        return focus, probed
    return _hinted(focus, hints), probed


def _probe(pass_: Pass, ops: Iterable[str], tops: Counter) -> tuple[list[tuple[Sig, object]],
                                                                    int]:
    """Run ``pass_`` on the one-call programs of ``ops``: the ``(signature, variant)`` pairs
    on which it fired (their region tops added to ``tops``), and how many were probed."""
    hints: list[tuple[Sig, object]] = []
    probed = 0
    for op in ops:
        for mod, sig, variant in _one_call_programs(op):
            probed += 1
            found = _fired(pass_, mod)
            if found is not None:
                tops.update(found)
                hints.append((sig, variant))
    return hints, probed


def _hinted(focus: Focus, hints: list[tuple[Sig, object]]) -> Focus:
    """``focus`` with what fired in the one-call probes of its operators: those signatures,
    and the constant operands (0s, 1s) that made it fire."""
    if not focus or not hints:
        return focus
    sigs = tuple(dict.fromkeys(sig for sig, _ in hints if sig.op in focus.ops))
    constants = tuple(sorted({v for sig, v in hints
                              if isinstance(v, int) and sig.op in focus.ops}))
    return replace(focus, sigs=sigs, constants=constants)


def _search_space(edge: bool, base: Settings | None) -> Iterator[list[IRModule]]:
    """Groups of focused generated programs, one group per op family (smallest first), then
    one per expression form."""
    table = op_table()
    for family in sorted(table.families, key=lambda f: (len(table.families[f]), f)):
        yield _sample(generated_programs(edge=edge, focus=resolve_focus([family])), PER_FAMILY,
                      base)
    for form in dict.fromkeys(FOCUS_FORMS.values()):
        yield _sample(generated_programs(edge=edge, focus=Focus((), (form,), (form,))),
                      PER_FAMILY, base)


def _one_call_programs(op: str) -> list[tuple[IRModule, Sig, object]]:
    """``@main`` calling ``op`` once on its first focused and ordinary signatures: on distinct
    parameters, on equal operands, on constants of the op's values that matter, and on a
    parameter with constant 0s or 1s for the other operands (identities, ``x * 1``); and
    ``op(op(...))`` where the result can feed the op again (``relu(relu(x))``)."""
    out: list[IRModule] = []
    ordinary = op_table().by_op.get(op, [])[:2]
    for sig in dict.fromkeys([*focus_sigs(op)[:1], *ordinary]):
        for variant in ("params", "equal", "constants", 0, 1):
            params: list[Var] = []

            def leaf(ty: object, i: int, variant: str = variant, params: list = params
                     ) -> Expr:
                if isinstance(ty, TupleType):
                    return Tuple(tuple(leaf(f, i + j) for j, f in enumerate(ty.fields)))
                assert isinstance(ty, TensorType)
                if variant == "constants" or (isinstance(variant, int) and i > 0):
                    pool = (focus_values((op,), ty.dtype) or (1,) if variant == "constants"
                            else (variant,))
                    data = np.resize(np.array(pool, dtype=ty.dtype), tuple(ty.shape))
                    return Constant(np.asarray(data, dtype=ty.dtype))
                if variant == "equal" and params:
                    same = [p for p in params if p.type_annotation == ty]
                    if same:
                        return same[0]
                var = Var(f"p{len(params)}", ty)
                params.append(var)
                return var
            try:
                args = tuple(leaf(t, i) for i, t in enumerate(sig.args))
            except AssertionError:
                break
            body = Call(Op(op), args, sig.attrs)
            out.append((IRModule({"main": Function(tuple(params), body, sig.out)}), sig,
                        variant))
            if variant == "params" and sig.args and sig.args[0] == sig.out:  # op(op(x))
                nested = Call(Op(op), (body, *args[1:]), sig.attrs)
                out.append((IRModule({"main": Function(tuple(params), nested, sig.out)}),
                            sig, "nested"))
    return out
