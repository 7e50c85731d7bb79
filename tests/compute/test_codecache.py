"""The kernel source cache (``relay_ref.compute.cpu.codecache``): content-addressed files,
never rewritten once correct, atomic under concurrent writers, a fallback directory, and
numba's on-disk cache reused by a second process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from relay_ref.compute.cpu import codecache

ROOT = Path(__file__).resolve().parents[2]


def test_same_content_same_file(tmp_path):
    a = codecache.write_source("X = 1\n", tmp_path)
    b = codecache.write_source("X = 1\n", tmp_path)
    c = codecache.write_source("X = 2\n", tmp_path)
    assert a == b != c
    assert a.name == f"k_{codecache.source_hash('X = 1' + chr(10))}.py"
    assert a.read_text() == "X = 1\n"
    assert a.parent.name.startswith("numba-") and a.parent.parent == tmp_path


def test_existing_file_is_not_rewritten(tmp_path):
    path = codecache.write_source("Y = 3\n", tmp_path)
    before = os.stat(path)
    codecache.write_source("Y = 3\n", tmp_path)
    after = os.stat(path)
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


def test_corrupt_file_is_replaced(tmp_path):
    path = codecache.source_path("Z = 4\n", tmp_path)
    path.write_text("Z = ")  # a half-written file from some crashed writer
    assert codecache.write_source("Z = 4\n", tmp_path).read_text() == "Z = 4\n"


def test_load_source_imports_from_the_cache_once(tmp_path):
    text = "VALUE = 41 + 1\n"
    mod = codecache.load_source(text, tmp_path)
    assert mod.VALUE == 42
    assert Path(mod.__file__) == codecache.source_path(text, tmp_path)
    assert codecache.load_source(text, tmp_path) is mod
    assert sys.modules[mod.__name__] is mod


def test_concurrent_writers_never_expose_half_a_file(tmp_path):
    text = "DATA = " + repr("x" * 200_000) + "\n"
    path = codecache.source_path(text, tmp_path)
    seen: list[int] = []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            try:
                seen.append(len(path.read_bytes()))
            except FileNotFoundError:
                pass

    def writer():
        for _ in range(20):
            path.unlink(missing_ok=True)  # force every writer through the rename
            codecache.write_source(text, tmp_path)

    threads = [threading.Thread(target=reader)] + [threading.Thread(target=writer)
                                                   for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads[1:]:
        t.join()
    stop.set()
    threads[0].join()
    assert set(seen) <= {len(text)}
    assert path.read_text() == text
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_unwritable_root_falls_back_to_a_temporary_directory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    d = codecache.cache_dir(blocker / "cache")  # cannot mkdir under a regular file
    assert not str(d).startswith(str(blocker))
    assert codecache.write_source("W = 5\n", blocker / "cache").parent == d


def test_environment_variable_sets_the_root(tmp_path, monkeypatch):
    monkeypatch.setenv(codecache.ENV_VAR, str(tmp_path / "env-root"))
    assert codecache.default_root() == tmp_path / "env-root"
    monkeypatch.delenv(codecache.ENV_VAR)
    assert codecache.default_root() == Path.home() / ".cache" / "relay_ref" / "kernels"


def test_second_process_loads_compiled_code_from_numba_cache(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        from relay_ref.compute.cpu import codecache
        src = ('import numba\\n'
               '@numba.njit(cache=True)\\n'
               'def kernel(x):\\n'
               '    return x.sum() + 0.25\\n')
        mod = codecache.load_source(src)
        assert mod.kernel(np.ones(3)) == 3.25
        stats = mod.kernel.stats
        print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
    """)
    env = dict(os.environ, RELAY_REF_CACHE_DIR=str(tmp_path))

    def run() -> tuple[int, ...]:
        done = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT,
                              capture_output=True, text=True, check=True)
        return tuple(int(w) for w in done.stdout.split())

    assert run() == (0, 1)  # first process: compiled (and saved)
    assert run() == (1, 0)  # second process: loaded from the on-disk cache
    assert len(list(tmp_path.glob("numba-*/k_*.py"))) == 1
