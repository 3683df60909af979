"""Tests of the low-rank exact-answer path (dpkit.queries.lowrank, .exact) against the float64 reference.

Every comparison asserts the *proven* bound: the observed error of each answer against
``answer_reference`` (straightforward float64, error ~1e-15) is at most the reported bound.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from dpkit.queries.accurate import (
    EXP_ULP_F64,
    Augmented,
    kernel_mean_norm_sq,
    kernel_value_bound,
    weighted_kernel_sums,
)
from dpkit.queries.certificate import PrefixQuadratic, lambda_min_lower
from dpkit.queries.evaluate import answer_reference
from dpkit.queries.exact import cache_info, clear_cache, data_hash, exact_answers
from dpkit.queries.lowrank import FitOptions, KernelEmbedding
from dpkit.queries.workload import GaussianKernelWorkload

SMALL = FitOptions(pool_data=600, pool_cube=600, max_rank=900, max_prefix=96)
REF_ERR = 1e-13  # allowance for the float64 reference's own rounding (its error is ~1e-15)


def _data(n: int, d: int, seed: int) -> np.ndarray:
    """Clustered rows on a 0.05 grid in [-1, 1]^d: duplicates, like the discretised UCI data."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-0.8, 0.8, size=(6, d))
    X = centres[rng.integers(0, 6, n)] + 0.25 * rng.normal(size=(n, d))
    return np.clip(np.round(X * 20) / 20, -1, 1)


def _workload_at(centres: np.ndarray, sigma: float, seed: int = 0) -> GaussianKernelWorkload:
    """A workload whose queries use the given centres (J per query, Dirichlet weights)."""
    Q, J, _ = centres.shape
    alphas = np.random.default_rng(seed).dirichlet(np.ones(J), size=Q)
    return GaussianKernelWorkload(centres=centres, alphas=alphas / alphas.sum(axis=1, keepdims=True), sigma=sigma)


@pytest.fixture(scope="module")
def fitted() -> tuple[np.ndarray, KernelEmbedding]:
    X = _data(2500, 4, seed=0)
    return X, KernelEmbedding.fit(X, 2.0, options=SMALL)


# --------------------------------------------------------------------------- the bound holds
@pytest.mark.parametrize("sigma, seed", [(1.5, 1), (2.0, 2), (4.0, 3)])
def test_answers_within_proven_bound_on_random_subsets(sigma, seed):
    rng = np.random.default_rng(seed)
    full = _data(4000, 4, seed=seed)
    X = full[rng.choice(len(full), 2500, replace=False)]  # a random subset of rows (with duplicates)
    emb = KernelEmbedding.fit(X, sigma, options=SMALL)
    wl = GaussianKernelWorkload.generate(120, 4, sigma=sigma, rng=seed)
    sub = wl.subset(np.sort(rng.choice(120, 60, replace=False)))
    ans, bound = emb.answer(sub)
    err = np.abs(ans - answer_reference(sub, X))
    assert np.all(err <= bound + REF_ERR)
    assert bound.max() <= 1e-6  # the fit targets tol = 1e-6
    assert emb.rank < len(np.unique(X, axis=0))  # it is a compression
    res = exact_answers(wl, X, method="lowrank", embedding=emb)
    assert res.method == "lowrank" and res.max_bound <= 1e-6
    assert np.all(np.abs(res.answers - answer_reference(wl, X)) <= res.bounds + REF_ERR)


def test_adversarial_centres(fitted):
    """Cube corners, points far outside the cube, the landmarks and data rows themselves."""
    X, emb = fitted
    corners = np.array(list(itertools.product([-1.0, 1.0], repeat=4)))
    far = np.array([[3.0, -3.0, 3.0, -3.0], [5.0, 5.0, 5.0, 5.0], [-2.5, 0.0, 0.0, 2.5], [0.0, 0.0, 4.0, 0.0]])
    C = np.vstack([corners, far, emb.landmarks[:8], X[:8]])  # 36 centres
    wl = _workload_at(C.reshape(9, 4, 4), emb.sigma)
    ans, bound = emb.answer(wl)
    err = np.abs(ans - answer_reference(wl, X))
    assert np.all(err <= bound + REF_ERR)
    # single centres too (J = 1: no averaging over the mixture)
    wl1 = _workload_at(C.reshape(36, 1, 4), emb.sigma)
    ans1, bound1 = emb.answer(wl1)
    ref1 = answer_reference(wl1, X)
    assert np.all(np.abs(ans1 - ref1) <= bound1 + REF_ERR)
    # far outside the cube the prefix W does not help (e_W → 1): the bound is ‖g‖ > tol there,
    # so the entry point recomputes those answers exactly; all others keep the low-rank answer
    res = exact_answers(wl1, X, embedding=emb)
    assert res.n_fallback == len(far) and np.all(bound1[16:20] > bound1[:16].max())
    assert res.max_bound <= 1e-6 and np.all(np.abs(res.answers - ref1) <= res.bounds + REF_ERR)


