"""The empirical privacy auditor: never flags a correct Laplace mechanism, flags a 20%-under-noised one at N = 1e5."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpkit.evaluation.audit import AuditResult, audit, clopper_pearson_lower, clopper_pearson_upper
from dpkit.mechanisms import Exponential, Gaussian


def laplace_fn(scale: float):
    def fn(db, rng, size=None):
        return db + rng.laplace(0.0, scale, size=size)

    return fn


SEEDS = [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_correct_laplace_never_flagged(eps):
    # neighbours 0 and Δ = 1, scale Δ/ε: the true max log-ratio is exactly ε, so ε_lb ≤ ε must
    # hold with probability ≥ 95% per run (CP at 97.5% for each of the two bounds).
    for s in SEEDS:
        r = audit(laplace_fn(1.0 / eps), 0.0, 1.0, n_samples=100_000, rng=s)
        assert not r.flags(eps), (s, r.epsilon_lb)
        assert r.epsilon_lb <= eps
        assert r.epsilon_lb > 0.85 * eps  # and it is near-tight (the tails have ratio e^ε exactly)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_under_noised_laplace_flagged(eps):
    # scale 20% too small: true ε_eff = ε/0.8 = 1.25ε; at N = 1e5 the bound exceeds ε for every seed
    for s in SEEDS:
        r = audit(laplace_fn(0.8 / eps), 0.0, 1.0, n_samples=100_000, rng=s)
        assert r.flags(eps), (s, r.epsilon_lb)
        assert r.epsilon_lb <= 1.25 * eps  # still a valid lower bound on the true 1.25ε


def test_false_positive_rate_at_most_one_minus_confidence():
    # 60 independent audits of a correct mechanism: flags ~ Binomial(60, p) with p ≤ 0.05;
    # reject only if the count exceeds the binomial 99.9% quantile (9). The check fails for a
    # grossly anti-conservative auditor, e.g. one reporting the plug-in ratio instead of the
    # Clopper–Pearson bound (that flags about half of these runs).
    runs = [audit(laplace_fn(1.0), 0.0, 1.0, n_samples=20_000, rng=100 + s) for s in range(60)]
    limit = stats.binom.ppf(0.999, 60, 0.05)
    assert sum(r.flags(1.0) for r in runs) <= limit
    assert sum(r.epsilon_point > 1.0 for r in runs) > limit  # the plug-in estimate would fail


def test_reusing_selection_sample_would_be_anti_conservative():
    # sanity of the design: the selection-half bound (maximised over events) is biased upward
    r = [audit(laplace_fn(1.0), 0.0, 1.0, n_samples=4_000, rng=s) for s in range(30)]
    assert np.mean([x.selection_epsilon_lb for x in r]) > np.mean([x.epsilon_lb for x in r])


def test_result_fields_and_reproducibility():
    r1 = audit(laplace_fn(1.0), 0.0, 1.0, n_samples=10_000, rng=7)
    r2 = audit(laplace_fn(1.0), 0.0, 1.0, n_samples=10_000, rng=7)
    r3 = audit(laplace_fn(1.0), 0.0, 1.0, n_samples=10_000, rng=8)
    assert isinstance(r1, AuditResult)
    assert r1.epsilon_lb == r2.epsilon_lb and r1.event == r2.event
    assert r1.epsilon_lb != r3.epsilon_lb
    assert r1.n_samples == 10_000 and r1.confidence == 0.95
    assert r1.event["kind"] in (">", "<") and r1.event["direction"] in ("d0 vs d1", "d1 vs d0")
    assert 0 <= r1.p0_hat <= 1 and 0 <= r1.p1_hat <= 1
    a = 0 if r1.event["direction"] == "d0 vs d1" else 1
    pa = (r1.p0_hat, r1.p1_hat)[a]
    assert r1.p_lower <= pa  # the CP lower bound lies below the estimate
    assert r1.meta["vectorised"] is True
    d = r1.to_dict()
    assert d["epsilon_lb"] == r1.epsilon_lb


def test_scalar_path_and_statistic_on_vector_outputs():
    # no size= → per-draw loop; vector outputs reduced by a statistic (post-processing, Prop 1.1)
    def vec_mech(db, rng):
        return np.asarray(db) + rng.laplace(0.0, 2.0, size=2)  # L1 sensitivity 2 → ε = 1

    r = audit(vec_mech, np.zeros(2), np.ones(2), statistic=lambda y: y.sum(axis=-1), n_samples=4_000, rng=0)
    assert r.meta["vectorised"] is False
    assert not r.flags(1.0)
    with pytest.raises(ValueError, match="statistic"):
        audit(vec_mech, np.zeros(2), np.ones(2), n_samples=100, rng=0)


def test_discrete_outputs_use_point_events():
    # exponential mechanism over 3 outcomes; exact max log-ratio computed from the law
    m = Exponential(epsilon=1.0, sensitivity=1.0)
    u0, u1 = np.array([0.0, 0.0, 0.0]), np.array([1.0, -1.0, -1.0])
    exact = float(np.max(np.abs(m.log_probabilities(u0) - m.log_probabilities(u1))))

    def fn(db, rng, size=None):
        return m.sample(db, size or 1, rng=rng)

    r = audit(fn, u0, u1, n_samples=100_000, rng=1)
    assert r.meta["discrete"] is True
    assert r.epsilon_lb <= exact <= 1.0
    assert r.epsilon_lb > 0.8 * exact


def test_gaussian_with_delta():
    # (ε, δ) audit: subtracting δ keeps a correct analytic Gaussian unflagged; an under-noised
    # one (σ halved) is flagged.
    g = Gaussian(epsilon=1.0, delta=1e-3, sensitivity=1.0)

    def fn(sigma):
        return lambda db, rng, size=None: db + rng.normal(0.0, sigma, size=size)

    for s in (0, 1, 2):
        assert not audit(fn(g.sigma), 0.0, 1.0, delta=1e-3, rng=s).flags(1.0)
        assert audit(fn(0.5 * g.sigma), 0.0, 1.0, delta=1e-3, rng=s).flags(1.0)


def test_clopper_pearson_known_values():
    # k = 0: upper = 1 − (1 − level)^{1/n}; k = n: lower = (1 − level)^{1/n}
    n, level = 100, 0.975
    assert clopper_pearson_upper(0, n, level) == pytest.approx(1 - (1 - level) ** (1 / n))
    assert clopper_pearson_lower(n, n, level) == pytest.approx((1 - level) ** (1 / n))
    assert clopper_pearson_lower(0, n, level) == 0.0 and clopper_pearson_upper(n, n, level) == 1.0
    lo, hi = clopper_pearson_lower(30, 100, 0.975), clopper_pearson_upper(30, 100, 0.975)
    assert lo == pytest.approx(stats.binomtest(30, 100).proportion_ci(0.95, method="exact").low)
    assert hi == pytest.approx(stats.binomtest(30, 100).proportion_ci(0.95, method="exact").high)


def test_validation():
    with pytest.raises(ValueError, match="n_samples"):
        audit(laplace_fn(1.0), 0.0, 1.0, n_samples=10)
    with pytest.raises(ValueError, match="confidence"):
        audit(laplace_fn(1.0), 0.0, 1.0, confidence=1.0)
    with pytest.raises(ValueError, match="delta"):
        audit(laplace_fn(1.0), 0.0, 1.0, delta=-0.1)
    with pytest.raises(TypeError, match="mechanism_fn"):
        audit(None, 0.0, 1.0)
    with pytest.raises(ValueError, match="first dimension"):
        audit(lambda db, rng, size=None: np.zeros(3), 0.0, 1.0, n_samples=100)


def test_atom_split_by_round_off_is_not_a_refutation():
    """A clipped (post-processed) Laplace release has an atom at the clip value; if the two sides
    compute that value with different round-off, a threshold between the two copies would give one
    side probability 0 and a huge ε_lb for a correct mechanism. Snapping (tol) prevents it; without
    snapping the auditor is fooled, which shows the test can fail."""
    import numpy as np

    from dpkit.evaluation.audit import audit

    clip = {0: 0.7243852634450137, 1: 0.7243852634450132}

    def clipped(db, rng, size=None):
        return np.minimum(db + rng.laplace(0.0, 1.0, size=size), clip[db])

    snapped = audit(clipped, 0, 1, n_samples=20_000, rng=3)
    assert snapped.epsilon_lb <= 1.0
    fooled = audit(clipped, 0, 1, n_samples=20_000, rng=3, tol=None)
    assert fooled.epsilon_lb > 3.0
    with pytest.raises(ValueError, match="tol"):
        audit(clipped, 0, 1, n_samples=100, tol=-1.0)
