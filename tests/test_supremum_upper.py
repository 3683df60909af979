"""The certified upper bound on the class supremum (dpkit.queries.supremum_upper.sup_upper).

The bound against the search's witness on random releases over d, σ and sizes (and against the
error at random centres in and outside the cube, and the workload's worst mixture error); the exact
one-point case (the supremum from a scalar equation, the MMD in closed form); the rounding bound
where the release equals the data up to an ulp; negative controls (a wrong σ, no self-term, the
norms without the cross term, no rounding bound) that fall below a witness or the true value; the
low-rank side (triangle inequality) against the exact side; the self-term's disk cache; the
tighter of the MMD and the branch and bound; releases without a weighted database.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import brentq

from dpkit.methods.direct import DirectAnswering
from dpkit.methods.kme import KMEAnswers
from dpkit.queries import disk_cache
from dpkit.queries.accurate import compound, kernel_value_bound
from dpkit.queries.evaluate import worst_case_errors
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64, gamma
from dpkit.queries.supremum import class_supremum
from dpkit.queries.supremum_upper import clear_self_term_cache, data_self_term, mmd_upper, sup_upper
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload

_U = UNIT_ROUNDOFF_F64


def _release(d: int, n: int, s: int, seed: int, shift: float = 0.3) -> tuple[np.ndarray, WeightedDatabase]:
    """Data around 0.2 and a synthetic database around 0.2 − shift with Dirichlet weights."""
    g = np.random.default_rng(seed)
    X = np.clip(g.normal(0.2, 0.4, size=(n, d)), -1.0, 1.0)
    S = np.clip(g.normal(0.2 - shift, 0.5, size=(s, d)), -1.0, 1.0)
    return X, WeightedDatabase(points=S, weights=g.dirichlet(np.ones(s)), m=s)


def _errors(X: np.ndarray, db: WeightedDatabase, sigma: float, C: np.ndarray) -> np.ndarray:
    """Plain float64 E(C) by broadcasting (independent of the module)."""
    def k(P, w):
        sq = ((C[:, None, :] - P[None, :, :]) ** 2).sum(-1)
        return np.exp(-sq / (2.0 * sigma**2)) @ w
    return k(db.points, db.weights) - k(X, np.full(X.shape[0], 1.0 / X.shape[0]))


def _witness_lower(found) -> float:
    """The search's certified lower bound on the supremum."""
    return float(found.sup_abs) - float(found.numerical_bound)


# ---------------------------------------------------------------------------------------------
# the bound holds
# ---------------------------------------------------------------------------------------------
CASES = [(d, sigma, n, s) for d in (1, 2, 4, 8, 16) for sigma in (0.3, 1.0, 4.0) for n, s in ((40, 5), (300, 60))]


@pytest.mark.parametrize("d,sigma,n,s", CASES)
def test_bound_is_at_least_the_witness_on_random_releases(d, sigma, n, s):
    """Property: upper ≥ the search's certified witness (over R^d and over the cube), ≥ |E| at random centres in
    and far outside the cube, ≥ the workload's worst mixture error; and never more than the MMD's own
    rounding above the computed MMD."""
    seed = 1000 * d + int(10 * sigma) + n
    X, db = _release(d, n, s, seed)
    r = sup_upper(X, db, sigma, certify="never")
    assert r.applicable and r.bound == "mmd" and r.data_side == "exact" and r.upper == r.mmd_upper
    for domain in ("space", "cube"):
        found = class_supremum(X, db, sigma, rng=seed, domain=domain)
        assert _witness_lower(found) <= r.upper, (domain, found.sup_abs, r.upper)
    g = np.random.default_rng(seed + 1)
    C = np.vstack([g.uniform(-1, 1, size=(400, d)), g.uniform(-1 - 3 * sigma, 1 + 3 * sigma, size=(400, d))])
    assert float(np.abs(_errors(X, db, sigma, C)).max()) <= r.upper
    wl = GaussianKernelWorkload.generate(200, d, J=3, sigma=sigma, rng=seed + 2)
    assert worst_case_errors(wl, X, db.points, db.weights).abs <= r.upper
    # the bound exceeds the computed MMD by its rounding only: upper² ≤ est + err (with the formula's slack)
    assert r.upper**2 <= (r.mmd_estimate**2 + r.rounding_bound) * (1 + 1e-10) + 1e-300
    assert 0 < r.rounding_bound < 1e-12


