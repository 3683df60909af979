"""The leaderboard's report: its headline, its written accounts and its tables beside the board.

From the board's rows (:func:`~dpkit.experiments.leaderboard.leaderboard_rows`) and the per-method rows they were
made from: :func:`headline` counts the cells better than, tied with and worse than the thesis's printed numbers,
:func:`lost_cells_text` gives an account of each cell lost, :func:`summary_markdown` is the board as one compact
Markdown table (the README's); the ranking by the class supremum has its table (:func:`supremum_rows`), the cells
where it names another best method (:func:`ranking_disagreements`) and a written summary
(:func:`supremum_summary_text`). Notebook 45 and the assembler write them; :mod:`dpkit.experiments.leaderboard`
re-exports every name.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dpkit.experiments.board_stats import DEFAULT_BUDGET
from dpkit.experiments.reference import PRINTED_DECIMALS, TABLES

__all__ = ["SET_COLUMNS", "winner_set_rows", "COVERAGE_COLUMNS", "coverage_rows",
           "DISAGREEMENT_COLUMNS", "ranking_disagreements", "SUPREMUM_COLUMNS", "THESIS_MECHANISMS", "supremum_rows",
           "supremum_summary_text", "VERDICTS", "Headline", "headline", "lost_cells_text", "summary_markdown",
           "number_or_nan"]


#: The columns of :func:`winner_set_rows`.
SET_COLUMNS = ("table", "kind", "dataset", "sigma", "winner", "set_size", "members")


def winner_set_rows(board: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every cell's winner set (:mod:`dpkit.experiments.board_robust`, step 4), one row per table, error kind and
    cell with the :data:`SET_COLUMNS` (``members``: the set's methods, the winner first, comma-separated); cells of
    a board without winner sets (``selection="simultaneous"``) are left out."""
    out = []
    for kind in ("abs", "rel"):
        for b in board:
            members = b.get(f"{kind}_set")
            if members is None:
                continue
            out.append({"table": f"Table {_TABLE_NAMES[b['privacy']]}", "kind": kind, "dataset": b["dataset"],
                        "sigma": b["sigma"], "winner": b["method"] if kind == "abs" else b["method_rel"],
                        "set_size": len(members), "members": ", ".join(members)})
    return sorted(out, key=lambda r: (r["table"], r["kind"], r["dataset"], r["sigma"]))


#: The columns of :func:`coverage_rows`.
COVERAGE_COLUMNS = ("table", "kind", "dataset", "sigma", "winner", "skewness", "nominal_miss", "mean_ci_miss",
                    "upper_end_misses", "miss_limit", "median_ci_miss", "shown")


