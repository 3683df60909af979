"""Tests of the fast workload evaluator (dpkit.queries.evaluate) against the float64 reference."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpkit.queries.evaluate import (
    answer_data,
    answer_reference,
    answer_synthetic,
    answer_weighted,
    kernel_evals_per_second,
    relative_errors,
    worst_case_errors,
)
from dpkit.queries.gemm import deduplicate, kernel_sums, peak_memory_bytes
from dpkit.queries.rounding import DEFAULT_RTOL, EXP_ULP_F32, UNIT_ROUNDOFF_F32, choose_precision, float32_error_bound
from dpkit.queries.workload import GaussianKernelWorkload


def _cube(n, d, seed):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, d))


# --------------------------------------------------------------------------- float32 vs float64
def test_numpy_float32_exp_within_assumed_ulps():
    """The bound assumes numpy's float32 exp errs by at most EXP_ULP_F32 ulp on [-87, 0]."""
    x = np.linspace(-87.0, 0.0, 2_000_001, dtype=np.float32)
    got = np.exp(x)
    exact = np.exp(x.astype(np.float64))
    ulp = np.spacing(exact.astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got.astype(np.float64) - exact) / ulp) <= EXP_ULP_F32


@pytest.mark.parametrize("d, sigma", [(8, 2.0), (8, 10.0), (30, 2.0), (30, 6.0), (101, 2.0), (101, 10.0)])
def test_float32_error_below_derived_bound(d, sigma):
    """float32 answers vs the float64 reference: relative error ≤ the a-priori bound ρ.

    ρ is derived in dpkit.queries.evaluate from float32 rounding (γ_{d+5}(s(‖p‖+‖c‖)² + |log ω|) in
    the exponent, exp's ulps, 8-term float32 partial sums); the comparison is forced to
    float32 so it exercises that path even where "auto" would choose float64.
    """
    X = _cube(400, d, seed=d)
    # duplicated rows -> non-uniform weights after dedup, exercising the log ω column
    X = np.vstack([X, X[:50], X[:10]])
    wl = GaussianKernelWorkload.generate(40, d, J=10, sigma=sigma, rng=d + 1)
    ref = answer_reference(wl, X)
    got, info = answer_weighted(wl, X, np.full(len(X), 1 / len(X)), precision="float32", return_info=True)
    assert info["dtype"] == "float32"
    rho = info["error_bound"]
    # the same bound recomputed from the documented formula with cube norms (≥ the data-based one)
    assert rho <= float32_error_bound(d, sigma, max_abs_log_weight=math.log(3.0), n_points=len(X))
    err = np.max(np.abs(got - ref) / ref)
    assert err <= rho
    assert err > 0  # float32 really was used (a float64 path would agree to ~1e-15)


def test_float32_bound_is_far_below_table_precision_where_auto_uses_it():
    """Where "auto" picks float32 the bound is ≤ 1e-5: answers in [0, 1] move by ≤ 1e-5 and a
    relative error r by ≤ 1e-5·(2 + 2r) — ≥ 8× below the 5e-4 rounding of 3 printed decimals for r ≤ 2."""
    # CSN-like (d = 8) at the smallest thesis width: float32 chosen, bound ≈ 4e-6
    p = choose_precision("auto", d=8, sigma=2.0, max_norm_points=math.sqrt(8), max_norm_centres=math.sqrt(8),
                         max_abs_log_weight=0.0, n_points=100_000)
    assert p.name == "float32" and p.error_bound < 5e-6
    # CRM (d = 101) at σ = 2: the float32 bound (~2e-4) is too loose -> float64
    p = choose_precision("auto", d=101, sigma=2.0, max_norm_points=math.sqrt(101),
                         max_norm_centres=math.sqrt(101), max_abs_log_weight=0.0, n_points=1993)
    assert p.name == "float64" and p.error_bound < 1e-12
    assert float32_error_bound(101, 2.0, n_points=1993) > DEFAULT_RTOL
    # the mixed mode's bound is small even for CRM
    assert float32_error_bound(101, 2.0, n_points=1993, distances="float64") < 5e-6
    # the leading term scales like (d+5)·u·4d/(2σ²)
    b = float32_error_bound(101, 2.0, n_points=1)
    lead = (106 * UNIT_ROUNDOFF_F32) * 4 * 101 / 8
    assert lead < b < lead * 1.1


