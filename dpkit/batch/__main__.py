"""The batch command line: :mod:`dpkit.batch.cli` (its commands and exit statuses: docs/guide/batch.md)."""
from dpkit.batch.cli import main

raise SystemExit(main())