# --------------------------------------------------------------------------- the bound is not vacuous
def _without_landmark(emb: KernelEmbedding, j: int) -> tuple[np.ndarray, np.ndarray]:
    keep = np.arange(emb.rank) != j
    return emb.landmarks[keep], emb.beta[keep]


def test_dropping_a_pivot_breaks_the_stale_certificate(fitted):
    """Drop one landmark (and its coefficient) but keep the old certificate: the check must fail."""
    X, emb = fitted
    j = int(np.argmax(np.abs(emb.beta)))
    Z, beta = _without_landmark(emb, j)
    broken = dataclasses.replace(emb, landmarks=Z, beta=beta, n_prefix=min(emb.n_prefix, j))
    C = emb.landmarks[j] + np.linspace(-0.05, 0.05, 8)[:, None]  # near the dropped pivot
    wl = _workload_at(C.reshape(8, 1, 4), emb.sigma)
    ans, bound = broken.answer(wl)
    err = np.abs(ans - answer_reference(wl, X))
    assert np.any(err > bound)  # the stale bound no longer holds: the check catches the damage


def test_dropping_a_pivot_and_recertifying_triggers_the_fallback(fitted):
    X, emb = fitted
    j = int(np.argmax(np.abs(emb.beta)))
    Z, beta = _without_landmark(emb, j)
    rp = min(emb.n_prefix, j)
    broken = KernelEmbedding.from_landmarks(X, emb.sigma, Z, n_prefix=rp, beta=beta)
    assert broken.mmd > 100 * emb.mmd  # the certificate sees the missing pivot
    wl = GaussianKernelWorkload.generate(40, 4, sigma=emb.sigma, rng=5)
    res = exact_answers(wl, X, embedding=broken)
    assert res.n_fallback == 40  # every answer's bound exceeded tol: all recomputed exactly
    assert res.max_bound <= 1e-6
    assert np.all(np.abs(res.answers - answer_reference(wl, X)) <= res.bounds + REF_ERR)
    # with the coefficients re-solved the reduced set is certified again, less tightly
    resolved = KernelEmbedding.from_landmarks(X, emb.sigma, Z, n_prefix=rp)
    assert emb.mmd <= resolved.mmd < broken.mmd


def test_perturbed_coefficient_grows_the_bound(fitted):
    X, emb = fitted
    beta = emb.beta.copy()
    beta[0] += 1e-4
    bad = KernelEmbedding.from_landmarks(X, emb.sigma, emb.landmarks, n_prefix=emb.n_prefix, beta=beta)
    assert bad.mmd > 1e-5  # ≥ ‖1e-4·k(z_0, ·)‖ minus the old residual
    wl = GaussianKernelWorkload.generate(30, 4, sigma=emb.sigma, rng=6)
    ans, bound = bad.answer(wl)
    assert np.all(np.abs(ans - answer_reference(wl, X)) <= bound + REF_ERR)


# --------------------------------------------------------------------------- the entry point
def test_exact_answers_methods_and_auto():
    X = _data(800, 3, seed=7)
    wl = GaussianKernelWorkload.generate(50, 3, sigma=2.0, rng=8)
    ref = answer_reference(wl, X)
    auto = exact_answers(wl, X)  # small data: the evaluator is cheaper than any fit
    assert auto.method == "exact" and auto.rank == 0 and auto.n_fallback == 0
    for res in (auto, exact_answers(wl, X, method="exact"), exact_answers(wl, X, method="lowrank", options=SMALL)):
        assert res.max_bound <= 1e-6
        assert np.all(np.abs(res.answers - ref) <= res.bounds + REF_ERR)
    lr = exact_answers(wl, X, method="lowrank", options=SMALL, cache=False)
    assert lr.method == "lowrank" and lr.rank > 0 and set(lr.seconds) == {"fit", "answer", "fallback", "total"}
    assert set(lr.as_dict()) >= {"method", "max_bound", "rank", "n_fallback", "seconds"}


