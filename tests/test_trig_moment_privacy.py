"""Exact sensitivities and the privacy loss of the moment release (dpkit.mechanisms.trig.privacy)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpkit.mechanisms.trig import basis_indices, grid_points, moment_noise, release_moments
from dpkit.mechanisms.trig.privacy import moment_privacy_loss
from dpkit.mechanisms.trig.sensitivity import moment_sensitivity


def _chebyshev(points, idx):
    """φ_r(x) = Π_i cos(r_i arccos x_i), straight from the definition (independent of evaluate_basis)."""
    return np.prod(np.cos(idx[None, :, :] * np.arccos(points[:, None, :])), axis=2)


@pytest.mark.parametrize("t, d, N", [(4, 1, 100), (3, 2, 8)])
def test_moment_sensitivity_matches_brute_force(t, d, N):
    idx = basis_indices(t, d)
    a = grid_points(N)
    pts = np.array(list(itertools.product(a, repeat=d)))
    phi = _chebyshev(pts, idx)[:, 1:]
    diffs = (phi[:, None, :] - phi[None, :, :]).reshape(-1, phi.shape[1])
    n = 500
    s = moment_sensitivity(pts, idx, n)
    assert s.l1 == pytest.approx(np.abs(diffs).sum(axis=1).max() / n, rel=1e-12)
    assert s.l2 == pytest.approx(np.linalg.norm(diffs, axis=1).max() / n, rel=1e-12)
    assert s.worst_l1_shift.sum() == pytest.approx(s.l1, rel=1e-12)
    # never above the bound 2(R − 1)/n of moment_noise (|φ_r| ≤ 1)
    assert s.l1 <= moment_noise(n, idx.shape[0], epsilon=1.0).l1_sensitivity * (1 + 1e-12)


def test_moment_sensitivity_corners_attain_the_bound():
    """Linear moments (t = 2, R = d + 1) on the exact corners: opposite corners move every one by 2/n."""
    d, n = 3, 10
    idx = basis_indices(2, d, d + 1)
    corners = np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    s = moment_sensitivity(corners, idx, n)
    R = idx.shape[0]
    assert s.l1 == pytest.approx(2 * (R - 1) / n)
    assert s.l2 == pytest.approx(2 * np.sqrt(R - 1) / n)
    np.testing.assert_allclose(s.worst_l1_shift, np.full(R - 1, 2 / n))


def test_moment_sensitivity_rejects_non_constant_first_index():
    idx = basis_indices(3, 1)[1:]
    with pytest.raises(ValueError, match="constant index"):
        moment_sensitivity(grid_points(10)[:, None], idx, 10)


@pytest.mark.parametrize("delta", [0.0, 1e-3])
def test_moment_privacy_loss_is_the_log_density_ratio(delta):
    """Compare with ln p0/p1 from scipy's densities (Laplace for δ = 0, Gaussian for the analytic-Gaussian noise)."""
    from scipy import stats

    n, R = 50, 12
    noise = moment_noise(n, R, epsilon=1.0, delta=delta)
    assert noise.kind == ("laplace" if delta == 0 else "gaussian")
    rng = np.random.default_rng(3)
    b0 = np.r_[1.0, rng.uniform(-1, 1, R - 1)]
    b1 = b0 + np.r_[0.0, rng.uniform(-2, 2, R - 1) / n]
    y = release_moments(b0, noise, rng=rng, size=7)
    law = stats.laplace if noise.kind == "laplace" else stats.norm
    want = (law.logpdf(y[:, 1:], loc=b0[1:], scale=noise.scale) - law.logpdf(y[:, 1:], loc=b1[1:], scale=noise.scale)).sum(axis=1)
    np.testing.assert_allclose(moment_privacy_loss(y, b0, b1, noise), want, rtol=1e-9, atol=1e-9)


def test_moment_privacy_loss_refuses_noiseless_release():
    noise = moment_noise(10, 3, epsilon=float("inf"))
    with pytest.raises(ValueError, match="noise.scale"):
        moment_privacy_loss(np.zeros((1, 3)), np.zeros(3), np.zeros(3), noise)
