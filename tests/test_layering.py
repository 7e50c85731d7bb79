"""The import graph follows DESIGN.md section 2: dependencies flow one way, lowest first, no
two modules import each other (directly or round a circle), and no module imports another's
private names.

Every ``.py`` under ``relay_ref/`` and ``kernel/relay_kernel/`` is parsed with ``ast`` and
every import in it is collected (module level, function-local and ``TYPE_CHECKING`` ones
alike; relative imports resolved). Three checks run on what is found:

1. **Layers.** Each module and each imported ``relay_ref`` / ``relay_kernel`` module is mapped
   to a layer by the longest matching prefix in ``LAYERS``, and an import is allowed when
   ``may_import`` says so. A module that maps to no layer is itself a failure: a new
   top-level module must be placed in the table.
2. **No cycles.** The module import graph (one node per module, one edge per import) has no
   strongly connected component of more than one module. An edge goes to *the module the
   import names*: ``from relay_ref.ops import nn`` and ``import relay_ref.ops.nn`` are edges
   to ``relay_ref.ops.nn``, not to ``relay_ref.ops`` -- although Python runs
   ``relay_ref/ops/__init__.py`` first, a package's ``__init__`` is a module like any other
   and counts only where it is itself named (``from relay_ref.ops import register_op``, a
   name defined in the ``__init__``, is an edge to ``relay_ref.ops``). A module importing
   itself is no cycle.
3. **No private imports.** The rule: *a name starting with ``_`` may not be imported from
   another module* (``from m import _helper``; dunders such as ``__version__`` are public),
   and *a module whose own name starts with ``_`` may be imported only from within its
   package* (``relay_ref.cli._common`` from ``relay_ref.cli.*``); what such a module
   exports without a ``_`` is public to its package. Imports are checked, not attribute
   access (``module._name``).

Invariant checked: the three sets of offences are empty; each offence is reported on one
line naming the file and line, and each cycle as the modules in it followed by every import
between two of them (``path:line: a -> b``), so the edge to cut can be chosen.
``test_checker_*`` feed the checkers small synthetic inputs, so an empty result means
something.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
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
    # trampoline (generator-driven recursion without Python recursion) imports nothing of
    # relay_ref: the parser, the printer and the checker's walks run on it.
    "trampoline": Layer(0, ("relay_ref.trampoline",)),
    # suggest (the one "did you mean" helper, difflib) imports nothing of relay_ref: the
    # parser, the passes and rules use it; the CLI and the kernel through repl's re-exports.
    "suggest": Layer(0, ("relay_ref.suggest",)),
    # rules (the rules of spec/ by name) reads markdown and imports only suggest: every
    # layer below the API may cite through it; the CLI (relay rule) and the kernel
    # (:rule, rule links) reach it through repl's re-exports, as DESIGN.md section 2 says.
    "rules": Layer(0, ("relay_ref.rules",)),
    "ops": Layer(1, ("relay_ref.ops",)),
    # The DTR engine, heuristics, log format and simulator (relay_ref.dtr) import only the
    # bottom layer (diagnostics, ir.span, suggest, rules); its executor runtime
    # (relay_ref.dtr.runtime) sits with the executor, whose compile entry point reaches it.
    "dtr": Layer(1, ("relay_ref.dtr",)),
    "dtr.runtime": Layer(7, ("relay_ref.dtr.runtime",)),
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
                      only=frozenset({"ops", "ir", "diagnostics", "frontend.export"})),
    # The exporter (Relay -> ONNX, to_onnx) type-checks a module it is given without types,
    # and checks params by the interpreter's argument rule (as BindParams does).
    "frontend.export": Layer(8, ("relay_ref.frontend.onnx.export",
                                 "relay_ref.frontend.onnx.export_graph",
                                 "relay_ref.frontend.onnx.export_ops"),
                             only=frozenset({"ops", "ir", "diagnostics", "typecheck",
                                             "interpreter"})),
    # ... while its onnx.backend.base.Backend runs the executor (and the conformance sweep
    # of ONNX's node tests runs the backend).
    "frontend.backend": Layer(8, ("relay_ref.frontend.onnx.backend",
                                  "relay_ref.frontend.onnx.conformance")),
    # Generators and check_pass call the interpreter and the executor's implementation.
    "testing": Layer(8, ("relay_ref.testing",)),
    # BYOC (relay_ref.byoc): backends fill the passes' support table and hand regions to
    # the executor as codegens; above both (the executor never imports it), below the API.
    "byoc": Layer(8, ("relay_ref.byoc",)),
    "api": Layer(9, ("relay_ref.__init__",)),  # relay_ref/__init__.py itself
    "repl": Layer(9, ("relay_ref.repl",)),  # beside the public API (what a REPL needs)
    # The CLI (the relay_ref/cli/ package: one module per subcommand; and __main__.py) and
    # the Jupyter kernel use only the public API and repl.
    "cli": Layer(10, ("relay_ref.cli", "relay_ref.__main__"),
                 only=frozenset({"api", "repl", "dtr"})),  # dtr: relay dtr sweep's simulator
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


def _from_target(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The module ``from ... import`` reads from, relative imports resolved."""
    if not node.level:
        return node.module or ""
    here = module.split(".") if is_package else module.split(".")[:-1]
    base = here[:len(here) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, source: str, is_package: bool) -> list[tuple[str, int]]:
    """Every ``(imported module, line)`` in ``source``, inside functions included.
    ``from P import n`` imports ``P.n`` when that is a module, else ``P``."""
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(module, node, is_package)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.append((sub if _is_module(sub) else target, node.lineno))
    # One entry per (module, line): `from m import a, b` is one import of m.
    return list(dict.fromkeys((m, line) for m, line in out if m.split(".")[0] in PACKAGES))


