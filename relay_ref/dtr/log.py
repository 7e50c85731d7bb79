"""The DTR log format: JSON lines, as the paper's simulator reads them (the artifact
``uwsampl/dtr-prototype``, ``simrd/simrd/parse/parse.py``; spec/dtr.md §8).

One JSON object per line, its instruction in ``"INSTRUCTION"``; numbers are written as
decimal strings (``"MEMORY":"36000"``, ``"TIME":"733881"``, ``"ALIAS":"-1"``); keys sorted,
no spaces (the artifact's own lines read the same). Instructions:

* ``{"INSTRUCTION":"CONSTANT","NAME":n}`` then ``MEMORY`` for ``n``: an input, a weight.
* ``{"INSTRUCTION":"MEMORY","MEMORY":bytes,"NAME":n}``.
* ``{"INSTRUCTION":"ALIAS","ALIAS":j,"NAME":n}``: result ``n`` views argument ``j`` of its
  call (``-1``: a fresh storage; a view's MEMORY is ignored: it is accounted once).
* ``{"ARGS":[..],"INSTRUCTION":"CALL","NAME":op,"RESULT":[..],"TIME":ns}``, then for each
  result, in order, its ``MEMORY`` and its ``ALIAS`` line. This project may add
  ``"FLOPS"`` (the runtime's deterministic cost); the artifact ignores unknown keys.
* ``{"ARGS":[..],"INSTRUCTION":"MUTATE","MUTATE":[i..],"NAME":op,"TIME":ns}``: an in-place
  op, simulated copy-on-write: each mutated argument's name is rebound to a fresh output of
  the argument's size, and the old tensor released.
* ``{"DST":d,"INSTRUCTION":"COPY","SRC":s}``: ``d`` names ``s``'s tensor (one more ref).
* ``{"DST":d,"INSTRUCTION":"COPY_FROM","SRC":s}``: ``d`` is rebound to ``s``'s tensor (its
  old tensor released, ``s``'s gains a ref).
* ``{"INSTRUCTION":"RELEASE","NAME":n}``: the program dropped the reference ``n``.
* ``{"INSTRUCTION":"PIN","NAME":n}`` (this project's extension, spec/dtr.md §8; the
  artifact has no such line and its logs never contain one): the program holds ``n``'s
  value itself from now on (a result the runtime returned as a plain array, or a constant):
  ``n`` is pinned (D-Pin, never evicted), and its ``RELEASE`` frees it for good (D-Free)
  instead of the dealloc policy's release. Without it a simulator may evict what the run
  could not, and a runtime log would not replay exactly.
* ``{"ANNOTATION":"START"|"BACKWARD","INSTRUCTION":"ANNOTATE"}``: the simulated run starts
  after ``START`` (when the log has one); ``BACKWARD`` marks the backward pass.

``read_log`` parses a path or an iterable of lines into records (one frozen dataclass per
instruction, each with its 1-based ``line``); a malformed line is a ``DTRLogError`` naming the
file, the line and what is wrong. ``LogWriter`` writes a log atomically (a temporary file in
the same directory, renamed on ``close``; on an error, or ``abort``, nothing is left).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relay_ref.dtr.errors import DTRLogError

__all__ = ["INSTRUCTIONS", "LogAlias", "LogAnnotate", "LogCall", "LogConstant", "LogCopy",
           "LogCopyFrom", "LogMemory", "LogMutate", "LogPin", "LogRecord", "LogRelease",
           "LogWriter", "format_line", "read_log"]


@dataclass(frozen=True, slots=True)
class LogConstant:
    name: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogMemory:
    name: str
    nbytes: int
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogAlias:
    name: str
    alias: int  # -1: no alias; else the argument index
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogCall:
    name: str
    args: tuple[str, ...]
    results: tuple[str, ...]
    time: int
    flops: int | None = None
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogMutate:
    name: str
    args: tuple[str, ...]
    mutate: tuple[int, ...]
    time: int
    flops: int | None = None
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogCopy:
    dst: str
    src: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogCopyFrom:
    dst: str
    src: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogRelease:
    name: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogPin:
    """This project's extension: ``name``'s value is held by the program (D-Pin; its
    RELEASE is D-Free)."""

    name: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class LogAnnotate:
    annotation: str  # "START" or "BACKWARD"
    line: int = 0


LogRecord = (LogConstant | LogMemory | LogAlias | LogCall | LogMutate | LogCopy | LogCopyFrom
             | LogRelease | LogPin | LogAnnotate)

# Instruction -> its required keys (besides INSTRUCTION).
INSTRUCTIONS: dict[str, tuple[str, ...]] = {
    "CONSTANT": ("NAME",), "MEMORY": ("MEMORY", "NAME"), "ALIAS": ("ALIAS", "NAME"),
    "CALL": ("ARGS", "NAME", "RESULT", "TIME"), "MUTATE": ("ARGS", "MUTATE", "NAME", "TIME"),
    "COPY": ("DST", "SRC"), "COPY_FROM": ("DST", "SRC"), "RELEASE": ("NAME",),
    "ANNOTATE": ("ANNOTATION",), "PIN": ("NAME",),
}
ANNOTATIONS = ("START", "BACKWARD")


class _Bad(Exception):
    """A problem with one line (turned into a located DTRLogError)."""


def _str(obj: dict, key: str) -> str:
    v = obj[key]
    if not isinstance(v, str):
        raise _Bad(f"{key} must be a string, not {json.dumps(v)}")
    return v


def _names(obj: dict, key: str) -> tuple[str, ...]:
    v = obj[key]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _Bad(f"{key} must be a list of names (strings), not {json.dumps(v)}")
    return tuple(v)


def _int(obj: dict, key: str, *, minimum: int | None = 0) -> int:
    v = obj[key]
    if isinstance(v, bool):
        raise _Bad(f"{key} must be an integer, not {json.dumps(v)}")
    if isinstance(v, str):
        try:
            v = int(v.strip())
        except ValueError:
            raise _Bad(f"{key} must be an integer, not {json.dumps(obj[key])}") from None
    elif isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int):
        raise _Bad(f"{key} must be an integer, not {json.dumps(obj[key])}")
    if minimum is not None and v < minimum:
        raise _Bad(f"{key} must be at least {minimum}, not {v}")
    return v


def _record(obj: Any, line: int) -> LogRecord:
    if not isinstance(obj, dict):
        raise _Bad("a log line is a JSON object")
    instr = obj.get("INSTRUCTION")
    if instr not in INSTRUCTIONS:
        known = ", ".join(INSTRUCTIONS)
        raise _Bad(f"unknown INSTRUCTION {json.dumps(instr)} (known: {known})"
                   if instr is not None else f"no INSTRUCTION (one of {known})")
    missing = [k for k in INSTRUCTIONS[instr] if k not in obj]
    if missing:
        raise _Bad(f"{instr} without {', '.join(missing)}")
    flops = _int(obj, "FLOPS") if "FLOPS" in obj else None
    if instr == "CONSTANT":
        return LogConstant(_str(obj, "NAME"), line)
    if instr == "MEMORY":
        return LogMemory(_str(obj, "NAME"), _int(obj, "MEMORY"), line)
    if instr == "ALIAS":
        return LogAlias(_str(obj, "NAME"), _int(obj, "ALIAS", minimum=-1), line)
    if instr == "CALL":
        return LogCall(_str(obj, "NAME"), _names(obj, "ARGS"), _names(obj, "RESULT"),
                       _int(obj, "TIME"), flops, line)
    if instr == "MUTATE":
        mut = obj["MUTATE"]
        if not isinstance(mut, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                for i in mut):
            # JSON integers only: the artifact's parse_file indexes ARGS with them (a string
            # index is a TypeError there) and its logs write them so ("MUTATE":[0])
            raise _Bad(f"MUTATE must be a list of argument indices (JSON integers, as the "
                       f"paper's logs write them), not {json.dumps(mut)}")
        args = _names(obj, "ARGS")
        bad = [i for i in mut if not 0 <= i < len(args)]
        if bad:
            raise _Bad(f"MUTATE index {bad[0]} out of range for {len(args)} ARGS")
        return LogMutate(_str(obj, "NAME"), args, tuple(mut), _int(obj, "TIME"), flops, line)
    if instr == "COPY":
        return LogCopy(_str(obj, "DST"), _str(obj, "SRC"), line)
    if instr == "COPY_FROM":
        return LogCopyFrom(_str(obj, "DST"), _str(obj, "SRC"), line)
    if instr == "RELEASE":
        return LogRelease(_str(obj, "NAME"), line)
    if instr == "PIN":
        return LogPin(_str(obj, "NAME"), line)
    ann = _str(obj, "ANNOTATION")
    if ann not in ANNOTATIONS:
        raise _Bad(f"unknown ANNOTATION {json.dumps(ann)} (known: {', '.join(ANNOTATIONS)})")
    return LogAnnotate(ann, line)


def read_log(source: str | os.PathLike | Iterable[str], *,
             name: str | None = None) -> list[LogRecord]:
    """The records of a log: ``source`` is a path or an iterable of lines (``name`` names
    it in errors; default the path, or ``<log>``). Blank lines are skipped. Raises
    ``DTRLogError`` (file, line, problem) on the first malformed line, or when the file
    cannot be read."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        label = name or path
        try:
            with open(path, encoding="utf-8") as f:
                return _parse_lines(f, label)
        except OSError as err:
            raise DTRLogError(label, 1, f"cannot read the log: {err.strerror or err}") from None
        except UnicodeDecodeError as err:
            raise DTRLogError(label, 1, f"not UTF-8 text: {err.reason}") from None
    return _parse_lines(source, name or "<log>")


