"""The supremum of a release's error over the single-kernel query class (dpkit.queries.supremum).

Gradients against central differences; the ascent against a refined fine grid (d = 2); a planted
defect far from every workload centre that the workload misses and the supremum finds; the
branch-and-bound interval against the refined grid maximum (d = 2, 3) with a too-tight bound as
negative control; the witness re-evaluated by the reference evaluator; the centre outside the cube
(domain="space"); direct answering reported not applicable."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpkit.methods.direct import DirectAnswering
from dpkit.methods.kme import KMEAnswers, embedding_answers
from dpkit.queries.accurate import EXP_ULP_F64, compound
from dpkit.queries.evaluate import answer_reference, worst_case_errors
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64, gamma
from dpkit.queries.supremum import (
    BoxData,
    ErrorFunction,
    certify_supremum,
    class_supremum,
    interval_box_bound,
    proven_box_bound,
    random_feature_answers,
    released_answers,
    taylor_box_bound,
)
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload


def _setup(d: int, n: int = 200, s: int = 30, seed: int = 0) -> tuple[np.ndarray, WeightedDatabase]:
    g = np.random.default_rng(seed)
    X = np.clip(g.normal(0.2, 0.4, size=(n, d)), -1.0, 1.0)
    S = np.clip(g.normal(-0.1, 0.5, size=(s, d)), -1.0, 1.0)
    w = g.dirichlet(np.ones(s))
    return X, WeightedDatabase(points=S, weights=w, m=s)


def _error_fn(X: np.ndarray, db: WeightedDatabase, sigma: float):
    """Plain float64 E(C) = K̄_D̂(C) − K̄_D(C) by broadcasting (independent of the module)."""
    def E(C: np.ndarray) -> np.ndarray:
        def k(P, w):
            sq = ((C[:, None, :] - P[None, :, :]) ** 2).sum(-1)
            return np.exp(-sq / (2.0 * sigma**2)) @ w
        return k(db.points, db.weights) - k(X, np.full(X.shape[0], 1.0 / X.shape[0]))
    return E


def _refined_grid_max(E, d: int, points_per_axis: int, reach: float = 1.0) -> float:
    """max |E| on a grid of [-reach, reach]^d, then Nelder–Mead from the best grid points (clipped to the box)."""
    axes = [np.linspace(-reach, reach, points_per_axis)] * d
    G = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, d)
    vals = np.concatenate([np.abs(E(G[i:i + 50_000])) for i in range(0, G.shape[0], 50_000)])
    best = float(vals.max())
    for i in np.argsort(-vals)[:5]:
        f = lambda x: -abs(float(E(np.clip(x, -reach, reach)[None])[0]))  # noqa: E731
        res = minimize(f, G[i], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-15, "maxiter": 4000})
        best = max(best, -float(res.fun))
    return best


# ---------------------------------------------------------------------------------------------
def test_gradient_matches_central_differences():
    X, db = _setup(3)
    g = np.random.default_rng(1)
    C = g.uniform(-1.2, 1.2, size=(7, 3))
    h = 1e-5
    omega = g.standard_normal((40, 3))
    mu = g.uniform(-0.2, 0.2, size=80)
    for released in (db, random_feature_answers(omega, mu)):
        err = ErrorFunction(X, released, 0.7)
        _, G = err.values_gradients(C)
        fd = np.stack([(err.values(C + h * e) - err.values(C - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
        # central differences err by h²/6·|E'''| + rounding/h: ≪ 1e-7 here
        np.testing.assert_allclose(G, fd, rtol=0, atol=1e-7)
        assert np.abs(G).max() > 1e-3  # not a vacuous comparison



def test_random_feature_value_and_gradient_at_once_are_the_bits_of_value_and_gradient():
    """The search asks the released answer function for value and gradient together (Ωc, cos and sin once): the
    same numbers, to the bit, as the two separate calls, hence the same supremum search (the leaderboard's kept
    class suprema stay valid)."""
    import dataclasses

    X, _ = _setup(3)
    g = np.random.default_rng(4)
    omega = g.standard_normal((300, 3)) / 0.7
    mu = g.uniform(-0.05, 0.05, size=600)
    af = random_feature_answers(omega, mu)
    C = g.uniform(-1.0, 1.0, size=(33, 3))
    v, gr = af.value_and_gradient(C)
    assert v.tobytes() == af.value(C).tobytes() and gr.tobytes() == af.gradient(C).tobytes()
    apart = dataclasses.replace(af, value_and_gradient=None)
    r1 = class_supremum(X, af, 0.7, rng=3, n_random_starts=32, n_data_starts=16, n_synthetic_starts=0)
    r2 = class_supremum(X, apart, 0.7, rng=3, n_random_starts=32, n_data_starts=16, n_synthetic_starts=0)
    assert r1.sup_abs == r2.sup_abs and r1.witness.tobytes() == r2.witness.tobytes()
    assert r1.n_gradients == r2.n_gradients > 0

def test_ascent_matches_refined_fine_grid_d2():
    X, db = _setup(2)
    sigma = 0.3
    r = class_supremum(X, db, sigma, rng=5)
    ref = _refined_grid_max(_error_fn(X, db, sigma), 2, 201)
    assert abs(r.sup_abs - ref) <= 1e-6, (r.sup_abs, ref)
    assert np.all(np.abs(r.witness) <= 1.0) and r.domain == "cube"
    # same seed, same result, bit for bit
    r2 = class_supremum(X, db, sigma, rng=5)
    assert r2.sup_abs == r.sup_abs and np.array_equal(r2.witness, r.witness)


def test_planted_defect_far_from_the_workload_is_found():
    """D̂ = (1 − η)·D + η·δ_z with no data within 0.8 of z: E(c) = η(k(z, c) − K̄_D(c)), so
    η(1 − K̄_D(z)) ≤ sup|E| ≤ η, and K̄_D(z) ≤ e^{−0.8²/(2σ²)} = e^{−8} — the planted error is η within 0.04 %."""
    d, sigma, eta = 4, 0.2, 0.05
    g = np.random.default_rng(2)
    z = np.full(d, 0.9)
    X = g.uniform(-1.0, 1.0, size=(3000, d))
    X = X[np.linalg.norm(X - z, axis=1) > 0.8]
    n = X.shape[0]
    db = WeightedDatabase(points=np.vstack([X, z]), weights=np.append(np.full(n, (1 - eta) / n), eta), m=n + 1)
    wl = GaussianKernelWorkload.generate(200, d, J=10, sigma=sigma, rng=3)
    C = wl.centres.copy()
    far = np.linalg.norm(C - z, axis=-1) < 1.0
    C[far] = -C[far]  # reflect the few centres near z through the origin: every centre is ≥ 1 from z
    wl = GaussianKernelWorkload(centres=C, alphas=wl.alphas, sigma=sigma)
    assert np.linalg.norm(wl.flat_centres - z, axis=1).min() >= 1.0
    wc = worst_case_errors(wl, X, db.points, db.weights)
    assert wc.abs < 0.05 * eta  # the workload's metric misses the defect
    r = class_supremum(X, db, sigma, rng=4, workload_centres=wl.flat_centres)
    assert eta * 0.99 <= r.sup_abs <= eta * (1 + 1e-12)
    assert np.linalg.norm(r.witness - z) < 0.05


@pytest.mark.parametrize("d,points_per_axis", [(2, 201), (3, 31)])
def test_branch_and_bound_interval_contains_the_grid_maximum(d, points_per_axis):
    X, db = _setup(d, seed=d)
    sigma = 0.4
    ref = _refined_grid_max(_error_fn(X, db, sigma), d, points_per_axis)
    r = class_supremum(X, db, sigma, rng=6)
    iv = certify_supremum(X, db, sigma, initial=r, rtol=1e-9, atol=1e-12)
    assert iv.finished and iv.upper is not None and iv.gap <= 1e-9 * iv.lower + 1e-12
    assert iv.lower <= ref + 1e-10 and ref <= iv.upper, (iv.lower, ref, iv.upper)
    # unseeded (the lower bound then comes from the boxes alone), each proven bound on its own and their
    # minimum certify intervals containing it; the Taylor bound closes the gap to 1e-9 (second order)
    for bound, rtol in ((proven_box_bound, 1e-9), (taylor_box_bound, 1e-9), (interval_box_bound, 0.05)):
        iv0 = certify_supremum(X, db, sigma, rtol=rtol, atol=1e-12, n_groups=256, box_bound=bound)
        assert iv0.finished and iv0.lower <= ref + 1e-10 and ref <= iv0.upper, (bound.__name__, iv0.lower, ref,
                                                                                 iv0.upper)
    # negative control: a bound that ignores the variation inside a box (too tight) is caught — its interval
    # misses the grid maximum
    wrong = certify_supremum(X, db, sigma, rtol=1e-9, atol=1e-12, box_bound=lambda b: np.abs(b.value))
    assert wrong.finished and wrong.upper < ref - 5e-4, (wrong.upper, ref)


def test_branch_and_bound_needs_the_curvature_term():
    """D̂ = {±0.3}, D = {±0.35}, σ = 0.1: E is even (∇E(0) = 0, E(0) small) and peaks at |c| ≈ 0.22, inside the
    half of the root box that its first split cuts through. A first-order bound (no curvature term) prunes the
    root box and misses the peak; the proven bounds do not."""
    X = np.array([[-0.35], [0.35]])
    db = WeightedDatabase(points=np.array([[-0.3], [0.3]]), weights=np.array([0.5, 0.5]), m=2)
    sigma = 0.1
    ref = _refined_grid_max(_error_fn(X, db, sigma), 1, 20_001)
    for bound in (proven_box_bound, taylor_box_bound):
        iv = certify_supremum(X, db, sigma, rtol=1e-9, atol=1e-12, box_bound=bound)
        assert iv.finished and iv.lower <= ref + 1e-10 and ref <= iv.upper, (bound.__name__, iv.lower, ref, iv.upper)
    first_order = certify_supremum(X, db, sigma, rtol=1e-9, atol=1e-12,
                                   box_bound=lambda b: np.abs(b.value) + np.sum(np.abs(b.gradient) * b.half, axis=1))
    assert first_order.finished and first_order.upper < 0.5 * ref


def test_branch_and_bound_budget_reports_lower_bound_only():
    X, db = _setup(3, seed=3)
    iv = certify_supremum(X, db, 0.4, max_boxes=10, rtol=0.0, atol=0.0)
    assert not iv.finished and iv.upper is None and iv.gap is None and "lower bound only" in iv.status
    assert iv.lower > 0 and iv.unfinished_upper >= iv.lower
    # d = 8 at a small width (exponents far beyond float64's exp range on the cube) still gives its bounds
    X8, db8 = _setup(8, n=50, s=10, seed=4)
    r8 = class_supremum(X8, db8, 0.1, rng=1)
    iv8 = certify_supremum(X8, db8, 0.1, initial=r8, max_boxes=2000)
    assert iv8.lower >= r8.sup_abs - r8.numerical_bound and np.isfinite(iv8.unfinished_upper)
    assert iv8.unfinished_upper >= r8.sup_abs and (not iv8.finished or iv8.upper >= r8.sup_abs)


def _reference_bound(P: np.ndarray, w: np.ndarray, c: np.ndarray, sigma: float, value: float) -> float:
    """Rounding bound of answer_reference's float64 sum Σ w_i exp(−‖p_i − c‖²/(2σ²)) (non-negative terms:
    kernel values as in the module's bound, then a length-n dot product, γ_n)."""
    x = float((((P - c) ** 2).sum(1)).max() / (2 * sigma**2))
    u = UNIT_ROUNDOFF_F64
    rho = compound(math.expm1(gamma(P.shape[1] + 5, u) * x), 2 * EXP_ULP_F64 * u, gamma(P.shape[0] + 2, u))
    return rho * abs(value)