def test_underflow_guard_forces_float64():
    # exponents down to −s·4d = −2500: float32 exp would underflow to 0
    p = choose_precision("auto", d=10, sigma=0.1, max_norm_points=math.sqrt(10), max_norm_centres=math.sqrt(10),
                         max_abs_log_weight=0.0, n_points=10)
    assert p.name == "float64"


def test_mixed_and_float64_paths_agree_with_reference():
    X = _cube(300, 12, seed=5)
    wl = GaussianKernelWorkload.generate(30, 12, sigma=2.0, rng=6)
    ref = answer_reference(wl, X)
    w = np.full(len(X), 1 / len(X))
    for prec in ("mixed", "float64"):
        got, info = answer_weighted(wl, X, w, precision=prec, return_info=True)
        assert info["dtype"] == prec
        assert np.max(np.abs(got - ref) / ref) <= info["error_bound"]
    got64 = answer_weighted(wl, X, w, precision="float64")
    assert np.allclose(got64, ref, rtol=1e-12, atol=0)


def test_clamp_negative_squared_distance():
    """A centre equal to a data point: the float32 GEMM form rounds ‖p − c‖² = 0 to a value of
    either sign; a negative one would give a kernel e^{+tiny} > 1. The evaluator clamps."""
    rng = np.random.default_rng(0)
    P = rng.uniform(-1, 1, size=(2000, 30))
    s = 1.0 / (2.0 * 0.5**2)
    sq = np.einsum("ij,ij->i", P, P)
    a = np.hstack([P, sq[:, None], np.zeros((len(P), 1)), np.ones((len(P), 1))]).astype(np.float32)
    b = np.hstack([2 * s * P, np.full((len(P), 1), -s), np.ones((len(P), 1)), -s * sq[:, None]]).astype(np.float32)
    raw = np.einsum("ij,ij->i", a, b)  # the unclamped exponent −s‖p − p‖² in float32
    pos = np.flatnonzero(raw > 0)
    assert pos.size > 0  # precondition: rounding does produce "negative squared distances"
    for i in pos[:20]:
        k = kernel_sums(P[i : i + 1], P[i : i + 1], np.ones(1), 0.5, precision="float32")
        assert k[0] <= 1.0


# --------------------------------------------------------------------------- exactness of the tricks
def test_dedup_is_exact():
    rng = np.random.default_rng(1)
    base = rng.integers(-3, 4, size=(40, 5)) / 3.0  # grid-valued: heavy duplication
    X = base[rng.integers(0, 40, size=3000)]
    P, w = deduplicate(X, np.full(len(X), 1 / len(X)))
    assert len(P) == len(np.unique(X, axis=0)) <= 40
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    # each unique row's weight is its count / n
    for p, wi in zip(P, w):
        assert wi * len(X) == pytest.approx(np.sum(np.all(X == p, axis=1)), abs=1e-9)
    wl = GaussianKernelWorkload.generate(25, 5, sigma=2.0, rng=2)
    a = answer_data(wl, X, precision="float64", dedup=True)
    b = answer_data(wl, X, precision="float64", dedup=False)
    ref = answer_reference(wl, X)
    assert np.allclose(a, ref, rtol=1e-12, atol=0) and np.allclose(b, ref, rtol=1e-12, atol=0)
    # zero weights are dropped, negative ones refused
    P2, w2 = deduplicate(X[:3], np.array([0.5, 0.0, 0.5]))
    assert np.all(w2 > 0)


def test_weighted_synthetic_answers():
    rng = np.random.default_rng(3)
    S = rng.uniform(-1, 1, size=(7, 4))
    counts = np.array([5, 1, 3, 2, 8, 1, 4])
    w = counts / counts.sum()
    wl = GaussianKernelWorkload.generate(60, 4, sigma=4.0, rng=4)
    got = answer_synthetic(wl, S, w)
    # (1) against the explicit Σ w_i f(p_i)
    want = wl.evaluate_function(S) @ w
    rho = float32_error_bound(4, 4.0, max_abs_log_weight=math.log(8), n_points=7)
    assert np.all(np.abs(got - want) <= rho * want)
    # (2) the materialised multiset (rows repeated by counts) answers the same
    rows = np.repeat(S, counts, axis=0)
    assert np.allclose(answer_data(wl, rows, precision="float64"), want, rtol=1e-12, atol=0)
    # (3) duplicate synthetic points are merged
    S2 = np.vstack([S, S[:1]])
    w2 = np.append(w, 0.0)
    w2[0] -= w[0] / 2
    w2[-1] = w[0] / 2
    assert np.allclose(answer_synthetic(wl, S2, w2, precision="float64"), want, rtol=1e-12, atol=0)


