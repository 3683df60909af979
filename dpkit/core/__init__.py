"""Primitives every other layer builds on: validation, random streams, the privacy ledger and accounting (privacy
loss distributions, zCDP), composition theorems, exceptions, paths, thread shares, the QUICK sizes, the
environment's settings, a published table's file (:mod:`dpkit.core.published`) and the generated blocks of a page
(:mod:`dpkit.core.marked`). The release protocol of every method (``Release``, ``MethodBase``) is in
:mod:`dpkit.queries.release`."""
