"""Benchmark: the repetitions of Tables 3.2/3.3 as Dask tasks on 1 and on 2 workers, and a projection to more.

Run ``python -m benchmarks.dask_scaling [--quick] [--json FILE]`` on an otherwise idle machine.

The same small but real work runs three times in this one invocation, each on a fresh local Dask cluster of
single-threaded workers (:class:`dpkit.batch.repetitions.DaskRepetitions`, exactly as the batch runner's notebooks
do): 1 worker held to one core of the machine, 1 worker on every core, 2 workers. A worker's tasks use its thread
share, its cores over its task slots (:func:`dpkit.batch.cluster.worker_share`), so the lone worker on two cores
computes each repetition and each fit with two threads: against it, two workers measure processes against threads
on the same cores, not the scaling with workers. The scaling is 2 workers against the worker on one core. The work:
the Tables 3.2/3.3 methods (trigonometric mechanisms I and II, the thesis's parameters) on every
σ of each data set (default WDBC and CSN) with a reduced number of repetitions, one ``run_cells`` per run of the
tables manifest at once (one notebook kernel per run in a batch: CSN's σ in three groups, so its σ = 2 embedding's
fit gates only that group's repetitions; ``--groups dataset``: one run of every σ per data set). Each run has a
disk cache of its own (``DPKIT_CACHE_DIR``, fresh), so no run reuses another one's exact answers or fits. It prints

* the wall time of each run and both speed-ups measured here (after each worker has imported dpkit and hashed its
  sources, once per worker process, reported apart);
* the duration of every repetition task (its own wall time, kept in its checkpoint file) on the worker on one core;
* the cost of sending a data set's job to the workers once (pickled size and time);
* a projection of the wall time on W = 2, 8, 64 workers from the measured task durations: the lower bound
  ``max(longest task, total / W)`` (the critical path is the longest task: a repetition is not split), the
  greedy longest-first list schedule, and Graham's bound for any list order ``total / W + longest (1 − 1/W)``.
  Kernel start-up, data loading, figures and the scheduler's own overhead are not in the projection.

The records do not depend on the number of workers (tests/test_batch_repetitions.py); only the times do.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpkit.batch.projection import list_schedule, project

__all__ = ["list_schedule", "project", "main", "manifest_groups", "job_label", "pin_process", "run_once"]

#: Tables 3.2/3.3's parameters (notebook 20's defaults)
TABLE_PARAMS = dict(epsilon=1.0, delta=1e-3, C=10_000, R=50, k=2, n_iter=10, kappa=7.0)


def _load(names: Sequence[str]) -> dict[str, Any]:
    from dpkit.data import load_available

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data, missing = load_available(list(names))
    if missing:
        raise SystemExit(f"dask_scaling: data set(s) not available here: {missing}")
    return {k: v.X for k, v in data.items()}


def _task_seconds(folder: Path) -> list[dict[str, Any]]:
    out = []
    for p in sorted(folder.rglob("rep-*.pkl")):
        with p.open("rb") as fh:
            out.append({"dataset": p.parent.name, "rep": int(p.stem[4:]), "seconds": pickle.load(fh)["seconds"]})
    return out


#: the manifest whose runs the benchmark's jobs follow by default (``--groups manifest``)
TABLES_MANIFEST = Path(__file__).resolve().parents[1] / "notebooks" / "manifests" / "tables.yaml"


def manifest_groups(names: Sequence[str], sigmas: Sequence[float], manifest: Path = TABLES_MANIFEST
                    ) -> list[tuple[str, tuple[float, ...]]]:
    """The (data set, σ's) of each run of ``manifest`` (expanded by the batch's own
    :func:`~dpkit.batch.manifest.expand_manifest`), for the data sets ``names`` and the σ's ``sigmas`` only, in the
    manifest's order; a data set the manifest does not run gets one job of every σ."""
    from dpkit.batch.manifest import expand_manifest, load_manifest

    wanted = [float(x) for x in sigmas]
    out: list[tuple[str, tuple[float, ...]]] = []
    for spec in expand_manifest(load_manifest(manifest)):
        chosen = tuple(float(x) for x in spec.parameters.get("SIGMAS", wanted) if float(x) in wanted)
        out += [(name, chosen) for name in spec.parameters.get("DATASETS", []) if name in names and chosen]
    out += [(name, tuple(wanted)) for name in names if not any(n == name for n, _ in out)]
    return out


