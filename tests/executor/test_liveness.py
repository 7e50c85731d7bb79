"""Releases (``relay_ref.executor.liveness``, runtime.py's release contract): a released
value is read only as an argument of later ``run`` calls, never by plain Python code,
and never after its release. Checked with a handle-passing runtime, as a memory-budgeted
pool (DTR) would run: ``run`` hands back a handle for every value the program releases and
resolves handles only among its arguments, so any other read of one fails."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.executor.runtime import Instrumented, Recorder, Runtime, Site


class _Handle:
    __slots__ = ("released", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.released = False


class HandleRuntime(Runtime):
    """Hands out a ``_Handle`` for the values of the sites the program releases."""

    def __init__(self, released_sites: set[int]) -> None:
        self.released_sites = released_sites
        self.releases = 0

    @staticmethod
    def _resolve(value: Any) -> Any:
        if type(value) is _Handle:
            assert not value.released, "a released value was read again"
            return value.value
        return value

    def run(self, site: Site, args: list[Any], out: Any) -> Any:
        value = site.call([self._resolve(a) for a in args], self._resolve(out))
        return _Handle(value) if site.index in self.released_sites else value

    def release(self, site: Site, value: Any) -> None:
        assert type(value) is _Handle and not value.released
        value.released = True
        value.value = None
        self.releases += 1


def _run_with_handles(exe: Any, *args: Any) -> Any:
    released = {int(k) for k in re.findall(r"_release\(S(\d+),", exe.source)}
    runtime = HandleRuntime(released)
    exe.runtime = runtime
    return exe(*args), runtime


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6))


# 1b: a Primitive group that cannot be planned runs as a function; it may return its
# argument, which must then not have been released
UNPLANNABLE = """
def @main(%x: Tensor[(4), float32], %c: bool) -> Tensor[(4), float32] {
  %0 = exp(%x);
  %1 = fn (%a: Tensor[(4), float32], %b: bool, Primitive=1) -> Tensor[(4), float32] {
    if (%b) { %a } else { negative(%a) }
  };
  %2 = %1(%0, %c);
  negative(%2)
}"""


@pytest.mark.parametrize("cond", [True, False])
def test_a_value_read_by_an_unplannable_group_is_not_released(cond: bool) -> None:
    mod = rr.parse(UNPLANNABLE)
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    want = rr.evaluate(mod, x, np.bool_(cond))
    exe = rr.compile(mod)
    recorder = Recorder()
    exe.runtime = Instrumented(exe.runtime, recorder)
    assert _same(exe(x, np.bool_(cond)), want)
    for i, event in enumerate(recorder.events):
        if event[0] == "release":
            later = recorder.events[i + 1:]
            assert not any(id(a) == id(event[2]) for e in later if e[0] == "begin"
                           for a in e[2]), "released, then read"
    got, _ = _run_with_handles(rr.compile(mod), x, np.bool_(cond))
    assert _same(got, want)


# 1c: values read by plain Python (scalar fast paths, 0-d group parameters, a group's
# tuple) are not released
PLAIN_READERS = {
    "scalar_fast_path": """
def @main(%x: Tensor[(4), float32]) -> Tensor[(), float32] {
  %0 = sum(%x);
  %1 = add(%0, %0);
  %1
}""",
    "scalar_fast_path_then_kernel": """
def @main(%x: Tensor[(4), float32]) -> Tensor[(), float32] {
  %0 = sum(%x);
  %1 = multiply(%0, %0);
  %2 = exp(%0);
  add(%1, %2)
}""",
    "zero_d_group_parameter": """
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) -> Tensor[(4), float32] {
  %0 = sum(%x);
  %1 = exp(%y);
  multiply(%1, %0)
}""",
    "tuple_inside_a_group": """
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32])
    -> Tensor[(8, 8), float32] {
  %0 = nn.dense(%x, %w);
  %1 = nn.dense(%x, %w);
  concatenate((%0, %1))
}""",
    "kernel_readers_still_release": """
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32])
    -> Tensor[(4, 8), float32] {
  %0 = nn.dense(%x, %w);
  %1 = nn.dense(%0, %w);
  %2 = nn.dense(%1, %w);
  %3 = sum(%2);
  multiply(%2, %3)
}""",
}


def _args(mod: rr.IRModule) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal([int(d) for d in p.type_annotation.shape]) * 0.3)
            .astype(p.type_annotation.dtype) for p in mod.functions["main"].params]


@pytest.mark.parametrize("name", list(PLAIN_READERS))
def test_released_values_are_read_only_through_run(name: str) -> None:
    mod = rr.parse(PLAIN_READERS[name])
    args = _args(mod)
    want = rr.evaluate(mod, *args)
    exe = rr.compile(mod)
    got, runtime = _run_with_handles(exe, *args)
    assert _same(got, want)
    assert runtime.releases == exe.generated.releases
    if name == "kernel_readers_still_release":
        assert exe.generated.releases >= 2  # the dense chain's values
    if name == "zero_d_group_parameter":
        assert "_np.asarray(" in exe.source  # the path under test


def test_free_variables_of_each_nested_function_are_computed_once(monkeypatch: Any) -> None:
    """Liveness asks what each directly nested function captures, and building its
    closure asks again: one ``free_vars`` walk per function literal per generation (not
    one per enclosing function: O(n * depth) for deeply nested closures)."""
    from relay_ref.executor import codegen, liveness

    depth = 30
    body = "add(%a0, %a" + str(depth) + ")"
    for k in range(depth, 0, -1):
        body = f"fn (%a{k}: Tensor[(2), float32]) {{ {body} }}"
    call = "".join(f"(%x{k})" for k in range(1, depth + 1))
    params = ", ".join(f"%x{k}: Tensor[(2), float32]" for k in range(1, depth + 1))
    src = (f"def @main(%a0: Tensor[(2), float32], {params}) -> Tensor[(2), float32] {{\n"
           f"  let %f = {body};\n  %f{call}\n}}")
    mod = rr.parse(src)
    calls: list[Any] = []
    real = codegen.free_vars

    def counting(e: Any) -> Any:
        calls.append(e)
        return real(e)

    monkeypatch.setattr(codegen, "free_vars", counting)
    monkeypatch.setattr(liveness, "_free_vars", counting)
    args = [np.full(2, k, np.float32) for k in range(depth + 1)]
    exe = rr.compile(mod, passes=[])
    assert len(calls) == len({id(e) for e in calls}) == depth
    assert _same(exe(*args), rr.evaluate(mod, *args))
