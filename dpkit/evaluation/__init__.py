"""Evaluation: the empirical privacy auditor, exact oracles, reconstruction attacks and the
check/verdict value type every claim returns."""
