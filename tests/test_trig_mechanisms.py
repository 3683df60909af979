"""Trigonometric mechanisms (thesis Alg 4/5/9/10): records, budget, accuracy, reproducibility, inputs."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import BudgetExceededError, FeasibilityError
from dpkit.mechanisms.trig import (
    ImprovedTrigonometricMechanism,
    TrigonometricMechanism,
    WeightedDatabase,
    basis_moments,
    discretise,
    evaluate_basis,
    moment_noise,
)
from dpkit.queries.release import Release


def _data(n=1500, d=5, seed=1):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 2)) * [0.3, 0.15]
    B = np.linalg.qr(rng.normal(size=(d, 2)))[0]
    return np.clip(0.1 + Z @ B.T, -1, 1)


FAST = dict(K=4.0, R=12, C=1500, kappa=3.0)
STAGES = {"discretise", "moments", "mean", "pca", "candidates", "lp", "sample", "total"}


@pytest.mark.parametrize("delta", [0.0, 1e-3])
def test_improved_result_record(delta):
    X = _data()
    res = ImprovedTrigonometricMechanism(epsilon=1.0, delta=delta, accounting="split", **FAST).release(X, rng=0)
    assert isinstance(res, Release) and isinstance(res.synthetic, WeightedDatabase)
    p = res.params
    for key in ("t", "N", "m", "L", "R", "C", "k", "n_iter", "kappa", "K", "epsilon", "delta", "constants",
                "noise_scales", "sensitivities"):
        assert key in p
    assert set(p["noise_scales"]) >= {"moments", "mean", "pca"}
    assert set(res.timings) == STAGES and all(v >= 0 for v in res.timings.values())
    assert set(res.diagnostics.lp) >= {"status", "message", "objective", "support_size", "n_vars", "n_constraints"}
    assert res.diagnostics.lp["status"] == 0
    assert res.diagnostics.lp["support_size"] <= p["R"] + 1  # LP vertex
    assert res.diagnostics.lp["n_vars"] == p["n_candidates_distinct"] + 2 * p["R"]
    # the synthetic DB is the realised sample of m rows: counts sum to m, support ⊂ LP support
    assert res.synthetic.m == p["m"] and int(res.synthetic.counts.sum()) == p["m"]
    assert res.synthetic.support_size <= res.diagnostics.lp_database.support_size
    # budget (the thesis's split): ε/3 three times; δ/2 to the moments and δ/2 to the PCA
    led = res.ledger
    names = [e["name"] for e in led["entries"]]
    assert names == ["moments", "mean", "pca"]
    assert all(math.isclose(e["epsilon"], 1 / 3) for e in led["entries"])
    assert [e["delta"] for e in led["entries"]] == [delta / 2, 0.0, delta / 2]
    assert math.isclose(led["spent"]["epsilon"], 1.0) and math.isclose(led["spent"]["delta"], delta)
    # moment noise: constant moment untouched, scale as documented
    assert res.diagnostics.noisy_moments[0] == res.diagnostics.true_moments[0] == 1.0
    n, R = X.shape[0], p["R"]
    if delta == 0:
        assert math.isclose(p["noise_scales"]["moments"], 6 * (R - 1) / (n * 1.0))
    else:
        assert p["noise_scales"]["moments"] == moment_noise(n, R, epsilon=1 / 3, delta=delta / 2).scale
    assert math.isclose(p["noise_scales"]["mean"], 6 * X.shape[1] / (n * 1.0))
    rec = json.loads(json.dumps(res.to_dict()))
    assert "true_moments" not in json.dumps(rec) and rec["diagnostics"]["lp"]["status"] == 0


def test_thesis_constants_reproduce_printed_scales():
    X = _data()
    n, d = X.shape
    r1 = ImprovedTrigonometricMechanism(epsilon=1.0, constants="thesis", **FAST).release(X, rng=0)
    assert math.isclose(r1.params["noise_scales"]["moments"], 3 * 12 / (n * 1.0))  # Alg 9: 3R/(nε)
    r2 = ImprovedTrigonometricMechanism(epsilon=1.0, delta=1e-3, constants="thesis", accounting="split", **FAST).release(X, rng=0)
    assert math.isclose(r2.params["noise_scales"]["moments"], 3 * math.sqrt(2 * 12 * math.log(1e3)) / n)  # Alg 10
    assert r2.params["noise_scales"]["moments_kind"] == "laplace"
    assert math.isclose(r2.params["noise_scales"]["mean"], 6 * d / n)
    Y = _data(n=2000, d=2)
    f1 = TrigonometricMechanism(epsilon=1.0, K=2.0, constants="thesis").release(Y, rng=0)
    td = f1.params["t"] ** 2
    assert math.isclose(f1.params["noise_scales"]["moments"], td / 2000)  # Alg 4: t^d/(nε)
    f2 = TrigonometricMechanism(epsilon=1.0, delta=1e-3, K=2.0, constants="thesis").release(Y, rng=0)
    td2 = f2.params["t"] ** 2
    assert math.isclose(f2.params["noise_scales"]["moments"], math.sqrt(2 * td2 * math.log(1e3)) / 2000)  # Alg 5
    c1 = TrigonometricMechanism(epsilon=1.0, K=2.0).release(Y, rng=0)
    assert math.isclose(c1.params["noise_scales"]["moments"], 2 * (td - 1) / 2000)
    assert [e["name"] for e in f2.ledger["entries"]] == ["moments"]


@pytest.mark.parametrize("cls,kw", [(ImprovedTrigonometricMechanism, FAST), (TrigonometricMechanism, dict(K=2.0))])
@pytest.mark.parametrize("delta", [0.0, 1e-3])
def test_reproducible_by_seed(cls, kw, delta):
    X = _data(d=2 if cls is TrigonometricMechanism else 5)
    m = cls(epsilon=1.0, delta=delta, **kw)
    a, b, c = m.release(X, rng=11), m.release(X, rng=11), m.release(X, rng=12)
    np.testing.assert_array_equal(a.diagnostics.noisy_moments, b.diagnostics.noisy_moments)
    np.testing.assert_array_equal(a.synthetic.points, b.synthetic.points)
    np.testing.assert_array_equal(a.synthetic.counts, b.synthetic.counts)
    assert not np.array_equal(a.diagnostics.noisy_moments, c.diagnostics.noisy_moments)


def _synthetic_moments(res):
    db = res.diagnostics.lp_database
    return db.weights @ evaluate_basis(db.points, res.diagnostics.basis)


def test_accuracy_improves_as_epsilon_grows_improved():
    # ε → ∞: the LP matches the discretised data's moments (the candidates cover the data here)
    X = _data()
    errs = []
    for eps in (1.0, 100.0, 1e6, math.inf):
        res = ImprovedTrigonometricMechanism(epsilon=eps, output="weights", **FAST).release(X, rng=0)
        errs.append(np.abs(_synthetic_moments(res) - res.diagnostics.true_moments).sum())
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 1e-3 and errs[3] < 1e-9


def test_accuracy_full_grid_and_smooth_query():
    X = _data(n=3000, d=2, seed=4)
    mech = TrigonometricMechanism(epsilon=math.inf, K=2.0, output="weights")
    res = mech.release(X, rng=0)
    assert res.diagnostics.lp["objective"] < 1e-9
    np.testing.assert_allclose(_synthetic_moments(res), res.diagnostics.true_moments, atol=1e-8)
    # a Gaussian-kernel query (σ = 1): f(x) = g(x1) g(x2), g(x) = exp(−(x − 0.2)²/2), has Chebyshev
    # coefficients a_i a_j; with all moments r ∈ T_t^2 matched exactly, |q(D̂) − q(D')| ≤
    # 2 Σ_{(i,j) ∉ T_t^2} |a_i a_j| = 2[(Σ|a|)² − (Σ_{i<t}|a_i|)²] (|T_r| ≤ 1 on both sides).
    N, t = res.params["N"], res.params["t"]
    g = lambda x: np.exp(-((x - 0.2) ** 2) / 2)  # noqa: E731
    a = np.abs(np.polynomial.chebyshev.chebinterpolate(g, 40))
    bound = 2 * (a.sum() ** 2 - a[:t].sum() ** 2)
    f = lambda Z: g(Z[:, 0]) * g(Z[:, 1])  # noqa: E731
    q_data = f(discretise(X, N)).mean()
    q_syn = res.synthetic.answer(f(res.synthetic.points))
    assert abs(q_syn - q_data) <= bound + 1e-9
    noisy = TrigonometricMechanism(epsilon=0.05, K=2.0, output="weights").release(X, rng=0)
    assert noisy.diagnostics.lp["objective"] > 10 * res.diagnostics.lp["objective"]


def test_user_ledger_is_charged_and_overspending_refused():
    X = _data()
    led = Ledger(2.0, 1e-3)
    ImprovedTrigonometricMechanism(epsilon=1.0, delta=1e-3, **FAST).release(X, rng=0, ledger=led)
    assert math.isclose(led.total()[0], 1.0) and len(led) == 1  # accounting="pld": one spend of the composition
    ImprovedTrigonometricMechanism(epsilon=0.5, delta=0.0, **FAST).release(X, rng=0, ledger=led)  # mechanism I: 3
    assert math.isclose(led.total()[0], 1.5) and len(led) == 4
    with pytest.raises(BudgetExceededError):
        ImprovedTrigonometricMechanism(epsilon=1.0, delta=1e-3, **FAST).release(X, rng=0, ledger=led)
    assert len(led) == 4  # nothing was spent by the refused run


def test_invalid_pca_range_spends_nothing():
    led = Ledger(200.0, 1e-3)
    with pytest.raises(ValueError, match="PSI"):
        ImprovedTrigonometricMechanism(epsilon=150.0, delta=1e-3, **FAST).release(_data(), rng=0, ledger=led)
    assert len(led) == 0


def test_full_grid_feasibility_error_names_sizes():
    X = _data(n=5000, d=6)
    with pytest.raises(FeasibilityError, match=r"N\^d = .* t\^d = "):
        TrigonometricMechanism(epsilon=1.0, K=8.0).release(X, rng=0)


def test_true_moments_are_discretised_data_moments():
    X = _data()
    res = ImprovedTrigonometricMechanism(epsilon=1.0, **FAST).release(X, rng=0)
    np.testing.assert_allclose(res.diagnostics.true_moments, basis_moments(discretise(X, res.params["N"]), res.diagnostics.basis))


def test_variants_run():
    X = _data()
    for kw in (dict(sampler="thesis"), dict(lattice=True), dict(lp_method="highs-ipm"), dict(k=1, n_iter=3)):
        res = ImprovedTrigonometricMechanism(epsilon=1.0, **{**FAST, **kw}).release(X, rng=0)
        assert res.diagnostics.lp["status"] == 0
    with pytest.warns(Warning):
        ImprovedTrigonometricMechanism(epsilon=1.0, pca_sensitivity="thesis", **FAST).release(X, rng=0)


# ----------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "kw,exc,match",
    [
        (dict(epsilon=0.0), ValueError, "epsilon"),
        (dict(epsilon=-1.0), ValueError, "epsilon"),
        (dict(epsilon=1.0, delta=1.0), ValueError, "delta"),
        (dict(epsilon=1.0, delta=-0.1), ValueError, "delta"),
        (dict(epsilon=1.0, C=0), ValueError, "C must"),
        (dict(epsilon=1.0, R=0), ValueError, "R must"),
        (dict(epsilon=1.0, k=0), ValueError, "k must"),
        (dict(epsilon=1.0, K=0.0), ValueError, "K must"),
        (dict(epsilon=1.0, kappa=0.0), ValueError, "kappa"),
        (dict(epsilon=1.0, constants="printed"), ValueError, "constants"),
        (dict(epsilon=1.0, sampler="polar"), ValueError, "sampler"),
        (dict(epsilon=1.0, pca_sensitivity="x"), ValueError, "pca_sensitivity"),
        (dict(epsilon=1.0, C=2.5), TypeError, "C must"),
    ],
)
def test_bad_parameters(kw, exc, match):
    with pytest.raises(exc, match=match):
        ImprovedTrigonometricMechanism(**kw)


def test_bad_data_and_data_dependent_limits():
    X = _data(n=300, d=3)
    mech = ImprovedTrigonometricMechanism(epsilon=1.0, K=4.0, R=5, C=100)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        mech.release(bad, rng=0)
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="finite"):
        mech.release(bad, rng=0)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        mech.release(X * 3, rng=0)
    with pytest.raises(ValueError, match=r"R must be in \[1, t\^d\]"):
        ImprovedTrigonometricMechanism(epsilon=1.0, K=4.0, R=9, C=100).release(X, rng=0)  # t = 2: t^d = 8
    with pytest.raises(ValueError, match=r"k must be in \[1, d\]"):
        ImprovedTrigonometricMechanism(epsilon=1.0, K=4.0, R=5, C=100, k=4).release(X, rng=0)
    with pytest.raises(ValueError):
        mech.release(X[:, :1].ravel(), rng=0)
    with pytest.raises(ValueError, match="epsilon"):
        TrigonometricMechanism(epsilon=0.0)
    with pytest.raises(ValueError, match="delta"):
        TrigonometricMechanism(epsilon=1.0, delta=1.5)
