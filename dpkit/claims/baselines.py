"""Checks of the baselines comparison (notebook ``40_baselines``): each can fail.

The ledger totals equal the stated budgets; the noise-free LP is no worse than the private trig mechanism on average;
the direct-answering errors match their closed forms (Dwork & Roth 2014, §3.3 and §3.5.3; docs/science/baselines.md).

The direct-answering checks are tail bounds on the mean worst noise over runs, at the level of a
:class:`~dpkit.evaluation.verdicts.FalseAlarmBudget` split evenly (Bonferroni): Laplace by a Chernoff bound on Rényi's
representation (:func:`laplace_max_mean_deviation_bound`), Gaussian by Gaussian concentration
(:func:`gaussian_max_mean_deviation_bound`); derivations in docs/science/derivations.md. ``eps-inf-floor`` is an exact
statement about these runs and not charged to the budget.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpkit.claims.results import NotebookRecorder, NotebookRun
from dpkit.core.quick import quick_values
from dpkit.core.validation import check_name_list, check_positive_int, check_seed, check_sigmas
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check
from dpkit.experiments.baselines import gaussian_abs_max_mean
from dpkit.experiments.records import ReleaseRecord
from dpkit.experiments.summary import records_frame

__all__ = [
    "baseline_checks",
    "baseline_budget",
    "laplace_max_mean_deviation_bound",
    "gaussian_max_mean_deviation_bound",
    "DIRECT_CHECKED",
    "notebook_checks",
]

#: The direct-answering methods whose worst error has a statistical check (charged to the budget).
DIRECT_CHECKED: tuple[tuple[str, str], ...] = (("laplace_I", "direct-laplace_I"), ("gaussian", "direct-gaussian"))


def _rate(t: float, log_mgf: Any, lam_max: float) -> float:
    """Cramér–Chernoff exponent ``sup_{0<λ<lam_max} (λ t − Λ(λ))`` (bounded scalar maximisation)."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda lam: -(lam * t - log_mgf(lam)), bounds=(0.0, lam_max), method="bounded",
                          options={"xatol": 1e-10 * max(lam_max, 1.0)})
    return max(0.0, -float(res.fun))