def test_block_size_and_thread_independence():
    X = _cube(3000, 6, seed=7)
    wl = GaussianKernelWorkload.generate(400, 6, sigma=2.0, rng=8)
    w = np.full(len(X), 1 / len(X))
    base, info = answer_weighted(wl, X, w, return_info=True)
    rho = info["error_bound"]
    assert info["dtype"] == "float32"
    for kw in (
        dict(block_centres=1000, block_points=3000),
        dict(block_centres=37, block_points=100),
        dict(block_centres=64, block_points=1000, n_threads=1),
        dict(parallel="blas"),
    ):
        got = answer_weighted(wl, X, w, **kw)
        # different blocks change only the float32 summation order: within the proven bound
        assert np.all(np.abs(got - base) <= 2 * rho * base), kw
    # in float64 block sizes are invisible at 1e-13
    a = answer_weighted(wl, X, w, precision="float64", block_centres=500, block_points=4096)
    b = answer_weighted(wl, X, w, precision="float64", block_centres=13, block_points=77)
    assert np.allclose(a, b, rtol=1e-13, atol=0)


def test_threads_give_identical_results():
    """Centre blocks are independent, so the worker count cannot change a single bit."""
    X = _cube(2500, 9, seed=9)
    wl = GaussianKernelWorkload.generate(300, 9, sigma=3.0, rng=10)
    w = np.full(len(X), 1 / len(X))
    a, ia = answer_weighted(wl, X, w, n_threads=1, return_info=True)
    b, ib = answer_weighted(wl, X, w, n_threads=2, return_info=True)
    assert ib["n_threads"] == 2 and ia["n_threads"] == 1
    assert np.array_equal(a, b)


def test_peak_memory_documented():
    # per worker: 256 augmented centre rows + a 256 × 2048 float32 block + 256 × 256 float64 partial sums; + the
    # augmented copy of the points (the centres' rows are built per block)
    m = peak_memory_bytes(100_000, 100_000, 8, n_threads=2)
    assert m == 100_000 * 11 * 4 + 2 * (256 * 11 * 4 + 256 * 2048 * 4 + 256 * 256 * 8)
    _, info = kernel_sums(_cube(10, 3, 0), _cube(20, 3, 1), np.ones(20), 1.0, return_info=True)
    assert info["peak_memory_bytes"] > 0


# --------------------------------------------------------------------------- errors
def test_relative_error_definition():
    truth = np.array([0.5, 0.2, 0.0, 0.0])
    est = np.array([0.4, 0.3, 0.0, 0.1])
    rel = relative_errors(est, truth)
    assert rel[0] == pytest.approx(0.2) and rel[1] == pytest.approx(0.5)
    assert rel[2] == 0.0 and rel[3] == np.inf
    with pytest.raises(ValueError, match="non-negative"):
        relative_errors(est, -truth)


def test_worst_case_errors_known_case():
    # D = {x0}, D̂ = {x1} with weight 1: q(D) = f(x0), q(D̂) = f(x1) exactly
    wl = GaussianKernelWorkload.generate(200, 3, sigma=2.0, rng=11)
    x0 = np.array([[0.3, -0.5, 0.9]])
    x1 = np.array([[-0.2, 0.1, 0.4]])
    r = worst_case_errors(wl, x0, x1, np.ones(1), return_arrays=True, precision="float64")
    f0, f1 = wl.evaluate_function(x0[0]), wl.evaluate_function(x1[0])
    err = np.abs(f1 - f0)
    assert r.abs == pytest.approx(err.max(), rel=1e-12)
    assert r.argmax_abs == int(np.argmax(err))
    assert r.rel == pytest.approx(np.max(err / f0), rel=1e-12)
    assert r.argmax_rel == int(np.argmax(err / f0))
    assert np.allclose(r.truth, f0, rtol=1e-13) and np.allclose(r.estimate, f1, rtol=1e-13)
    assert set(r.as_dict()) == {"abs", "rel", "argmax_abs", "argmax_rel", "error_bound"}
    # per-query arrays only on request
    assert worst_case_errors(wl, x0, x1, np.ones(1)).abs_errors is None


