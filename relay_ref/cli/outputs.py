"""The files a ``relay`` command writes: never one of its inputs, and all or nothing.

Every command with outputs (``relay run -o``, ``relay import -o/--weights``, ``relay fmt -i``)
goes through this module:

* ``refuse_clobbering(inputs, outputs)`` raises ``OutputError`` (a usage error, exit 2) when
  an output is the same file as an input or as another output: the same path, or the same
  file reached through a symlink, a hard link, ``..`` or a relative path. Standard input and
  output (``-``) are never files.
* ``Outputs`` is a transaction: each output's bytes go to a temporary file beside its target
  (same folder, so the final rename is atomic), and only when every output has been written
  are the temporaries renamed over their targets (``os.replace``).

Invariants of ``Outputs``:

* A failure or an interrupt before the commit leaves every target as it was and no
  temporary file behind. A rename that fails during the commit (rare: the folder changed
  under us) puts back the targets already replaced, from hard-link backups, when there is
  more than one output.
* A target that is a symlink is written through: the link stays, its target gets the bytes.
  A target that is a folder is refused before anything is written. A target that exists
  and is not a regular file (a FIFO, a device such as ``/dev/null``, a terminal) is never
  replaced: its bytes are written into it, after the renames.
* A replaced file keeps its permission bits, and its owner and group where the process may
  change them (as ``cp -p``); when it may not, a warning says what changed. A new file gets
  the bits a newly created file gets (``0o666`` less the umask).
* The same target staged twice is written once, with the last bytes staged.

Write failures are ``OSError`` whose ``filename`` is the path as the user wrote it;
``write_error`` words one for the command line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import BinaryIO

Labelled = tuple[str, "str | os.PathLike[str] | None"]
"""``(label, path)``: how a message names the path (``-o``, ``MODEL``, ``argument 2``);
a None path is skipped."""


class OutputError(Exception):
    """An output the command must not write: it would overwrite an input, or another output
    (a usage error, exit 2; the message names both paths)."""


def same_file(a: str, b: str) -> bool:
    """Whether the paths ``a`` and ``b`` name one file: ``os.path.samefile`` when both exist
    (symlinks and hard links included), else their resolved paths are equal."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)
    except ValueError:  # a NUL byte: no file has that name
        return False


def refuse_clobbering(inputs: Iterable[Labelled], outputs: Iterable[Labelled]) -> None:
    """Raise ``OutputError`` when an output is the same file as an input or an earlier
    output. ``-`` (standard input or output) is no file."""
    ins = [(label, os.fspath(p)) for label, p in inputs if p is not None and p != "-"]
    outs = [(label, os.fspath(p)) for label, p in outputs if p is not None and p != "-"]
    for i, (label, path) in enumerate(outs):
        for in_label, in_path in ins:
            if same_file(path, in_path):
                raise OutputError(f"{label} {path} is the same file as the input {in_label} "
                                  f"{in_path}: writing it would destroy the input; choose "
                                  "another output path")
        for other_label, other in outs[:i]:
            if same_file(path, other):
                raise OutputError(f"{label} {path} is the same file as the output "
                                  f"{other_label} {other}: both would be written to one "
                                  "file; choose another path for one of them")


def write_error(err: OSError) -> str:
    """``err`` (from ``Outputs``) in words for ``relay: error: ...``."""
    return f"cannot write {err.filename}: {err.strerror or err} (no file was changed)"


@dataclass(frozen=True, slots=True)
class _Staged:
    """An output written to ``tmp``, to be renamed over ``target`` (symlinks resolved);
    ``shown`` is the path as the user wrote it. ``special``: the target exists and is not a
    regular file (a FIFO, ``/dev/null``, a terminal): its bytes are written into it, never
    renamed over it."""

    shown: str
    target: str
    tmp: str
    special: bool = False


