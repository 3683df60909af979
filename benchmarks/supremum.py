"""Cost of the class supremum of one release against evaluating that release on a 10⁴-query workload.

For every data set: one release of a cheap method (default ``marginals-histogram-eps``) at σ = 4,
a thesis workload (10⁴ queries, J = 10 centres, σ = 4), then, timed in the same process one
after the other:

* the workload evaluation — :func:`dpkit.queries.evaluate.worst_case_errors` (true and released
  answers of all 10⁵ centres with the GEMM evaluator);
* the class supremum — :func:`dpkit.queries.supremum.class_supremum` with its defaults, started
  from the centres of the workload's 16 worst queries.

Prints one row per data set (seconds, the ratio, the workload's worst error and the supremum
found) and exits non-zero if a data set cannot be loaded. Usage::

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
from dpkit.queries.evaluate import worst_case_errors
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
    t_eval, t_sup = np.inf, np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        wc = worst_case_errors(wl, X, syn.points, syn.weights, return_arrays=True)
        t_eval = min(t_eval, time.perf_counter() - t0)
        worst = np.argsort(-wc.abs_errors, kind="stable")[:16]
        t0 = time.perf_counter()
        sup = class_supremum(X, syn, sigma, rng=3, domain=domain, workload_centres=wl.centres[worst].reshape(-1, X.shape[1]))
        t_sup = min(t_sup, time.perf_counter() - t0)
    return {"dataset": name, "n": int(X.shape[0]), "d": int(X.shape[1]), "support": int(syn.support_size),
            "method": method, "sigma": sigma, "domain": domain, "eval_seconds": t_eval, "sup_seconds": t_sup,
            "ratio": t_sup / t_eval, "workload_abs": wc.abs, "sup_abs": sup.sup_abs, "sup_over_workload": sup.sup_abs / wc.abs,
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
    print(f"{'data':5} {'n':>6} {'d':>4} {'eval s':>8} {'sup s':>7} {'ratio':>6} {'workload':>9} {'sup':>9} "
          f"{'sup/wl':>7} {'rel(c*)':>8} {'evals':>6} source", flush=True)
    for name in a.datasets:
        r = run(name, a.method, a.sigma, a.domain, a.repeats)
        rows.append(r)
        print(f"{r['dataset']:5} {r['n']:6d} {r['d']:4d} {r['eval_seconds']:8.2f} {r['sup_seconds']:7.3f} "
              f"{r['ratio']:6.3f} {r['workload_abs']:9.4g} {r['sup_abs']:9.4g} {r['sup_over_workload']:7.2f} "
              f"{r['witness_rel']:8.3g} {r['n_evaluations']:6d} {r['source']}", flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
