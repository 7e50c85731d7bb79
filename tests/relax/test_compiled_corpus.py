"""The compiled program agrees with the interpreter on the Relax corpus (issue 29; spec/
semantics.md Shape-Bind, Shape-MatchCast, Shape-DPS, Shape-Dataflow).

``tests/relax/test_tvm_differential.py`` compares ``rr.evaluate`` with TVM's Relax VM; this
file closes the triangle without TVM: every program of ``relax_programs.PROGRAMS`` runs
through ``rr.compile`` (one executable per program, every size) and must give
``rr.evaluate``'s values, and every refusal ``rr.evaluate`` makes at run time
(``REFUSALS`` of stage ``"runtime"`` this project accepts statically) ``rr.compile``'s
executable makes too, with the same located message.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from relax_programs import PACKED, PROGRAMS, REFUSALS, SIZES

import relay_ref as rr
from relay_ref.testing import relax_oracle as ro
from relay_ref.testing.symbolic_programs import PACKED as GENERATED_PACKED
from relay_ref.testing.symbolic_programs import symbolic_cases


@pytest.fixture(scope="module", autouse=True)
def _packed_functions() -> None:
    for name, fn in PACKED.items():
        rr.register_packed(name, fn, replace=True)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_compiled_values_agree_with_the_interpreter(program) -> None:  # noqa: ANN001
    mod = rr.infer_types(rr.parse(program.relay, source_name=f"{program.name}.relay"))
    exe = rr.compile(mod)
    for k, sizes in enumerate(program.sizes):
        args = ro.random_inputs(program.args, sizes, seed=k)
        want = rr.evaluate(mod, *args)
        got = exe(*args)
        problems = ro.values_close(got, want)
        assert not problems, "\n".join([f"{program.name} at {sizes}", *problems])


def _static_ok(refusal) -> object | None:  # noqa: ANN001 - a Refusal
    try:
        return rr.infer_types(rr.parse(refusal.relay, source_name=f"{refusal.name}.relay"))
    except rr.RelayError:
        return None


_RUNTIME = [r for r in REFUSALS if r.stage == "runtime"]


@pytest.mark.parametrize("refusal", _RUNTIME, ids=[r.name for r in _RUNTIME])
def test_compiled_refusals_agree_with_the_interpreter(refusal) -> None:  # noqa: ANN001
    mod = _static_ok(refusal)
    if mod is None:  # refused statically (allowed: earlier than TVM): compile refuses too
        with pytest.raises(rr.RelayError):
            rr.compile(rr.infer_types(rr.parse(refusal.relay)))
        return
    args = ro.random_inputs(refusal.args, refusal.sizes or SIZES[0])
    with pytest.raises(rr.RelayRuntimeError) as want:
        rr.evaluate(mod, *args)
    exe = rr.compile(mod)
    with pytest.raises(rr.RelayRuntimeError) as got:
        exe(*args)
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=symbolic_cases())
def test_compiled_generated_programs_agree_with_the_interpreter(case) -> None:  # noqa: ANN001
    """The symbolic program generator's programs: one executable, two sizes, the
    interpreter's values."""
    for name, fn in GENERATED_PACKED.items():
        rr.register_packed(name, fn, replace=True)
    exe = rr.compile(case.module)
    for k, env in enumerate(({"n": 3, "m": 2, "h": 7}, {"n": 6, "m": 5, "h": 9})):
        args = case.arguments({v: env.get(v, 4) for v in case.param_vars}, seed=k)
        problems = ro.values_close(exe(*args), rr.evaluate(case.module, *args))
        assert not problems, "\n".join([f"at {env}", rr.astext(case.module), *problems])