class Outputs:
    """A transaction over a command's output files (see the module docstring)::

        with Outputs() as out:
            out.text("prog.relay", text)
            out.stage("result.npy", lambda f: np.save(f, array))
        # every file replaced here, or (on an exception) none

    ``warn`` receives the warnings (an owner that could not be kept) once the commit is
    done; by default they go to stderr as ``relay: warning: ...``."""

    def __init__(self, warn: Callable[[str], None] | None = None) -> None:
        self._staged: dict[str, _Staged] = {}
        self._warnings: list[str] = []
        self._warn = warn or _print_warning
        self._open = True

    @property
    def active(self) -> bool:
        """True until the transaction is committed or discarded (a failed ``stage``
        discards it)."""
        return self._open

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, kind: object, err: object, tb: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()

    def stage(self, path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> None:
        """Write the output ``path`` to a temporary file with ``write(file)``; raise the
        ``OSError`` (the transaction discarded) when that fails."""
        if not self._open:
            raise RuntimeError("Outputs: the transaction is already committed or discarded")
        shown = os.fspath(path)
        try:
            target = os.path.realpath(shown)
            if os.path.isdir(target) or shown.endswith(os.sep):
                raise IsADirectoryError(21, os.strerror(21), shown)
            special = os.path.exists(target) and not os.path.isfile(target)
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                       dir=None if special else os.path.dirname(target))
        except OSError as err:
            self.discard()
            raise OSError(err.errno, err.strerror, shown) from None
        earlier = self._staged.pop(target, None)
        if earlier is not None:
            _remove(earlier.tmp)
        self._staged[target] = _Staged(shown, target, tmp, special)
        try:
            with os.fdopen(fd, "wb") as out:
                write(out)
            if not special:
                self._keep_metadata(shown, target, tmp)
        except OSError as err:
            self.discard()
            raise OSError(err.errno, err.strerror, shown) from None
        except BaseException:
            self.discard()
            raise

    def text(self, path: str | os.PathLike[str], text: str) -> None:
        """Stage ``text`` as UTF-8 (newlines written as they are)."""
        self.stage(path, lambda out: out.write(text.encode("utf-8")))

    def commit(self) -> None:
        """Rename every temporary over its target; on a failure put the replaced targets
        back (from hard-link backups) and raise the ``OSError``."""
        if not self._open:
            return
        self._open = False
        staged = list(self._staged.values())
        undo: list[tuple[str, _Undo]] = []
        renamed = 0
        try:
            for i, item in enumerate(staged):
                # the last rename needs no undo: nothing is renamed after it
                if item.special:  # written through, after every rename (nothing to undo)
                    continue
                how = _Undo.of(item.target) if i < len(staged) - 1 else _Undo(False, None)
                undo.append((item.target, how))
                os.replace(item.tmp, item.target)
                renamed += 1
            for item in staged:
                if item.special:
                    with open(item.tmp, "rb") as src, open(item.target, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    _remove(item.tmp)
        except BaseException as err:
            for target, how in reversed(undo[:renamed]):
                how.apply(target)
            for item in staged:
                _remove(item.tmp)
            if isinstance(err, OSError):
                shown = next((s.shown for s in staged if err.filename in (s.tmp, s.target)),
                             err.filename)
                raise OSError(err.errno, err.strerror, shown) from None
            raise
        finally:
            for _, how in undo:
                how.drop()
        for message in self._warnings:
            self._warn(message)

    def discard(self) -> None:
        """Remove every temporary; the targets stay as they were."""
        self._open = False
        for item in self._staged.values():
            _remove(item.tmp)
        self._staged.clear()

    def _keep_metadata(self, shown: str, target: str, tmp: str) -> None:
        """Give ``tmp`` the mode, owner and group of the file it replaces (a new file: the
        usual mode for new files); a warning for an owner or group that cannot be kept."""
        try:
            old = os.stat(target)
        except FileNotFoundError:
            os.chmod(tmp, 0o666 & ~_umask())
            return
        mine = os.stat(tmp)
        if (old.st_uid, old.st_gid) != (mine.st_uid, mine.st_gid):
            try:
                os.chown(tmp, old.st_uid, old.st_gid)
            except PermissionError:
                group_kept = old.st_gid == mine.st_gid
                if not group_kept:
                    with contextlib.suppress(PermissionError):
                        os.chown(tmp, -1, old.st_gid)
                        group_kept = True
                lost = "owner" if group_kept else "owner and group"
                self._warnings.append(
                    f"{shown}: cannot keep its {lost} ({_owner(old)}) when replacing it: it "
                    f"is now owned by {_owner(os.stat(tmp))}")
        os.chmod(tmp, stat.S_IMODE(old.st_mode))  # after chown, which may clear set-id bits


def _owner(info: os.stat_result) -> str:
    """``user:group`` by name where the system knows them, else by number."""
    import grp
    import pwd

    try:
        user = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        user = str(info.st_uid)
    try:
        group = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        group = str(info.st_gid)
    return f"{user}:{group}"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@dataclass(frozen=True, slots=True)
class _Undo:
    """How to undo one rename of a commit: ``existed`` says whether the target was there
    before; ``backup`` is a hard link to the old file (None: no file, or a file system
    without hard links, where an old file cannot be put back and the new one stays)."""

    existed: bool
    backup: str | None

    @staticmethod
    def of(target: str) -> _Undo:
        if not os.path.lexists(target):
            return _Undo(False, None)
        for _ in range(100):
            name = os.path.join(os.path.dirname(target),
                                f".{os.path.basename(target)}.{os.urandom(4).hex()}.old")
            try:
                os.link(target, name)
                return _Undo(True, name)
            except FileExistsError:
                continue
            except OSError:
                break
        return _Undo(True, None)

    def apply(self, target: str) -> None:
        with contextlib.suppress(OSError):
            if self.backup is not None:
                os.replace(self.backup, target)
            elif not self.existed:
                os.unlink(target)

    def drop(self) -> None:
        if self.backup is not None:
            _remove(self.backup)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _print_warning(message: str) -> None:
    """``relay: warning: message`` on stderr, coloured as the diagnostics are."""
    from relay_ref import Diagnostic
    from relay_ref.cli._common import use_colour

    print(f"relay: {Diagnostic('warning', message).render(use_colour(sys.stderr))}",
          file=sys.stderr)
