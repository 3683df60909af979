"""board-add (dpkit.board.add, ``python -m dpkit.batch board-add``, notebook 45's ``ENTRANT``): only the
entrant runs, on the stored board's cells with its seeds; its records are paired with the stored ones by
(data set, σ, repetition), it is ranked in every cell, the audit gate comes first, and the published board is never
written."""
from __future__ import annotations

import importlib
import itertools
import json
import os
import sys
import textwrap
import types

import numpy as np
import pandas as pd
import pytest

from dpkit.board import add as ba
from dpkit.board import records as board_records
from dpkit.board.records import read_records, records_frame, write_records
from dpkit.board.statistics import DEFAULT_BUDGET

SOURCE = textwrap.dedent('''
    from dataclasses import dataclass
    from typing import ClassVar

    import numpy as np

    from dpkit.core.accounting import ledger_for
    from dpkit.methods.direct import DirectAnswering
    from dpkit.queries.release import MethodBase, Release


    @dataclass(frozen=True, kw_only=True)
    class Noisy(DirectAnswering):
        epsilon: float = 1.0


    @dataclass(frozen=True, kw_only=True)
    class Zero(MethodBase):
        """Answers 0 to every query: its worst error is the workload's largest exact answer, a function of the
        workload alone (so equal records mean equal workloads). It records its budget spent (the board refuses a
        private entrant whose ledger records nothing)."""

        epsilon: float = 1.0
        delta: float = 0.0
        label: ClassVar[str] = "zero"
        needs_workload: ClassVar[bool] = True

        def release(self, X, *, rng=None, ledger=None, workload=None):
            wl = self._require_workload(workload)
            led = ledger_for(ledger, self.epsilon, self.delta, self.name)
            led.spend("answers", self.epsilon, 0.0, mechanism="constant")
            return Release(method=self.name, privacy=self.privacy, params={"epsilon": self.epsilon, "delta": 0.0},
                           ledger=led.to_dict(), timings={"total": 0.0}, answers=np.zeros(len(wl)))
''')
SIGMAS, REPS, N_QUERIES = [2.0, 4.0], 6, 300
_count = itertools.count()


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    name = f"scratch_board_add_{next(_count)}"
    (tmp_path / f"{name}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


@pytest.fixture
def stored(tmp_path, monkeypatch, scratch):
    """A small stored board (data set TOY, σ = 2 and 4, 6 repetitions, 300 queries) published in tmp_path, its rows
    shuffled (pairing goes by key, never by position); returns (published path, X, records)."""
    from dpkit.experiments.protocol import run_cells
    from dpkit.methods.registry import get

    X = np.random.default_rng(7).uniform(-1.0, 1.0, size=(300, 8))
    zero = importlib.import_module(scratch).Zero()
    methods = {"trig-I": get("trig-I"), "direct-gaussian": get("direct-gaussian"), "zero": zero}
    recs = run_cells(X, methods=methods, sigmas=SIGMAS, reps=REPS, n_queries=N_QUERIES, J=10, seed=3, dataset="TOY",
                     supremum=None)
    df = records_frame(recs, dataset="TOY", run_seed=3, n_queries=N_QUERIES, J=10, epsilon=1.0, delta=1e-3)
    published = tmp_path / "data" / "leaderboard" / "records.parquet"
    write_records(df.sample(frac=1.0, random_state=0).reset_index(drop=True), published)
    monkeypatch.setattr(board_records, "PUBLISHED", published)
    monkeypatch.setattr(ba, "load_board_data", lambda plan, board: {"TOY": X})
    return published, X, df


def test_board_plan_reads_the_cells_and_protocol():
    df = pd.DataFrame({"dataset": ["A", "A", "B", "B"] * 5, "sigma": [2.0, 4.0] * 10,
                       "rep": [r for r in range(5) for _ in range(4)], "method": "m", "run_seed": 5, "n_queries": 300,
                       "J": 10, "budget_epsilon": 1.0, "budget_delta": 1e-3})
    plan = ba.board_plan(df)
    assert (plan.datasets, plan.sigmas, plan.reps, plan.seed, plan.n_queries) == (("A", "B"), (2.0, 4.0), 5, 5, 300)
    quick = ba.board_plan(df, quick=True)
    assert (quick.datasets, quick.sigmas, quick.reps) == (("A",), (2.0,), 4)
    with pytest.raises(ba.EntrantRefusedError, match=r"run_seed takes several values \[5, 6\]"):
        ba.board_plan(df.assign(run_seed=[5] * 19 + [6]))
    with pytest.raises(ba.EntrantRefusedError, match=r"cell \(B, σ=4\) holds repetitions \[0, 1, 2, 3\], not 0…4"):
        ba.board_plan(df.iloc[:19])


def test_the_entrant_runs_alone_on_the_boards_workloads_paired_by_repetition(stored, scratch, tmp_path):
    published, X, df = stored
    before = published.read_bytes()
    name = f"{scratch}:Zero"
    result = ba.board_add(name, out=tmp_path / "out", gate=False)
    assert result.status == "ranked"
    mine = read_records(tmp_path / "out" / "entrant_records.parquet")
    assert set(mine["method"]) == {name} and len(mine) == len(SIGMAS) * REPS
    # the same workloads: the entrant answers 0 like the stored "zero", so its worst errors are the stored ones, rep by
    # rep (a different seed, workload size or pairing of repetitions would differ)
    key = ["dataset", "sigma", "rep"]
    theirs = df[df["method"] == "zero"].set_index(key)["abs"]
    assert mine.set_index(key)["abs"].sort_index().to_numpy().tolist() == theirs.sort_index().to_numpy().tolist()
    # the updated board is a copy: stored records plus the entrant's; the published file is untouched
    merged = read_records(tmp_path / "out" / "records.parquet")
    assert len(merged) == len(df) + len(mine)
    assert published.read_bytes() == before
    # ranks by mean abs among the methods of each table the entrant (ε-DP) competes in
    ranks = result.ranks.set_index(["sigma", "table"])
    assert list(ranks.index) == [(2.0, "ε-DP"), (2.0, "(ε,δ)-DP"), (4.0, "ε-DP"), (4.0, "(ε,δ)-DP")]
    for s in SIGMAS:
        means = df[df["sigma"] == s].groupby("method")["abs"].mean()
        own = float(means["zero"])
        eps_only = means[["trig-I", "zero"]]  # direct-gaussian is (ε,δ)-DP: not in Table 3.2
        assert ranks.loc[(s, "ε-DP"), "rank"] == 1 + int((eps_only < own).sum())
        assert ranks.loc[(s, "(ε,δ)-DP"), "rank"] == 1 + int((means < own).sum())
        assert ranks.loc[(s, "(ε,δ)-DP"), "methods"] == 4 and ranks.loc[(s, "ε-DP"), "methods"] == 3
    assert json.loads((tmp_path / "out" / "board_add.json").read_text())["status"] == "ranked"


def test_board_add_quick_from_the_command_line(stored, scratch, tmp_path, capsys):
    from dpkit.batch.cli import main

    published, _X, _df = stored
    before = published.read_bytes()
    name = f"{scratch}:Zero"
    out = tmp_path / "board"
    assert main(["board-add", name, "--out", str(out), "--quick", "--no-gate"]) == 0
    text = capsys.readouterr().out
    assert "TOY σ=2 ε-DP: rank " in text and "TOY σ=2 (ε,δ)-DP: rank " in text and "over 4 reps" in text
    assert "σ=4" not in text
    assert text.count("against the current best ") == 2
    assert text.count(" on 2 judged reps: too few judged repetitions to decide (a sign test needs at least 6), tie") == 2
    assert "verdicts by a two-sided exact sign test at false-alarm budget γ = 0.05 per table (Holm across its cells)" \
        in text
    ranks = pd.read_csv(out / "ranks.csv", keep_default_na=False)
    assert ranks.columns.tolist() == list(ba.RANK_COLUMNS) and set(ranks["verdict"]) == {"tie"}
    assert set(ranks["test"]) == {"exact sign test"} and set(ranks["decided"]) == {False}
    assert set(ranks["note"]) == {"too few judged repetitions to decide (a sign test needs at least 6)"}
    # it explains itself: the gate (not run here), and every file written with what it is
    assert f"audit gate: not run (--no-gate, GATE=0): {name} is unaudited" in text
    for f, role in (("records.parquet", "the updated board, a copy"), ("entrant_records.parquet", "the entrant's own"),
                    ("ranks.csv", "the entrant's rank and paired comparison"), ("board_add.json", "the summary")):
        assert f"  {out / f}  ({role}" in text
    mine = read_records(out / "entrant_records.parquet")
    assert sorted(mine["rep"]) == [0, 1, 2, 3] and set(mine["sigma"]) == {2.0}
    assert published.read_bytes() == before
    # an earlier board-add is not overwritten; the published file is never the output; a name on the board is refused
    assert main(["board-add", name, "--out", str(out), "--quick", "--no-gate"]) == 2
    assert "not overwritten (pass --replace, make board-add … REPLACE=1)" in capsys.readouterr().err
    assert main(["board-add", name, "--out", str(published.parent), "--quick", "--no-gate"]) == 2
    assert "is the published board" in capsys.readouterr().err
    assert main(["board-add", "trig-I", "--out", str(tmp_path / "x"), "--quick", "--no-gate"]) == 2
    assert "'trig-I' is already on the stored board" in capsys.readouterr().err
    assert main(["board-add", f"{scratch}:Nope", "--out", str(tmp_path / "x"), "--quick", "--no-gate"]) == 2
    assert f"'{scratch}:Nope': module '{scratch}' has no attribute 'Nope'" in capsys.readouterr().err
    assert published.read_bytes() == before and not (tmp_path / "x").exists()


def test_no_stored_board_is_named(tmp_path, monkeypatch, capsys):
    from dpkit.batch.cli import main

    monkeypatch.setattr(board_records, "PUBLISHED", tmp_path / "data" / "leaderboard" / "records.parquet")
    assert main(["board-add", "trig-I", "--out", str(tmp_path / "out"), "--no-gate"]) == 2
    assert f"not found: {tmp_path / 'data' / 'leaderboard' / 'records.parquet'}" in capsys.readouterr().err


def _gate_module(monkeypatch, result, calls):
    def audit_gate(name, method, *, epsilon, delta):
        calls.append((name, type(method).__name__, epsilon, delta))
        return result

    monkeypatch.setattr(ba, "audit_gate", audit_gate)  # board-add calls the gate it imports, dpkit.evaluation.gate's


def test_a_refuted_entrant_is_listed_as_refuted_and_not_ranked(stored, scratch, tmp_path, monkeypatch, capsys):
    from dpkit.batch.cli import main

    calls = []
    refuted = types.SimpleNamespace(refuted=True, epsilon_lb=1.7, epsilon=1.0, as_dict=lambda: {"epsilon_lb": 1.7})
    _gate_module(monkeypatch, refuted, calls)
    name = f"{scratch}:Zero"
    assert main(["board-add", name, "--out", str(tmp_path / "out"), "--quick"]) == 1
    assert calls == [(name, "Zero", 1.0, 0.0)]  # the board's budget, by the entrant's class
    assert ("refuted by the audit gate, not ranked: audited lower bound ε ≥ 1.7 against the claimed ε = 1"
            in capsys.readouterr().out)
    summary = json.loads((tmp_path / "out" / "board_add.json").read_text())
    assert summary["status"] == "refuted" and "ranks" not in summary
    assert summary["gate"]["record"] == {"epsilon_lb": 1.7}
    assert not (tmp_path / "out" / "records.parquet").exists()


def test_an_entrant_the_gate_passes_is_ranked(stored, scratch, tmp_path, monkeypatch):
    calls = []
    _gate_module(monkeypatch, types.SimpleNamespace(verdict="passed"), calls)
    result = ba.board_add(f"{scratch}:Zero", out=tmp_path / "out", quick=True)
    assert result.status == "ranked" and len(calls) == 1 and result.gate.refuted is False


def test_the_entrant_is_compared_with_each_cells_current_best_paired_with_holm_across_the_cells(stored, scratch,
                                                                                                tmp_path):
    """The ranks carry the paired comparison of the entrant against each cell's current best (chosen on the even
    repetitions, as the board chooses its winners), judged on the odd repetitions by an exact sign test with Holm
    across the cells of a table: the median difference, the binomial p-value recomputed here, Holm's levels; with 3
    judged repetitions (fewer than the 6 a sign test needs at 0.05) every verdict is a tie that says so."""
    from scipy import stats

    from dpkit.board.statistics import holm

    _published, _X, df = stored
    name = f"{scratch}:Noisy"
    result = ba.board_add(name, out=tmp_path / "out", gate=False)
    ranks = result.ranks
    merged = read_records(tmp_path / "out" / "records.parquet")
    assert pd.read_csv(tmp_path / "out" / "ranks.csv", keep_default_na=False)["test"].tolist() == ["exact sign test"] * 4
    for table, allowed in (("ε-DP", ["ε-DP"]), ("(ε,δ)-DP", ["ε-DP", "(ε,δ)-DP"])):
        mine = ranks[ranks["table"] == table].reset_index(drop=True)
        assert list(mine["sigma"]) == SIGMAS
        for r in mine.itertuples():
            cell = df[(df["sigma"] == r.sigma) & df["privacy"].isin(allowed)]
            even = cell[cell["rep"] % 2 == 0].groupby("method")["abs"].mean()
            assert r.best_other == even.idxmin()  # the current best, chosen on the even repetitions
        assert set(mine["judged_reps"]) == {REPS // 2}
        # the odd repetitions: the entrant minus the current best, repetition by repetition
        for r in mine.itertuples():
            odd = merged[(merged["sigma"] == r.sigma) & (merged["rep"] % 2 == 1)].pivot(index="rep", columns="method",
                                                                                        values="abs")
            d = (odd[name] - odd[r.best_other]).to_numpy()
            assert r.diff_median == np.median(d)
            assert r.sign_p == pytest.approx(stats.binomtest(int((d > 0).sum()), REPS // 2).pvalue, rel=1e-12)
            assert r.worse_p == pytest.approx(stats.binom.sf((d > 0).sum() - 1, REPS // 2, 0.5), rel=1e-12)
        # Holm across the table's cells (two σ): the levels are Holm's, not one cell's γ each
        _reject, level = holm(mine["sign_p"].to_numpy(), DEFAULT_BUDGET)
        assert mine["level"].tolist() == level.tolist() and min(level) == DEFAULT_BUDGET / 2
        assert set(mine["verdict"]) == {"tie"} and mine["in_winner_set"].all() and not mine["decided"].any()
    text = ba.ranks_text(ranks, name)
    for r in ranks.itertuples():
        assert (f"median difference {r.diff_median:+.3g} on 3 judged reps: too few judged repetitions to decide (a "
                "sign test needs at least 6), tie") in text


def test_a_board_too_short_to_judge_on_is_refused_before_anything_runs(stored, scratch, tmp_path, monkeypatch,
                                                                        capsys):
    """An interval needs 2 odd repetitions: a board of 3 repetitions cannot judge an entrant, said before the entrant
    runs (exit 2, naming the repetitions), and compare_paired itself refuses 1 (not a nan interval)."""
    from dpkit.batch.cli import main
    from dpkit.board.statistics import compare_paired

    published, _X, df = stored
    short = df[df["rep"] < 3].reset_index(drop=True)
    write_records(short, published, replace=True)
    monkeypatch.setattr(ba, "entrant_records", lambda *a, **k: pytest.fail("the entrant ran"))
    assert main(["board-add", f"{scratch}:Zero", "--out", str(tmp_path / "out"), "--no-gate"]) == 2
    assert "the stored board holds 3 repetitions; an entrant is judged" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=r"1 repetition\(s\) of the evaluation half .* an interval needs at least 2"):
        compare_paired(short, "zero", "trig-I")


@pytest.mark.notebook
def test_notebook_45_writes_its_records_and_adds_an_entrant(run_notebook, scratch, tmp_path, monkeypatch):
    """Notebook 45 (QUICK) writes its per-repetition records; with ENTRANT it runs only the entrant on that board."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    run_notebook("45_leaderboard.ipynb", METHODS=["trig-I", "trig-II", "direct-gaussian"])
    board = tmp_path / "45_leaderboard" / "records.parquet"
    df = read_records(board)
    assert sorted(set(df["method"])) == ["direct-gaussian", "trig-I", "trig-II"] and len(df) == 3 * 4
    # the board's class supremum searches every centre of R^d, and each record says so
    has_sup = df["sup_abs"].notna()
    assert set(df.loc[has_sup, "method"]) == {"trig-I", "trig-II"} and set(df.loc[has_sup, "sup_domain"]) == {"space"}
    assert df.loc[~has_sup, "sup_domain"].isna().all()
    (tmp_path / "stored").mkdir()
    stored = tmp_path / "stored" / "records.parquet"
    board.rename(stored)
    m = run_notebook("45_leaderboard.ipynb", ENTRANT=f"{scratch}:Noisy", BOARD=str(stored), GATE=False)
    ranks = pd.read_csv(tmp_path / "45_leaderboard" / "board" / "ranks.csv")
    assert list(ranks["table"]) == ["ε-DP", "(ε,δ)-DP"] and set(ranks["reps"]) == {4}
    assert set(ranks["judged_reps"]) == {2} and set(ranks["verdict"]) == {"tie"}  # 2 judged: a sign test cannot decide
    assert m["board_add"]["entrant"] == f"{scratch}:Noisy" and m["all_consistent"]
    merged = read_records(tmp_path / "45_leaderboard" / "board" / "records.parquet")
    assert len(merged) == len(df) + 4
    # an entrant's releases are searched in the stored board's domain (the published board's, without the column: cube)
    assert ba.board_plan(read_records(stored)).supremum == "space"
    assert ba.board_plan(read_records(stored)[list(board_records.COLUMNS)]).supremum == "cube"
    # board_add's own files and summary, as the command writes them (one path: the same plan, gate record, status)
    folder = tmp_path / "45_leaderboard" / "board"
    written = [board_records.RECORDS_NAME, ba.ENTRANT_RECORDS_NAME, ba.RANKS_NAME, ba.SUMMARY_NAME]
    assert sorted(p.name for p in folder.iterdir()) == sorted(written)
    summary = json.loads((folder / ba.SUMMARY_NAME).read_text())
    assert summary["status"] == "ranked" and summary["gate"] is None and summary["plan"]["reps"] == 4
    assert summary["board"] == str(stored)


GUIDE = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "guide", "add-method.md")


def _guide_block(marker: str) -> str:
    import re

    with open(GUIDE, encoding="utf-8") as fh:
        blocks = re.findall(r"```python\n(.*?)```", fh.read(), re.S)
    (block,) = [b for b in blocks if marker in b]
    return block


def test_the_guides_own_example_passes_the_gate_and_is_ranked_by_a_quick_board_add(stored, tmp_path, monkeypatch,
                                                                                   capsys):
    """NoisyMean, copied from docs/guide/add-method.md word for word (so the guide cannot drift), joins a QUICK board
    with the audit gate on (it used to fail there: the gate called measure() without a ledger). The gate runs at its
    defaults: a correct method is refuted with probability ≤ 5 % (seed fixed)."""
    from dpkit.batch.cli import main

    (tmp_path / "guide_example.py").write_text(_guide_block("class NoisyMean"))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("guide_example", None)
    out = tmp_path / "board"
    assert main(["board-add", "guide_example:NoisyMean", "--out", str(out), "--quick"]) == 0
    text = capsys.readouterr().out
    assert "audit gate: passed guide_example:NoisyMean: audited lower bound ε ≥ " in text
    assert "a pass is not a proof of privacy" in text
    assert "TOY σ=2 ε-DP: rank " in text and "over 4 reps" in text
    summary = json.loads((out / "board_add.json").read_text())
    assert summary["status"] == "ranked" and summary["gate"]["refuted"] is False
    assert summary["gate"]["note"].startswith("a pass is not a proof")
    assert [a["probe"] for a in summary["gate"]["record"]["audits"]] == ["measure", "release"]
    sys.modules.pop("guide_example", None)


def test_the_guide_and_the_command_line_state_the_quick_repetitions_of_the_code():
    from dpkit.batch.cli import _parser
    from dpkit.board.add import QUICK_REPS

    with open(GUIDE, encoding="utf-8") as fh:
        guide = fh.read()
    assert f"QUICK=1    # one data set, one σ, {QUICK_REPS} repetitions" in guide
    add = _parser()._subparsers._group_actions[0].choices["board-add"]
    assert f"{QUICK_REPS} repetitions" in add.format_help()
    with open(os.path.join(os.path.dirname(GUIDE), os.pardir, os.pardir, "Makefile"), encoding="utf-8") as fh:
        assert f"QUICK=1: one data set, one sigma, {QUICK_REPS} repetitions" in fh.read()


def test_every_make_switch_board_add_names_is_listed_by_make_help():
    """The board-add line of `make help` (the Makefile's `##` text) lists every switch of the target, and every switch
    its messages name (REPLACE=1 for an output in the way, GATE=0 for the gate)."""
    import re

    with open(os.path.join(os.path.dirname(GUIDE), os.pardir, os.pardir, "Makefile"), encoding="utf-8") as fh:
        makefile = fh.read()
    (line,) = [x for x in makefile.splitlines() if x.startswith("board-add:") and "## " in x]
    listed = set(re.findall(r"\b([A-Z_]+)=", line.split("## ", 1)[1]))
    recipe = makefile.split(line, 1)[1].split("\n\n", 1)[0]
    used = set(re.findall(r"\$\(([A-Z_]+)\)", recipe)) - {"BIN", "RESULTS", "STAMP"}
    assert used == {"METHOD", "QUICK", "GATE", "REPLACE", "BOARD", "REP_WORKERS"} and used <= listed, (used, listed)
    # the switches the messages name (the output in the way: test_board_add_quick_from_the_command_line; the gate)
    assert "GATE=0" in ba.gate_text("m:X", None) and {"REPLACE", "GATE"} <= listed