def test_witness_reevaluated_by_the_reference_evaluator():
    X, db = _setup(3, seed=7)
    sigma = 0.5
    r = class_supremum(X, db, sigma, rng=8)
    wl = GaussianKernelWorkload(centres=np.asarray(r.witness)[None, None, :], alphas=np.ones((1, 1)), sigma=sigma)
    a = float(answer_reference(wl, db.points, weights=db.weights)[0])
    t = float(answer_reference(wl, X)[0])
    tol = r.numerical_bound + _reference_bound(db.points, db.weights, r.witness, sigma, a) \
        + _reference_bound(X, np.full(len(X), 1 / len(X)), r.witness, sigma, t) + UNIT_ROUNDOFF_F64 * abs(a - t)
    assert abs((a - t) - r.signed_error) <= tol, (a - t, r.signed_error, tol)
    assert abs(abs(a - t) - r.sup_abs) <= tol
    assert r.truth == pytest.approx(t, abs=tol) and r.witness_rel == pytest.approx(r.sup_abs / r.truth, rel=1e-12)
    assert 0 < r.numerical_bound < 1e-12


def test_kernel_embedding_release_answers_every_centre():
    g = np.random.default_rng(9)
    X = np.clip(0.4 * g.standard_normal((150, 3)), -1.0, 1.0)
    wl = GaussianKernelWorkload.generate(30, 3, J=4, sigma=1.0, rng=3)
    rel = KMEAnswers(epsilon=1.0, delta=1e-3, sigma=1.0, n_features=64, precision="float64").release(
        X, rng=4, workload=wl)
    r = class_supremum(X, rel, 1.0, rng=1)
    assert r.applicable
    one = GaussianKernelWorkload(centres=np.asarray(r.witness)[None, None, :], alphas=np.ones((1, 1)), sigma=1.0)
    a, _ = embedding_answers(one, rel.diagnostics.omega, rel.diagnostics.noisy_embedding, precision="float64")
    t = float(answer_reference(one, X)[0])
    assert abs((float(a[0]) - t) - r.signed_error) <= 1e-12
    # the release's own answers are mixtures of single-kernel answers: none exceeds the supremum
    truth = answer_reference(wl, X)
    assert np.abs(rel.answers - truth).max() <= r.sup_abs + 1e-12
    with pytest.raises(ValueError, match="domain='space'"):
        class_supremum(X, rel, 1.0, rng=1, domain="space")


