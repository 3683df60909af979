"""Warnings and errors shared across dpkit."""
from __future__ import annotations

__all__ = ["PrivacyLeakWarning", "BudgetExceededError", "FeasibilityError", "DPKitError"]


class DPKitError(Exception):
    """Base class of dpkit's own errors."""


class PrivacyLeakWarning(UserWarning):
    """Something looked at private data outside the privacy budget.

    Emitted, for example, when rescaling bounds or norms are computed from the
    data itself (thesis Sec 3.1 rescales with the data's own min/max) or when a
    sensitivity depends on the data (thesis Lemma 2.7 with the true mean norm).
    Mirrors ``diffprivlib.utils.PrivacyLeakWarning``.
    """


class BudgetExceededError(DPKitError, ValueError):
    """A spend would take the ledger beyond its privacy budget."""


class FeasibilityError(DPKitError, ValueError):
    """A requested computation is beyond the documented feasible size (grid, net, LP)."""
