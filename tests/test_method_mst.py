"""MST on a public grid (dpkit.methods.mst) and its shared pieces (dpkit.methods._discrete).

The zCDP → (ε, δ) conversion is checked against Steinke's reference ``cdp2adp.py`` (values below
printed by it, github.com/IBM/discrete-gaussian-differential-privacy), against the looser
Bun–Steinke bound and against the exact δ of the Gaussian mechanism (which is exactly ρ-zCDP, so the
conversion must not claim less). Ledgers add up exactly to the stated budget; seeds reproduce the
release bit for bit; ε = ∞ recovers the data's marginals; audits of the released statistics on
worst-case replace-one neighbours do not refute the claimed ε, and an under-noised variant is flagged.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("mbi")

from neighbour_pairs import corners

from dpkit.core.accounting import Ledger  # noqa: E402
from dpkit.core.exceptions import BudgetExceededError  # noqa: E402
from dpkit.core.zcdp import cdp_delta, cdp_rho  # noqa: E402
from dpkit.evaluation.audit import audit  # noqa: E402
from dpkit.methods import mst as mst_module  # noqa: E402
from dpkit.methods._discrete import grid_codes, project_simplex, uniform_in_cells  # noqa: E402
from dpkit.methods.mst import MST, default_bins, noise_plan  # noqa: E402

EPS, DELTA = 1.0, 1e-3
FAST = {"m": 400, "iters": 100}


@pytest.fixture(scope="module")
def data():
    g = np.random.default_rng(7)
    z = g.standard_normal((400, 1))
    return np.clip(0.5 * z + 0.25 * g.standard_normal((400, 3)), -1, 1)


# ----------------------------------------------------------------------------- grid and helpers
def test_grid_and_uniform_cells_are_inverse():
    g = np.random.default_rng(0)
    X = g.uniform(-1, 1, (500, 3))
    X[0] = [-1.0, 1.0, 0.0]
    codes = grid_codes(X, 5)
    assert codes.min() == 0 and codes.max() == 4 and codes[0].tolist() == [0, 4, 2]
    pts = uniform_in_cells(codes, 5, g)
    assert np.array_equal(grid_codes(pts, 5), codes)


def test_project_simplex():
    P = project_simplex(np.array([[0.5, 0.7, -0.2], [0.2, 0.3, 0.5]]))
    assert np.allclose(P.sum(axis=1), 1.0) and P.min() >= 0
    assert np.allclose(P[0], [0.4, 0.6, 0.0]) and np.allclose(P[1], [0.2, 0.3, 0.5])


# ----------------------------------------------------------------------------- accounting
def test_ledger_zcdp_one_spend_of_the_total(data):
    rel = MST(epsilon=EPS, delta=DELTA, bins=3, accounting="zcdp", **FAST).release(data, rng=1)
    (entry,) = rel.ledger["entries"]
    assert (entry["epsilon"], entry["delta"]) == (EPS, DELTA) and rel.spent == (EPS, DELTA)
    meta = entry["meta"]
    assert entry["neighbouring"] == "replace-one"
    assert meta["rho1"] + meta["rho2"] + meta["rho3"] == pytest.approx(meta["rho"], rel=1e-12)
    assert meta["rho"] == cdp_rho(EPS, DELTA) and cdp_delta(meta["rho"], EPS) <= DELTA
    d = data.shape[1]
    # per-step ρ: d one-way marginals (L2² = 2 each), d − 1 exponential rounds ε_t²/8, d − 1 two-way marginals
    assert d / meta["std1"] ** 2 == pytest.approx(meta["rho1"], rel=1e-12)
    assert (d - 1) * meta["eps_round"] ** 2 / 8 == pytest.approx(meta["rho2"], rel=1e-12)
    assert (d - 1) / meta["std3"] ** 2 == pytest.approx(meta["rho3"], rel=1e-12)
    assert rel.params["rho"] == meta["rho"] and rel.privacy == "(ε,δ)-DP"


def test_ledger_pure_one_spend_per_step(data):
    rel = MST(epsilon=EPS, delta=0.0, bins=3, **FAST).release(data, rng=1)
    names = [e["name"] for e in rel.ledger["entries"]]
    d = data.shape[1]
    assert names == ["mst one-way"] + [f"mst select {t}" for t in range(1, d)] + ["mst two-way"]
    assert math.fsum(e["epsilon"] for e in rel.ledger["entries"]) == pytest.approx(EPS, abs=1e-12)
    assert all(e["delta"] == 0.0 for e in rel.ledger["entries"]) and rel.privacy == "ε-DP"


def test_budget_refused_before_any_spend(data):
    led = Ledger(0.5, DELTA)
    with pytest.raises(BudgetExceededError):
        MST(epsilon=EPS, delta=DELTA, **FAST).release(data, rng=0, ledger=led)
    assert len(led) == 0


# ----------------------------------------------------------------------------- reproducibility and limits
@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_same_seed_same_release(data, delta):
    m = MST(epsilon=EPS, delta=delta, bins=3, **FAST)
    a, b = m.release(data, rng=5), m.release(data, rng=5)
    assert np.array_equal(a.synthetic.points, b.synthetic.points)
    assert not np.array_equal(a.synthetic.points, m.release(data, rng=6).synthetic.points)
    assert np.all(np.abs(a.synthetic.points) <= 1.0)


def test_infinite_epsilon_recovers_a_tree_distribution():
    # d = 2: the tree is the one pair, so the model is the data's exact 2-way histogram on the grid
    g = np.random.default_rng(3)
    x = g.uniform(-1, 1, 2000)
    X = np.stack([x, np.clip(x + 0.2 * g.standard_normal(2000), -1, 1)], axis=1)
    m, bins = 20_000, 3
    rel = MST(epsilon=math.inf, bins=bins, m=m, iters=3000).release(X, rng=0)
    st = rel.diagnostics
    codes = grid_codes(X, bins)
    want = np.bincount(codes[:, 0] * bins + codes[:, 1], minlength=bins * bins) / len(X)
    assert np.array_equal(st.twoway[0].ravel(), want * len(X))  # noise-free measurement
    got_codes = grid_codes(rel.synthetic.points, bins)
    got = np.bincount(got_codes[:, 0] * bins + got_codes[:, 1], minlength=bins * bins) / m
    # multinomial sampling: 5 standard errors per cell, plus 0.005 for the estimation's float32 / convergence
    assert np.all(np.abs(got - want) <= 5 * np.sqrt(want * (1 - want) / m) + 0.005), (got, want)


def test_infinite_epsilon_selects_the_maximum_spanning_tree():
    g = np.random.default_rng(4)
    a = g.uniform(-1, 1, 3000)
    X = np.stack([a, -a, g.uniform(-1, 1, 3000), np.clip(a + 0.01 * g.standard_normal(3000), -1, 1)], axis=1)
    st = MST(epsilon=math.inf, bins=4).measure(X, rng=0)
    assert set(map(frozenset, st.edges[:2])) <= {frozenset(e) for e in [(0, 1), (0, 3), (1, 3)]}


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("kw,match", [({"bins": 1}, "bins"), ({"m": 0}, "m"), ({"iters": 0}, "iters"),
                                      ({"estimator": "jax"}, "estimator"), ({"split": (1.0, 1.0)}, "split"),
                                      ({"split": (1.0, -1.0, 1.0)}, r"split\[1\]"),
                                      ({"epsilon": -1.0}, "epsilon"), ({"delta": 1.5}, "delta")])
def test_bad_parameters_are_named(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        MST(**{"epsilon": EPS, **kw})


def test_one_attribute_is_refused():
    with pytest.raises(ValueError, match="d >= 2"):
        MST(epsilon=EPS).measure(np.zeros((5, 1)))


def test_default_grid_is_public():
    assert default_bins(100_000, 0.0) == 32 and default_bins(100_000, 20.0) == 32
    assert default_bins(50, 50.0) == 2 and default_bins(5875, 30.0) == 14 and default_bins(569, 38.0) == 4
    # the grid depends on n, d and the budget only: the same for any data of that shape
    X0, X1 = np.zeros((300, 4)), np.random.default_rng(0).uniform(-1, 1, (300, 4))
    m = MST(epsilon=EPS, delta=DELTA)
    assert m.measure(X0, rng=0).bins == m.measure(X1, rng=0).bins == m.grid(300, 4)


# ----------------------------------------------------------------------------- audits
N_SAMPLES = 4000
SPLIT_ONEWAY = (1.0, 0.01, 0.01)  # concentrate the budget in the audited step: a stronger test


def oneway_stat(m):
    def stat(db, rng):
        y = m.measure(db, rng=rng).oneway
        return float(np.sum(y[:, 0] - y[:, -1]))  # the direction in which the row moved, all attributes
    return stat


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_audit_oneway_not_refuted(delta):
    m = MST(epsilon=EPS, delta=delta, bins=2, split=SPLIT_ONEWAY)
    res = audit(oneway_stat(m), *corners(), n_samples=N_SAMPLES, delta=delta, rng=0)
    assert not res.flags(EPS), res.to_dict()


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_negative_control_undernoised_is_flagged(monkeypatch, delta):
    real = mst_module.noise_plan

    def quarter(*a):
        return {k: (v / 4 if k.startswith("std") else v) for k, v in real(*a).items()}

    monkeypatch.setattr(mst_module, "noise_plan", quarter)
    m = MST(epsilon=EPS, delta=delta, bins=2, split=SPLIT_ONEWAY)
    res = audit(oneway_stat(m), *corners(), n_samples=N_SAMPLES, delta=delta, rng=0)
    assert res.flags(EPS), res.to_dict()


@pytest.mark.slow
def test_audit_selection_not_refuted():
    # d = 3: three candidate pairs; the moved row changes the pairs' L1 scores; statistic: first edge chosen
    m = MST(epsilon=EPS, delta=0.0, bins=2, split=(0.01, 1.0, 0.01))
    d0, d1 = corners(n=4, d=3)
    d1[0] = [1.0, -1.0, 1.0]
    pairs = [(0, 1), (0, 2), (1, 2)]
    res = audit(lambda db, rng: pairs.index(m.measure(db, rng=rng).edges[0]), d0, d1, n_samples=N_SAMPLES, rng=0)
    assert not res.flags(EPS), res.to_dict()


def test_noise_plan_pure_splits_exactly():
    p = noise_plan(EPS, 0.0, 5, (1.0, 1.0, 2.0))
    assert p["eps1"] + p["eps2"] + p["eps3"] == pytest.approx(EPS, abs=1e-15)
    assert p["laplace1"] == 2 * 5 / p["eps1"] and p["eps_round"] == p["eps2"] / 4


def test_registered_in_both_privacy_classes():
    from dpkit.methods.registry import get, names

    assert {"mst", "mst-eps"} <= set(names("leaderboard"))
    assert get("mst").privacy == "(ε,δ)-DP" and get("mst-eps").privacy == "ε-DP"
    assert (get("mst").epsilon, get("mst").delta, get("mst-eps").delta) == (EPS, DELTA, 0.0)


# ----------------------------------------------------------------------------- mbi attribute names
def test_integer_attribute_names_keep_the_string_order():
    from dpkit.methods._discrete import attr_names

    names = attr_names(12)
    assert sorted(range(12), key=names.__getitem__) == sorted(range(12), key=lambda i: f"x{i}")
    assert names[:4] == [0, 1, 4, 5] and sorted(names) == list(range(12))


@pytest.mark.slow
def test_integer_names_give_the_string_names_estimate(monkeypatch):
    # the same model bit for bit as with the former names x0, …, x10 (d = 11: "x10" sorts before "x2")
    from dpkit.methods import _discrete

    g = np.random.default_rng(1)
    d = 11
    pairs = [(i, i + 1) for i in range(0, d - 1, 3)] + [(10, 2)]
    meas = [((i,), g.uniform(20, 80, 2), 3.0) for i in range(d)] + [(p, g.uniform(5, 40, 4), 3.0) for p in pairs]

    def tables(model):
        idx = {a: i for i, a in enumerate(model.domain.attributes)}
        return {tuple(idx[a] for a in f.domain.attributes): np.asarray(f.values) for f in model.marginals.tables.values()}

    new = tables(_discrete.fit_model(meas, d=d, bins=2, n=100, iters=50))
    monkeypatch.setattr(_discrete, "attr_names", lambda d: [f"x{i}" for i in range(d)])
    old = tables(_discrete.fit_model(meas, d=d, bins=2, n=100, iters=50))
    assert new.keys() == old.keys() and all(np.array_equal(new[k], old[k]) for k in new)


@pytest.mark.parametrize("value", ["off", "0", "none", ""])
def test_cache_dir_off_turns_the_jax_cache_off(monkeypatch, value):
    from dpkit.methods._discrete import jax_cache_dir

    monkeypatch.setenv("DPKIT_CACHE_DIR", value)
    monkeypatch.delenv("DPKIT_JAX_CACHE", raising=False)
    assert jax_cache_dir() is None  # never a directory named "off" in the working directory


def test_jax_cache_under_the_dpkit_cache_root(monkeypatch, tmp_path):
    from dpkit.methods._discrete import jax_cache_dir

    monkeypatch.setenv("DPKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DPKIT_JAX_CACHE", raising=False)
    assert jax_cache_dir() == str(tmp_path / "jax")
    monkeypatch.setenv("DPKIT_JAX_CACHE", "0")
    assert jax_cache_dir() is None


def test_dropping_compiled_programs_keeps_the_release_bit_for_bit_and_bounds_memory(data, monkeypatch):
    """Past MAX_STRUCTURES_IN_MEMORY new structures the in-memory programs are dropped (CRM grew by 170 MB per
    release); the release is the same to the bit whether its program was kept, dropped or reloaded."""
    import dpkit.methods._discrete as disc

    m = MST(epsilon=EPS, delta=DELTA, bins=3, **FAST, estimator="mbi")
    ref = m.release(data, rng=11).synthetic.points
    cleared = []
    monkeypatch.setattr(disc, "MAX_STRUCTURES_IN_MEMORY", 0)  # drop after every fit
    import jax

    monkeypatch.setattr(jax, "clear_caches", lambda f=jax.clear_caches: (cleared.append(1), f())[1])
    again = m.release(data, rng=11).synthetic.points
    assert cleared and np.array_equal(ref, again)
    assert np.array_equal(again, m.release(data, rng=11).synthetic.points)  # after the drop
    assert len(disc._structures) == 0


def test_compiled_estimator_is_the_same_bits_after_its_programs_are_dropped(data):
    """The default estimator's program, dropped from memory and compiled again (or loaded from disk), gives the
    same release to the bit; ``mbi``'s estimator gives a different one (the summation order), both recorded."""
    import jax

    m = MST(epsilon=EPS, delta=DELTA, bins=3, **FAST)
    first = m.release(data, rng=11)
    jax.clear_caches()
    again = m.release(data, rng=11)
    assert np.array_equal(first.synthetic.points, again.synthetic.points)
    other = MST(epsilon=EPS, delta=DELTA, bins=3, **FAST, estimator="mbi").release(data, rng=11)
    assert first.params["estimator"] == "compiled" and other.params["estimator"] == "mbi"
    assert np.array_equal(first.diagnostics.oneway, other.diagnostics.oneway)  # the same measurements
