"""The API reference: pdoc over the public API's docstrings, built by the test suite.

``build_reference(out)`` renders the modules in ``MODULES`` (the public names of DESIGN.md
section 3: ``relay_ref``'s ``__all__``, ``relay_ref.testing`` for ``check_pass``,
``relay_ref.frontend.onnx`` for ``from_onnx``) to HTML with pdoc's Python API. The test builds
it into a temporary directory and fails on any pdoc warning (an annotation it cannot
resolve, a name in ``__all__`` that does not resolve, a docstring it cannot render) or on a
public name missing from the pages, so the reference cannot rot. Nothing is committed:

    python tests/test_docs.py build/api      # then open build/api/index.html

Two things pdoc does not do by itself, done here:

* ``relay_ref`` and ``relay_ref.testing`` import some public names on first use (a module
  ``__getattr__``: ``rr.ConstructorValue``, ``check_pass``); pdoc reads a module's
  ``__dict__`` and would report them as unresolvable, so ``_resolve_lazy_names`` looks each
  one up first, as a user's ``rr.ConstructorValue`` does.
* ``relay_ref.testing.programs`` is both a submodule (the generator) and a public function
  of ``relay_ref.testing``; the package attribute is always the function (the package
  binds it in place of the submodule). The submodule's page is left out
  (``!relay_ref.testing.programs``); ``test_public_names_are_not_modules`` checks that no
  name of ``__all__`` resolves to a module.
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from pathlib import Path

import pytest

pdoc = pytest.importorskip("pdoc", reason="pdoc is a dev dependency (pip install -e '.[dev]')")

MODULES = ("relay_ref", "relay_ref.testing", "relay_ref.frontend.onnx")
EXCLUDED = ("!relay_ref.testing.programs",)


def _resolve_lazy_names(module: types.ModuleType) -> None:
    """Put each name of ``module.__all__`` that ``module.__getattr__`` supplies into the
    module's namespace, where pdoc looks for it."""
    for name in module.__all__:
        if name not in vars(module):
            setattr(module, name, getattr(module, name))


def build_reference(out: Path) -> list[str]:
    """Render ``MODULES`` into ``out``; returns pdoc's warnings (messages)."""
    import pdoc.render

    for name in MODULES:
        _resolve_lazy_names(importlib.import_module(name))
    pdoc.render.configure(docformat="restructuredtext", search=True, show_source=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*MODULES, *EXCLUDED, output_directory=out)
    return [str(w.message) for w in caught]


def _page(out: Path, module: str) -> Path:
    return out.joinpath(*module.split(".")).with_suffix(".html")


def _documented(module: str) -> list[str]:
    """The names of ``module.__all__`` that should have a section on its page."""
    mod = importlib.import_module(module)
    return [n for n in mod.__all__ if not isinstance(getattr(mod, n), types.ModuleType)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    out = tmp_path_factory.mktemp("api")
    return out, build_reference(out)


def test_reference_builds_without_warnings(reference: tuple[Path, list[str]]) -> None:
    out, problems = reference
    assert problems == [], "pdoc warned:\n" + "\n".join(problems)
    assert (out / "index.html").is_file()
    for module in MODULES:
        assert _page(out, module).is_file(), f"no page for {module}"


@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_is_documented(reference: tuple[Path, list[str]],
                                         module: str) -> None:
    out, _ = reference
    html = _page(out, module).read_text(encoding="utf-8")
    missing = [n for n in _documented(module) if f'<section id="{n}">' not in html]
    assert missing == [], f"{module}: public names without a section: {missing}"
    # the docstrings themselves are rendered, not only the signatures
    mod = importlib.import_module(module)
    for name in _documented(module):
        doc = getattr(getattr(mod, name), "__doc__", None) or ""
        first = doc.strip().split("\n")[0].split("``")[0].strip()[:30]
        if first and name != "__version__":
            assert first.replace("&", "&amp;").replace("<", "&lt;") in html, (module, name)


def test_public_names_are_not_modules() -> None:
    """Every name of DESIGN.md's public API is a function, class or value, never a
    submodule that shadows it (relay_ref.testing binds the function ``programs``, not its
    same-named submodule, whichever is imported first)."""
    for module in MODULES:
        mod = importlib.import_module(module)
        shadowed = {n for n in mod.__all__ if isinstance(getattr(mod, n), types.ModuleType)}
        assert not shadowed, (module, shadowed)
    import relay_ref
    import relay_ref.frontend.onnx
    import relay_ref.testing

    assert callable(relay_ref.testing.check_pass)
    from relay_ref.testing.programs import arguments  # the submodule imported by name

    assert relay_ref.testing.programs.__name__ == "programs" and callable(arguments)
    assert callable(relay_ref.frontend.onnx.from_onnx)
    assert set(_documented("relay_ref")) == set(relay_ref.__all__)


def test_concepts_lists_the_prelude() -> None:
    """docs/concepts.md's tables name exactly the prelude's globals, types and
    constructors."""
    import re

    from relay_ref.prelude import load_prelude

    text = (Path(__file__).resolve().parent.parent / "docs" / "concepts.md").read_text()
    section = text.split("## The prelude", 1)[1]
    prelude = load_prelude()
    assert set(re.findall(r"`@(\w+)`", section)) == set(prelude.functions)
    types = set(re.findall(r"^\| `(\w+)\[?", section, re.M)) - {"functions", "types"}
    assert types == set(prelude.type_definitions)
    for name in prelude.constructors:
        assert f"`{name}" in section, name


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "build/api")
    for problem in build_reference(target):
        print(f"pdoc: {problem}", file=sys.stderr)
    print(f"API reference written to {target / 'index.html'}")
