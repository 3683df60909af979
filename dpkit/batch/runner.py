"""Headless notebook execution with papermill, and batch runs of manifests on Dask.

Commands
--------
``python -m dpkit.batch notebook NB.ipynb --output DIR [-p NAME VALUE ...]``
    Execute one notebook with ``INTERACTIVE=False`` and ``OUTPUT_DIR=DIR``.
``python -m dpkit.batch run MANIFEST.yaml [--scheduler local|sync|ADDRESS] [--workers N]``
    Execute every (notebook × parameter grid point) of a manifest, each run into its own
    folder ``<output>/<notebook-stem>/<hash>/`` (executed notebook, ``metrics.json``,
    figures, ``run.json``, ``log.txt``), keyed by the notebook and a hash of its
    parameters. Runs already finished are skipped (resumable); a failing run is recorded
    with its traceback, the batch goes on and exits non-zero with a summary. Each run is
    executed into a temporary folder and renamed into place, so results are never half-written.
``python -m dpkit.batch collect OUTPUT [--out FILE_STEM]``
    Merge every run's ``metrics.json`` into one table (CSV, and parquet when pyarrow is
    installed), plus one table of all checks.

Manifest (YAML)::

    name: smoke
    output: ../../results/batch/smoke   # relative to the manifest; default results/batch/<name>
    defaults: {QUICK: true}             # parameters of every run
    runs:
      - notebook: ../00_quickstart.ipynb  # relative to the manifest; a glob ("../5*.ipynb") is allowed
        parameters: {SIGMA: 4.0}
        grid: {SEED: [0, 1]}            # cartesian product, merged over parameters
      - notebook: "../5*.ipynb"           # a glob, minus `exclude` (file-name globs)
        exclude: ["59_*.ipynb"]

Dask: ``--scheduler local`` (default) starts a :class:`distributed.LocalCluster` with one
single-threaded worker process per core; ``--scheduler tcp://host:8786`` submits the same
manifest to an existing cluster (the workers need dpkit installed and the notebooks and
data reachable at the same paths); ``--scheduler sync`` runs in-process, one at a time.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import shutil
import sys
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from dpkit.core.paths import results_dir
from typing import Any, Iterable

__all__ = [
    "execute_notebook",
    "RunSpec",
    "load_manifest",
    "expand_manifest",
    "run_key",
    "run_one",
    "run_manifest",
    "collect",
    "main",
]



# --------------------------------------------------------------------------- one notebook
def execute_notebook(
    notebook: str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    parameters: dict[str, Any] | None = None,
    kernel_name: str | None = None,
    timeout: int | None = 3600,
    progress: bool = False,
) -> Path:
    """Execute ``notebook`` headlessly into ``output_dir`` and return the executed copy's path.

    ``INTERACTIVE`` defaults to ``False`` and ``OUTPUT_DIR`` is set to ``output_dir``; other
    ``parameters`` are injected after the cell tagged ``parameters``. Raises
    :class:`papermill.PapermillExecutionError` (naming the failing cell) if a cell fails;
    ``run.json`` in ``output_dir`` records the status either way.
    """
    import papermill as pm

    nb = Path(notebook)
    if not nb.is_file():
        raise FileNotFoundError(f"notebook not found: {nb}")
    out = Path(output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    params = {"INTERACTIVE": False, **dict(parameters or {}), "OUTPUT_DIR": str(out)}
    executed = out / nb.name
    t0 = time.perf_counter()
    os.environ.setdefault("MPLBACKEND", "Agg")
    status = "running"
    try:
        pm.execute_notebook(
            str(nb),
            str(executed),
            parameters=params,
            kernel_name=kernel_name or "python3",
            cwd=str(nb.resolve().parent),
            progress_bar=progress,
            execution_timeout=timeout,
            log_output=False,
        )
        status = "ok"
    except BaseException as exc:
        status = f"failed: {type(exc).__name__}"
        raise
    finally:
        (out / "run.json").write_text(
            json.dumps(
                {
                    "notebook": str(nb),
                    "parameters": params,
                    "status": status,
                    "wall_time_s": time.perf_counter() - t0,
                    "python": sys.executable,
                },
                indent=2,
                default=str,
            )
        )
    return executed


# --------------------------------------------------------------------------- manifests
@dataclass(frozen=True)
class RunSpec:
    """One notebook execution of a batch: the notebook and its parameters."""

    notebook: Path
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return run_key(self.notebook, self.parameters)

    def folder(self, output: Path) -> Path:
        return Path(output) / self.notebook.stem / self.key


def run_key(notebook: str | os.PathLike, parameters: dict[str, Any]) -> str:
    """A stable 12-hex-digit hash of the notebook's name and its parameters.

    ``OUTPUT_DIR`` and ``INTERACTIVE`` are not part of the key (they do not change results).
    """
    clean = {k: v for k, v in sorted(parameters.items()) if k not in ("OUTPUT_DIR", "INTERACTIVE")}
    blob = json.dumps({"notebook": Path(notebook).name, "parameters": clean}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def load_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """Read and validate a YAML manifest (see the module docstring for its form)."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"manifest not found: {p}")
    m = yaml.safe_load(p.read_text()) or {}
    if not isinstance(m, dict) or not isinstance(m.get("runs"), list) or not m["runs"]:
        raise ValueError(f"manifest {p} must be a mapping with a non-empty list 'runs'")
    for i, r in enumerate(m["runs"]):
        if not isinstance(r, dict) or "notebook" not in r:
            raise ValueError(f"manifest {p}: runs[{i}] must be a mapping with a 'notebook' key")
        unknown = set(r) - {"notebook", "parameters", "grid", "exclude"}
        if unknown:
            raise ValueError(
                f"manifest {p}: runs[{i}] has unknown keys {sorted(unknown)} (allowed: notebook, parameters, grid, exclude)"
            )
        if "exclude" in r and not (isinstance(r["exclude"], list) and all(isinstance(x, str) for x in r["exclude"])):
            raise ValueError(f"manifest {p}: runs[{i}].exclude must be a list of notebook file names or globs")
        for k in ("parameters", "grid"):
            if k in r and not isinstance(r[k], dict):
                raise ValueError(f"manifest {p}: runs[{i}].{k} must be a mapping")
        for g, values in (r.get("grid") or {}).items():
            if not isinstance(values, list) or not values:
                raise ValueError(f"manifest {p}: runs[{i}].grid.{g} must be a non-empty list")
    m["_path"] = str(p.resolve())
    return m