def test_auto_picks_lowrank_where_it_pays():
    clear_cache()
    X = _data(4500, 3, seed=15)
    wl = GaussianKernelWorkload.generate(400, 3, sigma=4.0, rng=16)
    res = exact_answers(wl, X, options=SMALL)  # 4,500 rows, 4,000 centres: the fit is cheaper than one exact pass
    assert res.method == "lowrank" and 0 < res.rank < 500 and res.max_bound <= 1e-6
    assert np.all(np.abs(res.answers - answer_reference(wl, X)) <= res.bounds + REF_ERR)
    clear_cache()


def test_cache_reuses_the_embedding_bit_for_bit():
    clear_cache()
    X = _data(900, 3, seed=9)
    wl = GaussianKernelWorkload.generate(30, 3, sigma=3.0, rng=10)
    a = exact_answers(wl, X, method="lowrank", options=SMALL)
    b = exact_answers(wl, X, method="lowrank", options=SMALL)
    assert not a.cached and b.cached and b.seconds["fit"] == 0.0
    assert a.answers.tobytes() == b.answers.tobytes()
    exact_answers(GaussianKernelWorkload.generate(5, 3, sigma=2.0, rng=0), X, method="lowrank", options=SMALL)
    assert [e["sigma"] for e in cache_info()] == [3.0, 2.0]
    # same seed, no cache: the same landmarks and answers again
    c = exact_answers(wl, X, method="lowrank", options=SMALL, cache=False)
    assert c.answers.tobytes() == a.answers.tobytes()
    X2 = X.copy()
    X2[0, 0] = np.nextafter(X2[0, 0], 2.0)
    assert data_hash(X) == data_hash(X.copy()) != data_hash(X2)
    assert data_hash(X) != data_hash(X.reshape(-1, 1))
    clear_cache()
    assert cache_info() == []


def test_bad_inputs(fitted):
    X, emb = fitted
    wl = GaussianKernelWorkload.generate(3, 4, sigma=3.0, rng=0)
    with pytest.raises(ValueError, match="sigma"):
        emb.answer(wl)
    with pytest.raises(ValueError, match="columns"):
        emb.kernel_means(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="method"):
        exact_answers(wl, X, method="fast")
    with pytest.raises(ValueError, match="tol"):
        exact_answers(wl, X, tol=0.0)
    with pytest.raises(ValueError, match="columns"):
        exact_answers(wl, X[:, :3])
    with pytest.raises(ValueError, match="embedding"):
        exact_answers(wl, X, embedding=emb)  # fitted at σ = 2
    with pytest.raises(ValueError, match="underflow"):
        kernel_value_bound(4, 0.01, 2.0, 2.0)
    with pytest.raises(ValueError, match="prefix_diag"):
        FitOptions(prefix_diag=0.0)
    with pytest.raises(ValueError, match="max_rank"):
        FitOptions(max_rank=0)
    with pytest.raises(ValueError, match="n_prefix"):
        KernelEmbedding.from_landmarks(X, 2.0, emb.landmarks, n_prefix=emb.rank + 1)


def test_threads_do_not_change_a_bit(fitted):
    """Centre blocks are independent and summed in a fixed order: any worker count, same bits."""
    _, emb = fitted
    C = np.random.default_rng(14).uniform(-1, 1, (1500, 4))
    a, ba = emb.kernel_means(C, n_threads=1)
    b, bb = emb.kernel_means(C, n_threads=2)
    assert a.tobytes() == b.tobytes() and ba.tobytes() == bb.tobytes()


# --------------------------------------------------------------------------- the certificate's parts
def test_numpy_float64_exp_within_assumed_ulps():
    """The kernel-value bound assumes numpy's float64 exp errs by ≤ EXP_ULP_F64 ulp on [-700, 0]."""
    x = np.linspace(-700.0, 0.0, 400_001)
    got = np.exp(x).astype(np.longdouble)
    exact = np.exp(x.astype(np.longdouble))  # 64-bit mantissa: resolves float64 errors to 1/2048 ulp
    ulp = np.spacing(np.exp(x)).astype(np.longdouble)
    assert float(np.max(np.abs(got - exact) / ulp)) <= EXP_ULP_F64


def test_accurate_sums_within_their_bounds():
    rng = np.random.default_rng(11)
    P, C = rng.uniform(-1, 1, (300, 3)), rng.uniform(-1.5, 1.5, (40, 3))
    w = rng.uniform(0.1, 1.0, 300)
    w /= w.sum()
    Pl, Cl, wl, s = P.astype(np.longdouble), C.astype(np.longdouble), w.astype(np.longdouble), 1 / (2 * np.longdouble(1.3) ** 2)
    Kc = np.exp(-s * ((Cl[:, None, :] - Pl[None, :, :]) ** 2).sum(-1))
    Kp = np.exp(-s * ((Pl[:, None, :] - Pl[None, :, :]) ** 2).sum(-1))
    sums, rho = weighted_kernel_sums(Augmented(C, 1.3), Augmented(P, 1.3), w, 1.3)
    true = Kc @ wl
    assert np.all(np.abs(sums - true) <= rho * true) and rho < 1e-13
    nsq, rho2 = kernel_mean_norm_sq(Augmented(P, 1.3), w, 1.3)
    true2 = wl @ Kp @ wl
    assert abs(nsq - true2) <= rho2 * true2 and rho2 < 1e-13


