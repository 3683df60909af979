"""Exact derivatives of Gaussian-kernel mixtures and Prop 2.2."""
import math

import numpy as np
import pytest

from dpkit.queries.smoothness import (
    hermite_sup,
    kernel_derivative_1d,
    mixture_derivative,
    mixture_derivatives,
    multi_indices,
    prop22_bound,
    smoothness_norm,
)


def test_multi_indices_count():
    # |{k ∈ ℕ^d : |k| ≤ K}| = C(K + d, d)
    assert len(list(multi_indices(2, 4))) == math.comb(6, 2)
    assert len(list(multi_indices(3, 2, exact=True))) == math.comb(4, 2)


@pytest.mark.parametrize("k", [(1, 0), (0, 2), (1, 1), (2, 1)])
def test_mixed_derivatives_match_finite_differences(k):
    rng = np.random.default_rng(0)
    C, w = rng.uniform(-1, 1, (4, 2)), rng.dirichlet(np.ones(4))
    x = np.array([[0.2, -0.4]])
    h = 1e-3

    def D(order, p):
        return mixture_derivative(p, C, w, 0.8, order)

    # one central difference of the (k − e_i)-th derivative in coordinate i: error O(h²) ~ 1e-6
    i = 0 if k[0] > 0 else 1
    lower = tuple(v - (j == i) for j, v in enumerate(k))
    e = np.zeros(2)
    e[i] = h
    fd = (D(lower, x + e) - D(lower, x - e)) / (2 * h)
    assert np.allclose(fd, D(k, x), rtol=1e-5, atol=1e-6)


def test_all_derivatives_agree_with_single_evaluations():
    rng = np.random.default_rng(1)
    C, w, X = rng.uniform(-1, 1, (3, 2)), rng.dirichlet(np.ones(3)), rng.uniform(-1, 1, (5, 2))
    allk = mixture_derivatives(X, C, w, 1.3, 4)
    for k, v in allk.items():
        assert np.allclose(v, mixture_derivative(X, C, w, 1.3, k))
    assert np.allclose(kernel_derivative_1d(X[:, 0], 0.1, 1.3, 3), mixture_derivative(X[:, :1], [[0.1]], [1.0], 1.3, (3,)))


@pytest.mark.parametrize("sigma", [1.0, 2.0, 3.0])
def test_prop22_holds_for_K_le_sigma2_and_fails_far_beyond(sigma):
    K = int(sigma**2)
    rng = np.random.default_rng(2)
    C, w = rng.uniform(-1, 1, (10, 2)), rng.dirichlet(np.ones(10))
    norm, _, _ = smoothness_norm(C, w, sigma, K, per_dim=21)
    assert norm <= 1.0 and prop22_bound(sigma, K) <= 1.0 + 1e-12
    # beyond: one kernel, order 3σ² along one axis exceeds 1 (exact sup of He_k e^{-u²/2})
    Kb = int(math.ceil(3 * sigma**2))
    assert hermite_sup(Kb) / sigma**Kb > 1.0
    nb, _, _ = smoothness_norm(np.zeros((1, 2)), [1.0], sigma, Kb, per_dim=5)
    assert nb > 1.0