def test_bound_is_the_same_for_the_cube_and_branch_and_bound_tightens_it_where_it_finishes():
    """d = 1: the branch and bound finishes and is tighter than the MMD (returned, named); without it the MMD."""
    X, db = _release(1, 200, 20, seed=3)
    mmd = sup_upper(X, db, 1.0, certify="never")
    for domain in ("space", "cube"):
        found = class_supremum(X, db, 1.0, rng=4, domain=domain)
        r = sup_upper(X, db, 1.0, domain=domain, initial=found)
        assert r.mmd_upper == mmd.upper
        assert r.certified_finished and r.bound == "branch-and-bound" and r.upper == r.certified_upper < r.mmd_upper
        assert _witness_lower(found) <= r.upper <= found.sup_abs * (1 + 2e-3)
    with pytest.raises(ValueError, match="certify='always' needs d <= 8"):
        sup_upper(*_release(9, 50, 5, seed=1), 1.0, certify="always")


# ---------------------------------------------------------------------------------------------
# exact cases
# ---------------------------------------------------------------------------------------------
def _one_point_supremum(delta: float, sigma: float) -> float:
    """sup_c |k(y, c) − k(x, c)| for ‖x − y‖ = δ: on the line through x and y (a centre off it scales both kernels
    by the same factor ≤ 1), with a = δ/2 and t the coordinate from the midpoint,
    E(t) = −2 e^{−(t² + a²)/(2σ²)} sinh(at/σ²), largest where t = a·coth(at/σ²) (t > a)."""
    a = delta / 2
    f = lambda t: t * math.tanh(a * t / sigma**2) - a  # noqa: E731  (≤ 0 at t = a, > 0 at the upper end)
    t = a if f(a) >= 0 else brentq(f, a, a + 2 * sigma + sigma**2 / a, xtol=1e-15, rtol=1e-15)
    return 2 * math.exp(-(t * t + a * a) / (2 * sigma**2)) * math.sinh(a * t / sigma**2)


@pytest.mark.parametrize("delta,sigma", [(0.01, 1.0), (0.2, 2.0), (1.0, 0.5), (2.0, 0.3), (0.5, 4.0)])
def test_one_point_against_one_point(delta, sigma):
    """D = {x}, D̂ = {y}: MMD = √(2 − 2e^{−δ²/(2σ²)}) in closed form, the supremum from a scalar equation; the
    bound is the MMD to its rounding, and the ratio MMD/sup lies between √2 (far apart) and √e (a dipole)."""
    mid = np.array([[0.1, -0.2, 0.3]])
    direction = np.array([2.0, -1.0, 2.0]) / 3.0  # a unit vector: x and y about δ apart, both in the cube
    x, y = mid - delta / 2 * direction, mid + delta / 2 * direction
    delta_exact = float(np.linalg.norm(y - x))
    db = WeightedDatabase(points=y, weights=np.array([1.0]), m=1)
    mmd = math.sqrt(-2.0 * math.expm1(-delta_exact**2 / (2 * sigma**2)))
    sup = _one_point_supremum(delta_exact, sigma)
    r = sup_upper(x, db, sigma, certify="never")
    assert mmd <= r.upper <= math.sqrt(mmd**2 + 2 * _rounding_cap(3, sigma)) * (1 + 1e-9), (mmd, r.upper)
    assert math.sqrt(2) - 1e-9 <= mmd / sup <= math.sqrt(math.e) + 1e-9
    found = class_supremum(x, db, sigma, rng=1, domain="space")
    assert abs(found.sup_abs - sup) <= 1e-9 * sup, (found.sup_abs, sup)


def test_one_point_limits_of_the_ratio():
    """The ratio MMD/sup of one point against one point tends to √e as δ → 0 and to √2 as δ → ∞."""
    sigma = 1.0
    small = math.sqrt(-2.0 * math.expm1(-1e-6**2 / 2)) / _one_point_supremum(1e-6, sigma)
    large = math.sqrt(2.0 - 2.0 * math.exp(-(12.0**2) / 2)) / _one_point_supremum(12.0, sigma)
    assert abs(small - math.sqrt(math.e)) < 1e-6 and abs(large - math.sqrt(2)) < 1e-6