def test_worst_case_errors_identity_and_shared_truth():
    X = _cube(500, 4, seed=12)
    wl = GaussianKernelWorkload.generate(100, 4, sigma=4.0, rng=13)
    w = np.full(500, 1 / 500)
    r = worst_case_errors(wl, X, X, w)
    # D̂ = D: the errors are pure rounding, within twice the proven relative bound
    assert r.rel <= 2 * r.error_bound and r.abs <= 2 * r.error_bound
    r64 = worst_case_errors(wl, X, X, w, precision="float64")
    assert r64.rel <= 1e-13
    truth = answer_data(wl, X)
    S = _cube(20, 4, seed=14)
    a = worst_case_errors(wl, X, S, np.full(20, 0.05))
    b = worst_case_errors(wl, X, S, np.full(20, 0.05), truth=truth)
    assert a.abs == b.abs and a.rel == b.rel


# --------------------------------------------------------------------------- bad inputs
def test_bad_inputs():
    wl = GaussianKernelWorkload.generate(5, 3, sigma=1.0, rng=0)
    X = _cube(10, 3, 0)
    S = _cube(4, 3, 1)
    w = np.full(4, 0.25)
    with pytest.raises(ValueError, match="columns"):
        answer_data(wl, _cube(10, 2, 0))
    with pytest.raises(ValueError, match="columns"):
        worst_case_errors(wl, X, _cube(4, 4, 1), w)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        answer_data(wl, bad)
    with pytest.raises(ValueError, match="finite"):
        worst_case_errors(wl, X, S, np.array([0.25, 0.25, np.inf, 0.25]))
    with pytest.raises(ValueError, match="sum to 1"):
        answer_synthetic(wl, S, np.full(4, 0.3))
    with pytest.raises(ValueError, match="sum to 1"):
        worst_case_errors(wl, X, S, np.full(4, 0.2))
    with pytest.raises(ValueError, match="non-negative"):
        answer_synthetic(wl, S, np.array([0.5, 0.6, -0.1, 0.0]))
    with pytest.raises(ValueError, match="entries"):
        answer_synthetic(wl, S, np.full(3, 1 / 3))
    with pytest.raises(ValueError, match="at least 1 rows"):
        answer_data(wl, np.empty((0, 3)))
    with pytest.raises(TypeError, match="GaussianKernelWorkload"):
        answer_data("not a workload", X)
    with pytest.raises(ValueError, match="sigma"):
        kernel_sums(S, X, np.ones(10), 0.0)
    with pytest.raises(ValueError, match="sigma"):
        kernel_sums(S, X, np.ones(10), -1.0)
    with pytest.raises(ValueError, match="precision"):
        answer_data(wl, X, precision="float16")
    with pytest.raises(ValueError, match="truth"):
        worst_case_errors(wl, X, S, w, truth=np.ones(3))
    with pytest.raises(ValueError, match="block_points"):
        answer_data(wl, X, block_points=0)


def test_throughput_measurement_keys():
    X = _cube(400, 5, seed=15)
    wl = GaussianKernelWorkload.generate(200, 5, sigma=2.0, rng=16)
    r = kernel_evals_per_second(wl, X, n_reference_queries=5)
    for key in ("kernel_evals_per_s", "reference_kernel_evals_per_s", "speedup", "dtype", "error_bound",
                "max_abs_diff", "seconds", "reference_seconds"):
        assert key in r
    assert r["kernel_evals_per_s"] > 0 and r["speedup"] > 0
    assert r["max_abs_diff"] <= r["error_bound"]


def test_evaluate_exports_its_own_names():
    """dpkit.queries.evaluate exports the answers and errors it defines; the engine and the bounds are exported by
    their own modules (gemm, rounding), not handed on."""
    import dpkit.queries.evaluate as ev

    for name in ("kernel_sums", "deduplicate", "peak_memory_bytes", "float32_error_bound", "choose_precision",
                 "Precision", "UNIT_ROUNDOFF_F32", "EXP_ULP_F32", "DEFAULT_RTOL"):
        assert name not in ev.__all__
    for name in ("answer_weighted", "answer_data", "answer_synthetic", "answer_reference", "worst_case_errors",
                 "relative_errors", "WorstCaseErrors", "kernel_evals_per_second"):
        assert callable(getattr(ev, name)) and name in ev.__all__
