"""Primitives every other layer builds on: validation, random streams, the privacy ledger and accounting (privacy
loss distributions, zCDP), composition theorems, exceptions, paths, thread shares, the QUICK sizes and the
environment's settings. The release protocol of every method (``Release``, ``MethodBase``) is in
:mod:`dpkit.queries.release`."""
