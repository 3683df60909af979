"""How tight is the interval ``[sup_abs, sup_upper]`` for the class supremum, and which side is loose.

Process tooling, not part of the dpkit package. Two commands:

``board [RECORDS]``
    The distribution of ``sup_upper / sup_abs`` over a board's records (default: the published board) overall and
    per data set, and what the intervals certify per cell
    (:mod:`dpkit.board.certified`): the sentence for the README, the cells with a certified best method
    and the sets that may still be best. ``--json`` writes it for the results page; the regeneration runs it on the
    new records.

``sample``
    Which side of the interval is loose, on QUICK-sized releases (``--n-queries``, one repetition) of the board's
    methods: per release the board's search over the cube (``sup_abs`` as recorded), the same search over all of
    ``R^d`` (``--domain space`` of the records), a much longer search over ``R^d`` (8 times the starts, 8 times the
    ascents and polishes, 3 times the iterations), the record's ``sup_upper`` (on the low-rank side with the share of
    it that is the surrogate's bound, ``surr.``) and, where d ≤ 8 and ``--bnb``, the
    branch and bound's upper bound over the cube. If the longer search moves the lower end and the upper stays, the
    search is loose; if neither moves, the bound (or the gap between the single-kernel supremum and the MMD) is.

Usage::

    python tools/sup_tightness.py board [RECORDS.parquet] [--json OUT.json]
    python tools/sup_tightness.py sample [--datasets WDBC CTG CSN CRM] [--sigmas 2 6] [--methods NAME ...]
                                         [--n-queries 2000] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from typing import Any

import numpy as np

#: The longer search of ``sample``: the board's search with these counts (its defaults: 128, 128, 256, 32, 4, 100).
LONG_SEARCH = {"n_data_starts": 1024, "n_synthetic_starts": 1024, "n_random_starts": 2048, "n_ascents": 256,
               "n_polish": 32, "max_iter": 300}
#: The methods of ``sample`` by default: one of each family of the board that releases a synthetic database.
SAMPLE_METHODS = ("subsample", "mst", "marginals-histogram-eps", "rap-eps", "trig-I", "kme-synthetic",
                  "lp-uniform-cands-eps", "gauss-analyze-gauss-eps")


def _quantiles(v: list[float]) -> dict[str, Any]:
    if not v:
        return {"n": 0}
    a = np.asarray(v, dtype=float)
    return {"n": int(a.size), "median": float(np.median(a)), "q90": float(np.quantile(a, 0.9)), "max": float(a.max()),
            "above_1_5": int((a > 1.5).sum()), "above_3": int((a > 3).sum())}


def _share(part: float | None, whole: float) -> str:
    """``part / whole`` as a percentage in 6 characters (``—`` without a part)."""
    return f"{'—':>6}" if part is None else f"{100.0 * part / whole:5.1f}%"


def board(path: str | None, out: str | None) -> int:
    from dpkit.board.certified import certified_cells, certified_sentence, interval_ratios
    from dpkit.board.records import read_board

    records = read_board(path)
    ratios = interval_ratios(records)
    cells = certified_cells(records)
    sentence = certified_sentence(cells)
    print(sentence)
    if ratios["n"]:
        print(f"sup_upper / sup_abs over {ratios['n']} records: median {ratios['median']:.3f}, 90 % below "
              f"{ratios['q90']:.3f}, largest {ratios['max']:.3f}, above 3: {ratios['above_3']}, at most 1.5: "
              f"{100 * ratios['share_at_most_1_5']:.0f} %")
        for ds, r in ratios["per_dataset"].items():
            if r["n"]:
                print(f"  {ds:5} n = {r['n']:5d}  median {r['median']:.3f}  largest {r['max']:.3f}  above 3: "
                      f"{r['above_3']}")
    else:
        print("no record has both sup_abs and sup_upper")
    for c in cells:
        if c["with_upper"]:
            best = c["certified_best"] or "—"
            print(f"  {c['dataset']:5} σ = {c['sigma']:<4g} {c['table']:9} certified best: {best:30} may be best "
                  f"({c['n_may_be_best']} of {c['methods']}): {', '.join(c['may_be_best'])}")
    if out:
        with open(out, "w") as fh:
            json.dump({"sentence": sentence, "ratios": ratios, "cells": cells}, fh, indent=1, default=list)
    return 0


def sample(datasets: list[str], sigmas: list[float], methods: list[str], n_queries: int, bnb: bool,
           out: str | None, seed: int) -> int:
    from dpkit.board.report import board_methods
    from dpkit.data import load
    from dpkit.experiments.protocol import timed_release
    from dpkit.experiments.records import cell_seed, record_release, repetitions, supremum_seed
    from dpkit.queries.supremum import certify_supremum, class_supremum

    rows: list[dict[str, Any]] = []
    print(f"{'data':5} {'σ':>4} {'method':26} {'support':>7} {'cube':>9} {'space':>9} {'long':>9} {'upper':>9} "
          f"{'r.cube':>6} {'r.space':>7} {'r.long':>6} {'surr.':>6}" + (f" {'B&B/cube':>8}" if bnb else ""), flush=True)
    for name in datasets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the loader's notes on rescaling bounds
            X = np.asarray(load(name).X, dtype=float)
        for sigma in sigmas:
            named = board_methods(list(methods), epsilon=1.0, delta=1e-3)
            configured = {m: meth.at_width(sigma) for m, meth in named.items()}
            for rep in repetitions(X, sigma=sigma, names=list(configured), reps=1, n_queries=n_queries,
                                   rng=cell_seed(seed, name, sigma)):
                for m, method in configured.items():
                    rel, secs = timed_release(method, X, rep.generator(m), rep.workload)
                    rec = record_release(m, rel, secs, rep=rep, sigma=sigma, X=X, supremum="cube")
                    if rec.sup_upper is None:
                        continue
                    g = np.random.default_rng(supremum_seed(m, rep.index, sigma))
                    t0 = time.perf_counter()
                    space = class_supremum(X, rel, sigma, rng=g, domain="space")
                    t_space = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    long = class_supremum(X, rel, sigma, rng=g, domain="space", **LONG_SEARCH)
                    t_long = time.perf_counter() - t0
                    lower = max(rec.sup_abs, space.sup_abs, long.sup_abs)
                    row = {"dataset": name, "sigma": sigma, "method": m, "support": int(rel.support_size or 0),
                           "sup_cube": rec.sup_abs, "sup_space": space.sup_abs, "sup_long": long.sup_abs,
                           "upper": rec.sup_upper, "bound": rec.supremum_upper["bound"],
                           "surrogate_bound": rec.supremum_upper.get("surrogate_bound"),
                           "ratio_cube": rec.sup_upper / rec.sup_abs,
                           "ratio_space": rec.sup_upper / max(rec.sup_abs, space.sup_abs),
                           "ratio_long": rec.sup_upper / lower, "seconds_cube": rec.supremum["seconds"],
                           "seconds_space": t_space, "seconds_long": t_long,
                           "evaluations_cube": rec.supremum["n_evaluations"],
                           "evaluations_space": space.n_evaluations, "evaluations_long": long.n_evaluations}
                    if bnb and X.shape[1] <= 8:
                        iv = certify_supremum(X, rel, sigma, initial=space, domain="cube", max_boxes=20_000)
                        row["bnb_cube"] = float(iv.upper if iv.finished else iv.unfinished_upper)
                    rows.append(row)
                    print(f"{name:5} {sigma:4g} {m:26} {row['support']:7d} {rec.sup_abs:9.4g} {space.sup_abs:9.4g} "
                          f"{long.sup_abs:9.4g} {rec.sup_upper:9.4g} {row['ratio_cube']:6.3f} {row['ratio_space']:7.3f} "
                          f"{row['ratio_long']:6.3f} {_share(row['surrogate_bound'], rec.sup_upper)}"
                          + (f" {row['bnb_cube']:8.4g}" if "bnb_cube" in row else ""),
                          flush=True)
    summary = {k: _quantiles([r[k] for r in rows]) for k in ("ratio_cube", "ratio_space", "ratio_long")}
    cost = {k: float(np.median([r[f"seconds_{k}"] for r in rows])) if rows else None for k in ("cube", "space", "long")}
    print()
    for k, q in summary.items():
        if q["n"]:
            print(f"{k:12} n = {q['n']:3d}  median {q['median']:.3f}  90 % {q['q90']:.3f}  largest {q['max']:.3f}  "
                  f"above 1.5: {q['above_1_5']}  above 3: {q['above_3']}")
    print("median search seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in cost.items() if v is not None))
    if out:
        with open(out, "w") as fh:
            json.dump({"rows": rows, "summary": summary, "median_seconds": cost, "long_search": LONG_SEARCH}, fh,
                      indent=1)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("board", help="the intervals of a board's records")
    b.add_argument("records", nargs="?", default=None, help="a records.parquet (default: the published board)")
    b.add_argument("--json", default=None)
    s = sub.add_parser("sample", help="which side is loose, on QUICK-sized releases")
    s.add_argument("--datasets", nargs="+", default=["WDBC", "CTG", "CSN", "CRM"])
    s.add_argument("--sigmas", nargs="+", type=float, default=[2.0, 6.0])
    s.add_argument("--methods", nargs="+", default=list(SAMPLE_METHODS))
    s.add_argument("--n-queries", type=int, default=2000)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--bnb", action="store_true", help="also the branch and bound over the cube where d <= 8")
    s.add_argument("--json", default=None)
    a = p.parse_args(argv)
    if a.cmd == "board":
        from dpkit.board.records import InvalidRecordsError

        try:
            return board(a.records, a.json)
        except (InvalidRecordsError, FileNotFoundError) as exc:
            print(f"sup_tightness: {exc}", file=sys.stderr)
            return 2
    if a.n_queries < 1:
        p.error("--n-queries must be >= 1")
    return sample(a.datasets, a.sigmas, a.methods, a.n_queries, a.bnb, a.json, a.seed)


if __name__ == "__main__":
    sys.exit(main())
