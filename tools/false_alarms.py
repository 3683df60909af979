"""Measure the real false-alarm rate of the statistical notebooks: their QUICK checks over many seeds.

``python -m tools.false_alarms [--seeds N] [--first-seed S] [--notebooks 50 52 ...] [--false-alarm A]
[--via-notebook] [--out DIR]``

For every notebook and seed the notebook's statistical checks are reproduced (by default by calling
its claim functions directly with the notebook's QUICK parameters and the streams it spawns from
``SEED``, so seed ``s`` gives the checks of the notebook run with ``SEED=s``; ``--via-notebook``
executes the notebook itself with :func:`~dpkit.batch.execute.execute_notebook` instead, much
slower). A run is *unexpected* when any statistical check disagrees with its expected verdict:
a false alarm (a check expected to PASS fails) or a missed negative control (one expected to FAIL
passes). Per notebook the observed rate of unexpected runs is reported next to the budget
``FALSE_ALARM`` with a one-sided Clopper–Pearson upper bound (:func:`dpkit.evaluation.oracles.clopper_pearson`).

With the budget's per-test levels a correct implementation should show (almost) no false alarm in
a few hundred seeds: the observed rate can only *refute* the budget (``cp_lower > FALSE_ALARM``),
never certify it; ``n`` seeds without an unexpected run bound the rate by ``1 − 0.05^{1/n}`` (95 %).

Outputs in ``--out``: ``false_alarms.csv`` (one row per notebook), ``false_alarms.json`` (the
rows plus the failure count of every check and the seeds of the unexpected runs).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from dpkit.claims import (
    composition,
    ellipsoid,
    exponential_net,
    improved_privacy,
    laplace_gauss,
    linear,
    private_pca,
    reconstruction,
    trig_rates,
)
from dpkit.core.composition import laplace_privacy_loss_exact
from dpkit.core.rng import spawn
from dpkit.evaluation.oracles import clopper_pearson
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget

__all__ = ["SUITES", "notebook_checks", "run", "summarise", "main"]

Suite = Callable[[int, float], list[Check]]


def _budgeted(n_tests: int, checks: Callable[[FalseAlarmBudget], list[Check]], total: float) -> list[Check]:
    """Run ``checks(budget)`` and validate it against the budget exactly as the notebook does (``budget.record``)."""
    budget = FalseAlarmBudget(total, n_tests=n_tests)
    out = checks(budget)
    budget.record(out)
    return out


def _nb50(seed: int, total: float) -> list[Check]:
    g_aud, g_post, g_gauss, g_acc = spawn(seed, 4)
    lg = laplace_gauss

    def checks(b: FalseAlarmBudget) -> list[Check]:
        out = [lg.laplace_audit(n_samples=100_000, gamma=b.level, rng=g_aud),
               lg.laplace_under_noised_audit(n_samples=100_000, gamma=b.level, rng=g_aud),
               *lg.post_processing_audit(n_samples=50_000, gamma=b.level, rng=g_post).checks,
               lg.gaussian_loss_law(epsilon=0.5, delta=1e-3, n_samples=20_000, gamma=b.level, rng=g_gauss),
               lg.gaussian_audit(epsilon=1.0, delta=1e-3, n_samples=100_000, gamma=b.level, rng=g_gauss)]
        acc = lg.laplace_accuracy(ks=[1, 10], betas=[0.01, 0.05, 0.2], delta=1e-5, n_trials=4000, gamma=b.level, rng=g_acc)
        exact = lg.laplace_accuracy_exact(acc, delta=1e-5, n_trials=4000, gamma=b.level)
        return [*out, *acc.checks, *[c for c in exact.checks if c.confidence is not None]]

    return _budgeted(6, checks, total)


@lru_cache(maxsize=1)
def _plds51() -> tuple:
    """The two PLDs notebook 51 samples in QUICK mode (ε = 0.1, k ∈ {10, 100}; deterministic)."""
    return tuple(laplace_privacy_loss_exact(k, 0.1, bins_per_step=200) for k in (10, 100))


def _nb51(seed: int, total: float) -> list[Check]:
    (g_mc,) = spawn(seed, 1)
    return _budgeted(2, lambda b: [
        *composition.adaptive_composition_audit(n_samples=200_000, gamma=b.level, rng=g_mc).checks,
        *composition.pld_monte_carlo(plds=list(_plds51()), n_samples=50_000, gamma=b.level, rng=g_mc).checks,
    ], total)


def _nb52(seed: int, total: float) -> list[Check]:
    _, _, g_rnm, g_rr, g_svt, _, g_pmw = spawn(seed, 7)
    en = exponential_net

    def checks(b: FalseAlarmBudget) -> list[Check]:
        out = [*en.report_noisy_max_audit(n_samples=100_000, gamma=b.level, rng=g_rnm).checks,
               *en.report_noisy_max_monotone_misuse_audit(n_samples=100_000, gamma=b.level, rng=g_rnm).checks,
               *en.randomized_response_estimator(n=1000, reps=500, gamma=b.level, rng=g_rr).checks]
        en.above_threshold_privacy(k=10, n_instances=12, rng=g_svt)  # exact, but it advances the stream the sampler uses
        return [*out, en.above_threshold_sampler(k=10, n_samples=50_000, gamma=b.level, rng=g_svt),
                *en.pmw_accuracy(gamma=b.level, rng=g_pmw).checks, *en.pmw_printed_threshold(gamma=b.level, rng=g_pmw).checks]

    return _budgeted(4, checks, total)


def _nb53(seed: int, total: float) -> list[Check]:
    g_dp = spawn(seed, 4)[3]
    return _budgeted(1, lambda b: [
        law(epsilon=1.0, n=32, trials=120, gamma=b.level, rng=g_dp).check
        for law in (reconstruction.fundamental_law, reconstruction.fundamental_law_per_answer_control)
    ], total)


def _nb55(seed: int, total: float) -> list[Check]:
    runs = trig_rates.rate_runs(ns_d1=[1000, 4000, 16000], ns_d2=[1000, 4000], reps=3, n_queries=30, J=10, epsilon=1.0,
                                delta=1e-3, sigma=2.0, rng=trig_rates.TrigStreams.from_seed(seed))
    fits = trig_rates.slope_fits(runs, K=4.0)
    return _budgeted(3, lambda b: list(trig_rates.error_rate_checks(fits, gamma=b.level)), total)


def _nb56(seed: int, total: float) -> list[Check]:
    streams = private_pca.PCAStreams.from_seed(seed)  # the auditor draws from its own stream only
    return _budgeted(1, lambda b: [private_pca.one_step_audit(n=200, d=5, epsilon=1.0, delta=1e-3, audit_samples=100_000,
                                                              gamma=b.level, rng=streams).check], total)


def _nb57(seed: int, total: float) -> list[Check]:
    tests = ellipsoid.sampler_tests(n_points=20_000, dims=[2, 3, 5], cap=0.9, rng=ellipsoid.EllipsoidStreams.from_seed(seed))
    return _budgeted(3, lambda b: [f(tests, gamma=b.level) for f in (
        ellipsoid.correct_sampler_check, ellipsoid.printed_radius_check, ellipsoid.printed_k2_check,
        ellipsoid.printed_angles_check)], total)


def _nb58(seed: int, total: float) -> list[Check]:
    streams = improved_privacy.ImprovedStreams.from_seed(seed)
    runs = improved_privacy.improved_runs(n=1000, d=5, rs=[6, 16], c=500, epsilon=1.0, delta=1e-3, rng=streams)
    return _budgeted(1, lambda b: list(improved_privacy.moment_audits(
        runs, n=1000, d=5, R=6, epsilon=1.0, audit_samples=600_000, gamma=b.level, rng=streams).checks), total)


@lru_cache(maxsize=1)
def _densities30() -> dict:
    """Notebook 30's densities at δ* for ε = 1 on its QUICK grids (deterministic: computed once per process)."""
    import numpy as np

    configs = linear.CONFIGURATIONS
    grids = linear.rate_maps(configs, np.geomspace(1e-3, 1.0, 7), np.geomspace(0.1, 5.0, 6))
    curves = linear.min_rate_curves(configs, [0.3, 1.0, 5.0], grids, max_refine=6)
    return linear.densities_at_radius_star(configs, 1.0, curves=curves, grids=grids, max_refine=6)


