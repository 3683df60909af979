"""Interval-union arithmetic (dpkit.mechanisms.linear.intervals) against brute force on a fine grid."""
from __future__ import annotations

import numpy as np
import pytest

from dpkit.mechanisms.linear import intervals as iv


def _random_union(rng, k=3, lo=-10.0, hi=10.0, points=True):
    pts = np.sort(rng.uniform(lo, hi, 2 * k)).reshape(-1, 2)
    if points and rng.random() < 0.5:
        pts[0, 1] = pts[0, 0]  # a zero-length interval
    return iv.merge(pts)


def _indicator(A, x):
    return iv.contains(A, x)


def test_merge_keeps_points_and_merges_touching():
    A = iv.merge(np.array([[3.0, 3.0], [0.0, 1.0], [1.0, 2.0], [5.0, 6.0], [5.5, 5.5]]))
    np.testing.assert_array_equal(A, [[0.0, 2.0], [3.0, 3.0], [5.0, 6.0]])
    assert iv.measure(A) == 3.0
    # tolerance closes tiny gaps only
    B = iv.merge(np.array([[0.0, 1.0], [1.0 + 1e-12, 2.0], [2.5, 3.0]]), tol=1e-9)
    np.testing.assert_array_equal(B, [[0.0, 2.0], [2.5, 3.0]])


def test_minkowski_with_W_and_points():
    V = iv.as_union([[0, 1], [10, 11]])
    W = iv.symmetric_closure(V)
    np.testing.assert_array_equal(W, [[-11, -10], [-1, 1], [10, 11]])
    # ladder: {0} ⊕ W = W ; a point plus a point stays a point
    np.testing.assert_array_equal(iv.minkowski_sum([[0.0, 0.0]], W), W)
    np.testing.assert_array_equal(iv.minkowski_sum([[1.0, 1.0]], [[2.0, 2.0]]), [[3.0, 3.0]])
    np.testing.assert_array_equal(iv.minkowski_sum([[0, 1]], [[0, 1], [5, 5]]), [[0, 2], [5, 6]])


def test_difference_semantics():
    A = iv.as_union([[0, 4], [6, 6], [8, 9]])
    B = iv.as_union([[1, 2], [6, 6], [8, 9]])
    np.testing.assert_array_equal(iv.difference(A, B), [[0, 1], [2, 4]])
    # a point of A outside B survives; a point covered by B does not
    np.testing.assert_array_equal(iv.difference([[5, 5]], [[0, 1]]), [[5, 5]])
    assert iv.difference([[0.5, 0.5]], [[0, 1]]).shape == (0, 2)
    assert iv.difference([[0, 1]], [[0, 1]]).shape == (0, 2)


def test_integrals_closed_form():
    A = iv.as_union([[-3, -1], [2, 5]])
    assert iv.measure(A) == 5.0
    # ∫_{-3}^{-1}|r| = (9-1)/2 = 4 ; ∫_2^5 r = (25-4)/2 = 10.5
    assert iv.abs_integral(A) == pytest.approx(14.5)
    assert iv.abs_integral([[-2, 3]]) == pytest.approx(2 + 4.5)


@pytest.mark.parametrize("seed", range(12))
def test_ops_match_brute_force(seed):
    """Set operations agree with pointwise logic on a 1e-3 grid (measure error ≤ grid step × #endpoints)."""
    rng = np.random.default_rng(seed)
    A, B = _random_union(rng), _random_union(rng)
    x = np.linspace(-25, 25, 50_001)
    h = x[1] - x[0]
    inA, inB = _indicator(A, x), _indicator(B, x)
    D = iv.difference(A, B)
    I = iv.intersection(A, B)
    U = iv.union(A, B)
    slack = 4 * h * (A.shape[0] + B.shape[0])  # each endpoint misclassifies at most one grid cell
    assert abs(iv.measure(D) - h * np.count_nonzero(inA & ~inB)) <= slack
    assert abs(iv.measure(I) - h * np.count_nonzero(inA & inB)) <= slack
    assert abs(iv.measure(U) - h * np.count_nonzero(inA | inB)) <= slack
    # Minkowski: every sum of a point of A and a point of B lies in A ⊕ B
    S = iv.minkowski_sum(A, B)
    a_pts = x[inA][::97]
    b_pts = x[inB][::89]
    if a_pts.size and b_pts.size:
        sums = (a_pts[:, None] + b_pts[None, :]).ravel()
        widened = S + np.array([-1e-9, 1e-9])  # float rounding of a + b
        assert np.all(iv.contains(widened, sums))
    # ∫|r|: each misclassified cell changes the Riemann sum by at most h·max|x| = 25h
    assert iv.abs_integral(A) == pytest.approx(h * np.sum(np.abs(x[inA])), abs=25 * slack)


def test_as_union_rejects_bad_input():
    with pytest.raises(ValueError, match="start <= end"):
        iv.as_union([[2, 1]])
    with pytest.raises(ValueError, match="finite"):
        iv.as_union([[0, np.inf]])
    with pytest.raises(ValueError, match="shape"):
        iv.as_union([[0, 1, 2]])
    with pytest.raises(TypeError):
        iv.as_union([["a", "b"]])
    with pytest.raises(ValueError, match="at least one"):
        iv.as_union([], allow_empty=False)