def laplace_max_mean_deviation_bound(queries: Sequence[int], level: float) -> float:
    """``t`` with ``P(|S| ≥ t) ≤ level`` for the mean deviation of Laplace worst errors (module docstring).

    Parameters
    ----------
    queries : sequence of int
        ``Q_i`` of every run (worst |Lap(1)| over ``Q_i`` i.i.d. draws).
    level : float in (0, 1)
        Two-sided tail probability (each side gets ``level/2``).

    Each side's Chernoff exponent equals ``ln(2/level)`` at the returned ``t`` (found with
    :func:`scipy.optimize.brentq`); the exponent is computed at the optimising λ up to the
    maximiser's tolerance, which can only make ``t`` larger, i.e. the bound conservative.
    """
    from scipy.optimize import brentq

    q = np.asarray([int(v) for v in queries])
    if q.size == 0 or np.any(q < 1):
        raise ValueError(f"queries must be a non-empty sequence of positive integers; got {list(queries)!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    n = q.size
    counts = np.bincount(q)  # runs per Q
    inv_k = 1.0 / np.arange(1, q.max() + 1)
    # weight of 1/k: how many runs have Q_i ≥ k
    runs_with = np.cumsum(counts[::-1])[::-1][1:]

    def log_mgf(lam: float) -> float:  # Λ(λ) = Σ_k runs_with[k] ψ(λ/(n k)), ψ(u) = −u − log1p(−u)
        u = lam * inv_k / n
        return float(np.sum(runs_with * (-u - np.log1p(-u))))

    target = math.log(2.0 / level)
    out = 0.0
    for sign, lam_max in ((1.0, n * (1.0 - 1e-12)), (-1.0, 1e3 * n)):
        def mgf(lam: float, s: float = sign) -> float:
            return log_mgf(s * lam)

        hi = 1.0
        while _rate(hi, mgf, lam_max) < target:
            hi *= 2.0
        out = max(out, brentq(lambda t: _rate(t, mgf, lam_max) - target, 0.0, hi, xtol=1e-12))
    return float(out)


def gaussian_max_mean_deviation_bound(n_runs: int, level: float) -> float:
    """``t = √(2 ln(2/level)/n)``: ``P(|S| ≥ t) ≤ level`` for the mean deviation of Gaussian worst errors."""
    if isinstance(n_runs, bool) or int(n_runs) != n_runs or n_runs < 1:
        raise ValueError(f"n_runs must be a positive integer; got {n_runs!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    return math.sqrt(2.0 * math.log(2.0 / level) / int(n_runs))


def baseline_budget(methods: Sequence[str], false_alarm: float) -> FalseAlarmBudget | None:
    """The notebook's budget: ``false_alarm`` split over the checked direct-answering methods it runs
    (``None`` when it runs none: no statistical check)."""
    n = sum(name in set(methods) for _, name in DIRECT_CHECKED)
    return FalseAlarmBudget(false_alarm, n_tests=n) if n else None


def baseline_checks(records: Sequence[ReleaseRecord], rows: Sequence[dict[str, Any]], *,
                    budget: FalseAlarmBudget | None = None) -> list[Check]:
    """The notebook's checks on the run records and the summary rows (module docstring).

    ``budget`` (:func:`baseline_budget`) sets the level of the direct-answering checks; it is
    required when the records contain a checked direct-answering method. No records (no data set was
    available): no checks.
    """
    out: list[Check] = []
    if not records:
        return out
    rec = records_frame(records)
    rec["epsilon"] = [float(p["epsilon"]) for p in rec["params"]]
    rec["delta"] = [float(p.get("delta", 0.0)) for p in rec["params"]]
    priv = rec[rec["privacy"] != "non-private"]
    dev = float(np.max(np.abs(priv["eps_spent"] - priv["epsilon"]) / priv["epsilon"]))
    out.append(check("ledger-epsilon", "every private method's ledger spends exactly its stated ε (relative deviation)",
                 dev, 1e-9, relation="<=", note=f"{len(priv)} runs of {priv['method'].nunique()} methods"))
    over = float(np.max(priv["delta_spent"] - priv["delta"]))
    out.append(check("ledger-delta", "no private method's ledger spends more δ than stated (δ_spent − δ)",
                 over, 0.0, relation="<="))

    df = pd.DataFrame(list(rows))
    piv = df.pivot_table(index=["dataset", "sigma"], columns="method", values="abs_mean") if len(df) else pd.DataFrame()
    if {"lp-eps-inf", "trig-II"} <= set(piv.columns):
        diff = float((piv["lp-eps-inf"] - piv["trig-II"]).mean())
        out.append(check("eps-inf-floor", "the noise-free LP (ε = ∞) has mean worst abs. error ≤ trig-II's, averaged over "
                     "(data set, σ) cells: noise only adds error on average (baseline B5)", diff, 0.0,
                     relation="<=", note="statistic: mean of (lp-eps-inf − trig-II) worst abs. errors"))
    for noise, name in DIRECT_CHECKED:
        sub = rec[rec["method"] == name]
        if sub.empty:
            continue
        if budget is None:
            raise ValueError(f"budget is required: the records contain {name!r}, a statistical check (baseline_budget)")
        Q = np.array([int(p["n_queries"]) for p in sub["params"]])
        s = np.array([float(p["scale_mean"]) for p in sub["params"]])
        z = sub["abs"].to_numpy() / s  # worst |noise| in units of the noise scale
        if noise == "laplace_I":
            # max of Q iid Exp(1): mean H_Q (Rényi's representation, module docstring)
            exp_ = np.array([math.fsum(1.0 / k for k in range(1, q + 1)) for q in Q])
            bound = laplace_max_mean_deviation_bound(Q, budget.level)
            claim = "direct Laplace I: mean worst error / b = H_Q (max of Q iid |Lap(b)| ~ Exp(b))"
            how = "Chernoff bound on the Rényi sum"
        else:
            exp_ = np.array([gaussian_abs_max_mean(int(q)) for q in Q])
            bound = gaussian_max_mean_deviation_bound(len(z), budget.level)
            claim = "direct Gaussian: mean worst error / s = E max_q |N(0,1)| over Q queries"
            how = "Gaussian concentration of a 1-Lipschitz max"
        stat = float(abs(np.mean(z - exp_)))
        out.append(check(f"direct-{noise}-theory", claim + f" (|mean − theory| in noise scales; {how})",
                     stat, bound, relation="<=", confidence=budget.confidence,
                     note=f"{len(z)} runs; level {budget.level:.3g} of FALSE_ALARM {budget.total:g}"))
    return out


def notebook_checks(
    seed: int, quick: bool, false_alarm: float, *, datasets: Sequence[str], sigmas: Sequence[float], epsilon: float,
    delta: float, reps: int, n_queries: int, J: int, C: int, R: int, m_rows: int, mwem_t: int, n_class: int, pca_k: int,
    pca_reps: int, toy_levels: int, toy_m: int, methods: Sequence[str], progress: bool = False,
) -> NotebookRun:
    """Everything notebook 40 (``40_baselines``) computes with these parameters: runs, rows, checks, extras.

    The notebook's parameters in lower case; ``quick`` applies its QUICK sizes (WDBC, σ = 4, 2 repetitions, 200
    queries, small methods). Every registered method of the ``baselines`` suite (or those named in ``methods``)
    runs with these parameters on every data set that loads and every σ, each (data set, σ) cell seeded by its
    values (:func:`~dpkit.experiments.cell_seed`), then the 2-d toy panel and the private PCA comparison; the
    budget ``false_alarm`` is split over the direct-answering checks (:func:`baseline_budget`; None without them).
    ``parts``: ``methods`` (the configured suite), ``data`` (the loaded arrays), ``rows`` and ``toy_rows``, ``pca``
    (the PCA summary), ``conclusion``, and ``extra`` (the ``metrics.json`` extras in the notebook's order).
    ``progress`` shows progress bars.
    """
    seed = check_seed(seed)
    from dpkit.core.exceptions import PrivacyLeakWarning
    from dpkit.data import load_available, quick_datasets
    from dpkit.experiments import cell_seed, run_cell
    from dpkit.experiments.baselines import baseline_rows, toy_methods, write_conclusion
    from dpkit.experiments.pca_compare import compare_private_pca, pca_summary
    from dpkit.methods.registry import describe, suite

    datasets = check_name_list(datasets, name="datasets")
    sigmas = check_sigmas(sigmas)
    reps, n_queries, J = (check_positive_int(v, name=k) for k, v in (("reps", reps), ("n_queries", n_queries), ("J", J)))
    if isinstance(methods, str) or not isinstance(methods, Sequence):
        raise TypeError(f"methods must be a list of method names (empty: the whole suite); got "
                        f"{type(methods).__name__} {methods!r}")
    methods = check_name_list(methods, name="methods", what="method names") if methods else []
    if quick:  # a part of the user's data sets and widths, or a QuickReplacementWarning naming the replacement
        datasets = quick_values(datasets, quick_datasets(datasets), name="datasets", what="data sets")  # WDBC or your own
        sigmas = quick_values(sigmas, [4.0], name="sigmas", what="kernel widths")
        reps, n_queries = 2, 200
        C, m_rows, mwem_t, n_class, pca_reps, toy_levels, toy_m = 1000, 300, 5, 40, 2, 3, 3
    params = dict(SEED=seed, QUICK=quick, DATASETS=datasets, SIGMAS=sigmas, EPSILON=epsilon, DELTA=delta, REPS=reps,
                  N_QUERIES=n_queries, J=J, C=C, R=R, M_ROWS=m_rows, MWEM_T=mwem_t, N_CLASS=n_class, PCA_K=pca_k,
                  PCA_REPS=pca_reps, TOY_LEVELS=toy_levels, TOY_M=toy_m, FALSE_ALARM=false_alarm, METHODS=methods)
    extra: dict[str, Any] = {}
    # this notebook's parameters are set on every method that has them
    configured = suite("baselines", include=methods or None, epsilon=epsilon, delta=delta, C=C, R=R, m=m_rows, T=mwem_t,
                       n_class=n_class, k=pca_k)
    extra["methods"] = describe(configured)
    # only a data set documented as possibly unavailable offline (PAM) may be absent, and is recorded; a damaged or
    # misplaced file is an error (load_available); none available at all: DataUnavailableError (a recorded skip)
    with warnings.catch_warnings(record=True):  # the data-derived bounds are recorded in bounds_source
        warnings.simplefilter("always", PrivacyLeakWarning)
        loaded, skipped = load_available(list(datasets))
    data = {name: ds.X for name, ds in loaded.items()}
    for name, ds in loaded.items():
        extra.setdefault("bounds_source", {})[name] = ds.bounds_source
    extra["skipped_datasets"] = skipped
    out = NotebookRecorder()
    records, rows = [], []
    for name in data:
        X = data[name]
        for sigma in sigmas:
            recs = run_cell(X, methods=configured, sigma=sigma, reps=reps, n_queries=n_queries, J=J,
                            rng=cell_seed(seed, name, sigma), progress=progress)
            records += recs
            rows += baseline_rows(recs, dataset=name)
    for r in rows:
        out.row(**r)
    toy_recs, toy_rows = [], []
    if data:  # the first available data set
        toy_name = next(iter(data))
        X2 = data[toy_name][:, :2]
        toy_sigma = sigmas[0]
        toy = toy_methods(epsilon=epsilon, delta=delta, levels=toy_levels, m=toy_m, m_rows=m_rows, T=mwem_t, C=C,
                          n_class=n_class, R=R)
        toy_recs = run_cell(X2, methods=toy, sigma=toy_sigma, reps=reps, n_queries=n_queries, J=J,
                            rng=cell_seed(seed, f"{toy_name}-2d-toy", toy_sigma))
        toy_rows = baseline_rows(toy_recs, dataset=f"{toy_name}-2d-toy")
        for r in toy_rows:
            out.row(**r)
    pca_rows = []
    for name in data:
        for s in cell_seed(seed, f"{name}-pca", 0.0).spawn(pca_reps):
            for r in compare_private_pca(data[name], k=min(pca_k, data[name].shape[1]), epsilon=epsilon, rng=s):
                r.pop("ledger")
                pca_rows.append({"dataset": name, **r})
    pca_table = pca_summary(pca_rows)
    extra["pca_comparison"] = pca_table
    budget = baseline_budget([r.method for r in records + toy_recs], false_alarm)
    out.add(*baseline_checks(records + toy_recs, rows, budget=budget))
    run = out.finish(params, budget)
    if run.budget is not None:
        extra["false_alarm_budget"] = run.budget
    conclusion = write_conclusion(rows, n_by_dataset={k: v.shape[0] for k, v in data.items()}, epsilon=epsilon, delta=delta)
    pca_df = pd.DataFrame(pca_table)
    if not pca_df.empty:
        piv = pca_df.pivot_table(index="dataset", columns="method", values="max_angle_deg_mean")
        angles = "; ".join(f"{ds}: dpkit-psi {r['dpkit-psi']:.0f}°, diffprivlib {r['diffprivlib']:.0f}°"
                           for ds, r in piv.iterrows())
        conclusion += (f"\n\nPrivate PCA at ε = {epsilon:g} (largest angle to the true top-{pca_k} subspace, degrees): "
                       + angles + ".")
    extra["conclusion"] = conclusion
    run.parts.update(methods=configured, data=data, rows=rows, toy_rows=toy_rows, pca=pca_table, conclusion=conclusion,
                     extra=extra)
    return run
