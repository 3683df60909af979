"""Seed 004 core: constraint model, general projector (eq. 7), Properties 1–3, Theorems 1–5, Sec. 6 convergence.

Tolerances: all claims are exact identities, so the checks compare against floating-point
rounding. A backward-stable SVD/LSQR computation on an n-column matrix of condition number κ (over its
nonzero singular values) errs relatively by about n·u·κ (u = 2⁻⁵³); one that goes through the normal
matrix MMᵀ (Property 1's Mᵀ(MMᵀ)^†, Theorem 1's Cholesky) by about n·u·κ². Each bound is its fixed floor
(1e-9 … 1e-12, for the well-conditioned systems most draws give) plus 16·n·u·κ or 16·n·u·κ², so an
ill-conditioned draw (a 12 × 12 system of κ ≈ 6·10⁵ gave a Property 1 residual of 6·10⁻⁶, inside
16·n·u·κ² ≈ 8·10⁻³) is judged by its own rounding, while a violated claim (O(1) relative) still fails.
The examples are derandomized: the same systems on every run.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpkit.claims.consistency_statistics import partition_convergence, pinv_property_residuals, theorem_residuals
from dpkit.core.exceptions import FeasibilityError
from dpkit.mechanisms.consistency import (
    ConstraintSystem,
    GeneralProjector,
    InconsistentConstraintsError,
    alternating_projection,
    block_projectors,
    contiguous_partition,
    project_general,
    random_consistent_system,
    random_partition,
)

systems = st.tuples(
    st.integers(1, 12),  # m
    st.integers(1, 12),  # n
    st.floats(0.2, 1.0),  # rank fraction
    st.integers(0, 2**31 - 1),  # seed
)


def _draw(m, n, frac, seed):
    r = max(1, int(round(frac * min(m, n))))
    S, p = random_consistent_system(m, n, rank=r, rng=seed)
    x = np.random.default_rng(seed + 1).standard_normal(n) * 3
    return S, p, x


def _rounding(M, power: int) -> float:
    """16·n·u·κ^power: the rounding allowance of the module docstring for the matrix M (κ over its nonzero
    singular values, as ``numpy.linalg.pinv`` counts them)."""
    A = M.toarray() if hasattr(M, "toarray") else np.asarray(M, dtype=float)
    s = np.linalg.svd(A, compute_uv=False)
    s = s[s > 1e-15 * s[0]] if s.size and s[0] > 0 else s[:0]
    kappa = float(s[0] / s[-1]) if s.size else 1.0
    return 16 * A.shape[1] * 2.0**-53 * kappa**power


#: an ill-conditioned system (κ ≈ 6·10⁵) that a random draw once found: judged by its own rounding
ILL_CONDITIONED = (12, 12, 1.0, 5519)


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(systems)
@example(ILL_CONDITIONED)
def test_properties_1_to_3(args):
    S, _, _ = _draw(*args)
    r = pinv_property_residuals(S.M)
    e1, e2 = _rounding(S.M, 1), _rounding(S.M, 2)
    assert r.prop1 < 1e-9 + e2  # Mᵀ(MMᵀ)^† goes through the normal matrix
    assert r.prop2 < 1e-10 + e1
    assert r.prop3_idempotent < 1e-10 + e1
    assert -1e-12 <= r.prop3_norm_P <= 1 + 1e-10 + e1
    assert -1e-12 <= r.prop3_norm_I_minus_P <= 1 + 1e-10 + e1
    assert r.prop3_norm_dist01 < 1e-10 + e1  # both are orthogonal projectors: norm ∈ {0, 1}


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(systems)
@example(ILL_CONDITIONED)
def test_theorems_1_to_5(args):
    S, _, x = _draw(*args)
    r = theorem_residuals(S, x, rng=args[3])
    e1, e2 = _rounding(S.M, 1), _rounding(S.M, 2)
    assert r.thm1_solver_gap < 1e-9 + e2  # pinv, LSQR and Cholesky on MMᵀ (full row rank) agree
    assert r.thm1_feasibility < 1e-10 + e1
    assert r.thm1_objective_margin > -1e-12 - e1  # no random feasible point is closer
    assert r.thm2_idempotence < 1e-10 + e1
    assert r.cor1_fixed_point < 1e-10 + e1
    assert r.thm3_identity < 1e-10 + e1
    assert r.thm4_pythagoras < 1e-10 + e1
    assert r.thm5_inner < 1e-10 + e1


def test_the_rounding_allowance_still_sees_a_wrong_pseudo_inverse():
    """Negative control: on the ill-conditioned example, a pseudo-inverse off by 10⁻³ relative breaks Property 2
    far beyond the allowance (the allowance does not swallow a violated claim)."""
    S, _, _ = _draw(*ILL_CONDITIONED)
    A = S.M.toarray()
    wrong = np.linalg.pinv(A) * (1 + 1e-3)
    residual = np.linalg.norm(A @ wrong @ A - A) / np.linalg.norm(A)
    assert residual > 100 * (1e-10 + _rounding(S.M, 1))


def test_thm4_detects_a_wrong_projector():
    """The Pythagoras statistic must flag a non-orthogonal (oblique) 'projection'."""
    S, p, x = _draw(4, 8, 1.0, 3)
    A = S.M.toarray()
    W = np.diag(np.linspace(1, 5, 8))  # oblique: x + W Aᵀ(A W Aᵀ)⁻¹(b − Ax) is feasible but not orthogonal
    y = x + W @ A.T @ np.linalg.solve(A @ W @ A.T, S.b - A @ x)
    assert np.max(np.abs(A @ y - S.b)) < 1e-10
    lhs = np.sum((x - p) ** 2)
    assert abs(lhs - np.sum((y - x) ** 2) - np.sum((y - p) ** 2)) / lhs > 1e-3


@pytest.mark.parametrize("method", ["pinv", "cholesky", "splu", "lsqr"])
def test_methods_agree_and_are_idempotent(method):
    S, _ = random_consistent_system(15, 40, density=0.3, rng=7)
    x = np.random.default_rng(8).standard_normal(40)
    ref = project_general(S, x, method="pinv")
    P = GeneralProjector(system=S, method=method)
    y = P.project(x)
    assert np.max(np.abs(y - ref)) < 1e-9
    assert np.max(np.abs(P.project(y) - y)) < 1e-9
    assert P.method_used == method


def test_auto_falls_back_to_lsqr_for_rank_deficient_large_system():
    g = np.random.default_rng(0)
    M = g.standard_normal((300, 5)) @ g.standard_normal((5, 900))  # rank 5, m·n > AUTO_DENSE
    S = ConstraintSystem(M=M, b=M @ g.standard_normal(900))
    P = GeneralProjector(system=S, method="auto")
    assert P.method_used == "lsqr"
    x = g.standard_normal(900)
    assert np.max(np.abs(P.project(x) - project_general(S, x, method="pinv"))) < 1e-8
    with pytest.raises(np.linalg.LinAlgError, match="full row rank"):
        GeneralProjector(system=S, method="splu")
    with pytest.raises(np.linalg.LinAlgError, match="full row rank"):
        GeneralProjector(system=S, method="cholesky")


@pytest.mark.parametrize("seed", range(6))
def test_sec6_convergence_random_partitions_and_orders(seed):
    g = np.random.default_rng(100 + seed)
    m, n = int(g.integers(4, 12)), int(g.integers(6, 16))
    rank = int(g.integers(1, min(m, n) + 1))
    S, _ = random_consistent_system(m, n, rank=rank, rng=g)
    x = g.standard_normal(n) * 5
    for k in sorted({1, 2, 3, m}):
        r = partition_convergence(S, x, k=min(k, m), rng=g)
        assert r.converged == 1.0
        assert r.rel_dist < 1e-9  # limit = f_{M,b}(x̃) (Sec. 6)
        assert r.fejer_increase < 1e-12  # ‖x_s − p‖ non-increasing
        assert r.telescope < 1e-10  # Sec. 6 step 1 identity
        assert r.inner_drift < 1e-9  # Thm. 5 along the iteration


def test_alternating_stop_rules_and_trace():
    S, p = random_consistent_system(6, 10, rng=5)
    x = np.random.default_rng(6).standard_normal(10)
    projs = block_projectors(S, contiguous_partition(6, 3))
    ref = project_general(S, x)
    fixed = alternating_projection(x, projs, stop="fixed", max_iter=7, residual=S, x_true=p, x_ref=ref)
    assert fixed.n_iter == 7 and fixed.converged
    assert all(len(v) == 8 for v in fixed.trace.values())
    assert fixed.trace["mse"][0] == pytest.approx(np.sum(S.residual(x) ** 2) / 10)
    assert fixed.trace["err"][0] == pytest.approx(np.sqrt(np.mean((x - p) ** 2)))
    assert np.all(np.diff(fixed.trace["dist"]) <= 1e-12)  # distance to the optimum never grows
    tol = 1e-9
    mc = alternating_projection(x, projs, stop="mean-change", tol=tol, max_iter=10_000)
    assert mc.converged
    assert mc.trace["change"][-1] < tol <= mc.trace["change"][-2]  # stops at the first cycle below tol
    capped = alternating_projection(x, projs, stop="mean-change", tol=1e-300, max_iter=3)
    assert capped.n_iter == 3 and not capped.converged


# ---------------------------------------------------------------- bad input
def test_inconsistent_constraints_raise():
    with pytest.raises(InconsistentConstraintsError, match="inconsistent"):
        ConstraintSystem(M=[[1.0, 1.0], [1.0, 1.0]], b=[1.0, 2.0])
    g = np.random.default_rng(0)
    M = g.standard_normal((3, 2)) @ g.standard_normal((2, 50))
    b = M @ g.standard_normal(50)
    b[0] += 1.0
    with pytest.raises(InconsistentConstraintsError):
        ConstraintSystem(M=M, b=b)
    # large sparse path (LSQR residual check)
    D = sp.vstack([sp.eye(3000, format="csr"), sp.eye(3000, format="csr")[:5]], format="csr")
    rhs = np.ones(3005)
    rhs[-1] = 2.0
    with pytest.raises(InconsistentConstraintsError):
        ConstraintSystem(M=D, b=rhs)
    rhs[-1] = 1.0
    assert ConstraintSystem(M=D, b=rhs).m == 3005


@pytest.mark.parametrize(
    "M, b, err, match",
    [
        ([1.0, 2.0], None, ValueError, "2-dimensional"),
        ([[1.0, np.nan]], None, ValueError, "finite"),
        ([[1.0, 2.0]], [np.inf], ValueError, "finite"),
        ([[1.0, 2.0]], [1.0, 2.0], ValueError, r"shape \(1,\)"),
        (np.zeros((0, 3)), None, ValueError, "at least one row"),
        ([["a", "b"]], None, TypeError, "numeric"),
    ],
)
def test_bad_systems(M, b, err, match):
    with pytest.raises(err, match=match):
        ConstraintSystem(M=M, b=b)


def test_bad_points_partitions_and_methods():
    S, _ = random_consistent_system(4, 6, rng=1)
    P = GeneralProjector(system=S, method="pinv")
    with pytest.raises(ValueError, match=r"shape \(6,\)"):
        P.project(np.zeros(5))
    with pytest.raises(ValueError, match="finite"):
        P.project(np.full(6, np.nan))
    with pytest.raises(ValueError, match="partition"):
        S.partition([[0, 1], [1, 2, 3]])
    with pytest.raises(ValueError, match="partition"):
        S.partition([[0, 1]])
    with pytest.raises(ValueError, match="at most m"):
        random_partition(4, 5, rng=0)
    with pytest.raises(ValueError, match="method"):
        GeneralProjector(system=S, method="qr")
    with pytest.raises(TypeError, match="ConstraintSystem"):
        GeneralProjector(system=S.M)
    with pytest.raises(ValueError, match="stop"):
        alternating_projection(np.zeros(6), [P], stop="never")
    with pytest.raises(ValueError, match="x_ref"):
        alternating_projection(np.zeros(6), [P], x_ref=np.zeros(5))
    big = ConstraintSystem(M=sp.eye(10_000, format="csr"))
    with pytest.raises(FeasibilityError, match="dense"):
        GeneralProjector(system=big, method="pinv")


def test_random_partition_is_a_partition_and_seeded():
    a = random_partition(50, 7, rng=3)
    b = random_partition(50, 7, rng=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert all(len(x) > 0 for x in a)
    assert np.array_equal(np.sort(np.concatenate(a)), np.arange(50))
