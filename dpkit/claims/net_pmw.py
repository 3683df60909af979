"""Claims of notebook 52 on releasing many counting queries: the net mechanism and private multiplicative weights.

The net mechanism (thesis Alg 3, Thm 1.16, Prop 1.20; D–R Thm 4.2 on {0, 1}³) and PMW (D–R Thm 4.14: the fixed-point α
and a run whose max error must be ≤ 3α, the misprinted threshold as control). Statistical checks follow
:mod:`dpkit.claims`'s false-alarm budget and retry rule.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd

from dpkit.claims.results import TableResult, retried
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.evaluation.verdicts import Check, check
from dpkit.mechanisms.net import NetMechanism, count_databases, enumerate_databases
from dpkit.mechanisms.pmw import PrivateMultiplicativeWeights

__all__ = ["cube_queries", "net_mechanism", "net_size", "PMW_PRINTED_EXAMPLE", "pmw_alpha_example", "pmw_instance",
           "pmw_accuracy", "pmw_printed_threshold"]


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


#: The feasibility example of docs/science/foundations.md (*Private multiplicative weights*):
#: |X| = 441, |Q| = 200, ε = 1, β = 0.05, n = 10⁷ → α = 0.0744, c = 4,404.
PMW_PRINTED_EXAMPLE: dict[str, float] = dict(domain_size=441, n_queries=200, epsilon=1.0, beta=0.05, n=10**7, alpha=0.0744,
                                             cutoff=4404)


def pmw_alpha_example(*, example: dict[str, float] | None = None) -> Check:
    """D–R Thm 4.14 (δ = 0): the fixed-point α and cutoff c of the feasibility example (α = 0.0744, c = 4,404;
    docs/science/foundations.md).

    Statistic: ``max(|α − α_printed|/5e-5, |c − c_printed|/0.5)`` (deviation in half units of the printed
    last digit; ≤ 1 passes). α from :func:`~dpkit.mechanisms.pmw.pmw_alpha` (brentq), c = ⌈4 ln|X|/α²⌉.
    """
    ex = dict(PMW_PRINTED_EXAMPLE if example is None else example)
    mech = PrivateMultiplicativeWeights(epsilon=ex["epsilon"], beta=ex["beta"], n=int(ex["n"]),
                                        domain_size=int(ex["domain_size"]), n_queries=int(ex["n_queries"]))
    a, c = mech.alpha_fixed_point, mech.cutoff
    dev = max(abs(a - ex["alpha"]) / 5e-5, abs(c - ex["cutoff"]) / 0.5)
    return check("D-R Thm 4.14 (α, c)",
                 f"PMW fixed point at |X| = {ex['domain_size']:g}, |Q| = {ex['n_queries']:g}, ε = {ex['epsilon']:g}, "
                 f"β = {ex['beta']:g}, "
                 f"n = {ex['n']:g}: α = {ex['alpha']:g}, c = {ex['cutoff']:g} as printed (deviation in half last digits)",
                 dev, 1.0, relation="<=", note=f"α = {a:.6f}, c = {c}, 3α = {3 * a:.4f}")


def pmw_instance(
    *, grid: int = 21, n_queries: int = 200, width: float = 0.3, rng: RNGLike = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The feasibility example's instance: X = a ``grid × grid`` grid on [−1, 1]², ``n_queries`` Gaussian-kernel queries.

    Query j is ``exp(−‖z − z_j‖²/(2·width²))`` (values in (0, 1]); the data distribution x is one
    concentrated Gaussian bump (centre μ uniform on [−0.6, 0.6]², sd 0.08) on the grid; the query
    centres are μ (the query about the data's mode) and ``n_queries − 1`` points uniform on [−1, 1]².
    The uninformed answers ``f(x⁰)`` (x⁰ uniform) are then off by ≈ 0.7 on the first query, far above
    3α, so a PMW that never updates fails visibly. Returns ``(X, queries, x)``.
    """
    g = resolve_rng(rng)
    t = np.linspace(-1.0, 1.0, grid)
    Z = np.array([(a, b) for a in t for b in t])
    mu = g.uniform(-0.6, 0.6, 2)
    centres = np.vstack([mu, g.uniform(-1.0, 1.0, (n_queries - 1, 2))])
    F = np.exp(-((Z[None, :, :] - centres[:, None, :]) ** 2).sum(-1) / (2 * width**2))
    dens = np.exp(-((Z - mu) ** 2).sum(-1) / (2 * 0.08**2))
    return Z, F, dens / dens.sum()


