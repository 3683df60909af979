"""Cost of the class supremum of one release against evaluating that release on a 10⁴-query workload.

For every data set: one release of a cheap method (default ``marginals-histogram-eps``) at σ = 4,
a thesis workload (10⁴ queries, J = 10 centres, σ = 4), then, timed in the same process one
after the other:

* the workload evaluation — :func:`dpkit.queries.evaluate.worst_case_errors` (true and released
  answers of all 10⁵ centres with the GEMM evaluator);
* what the experiment pipeline evaluates per release — the released answers
  (:func:`dpkit.queries.evaluate.answer_synthetic`) plus the exact answers as
  :func:`dpkit.queries.truth_cache.exact_truth` computes them on a miss
  (:func:`dpkit.queries.exact.exact_answers`, ``method="auto"``) with a warm embedding cache
  (one untimed call first fits or loads the embedding; the pipeline computes the exact answers
  once per repetition and shares them among the repetition's methods, so this is an upper
  bound on a release's share);
* the class supremum — :func:`dpkit.queries.supremum.class_supremum` with its defaults, started
  from the centres of the workload's 16 worst queries (on large data it searches on the
  embedding's low-rank surrogate: ``side`` and ``rank`` in the output; ``shared`` says it found
  the exact answers' embedding in the cache rather than fitting its own).

Prints one row per data set (seconds, the ratios ``sup/eval`` against the GEMM evaluation and
``sup/pipe`` against the pipeline's evaluation, the workload's worst error and the supremum found)
and exits non-zero if a data set cannot be loaded. Usage::

    python benchmarks/supremum.py [--datasets CSN CRM ...] [--method NAME] [--sigma 4] [--domain cube]
                                  [--repeats 1] [--json out.json]

Timings are wall-clock and depend on the machine's load; each is the best of ``--repeats``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np

from dpkit.data.api import load
from dpkit.methods.registry import get
from dpkit.queries.evaluate import answer_synthetic, worst_case_errors
from dpkit.queries.exact import DEFAULT_TOL, cache_info, exact_answers
from dpkit.queries.supremum import class_supremum
from dpkit.queries.workload import THESIS_J, THESIS_N_QUERIES, GaussianKernelWorkload

DATASETS = ("CSN", "CRM", "PKS", "CTG", "WDBC")


def run(name: str, method: str, sigma: float, domain: str, repeats: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's notes on rescaling bounds
        X = np.asarray(load(name).X)
    rel = get(method).at_width(sigma).release(X, rng=1)
    syn = rel.synthetic
    if syn is None:
        raise SystemExit(f"method {method!r} releases no synthetic database; pick one that does")
    wl = GaussianKernelWorkload.generate(THESIS_N_QUERIES, X.shape[1], J=THESIS_J, sigma=sigma, rng=2)
    truth = exact_answers(wl, X, tol=DEFAULT_TOL, method="auto")  # untimed: fits or loads the embedding
    n_cached = len(cache_info())
    t_eval, t_sup, t_syn, t_truth = np.inf, np.inf, np.inf, np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        wc = worst_case_errors(wl, X, syn.points, syn.weights, return_arrays=True)
        t_eval = min(t_eval, time.perf_counter() - t0)
        t0 = time.perf_counter()
        answer_synthetic(wl, syn.points, syn.weights, return_info=True)
        t_syn = min(t_syn, time.perf_counter() - t0)
        t0 = time.perf_counter()
        truth = exact_answers(wl, X, tol=DEFAULT_TOL, method="auto")
        t_truth = min(t_truth, time.perf_counter() - t0)
        worst = np.argsort(-wc.abs_errors, kind="stable")[:16]
        t0 = time.perf_counter()
        sup = class_supremum(X, syn, sigma, rng=3, domain=domain, workload_centres=wl.centres[worst].reshape(-1, X.shape[1]))
        t_sup = min(t_sup, time.perf_counter() - t0)
    t_pipe = t_syn + t_truth
    return {"dataset": name, "n": int(X.shape[0]), "d": int(X.shape[1]), "support": int(syn.support_size),
            "method": method, "sigma": sigma, "domain": domain, "eval_seconds": t_eval, "sup_seconds": t_sup,
            "ratio": t_sup / t_eval, "synthetic_seconds": t_syn, "truth_seconds": t_truth, "truth_method": truth.method,
            "pipeline_seconds": t_pipe, "pipeline_ratio": t_sup / t_pipe, "data_side": sup.data_side, "rank": sup.rank,
            "shared_embedding": len(cache_info()) == n_cached, "workload_abs": wc.abs, "sup_abs": sup.sup_abs,
            "sup_over_workload": sup.sup_abs / wc.abs,
            "witness_rel": sup.witness_rel, "numerical_bound": sup.numerical_bound, "source": sup.source,
            "n_evaluations": sup.n_evaluations, "n_gradients": sup.n_gradients}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    p.add_argument("--method", default="marginals-histogram-eps")
    p.add_argument("--sigma", type=float, default=4.0)
    p.add_argument("--domain", default="cube", choices=("cube", "space"))
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--json", default=None, help="also write the rows to this file")
    a = p.parse_args(argv)
    if a.repeats < 1:
        p.error("--repeats must be >= 1")
    rows = []
    print(f"{'data':5} {'n':>6} {'d':>4} {'eval s':>8} {'pipe s':>7} {'sup s':>7} {'sup/eval':>8} {'sup/pipe':>8} "
          f"{'workload':>9} {'sup':>9} {'sup/wl':>7} {'rel(c*)':>8} {'evals':>6} {'side':>7} {'rank':>5} shared source",
          flush=True)
    for name in a.datasets:
        r = run(name, a.method, a.sigma, a.domain, a.repeats)
        rows.append(r)
        print(f"{r['dataset']:5} {r['n']:6d} {r['d']:4d} {r['eval_seconds']:8.2f} {r['pipeline_seconds']:7.3f} "
              f"{r['sup_seconds']:7.3f} {r['ratio']:8.3f} {r['pipeline_ratio']:8.3f} {r['workload_abs']:9.4g} "
              f"{r['sup_abs']:9.4g} {r['sup_over_workload']:7.2f} {r['witness_rel']:8.3g} {r['n_evaluations']:6d} "
              f"{r['data_side']:>7} {r['rank']:5d} {str(r['shared_embedding']):>6} {r['source']}", flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
