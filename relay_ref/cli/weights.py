"""Reading and writing arrays: the side file of weights that ``relay import`` writes and
``relay run --params`` reads, and the hostile-header-safe ``.npy`` reader both use
(``load_npy`` for ``relay run``'s ``.npy`` arguments, ``read_npy`` for each archive member).

Format: a NumPy ``.npz`` archive (uncompressed zip, one ``KEY.npy`` member per array) whose
keys are ``@main``'s parameter names without the ``%`` (``conv1_w_0``, ``gpu_0/res2_b_0``;
slashes are kept inside the member name, as ``np.savez`` does). ``np.load`` reads it.

The ``.relay`` file names its weights in its first comment lines (``WEIGHTS_LINE``), so
``relay run`` can say which file to pass when ``--params`` is missing.

Invariants: ``write_files`` replaces its targets atomically (each file's bytes go to a
temporary file beside it, renamed over the target only once every file is complete:
``outputs.Outputs``), so an error or an interrupt leaves the old files, never
half-written ones; ``load_weights`` never unpickles, and checks each member's header
against its size before reading it (a hostile header allocates nothing), as ``relay
run``'s ``.npy`` arguments are read.
"""

from __future__ import annotations

import math
import os
import re
import stat
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.lib.format as npy_format

from relay_ref.cli.outputs import Outputs

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
                        out[key] = read_npy(member, info.file_size)
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
    """Write each text file and each ``.npz`` archive in one ``outputs.Outputs``
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


# -- one .npy array: the reader relay run's arguments and each weights member go through --

class NpyError(Exception):
    """A ``.npy`` argument that cannot be read (message in plain words, without the path)."""


_NPY_KINDS = "biuf"  # bool, signed, unsigned, float: the element types Relay tensors have


def load_npy(path: str) -> np.ndarray:
    """Read the array in the ``.npy`` file ``path``; raise ``NpyError`` on any failure.

    The header is read and checked first (magic string, version, dtype, shape) and the array's
    byte size is compared with what the file actually holds, so a corrupt or hostile header
    never makes this allocate more than the file's size. Object (pickled) arrays are refused,
    as are dtypes no Relay tensor has (complex, strings, records, dates)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise NpyError("no such file") from None
    except OSError as err:
        raise NpyError(f"cannot read it ({err.strerror or err})") from None
    if stat.S_ISDIR(info.st_mode):
        raise NpyError("is a directory, not a .npy file")
    if not stat.S_ISREG(info.st_mode):
        raise NpyError("is not a regular file")
    try:
        with open(path, "rb") as f:
            return read_npy(f, info.st_size)
    except OSError as err:
        raise NpyError(f"cannot read it ({err.strerror or err})") from None
    except MemoryError:
        raise NpyError("the array is too large to load into memory") from None


def read_npy(f: BinaryIO, file_size: int) -> np.ndarray:
    """The array of the ``.npy`` data in the open binary file ``f`` (positioned at its
    start), whose size is ``file_size`` bytes; ``NpyError`` on any failure. The header is
    checked against ``file_size`` before any buffer is allocated (a hostile header promising
    terabytes allocates nothing); object arrays are refused, never unpickled."""
    if file_size == 0:
        raise NpyError("the file is empty (not a .npy file)")
    try:
        version = npy_format.read_magic(f)
    except (ValueError, EOFError):
        raise NpyError("not a .npy file (it does not start with NumPy's magic string)") \
            from None
    try:
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = npy_format.read_array_header_2_0(f)
        else:
            raise NpyError(f"unsupported .npy format version {version[0]}.{version[1]}")
    except NpyError:
        raise
    except Exception as err:  # noqa: BLE001 - NumPy raises several kinds on a bad header
        raise NpyError(f"its header is not valid ({_first_line(err)})") from None
    if dtype.hasobject:
        raise NpyError("it holds Python objects (a pickled array), which are never loaded; "
                       "save a numeric array instead")
    if dtype.kind not in _NPY_KINDS or dtype.subdtype is not None or dtype.names:
        raise NpyError(f"its element type {dtype} is not one a Relay tensor can have "
                       "(bool, int, uint, float)")
    if not isinstance(shape, tuple) or any(type(d) is not int for d in shape):
        raise NpyError(f"its header's shape {shape!r} is not a tuple of integers")
    if any(d < 0 for d in shape):
        raise NpyError(f"its header has a negative dimension in shape {tuple(shape)}")
    if len(shape) > 64:
        raise NpyError(f"its header has {len(shape)} dimensions (NumPy supports at most 64)")
    count = math.prod(shape)  # exact: Python integers do not overflow
    nbytes = count * dtype.itemsize
    held = file_size - f.tell()
    if nbytes > held:
        raise NpyError(f"it is truncated: the header promises a {dtype.name} array of shape "
                       f"{tuple(shape)} ({nbytes} bytes) but the file holds {held} bytes of "
                       "data")
    if math.prod(max(d, 1) for d in shape) * dtype.itemsize >= 2 ** 63:
        # NumPy refuses such shapes even with a zero dimension (its extent overflows).
        raise NpyError(f"its header's shape {tuple(shape)} is too large for any array")
    buffer = bytearray(nbytes)
    if f.readinto(buffer) != nbytes:
        raise NpyError("it is truncated (it changed while being read)")
    array = np.frombuffer(buffer, dtype=dtype)
    try:
        if fortran:
            array = array.reshape(tuple(reversed(shape))).transpose()
        else:
            array = array.reshape(shape)
    except ValueError as err:  # any shape NumPy still refuses
        raise NpyError(f"its shape {tuple(shape)} cannot be built ({_first_line(err)})") \
            from None
    return array.astype(dtype.newbyteorder("="), copy=False)


def _first_line(err: Exception) -> str:
    text = str(err).strip().split("\n")[0] or type(err).__name__
    return text if len(text) <= 120 else text[:117] + "..."
