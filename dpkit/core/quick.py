"""QUICK mode's choice of a list parameter: a part of what the user gave, or a replacement that says so.

:func:`quick_values` keeps the user's values that QUICK runs; only when none of them does, it runs QUICK's own with a
:class:`~dpkit.core.exceptions.QuickReplacementWarning` naming the parameter, what was given and what runs instead.

>>> quick_values(["CRM", "WDBC"], ["WDBC"], name="DATASETS")
['WDBC']
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, TypeVar

from dpkit.core.exceptions import QuickReplacementWarning
from dpkit.core.validation import check_sequence

__all__ = ["quick_values"]

T = TypeVar("T")


def quick_values(given: Sequence[Any], quick: Sequence[T], *, name: str, what: str = "values") -> list[Any]:
    """The values of the list parameter ``name`` that a QUICK run uses.

    Parameters
    ----------
    given : sequence
        The values the user gave (the notebook's parameter after papermill).
    quick : sequence
        The values QUICK runs at most (e.g. ``["WDBC"]``, the smallest data set).
    name : str
        The parameter's name (``"DATASETS"``), for the messages.
    what : str
        What the values are (``"data sets"``), for the warning.

    Returns
    -------
    list
        The entries of ``given`` that are in ``quick``, in the user's order; if there is none, ``list(quick)``,
        with a warning.

    Raises
    ------
    TypeError, ValueError
        When ``given`` or ``quick`` is not a non-empty list (:func:`~dpkit.core.validation.check_sequence`).

    Warns
    -----
    QuickReplacementWarning
        When none of ``given`` is run: the message names ``name``, the values given and the values run instead.
    """
    given_l = check_sequence(given, name=name, distinct=False, what=what)
    quick_l = check_sequence(quick, name=f"QUICK's {name}", distinct=False, what=what)
    kept = [v for v in given_l if v in quick_l]
    if kept:
        return kept
    warnings.warn(f"QUICK replaces {name}={given_l!r} by {quick_l!r}: QUICK runs only the {what} {quick_l!r} and "
                  f"none of them was given; run without QUICK to use {name}={given_l!r}",
                  QuickReplacementWarning, stacklevel=2)
    return quick_l
