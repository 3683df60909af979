"""The open board cannot be cheated: cheating entrants as fixtures, each refused or refuted before it is
ranked, and honest ones that pass (positive controls).

* The budget is the board's (dpkit.board.entrants.check_board_budget, check_spent;
  dpkit.board.add.check_entrant_spend): an entrant that keeps its own ε, one whose records spend 3ε,
  δ > 0 in the ε-DP table, or nothing, is refused on every path (load_entrant's trial release, board_add(), the CLI
  with and without the gate), naming the record and the spend. These are exact checks, not statistics.
* The gate audits the release as a black box (dpkit.evaluation.gate): a release without noise, one whose measure()
  is noisy but whose release() is not, a budget ignorer audited at the board's claim, and histogram marginals with a
  quarter of their noise are refuted. The gates run at board-add's defaults (confidence 0.95: a correct claim is
  refuted with probability ≤ 5 % per gate, jointly over its audits; seeds fixed, so the outcomes are fixed). Margins:
  the no-noise and clean releases are deterministic on each side (the auditor's bound is then ln of the estimation
  draws over the Clopper–Pearson upper bound of 0 events, ≈ 5.9 at 1000 draws: asserted > 3); the ε-keeper's
  Laplace mean at ε = 10 leaks 10 on the audited pair (asserted > 2); the quarter-noise histograms leak 4 on the
  pair (sign statistic of 16 cells, Gaussian-like shift ≈ 0.9; the bound at these sizes ≈ 1.3–1.5: asserted > 1,
  the claim).
"""
from __future__ import annotations

import importlib
import itertools
import json
import sys
import textwrap
import warnings

import numpy as np
import pytest

from dpkit.board import add as ba
from dpkit.board import records as board_records
from dpkit.board.entrants import TRIAL_SHAPE, BudgetViolationError, check_spent, load_entrant
from dpkit.board.records import records_frame, write_records
from dpkit.evaluation.gate import NOT_A_PROOF, audit_gate

SOURCE = textwrap.dedent(f'''
    """Entrants for the board: an honest noisy mean, and cheats."""
    import dataclasses
    from dataclasses import dataclass
    from typing import ClassVar

    import numpy as np

    from dpkit.core.accounting import Ledger, ledger_for
    from dpkit.methods.marginals import IndependentMarginals
    from dpkit.queries.release import MethodBase, Release, Timer
    from dpkit.queries.synthetic import WeightedDatabase

    TRIAL_ROWS = {TRIAL_SHAPE[0]}  # the trial release's rows: the record cheats below behave there


    @dataclass(frozen=True, kw_only=True)
    class Honest(MethodBase):
        """The mean with Laplace noise on its L1 sensitivity 2d/n (replace-one), one synthetic row: ε-DP."""

        label = "honest-mean"
        epsilon: float = 1.0
        delta: float = 0.0

        def scale(self, n, d):
            return 2.0 * d / (n * self.epsilon)

        def measure(self, X, *, rng=None, ledger=None):
            X = np.asarray(X, dtype=float)
            n, d = X.shape
            ledger_for(ledger, self.epsilon, self.delta, self.name).spend("mean", self.epsilon, 0.0)
            return X.mean(axis=0) + rng.laplace(0.0, self.scale(n, d), size=d)

        def synthesize(self, stats, X, *, rng, timer):
            return WeightedDatabase.equally_weighted(np.clip(stats, -1.0, 1.0)[None, :]), None

        def release_params(self, stats, X, ledger):
            return {{"epsilon": self.epsilon}}


    @dataclass(frozen=True, kw_only=True)
    class NoNoise(Honest):
        """Spends its budget on the ledger and releases the exact mean."""

        def scale(self, n, d):
            return 0.0


    @dataclass(frozen=True, kw_only=True)
    class CleanRelease(Honest):
        """measure() is noisy (what the old gate audited); release() publishes the exact mean."""

        def synthesize(self, stats, X, *, rng, timer):
            return WeightedDatabase.equally_weighted(np.clip(np.mean(X, axis=0), -1.0, 1.0)[None, :]), None


    @dataclass(frozen=True, kw_only=True)
    class EpsKeeper(Honest):
        """Keeps its own ε = 10 whatever the board sets."""

        def __post_init__(self):
            object.__setattr__(self, "epsilon", 10.0)


    @dataclass(frozen=True, kw_only=True)
    class RecordCheat(Honest):
        """Honest on the trial release; on real data it records (ε·factor, δ) spent in a ledger of its own."""

        factor: ClassVar[float] = 3.0
        spent_delta: ClassVar[float] = 0.0
        spends: ClassVar[bool] = True
        always: ClassVar[bool] = False

        def release(self, X, *, rng=None, ledger=None, workload=None):
            X = np.asarray(X, dtype=float)
            if X.shape[0] <= TRIAL_ROWS and not self.always:
                return super().release(X, rng=rng, ledger=ledger, workload=workload)
            eps = self.epsilon * self.factor
            led = Ledger(eps, self.spent_delta, name=self.name)
            if self.spends:
                led.spend("mean", eps, self.spent_delta)
            g = np.random.default_rng(rng)
            stats = X.mean(axis=0) + g.laplace(0.0, 2.0 * X.shape[1] / (X.shape[0] * eps), size=X.shape[1])
            synth, _ = self.synthesize(stats, X, rng=g, timer=Timer())
            return Release(method=self.name, privacy=self.privacy, params={{}}, ledger=led.to_dict(),
                           timings={{"total": 0.0}}, synthetic=synth)


    @dataclass(frozen=True, kw_only=True)
    class ThreeEps(RecordCheat):
        """Records 3ε spent (and noises at 3ε)."""


    @dataclass(frozen=True, kw_only=True)
    class DeltaInEpsDP(RecordCheat):
        """An ε-DP entrant whose ledger records δ = 10⁻³ spent."""

        factor: ClassVar[float] = 1.0
        spent_delta: ClassVar[float] = 1e-3


    @dataclass(frozen=True, kw_only=True)
    class EmptyLedger(RecordCheat):
        """Records nothing spent."""

        factor: ClassVar[float] = 1.0
        spends: ClassVar[bool] = False


    @dataclass(frozen=True, kw_only=True)
    class ThreeEpsAlways(ThreeEps):
        always: ClassVar[bool] = True


    @dataclass(frozen=True, kw_only=True)
    class DeltaInEpsDPAlways(DeltaInEpsDP):
        always: ClassVar[bool] = True


    @dataclass(frozen=True, kw_only=True)
    class EmptyLedgerAlways(EmptyLedger):
        always: ClassVar[bool] = True


    @dataclass(frozen=True, kw_only=True)
    class QuarterNoiseHistogram(IndependentMarginals):
        """The registry's marginals-histogram-eps with a quarter of its Laplace noise (true ε = 4 on the gate's pair),
        recording the claimed ε spent."""

        epsilon: float = 1.0

        def measure(self, X, *, rng=None, ledger=None):
            stats = IndependentMarginals.measure(dataclasses.replace(self, epsilon=4 * self.epsilon), X, rng=rng)
            ledger_for(ledger, self.epsilon, self.delta, self.name).spend("histograms", self.epsilon)
            return stats
''')
_count = itertools.count()


