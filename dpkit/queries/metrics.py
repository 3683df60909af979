"""The one error metric of the protocol (thesis Sec 3.1): worst absolute and relative error.

Every experiment (tables, sweeps, baselines, leaderboard, widgets, benchmark) compares released
answers with the exact ones through :func:`errors_from_answers`;
:func:`dpkit.queries.evaluate.worst_case_errors` is the same metric with the answers computed.
"""
from __future__ import annotations

import numpy as np

from dpkit.core.validation import check_finite_array
from dpkit.queries.evaluate import WorstCaseErrors, relative_errors

__all__ = ["errors_from_answers"]


def errors_from_answers(estimate: np.ndarray, truth: np.ndarray, *, error_bound: float = 0.0,
                        return_arrays: bool = False) -> WorstCaseErrors:
    """``max_f |q̂_f − q_f|`` and ``max_f |q̂_f − q_f| / q_f`` of released answers against exact ones.

    Parameters
    ----------
    estimate, truth : arrays (Q,)
        Released and exact answers (``truth`` ≥ 0; where it is 0 the relative error is ∞ unless the
        estimate is 0 too, :func:`~dpkit.queries.evaluate.relative_errors`).
    error_bound : float
        Numerical error bound of the answers, carried into the result.
    return_arrays : bool
        Keep the per-query arrays.

    Examples
    --------
    >>> e = errors_from_answers(np.array([0.5, 0.2]), np.array([0.4, 0.25]))
    >>> round(e.abs, 12), round(e.rel, 12), e.argmax_abs
    (0.1, 0.25, 0)
    """
    est = check_finite_array(estimate, name="estimate", ndim=1)
    tru = check_finite_array(truth, name="truth", ndim=1)
    rel = relative_errors(est, tru)
    err = np.abs(est - tru)
    ia, ir = int(np.argmax(err)), int(np.argmax(rel))
    return WorstCaseErrors(
        abs=float(err[ia]), rel=float(rel[ir]), argmax_abs=ia, argmax_rel=ir, error_bound=float(error_bound),
        truth=tru if return_arrays else None, estimate=est if return_arrays else None,
        abs_errors=err if return_arrays else None, rel_errors=rel if return_arrays else None,
    )
