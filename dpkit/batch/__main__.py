"""``python -m dpkit.batch``: see :mod:`dpkit.batch.runner`."""
from dpkit.batch.runner import main

raise SystemExit(main())
