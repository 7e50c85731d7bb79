"""A content-addressed directory of generated kernel source files.

numba's ``cache=True`` keys compiled code by the source *file* of the function (its path and
its contents' stamp), so generated kernels must live in real files to be cached across
processes. ``load_source(text)`` writes ``text`` to ``<dir>/k_<sha256 of text>.py`` (once:
the name says what the content is) and imports it under a module name derived from the same
hash; a later process generating the same text finds the file, imports it, and numba loads
the compiled code from the ``__pycache__`` beside it (milliseconds instead of a compile).

Invariants:

* a file named ``k_<h>.py`` holds exactly the text whose sha256 is ``h``: it is written to
  a temporary file in the same directory and renamed into place (``os.replace`` is atomic),
  so a concurrent process (pytest-xdist) never imports half a file; an existing file with
  other content (a crash of some older writer) is replaced the same way;
* an existing correct file is never rewritten (its stamp, hence numba's cache, stays valid);
* one module per (directory, hash) per process (memoised); the module name is the same for
  every directory, the latest import owning ``sys.modules``' entry.

Directory: ``cache_dir`` when given, else ``$RELAY_REF_CACHE_DIR``, else
``~/.cache/relay_ref/kernels``; inside it a ``numba-<version>`` folder (compiled code of
another numba version is useless). A directory that cannot be created or written falls
back to a per-user folder under the system's temporary directory.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

from relay_ref.compute import cpu

ENV_VAR = "RELAY_REF_CACHE_DIR"

_modules: dict[str, ModuleType] = {}
_dirs: dict[str, Path] = {}
_lock = threading.Lock()


def default_root() -> Path:
    """The configured cache root: ``$RELAY_REF_CACHE_DIR`` or ``~/.cache/relay_ref/kernels``."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "relay_ref" / "kernels"


def cache_dir(root: str | os.PathLike[str] | None = None) -> Path:
    """The writable directory kernels go to for ``root`` (default ``default_root()``): its
    ``numba-<version>`` folder, created, or a temporary-directory fallback."""
    base = Path(root) if root is not None else default_root()
    key = str(base)
    found = _dirs.get(key)
    if found is None:
        sub = f"numba-{cpu.numba.__version__}"
        found = _writable(base / sub)
        if found is None:  # a private directory of this process: code is imported from
            # it, so never a predictable shared path another user could prepare
            found = Path(tempfile.mkdtemp(prefix="relay_ref-kernels-"))
        _dirs[key] = found
    return found


def _writable(path: Path) -> Path | None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError:
        return None
    return path


def source_hash(text: str) -> str:
    """The sha256 (hex) naming ``text``'s file."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def source_path(text: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Where ``text`` is (or will be) stored."""
    return cache_dir(root) / f"k_{source_hash(text)}.py"


def write_source(text: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Store ``text`` in the cache (atomically; untouched when already there) and return its
    path."""
    path = source_path(text, root)
    data = text.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return path
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def load_source(text: str, root: str | os.PathLike[str] | None = None) -> ModuleType:
    """The module whose source is ``text``, imported from the cache directory (written there
    first if needed). The module is registered in ``sys.modules`` as
    ``relay_ref_kernels.k_<hash>``."""
    digest = source_hash(text)
    key = f"{cache_dir(root)}:{digest}"
    module = _modules.get(key)
    if module is not None:
        return module
    with _lock:
        module = _modules.get(key)
        if module is None:
            path = write_source(text, root)
            name = f"relay_ref_kernels.k_{digest}"
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
            _modules[key] = module
    return module