@pytest.fixture
def cheats(tmp_path, monkeypatch):
    """The module of entrants above, importable under a fresh name; returns the module."""
    name = f"scratch_cheats_{next(_count)}"
    (tmp_path / f"{name}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module(name)
    sys.modules.pop(name, None)


@pytest.fixture
def stored(tmp_path, monkeypatch):
    """A small stored board (data set TOY 300×8, σ = 2, 4 repetitions, 300 queries, ε = 1, δ = 10⁻³) published in
    tmp_path; returns its path."""
    from dpkit.experiments.protocol import run_cells
    from dpkit.methods.registry import get

    X = np.random.default_rng(7).uniform(-1.0, 1.0, size=(300, 8))
    recs = run_cells(X, methods={"trig-I": get("trig-I"), "direct-gaussian": get("direct-gaussian")}, sigmas=[2.0],
                     reps=4, n_queries=300, J=10, seed=3, dataset="TOY", supremum=None)
    published = tmp_path / "data" / "leaderboard" / "records.parquet"
    write_records(records_frame(recs, dataset="TOY", run_seed=3, n_queries=300, J=10, epsilon=1.0, delta=1e-3),
                  published)
    monkeypatch.setattr(board_records, "PUBLISHED", published)
    monkeypatch.setattr(ba, "load_board_data", lambda plan, board: {"TOY": X})
    return published


def gate(name, method, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit_gate(name, method, epsilon=1.0, delta=0.0, rng=0, **kw)


def audit_of(res, probe):
    (record,) = [a for a in res.audits if a["probe"] == probe]
    return record


# ----------------------------------------------------------------------------- 1. the budget is the board's
def test_check_spent_refuses_each_kind_of_overspend_and_names_it():
    ok = dict(name="m:X", where="record (TOY, σ=2, rep 0)", epsilon=1.0, delta=1e-3)
    check_spent(privacy="ε-DP", spent=(1.0 + 1e-12, 0.0), **ok)  # round-off of a split budget
    check_spent(privacy="(ε,δ)-DP", spent=(1.0, 1e-3), **ok)
    check_spent(privacy="non-private", spent=(np.inf, 0.0), **ok)  # never ranked
    for privacy, spent, entries, what in [
        ("ε-DP", (3.0, 0.0), None, "records ε = 3, δ = 0 spent, beyond the board's budget ε = 1, δ = 0"),
        ("ε-DP", (1.0, 1e-3), None, "records ε = 1, δ = 0.001 spent, δ > 0 in an ε-DP release"),
        ("(ε,δ)-DP", (1.0, 2e-3), None, "beyond the board's budget ε = 1, δ = 0.001"),
        ("ε-DP", (0.0, 0.0), None, "nothing spent (an empty ledger"),
        ("ε-DP", (1.0, 0.0), 0, "nothing spent (an empty ledger"),
        ("(ε,δ)-DP", (np.nan, 0.0), None, "no finite (ε, δ) spent"),
    ]:
        with pytest.raises(BudgetViolationError) as exc:
            check_spent(privacy=privacy, spent=spent, entries=entries, **ok)
        assert str(exc.value).startswith(f"entrant 'm:X': record (TOY, σ=2, rep 0) ({privacy}) ") and what in str(exc.value)


@pytest.mark.parametrize("attr, what", [
    ("EpsKeeper", "holds ε = 10, δ = 0 after the board set its budget ε = 1, δ = 0"),
    ("ThreeEpsAlways", "trial release (a 40×8 synthetic array, no real data) (ε-DP) records ε = 3, δ = 0 spent, beyond"),
    ("DeltaInEpsDPAlways", "records ε = 1, δ = 0.001 spent, δ > 0 in an ε-DP release"),
    ("EmptyLedgerAlways", "records ε = 0, δ = 0 spent, nothing spent (an empty ledger"),
])
def test_a_cheat_is_refused_when_loaded(cheats, attr, what):
    """load_entrant (board_methods, board-add, notebooks 45/46): the board's budget set and checked, and the trial
    release's ledger checked against it (not against what the entrant holds)."""
    with pytest.raises(BudgetViolationError) as exc:
        load_entrant(f"{cheats.__name__}:{attr}", epsilon=1.0, delta=1e-3)
    assert f"entrant '{cheats.__name__}:{attr}'" in str(exc.value) and what in str(exc.value)


@pytest.mark.parametrize("attr, what", [
    ("ThreeEps", "records ε = 3, δ = 0 spent, beyond the board's budget ε = 1, δ = 0"),
    ("DeltaInEpsDP", "records ε = 1, δ = 0.001 spent, δ > 0 in an ε-DP release"),
    ("EmptyLedger", "records ε = 0, δ = 0 spent, nothing spent (an empty ledger"),
])
@pytest.mark.parametrize("use_gate", [False, True])
def test_a_record_cheat_is_refused_before_it_is_ranked_with_or_without_the_gate(cheats, stored, tmp_path, monkeypatch,
                                                                              capsys, attr, what, use_gate):
    """The cheat behaves on the trial release and cheats on the board's data: its records are refused (exit 1, the
    first record and its spend named, only the summary written). GATE=0 skips the audit, never this check."""
    from dpkit.batch.cli import main

    if use_gate:  # the gate as a stub that passes everything: the check does not rest on the gate
        monkeypatch.setattr(ba, "audit_gate", lambda n, m, *, epsilon, delta: type(
            "Passed", (), {"refuted": False, "epsilon_lb": 0.0, "epsilon": epsilon})())
    name = f"{cheats.__name__}:{attr}"
    out = tmp_path / "out"
    assert main(["board-add", name, "--out", str(out), "--quick"] + ([] if use_gate else ["--no-gate"])) == 1
    text = capsys.readouterr().out
    assert f"{name}: refused, not ranked: entrant {name!r}: record (TOY, σ=2, rep 0) (ε-DP) {what}" in text
    summary = json.loads((out / "board_add.json").read_text())
    assert summary["status"] == "refused" and what in summary["reason"] and "ranks" not in summary
    assert not (out / "records.parquet").exists() and not (out / "ranks.csv").exists()


def test_pair_refuses_a_record_cheat_on_every_path(cheats, stored, tmp_path):
    """The check runs as the entrant's records are made (entrant_records) and again in pair(), which notebook 45's
    ENTRANT branch calls too, on records from anywhere."""
    from dpkit.board.add import pair

    prep = ba.prepare_board_add(f"{cheats.__name__}:ThreeEps", out=tmp_path / "o", quick=True, gate=False)
    with pytest.raises(BudgetViolationError, match=r"record \(TOY, σ=2, rep 0\) \(ε-DP\) records ε = 3"):
        ba.entrant_records(prep.name, prep.method, prep.plan, prep.data)
    honest = ba.prepare_board_add(f"{cheats.__name__}:Honest", out=tmp_path / "h", quick=True, gate=False)
    mine = ba.entrant_records(honest.name, honest.method, honest.plan, honest.data)
    mine.loc[mine["rep"] == 1, "eps_spent"] = 3.0  # records edited after they were made
    with pytest.raises(BudgetViolationError, match=r"record \(TOY, σ=2, rep 1\) \(ε-DP\) records ε = 3"):
        pair(honest.stored, mine, honest.name)


def test_the_gate_audits_the_boards_claim_not_the_entrants(cheats, stored, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(ba, "audit_gate", lambda n, m, *, epsilon, delta: calls.append(
        (epsilon, delta)) or type("Passed", (), {"refuted": False})())
    prep = ba.prepare_board_add(f"{cheats.__name__}:Honest", out=tmp_path / "o", quick=True)
    object.__setattr__(prep.method, "epsilon", 10.0)  # whatever the entrant holds by now
    ba.run_board_add(prep)
    assert calls == [(1.0, 0.0)]  # the board's ε, and δ = 0 for an ε-DP entrant


# ----------------------------------------------------------------------------- 2. the gate audits the release
def test_no_noise_release_is_refuted(cheats):
    res = gate("no-noise", cheats.NoNoise(), n_samples=1000, n_release=1000)
    assert res.refuted and audit_of(res, "release")["refuted"] and audit_of(res, "release")["epsilon_lb"] > 3


def test_measure_noisy_release_clean_is_refuted_by_the_release(cheats):
    res = gate("clean-release", cheats.CleanRelease(), n_samples=1000, n_release=1000)
    assert not audit_of(res, "measure")["refuted"]  # what the old gate audited, alone
    assert res.refuted and audit_of(res, "release")["refuted"] and audit_of(res, "release")["epsilon_lb"] > 3


def test_a_budget_ignorer_is_refuted_at_the_boards_claim(cheats):
    keeper = cheats.EpsKeeper()
    assert keeper.epsilon == 10.0
    res = gate("eps-keeper", keeper, n_samples=1000, n_release=1000)  # epsilon=1: the board's claim
    assert res.refuted and res.epsilon == 1.0 and audit_of(res, "release")["epsilon_lb"] > 2
    # its measure() is given a ledger holding the claim, as the template's release gives it one: it overspends
    assert audit_of(res, "measure")["refuted"] and "spends beyond the claim" in audit_of(res, "measure")["statistic"]


def test_quarter_noise_histogram_marginals_are_refuted_by_the_release(cheats):
    res = gate("marginals-histogram-eps/4", cheats.QuarterNoiseHistogram())
    assert res.refuted, res.as_dict()
    assert audit_of(res, "release")["refuted"], res.audits  # the black box alone refutes it
    assert "occupied" in audit_of(res, "release")["statistic"]  # the marginal at the differing cells, clipped at 0


@pytest.mark.parametrize("entrant", ["Honest", "marginals-histogram-eps"])
def test_positive_control_honest_entrants_pass(cheats, entrant):
    from dpkit.methods.registry import get

    method = getattr(cheats, entrant)() if entrant == "Honest" else get(entrant)
    res = gate(entrant, method)
    assert res.passed and [a["probe"] for a in res.audits] == ["measure", "release"], res.as_dict()
    assert res.audits[0]["confidence"] == res.audits[1]["confidence"] == pytest.approx(0.975)  # Bonferroni
    assert res.audited == "measure and release audited, each at confidence 0.975, Bonferroni for 0.95 jointly"
    assert res.as_dict()["note"] == NOT_A_PROOF


def test_an_entrant_that_takes_its_own_budget_back_at_a_width_is_refused(tmp_path, monkeypatch):
    """at_width(σ) is what the board releases: it must hold the board's budget too."""
    (tmp_path / "width_cheat.py").write_text(textwrap.dedent('''
        import dataclasses
        from dataclasses import dataclass
        from dpkit.methods.direct import DirectAnswering


        @dataclass(frozen=True, kw_only=True)
        class WidthKeeper(DirectAnswering):
            epsilon: float = 1.0
            delta: float = 1e-3

            def at_width(self, sigma):
                return dataclasses.replace(self, epsilon=10.0)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(BudgetViolationError, match=r"entrant 'width_cheat:WidthKeeper at width 2' \(\(ε,δ\)-DP\) holds "
                                                   r"ε = 10, δ = 0.001 after the board set its budget ε = 1"):
        load_entrant("width_cheat:WidthKeeper", epsilon=1.0, delta=1e-3)
    sys.modules.pop("width_cheat", None)
