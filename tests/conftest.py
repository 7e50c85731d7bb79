"""Test configuration: hypothesis profiles and the golden-program collector.

Golden programs live in ``tests/programs/**/*.relay``. Expectations are comments:

* ``// expect-error: <kind> at <line>:<col>`` -- ``kind`` is ``parse``, ``type`` or
  ``runtime``; the first diagnostic of the raised error must be at that location. More than
  one ``expect-error`` line means the error must carry diagnostics at all those locations.
* ``// expect-type: <type>`` -- the inferred type of ``@main`` (compared as parsed types).
* ``// expect: <value>`` -- the value of ``@main`` printed in Relay syntax (whitespace
  normalised). A type check runs first, as ``relay run`` does.
* no expectation -- the program must parse (and, in typecheck/ and eval/, type-check).

Every golden program also round-trips through the printer.

Pass golden programs (``tests/programs/passes/``): ``// pass: A, B`` names the passes to
run (in order, by registry name, on the type-checked module); the expected output is the
program in ``<name>.expected.relay`` beside it (alpha-equal after both are type-checked),
and both programs must give the same value for ``@main`` on deterministic arguments.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=60, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=200, deadline=None)
# HYPOTHESIS_PROFILE=thorough: 2000 examples per property (check_pass runs 2000 programs
# per pass instead of 200); relay_ref.testing.check registers the same profile for users.
settings.register_profile(
    "thorough", max_examples=2000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

PROGRAMS = Path(__file__).parent / "programs"
ROOT = Path(__file__).resolve().parent.parent
RELAY_ENV = {"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
# Passed on to every ``relay`` subprocess when set: numba's kernel cache (``--compile``).
RELAY_PASSED_ON = ("RELAY_REF_CACHE_DIR",)


def run_relay(*args: str | Path, cwd: Path | None = None, env: Mapping[str, str] | None = None,
              extra_env: Mapping[str, str] | None = None, prefix: Sequence[str] = (),
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m relay_ref ARGS`` as a user runs it: a fresh process with text output
    captured, in ``cwd`` (default: the checkout's root), with only ``env`` (default
    ``RELAY_ENV``: no colour, a PATH) plus ``extra_env``, ``PYTHONPATH`` naming this
    checkout (so the ``relay_ref`` under test runs whatever ``cwd`` is) and the variables of
    ``RELAY_PASSED_ON`` that are set; ``prefix`` runs it under another command (``setpriv``
    as another user). A Python traceback on stderr fails the test there and then: the CLI
    never shows one."""
    environment = {k: os.environ[k] for k in RELAY_PASSED_ON if k in os.environ}
    environment |= {"PYTHONPATH": str(ROOT), **(RELAY_ENV if env is None else env),
                    **(extra_env or {})}
    result = subprocess.run([*prefix, sys.executable, "-m", "relay_ref", *map(str, args)],
                            capture_output=True, text=True, cwd=cwd or ROOT, timeout=timeout,
                            env=environment)
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture(scope="session")
def relay() -> Callable[..., subprocess.CompletedProcess[str]]:
    """The ``relay`` command in a subprocess (``run_relay``): the one helper every CLI test
    file uses."""
    return run_relay
_EXPECT = re.compile(r"//\s*expect(-error|-type)?:\s*(.*?)\s*$")
_ERROR = re.compile(r"(parse|type|runtime)\s+at\s+(\d+):(\d+)")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class GoldenFile(pytest.File):
    def collect(self):
        yield GoldenItem.from_parent(self, name=self.path.stem)


