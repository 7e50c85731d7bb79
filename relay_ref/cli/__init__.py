"""The ``relay`` command line (``relay = "relay_ref.cli:main"``; ``python -m relay_ref``).

One module per subcommand -- ``check`` (with ``derive`` for ``check --derive``), ``run``,
``fmt``, ``import_onnx``, ``rule``, ``opt``, ``ops``, ``doc`` -- each with
``add_parser(subparsers)`` and ``run(args) -> int``; ``app`` builds the parser from them and
holds ``main``; ``_common`` has what they share (exit codes, ``UsageError``, reading files,
colour); ``weights`` reads and writes arrays (the ``.npz`` weights and the
hostile-header-safe ``.npy`` reader); ``outputs`` writes files atomically.

Rule: no module imports another's ``_name``; ``_common`` is private to this package (its
names are public inside it). The CLI uses only the public API and ``relay_ref.repl``
(DESIGN.md section 2; ``tests/test_layering.py`` checks all three).

Exit codes: 0 success; 1 a user error in the program (diagnostics on stderr) or a failed
``fmt --check``; 2 bad command-line usage or an unreadable file; 70 an internal error (a bug
in relay_ref: reported with a short message, the traceback only with ``RELAY_DEBUG=1``).
"""

from relay_ref.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
