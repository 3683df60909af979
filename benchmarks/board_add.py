"""Benchmark: one entrant joins the stored leaderboard (``board-add``), from an empty cache and with the exact answers
cached.

Run ``python -m benchmarks.board_add [--board FILE] [--entrant NAME] [--workers W] [--quick] [--json FILE]`` on an
otherwise idle machine, after the board has been published (``data/leaderboard/records.parquet``, the default).

The entrant (default ``benchmarks.board_add:ENTRANT``: a configured instance equal to the registered
``marginals-histogram-eps``, so an entrant that does not depend on σ and has exactly its cost, under a name the board
does not have) joins twice in this one invocation, each time exactly as ``make board-add`` does
(:func:`dpkit.board.add.board_add`: the audit gate, the entrant on every cell of the stored board with
its seeds, the pairing, the ranks and the updated copy), with ``W`` repetitions at once:

1. **cold**: with a new, empty disk cache (``DPKIT_CACHE_DIR``), so every workload's exact answers and embeddings are
   computed;
2. **warm**: with the cache the cold run filled, so the exact answers are read.

It prints both wall times, their ratio, and whether the two runs gave the same entrant records (they must: the cache
holds the exact answers and never changes them). For the default entrant it also prints a **null control**: the
entrant is ``marginals-histogram-eps`` under another name, so on the same workloads with other random streams; paired
by repetition over all of them (:func:`dpkit.board.statistics.compare_paired`, Holm across the cells at
false-alarm budget γ = 0.05), it must tie with the registered method in every cell, for the thesis metric and for
the class supremum. A cell that differs fails the benchmark (exit 1), which happens by chance at most with
probability γ for each error kind. With ``--quick`` the board-add is QUICK (one data set, one σ, four
repetitions), a check of the command, not a measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dpkit.methods.marginals import IndependentMarginals

__all__ = ["ENTRANT", "DEFAULT_ENTRANT", "TWIN", "null_control", "measure", "main"]

#: ``marginals-histogram-eps`` of the registry (ε = 1, pure DP), as an entrant: the same method under another name
ENTRANT = IndependentMarginals(epsilon=1.0, delta=0.0, kind="histogram")
DEFAULT_ENTRANT = "benchmarks.board_add:ENTRANT"
#: the registered method :data:`ENTRANT` copies
TWIN = "marginals-histogram-eps"


def _entrant_frame(folder: Path) -> Any:
    from dpkit.board.add import ENTRANT_RECORDS_NAME
    from dpkit.board.records import read_records

    frame = read_records(folder / ENTRANT_RECORDS_NAME)  # the board's columns: time_s is the only measured time
    return frame.drop(columns=["time_s"]).sort_values(["dataset", "sigma", "rep"]).reset_index(drop=True)


def null_control(folder: Path, entrant: str, *, twin: str = TWIN, gamma: float = 0.05) -> dict[str, Any] | None:
    """The entrant against ``twin`` on the updated board in ``folder`` (module docstring); ``None`` when the board
    has no ``twin``. Per error kind: the cells compared, how many are not a tie, and the smallest p-value."""
    from dpkit.board.records import RECORDS_NAME, read_records
    from dpkit.board.statistics import compare_paired

    board = read_records(folder / RECORDS_NAME)
    if twin not in set(board["method"]):
        return None
    out: dict[str, Any] = {"twin": twin, "gamma": gamma}
    for kind in ("abs", "sup_abs"):
        c = compare_paired(board, entrant, twin, kind=kind, gamma=gamma, half="all")
        out[kind] = {"cells": int(len(c)), "not_tie": int((c["verdict"] != "tie").sum()), "min_p": float(c["p"].min())}
    out["passed"] = all(out[k]["not_tie"] == 0 for k in ("abs", "sup_abs"))
    return out


def measure(*, board: str | os.PathLike | None, entrant: str = DEFAULT_ENTRANT, workers: int = 2,
            quick: bool = False, scratch: str | os.PathLike | None = None) -> dict[str, Any]:
    """Time the entrant's board-add cold and warm (module docstring); return the times and the runs' summaries."""
    from dpkit.board.add import board_add
    from dpkit.core.threads import environ_restored

    root = Path(scratch or tempfile.mkdtemp(prefix="dpkit-bench-board-add-"))
    cache = root / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"board": str(board) if board else "published", "entrant": entrant, "workers": workers,
                           "quick": quick, "cache": str(cache)}
    with environ_restored(DPKIT_CACHE_DIR=str(cache)):
        for run in ("cold", "warm"):
            t0 = time.perf_counter()
            res = board_add(entrant, board=board, out=root / run, quick=quick, workers=workers, replace=True)
            out[f"{run}_s"] = time.perf_counter() - t0
            out[f"{run}_status"] = res.status
            if res.status != "ranked":
                raise SystemExit(f"board_add benchmark: the entrant {entrant} was {res.status} "
                                 f"({None if res.gate is None else res.gate.detail})")
            out[f"{run}_cells"] = int(len(res.ranks))
    out["warm_over_cold"] = out["warm_s"] / out["cold_s"]
    out["same_records"] = bool(_entrant_frame(root / "cold").equals(_entrant_frame(root / "warm")))
    out["null_control"] = null_control(root / "warm", entrant) if entrant == DEFAULT_ENTRANT else None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.board_add", description=__doc__.split("\n\n")[0])
    ap.add_argument("--board", default=None, help="the stored board's records.parquet (default: the published board)")
    ap.add_argument("--entrant", default=DEFAULT_ENTRANT, help=f"the entrant's name (default {DEFAULT_ENTRANT})")
    ap.add_argument("--workers", type=int, default=2, help="repetitions at once (default 2: the 2-core machine)")
    ap.add_argument("--quick", action="store_true", help="a QUICK board-add: checks the command, measures nothing")
    ap.add_argument("--scratch", default=None, help="folder for the cache and the two runs' output (default: a new "
                    "temporary folder)")
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    res = measure(board=args.board, entrant=args.entrant, workers=args.workers, quick=args.quick,
                  scratch=args.scratch)
    print(f"board-add of {res['entrant']} on {res['board']} ({res['cold_cells']} ranked cell(s), "
          f"{res['workers']} repetition(s) at once{', QUICK' if res['quick'] else ''})")
    print(f"  cold (empty cache): {res['cold_s']:.1f} s ({res['cold_s'] / 60:.1f} min)")
    print(f"  warm (exact answers cached): {res['warm_s']:.1f} s ({res['warm_s'] / 60:.1f} min), "
          f"{res['warm_over_cold']:.2f}x the cold time")
    print(f"  the same entrant records cold and warm: {res['same_records']}")
    nc = res["null_control"]
    if nc is not None:
        kinds = "; ".join(f"{k}: {nc[k]['not_tie']} of {nc[k]['cells']} cells differ (smallest p {nc[k]['min_p']:.3g})"
                          for k in ("abs", "sup_abs"))
        print(f"  null control, against {nc['twin']} (the same method, other streams) at γ = {nc['gamma']:g}: {kinds}"
              f"{'' if nc['passed'] else ' -- FAILED: identical methods declared different'}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
    return 0 if res["same_records"] and (nc is None or nc["passed"]) else 1


if __name__ == "__main__":
    sys.exit(main())