def expand_manifest(manifest: dict[str, Any]) -> list[RunSpec]:
    """All runs of a manifest: each entry's parameters × the cartesian product of its grid."""
    base = Path(manifest.get("_path", ".")).parent
    defaults = dict(manifest.get("defaults") or {})
    specs: list[RunSpec] = []
    seen: set[tuple[str, str]] = set()
    for r in manifest["runs"]:
        pattern = str(r["notebook"])
        if any(ch in pattern for ch in "*?["):
            import fnmatch

            excluded = list(r.get("exclude") or [])
            notebooks = sorted(p.resolve() for p in base.glob(pattern)
                               if p.suffix == ".ipynb" and not any(fnmatch.fnmatch(p.name, x) for x in excluded))
            if not notebooks:
                raise FileNotFoundError(f"manifest {manifest.get('_path')}: no notebook matches {pattern!r}")
        else:
            notebooks = [(base / pattern).resolve()]
            if not notebooks[0].is_file():
                raise FileNotFoundError(f"manifest {manifest.get('_path')}: notebook not found: {notebooks[0]}")
        params = {**defaults, **dict(r.get("parameters") or {})}
        grid = dict(r.get("grid") or {})
        names = list(grid)
        for nb in notebooks:
            for combo in itertools.product(*(grid[n] for n in names)) if names else [()]:
                p = {**params, **dict(zip(names, combo))}
                spec = RunSpec(nb, p)
                ident = (str(nb), spec.key)
                if ident not in seen:
                    seen.add(ident)
                    specs.append(spec)
    return specs


def manifest_output(manifest: dict[str, Any]) -> Path:
    base = Path(manifest.get("_path", ".")).parent
    if manifest.get("output"):
        return (base / manifest["output"]).resolve()
    return results_dir() / "batch" / str(manifest.get("name", Path(manifest.get("_path", "batch")).stem))


def _is_done(folder: Path) -> bool:
    rj = folder / "run.json"
    if not rj.is_file():
        return False
    try:
        return json.loads(rj.read_text()).get("status") == "ok"
    except (OSError, ValueError):
        return False


