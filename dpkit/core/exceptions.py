"""Warnings and errors shared across dpkit."""
from __future__ import annotations

__all__ = ["PrivacyLeakWarning", "QuickReplacementWarning", "BudgetExceededError", "FeasibilityError", "DPKitError"]


class DPKitError(Exception):
    """Base class of dpkit's own errors."""


class PrivacyLeakWarning(UserWarning):
    """Something looked at private data outside the privacy budget.

    Emitted, for example, when rescaling bounds or norms are computed from the
    data itself (thesis Sec 3.1 rescales with the data's own min/max) or when a
    sensitivity depends on the data (thesis Lemma 2.7 with the true mean norm).
    Mirrors ``diffprivlib.utils.PrivacyLeakWarning``.
    """


class QuickReplacementWarning(UserWarning):
    """A QUICK run replaced values the user gave (data sets, kernel widths) by values the user did not give.

    Emitted by :func:`dpkit.core.quick.quick_values` naming the parameter, the values given and those run instead.
    """


class BudgetExceededError(DPKitError, ValueError):
    """A spend would take the ledger beyond its privacy budget."""


class FeasibilityError(DPKitError, ValueError):
    """A requested computation is beyond the documented feasible size (grid, net, LP)."""