def test_centre_outside_the_cube_dipole():
    """D = {1}, D̂ = {0.9}, σ = 4: |E| peaks near c = 0.95 ± σ, outside the cube; the cube's best is ~30 % lower."""
    X = np.array([[1.0]])
    db = WeightedDatabase(points=np.array([[0.9]]), weights=np.array([1.0]), m=1)
    sigma = 4.0
    E = _error_fn(X, db, sigma)
    cs = np.linspace(-40, 40, 800_001)[:, None]
    true_sup = float(np.abs(E(cs)).max())
    cube = class_supremum(X, db, sigma, rng=1)
    space = class_supremum(X, db, sigma, rng=1, domain="space")
    assert abs(space.sup_abs - true_sup) <= 1e-9 and abs(abs(space.witness[0] - 0.95) - sigma) < 0.05
    assert cube.witness[0] == -1.0 and 0.6 < cube.sup_abs / space.sup_abs < 0.8
    assert space.reach >= 1 + sigma * math.sqrt(2 * math.log(1 / space.sup_abs)) - 1e-9
    iv = certify_supremum(X, db, sigma, initial=space, domain="space")
    assert iv.finished and iv.lower <= true_sup + 1e-12 <= iv.upper + 1e-12
    # on the cube the maximum sits on the boundary, where ∇E ≠ 0: the bound's first-order term is needed
    cube_sup = abs(float(E(np.array([[-1.0]]))[0]))
    iv = certify_supremum(X, db, sigma, rtol=1e-9, atol=1e-13, box_bound=taylor_box_bound)
    assert iv.finished and iv.lower <= cube_sup + 1e-13 and cube_sup <= iv.upper, (iv.lower, cube_sup, iv.upper)


