"""``python -m dpkit.batch``: see :mod:`dpkit.batch.runner` (commands) and :mod:`dpkit.batch.cli` (exit status)."""
from dpkit.batch.cli import main

raise SystemExit(main())