# ---------------------------------------------------------------------------------------------
# rounding
# ---------------------------------------------------------------------------------------------
def _rounding_cap(d: int, sigma: float) -> float:
    """A-priori cap on the rounding bound ``err`` for points in the cube: (A + 2B + C)·ρ' + u|est| with
    A + 2B + C ≤ 4 and ρ the accurate sums' bound (kernel values, trees of height ≤ 60, products, fsum)."""
    rho = compound(kernel_value_bound(d, sigma, math.sqrt(d), math.sqrt(d)), gamma(66, _U), 4 * _U)
    return 5.0 * rho / (1.0 - rho) * (1 + 1e-9)


def test_mmd_upper_covers_the_exact_value_of_its_terms_in_rationals():
    """mmd_upper's err against exact rational arithmetic: computed terms Â, B̂, Ĉ whose exact values A, B, C differ by
    up to their relative bounds (|Â − A| ≤ ρ·A: here A = Â/(1 + θ), |θ| ≤ ρ), the three almost cancelling; the exact
    A − 2B + C is always within err of est and below upper². With ρ = 0 only the correctly rounded sum's u|est| is
    left, and it is needed where the terms differ in size (dropping it leaves exact values outside)."""
    g = np.random.default_rng(7)
    outside_without_u = 0
    for i in range(400):
        base = g.uniform(0.2, 1.0)
        if i % 2:  # almost cancelling (the difference is then exact in float64)
            A, B, C = base + g.uniform(-1e-9, 1e-9), base + g.uniform(-1e-9, 1e-9), base + g.uniform(-1e-9, 1e-9)
        else:  # terms of different sizes (the sum is rounded)
            A, B, C = base, g.uniform(0.0, 0.5 * base), g.uniform(0.0, 1e-3)
        rho = float(g.choice([0.0, 1e-15, 1e-13]))
        ex = []
        for v in (A, B, C):
            theta = Fraction(float(g.uniform(-rho, rho))) if rho else Fraction(0)
            ex.append(Fraction(v) / (1 + theta))  # Â = A(1 + θ)
        exact = ex[0] - 2 * ex[1] + ex[2]
        est, err, upper = mmd_upper(A, rho, B, rho, C, rho)
        assert abs(Fraction(est) - exact) <= Fraction(err)
        assert Fraction(upper) ** 2 >= exact
        if rho == 0.0:
            outside_without_u += Fraction(est) != exact
    assert outside_without_u > 0


@pytest.mark.parametrize("sigma", [0.5, 2.0])
def test_one_point_shifted_by_an_ulp(sigma):
    """D̂ = D moved by one ulp: the true MMD ≈ 5·10⁻¹⁷/σ; the computed terms cancel to 0 exactly, so without its
    rounding bound the MMD bound would be 0, below the truth; with it the bound is ≥ the truth, ≥ 0 and tiny."""
    x = np.array([[0.3, -0.7]])
    y = np.array([[np.nextafter(0.3, 1.0), -0.7]])
    delta = float(y[0, 0] - x[0, 0])  # exact (Sterbenz)
    true = math.sqrt(-2.0 * math.expm1(-delta**2 / (2 * sigma**2)))
    r = sup_upper(x, WeightedDatabase(points=y, weights=np.array([1.0]), m=1), sigma, certify="never")
    A, B, C = r.terms
    assert math.fsum([A, -2 * B, C]) <= 0.0 < true  # the float64 MMD² alone is no bound here
    est, err, upper = mmd_upper(A, 0.0, B, 0.0, C, 0.0)  # mutation: no rounding bound
    assert upper < true
    assert true <= r.upper <= math.sqrt(2 * _rounding_cap(2, sigma)), (true, r.upper)


