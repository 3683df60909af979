"""Record dpkit's numbers, and compare two records: a refactor must leave every number unchanged.

Process tooling, not part of the dpkit package. Three parts, each optional:

``releases``
    One release per registered method (:mod:`dpkit.methods.registry`) on WDBC at σ = 4, each with a
    stream keyed by the method's name, hashed to the bit (synthetic points, weights, counts, or answers).
``notebooks``
    A QUICK run of every notebook in ``notebooks/`` through ``python -m dpkit.batch notebook``; the
    ``table`` rows and ``checks`` of each ``metrics.json`` are kept with every timing field removed.
``tables``
    A full-size, 2-repetition run of notebook 20 on every data set and σ (Tables 3.2/3.3, both constant
    variants), kept like the notebooks.

Usage::

    python tools/reference_numbers.py record OUT.json [--parts releases notebooks tables] [--scratch DIR]
    python tools/reference_numbers.py compare BEFORE.json AFTER.json

``compare`` prints every difference and exits 1 if there is one.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TABLE_DATASETS = ("CSN", "CRM", "CTG", "PKS", "WDBC")
#: keys that hold a measured time or a machine fact, never a computed number
_VOLATILE = re.compile(r"(^|_)(time|times|seconds|wall|elapsed|timings|cpu|machine|host|date|path|folder)(_|$)|_s$")

#: checks whose statistic is a measured time or a ratio of two (their verdict is kept): by id or claim
_TIMED = re.compile(r"time|speed|fast|slow", re.IGNORECASE)
#: in a row that holds a measured time (a volatile key), a ratio of two timings (``alg1_over_splu``, ...)
_TIME_RATIO = re.compile(r"_over_")


def _clean(obj: Any) -> Any:
    """``obj`` with every volatile (timing, machine, path) key removed, floats kept exactly (repr)."""
    if isinstance(obj, dict):
        timed = any(_VOLATILE.search(str(k)) for k in obj)
        return {k: _clean(v) for k, v in sorted(obj.items())
                if not (_VOLATILE.search(str(k)) or (timed and _TIME_RATIO.search(str(k))))}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, float):
        return "nan" if math.isnan(obj) else repr(obj)
    return obj


def _digest(*arrays: np.ndarray | None) -> str:
    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            h.update(b"none")
            continue
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def record_releases(*, slow: bool = False) -> dict[str, str]:
    """``{method: hash of its release}`` on WDBC at σ = 4, each method's stream keyed by its name."""
    from dpkit.data import load
    from dpkit.methods.registry import CATALOGUE
    from dpkit.queries.workload import GaussianKernelWorkload

    X = np.asarray(load("WDBC").X, dtype=float)
    toy = np.random.default_rng(7).uniform(-1.0, 1.0, size=(200, 2))
    out: dict[str, str] = {}
    for entry in CATALOGUE:
        if "slow" in entry.suites and not slow:
            continue
        data = toy if "toy" in entry.suites else X
        seed = np.random.SeedSequence([0, zlib.crc32(entry.name.encode())])
        w_seed, m_seed = seed.spawn(2)
        wl = GaussianKernelWorkload.generate(500, data.shape[1], sigma=4.0, rng=np.random.default_rng(w_seed))
        method = entry.method.at_width(4.0)
        kwargs = {"workload": wl} if getattr(method, "needs_workload", False) else {}
        rel = method.release(data, rng=np.random.default_rng(m_seed), **kwargs)
        syn = rel.synthetic
        out[entry.name] = _digest(*(syn.points, syn.weights, syn.counts) if syn is not None else (None,),
                                  None if rel.answers is None else np.asarray(rel.answers))
        print(f"release {entry.name}: {out[entry.name]}", flush=True)
    return out


