"""Claims of notebook 52: exponential mechanism, report noisy max, randomized response, sparse vector, net mechanism.

Exact oracles first (enumeration and 1-D quadrature), Monte Carlo second (D–R §3.0):

- :func:`exponential_privacy` — Thm 1.14: exact max log-ratio ≤ ε on random neighbouring utilities, attained;
- :func:`exponential_utility` — Thm 1.15: exact utility tail ≤ e^{−t}, with ties;
- :func:`report_noisy_max_audit` / :func:`report_noisy_max_monotone_misuse_audit` — report noisy max with
  Lap(2Δ/ε) passes the auditor on non-monotone neighbours; Lap(Δ/ε) there is flagged (negative control);
- :func:`randomized_response_exact`, :func:`randomized_response_estimator` — D–R Claim 3.5 and the unbiased estimator;
- :func:`above_threshold_privacy`, :func:`above_threshold_sampler`, :func:`above_threshold_accuracy` — D–R Alg 1,
  Thm 3.23/3.24, with the variant without threshold noise as negative control;
- :func:`net_mechanism` and :func:`net_size` — thesis Alg 3, Thm 1.16, Prop 1.20; D–R Thm 4.2 on {0, 1}³.

Statistical checks: per-test levels, the false-alarm budget and the retry rule as in :mod:`dpkit.claims`.
"""
from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from dpkit.claims.results import TableResult, retried
from dpkit.core.rng import RNGLike, resolve_rng, spawn
from dpkit.evaluation.audit import AuditResult, audit
from dpkit.evaluation.verdicts import Check, check
from dpkit.mechanisms.exponential import Exponential, ReportNoisyMax
from dpkit.mechanisms.net import NetMechanism, count_databases, enumerate_databases
from dpkit.mechanisms.randomized_response import RandomizedResponse
from dpkit.mechanisms.sparse_vector import AboveThreshold

__all__ = [
    "RNM_NEIGHBOURS",
    "exponential_privacy",
    "exponential_utility",
    "report_noisy_max_audit",
    "report_noisy_max_monotone_misuse_audit",
    "randomized_response_exact",
    "randomized_response_estimator",
    "above_threshold_privacy",
    "above_threshold_sampler",
    "above_threshold_accuracy",
    "cube_queries",
    "net_mechanism",
    "net_size",
]

#: Non-monotone neighbouring utilities of report noisy max: one score up by Δ = 1, another down.
RNM_NEIGHBOURS: tuple[np.ndarray, np.ndarray] = (np.array([0.0, 0.0, -1.0]), np.array([1.0, -1.0, -1.0 + 1.0]))


def _max_abs_log_ratio(mech: Exponential, u: np.ndarray, s: np.ndarray) -> float:
    return float(np.max(np.abs(mech.log_probabilities(u) - mech.log_probabilities(u + s))))


def exponential_privacy(*, epsilon: float = 1.0, n_instances: int = 200, rng: RNGLike = None) -> tuple[Check, Check]:
    """Thm 1.14: the exponential mechanism's exact ``max_r |log P(r|D)/P(r|D')|`` is ≤ ε, and the bound is tight.

    Each instance draws a range of 2–49 utilities in [−10, 10] and two neighbours (uniform and ±1
    shifts), plus the adversarial pattern "+Δ on r, −Δ elsewhere" with ``r`` carrying negligible
    mass (the normaliser then moves by the full ``e^{ε/2}``). Returns ``"Thm 1.14"`` (max over all
    pairs ≤ ε) and ``"Thm 1.14 (tight)"`` (the adversarial pattern attains ε up to 1e-6).
    """
    g = resolve_rng(rng)
    mech = Exponential(epsilon=epsilon, sensitivity=1.0)
    worst, adv = 0.0, 0.0
    for _ in range(n_instances):
        R = int(g.integers(2, 50))
        u = g.uniform(-10, 10, R)
        for s in (g.uniform(-1, 1, R), np.sign(g.uniform(-1, 1, R))):
            worst = max(worst, _max_abs_log_ratio(mech, u, s))
        s = -np.ones(R)
        s[0] = 1.0
        u = u.copy()
        u[0] = u.min() - 60.0
        adv = max(adv, _max_abs_log_ratio(mech, u, s))
    return (
        check("Thm 1.14", "exponential mechanism: exact max |log P(r|D)/P(r|D')| ≤ ε over random neighbouring utilities",
              max(worst, adv), epsilon + 1e-9, relation="<=", note=f"{n_instances} instances"),
        check("Thm 1.14 (tight)", "the pattern +Δ on r, −Δ elsewhere attains ε (up to 1e-6)", adv, epsilon - 1e-6, relation=">="),
    )


