"""Checks of the parameter sweeps (thesis Sec 3.2, Figs 3.1 and 3.2; notebooks 21 and 22).

Both shape claims are statistical claims charged to the notebook's
:class:`~dpkit.evaluation.verdicts.FalseAlarmBudget`, on the sweep's paired repetitions (common random numbers,
:func:`dpkit.experiments.sweeps.sweep`); a true claim FAILs with probability at most the level:

1. Fig 3.1, *an interior optimal κ exists*: refuted when an end of the grid beats every interior value by exact
   one-sided sign tests (intersection–union over the interior, Bonferroni over the two ends).
2. Fig 3.2, *no clear direction of the error in k*: refuted by Page's L test for an ordered trend (Page 1963), in
   both directions; the Spearman ρ of the means is reported as a description.

The tests' validity: docs/science/derivations.md.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import binom, page_trend_test, spearmanr

from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check
from dpkit.experiments.records import ReleaseRecord

__all__ = ["budget_checks", "paired_errors", "interior_optimum", "no_clear_trend"]


def budget_checks(results: dict[Any, list[ReleaseRecord]], *, epsilon: float) -> list[Check]:
    """Every run of the sweep spends at most the stated ε through its ledger (one check per run)."""
    return [check(f"budget-{value}-rep{r.rep}", "each run spends at most the stated ε through the ledger",
                  r.eps_spent, epsilon * (1 + 1e-12)) for value, recs in results.items() for r in recs]


def paired_errors(results: dict[Any, list[ReleaseRecord]]) -> tuple[list[Any], np.ndarray]:
    """The swept values (ascending) and the worst absolute errors ``E[i, r]`` of value ``i`` in repetition ``r``.

    Raises ``ValueError`` unless every value has the same repetitions (the pairing the tests rely on).
    """
    values = sorted(results)
    reps = [sorted(r.rep for r in results[v]) for v in values]
    if not values or any(r != reps[0] for r in reps) or not reps[0]:
        raise ValueError("every swept value needs the same repetitions (a paired sweep); got "
                         f"{dict(zip(values, (len(r) for r in reps)))}")
    E = np.array([[r.abs for r in sorted(results[v], key=lambda x: x.rep)] for v in values], dtype=float)
    return values, E


def _sign_p(wins: int, n: int) -> float:
    """Exact one-sided sign-test p-value ``P(Bin(n, 1/2) ≥ wins)``."""
    return float(binom.sf(wins - 1, n, 0.5))


def interior_optimum(results: dict[Any, list[ReleaseRecord]], *, budget: FalseAlarmBudget,
                     claim_id: str = "thesis-interior-kappa", name: str = "κ") -> tuple[Check, float, bool]:
    """Fig 3.1's claim, an interior optimal ``name``, tested against the ends of the grid (module docstring).

    Returns the check (statistic: the refutation's p-value, PASS when it exceeds ``budget.level``), the value
    with the smallest mean worst error and whether that value is interior (a description of this run).
    """
    values, E = paired_errors(results)
    if len(values) < 3:
        raise ValueError(f"an interior optimum needs at least 3 swept values; got {values}")
    n = E.shape[1]
    ends = {values[0]: E[0], values[-1]: E[-1]}
    p_end = {e: max(_sign_p(int(np.sum(row < E[i])), n) for i in range(1, len(values) - 1)) for e, row in ends.items()}
    p = min(1.0, 2.0 * min(p_end.values()))
    means = E.mean(axis=1)
    best = values[int(np.argmin(means))]
    interior = best not in (values[0], values[-1])
    c = check(claim_id, f"Fig 3.1 claim: an interior optimal {name} exists (not refuted: no end of the grid beats every "
                        "interior value in significantly more than half of the paired repetitions; p-value)",
              p, budget.level, relation=">", confidence=budget.confidence,
              note=f"exact sign tests, intersection–union over the {len(values) - 2} interior values, Bonferroni over "
                   f"the two ends; {n} paired repetitions; smallest mean at {name} = {best:g} "
                   f"({'interior' if interior else 'an end'})")
    return c, float(best), bool(interior)


def no_clear_trend(results: dict[Any, list[ReleaseRecord]], *, budget: FalseAlarmBudget,
                   name: str = "k") -> tuple[Check, float]:
    """Fig 3.2's claim, no clear direction of the error in ``name``, tested by Page's L test (module docstring).

    Returns the check (statistic: the two-sided p-value, PASS when it exceeds ``budget.level``) and the
    Spearman ρ between the values and the mean worst errors (a description of this run).
    """
    values, E = paired_errors(results)
    if len(values) < 3:
        raise ValueError(f"a trend test needs at least 3 swept values; got {values}")
    blocks = E.T  # repetitions × values (ascending)
    if blocks.shape[0] < 2:
        raise ValueError("Page's trend test needs at least 2 repetitions")
    p_up = float(page_trend_test(blocks).pvalue)
    p_down = float(page_trend_test(blocks[:, ::-1]).pvalue)
    p = min(1.0, 2.0 * min(p_up, p_down))
    rho = float(spearmanr(values, E.mean(axis=1)).statistic)
    c = check("thesis-no-trend-k", f"Fig 3.2 claim: no clear direction of the error in {name} (not refuted by Page's "
                                   "trend test in either direction; p-value)",
              p, budget.level, relation=">", confidence=budget.confidence,
              note=f"Page's L test over {E.shape[1]} paired repetitions × {len(values)} values, Bonferroni over the two "
                   f"directions (p_up = {p_up:.3g}, p_down = {p_down:.3g}); Spearman ρ of the means = {rho:.2f}")
    return c, rho