def test_lambda_min_and_power_function_bounds():
    rng = np.random.default_rng(12)
    W = rng.uniform(-1, 1, (12, 3))
    aug = Augmented(W, 1.0)
    K = np.exp(-((W[:, None] - W[None]) ** 2).sum(-1) / 2.0)
    rho = kernel_value_bound(3, 1.0, aug.max_norm, aug.max_norm)
    lam = lambda_min_lower(K, rho)
    assert 0.0 < lam <= np.linalg.eigvalsh(K)[0] and lam > 0.4 * np.linalg.eigvalsh(K)[0]
    assert lambda_min_lower(np.ones((3, 3)), rho) == 0.0  # singular: no certificate
    pq = PrefixQuadratic.build(K, rho)
    C = rng.uniform(-1.5, 1.5, (50, 3))
    Kc = np.exp(-((C[:, None] - W[None]) ** 2).sum(-1) / 2.0)
    Kl = Kc.astype(np.longdouble)
    e_true = 1 - np.einsum("ij,ij->i", Kl, np.linalg.solve(K, Kc.T).T.astype(np.longdouble))
    e_up = pq.power_bound(Kc, rho)
    assert np.all(e_up >= e_true.astype(float) - 1e-12) and np.all(e_up <= e_true.astype(float) + 1e-6)
    assert math.isfinite(pq.slope(rho)) and pq.slope(rho) < 1e-9


# --------------------------------------------------------------------------- one realistic case
@pytest.mark.slow
def test_csn_realistic():
    import warnings

    from dpkit.core.exceptions import PrivacyLeakWarning
    from dpkit.data import load

    with warnings.catch_warnings():  # data-derived rescaling bounds: irrelevant to this numerical test
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        X = load("CSN").X
    wl = GaussianKernelWorkload.generate(200, X.shape[1], sigma=4.0, rng=13)
    res = exact_answers(wl, X, method="lowrank", cache=False)
    ref = answer_reference(wl.subset(slice(0, 20)), X)
    assert res.max_bound <= 1e-6 and res.rank < 2_000
    assert np.all(np.abs(res.answers[:20] - ref) <= res.bounds[:20] + REF_ERR)


def test_auto_takes_the_same_path_cold_and_warm():
    """auto's choice depends on the data's size and the workload, never on what happens to be cached: the same call
    gives the same bits whether or not another call (here a forced low-rank one) left an embedding in the cache."""
    clear_cache()
    X = _data(900, 3, seed=11)
    wl = GaussianKernelWorkload.generate(40, 3, sigma=3.0, rng=12)
    cold = exact_answers(wl, X, options=SMALL)
    forced = exact_answers(wl, X, method="lowrank", options=SMALL)  # caches the embedding of (X, σ, SMALL)
    warm = exact_answers(wl, X, options=SMALL)
    assert forced.method == "lowrank" and cold.method == warm.method == "exact"
    assert cold.answers.tobytes() == warm.answers.tobytes() and cold.bounds.tobytes() == warm.bounds.tobytes()
    clear_cache()


def test_fit_is_the_same_bits_with_any_blas_threads():
    """The fit holds BLAS and LAPACK to one thread: the caller's BLAS threads (one in a batch task, every core in a
    notebook) change no bit of the coefficients, the certificates or the answers. With a threaded BLAS the greedy's
    products and the Cholesky solve of ``β`` otherwise split their sums by the thread count (seen on PKS, σ = 6: kernel
    means moved by ~1e-13)."""
    from threadpoolctl import threadpool_limits

    X = _data(6000, 8, seed=21)
    C = np.random.default_rng(22).uniform(-1, 1, (500, 8))
    fits = []
    for blas, workers in ((1, 1), (2, 2), (4, 1)):
        with threadpool_limits(limits=blas, user_api="blas"):
            emb = KernelEmbedding.fit(X, 3.0, n_threads=workers)
            fits.append((emb.beta.tobytes(), emb.mmd, emb.eps_prefix, emb.kernel_means(C)[0].tobytes()))
    assert fits[0] == fits[1] == fits[2]