class GoldenItem(pytest.Item):
    def runtest(self) -> None:
        import relay_ref as rr

        text = self.path.read_text()
        errors, types, values = [], [], []
        for line in text.splitlines():
            m = _EXPECT.search(line)
            if not m:
                continue
            kind, payload = m.group(1), m.group(2)
            if kind == "-error":
                em = _ERROR.fullmatch(payload)
                assert em, f"bad expect-error line: {line!r}"
                errors.append((em.group(1), int(em.group(2)), int(em.group(3))))
            elif kind == "-type":
                types.append(payload)
            else:
                values.append(payload)
        name = str(self.path)
        phases = {"parse": rr.ParseError, "type": rr.RelayTypeError,
                  "runtime": rr.RelayRuntimeError}
        if errors:
            kinds = {k for k, _, _ in errors}
            assert len(kinds) == 1, "one error kind per golden file"
            kind = kinds.pop()
            with pytest.raises(phases[kind]) as info:
                mod = rr.parse(text, name)
                if kind != "parse":
                    mod = rr.infer_types(mod)
                if kind == "runtime":
                    rr.evaluate(mod)
            found = [(d.span.line, d.span.column) for d in info.value.diagnostics if d.span]
            want = [(line, col) for _, line, col in errors]
            assert found[: len(want)] == want or set(want) <= set(found), (
                f"expected {kind} error at {want}, got diagnostics at {found}:\n"
                f"{info.value.render()}")
            return
        mod = rr.parse(text, name)
        again = rr.parse(rr.astext(mod), name + " (printed)")
        assert rr.alpha_equal(mod, again), "round trip through the printer changed the program"
        needs_types = bool(types or values) or self.path.parent.name != "syntax"
        if needs_types:
            mod = rr.infer_types(mod)
        for want in types:
            from relay_ref.prelude import prelude_fallback
            from relay_ref.syntax.parser import parse_type

            got = mod.global_types["main"]
            assert rr.alpha_equal(got, parse_type(want, fallback=prelude_fallback())), (
                f"@main has type {rr.astext(got)}, expected {want}")
        for want in values:
            from relay_ref.interpreter.values import value_to_text

            got = value_to_text(rr.evaluate(mod))
            assert _norm(got) == _norm(want), f"@main evaluated to {got}, expected {want}"
        passes = [m.group(1) for m in map(_PASS.search, text.splitlines()) if m]
        if passes:
            _check_pass_golden(self.path, mod, passes[0])

    def repr_failure(self, excinfo, style=None):
        import relay_ref as rr

        if isinstance(excinfo.value, rr.RelayError):
            return f"{self.path}: unexpected {type(excinfo.value).__name__}:\n" \
                   f"{excinfo.value.render()}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, 0, f"golden: {self.path.relative_to(PROGRAMS)}"


_PASS = re.compile(r"^//\s*pass:\s*(.*?)\s*$")


def _check_pass_golden(path: Path, mod, names: str) -> None:
    """Run the named passes; compare with ``<stem>.expected.relay`` (see the docstring)."""
    import numpy as np

    import relay_ref as rr
    from relay_ref.interpreter.values import value_to_text
    from relay_ref.ir.types import TensorType
    from relay_ref.passes import get_pass

    expected_path = path.with_name(path.stem + ".expected.relay")
    assert expected_path.exists(), f"missing {expected_path.name}"
    out = mod
    for name in (n.strip() for n in names.split(",") if n.strip()):
        out = get_pass(name)(out)
    got = rr.infer_types(out)
    want = rr.infer_types(rr.parse(expected_path.read_text(), str(expected_path)))
    assert rr.alpha_equal(got, want), (
        f"{names} gave:\n{rr.astext(got)}\nexpected ({expected_path.name}):\n"
        f"{rr.astext(want)}")
    rng = np.random.default_rng(0)
    args = []
    for p in mod["main"].params:
        ty = mod.checked_types.get(p) or p.type_annotation
        assert isinstance(ty, TensorType), "pass goldens take tensor parameters only"
        args.append(rng.uniform(-2, 2, ty.shape).astype(ty.dtype))
    before, after = rr.evaluate(mod, *args), rr.evaluate(got, *args)
    _assert_close(before, after, f"{names} changed the value: {value_to_text(before)} -> "
                                 f"{value_to_text(after)}")


def _assert_close(a, b, message: str) -> None:
    """Values equal up to float tolerance (tensors), structurally otherwise."""
    import numpy as np

    from relay_ref.interpreter.values import value_to_text

    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype, message
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=message)
    elif isinstance(a, tuple) and isinstance(b, tuple):
        assert len(a) == len(b), message
        for x, y in zip(a, b, strict=True):
            _assert_close(x, y, message)
    else:
        assert _norm(value_to_text(a)) == _norm(value_to_text(b)), message


def pytest_collect_file(parent, file_path: Path):
    if file_path.suffix == ".relay" and PROGRAMS in file_path.parents:
        return GoldenFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture
def broken_pass():
    """The name of a registered pass that swaps the operands of ``subtract`` (wrong on
    purpose, for the tests of ``check_pass`` and ``relay opt --check``); unregistered after
    the test."""
    from relay_ref.ir.expr import Call, Op
    from relay_ref.passes import Pass, register_pass, unregister_pass
    from relay_ref.passes.rewrite import map_functions, rewrite

    @register_pass
    class SwapSubtract(Pass):
        """Swaps the operands of subtract (wrong on purpose)."""

        name = "TestSwapSubtract"
        opt_level = 0

        def __call__(self, mod):
            def rule(node):
                if isinstance(node, Call) and node.op == Op("subtract"):
                    return Call(node.op, node.args[::-1], node.attrs)
                return None
            return map_functions(mod, lambda _, f: rewrite(f, rule))

    yield SwapSubtract.name
    unregister_pass(SwapSubtract.name)
