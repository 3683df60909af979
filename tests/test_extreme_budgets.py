"""Fix the class, not the example: every private method of the registry (``CATALOGUE``) and every mechanism that
takes ε directly, at extreme but legal budgets (ε from 1e-300 to 1e300; δ = 1e-300 and 0.999 for (ε, δ) methods),
either releases finite synthetic points/weights or answers, spending exactly its ε (and at most its δ: a Gaussian
step may fall back to δ-free Laplace noise), or refuses with a ValueError naming ``epsilon`` (or ``delta``)
before spending anything -- never another exception type, never a non-finite release, never a composed release
without noise. The input is a seeded
uniform sample of 200 rows in [-1, 1]^2 (SmallDB's toy domain is 2-d), with small sizes and iteration counts."""
from __future__ import annotations

import dataclasses
import math
import sys
import warnings

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.mechanisms import Exponential, Gaussian, Laplace, ReportNoisyMax
from dpkit.mechanisms.gaussian import ANALYTIC_MAX_EPSILON, analytic_gaussian_sigma
from dpkit.mechanisms.pca import PrivateSubspaceIteration
from dpkit.mechanisms.randomized_response import RandomizedResponse
from dpkit.mechanisms.sparse_vector import AboveThreshold
from dpkit.methods.registry import CATALOGUE
from dpkit.queries.workload import GaussianKernelWorkload

EPSILONS = (1e-300, 1e-200, 1e-100, 1e-20, 1e20, 1e100, 1e200, 1e300)
DELTAS = (1e-300, 0.999)
CORNERS = ((1e-300, 1e-300), (1e-300, 0.999), (1e300, 1e-300), (1e300, 0.999))  # both extreme at once
D = 2
X = np.random.default_rng(20).uniform(-1.0, 1.0, size=(200, D))
WORKLOAD = GaussianKernelWorkload.generate(20, D, J=3, sigma=0.5, rng=21)

#: Small sizes and iteration counts (never a budget parameter), so that one case takes well under a second.
SMALL = {"C": 200, "R": 8, "m": 50, "T": 3, "n_iter": 2, "n_class": 20, "J": 3, "replays": 2, "iters": 20,
         "final_iters": 20, "max_iter": 5, "max_features": 64, "bins": 4, "rounds": 5}
#: Every private method, AIM included (its few small rounds cost about a second a case).
RELEASED = [e for e in CATALOGUE if e.privacy != "non-private"]


def _small(method):
    fields = {f.name for f in dataclasses.fields(method) if f.init}
    return dataclasses.replace(method, **{k: v if getattr(method, k) is None else min(v, getattr(method, k))
                                          for k, v in SMALL.items() if k in fields})


def _cases():
    for e in RELEASED:
        for eps in EPSILONS:
            yield pytest.param(e, eps, getattr(e.method, "delta", 0.0),
                               id=f"{e.name}-eps{eps:g}")
        if e.privacy == "(ε,δ)-DP":
            for delta in DELTAS:
                yield pytest.param(e, 1.0, delta, id=f"{e.name}-delta{delta:g}")
            for eps, delta in CORNERS:
                yield pytest.param(e, eps, delta, id=f"{e.name}-eps{eps:g}-delta{delta:g}")


