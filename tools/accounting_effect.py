"""What accounting at the limit did to the board: the (ε, δ) cells before and after the regeneration.

::

    python tools/accounting_effect.py --before OLD.parquet [--after NEW.parquet]           # print (markdown)
    python tools/accounting_effect.py --before OLD.parquet [--after NEW.parquet] --write   # rewrite the page's block

``OLD.parquet`` is the board published before the regeneration (``git show <commit>:data/leaderboard/records.parquet``),
``NEW.parquet`` the regenerated one (default: the published ``data/leaderboard/records.parquet``). Both are read and
validated as every reader does (:func:`dpkit.board.records.read_records`), and both boards are computed from the
records alone (:func:`dpkit.board.report.board_from_records`). Written: for every method the regeneration calibrates by
the exact composition (:data:`TIGHT`) the ratio of its mean worst error after to before over the board's cells; then Table 3.3's
cells (the (ε, δ)-DP table): the winner and its mean worst error before and after, and the cells whose winner
changed. The block sits between ``<!-- accounting-effect:begin -->`` and ``<!-- accounting-effect:end -->`` of
docs/science/accounting.md, so the page's numbers are this tool's output, never typed by hand.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "science" / "accounting.md"
TABLE = "(ε,δ)-DP"


#: The registry's entries whose published calibration the exact composition replaces (docs/science/accounting.md,
#: "Which methods, and the switch"); the other (ε, δ) entries calibrate one release at the whole budget already.
TIGHT = ("trig-II", "direct-laplace_II", "marginals-moments", "gauss-analyze-gauss", "gauss-psi", "mwem-gaussian",
         "lp-gauss-analyze-gauss-cands", "mst", "aim")
#: The tight choice of each: the exact composition, or AIM's Gaussian-DP filter (its rounds are adaptive).
_TIGHT_CHOICE = {"aim": "gdp"}


def tight_methods() -> list[str]:
    """:data:`TIGHT`, each checked to be registered with ``accounting="pld"`` (directly or through its Gaussian-fit
    candidates; AIM: ``"gdp"``); a ValueError names one that is not."""
    from dpkit.methods.registry import get

    for name in TIGHT:
        m = get(name)
        fit = getattr(getattr(m, "candidates", None), "fit", None)
        choices = [getattr(x, "accounting") for x in (m, fit) if x is not None and hasattr(x, "accounting")]
        want = _TIGHT_CHOICE.get(name, "pld")
        if not choices or any(c != want for c in choices):
            raise ValueError(f"accounting_effect: the registry's {name!r} is not calibrated with accounting={want!r} "
                             f"(its own and its candidates' fit: {choices})")
    return list(TIGHT)


def _boards(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    from dpkit.board.records import read_records
    from dpkit.board.report import board_from_records

    rows, board = board_from_records(read_records(path))
    return pd.DataFrame(rows), pd.DataFrame(board)


def effect(before: Path, after: Path) -> str:
    """The block's Markdown."""
    from dpkit.board.records import provenance_line

    rows_b, board_b = _boards(before)
    rows_a, board_a = _boards(after)
    key = ["dataset", "sigma", "method"]
    both = rows_b[key + ["abs_mean"]].merge(rows_a[key + ["abs_mean"]], on=key, suffixes=("_before", "_after"))
    lines = [f"Before: {provenance_line(before)}", "", f"After: {provenance_line(after)}", "",
             "Each method's mean worst error (the thesis metric, mean over the repetitions) after ÷ before, over the "
             "board's cells (data set × σ):", "",
             "| method | cells | median ratio | range | cells with a smaller error |", "|---|---:|---:|---:|---:|"]
    for name in tight_methods():
        g = both[both["method"] == name]
        if g.empty:
            continue
        r = (g["abs_mean_after"] / g["abs_mean_before"]).to_numpy(dtype=float)
        lines.append(f"| {name} | {len(r)} | {np.median(r):.3f} | {r.min():.3f}–{r.max():.3f} | "
                     f"{int((r < 1).sum())} of {len(r)} |")
    cells = ["dataset", "sigma"]
    wb = board_b[board_b["privacy"] == TABLE].set_index(cells)
    wa = board_a[board_a["privacy"] == TABLE].set_index(cells)
    common = wb.index.intersection(wa.index)
    changed = [c for c in common if wb.loc[c, "method"] != wa.loc[c, "method"]]
    fall = np.array([wa.loc[c, "abs_mean"] / wb.loc[c, "abs_mean"] for c in common], dtype=float)
    lines += ["", f"Table 3.3's cells ({TABLE}): the winner (the smallest mean worst error) changes in "
              f"**{len(changed)} of {len(common)}** cells; the winner's mean worst error after ÷ before: median "
              f"{np.median(fall):.3f}, range {fall.min():.3f}–{fall.max():.3f}.", "",
              "| data | σ | winner before | mean worst error | winner after | mean worst error | changed |",
              "|---|---:|---|---:|---|---:|---|"]
    for c in sorted(common):
        b, a = wb.loc[c], wa.loc[c]
        lines.append(f"| {c[0]} | {c[1]:g} | {b['method']} | {b['abs_mean']:.4g} | {a['method']} | {a['abs_mean']:.4g} | "
                     f"{'yes' if b['method'] != a['method'] else ''} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="the board's records before the regeneration")
    ap.add_argument("--after", type=Path, default=ROOT / "data" / "leaderboard" / "records.parquet")
    ap.add_argument("--write", action="store_true", help=f"rewrite the block of {PAGE.relative_to(ROOT)}")
    a = ap.parse_args(argv)
    from dpkit.board.records import BoardFileError, InvalidRecordsError

    try:
        text = effect(a.before, a.after)
    except (BoardFileError, InvalidRecordsError, FileNotFoundError) as exc:
        print(f"accounting_effect: {exc}", file=sys.stderr)
        return 2
    if not a.write:
        print(text, end="")
        return 0
    from dpkit.core.marked import MarkedBlockError, write_marked

    try:
        write_marked(PAGE, "accounting-effect", text)
    except MarkedBlockError as exc:
        print(f"accounting_effect: {exc}", file=sys.stderr)
        return 2
    print(f"wrote the board's before/after to {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