def test_release_equal_to_the_data_up_to_an_ulp_of_the_weights():
    """D̂ = the data's rows with weights 1/n ± an ulp: the true MMD² = Δwᵀ K Δw (Δw exact, ~10⁻¹⁹) is far below
    float64's resolution of the terms; the bound stays ≥ it, ≥ 0, and within the a-priori rounding cap."""
    d, n, sigma = 4, 60, 1.0
    g = np.random.default_rng(5)
    X = np.clip(g.normal(0.0, 0.5, size=(n, d)), -1.0, 1.0)
    w = np.full(n, 1.0 / n)
    w[::2] = np.nextafter(w[::2], 1.0)
    w[1::2] = np.nextafter(w[1::2], 0.0)
    db = WeightedDatabase(points=X, weights=w, m=n)
    dw = np.array([float(Fraction(float(v)) - Fraction(1, n)) for v in db.weights])
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / (2 * sigma**2))
    true = math.sqrt(max(float(dw @ K @ dw), 0.0))
    assert 0 < true < 1e-16
    r = sup_upper(X, db, sigma, certify="never")
    cap = _rounding_cap(d, sigma)
    assert r.rounding_bound <= cap
    assert true <= r.upper <= math.sqrt(true**2 + 2 * cap) * (1 + 1e-9), (true, r.upper)


# ---------------------------------------------------------------------------------------------
# negative controls
# ---------------------------------------------------------------------------------------------
def test_negative_controls_fall_below_a_witness():
    """Wrong bounds are caught by the witness on the same releases where the bound holds: the MMD at 2σ (the kernel
    of another width), without the data's self-term C, and from the norms only (|‖μ_D̂‖ − ‖μ_D‖|, the cross term
    replaced by its Cauchy–Schwarz maximum √(AC)). Dropping the cross term altogether, √(A + C), is no control: it is
    ≥ the MMD (B ≥ 0), a valid, looser bound."""
    caught = {"2σ": 0, "no self-term": 0, "norms only": 0}
    for seed, (d, sigma) in enumerate([(2, 1.0), (4, 0.5), (8, 2.0), (3, 4.0), (16, 1.0)]):
        X, db = _release(d, 200, 30, seed=seed, shift=0.15)
        lower = _witness_lower(class_supremum(X, db, sigma, rng=seed, domain="space"))
        r = sup_upper(X, db, sigma, certify="never")
        A, B, C = r.terms
        assert lower <= r.upper and math.sqrt(A + C) >= r.upper
        caught["2σ"] += sup_upper(X, db, 2 * sigma, certify="never").upper < lower
        caught["no self-term"] += math.sqrt(max(A - 2 * B, 0.0)) < lower
        caught["norms only"] += abs(math.sqrt(A) - math.sqrt(C)) < lower
    assert all(v >= 1 for v in caught.values()), caught


# ---------------------------------------------------------------------------------------------
# the low-rank side
# ---------------------------------------------------------------------------------------------
def test_lowrank_side_is_the_exact_mmd_plus_at_most_twice_the_surrogate_bound():
    n, d, sigma = 12_000, 3, 0.5
    X, db = _release(d, n, 40, seed=11)
    exact = sup_upper(X, db, sigma, certify="never", lowrank_above=None, cache=False)
    low = sup_upper(X, db, sigma, certify="never", lowrank_above=n - 1, cache=False)
    assert exact.data_side == "exact" and low.data_side == "lowrank" and 0 < low.rank < n
    assert 0 < low.surrogate_bound < 1e-5
    # ‖μ_D̂ − μ_D‖ ≤ ‖μ_D̂ − μ̃‖ + ‖μ̃ − μ_D‖ and ‖μ_D̂ − μ̃‖ ≤ ‖μ_D̂ − μ_D‖ + ‖μ_D − μ̃‖
    assert exact.mmd_estimate - 1e-6 <= low.upper <= exact.upper + 2 * low.surrogate_bound + 1e-6
    found = class_supremum(X, db, sigma, rng=2, domain="space", lowrank_above=n - 1)
    assert _witness_lower(found) <= low.upper
    assert low.n_kernel_values < exact.n_kernel_values / 10


