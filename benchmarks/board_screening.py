"""Lever measurement: fewer repetitions for the methods that are clearly out, replayed on the published board.

Run ``python -m benchmarks.board_screening [--board FILE] [--reps R ...] [--budget GAMMA] [--json FILE]``; it reads
the stored records only (``data/leaderboard/records.parquet`` by default) and computes nothing anew.

The board gives every method the same 30 repetitions. A method far behind the best in every cell of a data set
could stop earlier, and its releases, evaluations and class suprema of the other repetitions would be saved. This
replays one such rule on the stored records, for each ``R``:

* for every data set, table (ε-DP: 3.2, (ε, δ)-DP: 3.3), σ and error kind (the thesis metric ``abs`` and the class
  supremum ``sup_abs``), the cell's *leader* is the method with the smallest mean over repetitions ``0 … R−1``;
* every other method of the cell is tested against the leader by a one-sided paired t-test on those ``R``
  differences (is it worse?), at level ``γ / N`` with ``N`` the number of tests of the replay (Bonferroni);
* a method is *screened* on a data set when it is found worse in every σ and for both kinds (a leader somewhere is
  never screened); it would stop after ``R`` repetitions there.

It reports how many (data set, method) pairs are screened; the full board's winners among them (per cell and kind,
the smallest mean over all repetitions): each would be a winner the rule loses, so the rule is only usable if there
are none; and the release time the screened pairs' later repetitions took (the records' ``time_s``; a σ-independent
release, timed once and charged to each σ's record, counted once per repetition). The release time is a part of
the saving only: the records do not time the evaluation of a release on the workloads or its class supremum,
which would be saved too. The t-test assumes nearly normal mean differences; the replay's check on the winners is
what tells whether it misleads here, not a proof.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["KINDS", "screen", "release_hours", "replay", "main"]

KINDS = ("abs", "sup_abs")
DEFAULT_BOARD = Path("data/leaderboard/records.parquet")


def _tables(records: pd.DataFrame) -> pd.DataFrame:
    private = records[records["privacy"] != "non-private"].copy()
    private["table"] = np.where(private["privacy"] == "ε-DP", "3.2", "3.3")
    return private


def screen(records: pd.DataFrame, reps: int, *, budget: float = 0.05) -> tuple[pd.DataFrame, int]:
    """The (data set, table, method) triples the rule screens after ``reps`` repetitions, and the number of tests.

    Raises
    ------
    ValueError
        ``reps`` below 3 (a paired t-test needs at least two degrees of freedom) or above the board's repetitions.
    """
    board_reps = int(records["rep"].max()) + 1
    if not 3 <= reps <= board_reps:
        raise ValueError(f"reps must be in [3, {board_reps}] (the board's repetitions); got {reps}")
    first = _tables(records)
    first = first[first["rep"] < reps]
    rows = []
    for (ds, table, sigma), cell in first.groupby(["dataset", "table", "sigma"]):
        for kind in KINDS:
            errors = cell.pivot(index="rep", columns="method", values=kind)
            leader = errors.mean().idxmin()
            for method in errors.columns:
                if method == leader:
                    continue
                diff = (errors[method] - errors[leader]).to_numpy()
                sd = diff.std(ddof=1)
                t = np.inf if sd == 0 and diff.mean() > 0 else (0.0 if sd == 0 else diff.mean() / (sd / np.sqrt(reps)))
                rows.append((ds, table, method, sigma, kind, float(stats.t.sf(t, reps - 1))))
    tests = pd.DataFrame(rows, columns=["dataset", "table", "method", "sigma", "kind", "p"])
    n_tests = len(tests)
    n_sigmas = first.groupby("dataset")["sigma"].nunique()
    tests["worse"] = tests["p"] < budget / max(n_tests, 1)
    grouped = tests.groupby(["dataset", "table", "method"])
    verdict = grouped["worse"].all() & (grouped.size() == grouped.size().index.get_level_values(0).map(n_sigmas) * len(KINDS))
    return verdict[verdict].reset_index()[["dataset", "table", "method"]], n_tests


def release_hours(records: pd.DataFrame, sigma_independent: set[str]) -> pd.Series:
    """Release hours per (data set, method, repetition): a σ-independent method's release counted once."""
    def one(g: pd.DataFrame) -> float:
        return float(g["time_s"].iloc[0] if g.name[1] in sigma_independent else g["time_s"].sum())

    return records.groupby(["dataset", "method", "rep"]).apply(one, include_groups=False) / 3600.0


