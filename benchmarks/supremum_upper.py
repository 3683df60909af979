"""The certified upper bound on the class supremum (``sup_upper``) on real releases: its cost and how tight it is.

For every data set and σ: ``--reps`` board repetitions, each as the board computes it (the workload and its exact
answers, then for every method of the board — default every method of notebook 45's suites — its release and its
record with the class supremum over the cube and its certified upper bound ``sup_upper``,
:func:`dpkit.experiments.records.record_release`), timed; the bound's own time is the record's
(``supremum_upper["seconds"]``: :func:`dpkit.queries.supremum_upper.sup_upper` as the record calls it; the data's
self-term is computed at the first release of a (data set, σ) — unless the disk cache holds it — and read from memory
afterwards: both times are reported), and the cost ratio is the bounds' time over the rest of the repetition, measured
in the same run (the goal: at most 10 %). With ``--space`` also the search over all of R^d (untimed), to tell whether
a gap between the bound and the board's ``sup_abs`` is the search's restriction to the cube or the bound.

Prints one row per release (the board's ``sup_abs``, the bound, their ratio) and a summary per data set and σ: the
repetition's compute, the bounds' total time and their ratio; the distribution of ``upper / sup_abs`` (median,
quartiles, largest, how many above 1.5 and 3) overall and per method. Usage::

    python -m benchmarks.supremum_upper [--datasets WDBC CTG] [--sigmas 2 6] [--reps 1] [--methods NAME ...]
                                        [--n-queries 10000] [--space] [--json out.json]

Timings are wall-clock on whatever else the machine is doing; the ratios are measured in one run.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from typing import Any

import numpy as np

from dpkit.board.report import board_methods
from dpkit.data.api import load
from dpkit.experiments.protocol import timed_release
from dpkit.experiments.records import cell_seed, record_release, repetitions
from dpkit.queries.supremum import class_supremum
from dpkit.queries.supremum_upper import clear_self_term_cache


def _quantiles(v: list[float]) -> dict[str, Any]:
    if not v:
        return {"n": 0}
    q = np.quantile(np.asarray(v), [0.25, 0.5, 0.75])
    return {"n": len(v), "min": min(v), "q25": float(q[0]), "median": float(q[1]), "q75": float(q[2]), "max": max(v),
            "above_1_5": sum(x > 1.5 for x in v), "above_3": sum(x > 3.0 for x in v)}


def run(name: str, sigma: float, reps: int, methods: list[str], n_queries: int, space: bool, seed: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's notes on rescaling bounds
        X = np.asarray(load(name).X)
    named = board_methods(methods, epsilon=1.0, delta=1e-3)
    configured = {m: meth.at_width(sigma) for m, meth in named.items()}
    clear_self_term_cache()
    rows: list[dict[str, Any]] = []
    rep_seconds, upper_seconds = [], []
    t_rep0 = time.perf_counter()
    for rep in repetitions(X, sigma=sigma, names=list(configured), reps=reps, n_queries=n_queries,
                           rng=cell_seed(seed, name, sigma)):
        t_rep = time.perf_counter() - t_rep0  # the workload and its exact answers
        t_up = 0.0
        for m, method in configured.items():
            t0 = time.perf_counter()
            rel, secs = timed_release(method, X, rep.generator(m), rep.workload)
            rec = record_release(m, rel, secs, rep=rep, sigma=sigma, X=X, supremum="cube")
            up = rec.supremum_upper or {}
            dt = float(up.get("seconds", 0.0)) if up.get("applicable") else 0.0
            t_rep += time.perf_counter() - t0 - dt
            t_up += dt
            if rel.synthetic is None:
                continue
            row = {"dataset": name, "sigma": sigma, "rep": rep.index, "method": m, "support": int(rel.support_size or 0),
                   "abs": rec.abs, "sup_abs": rec.sup_abs, "upper": rec.sup_upper, "ratio": rec.sup_upper / rec.sup_abs,
                   "bound": up["bound"], "mmd_estimate": up["mmd_estimate"], "rounding_bound": up["rounding_bound"],
                   "data_side": up["data_side"], "first": not rows, "upper_seconds": dt,
                   "record_seconds": rec.time_s, "search_evaluations": rec.supremum["n_evaluations"],
                   "search_starts": rec.supremum["n_starts"]}
            if space:
                sp = class_supremum(X, rel, sigma, rng=1, domain="space")
                row["sup_space"] = sp.sup_abs
                row["ratio_space"] = rec.sup_upper / max(sp.sup_abs, rec.sup_abs)
            rows.append(row)
            print(f"{name:5} {sigma:4g} {rep.index:3d} {m:34} {row['support']:7d} {rec.sup_abs:10.4g} {rec.sup_upper:10.4g} "
                  f"{row['ratio']:6.3f} " + (f"{row['ratio_space']:6.3f} " if space else "")
                  + f"{dt:7.3f} {'first' if row['first'] else 'later'}", flush=True)
        rep_seconds.append(t_rep)
        upper_seconds.append(t_up)
        t_rep0 = time.perf_counter()
    ratios = [r["ratio"] for r in rows]
    out = {"dataset": name, "n": int(X.shape[0]), "d": int(X.shape[1]), "sigma": sigma, "reps": reps,
           "methods": len(configured), "releases_with_database": len(rows), "repetition_seconds": rep_seconds,
           "upper_seconds": upper_seconds, "cost_ratio": [u / r for u, r in zip(upper_seconds, rep_seconds)],
           "first_upper_seconds": rows[0]["upper_seconds"] if rows else None,
           "warm_upper_seconds_median": statistics.median([r["upper_seconds"] for r in rows if not r["first"]] or [0.0]),
           "ratio": _quantiles(ratios), "rows": rows}
    if space:
        out["ratio_space"] = _quantiles([r["ratio_space"] for r in rows])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["WDBC", "CTG"])
    p.add_argument("--sigmas", nargs="+", type=float, default=[2.0, 6.0])
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--methods", nargs="*", default=[], help="board methods (default: all of notebook 45's suites)")
    p.add_argument("--n-queries", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=0, help="run seed (the board's: 0)")
    p.add_argument("--space", action="store_true", help="also search over all of R^d (untimed)")
    p.add_argument("--json", default=None, help="also write the results to this file")
    a = p.parse_args(argv)
    if a.reps < 1:
        p.error("--reps must be >= 1")
    print(f"{'data':5} {'σ':>4} {'rep':>3} {'method':34} {'support':>7} {'sup_abs':>10} {'upper':>10} {'ratio':>6} "
          + ("r.space " if a.space else "") + f"{'sec':>7} release", flush=True)
    results = [run(name, s, a.reps, a.methods, a.n_queries, a.space, a.seed) for name in a.datasets for s in a.sigmas]
    every = [r for res in results for r in res["rows"]]
    summary = {"ratio": _quantiles([r["ratio"] for r in every]),
               "per_method": {m: _quantiles([r["ratio"] for r in every if r["method"] == m])
                              for m in dict.fromkeys(r["method"] for r in every)}}
    if a.space:
        summary["ratio_space"] = _quantiles([r["ratio_space"] for r in every])
    print()
    for res in results:
        print(f"{res['dataset']} (n = {res['n']}, d = {res['d']}) σ = {res['sigma']:g}: repetition "
              f"{', '.join(f'{t:.1f}' for t in res['repetition_seconds'])} s over {res['methods']} methods; sup_upper "
              f"{', '.join(f'{t:.2f}' for t in res['upper_seconds'])} s over {res['releases_with_database']} "
              f"releases (the first, with the self-term unless cached: {res['first_upper_seconds']:.3f} s; then median "
              f"{res['warm_upper_seconds_median']:.4f} s); ratio {', '.join(f'{c:.4f}' for c in res['cost_ratio'])}")
    q = summary["ratio"]
    print(f"upper / sup_abs over {q['n']} releases: median {q['median']:.3f} (quartiles {q['q25']:.3f}, {q['q75']:.3f}), "
          f"range {q['min']:.3f}–{q['max']:.3f}, above 1.5: {q['above_1_5']}, above 3: {q['above_3']}")
    if a.space:
        q = summary["ratio_space"]
        print(f"upper / max(sup_abs, sup over R^d): median {q['median']:.3f}, range {q['min']:.3f}–{q['max']:.3f}, "
              f"above 1.5: {q['above_1_5']}, above 3: {q['above_3']}")
    for m, q in summary["per_method"].items():
        print(f"  {m:34} n = {q['n']:2d}  median {q['median']:.3f}  range {q['min']:.3f}–{q['max']:.3f}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"results": results, "summary": summary}, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