def _nb30(seed: int, total: float) -> list[Check]:
    dens = _densities30()
    g_mc, g_audit, g_ks, _, g_misc = spawn(seed, 5)

    def checks(b: FalseAlarmBudget) -> list[Check]:
        out = [linear.privacy_auditor_check(dens["V1"], n_samples=60_000, rng=g_audit, config="V1", confidence=b.confidence)]
        linear.v4_staircase_pdf_check(1.0, rng=g_misc)  # exact, but it advances the stream of the baselines below
        out.append(linear.mc_abs_error_check(dens, n_samples=60_000, rng=g_mc, baseline_rng=g_misc, level=b.level).check)
        return [*out, linear.sampler_ks_check(dens["V5"], n_samples=40_000, rng=g_ks, level=b.level),
                linear.sampler_ks_printed_support0_check(1.0, n_samples=40_000, rng=g_ks, level=b.level)]

    return _budgeted(3, checks, total)


def _nb40(seed: int, total: float) -> list[Check]:
    """Notebook 40's statistical checks (direct answering vs theory) as the QUICK notebook run with
    ``METHODS=["direct-laplace_I", "direct-gaussian"]`` computes them: the WDBC cell (σ = 4, 2 repetitions,
    200 queries) and the 2-d toy panel, whose direct Laplace runs join the same check. The suite's
    other methods have their own streams and no statistical check."""
    from dpkit.claims.baselines import DIRECT_CHECKED, baseline_budget, baseline_checks
    from dpkit.experiments import cell_seed, run_cell
    from dpkit.experiments.baselines import toy_methods
    from dpkit.methods.registry import suite

    X = _wdbc()
    run = dict(sigma=4.0, reps=2, n_queries=200, J=10)
    methods = suite("baselines", include=[name for _, name in DIRECT_CHECKED], epsilon=1.0, delta=1e-3)
    records = run_cell(X, methods=methods, rng=cell_seed(seed, "WDBC", 4.0), **run)
    # notebook 40's toy panel with its QUICK parameters (TOY_LEVELS = TOY_M = 3, M_ROWS = 300, MWEM_T = 5, ...)
    toy = toy_methods(epsilon=1.0, delta=1e-3, levels=3, m=3, m_rows=300, T=5, C=1000, n_class=40, R=50)
    records += run_cell(X[:, :2], methods=toy, rng=cell_seed(seed, "WDBC-2d-toy", 4.0), **run)
    budget = baseline_budget([r.method for r in records], total)
    out = baseline_checks(records, [], budget=budget)
    budget.record(out)
    return [c for c in out if c.confidence is not None]  # the ledger checks are exact


