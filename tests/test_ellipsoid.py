"""Uniform sampling in an ellipsoid (thesis Alg 8) and the printed angle sampler's erratum.

Statistical thresholds: for the correct sampler every test statistic below has an exact
(or asymptotically exact) null distribution, so with the threshold ALPHA = 1e-4 and the ~10
"should pass" p-values in this file a false failure has probability ≲ 1e-3 at a fixed seed
(Bonferroni; deterministic thereafter). (A first version used 1e-3 per test and hit a
p = 3.4e-4 orthant count at seed 1 — numpy's raw ``standard_normal`` stream gives the same
p-value, and over 200 seeds the p-values are uniform, KS p = 0.13: chance, not a bug.) For the
printed sampler the alternatives are far from the null, so at n = 20 000 the p-values are
astronomically small; we require p < 1e-6.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpkit.mechanisms.ellipsoid import sample_ellipsoid

AXES3 = np.array([3.0, 1.0, 0.5])
ALPHA = 1e-4


def _normalised(x, axes):
    y = x / axes
    r = np.linalg.norm(y, axis=1)
    return y / r[:, None], r


def test_uniform_inside_and_radial_cdf():
    x = sample_ellipsoid(20_000, AXES3, rng=0)
    u, r = _normalised(x, AXES3)
    assert np.all(r <= 1 + 1e-12)
    # uniform in the ball ⇔ r^k ~ U[0, 1]
    assert stats.kstest(r**3, "uniform").pvalue > ALPHA


@pytest.mark.parametrize("k", [3, 5])
def test_uniform_direction(k):
    axes = np.linspace(1.0, 2.0, k)
    u, _ = _normalised(sample_ellipsoid(20_000, axes, rng=1), axes)
    # for a uniform direction on S^{k-1}, u_1² ~ Beta(1/2, (k-1)/2) and u_k² likewise
    for j in (0, k - 1):
        assert stats.kstest(u[:, j] ** 2, stats.beta(0.5, (k - 1) / 2).cdf).pvalue > ALPHA
    # all 2^k orthants equally likely (chi-square)
    orth = (u > 0).astype(int) @ (1 << np.arange(k))
    counts = np.bincount(orth, minlength=2**k)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_thesis_sampler_radius_right_but_direction_not_uniform():
    x = sample_ellipsoid(20_000, AXES3, rng=2, method="thesis")
    u, r = _normalised(x, AXES3)
    assert np.all(r <= 1 + 1e-12)
    # its radius Beta(k, 1) *is* the right law ...
    assert stats.kstest(r**3, "uniform").pvalue > ALPHA
    # ... but uniform angles put u_1 = cos φ_1 on the arcsine law, not Beta(1/2, 1)
    assert stats.kstest(u[:, 0] ** 2, stats.beta(0.5, 1.0).cdf).pvalue < 1e-6
    assert stats.kstest(u[:, 2] ** 2, stats.beta(0.5, 1.0).cdf).pvalue < 1e-6


def test_thesis_sampler_is_uniform_for_k2():
    # documented: with k = 2 the single polar angle is uniform on [0, 2π), so the printed sampler is exact
    axes = np.array([2.0, 1.0])
    u, r = _normalised(sample_ellipsoid(20_000, axes, rng=3, method="thesis"), axes)
    ang = np.mod(np.arctan2(u[:, 1], u[:, 0]), 2 * np.pi) / (2 * np.pi)
    assert stats.kstest(ang, "uniform").pvalue > ALPHA
    assert stats.kstest(r**2, "uniform").pvalue > ALPHA


def test_reproducible_and_shapes():
    a = sample_ellipsoid(100, AXES3, rng=7)
    np.testing.assert_array_equal(a, sample_ellipsoid(100, AXES3, rng=7))
    assert a.shape == (100, 3)
    assert sample_ellipsoid(0, AXES3, rng=0).shape == (0, 3)
    assert sample_ellipsoid(10, [1.0], rng=0, method="thesis").shape == (10, 1)


@pytest.mark.parametrize(
    "args,kw,exc",
    [
        ((-1, AXES3), {}, ValueError),
        ((10, [-1.0, 1.0]), {}, ValueError),
        ((10, [np.nan, 1.0]), {}, ValueError),
        ((10, []), {}, ValueError),
        ((10, AXES3), {"method": "polar"}, ValueError),
        ((1.5, AXES3), {}, TypeError),
    ],
)
def test_bad_inputs(args, kw, exc):
    with pytest.raises(exc):
        sample_ellipsoid(*args, rng=0, **kw)
