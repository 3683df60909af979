"""Checks of the parameter sweeps (thesis Sec 3.2, Figs 3.1 and 3.2; notebooks 21 and 22)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scipy.stats import spearmanr

from dpkit.evaluation.verdicts import Check, check
from dpkit.experiments.protocol import RunRecord

__all__ = ["budget_checks", "interior_optimum", "no_clear_trend"]


def budget_checks(results: dict[Any, list[RunRecord]], *, epsilon: float) -> list[Check]:
    """Every run of the sweep spends at most the stated ε through its ledger (one check per run)."""
    return [check(f"budget-{value}-rep{r.rep}", "each run spends at most the stated ε through the ledger",
                  r.eps_spent, epsilon * (1 + 1e-12)) for value, recs in results.items() for r in recs]


def interior_optimum(rows: Sequence[dict[str, Any]], *, claim_id: str = "thesis-interior-kappa",
                     name: str = "κ") -> tuple[Check, float, bool]:
    """Fig 3.1's claim: the smallest mean worst error lies strictly inside the swept grid.

    Returns the check, the best value and whether it is interior. An empirical claim of the
    thesis: the verdict reports what this run shows.
    """
    best = min(rows, key=lambda r: r["abs_mean"])
    values = [r["value"] for r in rows]
    interior = bool(best["value"] not in (min(values), max(values)))
    c = check(claim_id, f"Fig 3.1 claim: an interior optimal {name} exists (1 = yes)", float(interior), 1.0,
              relation=">=", note="an empirical claim of the thesis; the verdict reports what this run shows")
    return c, float(best["value"]), interior


def no_clear_trend(rows: Sequence[dict[str, Any]], *, threshold: float = 0.8) -> tuple[Check, float]:
    """Fig 3.2's claim: no clear direction of the error in k (|Spearman ρ| < ``threshold``).

    Returns the check and ρ (0 when fewer than three values).
    """
    values = [r["value"] for r in rows]
    errs = [r["abs_mean"] for r in rows]
    rho = float(spearmanr(values, errs).statistic) if len(rows) > 2 else 0.0
    c = check("thesis-no-trend-k", f"Fig 3.2 claim: no clear direction of the error in k (|Spearman ρ| < {threshold:g})",
              abs(rho), threshold, relation="<",
              note="an empirical claim of the thesis; the verdict reports what this run shows")
    return c, rho