def _pmw_run(
    variant: str, epsilon: float, n: int, grid: int, n_queries: int, gamma: float, rng: RNGLike,
) -> tuple[float, pd.DataFrame]:
    g = resolve_rng(rng)
    Z, F, x = pmw_instance(grid=grid, n_queries=n_queries, rng=g)
    mech = PrivateMultiplicativeWeights(epsilon=epsilon, beta=gamma, n=n, domain_size=len(Z), n_queries=n_queries,
                                        variant=variant)
    with warnings.catch_warnings():  # the data-aware adversary is the point of an accuracy check (no ledger)
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        run = mech.run(x, F, adaptive=True, rng=g)
    err = np.abs(F[run.query_index[run.query_index >= 0]] @ x - run.answers[: int((run.query_index >= 0).sum())])
    fail = run.halted or run.n_updates > mech.cutoff or not np.all(np.isfinite(err))
    stat = math.inf if fail else float(err.max())
    row = dict(variant=variant, X=len(Z), Q=n_queries, n=n, epsilon=epsilon, beta=gamma, alpha=mech.alpha, cutoff=mech.cutoff,
               threshold=mech.threshold, max_error=stat, bound=3 * mech.alpha, updates=run.n_updates, halted=run.halted,
               initial_max_error=float(np.max(np.abs(F @ x - F.mean(axis=1)))))
    return stat, pd.DataFrame([row])


@retried
def pmw_accuracy(
    *, epsilon: float = 1.0, n: int = 10**7, grid: int = 21, n_queries: int = 200, gamma: float = 1e-3, rng: RNGLike = None,
) -> TableResult:
    """D–R Thm 4.14: a run of private multiplicative weights has max error ≤ 3α, with β = γ.

    Instance :func:`pmw_instance`; the stream is adaptive (each step asks the not-yet-asked query
    with the largest current error: an adversary who knows the data, so the run is not private and
    spends no budget; the claim is about accuracy). α is that of the run's cutoff (``T/2``,
    :attr:`~dpkit.mechanisms.pmw.PrivateMultiplicativeWeights.alpha`) at failure probability
    ``β = γ``, so a correct implementation fails with probability ≤ γ (the per-test level). An early
    halt of NumericSparse or more than c updates counts as a failure (statistic ∞). Table columns:
    ``variant, X, Q, n, epsilon, beta, alpha, cutoff, threshold, max_error, bound, updates, halted,
    initial_max_error``.
    """
    stat, table = _pmw_run("correct", epsilon, n, grid, n_queries, gamma, rng)
    c = check("D-R Thm 4.14 (PMW run)",
              "private multiplicative weights (NumericSparse, δ = 0): max_i |f_i(x) − a_i| ≤ 3α (β = γ)",
              stat, float(table.bound[0]), relation="<=", confidence=1 - gamma,
              note=f"{int(table.updates[0])} updates ≤ c = {int(table.cutoff[0])}; "
                   f"uninformed error {table.initial_max_error[0]:.3f}")
    return TableResult(checks=(c,), table=table)


def pmw_printed_threshold(
    *, epsilon: float = 1.0, n: int = 10**7, grid: int = 21, n_queries: int = 200, gamma: float = 1e-3, rng: RNGLike = None,
) -> TableResult:
    """Negative control: PMW with the misprinted threshold ``T ← ⌈1/α⌉`` (*erratum-dr-pmw-constants*) claimed 3α-accurate.

    The threshold is never crossed, so every answer is the uninformed ``f(x⁰)``; on
    :func:`pmw_instance` that error exceeds 3α and the check must FAIL.
    """
    stat, table = _pmw_run("printed-threshold", epsilon, n, grid, n_queries, gamma, rng)
    c = check("PMW printed T = ⌈1/α⌉", "PMW with the printed threshold ⌈1/α⌉: max_i |f_i(x) − a_i| ≤ 3α", stat,
              float(table.bound[0]), relation="<=", confidence=1 - gamma, expected="FAIL",
              note=f"threshold {table.threshold[0]:g}")
    return TableResult(checks=(c,), table=table)
