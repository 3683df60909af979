"""Entrants from anywhere (dpkit.board.entrants): methods named ``package.module:NAME`` or registered through the
entry-point group ``dpkit.methods``, at the board's budget, checked against the protocol before anything runs."""
from __future__ import annotations

import itertools
import sys
import textwrap

import pytest

from dpkit.board.entrants import ENTRY_POINT_GROUP, EntrantError, entry_point_names, is_entrant_name, load_entrant
from dpkit.board.report import board_methods

SOURCE = textwrap.dedent('''
    import dataclasses
    from dataclasses import dataclass

    import numpy as np

    from dpkit.core.accounting import ledger_for
    from dpkit.methods.direct import DirectAnswering
    from dpkit.queries.release import MethodBase, Release


    @dataclass(frozen=True, kw_only=True)
    class Good(DirectAnswering):
        epsilon: float = 1.0
        delta: float = 1e-3
        noise: str = "gaussian"


    @dataclass(frozen=True, kw_only=True)
    class PureGood(DirectAnswering):
        epsilon: float = 1.0
        delta: float = 0.0


    CONFIGURED = Good(noise="laplace_II", sensitivity="unit")
    NoDefault = DirectAnswering  # epsilon has no default


    class NotADataclass:
        epsilon = 1.0
        delta = 0.0


    @dataclass(frozen=True, kw_only=True)
    class NoRelease:
        epsilon: float = 1.0
        delta: float = 0.0
        name: str = "no-release"


    @dataclass(kw_only=True)
    class NotFrozen:
        epsilon: float = 1.0
        delta: float = 0.0
        name = "not-frozen"
        privacy = "ε-DP"

        def at_width(self, sigma):
            return self

        def release(self, X, *, rng=None, ledger=None, workload=None):
            raise AssertionError("never called")


    @dataclass(frozen=True, kw_only=True)
    class NoEpsilonField(MethodBase):
        size: int = 3

        @property
        def privacy(self):
            return "ε-DP"

        def release(self, X, *, rng=None, ledger=None, workload=None):
            raise AssertionError("never called")


    @dataclass(frozen=True, kw_only=True)
    class BadPrivacy(Good):
        @property
        def privacy(self):
            return "private-ish"


    @dataclass(frozen=True, kw_only=True)
    class NoLedger(Good):
        def release(self, X, *, rng=None, ledger=None, workload=None):
            return dataclasses.replace(super().release(X, rng=rng, ledger=ledger, workload=workload), ledger={})


    @dataclass(frozen=True, kw_only=True)
    class Overspent(Good):
        def release(self, X, *, rng=None, ledger=None, workload=None):
            rel = super().release(X, rng=rng, ledger=ledger, workload=workload)
            return dataclasses.replace(rel, ledger={**rel.ledger, "spent": {"epsilon": 2 * self.epsilon, "delta": 0.0}})


    @dataclass(frozen=True, kw_only=True)
    class Raises(Good):
        def release(self, X, *, rng=None, ledger=None, workload=None):
            raise RuntimeError("boom in release")


    @dataclass(frozen=True, kw_only=True)
    class NotARelease(Good):
        def release(self, X, *, rng=None, ledger=None, workload=None):
            return {"answers": np.zeros(len(workload))}


    @dataclass(frozen=True, kw_only=True)
    class RefusesDefaults(Good):
        def __post_init__(self):
            raise ValueError("noise must be chosen explicitly")
''')

