"""Claims of notebook 52: exponential mechanism, report noisy max, randomized response, sparse vector, net mechanism.

Exact oracles first (enumeration and 1-D quadrature), Monte Carlo second (D–R §3.0): the exponential mechanism's
privacy and utility (Thm 1.14, 1.15), report noisy max (D–R Claim 3.9, Thm 3.13, with misused scales as negative
controls), randomized response (D–R Claim 3.5), AboveThreshold (D–R Alg 1, Thm 3.23/3.24), the net mechanism (Alg 3,
Thm 1.16, Prop 1.20) and private multiplicative weights (D–R Thm 4.14). Statistical checks follow :mod:`dpkit.claims`'s
false-alarm budget and retry rule; the sparse-vector checks are :mod:`dpkit.claims.above_threshold`, the net
mechanism and PMW :mod:`dpkit.claims.net_pmw`.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from dpkit.claims.above_threshold import above_threshold_accuracy, above_threshold_privacy, above_threshold_sampler
from dpkit.claims.net_pmw import net_mechanism, net_size, pmw_accuracy, pmw_alpha_example, pmw_printed_threshold
from dpkit.claims.results import NotebookRecorder, NotebookRun, TableResult, retried
from dpkit.core.rng import RNGLike, resolve_rng, spawn
from dpkit.core.validation import check_positive_int, check_seed
from dpkit.evaluation.audit import AuditResult, audit
from dpkit.evaluation.oracles import report_noisy_max_probabilities
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check
from dpkit.mechanisms.exponential import Exponential, ReportNoisyMax
from dpkit.mechanisms.randomized_response import RandomizedResponse

__all__ = [
    "RNM_NEIGHBOURS",
    "exponential_privacy",
    "exponential_utility",
    "report_noisy_max_audit",
    "report_noisy_max_monotone_misuse_audit",
    "randomized_response_exact",
    "randomized_response_estimator",
    "RNM_EXACT_VARIANTS",
    "report_noisy_max_exact",
    "notebook_checks",
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


#: The report-noisy-max variants of :func:`report_noisy_max_exact`:
#: (check id, claim, noise, scale in units of Δ/ε, neighbours, expected verdict).
RNM_EXACT_VARIANTS: tuple[tuple[str, str, str, float, str, str], ...] = (
    ("D-R Claim 3.9 (exact)", "report noisy max, Lap(Δ/ε), monotone neighbours c' = c − s, s ∈ {0,1}^m", "laplace", 1.0,
     "monotone", "PASS"),
    ("RNM general (exact)", "report noisy max, Lap(2Δ/ε), non-monotone neighbours c' = c + s, s ∈ {−1,0,1}^m", "laplace", 2.0,
     "non-monotone", "PASS"),
    ("D-R Thm 3.13 (exact)", "one-sided exponential noise, rate ε/(2Δ), non-monotone neighbours", "exponential", 2.0,
     "non-monotone", "PASS"),
    ("D-R Thm 3.13, monotone (exact)", "one-sided exponential noise, rate ε/Δ, monotone neighbours", "exponential", 1.0,
     "monotone", "PASS"),
    ("RNM Lap(Δ/ε) on non-monotone (exact)", "Lap(Δ/ε) (valid only for monotone neighbours) on non-monotone neighbours",
     "laplace", 1.0, "non-monotone", "FAIL"),
    ("Exp rate ε/Δ on non-monotone (exact)", "one-sided exponential, rate ε/Δ (monotone only) on non-monotone neighbours",
     "exponential", 1.0, "non-monotone", "FAIL"),
)


def _rnm_pairs(kind: str, ms: Sequence[int], gaps: Sequence[float], n_random: int, g: np.random.Generator) -> list:
    """Neighbouring count vectors: structured worst cases (output 0 far below the rest gains Δ on all others) and random ones."""
    pairs = []
    for m in ms:
        for gap in gaps:
            c = np.zeros(m)
            c[0] = -gap
            s = -np.ones(m)
            s[0] = 0.0 if kind == "monotone" else 1.0  # monotone: the others lose 1; non-monotone: +1 on 0, −1 elsewhere
            pairs.append((c, c + s))
    for _ in range(n_random):
        m = int(g.integers(2, 7))
        c = g.integers(0, 21, m).astype(float)
        s = -g.integers(0, 2, m).astype(float) if kind == "monotone" else g.integers(-1, 2, m).astype(float)
        pairs.append((c, c + s))
    if kind == "non-monotone":
        pairs.append(tuple(np.asarray(v, dtype=float) for v in RNM_NEIGHBOURS))  # the auditor's pair
    return pairs


def report_noisy_max_exact(
    *, epsilon: float = 1.0, ms: Sequence[int] = (2, 3, 5), gaps: Sequence[float] = (0.0, 5.0, 20.0), n_random: int = 20,
    rng: RNGLike = None,
) -> TableResult:
    """D–R Claim 3.9 and Thm 3.13 by exact quadrature: ``max |ln P(i|c)/P(i|c')| ≤ ε`` over outputs and neighbours.

    ``P(argmax = i) = ∫ f(x − c_i) Π_{j≠i} F(x − c_j) dx``
    (:func:`~dpkit.evaluation.oracles.report_noisy_max_probabilities`, :func:`scipy.integrate.quad`,
    relative tolerance 1e-12). Neighbours (Δ = 1): for every m in ``ms`` and gap in ``gaps`` the
    structured worst case (output 0 at ``−gap``; monotone: every other count −1; non-monotone: +1 on 0,
    −1 elsewhere), plus ``n_random`` random pairs (m ∈ 2..6, counts in 0..20, s ∈ {0,1}^m resp.
    {−1,0,1}^m); the non-monotone set also holds the auditor's :data:`RNM_NEIGHBOURS`. One check per
    :data:`RNM_EXACT_VARIANTS` (four claims, two negative controls: the scale valid only for monotone
    neighbours used on non-monotone ones is 2ε-DP), each with bound ``ε + tol`` where ``tol`` is the
    largest first-order log error ``err_P/P + err_P'/P'`` of the quadrature plus 1e-12 (float64);
    and ``"RNM exact (tight)"``: the smallest worst-case loss of the four claims, in units of ε, is
    ≥ 0.999 (the losses tend to ε as the gap grows: the bound is attained, not vacuous).

    Table columns: ``variant, noise, scale, neighbours, n_pairs, worst, tol, audit_pair``
    (``audit_pair``: the exact loss on :data:`RNM_NEIGHBOURS`, next to the auditor's ``ε_lb``).
    """
    g = resolve_rng(rng)
    pairs = {kind: _rnm_pairs(kind, ms, gaps, n_random, g) for kind in ("monotone", "non-monotone")}
    checks, rows, tight = [], [], []
    for cid, claim, noise, factor, kind, expected in RNM_EXACT_VARIANTS:
        scale = factor / epsilon
        worst, tol, audit_pair = 0.0, 0.0, float("nan")
        for j, (c, c2) in enumerate(pairs[kind]):
            p, ep = report_noisy_max_probabilities(c, scale, noise)
            q, eq = report_noisy_max_probabilities(c2, scale, noise)
            loss = float(np.max(np.abs(np.log(p) - np.log(q))))
            worst, tol = max(worst, loss), max(tol, float(np.max(ep / p + eq / q)))
            if kind == "non-monotone" and j == len(pairs[kind]) - 1:
                audit_pair = loss
        bound = epsilon + tol + 1e-12
        checks.append(check(cid, f"{claim}: exact max |ln P(i|c)/P(i|c')| ≤ ε (quadrature)", worst, bound, relation="<=",
                            expected=expected, note=f"{len(pairs[kind])} pairs; quadrature tolerance {tol:.1e}"))
        if expected == "PASS":
            tight.append(worst / epsilon)
        rows.append(dict(variant=cid, noise=noise, scale=scale, neighbours=kind, n_pairs=len(pairs[kind]), worst=worst, tol=tol,
                         audit_pair=audit_pair))
    checks.append(check("RNM exact (tight)", "the four report-noisy-max claims are attained: min over them of the worst loss/ε",
                        min(tight), 0.999, relation=">=", note="the loss tends to ε as output 0 falls far below the rest"))
    return TableResult(checks=tuple(checks), table=pd.DataFrame(rows))


def notebook_checks(
    seed: int, quick: bool, false_alarm: float, *, epsilon: float, n_instances: int, range_sizes: Sequence[int],
    audit_samples: int, rr_n: int, rr_reps: int, svt_k: int, svt_instances: int, svt_samples: int,
) -> NotebookRun:
    """Every check and table row of notebook 52 (``52_exponential_net``) run with these parameters.

    The notebook's parameters in lower case; ``quick`` applies its QUICK sizes. Seven streams are spawned from
    ``seed`` (exponential mechanism and net, utility, report noisy max, randomized response, sparse vector, exact
    report noisy max, PMW); the budget ``false_alarm`` is split over the four statistical checks. ``parts``:
    ``util``, ``rnm_exact``, ``rr``, ``net`` (the sections' results).
    """
    seed = check_seed(seed)
    rr_reps = check_positive_int(rr_reps, name="rr_reps")
    if quick:
        n_instances, range_sizes, audit_samples, rr_n, rr_reps, svt_k, svt_instances, svt_samples = (
            40, [2, 10, 1000], 100000, 1000, 500, 10, 12, 50000)
    net_m = 6 if quick else 9  # rows of the net's databases (|N| grows like 8^m / m!)
    rnm_exact = dict(ms=(2, 5), gaps=(0.0, 20.0), n_random=4) if quick else dict(ms=(2, 3, 5), gaps=(0.0, 5.0, 20.0), n_random=20)
    params = dict(SEED=seed, QUICK=quick, EPSILON=epsilon, N_INSTANCES=n_instances, RANGE_SIZES=range_sizes,
                  AUDIT_SAMPLES=audit_samples, RR_N=rr_n, RR_REPS=rr_reps, SVT_K=svt_k, SVT_INSTANCES=svt_instances,
                  SVT_SAMPLES=svt_samples, FALSE_ALARM=false_alarm)
    g_exp, g_util, g_rnm, g_rr, g_svt, g_rnm_exact, g_pmw = spawn(seed, 7)  # spawn(seed, n)[i] does not depend on n
    budget = FalseAlarmBudget(false_alarm, n_tests=4)  # RNM general, the RR estimator, the AboveThreshold sampler, the PMW run
    gamma = budget.level  # the per-test level of every statistical check (negative controls too)
    out = NotebookRecorder()
    out.add(*exponential_privacy(epsilon=epsilon, n_instances=n_instances, rng=g_exp))
    util = exponential_utility(epsilon=epsilon, range_sizes=range_sizes, rng=g_util)
    out.table("thm115", util.table.to_dict("records"))
    out.add(*util.checks)
    for variant in (report_noisy_max_audit, report_noisy_max_monotone_misuse_audit):
        res = variant(epsilon=epsilon, n_samples=audit_samples, gamma=gamma, rng=g_rnm)
        out.table("rnm", res.table.to_dict("records"))
        out.add(*res.checks)
    rnm_ex = report_noisy_max_exact(epsilon=epsilon, rng=g_rnm_exact, **rnm_exact)
    out.table("rnm_exact", rnm_ex.table.to_dict("records"))
    out.add(*rnm_ex.checks)
    out.add(randomized_response_exact())
    rr = randomized_response_estimator(n=rr_n, reps=rr_reps, gamma=gamma, rng=g_rr)
    out.table("rr", rr.table.to_dict("records"))
    out.add(*rr.checks)
    out.add(*above_threshold_privacy(epsilon=epsilon, k=svt_k, n_instances=svt_instances, rng=g_svt))
    out.add(above_threshold_sampler(epsilon=epsilon, k=svt_k, n_samples=svt_samples, gamma=gamma, rng=g_svt))
    svt = above_threshold_accuracy(epsilon=epsilon)
    out.table("svt_accuracy", svt.table.to_dict("records"))
    out.add(*svt.checks)
    out.add(pmw_alpha_example())
    for variant in (pmw_accuracy, pmw_printed_threshold):
        res = variant(epsilon=epsilon, gamma=gamma, rng=g_pmw)
        out.table("pmw", res.table.to_dict("records"))
        out.add(*res.checks)
    net = net_mechanism(epsilon=epsilon, n=200, m=net_m, rng=g_exp)
    out.add(*net.checks)
    out.add(net_size(domain_size=8, m_max=39))
    out.table("net", net.table.to_dict("records"))
    return out.finish(params, budget, util=util, rnm_exact=rnm_ex, rr=rr, net=net)