@lru_cache(maxsize=1)
def _wdbc() -> Any:
    import warnings

    from dpkit.core.exceptions import PrivacyLeakWarning
    from dpkit.data import load

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # the notebook records the same warning once
        return load("WDBC").X


#: Notebook name → its QUICK statistical checks for one seed (``suite(seed, FALSE_ALARM)``), mirroring the notebook.
SUITES: dict[str, Suite] = {
    "30_linear_queries": _nb30, "40_baselines": _nb40, "50_laplace_gauss": _nb50, "51_composition": _nb51,
    "52_exponential_net": _nb52,
    "53_reconstruction": _nb53, "55_trig_rates": _nb55, "56_private_pca": _nb56, "57_ellipsoid": _nb57,
    "58_improved_privacy": _nb58,
}


#: The repository's notebooks (this file is ``tools/false_alarms.py``).
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def notebook_checks(name: str, seed: int, total: float, *, notebooks_dir: Path = NOTEBOOKS) -> list[Check]:
    """The statistical checks of notebook ``name`` run headless in QUICK mode with ``SEED=seed`` (slow path)."""
    from dpkit.batch.execute import execute_notebook

    with tempfile.TemporaryDirectory(prefix=f"false_alarms_{name}_") as tmp:
        execute_notebook(notebooks_dir / f"{name}.ipynb", tmp, parameters=dict(SEED=seed, QUICK=True, FALSE_ALARM=total))
        metrics = json.loads((Path(tmp) / "metrics.json").read_text())
    fields = ("id", "claim", "statistic", "bound", "confidence", "verdict", "expected", "note", "attempts", "retry_statistic")
    return [Check(**{k: c[k] for k in fields if k in c}) for c in metrics["checks"] if c["confidence"] is not None]


