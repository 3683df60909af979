"""The L1 moment LP (thesis (2.7)) against independent formulations."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

import dpkit.mechanisms.trig.lp as lpmod
from dpkit.core.exceptions import DPKitError
from dpkit.mechanisms.trig import LPError, basis_indices, evaluate_basis, solve_l1_lp


def _instance(seed, R=12, C=300, d=3, noise=0.05):
    rng = np.random.default_rng(seed)
    idx = basis_indices(3, d, R)
    P = rng.uniform(-1, 1, (C, d))
    W = evaluate_basis(P, idx).T
    X = np.clip(rng.normal(0.2, 0.4, (500, d)), -1, 1)
    b = evaluate_basis(X, idx).mean(axis=0)
    b[1:] += rng.laplace(0, noise, R - 1)
    return W, b


def _dual_objective(W, b):
    """Dual of (2.7): max bᵀy + z s.t. Wᵀy + z ≤ 0, −1 ≤ y ≤ 1 (inequality form, interior point)."""
    R, C = W.shape
    res = linprog(
        -np.concatenate([b, [1.0]]),
        A_ub=np.hstack([W.T, np.ones((C, 1))]),
        b_ub=np.zeros(C),
        bounds=[(-1, 1)] * R + [(None, None)],
        method="highs-ipm",
    )
    assert res.status == 0
    return -res.fun


def _epigraph_objective(W, b):
    """Another primal form: min 1ᵀs s.t. −s ≤ Wu − b ≤ s, Σu = 1, u ≥ 0 (dense, interior point)."""
    R, C = W.shape
    A_ub = np.block([[W, -np.eye(R)], [-W, -np.eye(R)]])
    b_ub = np.concatenate([b, -b])
    A_eq = np.concatenate([np.ones(C), np.zeros(R)])[None, :]
    res = linprog(np.concatenate([np.zeros(C), np.ones(R)]), A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0],
                  bounds=(0, None), method="highs-ipm")
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("method", ["highs-ds", "highs-ipm", "highs"])
def test_optimum_matches_dual_and_epigraph_forms(seed, method):
    W, b = _instance(seed)
    sol = solve_l1_lp(W, b, method=method)
    # the returned u attains the reported objective
    assert np.isclose(np.abs(W @ sol.u - b).sum(), sol.objective, atol=1e-7)
    assert np.isclose(sol.u.sum(), 1.0) and sol.u.min() >= 0
    # strong duality and an independent primal form (solver tolerances ~1e-7)
    assert np.isclose(sol.objective, _dual_objective(W, b), atol=1e-6)
    assert np.isclose(sol.objective, _epigraph_objective(W, b), atol=1e-6)
    if method != "highs-ipm":  # simplex returns a vertex: at most R + 1 non-zeros
        assert sol.support_size <= W.shape[0] + 1
    assert sol.n_vars == W.shape[1] + 2 * W.shape[0] and sol.n_constraints == W.shape[0] + 1


def test_brute_force_on_tiny_instance():
    # C = 3 candidates, R = 3 moments: grid search over the 2-simplex (step 1/400) bounds the optimum
    W, b = _instance(5, R=3, C=3, d=2, noise=0.3)
    sol = solve_l1_lp(W, b)
    best = np.inf
    g = np.linspace(0, 1, 401)
    for u1, u2 in itertools.product(g, g):
        if u1 + u2 <= 1:
            u = np.array([u1, u2, 1 - u1 - u2])
            best = min(best, np.abs(W @ u - b).sum())
    # the LP optimum is ≤ every grid value, and the grid gets within Lipschitz·step of it
    lip = np.abs(W).sum(axis=0).max() * 2  # ‖W(u − u')‖₁ ≤ max col-L1 · ‖u − u'‖₁
    assert sol.objective <= best + 1e-9
    assert best - sol.objective <= lip * 2 / 400


def test_feasible_target_has_zero_objective():
    W, _ = _instance(3)
    rng = np.random.default_rng(0)
    u0 = rng.dirichlet(np.ones(W.shape[1]))
    sol = solve_l1_lp(W, W @ u0)
    assert sol.objective < 1e-9
    assert np.abs(W @ sol.u - W @ u0).sum() < 1e-7


def test_failure_raises_with_status(monkeypatch):
    class Fake:
        status, message, x, fun = 2, "The problem is infeasible.", None, np.nan

    monkeypatch.setattr(lpmod, "linprog", lambda *a, **k: Fake())
    W, b = _instance(0)
    with pytest.raises(LPError) as ei:
        solve_l1_lp(W, b)
    assert ei.value.status == 2 and "infeasible" in ei.value.message
    assert isinstance(ei.value, DPKitError) and "status 2" in str(ei.value)


def test_iteration_limit_is_an_error_not_a_fallback(monkeypatch):
    real = lpmod.linprog

    def limited(*a, **k):
        k["options"] = dict(k.get("options") or {}, maxiter=1)
        return real(*a, **k)

    monkeypatch.setattr(lpmod, "linprog", limited)
    W, b = _instance(1)
    with pytest.raises(LPError) as ei:
        solve_l1_lp(W, b)
    assert ei.value.status == 1


def test_bad_inputs():
    W, b = _instance(0)
    with pytest.raises(ValueError, match="R = "):
        solve_l1_lp(W, b[:-1])
    with pytest.raises(ValueError, match="finite"):
        solve_l1_lp(W, np.where(np.arange(b.size) == 1, np.nan, b))
    with pytest.raises(ValueError, match="method"):
        solve_l1_lp(W, b, method="simplex")


@pytest.mark.parametrize("seed", [0, 1])
def test_column_generation_matches_direct_solve(seed):
    # many nearly collinear columns (a fine 2-d grid), as in the full-grid mechanism
    rng = np.random.default_rng(seed)
    idx = basis_indices(4, 2)
    a = (2 * np.arange(60) + 1 - 60) / 60
    P = np.stack([g.ravel() for g in np.meshgrid(a, a, indexing="ij")], axis=1)
    W = evaluate_basis(P, idx).T
    b = evaluate_basis(np.clip(rng.normal(0.1, 0.3, (400, 2)), -1, 1), idx).mean(axis=0)
    b[1:] += rng.laplace(0, 0.02, b.size - 1)
    direct = solve_l1_lp(W, b, column_generation=False)
    cg = solve_l1_lp(W, b, column_generation=True)
    assert cg.cg_rounds >= 1 and "column-generation" in cg.method
    assert np.isclose(cg.objective, direct.objective, atol=1e-7)
    assert np.isclose(np.abs(W @ cg.u - b).sum(), cg.objective, atol=1e-7)
    assert np.isclose(cg.objective, _dual_objective(W, b), atol=1e-6)
    assert cg.support_size <= W.shape[0] + 1


def test_column_generation_round_limit_is_an_error():
    W, b = _instance(2, C=3000)
    with pytest.raises(LPError, match="column generation"):
        solve_l1_lp(W, b, column_generation=True, cg_max_rounds=1)