def _release_or_refusal(method, epsilon, delta):
    """``None`` for a finite release that spent exactly ε (and at most δ); the refusal's message otherwise."""
    try:
        fields = {f.name for f in dataclasses.fields(method)}
        budget = {"epsilon": epsilon, "delta": delta} if "delta" in fields else {"epsilon": epsilon}
        method = dataclasses.replace(method, **budget).at_width(WORKLOAD.sigma)
    except ValueError as exc:
        return str(exc)  # refused at construction
    ledger = Ledger(epsilon, delta)
    workload = WORKLOAD if getattr(method, "needs_workload", False) else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rel = method.release(X, rng=0, ledger=ledger, workload=workload)
    except ValueError as exc:
        assert ledger.to_dict()["entries"] == [], f"refused after spending: {exc}"
        return str(exc)
    if rel.synthetic is not None:
        assert np.all(np.isfinite(rel.synthetic.points)), "non-finite synthetic points"
        assert np.all(np.isfinite(rel.synthetic.weights)), "non-finite synthetic weights"
    else:
        assert np.all(np.isfinite(rel.answers)), "non-finite answers"
    # all of ε; δ at most: a Gaussian step falls back to Laplace (δ-free) where its std is smaller
    spent = ledger.spent
    assert math.isclose(spent[0], epsilon, rel_tol=1e-12) and spent[1] <= delta, f"spent {spent} of ({epsilon}, {delta})"
    # a composed spend names its releases: at a finite budget none of them may be noiseless (a calibration factor
    # that underflowed to 0 released the data as they are)
    for entry in ledger.to_dict()["entries"]:
        for r in (entry.get("meta") or {}).get("releases") or []:
            noise = r.get("scale", r.get("epsilon"))
            ok = noise > 0 if "scale" in r else math.isfinite(noise)
            assert ok, f"{entry['name']}: release {r.get('name')} without noise ({r})"
    return None


@pytest.mark.parametrize("entry, epsilon, delta", list(_cases()))
def test_extreme_budget_is_released_finite_or_refused_naming_it(entry, epsilon, delta):
    message = _release_or_refusal(_small(entry.method), epsilon, delta)
    if message is not None:
        named = ("delta",) if epsilon == 1.0 else ("epsilon",) if delta in (0.0, entry.method.delta) else ("epsilon", "delta")
        assert any(word in message for word in named), message


# ----------------------------------------------------------------------------- the mechanisms that take ε directly
def _laplace(eps, delta, led):
    return Laplace(epsilon=eps, sensitivity=1.0).release(np.array([0.2, -0.4]), rng=0, ledger=led)


def _gaussian(eps, delta, led):
    return Gaussian(epsilon=eps, delta=delta, sensitivity=1.0).release(np.array([0.2, -0.4]), rng=0, ledger=led)


def _exponential(eps, delta, led):
    return [Exponential(epsilon=eps, sensitivity=1.0).release(np.array([0.0, 3.0, 1e3]), rng=0, ledger=led)]


def _noisy_max(eps, delta, led):
    return [ReportNoisyMax(epsilon=eps, sensitivity=1.0).release(np.array([0.0, 3.0, 1e3]), rng=0, ledger=led)]


def _sparse_vector(eps, delta, led):
    return [AboveThreshold(epsilon=eps, threshold=0.5).run([0.0, 0.2, 0.9], rng=0, ledger=led)]


def _randomized_response(eps, delta, led):
    rr = RandomizedResponse(epsilon=eps)
    y = rr.release(np.array([0, 1, 1, 0, 1]), rng=0, ledger=led)
    try:  # no release (no spend): finite or refused naming ε
        variance = rr.estimator_variance(0.5, 5)
    except ValueError as exc:
        assert "epsilon" in str(exc), str(exc)
        variance = 0.0
    return [rr.estimate(y), variance]


def _pca(eps, delta, led):
    psi = PrivateSubspaceIteration(n_components=1, n_iter=2, epsilon=eps, delta=delta).fit(X, rng=0, ledger=led)
    return np.concatenate([psi.components_.ravel(), psi.explained_variance_])


MECHANISMS = {"Laplace": (_laplace, False), "Gaussian": (_gaussian, True), "Exponential": (_exponential, False),
              "ReportNoisyMax": (_noisy_max, False), "AboveThreshold": (_sparse_vector, False),
              "RandomizedResponse": (_randomized_response, False), "PSI-eps": (_pca, False), "PSI": (_pca, True)}


def _mechanism_cases():
    for name, (_run, approx) in MECHANISMS.items():
        for eps in EPSILONS:
            yield pytest.param(name, eps, 1e-3 if approx else 0.0, id=f"{name}-eps{eps:g}")
        if approx:
            for delta in DELTAS:
                yield pytest.param(name, 1.0, delta, id=f"{name}-delta{delta:g}")