def _resolve(names: Sequence[str] | None) -> list[str]:
    """Full notebook names from prefixes (``"50"`` → ``"50_laplace_gauss"``); loud on an unknown or ambiguous one."""
    if not names:
        return list(SUITES)
    out = []
    for n in names:
        hits = [k for k in SUITES if k == n or k.startswith(n.removesuffix(".ipynb"))]
        if len(hits) != 1:
            raise SystemExit(f"--notebooks: {n!r} matches {hits or 'no notebook'}; choose from {list(SUITES)}")
        out.append(hits[0])
    return out


def run(names: Sequence[str], seeds: Sequence[int], total: float, *, via_notebook: bool = False,
        log: Callable[[str], None] = print) -> dict[str, dict]:
    """Every notebook × seed: per notebook, the unexpected runs and the failure count of every check."""
    results = {}
    for name in names:
        t0, per_check, bad_seeds, alarms, missed = time.perf_counter(), {}, [], 0, 0
        for seed in seeds:
            checks = notebook_checks(name, seed, total) if via_notebook else SUITES[name](seed, total)
            wrong = [c for c in checks if c.confidence is not None and not c.consistent]
            for c in checks:
                per_check[c.id] = per_check.get(c.id, 0) + (not c.consistent)
            alarms += any(c.expected == "PASS" for c in wrong)
            missed += any(c.expected == "FAIL" for c in wrong)
            if wrong:
                bad_seeds.append(seed)
        results[name] = dict(runs=len(seeds), unexpected=len(bad_seeds), false_alarm_runs=alarms, missed_control_runs=missed,
                             unexpected_seeds=bad_seeds, check_failures=per_check, seconds=time.perf_counter() - t0)
        log(f"{name}: {len(bad_seeds)}/{len(seeds)} unexpected runs ({results[name]['seconds']:.0f} s)")
    return results


def summarise(results: dict[str, dict], total: float, confidence: float = 0.95) -> pd.DataFrame:
    """One row per notebook: observed rate of unexpected runs, one-sided Clopper–Pearson bounds, the budget."""
    rows = []
    for name, r in results.items():
        k, n = r["unexpected"], r["runs"]
        lo, _ = clopper_pearson(k, n, confidence, side="lower")
        _, hi = clopper_pearson(k, n, confidence, side="upper")
        rows.append(dict(notebook=name, runs=n, unexpected=k, false_alarm_runs=r["false_alarm_runs"],
                         missed_control_runs=r["missed_control_runs"], rate=k / n, cp_lower=lo, cp_upper=hi, budget=total,
                         refutes_budget=bool(lo > total)))
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.false_alarms", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100, help="number of seeds (default 100)")
    ap.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed … first-seed + seeds − 1 (default 0)")
    ap.add_argument("--notebooks", nargs="+", help=f"notebook names or prefixes (default: all of {list(SUITES)})")
    ap.add_argument("--false-alarm", type=float, default=1e-3, help="FALSE_ALARM budget of every notebook (default 1e-3)")
    ap.add_argument("--confidence", type=float, default=0.95, help="one-sided Clopper–Pearson confidence (default 0.95)")
    ap.add_argument("--via-notebook", action="store_true", help="execute the notebooks (papermill) instead of their claims")
    ap.add_argument("--out", type=Path, default=Path("results/false_alarms"), help="output folder")
    a = ap.parse_args(argv)
    if a.seeds < 1 or a.first_seed < 0:
        ap.error(f"--seeds must be ≥ 1 and --first-seed ≥ 0; got {a.seeds}, {a.first_seed}")
    if not 0.0 < a.false_alarm < 1.0 or not 0.0 < a.confidence < 1.0:
        ap.error(f"--false-alarm and --confidence must be in (0, 1); got {a.false_alarm}, {a.confidence}")
    names = _resolve(a.notebooks)
    results = run(names, range(a.first_seed, a.first_seed + a.seeds), a.false_alarm, via_notebook=a.via_notebook)
    table = summarise(results, a.false_alarm, a.confidence)
    a.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(a.out / "false_alarms.csv", index=False)
    (a.out / "false_alarms.json").write_text(json.dumps(dict(
        false_alarm=a.false_alarm, confidence=a.confidence, seeds=[a.first_seed, a.first_seed + a.seeds - 1],
        via_notebook=a.via_notebook, summary=table.to_dict("records"), notebooks=results), indent=1))
    print(table.to_string(index=False))
    print(f"-> {a.out / 'false_alarms.csv'}")
    return 1 if table.refutes_budget.any() else 0


if __name__ == "__main__":
    sys.exit(main())
