"""Private subspace iteration (thesis Alg 6/7, Lemma 2.7)."""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.mechanisms.pca import (
    PrivateSubspaceIteration,
    covariance,
    covariance_sensitivity,
    psi_noise_scale,
    subspace_iteration_step,
)


def _data(n=3000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.array([0.5, 0.3, 0.1, 0.05, 0.05, 0.05])[:d]
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    return np.clip((rng.normal(size=(n, d)) * scales) @ Q.T, -1, 1)


def test_noise_free_run_recovers_top_eigenspace():
    X = _data()
    psi = PrivateSubspaceIteration(n_components=2, n_iter=50, epsilon=math.inf).fit(X, rng=0)
    lam, vec = np.linalg.eigh(covariance(X))
    top = vec[:, ::-1][:, :2]
    assert psi.components_.shape == (2, 6)
    np.testing.assert_allclose(psi.components_ @ psi.components_.T, np.eye(2), atol=1e-10)
    # principal angles: singular values of Uᵀ X are cosines
    cos = np.linalg.svd(top.T @ psi.components_.T, compute_uv=False)
    assert cos.min() > 1 - 1e-6
    np.testing.assert_allclose(psi.explained_variance_, lam[::-1][:2], rtol=1e-4)
    assert psi.noise_scale_ == 0.0 and psi.n_features_in_ == 6


def test_noise_scales_are_the_printed_formulas():
    X = _data()
    n, d, k, L = 3000, 6, 2, 10
    rho = covariance_sensitivity(n, d)
    p = 1 / n + (n - 1) ** 2 / n**2
    M = math.sqrt(d)
    assert math.isclose(rho, ((1 / p) * (M + M / n) ** 2 + p * d + 2 * M * M + 2 * d / n) / n)
    assert math.isclose(rho * n / d, 4.0, rel_tol=5e-3)  # ≈ 4d/n for large n
    g = PrivateSubspaceIteration(n_components=k, n_iter=L, epsilon=0.5, delta=1e-3).fit(X, rng=0)
    assert g.noise_ == "gaussian"
    assert math.isclose(g.noise_scale_, rho * math.sqrt(4 * k * L * math.log(1e3)) / 0.5)
    lap = PrivateSubspaceIteration(n_components=k, n_iter=L, epsilon=0.5).fit(X, rng=0)
    assert lap.noise_ == "laplace"
    assert math.isclose(lap.noise_scale_, 10 * rho * math.sqrt(d) * k * L / 0.5)
    assert lap.sensitivity_ == rho


def test_noise_has_shape_d_by_k():
    rng = np.random.default_rng(0)
    A = np.zeros((7, 7))
    Xc = np.linalg.qr(rng.normal(size=(7, 3)))[0]
    W = subspace_iteration_step(A, Xc, 1.0, noise="gaussian", rng=rng)
    assert W.shape == (7, 3) and np.all(W != 0)


def test_thesis_sensitivity_warns_and_uses_mean_norm():
    X = _data()
    mu = np.full(6, 0.1)
    with pytest.warns(PrivacyLeakWarning):
        t = PrivateSubspaceIteration(epsilon=1.0, sensitivity="thesis", mean=mu).fit(X, rng=0)
    assert math.isclose(t.sensitivity_, covariance_sensitivity(3000, 6, float(np.linalg.norm(mu))))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = PrivateSubspaceIteration(epsilon=1.0, mean=mu).fit(X, rng=0)
    assert b.sensitivity_ > t.sensitivity_


def test_ledger_reproducibility_and_sklearn_api():
    X = _data()
    led = Ledger(1.0, 1e-3)
    a = PrivateSubspaceIteration(epsilon=0.4, delta=5e-4).fit(X, rng=5, ledger=led)
    b = PrivateSubspaceIteration(epsilon=0.4, delta=5e-4).fit(X, rng=5)
    np.testing.assert_array_equal(a.components_, b.components_)
    (entry,) = led.entries
    assert entry.name == "pca" and entry.epsilon == 0.4 and entry.delta == 5e-4
    c = clone(a)
    assert c.get_params()["epsilon"] == 0.4 and not hasattr(c, "components_")
    assert a.transform(X).shape == (3000, 2)


def test_lemma_2_7_bound_on_adversarial_pairs():
    # exhaustive for d = 1, n = 3 over a 5-point grid of values, and structured/random pairs for d = 2, 3
    vals = np.linspace(-1, 1, 5)
    worst = 0.0
    for rows in itertools.product(vals, repeat=3):
        D = np.array(rows)[:, None]
        for v in vals:
            D2 = D.copy()
            D2[0, 0] = v
            worst = max(worst, np.linalg.norm(covariance(D) - covariance(D2), 2))
    assert worst <= covariance_sensitivity(3, 1) + 1e-12
    rng = np.random.default_rng(0)
    for d, n in [(2, 10), (3, 50), (3, 400)]:
        c = covariance_sensitivity(n, d)
        corners = np.array(list(itertools.product([-1.0, 1.0], repeat=d)))
        for _ in range(300):
            D = corners[rng.integers(0, len(corners), n)]
            if rng.random() < 0.5:
                D = np.repeat(corners[rng.integers(0, len(corners))][None], n, axis=0)
            D2 = D.copy()
            D2[rng.integers(n)] = corners[rng.integers(0, len(corners))]
            assert np.linalg.norm(covariance(D) - covariance(D2), 2) <= c + 1e-12
        # the bound is nearly tight: all rows at one corner, replace one by the opposite corner
        D = np.ones((n, d))
        D2 = D.copy()
        D2[0] = -1
        assert np.linalg.norm(covariance(D) - covariance(D2), 2) >= 0.8 * 4 * d / n * (1 - 1 / n)


@pytest.mark.parametrize(
    "kw,exc",
    [
        (dict(n_components=7), ValueError),
        (dict(n_components=0), ValueError),
        (dict(n_iter=0), ValueError),
        (dict(epsilon=0.0), ValueError),
        (dict(epsilon=-1.0), ValueError),
        (dict(delta=1.0), ValueError),
        (dict(delta=-0.1), ValueError),
        (dict(sensitivity="local"), ValueError),
        (dict(mean=np.zeros(3)), ValueError),
        (dict(epsilon=100.0, delta=0.1), ValueError),  # beyond the proven range of Alg 6's σ
    ],
)
def test_bad_inputs(kw, exc):
    with pytest.raises(exc):
        PrivateSubspaceIteration(**kw).fit(_data(n=100), rng=0)


def test_bad_data():
    X = _data(n=100)
    with pytest.raises(ValueError, match="finite"):
        PrivateSubspaceIteration().fit(np.where(X == X[0, 0], np.nan, X), rng=0)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        PrivateSubspaceIteration().fit(X * 5, rng=0)
    with pytest.raises(ValueError):
        psi_noise_scale(1.0, d=2, k=1, n_iter=1, epsilon=50.0, delta=0.5)