def _parse_lines(lines: Iterable[str], label: str) -> list[LogRecord]:
    out: list[LogRecord] = []
    for number, text in enumerate(lines, 1):
        if not isinstance(text, str):
            raise DTRLogError(label, number, f"a log line is text, not {type(text).__name__}")
        text = text.rstrip("\r\n")
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as err:
            raise DTRLogError(label, number, f"not JSON: {err.msg} at column {err.colno}",
                              text) from None
        try:
            out.append(_record(obj, number))
        except _Bad as err:
            raise DTRLogError(label, number, str(err), text) from None
    return out


def format_line(obj: dict[str, Any]) -> str:
    """One log line as the artifact writes it: keys sorted, no spaces, no newline."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


class LogWriter:
    """Writes a DTR log to ``path`` atomically: lines go to a temporary file beside it,
    renamed over ``path`` by ``close`` (or leaving a ``with`` block normally); ``abort`` (or
    an exception in the ``with`` block) deletes it, so a half-written log never appears.
    ``start=True`` writes the ``ANNOTATE START`` line first."""

    def __init__(self, path: str | os.PathLike, *, start: bool = True) -> None:
        self.path = Path(path)
        directory = self.path.parent if str(self.path.parent) else Path(".")
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp",
                                   dir=directory)
        self._tmp = tmp
        self._f = os.fdopen(fd, "w", encoding="utf-8")
        self.closed = False
        if start:
            self.annotate("START")

    def _write(self, obj: dict[str, Any]) -> None:
        self._f.write(format_line(obj) + "\n")

    def annotate(self, annotation: str) -> None:
        """``ANNOTATE`` ``START`` or ``BACKWARD``."""
        if annotation not in ANNOTATIONS:
            raise ValueError(f"annotation is one of {', '.join(ANNOTATIONS)}")
        self._write({"ANNOTATION": annotation, "INSTRUCTION": "ANNOTATE"})

    def constant(self, name: str, nbytes: int) -> None:
        """``CONSTANT`` then its ``MEMORY``."""
        self._write({"INSTRUCTION": "CONSTANT", "NAME": name})
        self.memory(name, nbytes)

    def memory(self, name: str, nbytes: int) -> None:
        self._write({"INSTRUCTION": "MEMORY", "MEMORY": str(int(nbytes)), "NAME": name})

    def alias(self, name: str, alias: int | None) -> None:
        """``ALIAS``: ``alias`` is the argument index viewed, None (written -1) for none."""
        self._write({"ALIAS": str(-1 if alias is None else int(alias)),
                     "INSTRUCTION": "ALIAS", "NAME": name})

    def call(self, name: str, args: Sequence[str], results: Sequence[str], time: int,
             sizes: Sequence[int], aliases: Sequence[int | None] = (),
             flops: int | None = None) -> None:
        """``CALL`` then, per result, its ``MEMORY`` and ``ALIAS`` lines (a view's size is
        written as 0, as the artifact's simulator counts it)."""
        obj: dict[str, Any] = {"ARGS": list(args), "INSTRUCTION": "CALL", "NAME": name,
                               "RESULT": list(results), "TIME": str(int(time))}
        if flops is not None:
            obj["FLOPS"] = str(int(flops))
        self._write(obj)
        al = list(aliases) + [None] * (len(results) - len(aliases))
        for r, size, a in zip(results, sizes, al, strict=True):
            self.memory(r, 0 if a is not None else size)
            self.alias(r, a)

    def mutate(self, name: str, args: Sequence[str], mutate: Sequence[int], time: int,
               flops: int | None = None) -> None:
        obj: dict[str, Any] = {"ARGS": list(args), "INSTRUCTION": "MUTATE",
                               "MUTATE": [int(i) for i in mutate], "NAME": name,
                               "TIME": str(int(time))}
        if flops is not None:
            obj["FLOPS"] = str(int(flops))
        self._write(obj)

    def copy(self, dst: str, src: str) -> None:
        self._write({"DST": dst, "INSTRUCTION": "COPY", "SRC": src})

    def copy_from(self, dst: str, src: str) -> None:
        self._write({"DST": dst, "INSTRUCTION": "COPY_FROM", "SRC": src})

    def release(self, name: str) -> None:
        self._write({"INSTRUCTION": "RELEASE", "NAME": name})

    def pin(self, name: str) -> None:
        """``PIN`` (this project's extension): the program holds ``name`` itself."""
        self._write({"INSTRUCTION": "PIN", "NAME": name})

    def close(self) -> None:
        """Finish: the log appears at ``path`` (atomically replacing any old one)."""
        if self.closed:
            return
        self.closed = True
        self._f.close()
        try:
            os.replace(self._tmp, self.path)
        except OSError:  # (``path`` a directory, say): no temporary file left behind
            os.unlink(self._tmp)
            raise

    def abort(self) -> None:
        """Give up: the temporary file is removed, ``path`` is untouched."""
        if self.closed:
            return
        self.closed = True
        self._f.close()
        try:
            os.unlink(self._tmp)
        except FileNotFoundError:
            pass

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
