"""The class supremum's search on the low-rank surrogate of the data side (dpkit.queries.supremum, ``lowrank_above``).

On data above the threshold the screening and the ascent use the kernel mean embedding's
surrogate ``Σ_l β_l k(z_l, c)``; the witness is still certified on the full data: its reported
error is the exact error (checked with the reference evaluator, to the proven rounding bounds);
at or below the threshold the result is the exact-side search (to the bit in one process; the values recorded from
the search before the surrogate existed, to the bit on the recording machine and within rounding bounds elsewhere);
a planted defect is found on the surrogate path.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpkit.queries.accurate import EXP_ULP_F64, compound
from dpkit.queries.evaluate import answer_reference
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64, gamma
from dpkit.queries.supremum import class_supremum
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload

N, D, SIGMA = 12_000, 3, 0.5


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, WeightedDatabase]:
    g = np.random.default_rng(11)
    X = np.clip(g.normal(0.1, 0.45, size=(N, D)), -1.0, 1.0)
    S = np.clip(g.normal(-0.1, 0.5, size=(40, D)), -1.0, 1.0)
    return X, WeightedDatabase(points=S, weights=g.dirichlet(np.ones(40)), m=40)


def _reference_bound(P: np.ndarray, w: np.ndarray, c: np.ndarray, sigma: float, value: float) -> float:
    """Rounding bound of answer_reference's float64 sum Σ w_i exp(−‖p_i − c‖²/(2σ²)) (as in test_supremum)."""
    x = float((((P - c) ** 2).sum(1)).max() / (2 * sigma**2))
    u = UNIT_ROUNDOFF_F64
    rho = compound(math.expm1(gamma(P.shape[1] + 5, u) * x), 2 * EXP_ULP_F64 * u, gamma(P.shape[0] + 2, u))
    return rho * abs(value)


def test_lowrank_search_reports_the_exact_error_of_its_witness(data):
    X, db = data
    r = class_supremum(X, db, SIGMA, rng=5, lowrank_above=N - 1)
    assert r.data_side == "lowrank" and 0 < r.rank < N and 0 < r.surrogate_bound < 1e-5
    wl = GaussianKernelWorkload(centres=np.asarray(r.witness)[None, None, :], alphas=np.ones((1, 1)), sigma=SIGMA)
    a = float(answer_reference(wl, db.points, weights=db.weights)[0])
    t = float(answer_reference(wl, X)[0])
    tol = r.numerical_bound + _reference_bound(db.points, db.weights, r.witness, SIGMA, a) \
        + _reference_bound(X, np.full(N, 1 / N), r.witness, SIGMA, t) + UNIT_ROUNDOFF_F64 * abs(a - t)
    assert tol < 1e-12
    assert abs((a - t) - r.signed_error) <= tol, (a - t, r.signed_error, tol)
    assert abs(abs(a - t) - r.sup_abs) <= tol and abs(r.truth - t) <= tol


# sup_abs and witness of class_supremum(X, db, SIGMA, rng=5) from the exact-side search before the low-rank path,
# recorded on the development machine (AVX2)
_RECORDED_SUP = "0x1.25c021cddabcep-3"
_RECORDED_WITNESS = ("-0x1.48b8558c38f60p-1", "-0x1.1e3f69b524d78p-1", "0x1.4da7f0c483252p-2")


def test_at_or_below_the_threshold_the_search_is_unchanged(data):
    """At the threshold the search is the exact-side one, to the bit (the same process, ``lowrank_above=None``), and it
    finds the maximiser and the value recorded before the low-rank path existed. To the bit on the recording machine;
    on another processor numpy's vectorised exp and the sums round differently in the last bits (measured on an
    AVX-512 machine: 1 ulp in ``sup_abs``, 1.3·10⁻¹⁴ in the witness), so there ``sup_abs`` must agree within both
    evaluations' proven rounding bounds plus the polish's stopping rule (a relative change of ``factr·eps = 10·eps``),
    and the witness within 10⁻⁶: another local maximum or another search lies orders of magnitude further."""
    X, db = data
    at, off = (class_supremum(X, db, SIGMA, rng=5, lowrank_above=above) for above in (N, None))
    for r in (at, off):
        assert r.data_side == "exact" and r.rank == 0 and r.surrogate_bound is None
    assert (at.sup_abs.hex(), [float(v).hex() for v in at.witness]) == \
        (off.sup_abs.hex(), [float(v).hex() for v in off.witness])
    sup = float.fromhex(_RECORDED_SUP)
    tol = 2 * at.numerical_bound + 2 * 10 * np.finfo(float).eps * sup
    assert abs(at.sup_abs - sup) <= tol, (at.sup_abs.hex(), _RECORDED_SUP, tol)
    assert np.max(np.abs(at.witness - np.array([float.fromhex(v) for v in _RECORDED_WITNESS]))) <= 1e-6


def test_lowrank_search_finds_a_planted_defect():
    """D̂ = (1 − η)·D + η·δ_z with no data within ρ = 1.2 of z: E(c) = η(k(z, c) − K̄_D(c)), so
    η(1 − e^{−ρ²/(2σ²)}) ≤ η(1 − K̄_D(z)) ≤ sup|E| ≤ η."""
    eta, rho = 0.05, 1.2
    g = np.random.default_rng(2)
    z = np.full(D, 0.9)
    X = g.uniform(-1.0, 1.0, size=(4 * N, D))
    X = X[np.linalg.norm(X - z, axis=1) > rho][:N]
    n = X.shape[0]
    assert n == N
    db = WeightedDatabase(points=np.vstack([X, z]), weights=np.append(np.full(n, (1 - eta) / n), eta), m=n + 1)
    r = class_supremum(X, db, SIGMA, rng=4, lowrank_above=N - 1)
    assert r.data_side == "lowrank"
    assert eta * (1 - math.exp(-rho**2 / (2 * SIGMA**2))) <= r.sup_abs <= eta * (1 + 1e-12)
    assert r.signed_error > 0 and np.linalg.norm(r.witness - z) < 0.5


def test_lowrank_above_is_validated(data):
    X, db = data
    with pytest.raises(ValueError, match="lowrank_above"):
        class_supremum(X, db, SIGMA, lowrank_above=-1)