def test_direct_answering_is_not_applicable():
    g = np.random.default_rng(0)
    X = g.uniform(-1, 1, size=(100, 2))
    wl = GaussianKernelWorkload.generate(20, 2, J=3, sigma=1.0, rng=1)
    rel = DirectAnswering(epsilon=1.0, delta=0.0, noise="laplace_I").release(X, rng=2, workload=wl)
    assert isinstance(released_answers(rel), str)
    r = class_supremum(X, rel, 1.0, rng=3)
    assert not r.applicable and r.sup_abs is None and r.witness is None and r.signed_error is None
    assert "direct-laplace_I" in r.reason and "only" in r.reason
    with pytest.raises(ValueError, match="weighted database"):
        certify_supremum(X, rel, 1.0)


def test_parameters_are_validated():
    X, db = _setup(2)
    with pytest.raises(ValueError, match="domain"):
        class_supremum(X, db, 0.5, domain="ball")
    with pytest.raises(ValueError, match="n_ascents"):
        class_supremum(X, db, 0.5, n_ascents=0)
    with pytest.raises(ValueError, match="cube"):
        class_supremum(X * 2, db, 0.5)
    X9, db9 = _setup(9)
    with pytest.raises(ValueError, match="d"):
        certify_supremum(X9, db9, 0.5)
    assert isinstance(BoxData, type)
