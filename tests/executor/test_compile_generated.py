"""``rr.compile`` against the definitional interpreter on generated programs (DESIGN.md
section 5, layer 3: the interpreter is the oracle of every fast path).

* ``well_typed_modules()``: the whole language (let, if, match and ADTs, closures, refs,
  recursion through globals, operators as values): compiled and interpreted values agree.
* ``programs()``: operator-heavy programs over every registered operator with valid
  attributes and random arguments: fused groups, generated elementwise kernels and the CPU
  kernels agree with the NumPy references; a program the interpreter rejects at run time
  (an integer division by zero, an out-of-range index) fails compiled too (without the
  optimisation passes, which may drop a failing binding nothing uses), as a
  ``RelayRuntimeError`` at the same place.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.testing.check import values_equal
from relay_ref.testing.programs import arguments, programs
from relay_ref.testing.typed_strategies import well_typed_modules

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    max_examples=40)


@SETTINGS
@given(well_typed_modules())
def test_compiled_equals_interpreted_on_well_typed_programs(case) -> None:
    mod, _ = case
    typed = rr.infer_types(mod)
    expected = rr.evaluate(typed)
    got = rr.compile(typed)()
    assert values_equal(got, expected, rtol=1e-4, atol=1e-5), rr.astext(mod)


@SETTINGS
@given(programs(), st.data())
def test_compiled_equals_interpreted_on_operator_programs(mod, data) -> None:
    typed = rr.infer_types(mod)
    main = typed.global_types["main"]
    args = data.draw(arguments(main.arg_types))
    try:
        expected = rr.evaluate(typed, *args)
    except rr.RelayRuntimeError as failure:
        # Compiled without passes, the same failure at the same place. (With them, dead
        # code elimination may drop an unused failing binding, as TVM's does: a refinement.)
        try:
            rr.compile(typed, passes=())(*args)
        except rr.RelayRuntimeError as err:
            assert err.diagnostics[0].span == failure.diagnostics[0].span
            return
        raise AssertionError("the interpreter failed, compiled code did not:\n"
                             + rr.astext(mod)) from None
    got = rr.compile(typed)(*args)
    assert values_equal(got, expected, rtol=1e-4, atol=1e-5), rr.astext(mod)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=25)
@given(programs(), st.data())
def test_fused_kernels_on_small_tensors_equal_the_interpreter(mod, data) -> None:
    """The same with every fusable group run as a generated numba kernel (generated
    programs use small tensors, under ``MIN_FUSED_ELEMENTS``), so fused and anchor+fused
    groups and the memory plan meet the oracle too."""
    from relay_ref.executor import groups

    typed = rr.infer_types(mod)
    args = data.draw(arguments(typed.global_types["main"].arg_types))
    try:
        expected = rr.evaluate(typed, *args)
    except rr.RelayRuntimeError:
        return  # failures are the test above's
    saved, groups.MIN_FUSED_ELEMENTS = groups.MIN_FUSED_ELEMENTS, 1
    try:
        exe = rr.compile(typed)
    finally:
        groups.MIN_FUSED_ELEMENTS = saved
    assert values_equal(exe(*args), expected, rtol=1e-4, atol=1e-5), rr.astext(mod)
