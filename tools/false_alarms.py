"""Measure the real false-alarm rate of the statistical notebooks: their QUICK checks over many seeds.

``python -m tools.false_alarms [--seeds N] [--first-seed S] [--notebooks 50 52 ...] [--false-alarm A]
[--via-notebook] [--out DIR]``

For every notebook and seed the notebook's statistical checks are computed by the function the notebook
itself calls: each computes all its checks in one claims function
(``dpkit.claims.<topic>.notebook_checks(SEED, QUICK, FALSE_ALARM, **parameters)``, which spawns the notebook's
streams from ``SEED``), and the suite calls it with ``QUICK`` and the defaults of the notebook's ``parameters``
cell, so seed ``s`` gives the checks of the notebook run with ``SEED=s`` by construction (notebook 40 with
``METHODS`` = its two direct-answering methods, :data:`SUITE_PARAMETERS`). ``--via-notebook`` executes the
notebook itself with :func:`~dpkit.batch.execute.execute_notebook` instead (much slower).

A run is *unexpected* when any statistical check disagrees with its expected verdict:
a false alarm (a check expected to PASS fails) or a missed negative control (one expected to FAIL
passes). Per notebook the observed rate of unexpected runs is reported next to the budget
``FALSE_ALARM`` with a one-sided Clopper–Pearson upper bound (:func:`dpkit.evaluation.oracles.clopper_pearson`).

With the budget's per-test levels a correct implementation should show (almost) no false alarm in
a few hundred seeds: the observed rate can only *refute* the budget (``cp_lower > FALSE_ALARM``),
never certify it; ``n`` seeds without an unexpected run bound the rate by ``1 − 0.05^{1/n}`` (95 %).

Outputs in ``--out``: ``false_alarms.csv`` (one row per notebook), ``false_alarms.json`` (the
rows plus the failure count of every check and the seeds of the unexpected runs).
"""
from __future__ import annotations

import argparse
import ast
import copy
import inspect
import json
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from dpkit.claims import (
    baselines,
    composition,
    ellipsoid,
    exponential_net,
    improved_privacy,
    laplace_gauss,
    linear,
    private_pca,
    reconstruction,
    trig_rates,
)
from dpkit.claims.results import NotebookRun
from dpkit.evaluation.oracles import clopper_pearson
from dpkit.evaluation.verdicts import Check

__all__ = ["SUITES", "NOTEBOOK_CHECKS", "notebook_parameters", "notebook_checks", "run", "summarise", "main"]

Suite = Callable[[int, float], list[Check]]


#: The repository's notebooks (this file is ``tools/false_alarms.py``).
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

#: Notebook name → the claims function that computes all its checks; the notebook calls the same function.
NOTEBOOK_CHECKS: dict[str, Callable[..., NotebookRun]] = {
    "30_linear_queries": linear.notebook_checks, "50_laplace_gauss": laplace_gauss.notebook_checks,
    "51_composition": composition.notebook_checks,
    "52_exponential_net": exponential_net.notebook_checks, "53_reconstruction": reconstruction.notebook_checks,
    "55_trig_rates": trig_rates.notebook_checks, "56_private_pca": private_pca.notebook_checks,
    "57_ellipsoid": ellipsoid.notebook_checks, "58_improved_privacy": improved_privacy.notebook_checks,
    "40_baselines": baselines.notebook_checks,
}

#: Parameters the suite sets instead of the notebook's default: notebook 40 runs only the two direct-answering
#: methods (``METHODS``), the ones with statistical checks (all of the baselines suite would take minutes a seed).
SUITE_PARAMETERS: dict[str, dict[str, Any]] = {"40_baselines": {"methods": [name for _, name in baselines.DIRECT_CHECKED]}}

#: Parameters every notebook has that are not the claims function's keywords (run settings, passed separately).
_RUN_PARAMETERS = ("SEED", "QUICK", "FALSE_ALARM", "INTERACTIVE", "OUTPUT_DIR")