@pytest.mark.parametrize("name, epsilon, delta", list(_mechanism_cases()))
def test_mechanism_at_an_extreme_budget_releases_finite_or_refuses_naming_it(name, epsilon, delta):
    run, _approx = MECHANISMS[name]
    ledger = Ledger(epsilon, delta)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = run(epsilon, delta, ledger)
    except ValueError as exc:
        assert ("delta" if epsilon == 1.0 else "epsilon") in str(exc), str(exc)
        assert ledger.to_dict()["entries"] == [], f"refused after spending: {exc}"
        return
    assert np.all(np.isfinite(np.asarray(out, dtype=float))), out
    assert math.isclose(ledger.spent[0], epsilon, rel_tol=1e-12) and ledger.spent[1] <= delta


# ----------------------------------------------------------------------------- the analytic Gaussian's sensitivity
@pytest.mark.parametrize("S", [5e-324, 1e-300, 1e-240, 1e-150, 1e150, 1e200, 1e300, 1e308])
@pytest.mark.parametrize("delta", [1e-300, 1e-3, 0.999])
def test_analytic_gaussian_calibrates_any_sensitivity_or_refuses_naming_the_budget(S, delta):
    """δ(σ) depends on σ/S only: σ is S times the unit calibration, or refused (it leaves the normal doubles)
    naming ε and δ (was OverflowError, ZeroDivisionError or a NaN root search beyond S of about 2^970 or below
    2^-1046, and a subnormal σ)."""
    for epsilon in (*[e for e in EPSILONS if e <= ANALYTIC_MAX_EPSILON], 1.0, ANALYTIC_MAX_EPSILON):
        try:
            unit = analytic_gaussian_sigma(epsilon, delta, 1.0)
        except ValueError as exc:  # sigma / S itself beyond the doubles (ε = 1e-300 at δ = 1e-300 is not)
            assert "epsilon" in str(exc) and "delta" in str(exc), str(exc)
            continue
        try:
            sigma = analytic_gaussian_sigma(epsilon, delta, S)
        except ValueError as exc:
            assert "epsilon" in str(exc) and "delta" in str(exc), str(exc)
            assert not sys.float_info.min <= S * unit < math.inf, (epsilon, str(exc))  # only where sigma leaves them
            continue
        assert 0.0 < sigma < math.inf and math.isclose(sigma / S, unit, rel_tol=1e-6), (epsilon, sigma, S * unit)


@pytest.mark.parametrize("epsilon", [1e-300, 1e-20, 1e-12, 1e-10, 1e-8])
@pytest.mark.parametrize("delta", [1e-20, 1e-100, 1e-300])
def test_analytic_gaussian_is_exact_at_a_small_epsilon_with_a_small_delta(epsilon, delta):
    """σ ≫ S here: the privacy loss is N(η, 2η) with η = S²/(2σ²) tiny, so δ(σ) = E[(1 − e^(ε − L))+] is, to first
    order in L (relative error about S/σ), the Gaussian hockey-stick s·(φ(k) − k Φ(−k)) with s = S/σ and
    k = (ε − η)/s, computed with erfcx (an independent formula). The returned σ must meet δ and be the least such
    (δ(σ) within 1e-6 of δ). Was δ(σ) = 5e283·δ at ε = 1e-20, δ = 1e-300 (the log Φ difference lost r)."""
    from scipy.special import erfcx

    sigma = analytic_gaussian_sigma(epsilon, delta, 1.0)
    s = 1.0 / sigma
    assert s < 1e-6
    k = (epsilon - s * s / 2.0) / s
    log_delta = math.log(s) - k * k / 2.0 + math.log(1.0 / math.sqrt(2.0 * math.pi) - k / 2.0 * erfcx(k / math.sqrt(2.0)))
    assert math.isclose(log_delta, math.log(delta), abs_tol=1e-6), (sigma, math.exp(log_delta - math.log(delta)))
