"""diffprivlib's private PCA vs dpkit's PSI: the comparison runs at equal ε without leaking warnings,
its quality measures are right on known subspaces, and both recover the subspace when ε is huge."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpkit.experiments.pca_compare import compare_private_pca, pca_quality


def test_pca_quality_measures_known_subspaces():
    A = np.diag([4.0, 2.0, 1.0, 0.5])
    e = np.eye(4)
    assert pca_quality(e[:2], A) == pytest.approx({"captured_variance": 1.0, "max_angle_deg": 0.0}, abs=1e-9)
    q = pca_quality(e[2:], A)  # the bottom two directions: orthogonal, captures 1.5/6
    assert q["max_angle_deg"] == pytest.approx(90.0) and q["captured_variance"] == pytest.approx(1.5 / 6.0)
    q = pca_quality(np.array([[1.0, 0, 1.0, 0]]) / math.sqrt(2), A)  # 45° to e1
    assert q["max_angle_deg"] == pytest.approx(45.0)


@pytest.fixture(scope="module")
def X():
    g = np.random.default_rng(0)
    Z = g.standard_normal((2000, 2)) * [1.0, 0.5]
    basis = np.linalg.qr(g.standard_normal((5, 2)))[0].T
    return np.clip(0.3 * Z @ basis + 0.02 * g.standard_normal((2000, 5)), -1, 1)


def test_compare_rows_budget_and_no_leak_warning(X):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither library may warn (e.g. diffprivlib's PrivacyLeakWarning)
        rows = compare_private_pca(X, k=2, epsilon=1.0, rng=0)
    by = {r["method"]: r for r in rows}
    assert set(by) == {"exact", "dpkit-psi", "diffprivlib"}
    assert by["exact"]["max_angle_deg"] < 1e-6 and by["exact"]["captured_variance"] == pytest.approx(1.0)
    for m in ("dpkit-psi", "diffprivlib"):
        assert by[m]["ledger"]["spent"]["epsilon"] == pytest.approx(1.0)
        assert 0.0 <= by[m]["captured_variance"] <= 1.0 + 1e-9
    assert by["diffprivlib"]["diffprivlib_spent"] == pytest.approx([1.0, 0.0])


def test_both_recover_subspace_at_huge_epsilon(X):
    rows = {r["method"]: r for r in compare_private_pca(X, k=2, epsilon=1e7, rng=1)}
    # noise ∝ 1/ε: at ε = 10⁷ both are within a degree of the true top-2 subspace (eigengap 0.0225 vs ~4e-5)
    assert rows["dpkit-psi"]["max_angle_deg"] < 1.0
    assert rows["diffprivlib"]["max_angle_deg"] < 1.0
    assert rows["dpkit-psi"]["captured_variance"] > 0.999 and rows["diffprivlib"]["captured_variance"] > 0.999