def job_label(name: str, sigmas: Sequence[float]) -> str:
    """A job's name in the output and its checkpoint folder: the data set and its σ's."""
    return f"{name} σ {','.join(f'{x:g}' for x in sigmas)}"


def pin_process(cores: int) -> list[int]:
    """Hold this process, every one of its threads, to the first ``cores`` CPUs of its affinity mask (Linux); the
    threads it starts later inherit the mask. Returns the CPUs."""
    chosen = sorted(os.sched_getaffinity(0))[:int(cores)]
    if len(chosen) < int(cores) or int(cores) < 1:
        raise ValueError(f"cores must be between 1 and {len(os.sched_getaffinity(0))} (this process's CPUs); got {cores}")
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), chosen)
    return chosen


def run_once(data: dict[str, Any], methods: dict[str, Any], *, workers: int, sigmas: Sequence[float], reps: int,
             n_queries: int, seed: int = 0, groups: Sequence[tuple[str, tuple[float, ...]]] | None = None,
             cores: int | None = None) -> dict[str, Any]:
    """Every job's ``run_cells`` at once (one thread each) on a fresh local cluster of ``workers`` workers: one job
    per data set with every σ, or one per ``groups`` entry (data set, its σ's), as the batch runs a manifest.
    ``cores``: each worker process is held to that many CPUs first (:func:`pin_process`; its thread share follows
    from its mask); the scheduler and the jobs' threads in this process are not."""
    from distributed import Client

    from dpkit.batch.repetitions import DaskRepetitions
    from dpkit.batch.scheduler import batch_client
    from dpkit.core.threads import environ_restored
    from dpkit.experiments import run_cells

    with tempfile.TemporaryDirectory(prefix="dpkit-dask-scaling-") as tmp, \
            environ_restored(DPKIT_CACHE_DIR=str(Path(tmp) / "cache")), batch_client("local", workers) as client:
        assert isinstance(client, Client)
        address = client.scheduler.address
        errors: list[BaseException] = []

        jobs = list(groups) if groups is not None else [(name, tuple(sigmas)) for name in data]

        def one(name: str, job_sigmas: tuple[float, ...]) -> None:
            label = name if groups is None else job_label(name, job_sigmas)
            try:
                run_cells(data[name], methods=methods, sigmas=list(job_sigmas), reps=reps, seed=seed, dataset=name,
                          n_queries=n_queries, checkpoint=Path(tmp) / "keep" / label, workers=DaskRepetitions(address))
            except BaseException as exc:  # re-raised below
                errors.append(exc)

        pinned = client.run(pin_process, cores) if cores is not None else None
        t0 = time.perf_counter()  # each worker imports dpkit and hashes its sources once (a batch pays this once too)
        client.run(_warm_up)
        warm = time.perf_counter() - t0
        t0 = time.perf_counter()
        threads = [threading.Thread(target=one, args=job) for job in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        if errors:
            raise errors[0]
        return {"workers": workers, "cores": cores, "pinned": pinned, "wall_s": wall, "warm_up_s": warm,
                "tasks": _task_seconds(Path(tmp) / "keep")}


def _warm_up() -> str:
    import dpkit.experiments  # noqa: F401 - what a repetition task imports
    from dpkit.core.paths import library_fingerprint

    return library_fingerprint()


def shipping_cost(data: dict[str, Any], methods: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The pickled size and pickling time of each data set's job (its data and methods: what a worker receives once)."""
    out = {}
    for name, X in data.items():
        t0 = time.perf_counter()
        blob = pickle.dumps((X, methods), protocol=pickle.HIGHEST_PROTOCOL)
        out[name] = {"bytes": len(blob), "pickle_s": time.perf_counter() - t0}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.dask_scaling", description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["WDBC", "CSN"])
    ap.add_argument("--sigmas", nargs="+", type=float, default=[2.0, 4.0, 6.0, 8.0, 10.0])
    ap.add_argument("--reps", type=int, default=4, help="repetitions per data set (the tables: 30)")
    ap.add_argument("--n-queries", type=int, default=10_000)
    ap.add_argument("--project", nargs="+", type=int, default=[2, 8, 64], help="worker counts of the projection")
    ap.add_argument("--quick", action="store_true", help="a tiny size (WDBC, 2 σ, 2 repetitions, 300 queries): "
                                                          "checks that the script works, measures nothing")
    ap.add_argument("--groups", choices=("manifest", "dataset"), default="manifest",
                    help="manifest (default): one job per run of notebooks/manifests/tables.yaml (CSN and CRM in three "
                         "groups of σ, WDBC in one), as `make tables` runs them; dataset: one job of every σ per data set")
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    if args.quick:
        args.datasets, args.sigmas, args.reps, args.n_queries = ["WDBC"], [2.0, 4.0], 2, 300
    for name in ("reps", "n_queries"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")

    from dpkit.experiments import table_methods

    methods = table_methods(("I", "II"), ("correct",), **TABLE_PARAMS)
    data = _load(args.datasets)
    load = os.getloadavg()
    groups = manifest_groups(list(data), args.sigmas) if args.groups == "manifest" else None
    # 1 worker on one core (the scaling's baseline), 1 worker on every core (a thread share of 2), 2 workers
    runs = [run_once(data, methods, workers=w, sigmas=args.sigmas, reps=args.reps, n_queries=args.n_queries,
                     groups=groups, cores=c) for w, c in ((1, 1), (1, None), (2, None))]
    durations = [t["seconds"] for t in runs[0]["tasks"]]
    result = {
        "datasets": {k: list(v.shape) for k, v in data.items()}, "sigmas": args.sigmas, "reps": args.reps,
        "jobs": [[name, list(x)] for name, x in groups] if groups is not None else None,
        "n_queries": args.n_queries, "runs": runs,
        "speedup_2_workers_vs_1_core": runs[0]["wall_s"] / runs[2]["wall_s"],
        "speedup_2_workers_vs_1_worker_all_cores": runs[1]["wall_s"] / runs[2]["wall_s"],
        "shipping": shipping_cost(data, methods), "projection": project(durations, args.project),
        "meta": {"cores": len(os.sched_getaffinity(0)), "loadavg_before": load, "loadavg_after": os.getloadavg(),
                 "python": sys.version.split()[0]},
    }
    print(f"data sets {', '.join(f'{k} {v[0]}x{v[1]}' for k, v in result['datasets'].items())}; σ {args.sigmas}; "
          f"{args.reps} repetitions of {args.n_queries} queries; trig-I and trig-II")
    if groups is not None:
        print("jobs as the tables manifest's runs: " + "; ".join(job_label(n, g) for n, g in groups))
    for r in runs:
        cpus = sorted({c for pinned in (r["pinned"] or {}).values() for c in pinned})
        where = f"on CPU {','.join(map(str, cpus))}" if cpus else f"on {result['meta']['cores']} cores"
        print(f"{r['workers']} worker(s) {where}: {r['wall_s']:.2f} s wall, {len(r['tasks'])} repetition tasks "
              f"(after {r['warm_up_s']:.2f} s of the workers' imports and source hash, not counted)")
    print(f"speed-up of 2 workers over 1 worker on one core (the scaling): "
          f"{result['speedup_2_workers_vs_1_core']:.2f}x")
    print(f"speed-up of 2 workers over 1 worker on every core (processes against threads): "
          f"{result['speedup_2_workers_vs_1_worker_all_cores']:.2f}x")
    print("repetition tasks on 1 worker on one core (s): " + ", ".join(
        f"{t['dataset']} {t['rep']}: {t['seconds']:.2f}" for t in runs[0]["tasks"]))
    for name, s in result["shipping"].items():
        print(f"job of {name} sent once per worker: {s['bytes'] / 1e6:.2f} MB pickled in {s['pickle_s'] * 1e3:.1f} ms")
    print(f"projection from {len(durations)} tasks, {sum(durations):.2f} s in all, longest {max(durations):.2f} s:")
    for p in result["projection"]:
        print(f"  W = {p['workers']:>3}: lower bound {p['lower_bound_s']:.2f} s, longest-first list schedule "
              f"{p['list_schedule_s']:.2f} s, any list order at most {p['graham_bound_s']:.2f} s")
    print(f"load average before {load[0]:.2f}, after {result['meta']['loadavg_after'][0]:.2f} "
          f"({result['meta']['cores']} cores): timings on a loaded machine are not comparable")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
