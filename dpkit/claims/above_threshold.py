"""Claims of notebook 52 on the sparse vector technique: AboveThreshold (D–R Alg 1, Thm 3.23/3.24).

Its privacy (the variant without threshold noise as negative control), its sampler against the exact law and its
accuracy bound. Statistical checks follow :mod:`dpkit.claims`'s false-alarm budget and retry rule.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from dpkit.claims.results import TableResult, retried
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.evaluation.verdicts import Check, check
from dpkit.mechanisms.sparse_vector import AboveThreshold

__all__ = ["above_threshold_privacy", "above_threshold_sampler", "above_threshold_accuracy"]


def above_threshold_privacy(
    *, epsilon: float = 1.0, k: int = 20, n_instances: int = 60, rng: RNGLike = None,
) -> tuple[Check, Check]:
    """D–R Thm 3.23: AboveThreshold's exact max log-ratio ≤ ε on adversarial ±1 neighbours; without threshold noise it is not.

    ``n_instances`` random query vectors in [−6, 6]^k, each with the two neighbours "+1 on all but
    the last, −1 on the last" and its negation, plus the "far above" instance (all queries at 2,
    where each ⊥ leaks ε/4 without threshold noise). Returns ``"D-R Thm 3.23"`` (claim) and
    ``"SVT without threshold noise"`` (negative control, loss grows like (k − 1)ε/4).
    """
    g = resolve_rng(rng)
    at = AboveThreshold(epsilon=epsilon, threshold=0.0)
    broken = AboveThreshold(epsilon=epsilon, threshold=0.0, variant="no-threshold-noise")
    worst_ok, worst_bad = 0.0, 0.0
    up = np.r_[np.ones(k - 1), -1.0]
    pairs = []
    for _ in range(n_instances):
        f = g.uniform(-6, 6, k)
        pairs += [(f, f + up), (f, f - up)]
    f_far = np.full(k, 2.0)
    pairs.append((f_far, f_far + up))
    for f, f2 in pairs:
        worst_ok = max(worst_ok, at.max_log_ratio(f, f2))
        worst_bad = max(worst_bad, broken.max_log_ratio(f, f2))
    return (
        check("D-R Thm 3.23", f"AboveThreshold: exact max log-ratio ≤ ε on adversarial ±1 neighbours (k = {k})", worst_ok,
              epsilon + 1e-8, relation="<=", note=f"{len(pairs)} neighbour pairs"),
        check("SVT without threshold noise", "the variant without threshold noise: exact max log-ratio ≤ ε", worst_bad,
              epsilon + 1e-8, relation="<=", expected="FAIL", note="grows like (k − 1)ε/4"),
    )


@retried
def above_threshold_sampler(
    *, epsilon: float = 1.0, k: int = 20, n_samples: int = 200_000, gamma: float = 1e-3, rng: RNGLike = None,
) -> Check:
    """AboveThreshold's sampler against its exact (quadrature) halting-index law: χ² p-value ≥ γ.

    Queries uniform in [−4, 4]^k; bins with expected count < 5 are pooled.
    """
    g = resolve_rng(rng)
    at = AboveThreshold(epsilon=epsilon, threshold=0.0)
    f = g.uniform(-4, 4, k)
    p = at.output_probabilities(f)
    obs = np.bincount(at.sample(f, n_samples, rng=g), minlength=k + 1)
    keep = p * n_samples >= 5
    o_bins = np.r_[obs[keep], obs[~keep].sum()] if (~keep).any() else obs[keep]
    e_bins = np.r_[p[keep], p[~keep].sum()] if (~keep).any() else p[keep]
    chi = stats.chisquare(o_bins, e_bins / e_bins.sum() * o_bins.sum())
    return check("AboveThreshold sampler", "sampled halting index matches the exact quadrature law (χ² p-value ≥ γ)", chi.pvalue,
                 gamma, relation=">=", confidence=1 - gamma)


def above_threshold_accuracy(
    *, epsilon: float = 1.0, ks: Sequence[int] = (1, 10, 100), betas: Sequence[float] = (0.01, 0.05),
) -> TableResult:
    """D–R Thm 3.24: AboveThreshold is (α, β)-accurate with ``α = 8(ln k + ln(2/β))/ε``: exact ``P(fail)/β ≤ 1``.

    The hardest instance: k − 1 queries just below ``−α`` and the last just above ``α``. Table
    columns: ``k, beta, alpha, p_fail``.
    """
    at = AboveThreshold(epsilon=epsilon, threshold=0.0)
    worst_fail, rows = 0.0, []
    for k in ks:
        for beta in betas:
            a = at.accuracy_alpha(k, beta)
            pf = at.failure_probability(np.r_[np.full(k - 1, -a - 1e-9), a + 1e-9])
            worst_fail = max(worst_fail, pf / beta)
            rows.append(dict(k=k, beta=beta, alpha=a, p_fail=pf))
    c = check("D-R Thm 3.24", "AboveThreshold (α, β)-accuracy, α = 8(ln k + ln(2/β))/ε: exact P(fail)/β ≤ 1", worst_fail, 1.0,
              relation="<=")
    return TableResult(checks=(c,), table=pd.DataFrame(rows))