def _sources() -> list[tuple[str, str, bool, str]]:
    """``(module, source, is_package, path)`` for every module of PACKAGES."""
    out = []
    for package, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            out.append((_module_name(package, root, path), path.read_text(encoding="utf-8"),
                        path.name == "__init__.py", str(path.relative_to(ROOT))))
    return out


def all_imports() -> list[tuple[str, str, str]]:
    """``(module, imported, "path:line")`` for every in-project import."""
    found = []
    for module, source, is_package, path in _sources():
        for imported, line in imports_of(module, source, is_package):
            found.append((module, imported, f"{path}:{line}"))
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(module: str, source: str, is_package: bool,
                    is_module: Callable[[str], bool] = _is_module) -> list[tuple[str, int]]:
    """``(what, line)`` for each import in ``source`` (of a PACKAGES module) against the
    private-name rule of the module docstring: ``what`` names the offence."""
    bad: list[tuple[str, int]] = []

    def private_module(name: str, line: int) -> None:
        parts = name.split(".")
        for i in range(1, len(parts)):
            owner = ".".join(parts[:i])  # the package the private module belongs to
            if _is_private(parts[i]) and not (module == owner
                                              or module.startswith(owner + ".")):
                bad.append((f"private module {'.'.join(parts[:i + 1])} imported from "
                            f"outside {owner}", line))
                return

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    private_module(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(module, node, is_package)
            if target.split(".")[0] not in PACKAGES:
                continue
            private_module(target, node.lineno)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if is_module(sub):
                    private_module(sub, node.lineno)
                elif _is_private(alias.name) and target != module:
                    bad.append((f"private name {alias.name} imported from {target}",
                                node.lineno))
    return bad


def all_private_imports() -> list[str]:
    """One line per private import in PACKAGES: ``path:line: module: what``."""
    return [f"{path}:{line}: {module}: {what}"
            for module, source, is_package, path in _sources()
            for what, line in private_imports(module, source, is_package)]


def cycles(edges: list[tuple[str, str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module in the graph of
    ``(module, imported, where)`` edges (self-imports ignored), each sorted, largest first.
    Tarjan's algorithm with an explicit stack (no recursion)."""
    graph: dict[str, list[str]] = {}
    for a, b, _ in edges:
        graph.setdefault(a, [])
        graph.setdefault(b, [])
        if a != b and b not in graph[a]:
            graph[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(graph[node]):
                work.append((node, i + 1))
                nxt = graph[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:  # back in the caller: propagate the low link
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def cycle_report(edges: list[tuple[str, str, str]]) -> list[str]:
    """Each cycle as its modules, then every import between two of its members."""
    out = []
    for component in cycles(edges):
        members = set(component)
        out.append(f"cycle of {len(component)} modules: {', '.join(component)}")
        out.extend(f"    {where}: {a} -> {b}" for a, b, where in edges
                   if a in members and b in members and a != b)
    return out


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
        ("relay_ref.cli.rule", "relay_ref.rules"),  # the rules through repl's re-exports
        ("relay_ref.cli.ops", "relay_ref.ops.registry"),  # the ops through repl too
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
        ("relay_ref.cli.run", "relay_ref.repl"),
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


def test_no_import_cycles() -> None:
    report = cycle_report(all_imports())
    assert not report, "import cycles (DESIGN.md section 2):\n" + "\n".join(report)


def test_no_private_imports() -> None:
    bad = all_private_imports()
    assert not bad, "imports of another module's private names:\n" + "\n".join(bad)


def test_checker_finds_cycles() -> None:
    """A two-module cycle and a three-module circle are found (once each, with the
    imports that make them); a DAG, a self-import and a diamond are not cycles."""
    edges = [("p.a", "p.b", "a.py:1"), ("p.b", "p.a", "b.py:2"),  # a <-> b
             ("p.c", "p.d", "c.py:1"), ("p.d", "p.e", "d.py:1"), ("p.e", "p.c", "e.py:3"),
             ("p.e", "p.f", "e.py:4"), ("p.f", "p.f", "f.py:1")]
    assert cycles(edges) == [["p.c", "p.d", "p.e"], ["p.a", "p.b"]]
    report = cycle_report(edges)
    assert report[0] == "cycle of 3 modules: p.c, p.d, p.e"
    assert "    e.py:3: p.e -> p.c" in report and "    b.py:2: p.b -> p.a" in report
    assert not any("p.f" in line for line in report)
    clean = [("p.a", "p.b", "x:1"), ("p.a", "p.c", "x:2"), ("p.b", "p.d", "x:3"),
             ("p.c", "p.d", "x:4"), ("p.d", "p.d", "x:5")]
    assert cycles(clean) == [] and cycle_report(clean) == []
    # a long chain (no recursion limit in the checker itself)
    chain = [(f"p.m{i}", f"p.m{i + 1}", "x:1") for i in range(5000)]
    assert cycles(chain) == []
    assert cycles([*chain, ("p.m5000", "p.m0", "x:2")]) == [sorted(f"p.m{i}"
                                                                   for i in range(5001))]


def test_checker_finds_private_imports() -> None:
    """Private names and private modules imported from outside are reported; dunders,
    public names, a package's own private module and foreign packages are not."""
    modules = {"relay_ref.cli._common", "relay_ref.syntax._walk", "relay_ref.syntax.parser"}
    source = ("from relay_ref.cli import _Usage, main\n"
              "from relay_ref.syntax._walk import walk\n"
              "def f():\n"
              "    from relay_ref.cli._common import read\n"
              "    from relay_ref import __version__\n"
              "    from ..syntax.parser import _prescan\n"
              "    from os import _exit\n"
              "    import relay_ref.syntax._walk\n")
    found = private_imports("relay_ref.passes.x", source, False, modules.__contains__)
    assert found == [
        ("private name _Usage imported from relay_ref.cli", 1),
        ("private module relay_ref.syntax._walk imported from outside relay_ref.syntax", 2),
        ("private module relay_ref.cli._common imported from outside relay_ref.cli", 4),
        ("private name _prescan imported from relay_ref.syntax.parser", 6),
        ("private module relay_ref.syntax._walk imported from outside relay_ref.syntax", 8),
    ], found
    inside = ("from relay_ref.cli._common import read, EXIT_OK\n"
              "from . import _common\n"
              "from relay_ref.syntax import prescan\n")
    assert private_imports("relay_ref.cli.run", inside, False, modules.__contains__) == []