def run_one(spec: RunSpec, output: str | os.PathLike, *, timeout: int | None = 7200, threads: int | None = 1) -> dict[str, Any]:
    """Execute one run into ``<output>/<stem>/<key>/`` (write to a temporary folder, then rename).

    Returns a summary dict ``{notebook, key, folder, status, wall_time_s, error}``; never raises
    for a failing notebook (the traceback goes to ``error.txt`` and ``run.json``).
    """
    final = spec.folder(Path(output))
    if _is_done(final):
        return {"notebook": spec.notebook.name, "key": spec.key, "folder": str(final), "status": "skipped", "wall_time_s": 0.0}
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{spec.key}.tmp-{uuid.uuid4().hex[:8]}"
    if threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(threads)
    t0 = time.perf_counter()
    error = None
    try:
        execute_notebook(spec.notebook, tmp, parameters=spec.parameters, timeout=timeout)
        status = "ok"
    except BaseException as exc:  # a failing run is recorded, the batch goes on
        status = "failed"
        error = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / "error.txt").write_text(error)
        rj = tmp / "run.json"
        info = json.loads(rj.read_text()) if rj.is_file() else {"notebook": str(spec.notebook), "parameters": spec.parameters}
        info.update(status="failed", error=error[-4000:])
        rj.write_text(json.dumps(info, indent=2, default=str))
    wall = time.perf_counter() - t0
    (tmp / "log.txt").write_text(
        f"notebook: {spec.notebook}\nkey: {spec.key}\nparameters: {json.dumps(spec.parameters, default=str)}\n"
        f"status: {status}\nwall_time_s: {wall:.3f}\n" + (f"\n{error}" if error else "")
    )
    if final.exists():
        shutil.rmtree(final)  # an earlier failed attempt
    os.replace(tmp, final)
    return {"notebook": spec.notebook.name, "key": spec.key, "folder": str(final), "status": status,
            "wall_time_s": wall, "error": (error or "").strip().splitlines()[-1:] }