def exponential_utility(
    *, epsilon: float = 1.0, range_sizes: Sequence[int] = (2, 10, 1000, 100000), ts: np.ndarray | None = None,
    rng: RNGLike = None,
) -> TableResult:
    """Thm 1.15: exact ``P(u* − u(M(D)) ≥ (2Δ/ε)(ln(|R|/|R*|) + t)) ≤ e^{−t}`` (integer utilities in [0, 20], so ties).

    ``ts`` defaults to 41 points on [0, 10]. Statistic: the max ratio to ``e^{−t}``. Table columns:
    ``R, n_opt, t, P_exact, bound``.
    """
    g = resolve_rng(rng)
    mech = Exponential(epsilon=epsilon, sensitivity=1.0)
    ts = np.linspace(0, 10, 41) if ts is None else np.asarray(ts, dtype=float)
    ratio_max, rows = 0.0, []
    for R in range_sizes:
        u = np.round(g.uniform(0, 20, R))  # integer utilities: ties at the optimum
        n_opt = int(np.sum(u == u.max()))
        p = mech.probabilities(u)
        for t in ts:
            thr = u.max() - (2 / epsilon) * (math.log(R / n_opt) + t)
            P = float(p[u <= thr].sum())
            ratio_max = max(ratio_max, P / math.exp(-t))
            rows.append(dict(R=R, n_opt=n_opt, t=t, P_exact=P, bound=math.exp(-t)))
    c = check("Thm 1.15",
              "exact P(u* − u(M(D)) ≥ (2Δ/ε)(ln(|R|/|R*|) + t)) ≤ e^-t, t ∈ [0, 10], |R| up to 10⁵ (max ratio to e^-t)",
              ratio_max, 1.0, relation="<=")
    return TableResult(checks=(c,), table=pd.DataFrame(rows))


def _rnm_audit(monotone: bool, epsilon: float, n_samples: int, gamma: float, rng: RNGLike) -> tuple[AuditResult, pd.DataFrame]:
    rnm = ReportNoisyMax(epsilon=epsilon, sensitivity=1.0, monotone=monotone)
    a = audit(lambda db, g, size=None: rnm.sample(db, size or 1, rng=g), *RNM_NEIGHBOURS, n_samples=n_samples,
              confidence=1 - gamma, rng=rng)
    variant = "monotone-on-nonmonotone" if monotone else "general"
    row = dict(variant=variant, scale=rnm.scale, epsilon_lb=a.epsilon_lb, epsilon_point=a.epsilon_point)
    return a, pd.DataFrame([row])


@retried
def report_noisy_max_audit(
    *, epsilon: float = 1.0, n_samples: int = 400_000, gamma: float = 1e-3, rng: RNGLike = None,
) -> TableResult:
    """Report noisy max with the general calibration Lap(2Δ/ε) on the non-monotone :data:`RNM_NEIGHBOURS`: ``ε_lb ≤ ε``."""
    a, table = _rnm_audit(False, epsilon, n_samples, gamma, rng)
    c = check("RNM (general, Lap(2Δ/ε))", "report noisy max with Lap(2Δ/ε) on non-monotone neighbours: audit ε_lb ≤ ε",
              a.epsilon_lb, epsilon, relation="<=", confidence=1 - gamma, note=f"point {a.epsilon_point:.3f}")
    return TableResult(checks=(c,), table=table)


def report_noisy_max_monotone_misuse_audit(
    *, epsilon: float = 1.0, n_samples: int = 400_000, gamma: float = 1e-3, rng: RNGLike = None,
) -> TableResult:
    """Negative control: Lap(Δ/ε), valid only for monotone neighbours (D–R Claim 3.9), on ±Δ shifts is 2ε-DP; flagged."""
    a, table = _rnm_audit(True, epsilon, n_samples, gamma, rng)
    c = check("RNM (Lap(Δ/ε) on non-monotone)", "Lap(Δ/ε) (valid only for monotone neighbours) used on ±Δ shifts: audit ε_lb ≤ ε",
              a.epsilon_lb, epsilon, relation="<=", confidence=1 - gamma, expected="FAIL", note=f"point {a.epsilon_point:.3f}")
    return TableResult(checks=(c,), table=table)


def randomized_response_exact() -> Check:
    """D–R Claim 3.5: randomized response (coin protocol) is (ln 3)-DP; the exact max log-ratio equals ln 3."""
    return check("D-R Claim 3.5", "randomized response (coin protocol) is (ln 3)-DP: exact max log-ratio ≤ ln 3",
                 RandomizedResponse().max_log_ratio(), math.log(3) + 1e-12, relation="<=", note="tight: equals ln 3")


