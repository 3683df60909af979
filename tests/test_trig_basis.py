"""Basis T_R, grid A, lattice and schedules (thesis Ch. 2, Alg 4 steps 1-5, Alg 9 step 2)."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

from dpkit.core.exceptions import FeasibilityError
from dpkit.mechanisms.trig import (
    basis_indices,
    basis_moments,
    discretise,
    discretise_indices,
    evaluate_basis,
    grid_points,
    lattice_round,
    schedule,
    schedule_I,
    schedule_II,
)


def test_tie_order_t2_matches_thesis_example():
    idx = basis_indices(2, 3)
    expected = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1), (1, 1, 1)]
    assert [tuple(r) for r in idx] == expected


def test_tie_order_t3_degree_two():
    idx = basis_indices(3, 2)
    assert [tuple(r) for r in idx] == [(0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2), (2, 1), (1, 2), (2, 2)]


@pytest.mark.parametrize("t,d", [(2, 4), (3, 3), (4, 2), (5, 1)])
def test_full_basis_is_all_of_T_t_d_in_ascending_degree(t, d):
    idx = basis_indices(t, d)
    assert idx.shape == (t**d, d)
    assert len({tuple(r) for r in idx}) == t**d
    assert idx.min() >= 0 and idx.max() <= t - 1
    deg = idx.sum(axis=1)
    assert np.all(np.diff(deg) >= 0)
    assert tuple(idx[0]) == (0,) * d


def test_prefix_property_and_lazy_for_d101():
    t0 = time.perf_counter()
    idx = basis_indices(2, 101, 50)
    assert time.perf_counter() - t0 < 1.0
    assert idx.shape == (50, 101)
    np.testing.assert_array_equal(idx[1:], np.eye(101, dtype=int)[:49])
    # T_R is a prefix of T_{R'} for R < R'
    np.testing.assert_array_equal(basis_indices(3, 4, 20), basis_indices(3, 4, 40)[:20])
    # degree 2 after all 101 linear terms with t = 2: x1 x2 first
    idx2 = basis_indices(2, 101, 103)
    assert tuple(np.flatnonzero(idx2[102])) == (0, 1)


def test_R_beyond_t_to_the_d_is_an_error():
    with pytest.raises(ValueError, match=r"R must be in \[1, t\^d\]"):
        basis_indices(2, 3, 9)
    with pytest.raises(ValueError):
        basis_indices(2, 3, 0)
    with pytest.raises(FeasibilityError, match="t\\^d"):
        basis_indices(10, 8)


def test_evaluate_basis_matches_cos_arccos_definition():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (257, 3))
    X[0] = [1.0, -1.0, 0.0]
    idx = basis_indices(5, 3, 60)
    got = evaluate_basis(X, idx, block_rows=50)
    ref = np.prod(np.cos(idx[None, :, :] * np.arccos(X)[:, None, :]), axis=2)
    np.testing.assert_allclose(got, ref, atol=1e-12)
    np.testing.assert_allclose(basis_moments(X, idx, block_rows=64), ref.mean(axis=0), atol=1e-13)


def test_grid_points_and_nearest_discretisation():
    N = 7
    a = grid_points(N)
    np.testing.assert_allclose(a, [(2 * k + 1 - N) / N for k in range(N)])
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-1, 1, 5000), [-1.0, 1.0, 0.0]])
    got = discretise(x, N)
    dist = np.abs(x[:, None] - a[None, :])
    # the chosen centre is a nearest one (ties only on cell boundaries)
    np.testing.assert_allclose(np.abs(got - x), dist.min(axis=1), atol=1e-15)
    assert discretise_indices(np.array([1.0, -1.0]), N).tolist() == [N - 1, 0]
    assert discretise(np.array([[0.3, -0.2]]), 1).tolist() == [[0.0, 0.0]]


def test_lattice_round():
    v = np.array([0.26, -0.74, 1.0, -1.0, 0.124])
    np.testing.assert_allclose(lattice_round(v, 4), [0.25, -0.75, 1.0, -1.0, 0.0])
    with pytest.raises(ValueError):
        lattice_round(v, 0)


def test_schedule_I_values():
    n, d, K = 10_000, 2, 4.0
    s = schedule_I(n, d, K)
    D = 2 * d + K
    assert s.t == math.ceil(n ** (1 / D)) == 4
    assert s.N == math.ceil(n ** (K / D)) == 100
    assert s.m == math.ceil(n ** (1 + (K + 1) / D))
    assert s.L == math.ceil(n ** ((d + K) / D))
    assert schedule(n, d, K) == s


def test_schedule_II_values_and_large_m():
    n, d, K, delta = 100_000, 8, 100.0, 1e-3
    s = schedule_II(n, d, K, delta)
    ell = math.log(1 / delta)
    D = 3 * d + 2 * K
    assert s.t == math.ceil(n ** (2 / D) * ell ** (-1 / D))
    assert s.N == math.ceil(n ** (2 * K / D) * ell ** (-K / D))
    m_ref = n ** ((4 * d + 4 * K + 2) / D) * ell ** (-(2 * d + 2 * K + 1) / D)
    assert abs(s.m - m_ref) <= 1e-6 * m_ref + 1
    assert isinstance(s.m, int) and s.m > 10**8
    assert schedule(n, d, K, delta) == s


@pytest.mark.parametrize(
    "kwargs,exc",
    [
        (dict(n=0, d=2, K=1.0), ValueError),
        (dict(n=10, d=0, K=1.0), ValueError),
        (dict(n=10, d=2, K=0.0), ValueError),
        (dict(n=10, d=2, K=float("nan")), ValueError),
        (dict(n=10.5, d=2, K=1.0), TypeError),
    ],
)
def test_schedule_bad_inputs(kwargs, exc):
    with pytest.raises(exc):
        schedule_I(**kwargs)


def test_schedule_II_needs_positive_delta():
    with pytest.raises(ValueError, match="delta"):
        schedule_II(100, 2, 1.0, 0.0)
    with pytest.raises(ValueError, match="delta"):
        schedule(100, 2, 1.0, 1.0)