def _sigma_independent(methods: list[str], sigmas: list[float]) -> set[str]:
    from dpkit.board.report import board_methods
    from dpkit.experiments.records import width_independent

    known = board_methods(methods, epsilon=1.0, delta=1e-3)  # every name the board's suites register (AIM too)
    return {m for m in methods if width_independent(known[m], sigmas)}


def replay(records: pd.DataFrame, reps: int, *, budget: float = 0.05,
           sigma_independent: set[str] | None = None) -> dict[str, Any]:
    """The rule replayed at ``reps`` repetitions: screened pairs, lost winners and the release hours saved."""
    if sigma_independent is None:
        sigma_independent = _sigma_independent(sorted(records["method"].unique()),
                                               sorted(records["sigma"].unique()))
    screened, n_tests = screen(records, reps, budget=budget)
    private = _tables(records)
    means = private.groupby(["dataset", "table", "sigma", "method"])[list(KINDS)].mean().reset_index()
    keys = set(zip(screened["dataset"], screened["table"], screened["method"]))
    lost = []
    for kind in KINDS:
        winners = means.loc[means.groupby(["dataset", "table", "sigma"])[kind].idxmin()]
        lost += [{"kind": kind, "dataset": w.dataset, "table": w.table, "sigma": float(w.sigma), "method": w.method}
                 for w in winners.itertuples() if (w.dataset, w.table, w.method) in keys]
    hours = release_hours(private, sigma_independent)
    later = hours[hours.index.get_level_values("rep") >= reps]
    pairs = set(zip(screened["dataset"], screened["method"]))
    saved = float(later[[(d, m) in pairs for d, m, _ in later.index]].sum())
    n_pairs = private.groupby(["dataset", "method"]).ngroups
    return {"reps": reps, "budget": budget, "tests": n_tests, "screened": len(pairs), "pairs": n_pairs,
            "lost_winners": lost, "release_hours": float(hours.sum()), "release_hours_saved": saved,
            "screened_pairs": sorted(f"{d}:{m}" for d, m in pairs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.board_screening", description=__doc__.splitlines()[0])
    ap.add_argument("--board", type=Path, default=DEFAULT_BOARD, help="the records (default: the published board)")
    ap.add_argument("--reps", type=int, nargs="+", default=[6, 10, 15], help="repetitions before the screening")
    ap.add_argument("--budget", type=float, default=0.05, help="false-alarm budget γ of each replay (Bonferroni)")
    ap.add_argument("--json", type=Path, help="write the replays here")
    args = ap.parse_args(argv)
    if not args.board.is_file():
        print(f"board_screening: no records at {args.board} (publish a board first: make board-publish)",
              file=sys.stderr)
        return 2
    from dpkit.board.records import InvalidRecordsError, read_records

    try:
        records = read_records(args.board)  # checked: one budget, paired repetitions, finite errors, ...
    except InvalidRecordsError as exc:
        print(f"board_screening: {exc}", file=sys.stderr)
        return 2
    results = [replay(records, r, budget=args.budget) for r in args.reps]
    for res in results:
        print(f"R = {res['reps']}: {res['screened']} of {res['pairs']} (data set, method) pairs screened "
              f"({res['tests']} tests at γ = {res['budget']:g}, Bonferroni); release time saved "
              f"{res['release_hours_saved']:.2f} h of {res['release_hours']:.2f} h; full-board winners lost: "
              f"{len(res['lost_winners'])}" + "".join(f"\n  lost: {w}" for w in res["lost_winners"]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