def notebook_parameters(name: str, *, notebooks_dir: Path = NOTEBOOKS) -> dict[str, Any]:
    """The defaults of notebook ``name``'s ``parameters`` cell (:func:`papermill.inspect_notebook`), as values."""
    import papermill

    found = papermill.inspect_notebook(str(notebooks_dir / f"{name}.ipynb"))
    return {k: ast.literal_eval(v["default"]) for k, v in found.items()}


@lru_cache(maxsize=None)
def _keywords(name: str) -> dict[str, Any]:
    """The notebook's parameter defaults as keywords of its claims function (names matched case-insensitively).

    Loud when a parameter has no keyword or a keyword no parameter: the function must take exactly the notebook's
    parameters."""
    fn = NOTEBOOK_CHECKS[name]
    keywords = [p.name for p in inspect.signature(fn).parameters.values()
                if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty]
    by_lower = {k.lower(): k for k in keywords}
    params = {k: v for k, v in notebook_parameters(name).items() if k not in _RUN_PARAMETERS}
    unknown = [k for k in params if k.lower() not in by_lower]
    missing = sorted(set(by_lower) - {k.lower() for k in params})
    if unknown or missing:
        raise ValueError(f"{name}: the parameters {unknown} have no keyword in {fn.__module__}.notebook_checks, and its "
                         f"keywords {missing} no parameter in the notebook")
    return {**{by_lower[k.lower()]: v for k, v in params.items()}, **SUITE_PARAMETERS.get(name, {})}


def _claims_suite(name: str) -> Suite:
    """Seed ``s`` → the statistical checks of notebook ``name`` run in QUICK mode with ``SEED = s`` (its claims function)."""

    def suite(seed: int, total: float) -> list[Check]:
        return NOTEBOOK_CHECKS[name](seed, True, total, **copy.deepcopy(_keywords(name))).statistical

    suite.__name__ = f"suite_{name}"
    return suite


#: Notebook name → its QUICK statistical checks for one seed (``suite(seed, FALSE_ALARM)``).
SUITES: dict[str, Suite] = {name: _claims_suite(name) for name in sorted(NOTEBOOK_CHECKS)}


def notebook_checks(name: str, seed: int, total: float, *, notebooks_dir: Path = NOTEBOOKS) -> list[Check]:
    """The statistical checks of notebook ``name`` run headless in QUICK mode with ``SEED=seed`` (slow path; with the
    parameters of :data:`SUITE_PARAMETERS`, as the suite)."""
    from dpkit.batch.execute import execute_notebook

    params = dict(SEED=seed, QUICK=True, FALSE_ALARM=total, **{k.upper(): v for k, v in SUITE_PARAMETERS.get(name, {}).items()})
    with tempfile.TemporaryDirectory(prefix=f"false_alarms_{name}_") as tmp:
        execute_notebook(notebooks_dir / f"{name}.ipynb", tmp, parameters=params)
        metrics = json.loads((Path(tmp) / "metrics.json").read_text())
    fields = ("id", "claim", "statistic", "bound", "confidence", "verdict", "expected", "note", "attempts", "retry_statistic")
    return [Check(**{k: c[k] for k in fields if k in c}) for c in metrics["checks"] if c["confidence"] is not None]


def _resolve(names: Sequence[str] | None) -> list[str]:
    """Full notebook names from prefixes (``"50"`` → ``"50_laplace_gauss"``); loud on an unknown or ambiguous one."""
    if not names:
        return list(SUITES)
    out = []
    for n in names:
        hits = [k for k in SUITES if k == n or k.startswith(n.removesuffix(".ipynb"))]
        if len(hits) != 1:
            raise SystemExit(f"--notebooks: {n!r} matches {hits or 'no notebook'}; choose from {list(SUITES)}")
        out.append(hits[0])
    return out