def test_lowrank_side_needs_the_surrogate_bound(monkeypatch):
    """Any certified embedding enters by the triangle inequality, even μ̃ = μ_D̂ itself (the release's points and
    weights as landmarks and coefficients): then ‖μ_D̂ − μ̃‖ = 0 and the whole bound is the embedding's certified
    ‖μ_D − μ̃‖; without adding it the bound would be ~0, far below the MMD and the witness."""
    import dpkit.queries.supremum_upper as su
    from dpkit.queries.lowrank import KernelEmbedding

    n, d, sigma = 3000, 2, 1.0
    X, db = _release(d, n, 25, seed=12)
    emb = KernelEmbedding.from_landmarks(X, sigma, db.points, n_prefix=0, beta=db.weights)
    monkeypatch.setattr(su, "embedding_for", lambda *a, **k: (emb, False))
    low = sup_upper(X, db, sigma, certify="never", lowrank_above=n - 1)
    exact = sup_upper(X, db, sigma, certify="never", lowrank_above=None, cache=False)
    assert low.data_side == "lowrank" and low.surrogate_bound == emb.mmd and low.mmd_estimate < 1e-6
    mmd_lower = math.sqrt(max(exact.mmd_estimate**2 - exact.rounding_bound, 0.0))
    assert mmd_lower <= low.upper <= exact.upper + 1e-6
    assert low.upper - low.surrogate_bound < 1e-6 < mmd_lower  # the surrogate's share is the bound


# ---------------------------------------------------------------------------------------------
# the self-term's cache
# ---------------------------------------------------------------------------------------------
def test_self_term_is_cached_on_disk_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("DPKIT_CACHE_DIR", str(tmp_path))
    clear_self_term_cache()
    X, db = _release(5, 500, 20, seed=21)
    first = sup_upper(X, db, 2.0, certify="never")
    assert not first.self_cached and len(list((tmp_path / "mmd_self").glob("*.npz"))) == 1
    clear_self_term_cache()  # memory gone: from disk
    second = sup_upper(X, db, 2.0, certify="never")
    third = sup_upper(X, db, 2.0, certify="never")  # from memory
    assert second.self_cached and third.self_cached
    assert first.upper == second.upper == third.upper and first.terms == second.terms
    assert data_self_term(X, 4.0)[2] is False  # another σ, another entry
    assert first.n_kernel_values > second.n_kernel_values
    clear_self_term_cache()


# ---------------------------------------------------------------------------------------------
# not applicable, parameters
# ---------------------------------------------------------------------------------------------
def test_releases_without_a_weighted_database_are_not_applicable():
    g = np.random.default_rng(0)
    X = np.clip(0.4 * g.standard_normal((120, 2)), -1.0, 1.0)
    wl = GaussianKernelWorkload.generate(20, 2, J=3, sigma=1.0, rng=1)
    direct = DirectAnswering(epsilon=1.0, delta=0.0, noise="laplace_I").release(X, rng=2, workload=wl)
    r = sup_upper(X, direct, 1.0)
    assert not r.applicable and r.upper is None and "only" in r.reason and "direct-laplace_I" in r.reason
    kme = KMEAnswers(epsilon=1.0, delta=1e-3, sigma=1.0, n_features=32, precision="float64").release(
        X, rng=4, workload=wl)
    assert class_supremum(X, kme, 1.0, rng=1).applicable  # the search applies, the MMD bound does not
    r = sup_upper(X, kme, 1.0)
    assert not r.applicable and r.upper is None and "answer function" in r.reason and "RKHS" in r.reason


def test_parameters_are_validated():
    X, db = _release(2, 50, 5, seed=0)
    with pytest.raises(ValueError, match="certify"):
        sup_upper(X, db, 1.0, certify="sometimes")
    with pytest.raises(ValueError, match="max_boxes"):
        sup_upper(X, db, 1.0, max_boxes=0)
    with pytest.raises(ValueError, match="domain"):
        sup_upper(X, db, 1.0, domain="ball")
    with pytest.raises(ValueError, match="sigma"):
        sup_upper(X, db, 0.0)
    with pytest.raises(ValueError, match="sigma = 0.01 is too small"):
        sup_upper(X, db, 0.01)
    with pytest.raises(ValueError, match="cube"):
        sup_upper(2 * X, db, 1.0)
    assert disk_cache.cache_dir() is None  # the suite's hermetic setting