def _run_notebook(name: str, folder: Path, params: dict[str, Any]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "dpkit.batch", "notebook", str(ROOT / "notebooks" / f"{name}.ipynb"),
           "--output", str(folder)]
    for k, v in params.items():
        cmd += ["-p", k, json.dumps(v)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    # exit 1 with every verdict written is a run whose checks disagree with their expectation (a 2-repetition
    # table, say): its verdicts are numbers like the others, recorded and compared; any other failure stops here
    if done.returncode and not (done.returncode == 1 and "unexpected verdicts: " in done.stdout):
        raise SystemExit(f"reference_numbers: {name} failed (exit {done.returncode}); see the output above")
    return read_metrics(folder)


def read_metrics(folder: Path) -> dict[str, Any]:
    """A run folder's ``metrics.json``: table rows and checks, timings removed."""
    return _numbers(json.loads((folder / "metrics.json").read_text()))


def _numbers(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics``' table rows and checks without what is measured (times, ratios of times, machine facts)."""
    checks = [{k: v for k, v in c.items()
               if not (_TIMED.search(f"{c.get('id', '')} {c.get('claim', '')}") and "statistic" in k)}
              for c in metrics.get("checks", [])]  # a timing check's statistic is a measured time
    return {"table": _clean(metrics.get("table", [])), "checks": _clean(checks)}


def record_notebooks(scratch: Path) -> dict[str, Any]:
    """Every notebook's QUICK table rows and checks, timings removed."""
    names = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    return {nb: _run_notebook(nb, scratch / "quick" / nb, {"QUICK": True}) for nb in names}


def record_tables(scratch: Path) -> dict[str, Any]:
    """Notebook 20 at full size with 2 repetitions per cell, one run per data set."""
    return {ds: _run_notebook("20_tables", scratch / "tables" / ds,
                              {"QUICK": False, "REPS": 2, "DATASETS": [ds], "MECHANISMS": ["I", "II"],
                               "CONSTANTS": ["correct", "thesis"], "SENSITIVITY_DATASET": "none"})
            for ds in TABLE_DATASETS}


def _diff(a: Any, b: Any, where: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{where}/{k}: only in {'after' if k not in a else 'before'}")
            else:
                _diff(a[k], b[k], f"{where}/{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{where}[{i}]", out)
    elif a != b:
        out.append(f"{where}: {a!r} -> {b!r}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out")
    rec.add_argument("--parts", nargs="+", choices=("releases", "notebooks", "tables"),
                     default=["releases", "notebooks"])
    rec.add_argument("--slow", action="store_true", help="also the slow suite's methods (AIM)")
    rec.add_argument("--scratch", default=None, help="folder for the notebook runs (default: a temporary one)")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before")
    cmp_.add_argument("after")
    cmp_.add_argument("--new-keys", default=None, metavar="REGEX",
                      help="keys only in AFTER whose name matches REGEX are new columns, listed but not a difference")
    args = ap.parse_args(argv)
    if args.cmd == "compare":
        before, after = (json.loads(Path(p).read_text()) for p in (args.before, args.after))
        for rec in (before, after):  # an older record may hold what this version counts as measured: cleaned again
            for part in ("notebooks", "tables"):
                rec[part] = {k: _numbers(v) for k, v in rec.get(part, {}).items()}
        diffs: list[str] = []
        for part in sorted(set(before) & set(after) - {"meta"}):
            _diff(before[part], after[part], part, diffs)
        new_keys = re.compile(args.new_keys) if args.new_keys else None
        added = [d for d in diffs if new_keys and d.endswith(": only in after")
                 and new_keys.search(d.rsplit("/", 1)[-1].removesuffix(": only in after"))]
        diffs = [d for d in diffs if d not in set(added)]
        if added:
            names = sorted({d.rsplit("/", 1)[-1].removesuffix(": only in after") for d in added})
            print(f"new keys (only in after, matching {args.new_keys!r}): {len(added)} entries of {names}")
        print("\n".join(diffs) if diffs else f"identical: {sorted(set(before) & set(after) - {'meta'})}")
        return 1 if diffs else 0
    scratch = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="dpkit-reference-"))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    result: dict[str, Any] = {"meta": {"commit": commit, "parts": args.parts}}
    if "releases" in args.parts:
        result["releases"] = record_releases(slow=args.slow)
    if "notebooks" in args.parts:
        result["notebooks"] = record_notebooks(scratch)
    if "tables" in args.parts:
        result["tables"] = record_tables(scratch)
    Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True))
    print(f"recorded {args.parts} at {commit[:10]} -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
