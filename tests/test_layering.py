"""The import graph follows DESIGN.md section 2: dependencies flow one way, lowest first.

Every ``.py`` under ``relay_ref/`` and ``kernel/relay_kernel/`` is parsed with ``ast`` and
every import in it is collected (module level, function-local and ``TYPE_CHECKING`` ones
alike; relative imports resolved). Each module and each imported ``relay_ref`` /
``relay_kernel`` module is mapped to a layer by the longest matching prefix in ``LAYERS``,
and an import is allowed when ``may_import`` says so. A module that maps to no layer is
itself a failure: a new top-level module must be placed in the table.

Invariant checked: the set of offending imports is empty; each offence is reported as
``module -> imported (layer A may not import layer B)``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"relay_ref": ROOT / "relay_ref", "relay_kernel": ROOT / "kernel" / "relay_kernel"}


@dataclass(frozen=True, slots=True)
class Layer:
    """``rank``: a layer may import any layer of lower or equal rank, unless ``only`` is
    given, in which case it may import exactly the layers named there (and itself)."""

    rank: int
    prefixes: tuple[str, ...]
    only: frozenset[str] | None = None


# Lowest first, as DESIGN.md section 2 lists them. Departures and decisions are commented.
LAYERS: dict[str, Layer] = {
    "diagnostics": Layer(0, ("relay_ref.diagnostics",)),  # imports ir.span: same rank
    "ir": Layer(0, ("relay_ref.ir",)),
    "compute": Layer(0, ("relay_ref.compute",)),  # numba kernels: cpu/ (prange + fastmath)
    # ... and cuda/ (numba.cuda), beside cpu/ at the bottom: it reuses cpu's kernel source
    # cache and threading policy, and reads op attributes without importing ops
    "compute.cuda": Layer(0, ("relay_ref.compute.cuda",)),
    # deepstack (big-stack threads for deep recursion) is a utility with no relay_ref
    # imports; the printer, the checker, the interpreter and the kernel (via repl) use it,
    # so it sits at the bottom.
    "deepstack": Layer(0, ("relay_ref.deepstack",)),
    # suggest (the one "did you mean" helper, difflib) imports nothing of relay_ref: the
    # parser, the passes and rules use it; the CLI and the kernel through repl's re-exports.
    "suggest": Layer(0, ("relay_ref.suggest",)),
    # rules (the rules of spec/ by name) reads markdown and imports only suggest: every
    # layer below the API may cite through it; the CLI (relay rule) and the kernel
    # (:rule, rule links) reach it through repl's re-exports, as DESIGN.md section 2 says.
    "rules": Layer(0, ("relay_ref.rules",)),
    "ops": Layer(1, ("relay_ref.ops",)),
    "syntax": Layer(2, ("relay_ref.syntax",)),
    # Prelude above syntax: it parses prelude.relay and hands the parser a fallback; the
    # parser does not know the prelude.
    "prelude": Layer(3, ("relay_ref.prelude",)),
    # DESIGN puts typecheck and interpreter in one layer. The interpreter checks what it
    # runs (and interpreter/args.py unifies argument types), the checker never runs code:
    # typecheck is ranked just below the interpreter so that stays one-way.
    "typecheck": Layer(4, ("relay_ref.typecheck",)),
    "interpreter": Layer(5, ("relay_ref.interpreter",)),
    "passes": Layer(6, ("relay_ref.passes",)),  # FoldConstant may use the interpreter
    "executor": Layer(7, ("relay_ref.executor",)),  # plans from the passes' output
    # The ONNX converter needs only ops and ir (and diagnostics for its errors) ...
    "frontend": Layer(8, ("relay_ref.frontend",),
                      only=frozenset({"ops", "ir", "diagnostics"})),
    # ... while its onnx.backend.base.Backend runs the executor (and the conformance sweep
    # of ONNX's node tests runs the backend).
    "frontend.backend": Layer(8, ("relay_ref.frontend.onnx.backend",
                                  "relay_ref.frontend.onnx.conformance")),
    # Generators and check_pass call the interpreter and the executor's implementation.
    "testing": Layer(8, ("relay_ref.testing",)),
    "api": Layer(9, ("relay_ref.__init__",)),  # relay_ref/__init__.py itself
    "repl": Layer(9, ("relay_ref.repl",)),  # beside the public API (what a REPL needs)
    # The CLI (relay_ref/cli.py, cli_run.py, cli_opt.py, cli_import.py, cli_weights.py,
    # cli_rule.py, cli_derive.py, cli_outputs.py, cli_ops.py, __main__.py) and the Jupyter
    # kernel use only the public API and repl.
    "cli": Layer(10, ("relay_ref.cli", "relay_ref.cli_run", "relay_ref.cli_opt",
                      "relay_ref.cli_import", "relay_ref.cli_weights", "relay_ref.cli_rule",
                      "relay_ref.cli_derive", "relay_ref.cli_outputs", "relay_ref.cli_ops",
                      "relay_ref.__main__"),
                 only=frozenset({"api", "repl"})),
    "kernel": Layer(10, ("relay_kernel",), only=frozenset({"api", "repl"})),
}


def layer_of(module: str) -> str | None:
    """The layer whose longest prefix matches ``module`` (a prefix matches the module
    itself, its submodules, and -- for the last dotted part -- names starting with it:
    ``relay_ref.frontend.onnx.backend`` matches ``...onnx.backend_rep``)."""
    if module == "relay_ref":
        module = "relay_ref.__init__"
    best: tuple[int, str] | None = None
    for name, layer in LAYERS.items():
        for prefix in layer.prefixes:
            last = prefix.rsplit(".", 1)[-1]
            hit = module == prefix or module.startswith(prefix + ".") or (
                last == "backend" and module.startswith(prefix))
            if hit and (best is None or len(prefix) > best[0]):
                best = (len(prefix), name)
    return None if best is None else best[1]


def may_import(a: str, b: str) -> bool:
    """Whether layer ``a`` may import layer ``b``."""
    if a == b:
        return True
    la, lb = LAYERS[a], LAYERS[b]
    if la.only is not None:
        return b in la.only
    return lb.rank <= la.rank


def _module_name(package: str, root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def _is_module(name: str) -> bool:
    """Whether ``name`` (dotted, in one of PACKAGES) is a module or package on disk."""
    package, *rest = name.split(".")
    base = PACKAGES.get(package)
    if base is None:
        return False
    path = base.joinpath(*rest)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports_of(module: str, source: str, is_package: bool) -> list[tuple[str, int]]:
    """Every ``(imported module, line)`` in ``source``, inside functions included.
    ``from P import n`` imports ``P.n`` when that is a module, else ``P``."""
    out: list[tuple[str, int]] = []
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.append((sub if _is_module(sub) else target, node.lineno))
    # One entry per (module, line): `from m import a, b` is one import of m.
    return list(dict.fromkeys((m, line) for m, line in out if m.split(".")[0] in PACKAGES))


def all_imports() -> list[tuple[str, str, str]]:
    """``(module, imported, "path:line")`` for every in-project import."""
    found = []
    for package, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            module = _module_name(package, root, path)
            for imported, line in imports_of(module, path.read_text(encoding="utf-8"),
                                             path.name == "__init__.py"):
                found.append((module, imported, f"{path.relative_to(ROOT)}:{line}"))
    return found


def violations(edges: list[tuple[str, str, str]]) -> list[str]:
    """One line per import that breaks the table (or whose module has no layer)."""
    bad = []
    for module, imported, where in edges:
        a, b = layer_of(module), layer_of(imported)
        if a is None or b is None:
            missing = module if a is None else imported
            bad.append(f"{where}: {module} -> {imported} ({missing} is in no layer)")
        elif not may_import(a, b):
            bad.append(f"{where}: {module} -> {imported} "
                       f"(layer {a} may not import layer {b})")
    return bad


def test_imports_follow_the_layers() -> None:
    edges = all_imports()
    assert len(edges) > 100  # the scan did find the package's imports
    bad = violations(edges)
    assert not bad, "imports against DESIGN.md section 2:\n" + "\n".join(bad)


def test_checker_catches_violations() -> None:
    """The checker itself: each of these edges must be refused, each of the good ones
    allowed, so an empty result above means something."""
    refused = [
        ("relay_ref.syntax.parser", "relay_ref.prelude"),  # the old cycle
        ("relay_ref.interpreter.run", "relay_ref"),  # the interpreter on the public API
        ("relay_ref.interpreter.eval", "relay_ref.testing.soundness"),
        ("relay_ref.typecheck.infer", "relay_ref.interpreter.eval"),
        ("relay_ref.ir.expr", "relay_ref.ops.registry"),
        ("relay_ref.frontend.onnx", "relay_ref.interpreter.eval"),  # converter: ops+ir only
        ("relay_ref.frontend.onnx", "relay_ref.executor"),
        ("relay_ref.executor.plan", "relay_ref.frontend.onnx"),
        ("relay_ref.cli", "relay_ref.ir.type_text"),  # cli: public API and repl only
        ("relay_kernel.session", "relay_ref.syntax.parser"),
        ("relay_ref.cli_rule", "relay_ref.rules"),  # the rules through repl's re-exports
        ("relay_ref.cli_ops", "relay_ref.ops.registry"),  # the ops through repl too
        ("relay_kernel.commands", "relay_ref.suggest"),  # "did you mean" through repl
        ("relay_kernel.commands", "relay_ref.rules"),
        ("relay_ref.repl", "relay_ref.cli"),
        ("relay_ref.oddity", "relay_ref.ir"),  # in no layer
    ]
    allowed = [
        ("relay_ref.prelude", "relay_ref.syntax.parser"),
        ("relay_ref.interpreter.eval", "relay_ref.prelude"),
        ("relay_ref.interpreter.args", "relay_ref.typecheck.unify"),
        ("relay_ref.syntax.printer", "relay_ref.deepstack"),
        ("relay_ref.frontend.onnx", "relay_ref.ops.registry"),
        ("relay_ref.frontend.onnx.backend", "relay_ref.executor"),
        ("relay_ref.testing.check", "relay_ref.executor.plan"),
        ("relay_ref.repl", "relay_ref.interpreter.trace"),
        ("relay_ref.repl", "relay_ref.rules"),
        ("relay_ref.typecheck.derive", "relay_ref.rules"),
        ("relay_ref.syntax.parser", "relay_ref.suggest"),
        ("relay_ref.rules", "relay_ref.suggest"),
        ("relay_ref.cli_run", "relay_ref.repl"),
        ("relay_kernel.session", "relay_ref"),
        ("relay_kernel.session", "relay_kernel.editor"),
    ]
    bad = violations([(a, b, "x.py:1") for a, b in refused + allowed])
    assert len(bad) == len(refused)
    for (a, b), line in zip(refused, bad, strict=True):
        assert line.startswith(f"x.py:1: {a} -> {b} ("), line
    assert bad[0].endswith("(layer syntax may not import layer prelude)")


def test_import_scan_sees_local_and_relative_imports() -> None:
    source = ("import relay_ref as rr\n"
              "from . import values\n"
              "from ..syntax.parser import parse\n"
              "def f():\n"
              "    from relay_ref import prelude, astext\n"
              "    import numpy\n")
    found = imports_of("relay_ref.interpreter.eval", source, is_package=False)
    assert found == [("relay_ref", 1), ("relay_ref.interpreter.values", 2),
                     ("relay_ref.syntax.parser", 3), ("relay_ref.prelude", 5),
                     ("relay_ref", 5)]
