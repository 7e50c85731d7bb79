"""``python -m relay_ref`` is the ``relay`` command."""

from relay_ref.cli import main

raise SystemExit(main())