def run(names: Sequence[str], seeds: Sequence[int], total: float, *, via_notebook: bool = False,
        log: Callable[[str], None] = print) -> dict[str, dict]:
    """Every notebook × seed: per notebook, the unexpected runs and the failure count of every check."""
    results = {}
    for name in names:
        t0, per_check, bad_seeds, alarms, missed = time.perf_counter(), {}, [], 0, 0
        for seed in seeds:
            checks = notebook_checks(name, seed, total) if via_notebook else SUITES[name](seed, total)
            wrong = [c for c in checks if c.confidence is not None and not c.consistent]
            for c in checks:
                per_check[c.id] = per_check.get(c.id, 0) + (not c.consistent)
            alarms += any(c.expected == "PASS" for c in wrong)
            missed += any(c.expected == "FAIL" for c in wrong)
            if wrong:
                bad_seeds.append(seed)
        results[name] = dict(runs=len(seeds), unexpected=len(bad_seeds), false_alarm_runs=alarms, missed_control_runs=missed,
                             unexpected_seeds=bad_seeds, check_failures=per_check, seconds=time.perf_counter() - t0)
        log(f"{name}: {len(bad_seeds)}/{len(seeds)} unexpected runs ({results[name]['seconds']:.0f} s)")
    return results


def summarise(results: dict[str, dict], total: float, confidence: float = 0.95) -> pd.DataFrame:
    """One row per notebook: observed rate of unexpected runs, one-sided Clopper–Pearson bounds, the budget."""
    rows = []
    for name, r in results.items():
        k, n = r["unexpected"], r["runs"]
        lo, _ = clopper_pearson(k, n, confidence, side="lower")
        _, hi = clopper_pearson(k, n, confidence, side="upper")
        rows.append(dict(notebook=name, runs=n, unexpected=k, false_alarm_runs=r["false_alarm_runs"],
                         missed_control_runs=r["missed_control_runs"], rate=k / n, cp_lower=lo, cp_upper=hi, budget=total,
                         refutes_budget=bool(lo > total)))
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.false_alarms", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100, help="number of seeds (default 100)")
    ap.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed … first-seed + seeds − 1 (default 0)")
    ap.add_argument("--notebooks", nargs="+", help=f"notebook names or prefixes (default: all of {list(SUITES)})")
    ap.add_argument("--false-alarm", type=float, default=1e-3, help="FALSE_ALARM budget of every notebook (default 1e-3)")
    ap.add_argument("--confidence", type=float, default=0.95, help="one-sided Clopper–Pearson confidence (default 0.95)")
    ap.add_argument("--via-notebook", action="store_true", help="execute the notebooks (papermill) instead of their claims")
    ap.add_argument("--out", type=Path, default=Path("results/false_alarms"), help="output folder")
    a = ap.parse_args(argv)
    if a.seeds < 1 or a.first_seed < 0:
        ap.error(f"--seeds must be ≥ 1 and --first-seed ≥ 0; got {a.seeds}, {a.first_seed}")
    if not 0.0 < a.false_alarm < 1.0 or not 0.0 < a.confidence < 1.0:
        ap.error(f"--false-alarm and --confidence must be in (0, 1); got {a.false_alarm}, {a.confidence}")
    names = _resolve(a.notebooks)
    results = run(names, range(a.first_seed, a.first_seed + a.seeds), a.false_alarm, via_notebook=a.via_notebook)
    table = summarise(results, a.false_alarm, a.confidence)
    a.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(a.out / "false_alarms.csv", index=False)
    (a.out / "false_alarms.json").write_text(json.dumps(dict(
        false_alarm=a.false_alarm, confidence=a.confidence, seeds=[a.first_seed, a.first_seed + a.seeds - 1],
        via_notebook=a.via_notebook, summary=table.to_dict("records"), notebooks=results), indent=1))
    print(table.to_string(index=False))
    print(f"-> {a.out / 'false_alarms.csv'}")
    return 1 if table.refutes_budget.any() else 0


if __name__ == "__main__":
    sys.exit(main())
