"""``python -m relay_kernel install [--user | --sys-prefix | --prefix DIR] [--name NAME]``.

``pip install relay-ref`` already installs the kernelspec into ``sys.prefix`` (wheel shared
data), which is enough when Jupyter runs from the same environment. This command is for a
Jupyter that lives elsewhere: it writes a spec whose ``argv`` names *this* interpreter
(``sys.executable``), as bash_kernel's installer does.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

SPEC_DIR = Path(__file__).resolve().parent.parent / "kernelspec" / "relay"


def kernel_json(executable: str | None = None) -> dict:
    """The kernelspec; ``executable`` replaces the portable ``"python"`` in ``argv``."""
    return {
        "argv": [executable or "python", "-m", "relay_kernel", "-f", "{connection_file}"],
        "display_name": "Relay",
        "language": "relay",
        "interrupt_mode": "signal",
        "metadata": {"debugger": False},
    }


def write_spec(directory: Path, executable: str | None = None) -> Path:
    """Write ``kernel.json`` (and the logos, when present) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "kernel.json").write_text(json.dumps(kernel_json(executable), indent=2) + "\n")
    for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        src = SPEC_DIR / logo
        if src.exists():
            shutil.copy(src, directory / logo)
    return directory


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m relay_kernel install",
                                     description="Install the Relay kernelspec.")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for the current user")
    where.add_argument("--sys-prefix", action="store_true",
                       help=f"install into sys.prefix ({sys.prefix})")
    where.add_argument("--prefix", help="install into PREFIX/share/jupyter/kernels")
    parser.add_argument("--name", default="relay", help="kernelspec name (default: relay)")
    args = parser.parse_args(argv)

    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as td:
        write_spec(Path(td), sys.executable)
        prefix = sys.prefix if args.sys_prefix else args.prefix
        dest = KernelSpecManager().install_kernel_spec(
            td, args.name, user=bool(args.user) or (prefix is None), prefix=prefix)
    print(f"installed kernelspec {args.name} in {dest}")
