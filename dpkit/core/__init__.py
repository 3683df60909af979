"""Primitives every other layer builds on: validation, random streams, the privacy ledger and
composition theorems, exceptions, and the release protocol of every method."""
