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
