"""The side file of weights that ``relay import`` writes and ``relay run --params`` reads.

Format: a NumPy ``.npz`` archive (uncompressed zip, one ``KEY.npy`` member per array) whose
keys are ``@main``'s parameter names without the ``%`` (``conv1_w_0``, ``gpu_0/res2_b_0``;
slashes are kept inside the member name, as ``np.savez`` does). ``np.load`` reads it.

The ``.relay`` file names its weights in its first comment lines (``WEIGHTS_LINE``), so
``relay run`` can say which file to pass when ``--params`` is missing.

Invariants: ``write_files`` replaces its targets atomically (each file's bytes go to a
temporary file beside it, renamed over the target only once every file is complete:
``cli_outputs.Outputs``), so an error or an interrupt leaves the old files, never
half-written ones; ``load_weights`` never unpickles, and checks each member's header
against its size before reading it (a hostile header allocates nothing), as ``relay
run``'s ``.npy`` arguments are read.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.lib.format as npy_format

from relay_ref.cli_outputs import Outputs
from relay_ref.cli_run import NpyError, _read_npy

#: The comment line naming the weights file, relative to the ``.relay`` file's folder.
WEIGHTS_LINE = "// Weights: {name} ({count} arrays keyed by @main's parameter names)"
_WEIGHTS = re.compile(r"^// Weights: (\S+\.npz) \(", re.MULTILINE)


class WeightsError(Exception):
    """A weights file that cannot be read (message in plain words, with the path)."""


def weights_named_in(text: str, relay_path: str) -> str | None:
    """The weights file a ``.relay`` text's header names (a path usable from the current
    folder), or None. Only the leading comment lines are looked at."""
    head = "\n".join(line for line in text.split("\n", 20)[:20] if line.startswith("//"))
    found = _WEIGHTS.search(head)
    if found is None:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(relay_path), found.group(1)))


def load_weights(path: str) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file ``path`` by key; ``WeightsError`` on any failure."""
    if not os.path.exists(path):
        raise WeightsError(f"{path}: no such file")
    if os.path.isdir(path):
        raise WeightsError(f"{path}: is a directory, not a .npz file")
    out: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if info.is_dir():
                    continue
                if not info.filename.endswith(".npy"):
                    raise WeightsError(f"{path}: member {info.filename!r} is not a .npy "
                                       "array (not a weights file written by relay import "
                                       "or np.savez)")
                key = info.filename[:-len(".npy")]
                with archive.open(info) as member:
                    try:
                        out[key] = _read_npy(member, info.file_size)
                    except NpyError as err:
                        raise WeightsError(f"{path}: array {key!r}: {err}") from None
    except zipfile.BadZipFile:
        raise WeightsError(f"{path}: not a .npz file (not a zip archive)") from None
    except (OSError, EOFError, zipfile.LargeZipFile, NotImplementedError) as err:
        raise WeightsError(f"{path}: cannot read it ({err})") from None
    except MemoryError:
        raise WeightsError(f"{path}: the arrays are too large to load into memory") from None
    return out


def write_files(texts: Mapping[Path, str], arrays: Mapping[Path, Mapping[str, np.ndarray]],
                advance: Callable[[str], None] = lambda key: None) -> None:
    """Write each text file and each ``.npz`` archive in one ``cli_outputs.Outputs``
    transaction, all or nothing: temporary files first (``advance(key)`` after each array),
    then renamed over their targets. Raises ``OSError`` (the temporaries removed, every
    target as it was) when a target cannot be written."""
    def archive_of(by_key: Mapping[str, np.ndarray]) -> Callable[[BinaryIO], None]:
        def write(out: BinaryIO) -> None:
            with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
                for key, value in by_key.items():
                    with archive.open(f"{key}.npy", "w", force_zip64=True) as member:
                        npy_format.write_array(member, np.asarray(value), allow_pickle=False)
                    advance(key)
        return write

    with Outputs() as outputs:
        for target, by_key in arrays.items():
            outputs.stage(target, archive_of(by_key))
        for target, text in texts.items():
            outputs.text(target, text)