def coverage_rows(board: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The coverage study of the board's intervals (:func:`dpkit.experiments.board_robust.coverage_study`), one row
    per table, error kind and cell with the :data:`COVERAGE_COLUMNS`: the winner, the skewness of its records, the
    nominal miss rate (the cell's Holm level), the measured miss rate of the mean's interval (and of its upper end
    alone), the most misses allowed, the measured miss rate of the median's interval and the interval shown
    (``mean`` or ``median``). Cells without a study are left out."""
    out = []
    for kind in ("abs", "rel"):
        for b in board:
            miss = b.get(f"{kind}_coverage_miss")
            if miss is None or math.isnan(miss):
                continue
            out.append({"table": f"Table {_TABLE_NAMES[b['privacy']]}", "kind": kind, "dataset": b["dataset"],
                        "sigma": b["sigma"], "winner": b["method"] if kind == "abs" else b["method_rel"],
                        "skewness": b[f"{kind}_skewness"], "nominal_miss": b[f"{kind}_level"], "mean_ci_miss": miss,
                        "upper_end_misses": b[f"{kind}_coverage_miss_low"],
                        "miss_limit": b[f"{kind}_coverage_limit"], "median_ci_miss": b[f"{kind}_coverage_median_miss"],
                        "shown": b[f"{kind}_param"]})
    return sorted(out, key=lambda r: (r["table"], r["kind"], r["dataset"], r["sigma"]))


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
#: supremum (with the mean of its certified upper bound) and its runner-up, next to the best by the thesis metric with
#: its own class supremum.
SUPREMUM_COLUMNS = ("dataset", "sigma", "privacy", "method_sup", "sup_abs_mean", "sup_abs_std", "sup_upper_mean",
                    "abs_of_sup", "runner_up_sup", "runner_up_sup_abs", "method", "abs_mean", "sup_of_best", "rankings_agree")
#: The thesis's own mechanism per table (its Table 3.2 is mechanism I, its Table 3.3 mechanism II).
THESIS_MECHANISMS: dict[str, str] = {table: f"trig-{mech}" for table, (_allowed, mech) in TABLES.items()}


def supremum_rows(board: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The board ranked by the class supremum: per cell the :data:`SUPREMUM_COLUMNS` (the best method by the mean
    class supremum, its runner-up, and the thesis metric's winner with its class supremum)."""
    return [{k: b.get(k) for k in SUPREMUM_COLUMNS} for b in board]


def number_or_nan(x: Any) -> float:
    """``x`` as a float, NaN for ``None`` (a record's value that is null, e.g. a method without a class supremum).

    Parameters
    ----------
    x : float, int or None
        A value of a record.

    Returns
    -------
    float
        ``float(x)``, or NaN when ``x`` is ``None``.
    """
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

    ``board`` are :func:`~dpkit.experiments.leaderboard.leaderboard_rows`, ``rows`` the method rows they were made
    from (:func:`dpkit.experiments.baselines.baseline_rows`).
    """
    seen: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}  # per table, per cell of its own mechanism
    for b in board:
        allowed, _mech = TABLES[b["privacy"]]
        name = THESIS_MECHANISMS[b["privacy"]]
        cand = [r for r in rows if r["dataset"] == b["dataset"] and float(r["sigma"]) == float(b["sigma"])
                and r["privacy"] in allowed]
        own = [r for r in cand if r["method"] == name]
        if not own or math.isnan(sup := number_or_nan(own[0].get("sup_abs_mean"))):
            continue
        sups = [x for r in cand if not math.isnan(x := number_or_nan(r.get("sup_abs_mean")))]
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


_TABLE_NAMES = {"ε-DP": "3.2", "(ε,δ)-DP": "3.3"}
#: The verdicts a cell can have against the thesis's printed number (:mod:`dpkit.experiments.board_stats`).
VERDICTS = ("better", "tie", "worse")


@dataclass(frozen=True)
class Headline:
    """Cells (data set × σ × error kind, abs and rel) better than, tied with and worse than the thesis, per table,
    at the false-alarm budget ``budget``, and the cells with one certain winner (a winner set of one;
    :mod:`dpkit.experiments.board_robust`; ``None`` for a board without winner sets)."""

    better: dict[str, int]
    ties: dict[str, int]
    worse: dict[str, int]
    cells: dict[str, int]
    budget: float
    certain: dict[str, int] | None = None
    ranked: dict[str, int] | None = None

    def text(self) -> str:
        """``better than the thesis in X/50 (Table 3.2) and Y/50 (Table 3.3) cells at false-alarm budget γ = 0.05
        (family-wise per table and error kind); Z ties; W worse; one certain winner in A/50 and B/50`` (the cells
        of Table 3.2 and 3.3 whose winner set is the winner alone; left out for a board without winner sets); a
        board without a printed number (your own data set) says so instead of counting against the thesis."""
        if not any(self.cells.values()):
            return ("no comparison with the thesis: it printed no number for these data sets (the board ranks the "
                    "methods only)")
        parts = [f"{self.better[t]}/{self.cells[t]} (Table {_TABLE_NAMES[t]})" for t in TABLES]
        text = (f"better than the thesis in {' and '.join(parts)} cells at false-alarm budget γ = {self.budget:g} "
                f"(family-wise per table and error kind); {sum(self.ties.values())} ties; "
                f"{sum(self.worse.values())} worse")
        if self.certain is None or self.ranked is None:
            return text
        return f"{text}; one certain winner in {' and '.join(f'{self.certain[t]}/{self.ranked[t]}' for t in TABLES)}"


def headline(board: Sequence[dict[str, Any]]) -> Headline:
    """Count the cells (abs and rel per row) better than, tied with and worse than the thesis's printed number
    (``verdict_abs``, ``verdict_rel`` of :func:`~dpkit.experiments.leaderboard.leaderboard_rows`), per table; cells
    without a printed number are skipped. The cells with one certain winner (``abs_certain``, ``rel_certain``) are
    counted among all cells of a table, printed number or not, when every row has them.

    Raises
    ------
    ValueError
        The board's rows were made at different budgets, or a row has no verdicts (not from
        :func:`~dpkit.experiments.leaderboard.leaderboard_rows`).
    """
    counts = {v: {t: 0 for t in TABLES} for v in VERDICTS}
    cells = {t: 0 for t in TABLES}
    certain: dict[str, int] | None = {t: 0 for t in TABLES}
    ranked = {t: 0 for t in TABLES}
    budgets = {r.get("budget") for r in board}
    if None in budgets or len(budgets) > 1:
        raise ValueError(f"headline: the board's rows carry the budgets {sorted(map(str, budgets))}; one budget "
                         "(leaderboard_rows) is needed")
    for r in board:
        for kind in ("abs", "rel"):
            one = r.get(f"{kind}_certain")
            if one is None:
                certain = None
            elif certain is not None:
                ranked[r["privacy"]] += 1
                certain[r["privacy"]] += bool(one)
            if r[f"verdict_{kind}"] == "n/a":
                continue
            cells[r["privacy"]] += 1
            counts[r[f"verdict_{kind}"]][r["privacy"]] += 1
    return Headline(better=counts["better"], ties=counts["tie"], worse=counts["worse"], cells=cells,
                    budget=float(budgets.pop()) if budgets else DEFAULT_BUDGET,
                    certain=certain if board else None, ranked=ranked if certain is not None and board else None)


def lost_cells_text(board: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> str:
    """A written account of the cells lost (verdict ``"worse"``: the median significantly above the printed number,
    at the board's budget): which method came closest, its estimate (mean or median, as shown) and interval, by how
    much, whether even
    the non-private references reach the printed number (if they do not, the gap is not the noise), and what
    the thesis's own mechanism gets with the correct constants (if it loses too, the printed number is not
    reproduced by the method that printed it)."""
    lines: list[str] = []
    for r in board:
        table = "3.2" if r["privacy"] == "ε-DP" else "3.3"
        for kind in ("abs", "rel"):
            if r[f"verdict_{kind}"] != "worse":
                continue
            method = r["method"] if kind == "abs" else r["method_rel"]
            ours, paper = r[f"{kind}_est"], r[f"paper_{kind}"]
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
            param = r.get(f"{kind}_param", "mean")
            lines.append(f"- {r['dataset']}, σ = {r['sigma']:g}, Table {table} ({kind}): closest {method} at a "
                         f"{param} of {ours:.3g} on the judged repetitions (interval {r[f'{kind}_ci_low']:.3g} to "
                         f"{r[f'{kind}_ci_high']:.3g}) against the printed {paper:.3g} ({_ratio(ours, paper)}); {why}.")
    if not lines and all(r["verdict_abs"] == "n/a" and r["verdict_rel"] == "n/a" for r in board):
        return "The thesis printed no number for these data sets: no cell is compared with it."
    if not lines:
        return "No cell with a printed number is worse than the thesis."
    return (f"{len(lines)} cell stays lost:" if len(lines) == 1 else f"{len(lines)} cells stay lost:") + "\n" + "\n".join(lines)


def _ratio(ours: float, paper: float) -> str:
    return f"×{ours / paper:.2g}" if paper > 0 else "printed 0"


def _set_text(r: dict[str, Any], kind: str, names: int) -> str:
    """`` (+2: `b`, `c`)`` after the winner's name for a winner set of more than one, the other members named when
    there are at most ``names`` of them, else `` +k`` (:func:`summary_markdown`)."""
    members = r.get(f"{kind}_set")
    if not members or len(members) < 2:
        return ""
    winner = r["method"] if kind == "abs" else r["method_rel"]
    others = [m for m in members if m != winner]
    if len(others) <= names:
        return f" (+{len(others)}: " + ", ".join(f"`{m}`" for m in others) + ")"
    return f" +{len(others)}"


def summary_markdown(board: Sequence[dict[str, Any]], *, kinds: Sequence[str] = ("abs", "rel"), names: int = 2) -> str:
    """The board as one compact Markdown table (the README's form): a line per (data set, σ), and for each
    table and error kind the winning method, its winner set where it has more than one member (``+2``: two more
    methods not significantly worse; ``(+2: `b`, `c`)`` names them when there are at most ``names``), its estimate
    on the judged repetitions (the mean, or ``median`` where the coverage study did not keep the mean's interval)
    with its interval, the thesis's printed value in parentheses
    and the verdict (``better``, ``tie``, **worse**); a last line states the procedure and the budget. Numbers are
    shown to the thesis's printed precision (three significant digits below 0.01). ``kinds``: the error kinds
    shown, ``"abs"`` and/or ``"rel"`` (the README shows ``abs``).

    Raises
    ------
    ValueError
        For ``kinds`` empty or naming another kind.
    """
    kinds = tuple(kinds)
    if not kinds or any(k not in ("abs", "rel") for k in kinds):
        raise ValueError(f"kinds must be a non-empty selection of 'abs' and 'rel'; got {kinds!r}")
    def fmt(x: float) -> str:
        return "n/a" if math.isnan(x) else (f"{x:.3f}" if abs(x) >= 0.01 or x == 0 else f"{x:.2g}")

    cells: dict[tuple[str, float], dict[str, str]] = {}
    printed = any(r[f"verdict_{k}"] != "n/a" for r in board for k in ("abs", "rel"))
    for r in board:
        tag = _TABLE_NAMES[r["privacy"]]
        for kind in ("abs", "rel"):
            method = r["method"] if kind == "abs" else r["method_rel"]
            v = r[f"verdict_{kind}"]
            param = "median " if r.get(f"{kind}_param") == "median" else ""
            text = (f"`{method}`{_set_text(r, kind, names)} {param}{fmt(r[f'{kind}_est'])} [{fmt(r[f'{kind}_ci_low'])}, "
                    f"{fmt(r[f'{kind}_ci_high'])}]")
            if printed:  # a board of your own data has no printed number: no thesis column, no verdict
                text += f" ({fmt(r[f'paper_{kind}'])}) " + ("**worse**" if v == "worse" else v)
            cells.setdefault((str(r["dataset"]), float(r["sigma"])), {})[f"{tag}-{kind}"] = text
    columns = [(tag, kind) for tag in ("3.2", "3.3") for kind in ("abs", "rel") if kind in kinds]
    titles = {"3.2": "Table 3.2 (ε-DP)", "3.3": "Table 3.3 ((ε, δ)-DP)"}
    names = [f"{titles[tag]}: {kind}" if kind == kinds[0] or len(kinds) == 1 else kind for tag, kind in columns]
    head = "| data | σ | " + " | ".join(names) + " |\n" + "|---" * (2 + len(columns)) + "|"
    lines = [f"| {ds} | {sigma:g} | " + " | ".join(c.get(f"{tag}-{kind}", "") for tag, kind in columns)
             + " |" for (ds, sigma), c in sorted(cells.items())]
    if not board:
        return head
    b = board[0]
    if b["selection"] == "split":
        note = (f"Chosen on the even repetitions, judged on the odd {b['judged_reps']}; +k: k more not significantly "
                "worse; verdict: sign test of the median vs printed ± half its last digit; median: the mean's "
                "interval failed coverage.")
    else:
        note = ("Winner chosen and judged on all repetitions, its interval widened for the choice (Bonferroni) "
                f"({b['judged_reps']} repetitions); intervals at the Holm level of their cell; verdicts against the "
                f"printed number ± half its last digit at false-alarm budget γ = {b['budget']:g} per table and "
                "error kind.")
    if not printed:
        note = (f"Winner chosen on the even repetitions, judged on the odd {b['judged_reps']}" if b["selection"] == "split"
                else f"Winner chosen and judged on all {b['judged_reps']} repetitions")
        note += (f"; intervals at level 1 − γ = {1 - b['budget']:g}; +k: k more not significantly worse; the thesis "
                 "printed no number for these data sets, so there is no verdict.")
    return "\n".join([head, *lines, "", note])
