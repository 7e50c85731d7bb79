"""Kernel tests: a hermetic ``relay`` kernelspec for this checkout.

At import time (before any kernel starts, in every xdist worker) the spec is written to a
temporary Jupyter data dir put first on ``JUPYTER_PATH``, with ``argv`` naming this
interpreter, and ``PYTHONPATH`` is pointed at the checkout (``kernel/`` and the repository
root). So the tests exercise the code in this working tree whether or not (and however) the
package is installed; ``test_kernel_packaging.py`` checks the installed spec separately.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "kernel"))

from relay_kernel.install import write_spec  # noqa: E402

_DATA = Path(tempfile.mkdtemp(prefix="relay-kernel-tests-"))
write_spec(_DATA / "kernels" / "relay", sys.executable)
os.environ["JUPYTER_PATH"] = os.pathsep.join(
    [str(_DATA), *filter(None, [os.environ.get("JUPYTER_PATH")])])
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO / "kernel"), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