def run_manifest(
    manifest: str | os.PathLike | dict[str, Any],
    *,
    scheduler: str = "local",
    workers: int | None = None,
    output: str | os.PathLike | None = None,
    progress: bool | None = None,
    timeout: int | None = 7200,
) -> list[dict[str, Any]]:
    """Execute a manifest; return one summary per run (status ``ok``, ``skipped`` or ``failed``).

    Parameters
    ----------
    scheduler : {"local", "sync"} or str
        ``"local"``: a Dask LocalCluster with ``workers`` single-threaded worker processes
        (default: one per core); ``"sync"``: in this process, sequentially; anything else is
        the address of an existing Dask scheduler (``tcp://host:8786``).
    """
    m = load_manifest(manifest) if not isinstance(manifest, dict) else manifest
    out = Path(output).resolve() if output else manifest_output(m)
    specs = expand_manifest(m)
    todo = [s for s in specs if not _is_done(s.folder(out))]
    results = [{"notebook": s.notebook.name, "key": s.key, "folder": str(s.folder(out)), "status": "skipped", "wall_time_s": 0.0}
               for s in specs if s not in todo]
    if progress is None:
        progress = sys.stderr.isatty() and not os.environ.get("CI")
    from tqdm.auto import tqdm

    bar = tqdm(total=len(todo), desc=f"batch {m.get('name', '')}", disable=not progress)
    if not todo:
        bar.close()
        return results
    if scheduler == "sync":
        for s in todo:
            results.append(run_one(s, out, timeout=timeout))
            bar.update(1)
    else:
        from dask.distributed import Client, LocalCluster, as_completed

        cluster = None
        if scheduler == "local":
            n = workers or os.cpu_count() or 1
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client(scheduler)
        try:
            futures = [client.submit(run_one, s, str(out), timeout=timeout, pure=False, key=f"run-{s.notebook.stem}-{s.key}")
                       for s in todo]
            for fut in as_completed(futures):
                try:
                    results.append(fut.result())
                except Exception as exc:  # worker died etc.
                    results.append({"notebook": "?", "key": fut.key, "status": "failed", "wall_time_s": 0.0,
                                    "error": [f"{type(exc).__name__}: {exc}"]})
                bar.update(1)
        finally:
            import logging

            # workers' heartbeats racing the shutdown log CommClosedError tracebacks: noise, not failures
            for name in ("distributed", "distributed.worker", "distributed.nanny", "distributed.core"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
            client.close()
            if cluster is not None:
                cluster.close()
    bar.close()
    (out).mkdir(parents=True, exist_ok=True)
    (out / "batch.json").write_text(json.dumps({"manifest": m.get("_path"), "runs": results}, indent=2, default=str))
    return results


# --------------------------------------------------------------------------- collect
def _iter_runs(output: Path) -> Iterable[tuple[Path, dict[str, Any], dict[str, Any]]]:
    for rj in sorted(Path(output).glob("*/*/run.json")):
        folder = rj.parent
        if folder.name.startswith("."):
            continue
        info = json.loads(rj.read_text())
        mj = folder / "metrics.json"
        metrics = json.loads(mj.read_text()) if mj.is_file() else {}
        yield folder, info, metrics


def collect(output: str | os.PathLike, *, out: str | os.PathLike | None = None):
    """Merge every run's ``metrics.json`` table rows (and checks) into two DataFrames.

    Writes ``<out>.csv`` / ``<out>_checks.csv`` (and ``.parquet`` when pyarrow is there),
    default ``<output>/collected``. Each row carries ``run_notebook``, ``run_key``,
    ``run_status`` and the run's parameters as ``param_<NAME>``.
    """
    import pandas as pd

    rows, checks = [], []
    for folder, info, metrics in _iter_runs(Path(output)):
        params = {f"param_{k}": (json.dumps(v) if isinstance(v, (list, dict)) else v)
                  for k, v in (info.get("parameters") or {}).items() if k != "OUTPUT_DIR"}
        ident = {"run_notebook": Path(info.get("notebook", "")).stem, "run_key": folder.name,
                 "run_status": info.get("status"), **params}
        for r in metrics.get("table", []) or []:
            rows.append({**ident, **r})
        for c in metrics.get("checks", []) or []:
            checks.append({**ident, **c})
    table, checks_df = pd.DataFrame(rows), pd.DataFrame(checks)
    stem = Path(out) if out else Path(output) / "collected"
    stem.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(f"{stem}.csv", index=False)
    checks_df.to_csv(f"{stem}_checks.csv", index=False)
    try:
        import pyarrow  # noqa: F401

        for df, suffix in ((table, ""), (checks_df, "_checks")):
            df.astype({c: str for c in df.columns if df[c].dtype == object}).to_parquet(f"{stem}{suffix}.parquet", index=False)
    except ImportError:
        pass
    return table, checks_df


# --------------------------------------------------------------------------- CLI
def _parse_value(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def _unexpected(metrics_path: Path) -> list[str]:
    from dpkit.outputs.report import read_metrics

    m = read_metrics(metrics_path)
    return [c["id"] for c in m.get("checks", []) if c["verdict"] != c["expected"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dpkit.batch", description="Headless notebook runs (papermill) and batches (Dask).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    one = sub.add_parser("notebook", help="execute one notebook headless")
    one.add_argument("notebook")
    one.add_argument("--output", required=True, help="output folder (executed notebook, metrics.json, figures)")
    one.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="parameter override; VALUE is parsed as YAML (e.g. -p QUICK true -p SIGMAS '[2, 4]')")
    one.add_argument("--progress", action="store_true")
    run = sub.add_parser("run", help="execute a manifest (notebooks x parameter grids)")
    run.add_argument("manifest")
    run.add_argument("--scheduler", default="local", help="local (default), sync, or a Dask scheduler address")
    run.add_argument("--workers", type=int, default=None, help="LocalCluster workers (default: cores)")
    run.add_argument("--output", default=None, help="override the manifest's output folder")
    run.add_argument("--timeout", type=int, default=7200, help="per-cell timeout in seconds")
    col = sub.add_parser("collect", help="merge every run's metrics into one table")
    col.add_argument("output")
    col.add_argument("--out", default=None, help="file stem of the merged tables (default OUTPUT/collected)")
    args = ap.parse_args(argv)

    if args.cmd == "notebook":
        params = {k: _parse_value(v) for k, v in args.param}
        path = execute_notebook(args.notebook, args.output, parameters=params, progress=args.progress)
        print(f"executed: {path}")
        metrics = Path(args.output) / "metrics.json"
        if metrics.exists():
            bad = _unexpected(metrics)
            print(f"metrics: {metrics} ({len(bad)} unexpected verdicts)")
            if bad:
                print("unexpected verdicts: " + ", ".join(bad))
                return 1
        return 0
    if args.cmd == "run":
        t0 = time.perf_counter()
        results = run_manifest(args.manifest, scheduler=args.scheduler, workers=args.workers, output=args.output,
                               timeout=args.timeout, progress=None)
        counts = {s: sum(r["status"] == s for r in results) for s in ("ok", "skipped", "failed")}
        print(f"batch: {len(results)} runs: {counts['ok']} ok, {counts['skipped']} skipped, {counts['failed']} failed "
              f"in {time.perf_counter() - t0:.1f} s")
        for r in results:
            if r["status"] == "failed":
                print(f"  FAILED {r['notebook']} {r['key']}: {' '.join(r.get('error') or [])}  ({r.get('folder')})")
        return 1 if counts["failed"] else 0
    if args.cmd == "collect":
        table, checks = collect(args.output, out=args.out)
        print(f"collected {len(table)} table rows and {len(checks)} checks from {args.output}")
        return 0
    return 2  # pragma: no cover


if __name__ == "__main__":
    raise SystemExit(main())
