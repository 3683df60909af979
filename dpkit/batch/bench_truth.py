"""Benchmark of the exact-answer stage: the low-rank path against today's evaluator, in the same run.

Run ``python -m dpkit.batch.bench_truth [--datasets CSN ...] [--sigmas 2 4 ...] [--queries 10000]``;
it prints a markdown table (``--out file.json`` also writes the rows).

Per data set and σ, on one workload of ``queries`` Gaussian-kernel queries with ``J`` centres
(:meth:`~dpkit.queries.workload.GaussianKernelWorkload.generate`, as in the experiments):

* ``fit_s`` — the one-time :class:`~dpkit.queries.lowrank.KernelEmbedding` fit (``‖m_D‖²``,
  landmarks, certificates), reported separately: a table cell's 30 repetitions reuse it;
* ``new_s`` — :func:`dpkit.queries.exact.exact_answers` with ``method="lowrank"`` and the cached
  embedding: data hash, answers, per-answer bounds and the exact fallback, i.e. the whole
  per-workload cost;
* ``old_s`` — :func:`dpkit.queries.evaluate.answer_data` with its defaults (today's truth);
* ``ratio = old_s / new_s`` and ``ratio_amortised = old_s / (new_s + fit_s / amortise_over)``;
* ``new_bound`` (max proven absolute bound of the new answers), ``old_bound`` (the evaluator's
  relative bound times the largest answer), ``max_diff`` (largest ``|new − old|``; must not
  exceed the two bounds' sum, ``agree``) and ``auto`` (what ``method="auto"`` picks once the
  embedding is cached).

Timings alternate (old, new) ``repeats`` times and keep the best of each, so both see the same
background load of the shared machine; ratios, not absolute times, are the result.
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from dpkit.core.validation import check_positive_int
from dpkit.queries.evaluate import answer_data
from dpkit.queries.exact import embedding_for, exact_answers, lowrank_cost
from dpkit.queries.lowrank import FitOptions
from dpkit.queries.workload import THESIS_SIGMAS, GaussianKernelWorkload

__all__ = ["truth_stage", "render_markdown", "main"]

_COLUMNS = (
    ("dataset", "data"),
    ("n_unique", "n (distinct)"),
    ("d", "d"),
    ("sigma", "σ"),
    ("rank", "rank r (prefix)"),
    ("fit_s", "fit s"),
    ("new_s", "new s"),
    ("old_s", "old s"),
    ("ratio", "old/new"),
    ("ratio_amortised", "old/(new+fit/30)"),
    ("new_bound", "new max bound"),
    ("old_bound", "old max bound"),
    ("n_fallback", "fallback"),
    ("max_diff", "max diff new−old"),
    ("auto", "auto"),
)


def _load(name: str) -> np.ndarray:
    from dpkit.core.exceptions import PrivacyLeakWarning
    from dpkit.data import load

    with warnings.catch_warnings():  # data-derived rescaling bounds: this only times the evaluation
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return np.asarray(load(name, download=False).X, dtype=np.float64)


def _timed(fn: Any, times: list[float]) -> Any:
    t0 = time.perf_counter()
    out = fn()
    times.append(time.perf_counter() - t0)
    return out


def _row(name: str, X: np.ndarray, sigma: float, wl: GaussianKernelWorkload, cfg: dict[str, Any]) -> dict[str, Any]:
    opts = cfg["options"] or FitOptions(tol=cfg["tol"])
    t0 = time.perf_counter()
    emb, _ = embedding_for(X, sigma, options=opts, n_threads=cfg["n_threads"])
    fit_s = emb.info["seconds"]["total"] if "seconds" in emb.info else time.perf_counter() - t0
    old_t: list[float] = []
    new_t: list[float] = []
    threads = cfg["n_threads"]
    for _ in range(cfg["repeats"]):  # alternate, so both see the same background load
        old, info = _timed(lambda: answer_data(wl, X, return_info=True, n_threads=threads), old_t)
        new = _timed(lambda: exact_answers(wl, X, tol=cfg["tol"], method="lowrank", options=opts, n_threads=threads), new_t)
    old_bound = float(info["error_bound"]) * float(np.abs(old).max())
    diff = np.abs(new.answers - old)
    new_s, old_s = min(new_t), min(old_t)
    return {
        "dataset": name,
        "n": int(X.shape[0]),
        "n_unique": emb.n_unique,
        "d": int(X.shape[1]),
        "sigma": float(sigma),
        "queries": wl.n_queries,
        "J": wl.J,
        "rank": f"{emb.rank} ({emb.n_prefix})",
        "fit_s": fit_s,
        "new_s": new_s,
        "old_s": old_s,
        "ratio": old_s / new_s,
        "ratio_amortised": old_s / (new_s + fit_s / cfg["amortise_over"]),
        "new_bound": new.max_bound,
        "old_bound": old_bound,
        "n_fallback": new.n_fallback,
        "max_diff": float(diff.max()),
        "agree": bool(np.all(diff <= new.bounds + float(info["error_bound"]) * np.abs(old))),
        "auto": "lowrank" if lowrank_cost(emb) < emb.n_unique else "exact",
        "mmd": emb.mmd,
    }


def truth_stage(
    datasets: Sequence[str] | Mapping[str, Any] = ("CSN",),
    sigmas: Sequence[float] = THESIS_SIGMAS,
    *,
    n_queries: int = 10_000,
    J: int = 10,
    tol: float = 1e-6,
    repeats: int = 1,
    amortise_over: int = 30,
    seed: int = 0,
    options: FitOptions | None = None,
    n_threads: int | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One row per (data set, σ): the new path, the old evaluator, their ratio and the bounds (module docs).

    ``datasets`` are names for :func:`dpkit.data.load` or a mapping name → array (n, d).
    The workload of (data set number ``i``, σ number ``k``) is seeded by ``SeedSequence([seed, i, k])``.
    """
    cfg = {
        "tol": tol,
        "repeats": check_positive_int(repeats, name="repeats"),
        "amortise_over": check_positive_int(amortise_over, name="amortise_over"),
        "options": options,
        "n_threads": n_threads,
    }
    items = datasets.items() if isinstance(datasets, Mapping) else ((name, None) for name in datasets)
    rows: list[dict[str, Any]] = []
    if progress:
        print("\n".join(render_markdown([]).splitlines()[:2]), flush=True)
    for i, (name, X) in enumerate(items):
        X = _load(name) if X is None else np.asarray(X, dtype=np.float64)
        for k, sigma in enumerate(sigmas):
            ss = np.random.SeedSequence([seed, i, k])
            wl = GaussianKernelWorkload.generate(n_queries, X.shape[1], J=J, sigma=sigma, rng=ss)
            rows.append(_row(name, X, float(sigma), wl, cfg))
            if progress:
                print(render_markdown(rows[-1:]).splitlines()[-1], flush=True)
    return rows


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if (abs(v) < 1e-2 or abs(v) >= 1e4) and v != 0 else f"{v:.3f}".rstrip("0").rstrip(".")
    return str(v)


def render_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as a markdown table (the columns of the module docs)."""
    head = "| " + " | ".join(title for _, title in _COLUMNS) + " |"
    sep = "|" + "|".join("---" for _ in _COLUMNS) + "|"
    body = ["| " + " | ".join(_cell(r.get(key)) for key, _ in _COLUMNS) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m dpkit.batch.bench_truth [--datasets CSN] [--sigmas 2 4 6 8 10] [--queries N] [--out f.json]``."""
    ap = argparse.ArgumentParser(prog="python -m dpkit.batch.bench_truth", description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["CSN"], help="data set codes (default: CSN)")
    ap.add_argument("--sigmas", nargs="+", type=float, default=list(THESIS_SIGMAS))
    ap.add_argument("--queries", type=int, default=10_000, help="queries per workload (J = 10 centres each)")
    ap.add_argument("--repeats", type=int, default=1, help="alternating timings, best of")
    ap.add_argument("--tol", type=float, default=1e-6, help="required bound per answer")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    rows = truth_stage(
        args.datasets, args.sigmas, n_queries=args.queries, tol=args.tol, repeats=args.repeats, seed=args.seed, progress=True
    )
    print()
    print(render_markdown(rows))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=2)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
