"""The leaderboard: the best correctly accounted method in every cell of the thesis's Tables 3.2/3.3.

A *cell* is (data set, σ, privacy class, error kind): Table 3.2 compares ε-DP methods with the
improved mechanism I, Table 3.3 (ε, δ)-DP methods with mechanism II (an ε-DP method is also
(ε, δ)-DP, so it competes in Table 3.3 too). Non-private references (the noise-free LP, a subsample
of the data) stay on the board, marked, and never count. The best method of a cell is the one with
the smallest mean worst error over the repetitions; it *wins* when its mean, rounded to the thesis's
printed precision (3 decimals), is below the printed number, *ties* when equal, and *loses* otherwise.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dpkit.experiments.reference import SIGMAS, paper_table

__all__ = ["TABLES", "PRINTED_DECIMALS", "BOARD_SUITES", "board_methods", "verdict", "leaderboard_rows", "headline",
           "Headline", "lost_cells_text", "ranking_disagreements", "summary_markdown", "SUPREMUM_COLUMNS",
           "supremum_rows", "supremum_summary_text", "THESIS_MECHANISMS", "DISAGREEMENT_COLUMNS"]

#: (privacy class of the table, the privacy classes that may compete in it, the thesis's mechanism).
TABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "ε-DP": (("ε-DP",), "I"),
    "(ε,δ)-DP": (("ε-DP", "(ε,δ)-DP"), "II"),
}
#: Decimals the thesis prints its errors with.
PRINTED_DECIMALS = 3
#: The registry suites the board draws its methods from; the last ("slow") only when a method of it is named.
BOARD_SUITES: tuple[str, ...] = ("baselines", "leaderboard", "slow")


def board_methods(requested: Sequence[str] = (), *, epsilon: float, delta: float) -> dict[str, Any]:
    """The board's methods ``{name: method}`` (notebook 45's ``METHODS``), the budget set suite-wide
    (:func:`dpkit.methods.registry.suite`: ε on the private methods, δ on the (ε, δ)-DP ones).

    ``requested`` empty: every method of the suites "baselines" and "leaderboard"; otherwise exactly the
    named methods, each of which must be registered in one of :data:`BOARD_SUITES` or be an *entrant*
    (:mod:`dpkit.methods.entrants`): an import path ``"package.module:NAME"`` or a name a package registers in
    the entry-point group ``dpkit.methods``, at the same budget. The registered methods come in suite order,
    then catalogue order (a method's random streams follow its position), whatever the order of
    ``requested``; the entrants follow them in the order given.

    Raises
    ------
    ValueError
        Before anything runs, for a name that is neither a method of the board's suites nor an entrant: the
        message names it, suggests the closest registered names and lists the allowed ones;
        :class:`~dpkit.methods.entrants.EntrantError` (a ValueError) for an entrant that cannot be loaded, does
        not follow the method protocol or whose trial release (a small synthetic array, no real data) has no
        ledger record, naming it and what is missing.

    Examples
    --------
    >>> list(board_methods(["trig-II", "rap"], epsilon=1.0, delta=1e-3))
    ['trig-II', 'rap']
    """
    from dpkit.methods.entrants import entry_point_names, is_entrant_name, load_entrants
    from dpkit.methods.registry import REGISTRY, check_names, names, suite

    allowed = list(dict.fromkeys(n for s in BOARD_SUITES for n in names(s)))
    if isinstance(requested, str):
        raise TypeError(f"METHODS must be a list of method names; got the string {requested!r}")
    plugged = entry_point_names() if any(isinstance(n, str) and n not in REGISTRY and not is_entrant_name(n)
                                         for n in requested) else []
    clash = sorted(set(plugged) & set(REGISTRY))
    if clash:
        raise ValueError(f"entry point name(s) {clash} of group 'dpkit.methods' are registered method names: "
                         "rename the entry point(s)")
    entrants = [n for n in requested if is_entrant_name(n) or (isinstance(n, str) and n in plugged)]
    check_names([n for n in requested if n not in entrants], allowed=allowed + plugged,
                what="unknown leaderboard method name(s)")
    board = [n for n in requested if n not in entrants] or ([] if entrants else
                                                             list(dict.fromkeys(names("baselines") + names("leaderboard"))))
    out = {n: m for s in BOARD_SUITES if names(s)
           for n, m in suite(s, include=[x for x in board if x in names(s)], epsilon=epsilon, delta=delta).items()}
    return {**out, **load_entrants(entrants, epsilon=epsilon, delta=delta)}


def verdict(ours: float, paper: float, *, decimals: int = PRINTED_DECIMALS) -> str:
    """``"win"``, ``"tie"`` or ``"loss"`` of ``ours`` against the printed ``paper`` at the printed precision.

    >>> verdict(0.0114, 0.011), verdict(0.0104, 0.011), verdict(0.0099, 0.011)
    ('tie', 'win', 'win')
    """
    if math.isnan(ours) or math.isnan(paper):
        return "n/a"
    r = round(ours, decimals)
    return "win" if r < paper else ("tie" if r == paper else "loss")


def _paper(dataset: str, sigma: float, privacy: str, kind: str) -> float:
    try:
        return float(paper_table(privacy)[dataset.upper()][kind][SIGMAS.index(float(sigma))])
    except (KeyError, ValueError):
        return math.nan


def _best_two(g: pd.DataFrame, key: str) -> tuple[pd.Series | None, pd.Series | None]:
    s = g.sort_values(key)
    return (s.iloc[0] if len(s) else None), (s.iloc[1] if len(s) > 1 else None)


def leaderboard_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (data set, σ, table) from :func:`dpkit.experiments.baselines.baseline_rows` rows.

    Keys: ``dataset, sigma, privacy`` (the table's class), ``method`` (best by mean worst absolute
    error), ``abs_mean, abs_std, rel_mean, rel_std, time_s, eps_spent, delta_spent`` (of that method),
    ``method_rel`` (best by relative error) and its ``rel_mean``, ``runner_up`` and its ``runner_up_abs``,
    ``paper_abs, paper_rel, win_abs, win_rel`` and ``reference_abs`` (the best non-private reference); and the
    ranking by the class supremum (:mod:`dpkit.queries.supremum`; the quantity the thesis's theorems bound) among
    the methods that have one: ``method_sup`` with its ``sup_abs_mean, sup_abs_std`` and its thesis metric
    ``abs_of_sup``, ``runner_up_sup`` with its ``runner_up_sup_abs``, ``sup_of_best`` (the class supremum of
    ``method``, the thesis metric's winner) and ``rankings_agree`` (``method_sup == method``; ``None`` where no
    method has a supremum).
    """
    df = pd.DataFrame(list(rows))
    out: list[dict[str, Any]] = []
    if df.empty:
        return out
    for (ds, sigma), g in df.groupby(["dataset", "sigma"], sort=True):
        refs = g[g["privacy"] == "non-private"]
        for table, (allowed, _mech) in TABLES.items():
            cand = g[g["privacy"].isin(allowed)]
            best, second = _best_two(cand, "abs_mean")
            best_rel, _ = _best_two(cand, "rel_mean")
            if best is None:
                continue
            pa, pr = _paper(str(ds), sigma, table, "abs"), _paper(str(ds), sigma, table, "rel")
            out.append({
                "dataset": ds, "sigma": float(sigma), "privacy": table, "method": best["method"],
                "abs_mean": float(best["abs_mean"]), "abs_std": float(best["abs_std"]),
                "rel_mean": float(best_rel["rel_mean"]), "rel_std": float(best_rel["rel_std"]),
                "method_rel": best_rel["method"], "time_s": float(best["time_s"]),
                "eps_spent": float(best["eps_spent"]), "delta_spent": float(best["delta_spent"]),
                "runner_up": None if second is None else second["method"],
                "runner_up_abs": math.nan if second is None else float(second["abs_mean"]),
                "reference_abs": float(refs["abs_mean"].min()) if len(refs) else math.nan,
                "paper_abs": pa, "paper_rel": pr,
                "win_abs": verdict(float(best["abs_mean"]), pa), "win_rel": verdict(float(best_rel["rel_mean"]), pr),
                **_sup_ranking(cand, best),
            })
    return out


def _sup_ranking(cand: pd.DataFrame, best: pd.Series) -> dict[str, Any]:
    """The cell's ranking by mean class supremum (methods without one are not ranked)."""
    has = cand[cand["sup_abs_mean"].notna()] if "sup_abs_mean" in cand else cand.iloc[0:0]
    top, second = _best_two(has.astype({"sup_abs_mean": float}), "sup_abs_mean") if len(has) else (None, None)
    sup_of_best = best.get("sup_abs_mean") if "sup_abs_mean" in best else None
    return {
        "method_sup": None if top is None else top["method"],
        "sup_abs_mean": math.nan if top is None else float(top["sup_abs_mean"]),
        "sup_abs_std": math.nan if top is None else float(top["sup_abs_std"]),
        "abs_of_sup": math.nan if top is None else float(top["abs_mean"]),
        "runner_up_sup": None if second is None else second["method"],
        "runner_up_sup_abs": math.nan if second is None else float(second["sup_abs_mean"]),
        "sup_of_best": math.nan if sup_of_best is None or pd.isna(sup_of_best) else float(sup_of_best),
        "rankings_agree": None if top is None else bool(top["method"] == best["method"]),
    }


#: The columns of :func:`ranking_disagreements` (a table of them has these columns even when it is empty).
DISAGREEMENT_COLUMNS = ("dataset", "sigma", "privacy", "best_by_workload", "its_abs_mean", "its_sup_abs_mean",
                        "best_by_supremum", "its_sup")


def ranking_disagreements(board: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells whose best method by the thesis metric (worst of the workload) is not the best by the class
    supremum: data set, σ, table, both winners and their numbers on both metrics."""
    return [{"dataset": b["dataset"], "sigma": b["sigma"], "privacy": b["privacy"],
             "best_by_workload": b["method"], "its_abs_mean": b["abs_mean"], "its_sup_abs_mean": b["sup_of_best"],
             "best_by_supremum": b["method_sup"], "its_sup": b["sup_abs_mean"]}
            for b in board if b.get("rankings_agree") is False]


#: The columns of the board's ranking by the class supremum (:func:`supremum_rows`): the best method by the class
#: supremum and its runner-up, next to the best by the thesis metric with its own class supremum.
SUPREMUM_COLUMNS = ("dataset", "sigma", "privacy", "method_sup", "sup_abs_mean", "sup_abs_std", "abs_of_sup",
                    "runner_up_sup", "runner_up_sup_abs", "method", "abs_mean", "sup_of_best", "rankings_agree")
#: The thesis's own mechanism per table (its Table 3.2 is mechanism I, its Table 3.3 mechanism II).
THESIS_MECHANISMS: dict[str, str] = {table: f"trig-{mech}" for table, (_allowed, mech) in TABLES.items()}


def supremum_rows(board: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The board ranked by the class supremum: per cell the :data:`SUPREMUM_COLUMNS` (the best method by the mean
    class supremum, its runner-up, and the thesis metric's winner with its class supremum)."""
    return [{k: b.get(k) for k in SUPREMUM_COLUMNS} for b in board]


def _num(x: Any) -> float:
    return math.nan if x is None else float(x)


def _span(values: Sequence[float], fmt: str = ".3g") -> str:
    lo, hi = format(min(values), fmt), format(max(values), fmt)
    return lo if lo == hi else f"{lo} to {hi}"


def _rank(value: float, others: Sequence[float]) -> int:
    return 1 + sum(o < value for o in others)


def supremum_summary_text(board: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> str:
    """In plain words, from the numbers: what the thesis's own mechanism (:data:`THESIS_MECHANISMS`) looks like on
    the quantity its theorems bound, the class supremum, next to the thesis metric (the worst of the workload),
    how it ranks by each, and in how many cells the two rankings name different best methods.

    ``board`` are :func:`leaderboard_rows`, ``rows`` the method rows they were made from
    (:func:`dpkit.experiments.baselines.baseline_rows`).
    """
    seen: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}  # per table, per cell of its own mechanism
    for b in board:
        allowed, _mech = TABLES[b["privacy"]]
        name = THESIS_MECHANISMS[b["privacy"]]
        cand = [r for r in rows if r["dataset"] == b["dataset"] and float(r["sigma"]) == float(b["sigma"])
                and r["privacy"] in allowed]
        own = [r for r in cand if r["method"] == name]
        if not own or math.isnan(sup := _num(own[0].get("sup_abs_mean"))):
            continue
        sups = [x for r in cand if not math.isnan(x := _num(r.get("sup_abs_mean")))]
        abss = [float(r["abs_mean"]) for r in cand]
        ab = float(own[0]["abs_mean"])
        seen[b["privacy"]].append({"sup": sup, "abs": ab, "ratio": sup / ab if ab > 0 else math.inf,
                                   "rank_sup": _rank(sup, sups), "n_sup": len(sups), "rank_abs": _rank(ab, abss),
                                   "n_abs": len(abss), "won_sup": b.get("method_sup") == name,
                                   "won_abs": b["method"] == name})
    ranked = [b for b in board if b.get("rankings_agree") is not None]
    differ = sum(b["rankings_agree"] is False for b in ranked)
    if not ranked:
        return ("No method on this board has a class supremum (the worst query of the whole class, the quantity the "
                "thesis's theorems bound), so no cell is ranked by it.")
    cells = [c for t in TABLES for c in seen[t]]
    if cells:
        parts = ["On the quantity the thesis's theorems bound, the error of the worst query of the whole query class "
                 "(the class supremum), the thesis's own mechanism errs "
                 f"{_span([c['ratio'] for c in cells], '.2g')} times as much as on the thesis metric (the worst of the "
                 "workload's random queries)."]
        for table, cs in seen.items():
            if not cs:
                continue
            n = len(cs)
            cells_n = "1 cell" if n == 1 else f"{n} cells"
            parts.append(
                f"{THESIS_MECHANISMS[table]} (Table {'3.2' if table == 'ε-DP' else '3.3'}, {cells_n}): a mean class "
                f"supremum of {_span([c['sup'] for c in cs])} against a thesis metric of {_span([c['abs'] for c in cs])}; "
                f"ranked {_span([c['rank_sup'] for c in cs], 'd')} of the {_span([c['n_sup'] for c in cs], 'd')} "
                f"methods with a class supremum (by the thesis metric {_span([c['rank_abs'] for c in cs], 'd')} of "
                f"{_span([c['n_abs'] for c in cs], 'd')}); the best method by the class supremum in "
                f"{sum(c['won_sup'] for c in cs)} of {cells_n}, by the thesis metric in {sum(c['won_abs'] for c in cs)}.")
    else:
        parts = ["The thesis's own mechanism (trig-I, trig-II) has no class supremum on this board (it did not run)."]
    where = "the one cell" if len(ranked) == 1 else f"all {len(ranked)} cells"
    parts.append(f"The two rankings name the same best method in {where} ranked by both." if not differ
                 else f"The two rankings name different best methods in {differ} of the {len(ranked)} cells ranked by "
                      "both.")
    return " ".join(parts)


@dataclass(frozen=True)
class Headline:
    """Cells matched or beaten per table (a cell: data set × σ × {abs, rel})."""

    matched: dict[str, int]
    cells: dict[str, int]

    def text(self) -> str:
        """``cells matched or beaten: X/50 (Table 3.2), Y/50 (Table 3.3)``."""
        parts = [f"{self.matched[t]}/{self.cells[t]} (Table {'3.2' if t == 'ε-DP' else '3.3'})" for t in TABLES]
        return "cells matched or beaten: " + ", ".join(parts)


def headline(board: Sequence[dict[str, Any]]) -> Headline:
    """Count the cells (abs and rel per row) with a win or a tie, per table; cells without a printed number are skipped."""
    matched = {t: 0 for t in TABLES}
    cells = {t: 0 for t in TABLES}
    for r in board:
        for key in ("win_abs", "win_rel"):
            if r[key] == "n/a":
                continue
            cells[r["privacy"]] += 1
            matched[r["privacy"]] += r[key] in ("win", "tie")
    return Headline(matched=matched, cells=cells)


def lost_cells_text(board: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> str:
    """A written account of the cells still lost: which method came closest, by how much, whether even
    the non-private references reach the printed number (if they do not, the gap is not the noise), and what
    the thesis's own mechanism gets with the correct constants (if it loses too, the printed number is not
    reproduced by the method that printed it)."""
    lines: list[str] = []
    for r in board:
        table = "3.2" if r["privacy"] == "ε-DP" else "3.3"
        for kind in ("abs", "rel"):
            if r[f"win_{kind}"] != "loss":
                continue
            method = r["method"] if kind == "abs" else r["method_rel"]
            ours, paper = r[f"{kind}_mean"], r[f"paper_{kind}"]
            ref = [x for x in rows if x["dataset"] == r["dataset"] and x["sigma"] == r["sigma"]
                   and x["privacy"] == "non-private"]
            ref_best = min((x[f"{kind}_mean"] for x in ref), default=math.nan)
            why = ("even the non-private references do not reach the printed number "
                   f"(best {ref_best:.3g}): the gap is not the privacy noise" if ref_best >= paper else
                   f"a non-private reference reaches {ref_best:.3g}: the private methods lose it to their noise")
            if math.isnan(ref_best):
                why = "no non-private reference ran"
            mech = "trig-I" if table == "3.2" else "trig-II"
            own = [x[f"{kind}_mean"] for x in rows if x["dataset"] == r["dataset"] and x["sigma"] == r["sigma"]
                   and x["method"] == mech]
            if own:
                why += (f"; the thesis's own mechanism ({mech}) with the correct noise constants gets {own[0]:.3g}"
                        + (", so it does not reach the printed number either" if own[0] > paper
                           and round(own[0], PRINTED_DECIMALS) > paper else ""))
            lines.append(f"- {r['dataset']}, σ = {r['sigma']:g}, Table {table} ({kind}): closest {method} at "
                         f"{ours:.3g} against the printed {paper:.3g} ({_ratio(ours, paper)}); {why}.")
    if not lines:
        return "Every cell with a printed number is matched or beaten."
    return (f"{len(lines)} cell stays lost:" if len(lines) == 1 else f"{len(lines)} cells stay lost:") + "\n" + "\n".join(lines)


def _ratio(ours: float, paper: float) -> str:
    return f"×{ours / paper:.2g}" if paper > 0 else "printed 0"


def summary_markdown(board: Sequence[dict[str, Any]]) -> str:
    """The board as one compact Markdown table (the README's form): a line per (data set, σ), and for each
    table and error kind the winning method, its mean worst error and the thesis's printed value in brackets,
    with **loss** where it is lost. Numbers are shown to the thesis's printed precision (three significant
    digits below 0.01)."""
    def fmt(x: float) -> str:
        return "n/a" if math.isnan(x) else (f"{x:.3f}" if abs(x) >= 0.01 or x == 0 else f"{x:.2g}")

    cells: dict[tuple[str, float], dict[str, str]] = {}
    for r in board:
        tag = "3.2" if r["privacy"] == "ε-DP" else "3.3"
        for kind in ("abs", "rel"):
            method = r["method"] if kind == "abs" else r["method_rel"]
            text = f"`{method}` {fmt(r[f'{kind}_mean'])} ({fmt(r[f'paper_{kind}'])})"
            if r[f"win_{kind}"] == "loss":
                text += " **loss**"
            cells.setdefault((str(r["dataset"]), float(r["sigma"])), {})[f"{tag}-{kind}"] = text
    head = ("| data | σ | Table 3.2 (ε-DP): abs | rel | Table 3.3 ((ε, δ)-DP): abs | rel |\n"
            "|---|---|---|---|---|---|")
    lines = [f"| {ds} | {sigma:g} | " + " | ".join(c.get(k, "") for k in ("3.2-abs", "3.2-rel", "3.3-abs", "3.3-rel"))
             + " |" for (ds, sigma), c in sorted(cells.items())]
    return "\n".join([head, *lines])
