"""Kernel mean embedding (DP-MERF idea): budget, seeds, the noise-free answers against the exact ones
within the random-feature bound, the public choice of D, parameter errors, and an audit of the
released embedding on far-apart neighbours (plus a quarter-noise negative control)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from neighbour_pairs import corners as neighbours

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import BudgetExceededError
from dpkit.evaluation.audit import audit
from dpkit.methods._fit import FourierStatistic
from dpkit.methods.kme import KMEAnswers, KMESynthetic
from dpkit.methods.registry import get, names
from dpkit.queries.evaluate import answer_data
from dpkit.queries.workload import GaussianKernelWorkload

EPS, DELTA = 1.0, 1e-3


@pytest.fixture(scope="module")
def data():
    g = np.random.default_rng(9)
    return np.clip(0.4 * g.standard_normal((150, 3)), -1.0, 1.0)


@pytest.fixture(scope="module")
def workload():
    return GaussianKernelWorkload.generate(30, 3, J=4, sigma=1.0, rng=3)


@pytest.mark.parametrize("cls,kw", [(KMEAnswers, {}), (KMESynthetic, {"m": 20, "max_iter": 30})])
@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_ledger_adds_up_and_seeds_reproduce(data, workload, cls, kw, delta):
    m = cls(epsilon=EPS, delta=delta, sigma=1.0, n_features=64, **kw)
    a, b = (m.release(data, rng=4, workload=workload) for _ in range(2))
    assert a.spent == (EPS, delta) and a.ledger["entries"][0]["neighbouring"] == "replace-one"
    np.testing.assert_array_equal(a.diagnostics.noisy_embedding, b.diagnostics.noisy_embedding)
    if cls is KMEAnswers:
        np.testing.assert_array_equal(a.answers, b.answers)
    else:
        np.testing.assert_array_equal(a.synthetic.points, b.synthetic.points)
    assert a.params["l2_sensitivity"] == pytest.approx(2.0 / data.shape[0])


def test_features_have_unit_norm_and_estimate_the_kernel():
    g = np.random.default_rng(0)
    D, sigma = 20_000, 0.8
    phi = FourierStatistic(g.standard_normal((D, 2)) / sigma)
    x, c = np.array([[0.3, -0.2]]), np.array([[-0.4, 0.5]])
    np.testing.assert_allclose(np.linalg.norm(phi.values(x)), 1.0, rtol=1e-12)
    k = math.exp(-np.sum((x - c) ** 2) / (2 * sigma**2))
    # the estimate is a mean of D terms in [-1, 1]: 5 standard deviations of 1/√D
    assert abs(float((phi.values(x) @ phi.values(c).T)[0, 0]) - k) < 5 / math.sqrt(D)


def test_epsilon_inf_answers_within_the_random_feature_bound(data, workload):
    m = KMEAnswers(epsilon=math.inf, sigma=1.0, n_features=4096)
    rel = m.release(data, rng=0, workload=workload)
    exact = answer_data(workload, data)
    # Hoeffding + union bound over Q queries at β = 10⁻³ (module docstring)
    bound = math.sqrt(2 * math.log(2 * exact.shape[0] / 1e-3) / 4096)
    assert np.max(np.abs(rel.answers - exact)) < bound
    assert rel.params["noise_std"] == 0.0


def test_number_of_features_rule():
    assert KMEAnswers(epsilon=1.0, delta=DELTA, max_features=2048).features(500) == 2048
    assert KMEAnswers(epsilon=1.0, max_features=2048).features(500) == 125  # nε/4
    assert KMEAnswers(epsilon=1.0, max_features=2048).features(10**6) == 2048
    assert KMEAnswers(epsilon=1.0, n_features=7).features(10**6) == 7


def test_width_mismatch_and_missing_workload_are_errors(data, workload):
    with pytest.raises(ValueError, match="sigma"):
        KMEAnswers(epsilon=EPS, sigma=2.0).release(data, rng=0, workload=workload)
    with pytest.raises(ValueError, match="workload"):
        KMEAnswers(epsilon=EPS, sigma=1.0).release(data, rng=0)
    assert KMEAnswers(epsilon=EPS).at_width(4.0).sigma == 4.0


@pytest.mark.parametrize("kw,msg", [({"sigma": 0.0}, "sigma"), ({"n_features": 0}, "n_features"),
                                    ({"max_features": 0}, "max_features"), ({"epsilon": 0.0}, "epsilon"),
                                    ({"m": 0}, "m"), ({"max_iter": 0}, "max_iter")])
def test_bad_parameters_are_named(kw, msg):
    with pytest.raises(ValueError, match=msg):
        KMESynthetic(**{"epsilon": EPS, **kw})


def test_ledger_without_room_is_refused(data, workload):
    led = Ledger(0.5)
    with pytest.raises(BudgetExceededError):
        KMEAnswers(epsilon=EPS, sigma=1.0).release(data, rng=0, ledger=led, workload=workload)
    assert led.total() == (0.0, 0.0)


def test_registered_in_the_leaderboard():
    for n in ("kme-answers", "kme-answers-eps", "kme-synthetic", "kme-synthetic-eps"):
        assert n in names("leaderboard") and n in names("baselines")
    assert get("kme-answers").privacy == "(ε,δ)-DP" and get("kme-synthetic-eps").privacy == "ε-DP"


# --- audit: the changed row moves between opposite corners; at σ = 0.5 the features of the two
# corners are nearly orthogonal (‖φ(x) − φ(x')‖₂ ≈ √2 of the bound 2). Statistic, for the released Ω
# and u = φ(x') − φ(x): the likelihood-ratio direction of the noise, μ̂·u/‖u‖₂ for Gaussian noise and
# μ̂·sign(u) for Laplace noise. The ε-DP variant is audited with D = 1 frequency, where the L1 bound
# 2√(2D)/n is attainable (|Δcos| + |Δsin| ≤ 2√2); with many frequencies it is loose by ≈ √D.
N_SAMPLES = 2000


def projection(method):
    def stat(db, rng):
        st = method.measure(db, rng=rng)
        phi = FourierStatistic(st.omega)
        u = (phi.values(np.array([[1.0, 1.0]])) - phi.values(np.array([[-1.0, -1.0]])))[0]
        w = u / np.linalg.norm(u) if method.delta > 0 else np.sign(u)
        return float(st.noisy_embedding @ w)
    return stat


def audited(delta):
    return KMEAnswers(epsilon=EPS, delta=delta, sigma=0.5, n_features=16 if delta > 0 else 1)


@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_audit_does_not_refute(delta):
    m = audited(delta)
    res = audit(projection(m), *neighbours(), n_samples=N_SAMPLES, delta=delta, rng=0)
    assert not res.flags(EPS), res.to_dict()


@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_negative_control_quarter_noise_is_flagged(monkeypatch, delta):
    import dpkit.methods.kme as kme

    real = kme.noisy_release
    monkeypatch.setattr(kme, "noisy_release", lambda v, *, l1, l2, **kw: real(v, l1=l1 / 4.0, l2=l2 / 4.0, **kw))
    m = audited(delta)
    res = audit(projection(m), *neighbours(), n_samples=N_SAMPLES, delta=delta, rng=0)
    assert res.flags(EPS), res.to_dict()


@pytest.mark.parametrize("n", [1, 5, 63, 64, 129, 4095, 4097, 5000])
def test_blocked_mean_embedding_equals_the_full_mean_to_the_bit(n):
    """The blocked mean (no n × 2D temporary) is the row-by-row sum of the full matrix, bit for bit."""
    g = np.random.default_rng(n)
    stat = FourierStatistic(g.standard_normal((64, 3)) / 2.0)
    Y = g.uniform(-1, 1, (n, 3))
    ref = stat.values(Y).mean(axis=0)
    for block in (16, 64, 2048):
        assert np.array_equal(stat.mean(Y, block=block), ref)
    with pytest.raises(ValueError, match="at least one row"):
        stat.mean(Y[:0])


def test_float32_trig_error_is_within_the_allowance_of_the_bound():
    """The bound assumes numpy's float32 cos/sin err by ≤ FLOAT32_TRIG_ULPS·2⁻²⁴ on [-π, π]; re-measured here
    against half that allowance, so a numpy whose float32 trig got worse fails before the bound becomes false."""
    from dpkit.methods.kme import FLOAT32_TRIG_ULPS

    r = np.random.default_rng(0).uniform(-math.pi - 1e-3, math.pi + 1e-3, 2_000_000).astype(np.float32)
    ref = r.astype(float)
    err = max(np.abs(np.cos(r).astype(float) - np.cos(ref)).max(), np.abs(np.sin(r).astype(float) - np.sin(ref)).max())
    assert err <= 0.5 * FLOAT32_TRIG_ULPS * 2.0**-24, err / 2.0**-24


@pytest.mark.parametrize("sigma, d", [(0.5, 3), (2.0, 30), (10.0, 101)])
def test_float32_answers_within_their_proven_bound_of_float64(sigma, d):
    from dpkit.methods.kme import embedding_answers

    g = np.random.default_rng(d)
    wl = GaussianKernelWorkload.generate(400, d, J=10, sigma=sigma, rng=g)
    omega = g.standard_normal((512, d)) / sigma
    mu = FourierStatistic(omega).mean(g.uniform(-1, 1, (300, d))) + g.normal(0, 0.01, 1024)
    a64, b64 = embedding_answers(wl, omega, mu, precision="float64")
    a32, b32 = embedding_answers(wl, omega, mu, precision="float32")
    assert b64 == 0.0 and 0.0 < b32 < 2e-6
    diff = np.abs(a32 - a64).max()
    assert 0.0 < diff <= b32  # they differ (a control: the paths are not the same), by no more than the bound


def test_float64_precision_reproduces_the_plain_evaluation(data, workload):
    a = KMEAnswers(epsilon=EPS, delta=DELTA, precision="float64").at_width(workload.sigma)
    b = KMEAnswers(epsilon=EPS, delta=DELTA).at_width(workload.sigma)
    ra, rb = a.release(data, rng=3, workload=workload), b.release(data, rng=3, workload=workload)
    assert ra.params["answer_rounding_bound"] == 0.0
    assert np.max(np.abs(ra.answers - rb.answers)) <= rb.params["answer_rounding_bound"]
    with pytest.raises(ValueError, match="precision"):
        KMEAnswers(epsilon=EPS, precision="float16")


def _plain_embedding_answers(workload, omega, embedding, precision):
    """The answers as whole-array expressions, block by block of 256 queries (the reference of the chunked loop)."""
    C, A = workload.centres, workload.alphas
    Q, J, d = C.shape
    D = omega.shape[0]
    out = np.empty(Q)
    for s in range(0, Q, 256):
        Z = C[s : s + 256].reshape(-1, d) @ omega.T
        if precision == "float64":
            cz, sz = np.cos(Z), np.sin(Z)
        else:
            R = (Z - np.rint(Z * (1.0 / (2.0 * math.pi))) * (2.0 * math.pi)).astype(np.float32)
            cz, sz = np.cos(R).astype(float), np.sin(R).astype(float)
        vals = (cz @ embedding[:D] + sz @ embedding[D:]) / math.sqrt(D)
        out[s : s + 256] = np.sum(A[s : s + 256] * vals.reshape(-1, J), axis=1)
    return out


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("Q, d, D", [(700, 5, 300), (3, 21, 64), (256, 2, 33)])
def test_chunked_answers_equal_the_whole_array_expressions_to_the_bit(precision, Q, d, D):
    """The answers do not change a bit with the chunk size of the element-wise steps (the leaderboard's kept
    repetitions stay reusable): every chunk equals the whole-array evaluation."""
    from dpkit.methods.kme import embedding_answers

    g = np.random.default_rng(Q + d)
    wl = GaussianKernelWorkload.generate(Q, d, J=10, sigma=1.5, rng=g)
    omega = g.standard_normal((D, d)) / 0.3  # |θ| up to ~100: the reduction to [-π, π] matters
    mu = g.normal(0.0, 0.05, 2 * D)
    ref = _plain_embedding_answers(wl, omega, mu, precision)
    for chunk in (1, 7, 64, 10_000):
        a, _ = embedding_answers(wl, omega, mu, precision=precision, chunk=chunk)
        assert a.tobytes() == ref.tobytes(), chunk


def test_fit_runs_blas_single_threaded_and_gives_the_points_of_one_thread():
    """Every optimiser step of the relaxed projection runs with one BLAS thread, whatever the caller allows (BLAS's
    threads on the fit's small products cost several times its time under load), and the points are those of a
    single-threaded run to the bit."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from dpkit.methods._fit import fit_points

    def blas_threads() -> int:
        return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=0)

    seen: list[int] = []

    class Spy(FourierStatistic):  # records the BLAS threads of every step
        def residual_and_grad(self, Y, b):
            seen.append(blas_threads())
            return super().residual_and_grad(Y, b)

    g = np.random.default_rng(8)
    omega = g.standard_normal((64, 3)) / 0.8
    target = FourierStatistic(omega).mean(g.uniform(-1, 1, (200, 3))) + g.normal(0.0, 0.01, 128)
    with threadpool_limits(limits=2, user_api="blas"):
        if blas_threads() < 2:
            pytest.skip("BLAS runs one thread here: nothing to limit")
        fit = fit_points(Spy(omega), target, m=30, d=3, rng=np.random.default_rng(1), max_iter=15)
    assert seen and set(seen) == {1}
    with threadpool_limits(limits=1, user_api="blas"):
        ref = fit_points(FourierStatistic(omega), target, m=30, d=3, rng=np.random.default_rng(1), max_iter=15)
    assert fit.points.tobytes() == ref.points.tobytes() and fit.n_iter == ref.n_iter > 1