_count = itertools.count()


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A module of entrants in tmp_path, importable under a fresh name; returns that name."""
    name = f"scratch_entrants_{next(_count)}"
    (tmp_path / f"{name}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_is_entrant_name():
    assert is_entrant_name("pkg.mod:NAME") and is_entrant_name("mod:Cls.inner")
    assert not any(is_entrant_name(x) for x in ("trig-II", "mod:", ":X", "a:b:c", 3))


def test_a_class_gets_its_defaults_and_the_boards_budget_by_its_privacy_class(scratch):
    ms = board_methods([f"{scratch}:Good", "trig-II", f"{scratch}:PureGood"], epsilon=0.5, delta=1e-5)
    # the registered methods first (their streams follow their positions), then the entrants in the order given
    assert list(ms) == ["trig-II", f"{scratch}:Good", f"{scratch}:PureGood"]
    good, pure = ms[f"{scratch}:Good"], ms[f"{scratch}:PureGood"]
    assert type(good).__name__ == "Good" and (good.epsilon, good.delta, good.noise) == (0.5, 1e-5, "gaussian")
    assert (pure.epsilon, pure.delta) == (0.5, 0.0)  # an ε-DP class keeps δ = 0


def test_a_configured_instance_keeps_its_parameters_and_gets_the_budget(scratch):
    m = board_methods([f"{scratch}:CONFIGURED"], epsilon=0.25, delta=1e-4)[f"{scratch}:CONFIGURED"]
    assert (m.noise, m.sensitivity, m.epsilon, m.delta) == ("laplace_II", "unit", 0.25, 1e-4)


def _dist(tmp_path, monkeypatch, entry_points: str):
    """A tiny installed distribution (a dist-info folder on sys.path) declaring ``entry_points``."""
    site = tmp_path / "site"
    info = site / "fake_entrants-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-entrants\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    monkeypatch.syspath_prepend(str(site))


def test_an_entry_point_registers_a_name(scratch, tmp_path, monkeypatch):
    _dist(tmp_path, monkeypatch, f"[{ENTRY_POINT_GROUP}]\nmy-good = {scratch}:Good\nmy-configured = {scratch}:CONFIGURED\n")
    assert {"my-good", "my-configured"} <= set(entry_point_names())
    ms = board_methods(["my-configured", "rap", "my-good"], epsilon=1.0, delta=1e-3)
    assert list(ms) == ["rap", "my-configured", "my-good"]
    assert type(ms["my-good"]).__name__ == "Good" and ms["my-configured"].noise == "laplace_II"
    # an unknown plain name is still refused, the entry-point names among the allowed ones
    with pytest.raises(ValueError, match="unknown leaderboard method name") as exc:
        board_methods(["my-godo"], epsilon=1.0, delta=1e-3)
    assert "'my-godo'" in str(exc.value) and "my-good" in str(exc.value)


def test_an_entry_point_that_cannot_load_is_named(tmp_path, monkeypatch):
    _dist(tmp_path, monkeypatch, f"[{ENTRY_POINT_GROUP}]\nbroken = no_such_module_xyz:Thing\n")
    with pytest.raises(EntrantError, match="entrant 'broken': its entry point 'no_such_module_xyz:Thing'"):
        board_methods(["broken"], epsilon=1.0, delta=1e-3)


def test_an_entry_point_shadowing_a_registered_name_is_refused(scratch, tmp_path, monkeypatch):
    _dist(tmp_path, monkeypatch, f"[{ENTRY_POINT_GROUP}]\ntrig-II = {scratch}:Good\nmine = {scratch}:Good\n")
    with pytest.raises(ValueError, match=r"entry point name\(s\) \['trig-II'\].*registered method names"):
        board_methods(["mine"], epsilon=1.0, delta=1e-3)


@pytest.mark.parametrize("attr, message", [
    (None, "module 'no_such_module_xyz' cannot be imported"),
    ("Missing", "has no attribute 'Missing'"),
    ("NotADataclass", "class NotADataclass is not a dataclass"),
    ("NoDefault", "field(s) without a default ['epsilon']"),
    ("RefusesDefaults", "RefusesDefaults() with its defaults failed (ValueError: noise must be chosen explicitly)"),
    ("NoRelease", "lacks a method release(); a method at_width(); a privacy class"),
    ("NotFrozen", "lacks a frozen dataclass"),
    ("NoEpsilonField", "lacks the field 'epsilon'; the field 'delta'"),
    ("BadPrivacy", "a privacy class in ('ε-DP', '(ε,δ)-DP', 'non-private') (got 'private-ish')"),
    ("NoLedger", "(a 40×8 synthetic array, no real data) has no ledger record"),
    ("Overspent", "records ε = 2, δ = 0 spent, beyond the board's budget ε = 1, δ = 0.001"),
    ("Raises", "trial release (a 40×8 synthetic array, no real data) failed: RuntimeError: boom in release"),
    ("NotARelease", "returned a dict, not a dpkit.queries.release.Release"),
])
def test_every_wrong_entrant_is_refused_before_anything_runs_naming_it_and_what_is_missing(scratch, attr, message):
    name = "no_such_module_xyz:Thing" if attr is None else f"{scratch}:{attr}"
    with pytest.raises(EntrantError) as exc:
        board_methods(["trig-II", name], epsilon=1.0, delta=1e-3)
    assert f"entrant {name!r}" in str(exc.value)
    assert message in str(exc.value)


def test_load_entrant_without_the_trial_skips_only_the_release(scratch):
    m = load_entrant(f"{scratch}:NoLedger", epsilon=1.0, delta=1e-3, trial=False)  # no release made
    assert type(m).__name__ == "NoLedger"
    with pytest.raises(EntrantError, match="lacks a method release"):
        load_entrant(f"{scratch}:NoRelease", epsilon=1.0, delta=1e-3, trial=False)


@pytest.mark.parametrize("name", ["trig-I", "trig-II", "rap-eps", "lp-uniform-cands", "direct-gaussian"])
def test_the_boards_own_methods_pass_the_trial_release(name):
    """The trial's synthetic array is large enough for the registered methods (the trigonometric ones need
    t^d >= R moments), so a method like them is not refused as an entrant."""
    from dpkit.board.entrants import trial_release
    from dpkit.methods.registry import get

    rel = trial_release(name, get(name))
    assert rel.spent[0] <= get(name).epsilon
