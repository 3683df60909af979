"""Benchmark of the exact-answer stage: the low-rank path against today's evaluator, in the same run.

Run ``python -m benchmarks.bench_truth [--datasets CSN ...] [--sigmas 2 4 ...] [--queries 10000]``;
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

**Full Tables 3.2 + 3.3** (``--tables``): :func:`table_costs` measures, per (data set, σ) cell, the stages of
the real runner path (:func:`dpkit.experiments.records.repetitions` with the cell's own seeds, the registry's
trig-I/trig-II with the notebook's parameters and correct constants, the runner's record step
:func:`~dpkit.experiments.records.record_release`) on ``probe_reps`` repetitions: data load, the one-time
embedding fit (the fit seconds of the embedding the exact answers left in the cache, 0 if none), per
repetition the workload draw, the exact answers, each mechanism's release and the answering of its synthetic
database, plus the fixed cost of one notebook run (a tiny ``20_tables`` run through papermill).
The probe runs with an empty, private disk cache, so every fit and every exact answer is paid.
:func:`project_tables` turns them into core-seconds (the exact answers and the fit use
``cores`` threads, everything else one) and a projected wall time on ``workers`` worker processes:
``max(total core-seconds / cores, list-scheduling makespan of the manifest's runs in order)``, for
a *cold* run (fits and exact answers computed) and a *warm* one (both read from the disk cache of
a previous run). ``--measure-tables`` also runs ``notebooks/manifests/tables.yaml`` with correct
constants only into a scratch output (:func:`measure_tables`) and prints the measured wall time
next to the projection.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from dpkit.core.threads import environ_restored
from dpkit.core.validation import check_positive_int
from dpkit.queries.evaluate import answer_data
from dpkit.queries.exact import embedding_for, exact_answers, lowrank_cost
from dpkit.queries.lowrank import FitOptions
from dpkit.queries.workload import THESIS_SIGMAS, GaussianKernelWorkload

__all__ = [
    "truth_stage",
    "render_markdown",
    "table_costs",
    "project_tables",
    "render_projection",
    "measure_tables",
    "manifest_runs",
    "main",
]

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


@contextlib.contextmanager
def _private_disk_cache() -> Any:
    """A fresh, empty disk cache for the duration (fits and exact answers are measured, not read back)."""
    with tempfile.TemporaryDirectory() as tmp, environ_restored(DPKIT_CACHE_DIR=tmp):
        yield tmp


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
    with _private_disk_cache():  # the fit is measured here, never read from an earlier run's cache
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


# ----------------------------------------------------------------------------- full tables
#: Parameters of the 20_tables notebook (its defaults; correct constants).
TABLE_PARAMS = {"epsilon": 1.0, "delta": 1e-3, "C": 10_000, "R": 50, "k": 2, "n_iter": 10, "kappa": 7.0}


def _default_manifest() -> Path:
    from dpkit.core.paths import repo_root

    root = repo_root() or Path.cwd()
    return root / "notebooks" / "manifests" / "tables.yaml"


def manifest_runs(manifest: str | os.PathLike | None = None) -> list[tuple[list[str], list[float]]]:
    """``[(data sets, σ's)]`` of every run of the tables manifest, in manifest order."""
    from dpkit.batch.manifest import expand_manifest, load_manifest

    out = []
    for spec in expand_manifest(load_manifest(manifest or _default_manifest())):
        p = spec.parameters
        out.append((list(p.get("DATASETS") or []), [float(v) for v in (p.get("SIGMAS") or list(THESIS_SIGMAS))]))
    return out


def _notebook_overhead() -> float:
    """Wall seconds of a tiny 20_tables run (WDBC, 1 repetition, 100 queries, no sweep) through papermill."""
    from dpkit.batch import execute_notebook
    from dpkit.core.paths import repo_root

    nb = (repo_root() or Path.cwd()) / "notebooks" / "20_tables.ipynb"
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        execute_notebook(nb, Path(tmp) / "run", parameters={
            "QUICK": False, "INTERACTIVE": False, "DATASETS": ["WDBC"], "SIGMAS": [4.0], "REPS": 1, "N_QUERIES": 100,
            "CONSTANTS": ["correct"], "SENSITIVITY_DATASET": "none"})
        return time.perf_counter() - t0


def table_costs(
    datasets: Sequence[str] | Mapping[str, Any] = ("CSN", "CRM", "PKS", "CTG", "WDBC"),
    sigmas: Sequence[float] = THESIS_SIGMAS,
    *,
    probe_reps: int = 2,
    n_queries: int = 10_000,
    J: int = 10,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    notebook_overhead: float | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Measured stage costs of every (data set, σ) cell of Tables 3.2/3.3 (module docs).

    Returns ``{"cells": [...], "load_s": {data set: s}, "notebook_overhead_s": s, "probe_reps": r}``; each
    cell has ``dataset, sigma, fit_s, workload_s, truth_s, truth_method, release_s`` (dict per mechanism),
    ``answer_s`` (dict per mechanism), per-repetition means. ``notebook_overhead`` None measures it.
    """
    from dpkit.experiments.records import cell_seed, record_release, repetitions
    from dpkit.experiments.thesis import table_methods
    from dpkit.queries import exact
    from dpkit.queries.truth_cache import clear_truth_cache

    probe_reps = check_positive_int(probe_reps, name="probe_reps")
    methods = table_methods(("I", "II"), ("correct",), **(params or TABLE_PARAMS))
    items = datasets.items() if isinstance(datasets, Mapping) else ((name, None) for name in datasets)
    cells: list[dict[str, Any]] = []
    load_s: dict[str, float] = {}
    with _private_disk_cache():  # cold: a private, empty disk cache
        try:
            for name, X in items:
                t0 = time.perf_counter()
                X = _load(name) if X is None else np.asarray(X, dtype=np.float64)
                load_s[name] = time.perf_counter() - t0
                for sigma in sigmas:
                    exact.clear_cache()
                    clear_truth_cache()
                    configured = {k: m.at_width(sigma) for k, m in methods.items()}
                    acc: dict[str, Any] = {"workload": [], "truth": [], "release": {k: [] for k in configured},
                                           "answer": {k: [] for k in configured}}
                    reps = repetitions(X, sigma=sigma, names=list(configured), reps=probe_reps, n_queries=n_queries,
                                       J=J, rng=cell_seed(seed, name, sigma))
                    for i in range(probe_reps):
                        t0 = time.perf_counter()
                        rep = next(reps)
                        t_next = time.perf_counter() - t0
                        t0 = time.perf_counter()
                        GaussianKernelWorkload.generate(n_queries, X.shape[1], J=J, sigma=sigma,
                                                        rng=np.random.default_rng(cell_seed(seed, name, sigma).spawn(
                                                            probe_reps)[i].spawn(1)[0]))
                        t_wl = time.perf_counter() - t0
                        acc["workload"].append(t_wl)
                        acc["truth"].append(max(t_next - t_wl, 0.0))
                        for label, m in configured.items():
                            t0 = time.perf_counter()
                            rel = m.release(X, rng=rep.generator(label), workload=rep.workload)
                            t1 = time.perf_counter()
                            record_release(label, rel, t1 - t0, rep=rep, sigma=sigma)
                            acc["release"][label].append(t1 - t0)
                            acc["answer"][label].append(time.perf_counter() - t1)
                    fit_s = sum(e["fit_seconds"] for e in exact.cache_info())  # the fit(s) this cell paid
                    truth = acc["truth"]
                    cells.append({
                        "dataset": name, "sigma": float(sigma), "fit_s": float(fit_s),
                        "workload_s": float(np.mean(acc["workload"])),
                        # the first repetition's exact answers include the fit
                        "truth_s": float(np.mean(truth[1:])) if len(truth) > 1 else max(truth[0] - fit_s, 0.0),
                        "truth_method": rep.truth.method,
                        "release_s": {k: float(np.mean(v)) for k, v in acc["release"].items()},
                        "answer_s": {k: float(np.mean(v)) for k, v in acc["answer"].items()},
                    })
                    if progress:
                        c = cells[-1]
                        print(f"  {name} σ={sigma:g}: fit {c['fit_s']:.2f} s, per repetition: workload "
                              f"{c['workload_s']:.3f}, truth {c['truth_s']:.3f} ({c['truth_method']}), releases "
                              f"{sum(c['release_s'].values()):.3f}, answers {sum(c['answer_s'].values()):.3f} s", flush=True)
        finally:
            exact.clear_cache()
            clear_truth_cache()
    overhead = _notebook_overhead() if notebook_overhead is None else float(notebook_overhead)
    return {"cells": cells, "load_s": load_s, "notebook_overhead_s": overhead, "probe_reps": probe_reps}


def _cell_core_seconds(c: Mapping[str, Any], reps: int, cores: int, warm: bool) -> dict[str, float]:
    """Core-seconds per stage of one full cell (the fit and the exact answers use ``cores`` threads)."""
    return {
        "fit": 0.0 if warm else c["fit_s"] * cores,
        "truth": 0.0 if warm else reps * c["truth_s"] * cores,
        "workload": reps * c["workload_s"],
        "release": reps * sum(c["release_s"].values()),
        "answer": reps * sum(c["answer_s"].values()),
    }


def project_tables(costs: Mapping[str, Any], *, reps: int = 30, workers: int = 2, cores: int = 2,
                   runs: Sequence[tuple[Sequence[str], Sequence[float]]] | None = None) -> dict[str, Any]:
    """Projected wall time of the full tables (module docs) from :func:`table_costs`, cold and warm.

    ``runs`` (default: :func:`manifest_runs`) groups the cells into batch runs; a run of a data set
    that was not measured (e.g. PAM, unavailable) costs one notebook start. Returns, per mode
    (``"cold"``, ``"warm"``), ``wall_s``, ``core_s``, ``makespan_s`` and ``stages_core_s`` (per stage, plus
    ``load`` and ``notebook``), and the per-run costs.
    """
    reps = check_positive_int(reps, name="reps")
    workers = check_positive_int(workers, name="workers")
    cores = check_positive_int(cores, name="cores")
    by_cell = {(c["dataset"], float(c["sigma"])): c for c in costs["cells"]}
    runs = manifest_runs() if runs is None else runs
    out: dict[str, Any] = {"reps": reps, "workers": workers, "cores": cores, "n_runs": len(runs)}
    for mode in ("cold", "warm"):
        stages: dict[str, float] = {"notebook": 0.0, "load": 0.0}
        run_costs = []
        for dsets, sigmas in runs:
            cost = float(costs["notebook_overhead_s"])
            for ds in dsets:
                cells = [by_cell[(ds, float(s))] for s in sigmas if (ds, float(s)) in by_cell]
                if cells:
                    cost += costs["load_s"].get(ds, 0.0)
                    stages["load"] += costs["load_s"].get(ds, 0.0)
                for c in cells:
                    for k, v in _cell_core_seconds(c, reps, cores, mode == "warm").items():
                        stages[k] = stages.get(k, 0.0) + v
                        cost += v
            stages["notebook"] += float(costs["notebook_overhead_s"])
            run_costs.append(cost)
        free = [0.0] * workers  # list scheduling in manifest order (the batch runner submits in that order)
        for cost in run_costs:
            i = int(np.argmin(free))
            free[i] += cost
        core_s = float(sum(run_costs))
        out[mode] = {"wall_s": max(core_s / cores, max(free)), "core_s": core_s, "makespan_s": max(free),
                     "stages_core_s": stages, "run_core_s": run_costs}
    return out


def render_projection(proj: Mapping[str, Any], measured_s: float | None = None) -> str:
    """The projection (and the measured wall time, if given) as markdown."""
    lines = [f"Full Tables 3.2 + 3.3 ({proj['reps']} repetitions, correct constants, {proj['n_runs']} batch runs, "
             f"{proj['workers']} workers on {proj['cores']} cores), projected from the measured stage costs:", "",
             "| run | projected wall s | core-s | " + " | ".join(f"{k} core-s" for k in proj["cold"]["stages_core_s"]) + " |",
             "|---|---|---|" + "---|" * len(proj["cold"]["stages_core_s"])]
    for mode in ("cold", "warm"):
        p = proj[mode]
        label = "cold (fits + exact answers computed)" if mode == "cold" else "warm (both from the disk cache)"
        lines.append(f"| {label} | {p['wall_s']:.0f} | {p['core_s']:.0f} | "
                     + " | ".join(f"{v:.0f}" for v in p["stages_core_s"].values()) + " |")
    if measured_s is not None:
        lines += ["", f"Measured (tables manifest, correct constants, cold disk cache): {measured_s:.0f} s wall; "
                      f"projected cold {proj['cold']['wall_s']:.0f} s (measured/projected "
                      f"{measured_s / proj['cold']['wall_s']:.2f})."]
    return "\n".join(lines)


def measure_tables(output: str | os.PathLike, *, manifest: str | os.PathLike | None = None, workers: int = 2,
                   cache_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Run the tables manifest with correct constants only into ``output`` (a scratch folder) and time it.

    The disk cache is ``cache_dir`` (default: a fresh folder inside ``output``, i.e. a cold run). Returns
    ``{"wall_s", "runs", "ok", "failed"}``.
    """
    from dpkit.batch.manifest import load_manifest
    from dpkit.batch.runner import run_manifest

    m = load_manifest(manifest or _default_manifest())
    m = dict(m)
    m["defaults"] = {**(m.get("defaults") or {}), "CONSTANTS": ["correct"]}
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    with environ_restored(DPKIT_CACHE_DIR=str(cache_dir or out / "cache")):  # inherited by the worker processes
        t0 = time.perf_counter()
        res = run_manifest(m, workers=workers, output=out / "runs", progress=False)
        wall = time.perf_counter() - t0
    return {"wall_s": wall, "runs": len(res), "ok": sum(r["status"] == "ok" for r in res),
            "failed": sum(r["status"] == "failed" for r in res)}


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m benchmarks.bench_truth [--datasets CSN] [--sigmas 2 4 6 8 10] [--queries N] [--out f.json]``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_truth", description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["CSN"], help="data set codes (default: CSN)")
    ap.add_argument("--sigmas", nargs="+", type=float, default=list(THESIS_SIGMAS))
    ap.add_argument("--queries", type=int, default=10_000, help="queries per workload (J = 10 centres each)")
    ap.add_argument("--repeats", type=int, default=1, help="alternating timings, best of")
    ap.add_argument("--tol", type=float, default=1e-6, help="required bound per answer")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="also write the rows as JSON here")
    ap.add_argument("--tables", action="store_true",
                    help="also measure the stage costs of every table cell and print the projected wall time of the full "
                         "Tables 3.2 + 3.3 (cold and warm disk cache)")
    ap.add_argument("--probe-reps", type=int, default=2, help="repetitions measured per table cell (--tables)")
    ap.add_argument("--workers", type=int, default=2, help="batch workers of the projection / measurement")
    ap.add_argument("--measure-tables", default=None, metavar="SCRATCH",
                    help="also run the tables manifest (correct constants, cold cache) into this scratch folder and "
                         "print the measured wall time (implies --tables)")
    ap.add_argument("--skip-truth", action="store_true", help="skip the per-σ truth-stage table (only --tables)")
    args = ap.parse_args(argv)
    # every option is checked before the truth stage runs (minutes), not when its stage is reached
    from benchmarks.bench import check_dataset_option

    check_dataset_option(ap, args.datasets)
    for opt in ("queries", "repeats", "probe_reps", "workers"):
        if getattr(args, opt) < 1:
            ap.error(f"--{opt.replace('_', '-')} must be a positive integer, got {getattr(args, opt)}")
    for opt, values in (("sigmas", args.sigmas), ("tol", [args.tol])):
        bad = [v for v in values if not 0.0 < v < float("inf")]
        if bad:
            ap.error(f"--{opt} must be finite and > 0, got {bad[0]:g}")
    report: dict[str, Any] = {}
    if not args.skip_truth:
        rows = truth_stage(
            args.datasets, args.sigmas, n_queries=args.queries, tol=args.tol, repeats=args.repeats, seed=args.seed,
            progress=True
        )
        print()
        print(render_markdown(rows))
        report["truth_stage"] = rows
    if args.tables or args.measure_tables:
        from dpkit.queries.gemm import usable_cores

        print("\nTable cells (stage costs on the real runner path):", flush=True)
        costs = table_costs(args.datasets, args.sigmas, probe_reps=args.probe_reps, n_queries=args.queries,
                            seed=args.seed, progress=True)
        proj = project_tables(costs, workers=args.workers, cores=usable_cores())
        measured = None
        if args.measure_tables:
            print(f"\nrunning the tables manifest into {args.measure_tables} ...", flush=True)
            measured = measure_tables(args.measure_tables, workers=args.workers)
            report["measured"] = measured
            if measured["failed"]:
                print(f"warning: {measured['failed']} run(s) failed (see {args.measure_tables}/runs)")
        print()
        print(render_projection(proj, None if measured is None else measured["wall_s"]))
        report.update(table_costs=costs, projection=proj)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(report if (args.tables or args.measure_tables) else report.get("truth_stage", []), fh, indent=2)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
