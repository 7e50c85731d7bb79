"""Re-execute the tutorials and save their fresh outputs.

    .venv/bin/python notebooks/refresh.py              # every notebooks/*.ipynb
    .venv/bin/python notebooks/refresh.py 03 07-refs   # those whose names start so
    .venv/bin/python notebooks/refresh.py --check      # only report stale outputs

Each notebook runs on the kernel its metadata names (``relay``: this checkout's kernel,
whatever is installed; ``python3``: this interpreter's ipykernel). A notebook with a failing
cell that is not tagged ``raises-exception`` is not saved. ``--check`` saves nothing and
reports the cells whose outputs differ from the saved ones after normalisation, as the test
``tests/kernel/test_kernel_notebooks.py`` does (the rules: ``normalise_outputs`` in
``tests/kernel/notebook_outputs.py``). Exit status 1 when a notebook failed or is stale.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "kernel"))

import nbformat  # noqa: E402
from notebook_outputs import (  # noqa: E402
    checkout_kernelspec,
    execute,
    output_differences,
    refresh,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook name prefixes (default: all)")
    parser.add_argument("--check", action="store_true", help="report stale outputs only")
    args = parser.parse_args(argv)
    paths = [p for p in sorted(HERE.glob("*.ipynb"))
             if not args.names or any(p.name.startswith(n) for n in args.names)]
    if not paths:
        parser.error(f"no notebook in {HERE} starts with {' or '.join(args.names)}")
    checkout_kernelspec()
    status = 0
    for path in paths:
        start = time.perf_counter()
        if args.check:
            problems = output_differences(nbformat.read(path, as_version=4), execute(path))
            verdict = "stale" if problems else "up to date"
        else:
            problems = refresh(path)
            verdict = "NOT saved: unexpected errors" if problems else "saved"
        print(f"{path.name}: {verdict} ({time.perf_counter() - start:.1f} s)")
        for problem in problems:
            print("  " + problem.replace("\n", "\n  "))
        status |= bool(problems)
    return status


if __name__ == "__main__":
    sys.exit(main())
