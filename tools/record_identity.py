"""Record one full-size leaderboard repetition, and compare two recordings: a speed-up must not change a bit.

Process tooling, not part of the dpkit package. ``record`` runs repetition ``--rep`` of notebook 45's
:func:`~dpkit.experiments.protocol.run_cells` job (the same methods, budget, σ's, workload size and seeds:
run seed 0, 10⁴ queries of J = 10 centres, the class supremum over the cube) on one data set, in this process,
and keeps every record with its measured times removed (``time_s``, ``timings`` and the ``seconds`` of the class
supremum's search and of its upper bound). Repetition ``i`` depends on its own seeds only (``run_cells``), so it
equals repetition ``i`` of the full board. ``compare`` tells whether two recordings are equal to the bit (floats by
their exact value, NaN equal to NaN) and prints every difference.

The code recorded is whichever ``dpkit`` Python imports (``PYTHONPATH``); the file keeps its path. The on-disk
caches (exact answers, embeddings, JAX programs) are turned off unless ``--cache`` is given, so every number is
computed by the code under test.

Usage::

    python tools/record_identity.py record OUT.pkl --dataset CTG [--rep 0] [--sigmas 2 4 6 8 10] [--methods ...]
    python tools/record_identity.py compare BEFORE.pkl AFTER.pkl

``compare`` exits 1 if the recordings differ (or were made with other settings), 0 if they are identical.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import pickle
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

#: notebook 45's defaults (notebooks/manifests/leaderboard.yaml at full size)
SIGMAS = (2.0, 4.0, 6.0, 8.0, 10.0)
N_QUERIES, J, SEED, EPSILON, DELTA = 10_000, 10, 0, 1.0, 1e-3
#: record fields that hold a measured time, never a computed number
TIMED_FIELDS = ("time_s", "timings")


def clean_record(rec: Any) -> dict[str, Any]:
    """A run record as a dict without its measured times (``time_s``, ``timings``, and the ``seconds`` of every nested
    record: the class supremum's search, its upper bound)."""
    out = {f.name: getattr(rec, f.name) for f in dataclasses.fields(rec) if f.name not in TIMED_FIELDS}
    for name, value in out.items():
        if isinstance(value, dict) and "seconds" in value:
            out[name] = {k: v for k, v in value.items() if k != "seconds"}
    return out


class _OneRepetition:
    """A repetition executor (``run_cells``' ``workers``) that computes repetition ``rep`` alone, in this process."""

    def __init__(self, rep: int) -> None:
        self.rep = rep
        self.records: list[Any] = []

    def __call__(self, job: Any, reps: int, *, keep: Any, label: str, finished: Any, arrived: Any) -> None:
        self.records, _seconds = job.run(self.rep)


def record(dataset: str, rep: int, sigmas: list[float], methods: list[str]) -> dict[str, Any]:
    """Repetition ``rep`` of notebook 45's job on ``dataset``: ``{"settings", "records", "seconds"}``."""
    import dpkit
    from dpkit.board.report import board_methods
    from dpkit.data import load_available
    from dpkit.experiments.protocol import run_cells

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # data-derived steps, as notebook 45
        datasets, missing = load_available([dataset])
    if dataset not in datasets:
        raise SystemExit(f"record_identity: data set {dataset!r} not available: {missing.get(dataset, 'unknown')}")
    X = np.asarray(datasets[dataset].X, dtype=float)
    named = board_methods(methods, epsilon=EPSILON, delta=DELTA)
    # run_cells builds notebook 45's job; an executor (dpkit.experiments.parallel.RepetitionExecutor) that computes
    # only repetition `rep` hands it over. Child `rep` of a cell's SeedSequence is the same whatever the number of
    # children, so `rep + 1` repetitions give repetition `rep` of the full board.
    only = _OneRepetition(rep)
    t0 = time.perf_counter()
    run_cells(X, methods=named, sigmas=sigmas, reps=rep + 1, seed=SEED, dataset=dataset, n_queries=N_QUERIES, J=J, workers=only,
              supremum="cube")
    records = only.records
    seconds = time.perf_counter() - t0
    settings = {"dataset": dataset, "rep": rep, "sigmas": list(sigmas), "methods": list(named), "n_queries": N_QUERIES,
                "J": J, "seed": SEED, "epsilon": EPSILON, "delta": DELTA}
    return {"settings": settings, "records": [clean_record(r) for r in records], "seconds": seconds,
            "dpkit": str(Path(dpkit.__file__).resolve().parent)}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1.0, a) == math.copysign(1.0, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return type(a) is type(b) and a == b


def diff(a: Any, b: Any, where: str, out: list[str]) -> None:
    """Append to ``out`` every place where ``a`` and ``b`` differ (bit for bit)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{where}/{k}: only in {'after' if k not in a else 'before'}")
            else:
                diff(a[k], b[k], f"{where}/{k}", out)
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple) and type(a) is type(b) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            diff(x, y, f"{where}[{i}]", out)
    elif not _same(a, b):
        out.append(f"{where}: {a!r} -> {b!r}")


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Every difference between two recordings (settings first), as lines."""
    out: list[str] = []
    diff(before["settings"], after["settings"], "settings", out)
    if out:
        return out
    for i, (x, y) in enumerate(zip(before["records"], after["records"], strict=True)):
        diff(x, y, f"record {i} ({x['method']}, σ = {x['sigma']:g})", out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="run one repetition and keep its records without timings")
    r.add_argument("out", type=Path)
    r.add_argument("--dataset", required=True)
    r.add_argument("--rep", type=int, default=0)
    r.add_argument("--sigmas", type=float, nargs="+", default=list(SIGMAS))
    r.add_argument("--methods", nargs="*", default=[], help="default: notebook 45's (every board method)")
    r.add_argument("--cache", action="store_true", help="use the on-disk caches (default: off)")
    c = sub.add_parser("compare", help="compare two recordings bit for bit")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "record":
        if args.rep < 0:
            raise SystemExit(f"record_identity: --rep must be >= 0; got {args.rep}")
        if args.out.exists():
            raise SystemExit(f"record_identity: {args.out} exists; give a new file")
        if not args.cache:
            os.environ["DPKIT_CACHE_DIR"] = "off"
        rec = record(args.dataset, args.rep, [float(s) for s in args.sigmas], list(args.methods))
        with open(args.out, "wb") as f:
            pickle.dump(rec, f)
        print(f"{args.out}: {len(rec['records'])} records of {args.dataset} repetition {args.rep} "
              f"({rec['seconds']:.0f} s, dpkit from {rec['dpkit']})")
        return 0
    before, after = (pickle.loads(p.read_bytes()) for p in (args.before, args.after))
    lines = compare(before, after)
    for line in lines:
        print(line)
    n = len(before["records"])
    print(f"{'DIFFERENT' if lines else 'identical'}: {n} records of {before['settings']['dataset']} repetition "
          f"{before['settings']['rep']} ({before['dpkit']} vs {after['dpkit']})")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
