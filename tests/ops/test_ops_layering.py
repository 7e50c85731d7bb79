"""Layering inside ``relay_ref/ops``: a family module uses only the public names of another
(shared helpers live in ``layout.py``, ``relations.py`` or are public in their family)."""

from __future__ import annotations

import ast
from pathlib import Path

import relay_ref.ops

OPS_DIR = Path(relay_ref.ops.__file__).parent
MODULES = sorted(p.stem for p in OPS_DIR.glob("*.py") if p.stem != "__init__")


def private_uses(path: Path) -> list[str]:
    """``from relay_ref.ops.m import _x`` and ``m._x`` for an imported op module ``m``."""
    tree = ast.parse(path.read_text())
    aliases: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "relay_ref.ops":
                aliases |= {a.asname or a.name for a in node.names if a.name in MODULES}
            elif node.module.startswith("relay_ref.ops."):
                found += [f"{node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and a.name != "__future__"]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr.startswith("_")):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_no_op_module_uses_another_modules_private_names() -> None:
    bad = {m: private_uses(OPS_DIR / f"{m}.py") for m in MODULES}
    assert not {m: v for m, v in bad.items() if v}


def test_the_checker_sees_private_imports(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("from relay_ref.ops.nn import _x\nfrom relay_ref.ops import nn\nnn._y\n")
    assert private_uses(src) == ["relay_ref.ops.nn._x", "nn._y"]


def ops_imports(path: Path) -> set[str]:
    """The ``relay_ref.ops`` modules (``""`` for the package itself) that ``path`` imports,
    anywhere in it (function-local imports included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.removeprefix("relay_ref.ops").lstrip(".") for a in node.names
                    if a.name == "relay_ref.ops" or a.name.startswith("relay_ref.ops.")}
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "relay_ref.ops":
                out |= {a.name if a.name in MODULES else "" for a in node.names}
            elif node.module.startswith("relay_ref.ops."):
                out.add(node.module.removeprefix("relay_ref.ops.").split(".")[0])
    return out


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next((w for w in edges if w in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in graph[node]:
                    out.append(sorted(comp))
    return out


def test_no_import_cycle_inside_ops() -> None:
    graph = {m: ops_imports(OPS_DIR / f"{m}.py") for m in MODULES}
    graph[""] = ops_imports(OPS_DIR / "__init__.py")
    assert import_cycles(graph) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert import_cycles({"": {"registry"}, "registry": {""}, "nn": {"registry"}}) == [
        ["", "registry"]]
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