@retried
def randomized_response_estimator(
    *, n: int = 10_000, reps: int = 2000, shares: Sequence[float] = (0.0, 0.1, 0.5, 0.9), gamma: float = 1e-3,
    rng: RNGLike = None,
) -> TableResult:
    """The coin-protocol estimator ``p̂ = 2·(fraction yes) − 1/2`` is unbiased: max |z| over shares ≤ the two-sided critical value.

    ``reps`` repetitions of ``n`` respondents per share (one spawned stream each); z uses the exact
    estimator variance; critical value at level γ, Bonferroni over the shares. Table columns:
    ``share, mean_estimate, var_ratio, z``.
    """
    g = resolve_rng(rng)
    rr = RandomizedResponse()
    zmax, rows = 0.0, []
    for share in shares:
        bits = (np.arange(n) < round(share * n)).astype(int)
        est = np.array([rr.estimate(rr.release(bits, rng=gr)) for gr in spawn(g, reps)])
        z = (est.mean() - share) / math.sqrt(rr.estimator_variance(share, n) / reps)
        zmax = max(zmax, abs(z))
        var_ratio = est.var(ddof=1) / rr.estimator_variance(share, n)
        rows.append(dict(share=share, mean_estimate=est.mean(), var_ratio=var_ratio, z=z))
    z_crit = stats.norm.ppf(1 - gamma / (2 * len(shares)))  # two-sided, Bonferroni over the shares
    c = check("D-R RR estimator", "p̂ = 2·(fraction yes) − 1/2 is unbiased: max |z| over shares", zmax, z_crit, relation="<=",
              confidence=1 - gamma)
    return TableResult(checks=(c,), table=pd.DataFrame(rows))


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


def cube_queries() -> tuple[np.ndarray, np.ndarray]:
    """The domain ``X = {0, 1}³`` (8 rows) and six counting queries on it (three marginals, three pairwise conjunctions)."""
    dom = np.array(list(itertools.product([0, 1], repeat=3)))
    x0, x1, x2 = dom[:, 0], dom[:, 1], dom[:, 2]
    Q = np.array([x0, x1, x2, x0 * x1, x1 * x2, x0 * x2], dtype=float)
    return dom, Q


def net_mechanism(*, epsilon: float = 1.0, n: int = 200, m: int = 9, rng: RNGLike = None) -> TableResult:
    """Thm 1.16 and D–R Thm 4.2: the net mechanism over all m-row databases of :func:`cube_queries`, exactly.

    A histogram of ``n`` rows is drawn (Dirichlet weights), replace-one neighbours with public n
    (Δ = 1/n). Three checks: ``"Thm 1.16 (privacy)"`` (exact max log-ratio over all neighbours
    ``h − e_i + e_j`` ≤ ε), ``"D-R Thm 4.2 (net exists)"`` (some m-row database answers every query
    within ``√(ln|Q|/m)``) and ``"Thm 1.16 (accuracy)"`` (exact error tails against both accuracy
    statements; max ratio). Table (one row): ``N, m, n, opt, expected_error, privacy_max_log_ratio``.
    """
    g = resolve_rng(rng)
    dom, Qm = cube_queries()
    h = np.bincount(g.choice(len(dom), n, p=g.dirichlet(np.ones(len(dom)))), minlength=len(dom))
    net = NetMechanism(epsilon=epsilon, queries=Qm, candidates=enumerate_databases(len(dom), m), n=n)
    err, p = net.errors(h), net.probabilities(h)
    worst = 0.0
    for i, j in itertools.permutations(range(len(dom)), 2):
        if h[i] == 0:
            continue
        h2 = h.copy()
        h2[i] -= 1
        h2[j] += 1
        worst = max(worst, float(np.max(np.abs(np.log(net.probabilities(h2)) - np.log(p)))))
    opt = float(err.min())
    ratio = 0.0
    for beta in (0.01, 0.05, 0.2):
        ratio = max(ratio, float(p[err > net.error_bound(beta, opt)].sum()) / beta)
    for a in np.linspace(opt, 4 * opt + 0.05, 20):
        ratio = max(ratio, float(p[err > 2 * a].sum()) / min(1.0, net.thesis_beta(a)))
    checks = (
        check("Thm 1.16 (privacy)", "net mechanism: exact max log-ratio over all replace-one neighbours ≤ ε", worst,
              epsilon + 1e-9, relation="<=", note=f"|N| = {net.size}"),
        check("D-R Thm 4.2 (net exists)", "some database of m rows answers every query within √(ln|Q|/m)", opt,
              math.sqrt(math.log(len(Qm)) / m), relation="<="),
        check("Thm 1.16 (accuracy)",
              "exact P(err > OPT + (2Δ/ε)(ln|N| + ln 1/β)) ≤ β and P(err > 2α) ≤ |N|e^(−αε/(2Δ)) (max ratio)",
              ratio, 1.0, relation="<="),
    )
    row = dict(N=net.size, m=m, n=n, opt=opt, expected_error=float(p @ err), privacy_max_log_ratio=worst)
    return TableResult(checks=checks, table=pd.DataFrame([row]))


def net_size(*, domain_size: int = 8, m_max: int = 39) -> Check:
    """Prop 1.20: ``|N_α| ≤ |X|^(ln k/α²)`` — the m-row net has at most ``|X|^m`` members, m = 1..m_max (exact counts)."""
    sizes = [(m, count_databases(domain_size, m)) for m in range(1, m_max + 1)]
    return check("Prop 1.20", f"|N_α| ≤ |X|^(ln k/α²): the m-row net has at most |X|^m members (m = ln k/α²), m ≤ {m_max}",
                 max(math.log(c) / (m * math.log(domain_size)) for m, c in sizes), 1.0, relation="<=",
                 note="statistic: max log|N| / (m log|X|)")
