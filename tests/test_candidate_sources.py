"""The candidate sources of MWEM and CandidateLP (dpkit.methods.candidates): validated by name, shared by both
methods through one verb, registered under the names the random streams are keyed by, and the deprecated string
options map to them with a warning and the same release bit for bit."""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.methods import MWEM, CandidateLP, GaussianFit
from dpkit.methods.candidates import GaussianCandidates, MarginalCandidates, UniformCandidates
from dpkit.methods.registry import get

EPS, DELTA = 1.0, 1e-3
PSI = GaussianCandidates(fit=GaussianFit(epsilon=math.inf, method="psi", k=3, n_iter=4))


@pytest.fixture(scope="module")
def X():
    return np.clip(np.random.default_rng(5).normal(0.1, 0.4, size=(200, 4)), -1, 1)


# ----------------------------------------------------------------------------- (a) validation by name
@pytest.mark.parametrize("build, error, match", [
    (lambda: GaussianCandidates(fit="psi"), TypeError, r"fit must be a GaussianFit instance; got str"),
    (lambda: GaussianCandidates(fit=GaussianFit(epsilon=0.5)), ValueError,
     r"fit must be given without a budget.*allowed: fit.epsilon = inf, fit.delta = 0; got fit.epsilon = 0.5"),
    (lambda: GaussianCandidates(fit=GaussianFit(epsilon=math.inf, delta=1e-3)), ValueError, r"fit.delta = 0.001"),
    (lambda: GaussianCandidates(fit=GaussianFit(epsilon=math.inf, method="pca")), ValueError,
     r"method must be one of \('analyze_gauss', 'psi'\)"),
    (lambda: CandidateLP(epsilon=EPS, candidates="uniform"), TypeError, r"candidates must be a CandidateSource"),
    (lambda: MWEM(epsilon=EPS, candidates=GaussianFit(epsilon=math.inf)), TypeError,
     r"candidates must be a CandidateSource instance; got GaussianFit"),
    (lambda: MWEM(epsilon=EPS, candidates="marginals"), ValueError,
     r"candidates must be one of \('uniform', 'gaussian'\); got 'marginals'"),
])
def test_a_source_and_the_methods_refuse_a_bad_component_naming_the_parameter(build, error, match):
    with pytest.raises(error, match=match):
        build()


# ----------------------------------------------------------------------------- (b) registry names
@pytest.mark.parametrize("name, method_name, source", [
    ("mwem-uniform", "mwem-uniform", UniformCandidates()),
    # the (ε, δ) entries' fits are calibrated by the exact composition (docs/science/accounting.md)
    ("mwem-gaussian", "mwem-gaussian", GaussianCandidates(fit=GaussianFit(epsilon=math.inf, accounting="pld"))),
    ("mwem-gaussian-eps", "mwem-gaussian", GaussianCandidates()),
    ("lp-gauss-analyze-gauss-cands", "lp-gauss-analyze-gauss-cands",
     GaussianCandidates(fit=GaussianFit(epsilon=math.inf, accounting="pld"))),
    ("lp-uniform-cands", "lp-uniform-cands", UniformCandidates()),
    ("lp-gauss-analyze-gauss-cands-eps", "lp-gauss-analyze-gauss-cands", GaussianCandidates()),
    ("lp-uniform-cands-eps", "lp-uniform-cands", UniformCandidates()),
])
def test_registry_entries_keep_their_names_and_hold_the_component(name, method_name, source):
    """Random streams are keyed by these names: the composition must not rename a registered method."""
    m = get(name)
    assert m.candidates == source and m.name == method_name


def test_the_other_sources_name_the_methods_as_before():
    assert CandidateLP(epsilon=EPS, candidates=MarginalCandidates()).name == "lp-marginals-cands"
    assert CandidateLP(epsilon=EPS, candidates=PSI).name == "lp-gauss-psi-cands"
    assert MWEM(epsilon=EPS, candidates=MarginalCandidates()).name == "mwem-marginals"
    assert MWEM(epsilon=EPS, candidates=PSI).name == "mwem-gauss-psi"


# ----------------------------------------------------------------------------- (c) one component, both methods
@dataclasses.dataclass(frozen=True, kw_only=True)
class RecordingCandidates(GaussianCandidates):
    """Records every draw: (C, ε, δ, the generator's state before the draw, the points)."""

    calls: list = dataclasses.field(default_factory=list, compare=False)

    def draw(self, X, C, *, epsilon, delta, ledger, rng):
        state = rng.bit_generator.state
        points = super().draw(X, C, epsilon=epsilon, delta=delta, ledger=ledger, rng=rng)
        self.calls.append((C, epsilon, delta, state, points))
        return points


def test_the_same_source_draws_for_mwem_and_candidate_lp_at_each_method_s_share(X):
    src = RecordingCandidates(fit=PSI.fit)
    # the published split's shares (accounting="split"; "pld" scales the whole plan: tests/test_accounting_rounds.py)
    MWEM(epsilon=EPS, delta=DELTA, T=2, C=150, candidates=src, n_class=5, candidate_share=0.25,
         accounting="split").release(X, rng=1)
    CandidateLP(epsilon=EPS, delta=DELTA, C=250, R=8, candidates=src, accounting="split").release(X, rng=1)
    (c1, e1, d1, s1, p1), (c2, e2, d2, s2, p2) = src.calls
    assert (c1, e1, d1) == (150, EPS * 0.25, DELTA)  # MWEM: candidate_share of ε, all of δ
    assert (c2, e2, d2) == (250, 2 * EPS / 3, DELTA / 2)  # CandidateLP: Alg 9/10's share of the mean and PCA
    assert p1.shape == (150, 4) and p2.shape == (250, 4)
    for C, eps, delta, state, points in src.calls:  # the same generator state gives the same points, whoever draws
        g = np.random.default_rng()
        g.bit_generator.state = state
        again = PSI.draw(X, C, epsilon=eps, delta=delta, ledger=Ledger(eps, delta), rng=g)
        assert np.array_equal(again, points)


def test_mwem_takes_the_marginal_candidates_and_charges_them(X):
    res = MWEM(epsilon=EPS, delta=DELTA, T=2, C=100, candidates=MarginalCandidates(), n_class=5,
               accounting="split").release(X, rng=0)
    assert res.ledger["entries"][0]["name"] == "histograms"
    assert res.ledger["entries"][0]["epsilon"] == pytest.approx(EPS / 3)
    assert res.params["candidates"] == "marginals" and not res.params["data_independent_candidates"]


# ----------------------------------------------------------------------------- (d) the deprecated options
@pytest.mark.parametrize("old, new, spelled", [
    (dict(source="gaussian", fit_method="psi", k=3, n_iter=4), dict(candidates=PSI),
     "GaussianCandidates(fit=GaussianFit(epsilon=math.inf, method='psi', k=3, n_iter=4))"),
    (dict(source="marginals"), dict(candidates=MarginalCandidates()), "MarginalCandidates()"),
    (dict(source="uniform"), dict(candidates=UniformCandidates()), "UniformCandidates()"),
    (dict(fit_method="analyze_gauss"), dict(candidates=GaussianCandidates()), "GaussianCandidates()"),
])
def test_candidate_lp_s_deprecated_options_warn_and_release_the_same_bits(X, old, new, spelled):
    with pytest.warns(DeprecationWarning, match=r"CandidateLP\(.*\) is deprecated.*candidates=" + re.escape(spelled)):
        a = CandidateLP(epsilon=EPS, delta=DELTA, C=200, R=8, **old)
    b = CandidateLP(epsilon=EPS, delta=DELTA, C=200, R=8, **new)
    assert a == b
    _same_release(a, b, X)


@pytest.mark.parametrize("old, new", [("uniform", UniformCandidates()), ("gaussian", GaussianCandidates())])
def test_mwem_s_deprecated_options_warn_and_release_the_same_bits(X, old, new):
    with pytest.warns(DeprecationWarning, match=rf"MWEM\(candidates='{old}'\) is deprecated.*{type(new).__name__}\(\)"):
        a = MWEM(epsilon=EPS, delta=DELTA, T=2, C=150, n_class=5, candidates=old)
    b = MWEM(epsilon=EPS, delta=DELTA, T=2, C=150, n_class=5, candidates=new)
    assert a == b
    _same_release(a, b, X)


def test_a_deprecated_option_is_refused_by_its_own_name():
    with pytest.raises(ValueError, match=r"fit_method must be one of \('analyze_gauss', 'psi'\); got 'pca'"):
        CandidateLP(epsilon=EPS, fit_method="pca")
    with pytest.raises(ValueError, match=r"source must be one of \('uniform', 'gaussian', 'marginals'\)"):
        CandidateLP(epsilon=EPS, source="ellipsoid")


def _same_release(a, b, X):
    ra, rb = a.release(X, rng=3), b.release(X, rng=3)
    assert ra.method == rb.method and ra.params == rb.params and ra.ledger == rb.ledger
    assert np.array_equal(ra.synthetic.points, rb.synthetic.points)
    assert np.array_equal(ra.synthetic.weights, rb.synthetic.weights)


@pytest.mark.parametrize("method, delta, what", [
    ("analyze_gauss", 0.0, r"gauss-analyze-gauss .* the mean's noise std .* times sqrt\(2d\) reaches"),
    ("psi", 1e-5, r"the private PCA of gauss-psi .* noise scale .* times sqrt\(d\) reaches"),
])
def test_gaussian_candidates_check_their_budget_with_the_fits_public_check(method, delta, what):
    """GaussianCandidates.check_budget is GaussianFit.check_noise on the fit at that share: same refusal, same text."""
    src = GaussianCandidates(fit=GaussianFit(epsilon=math.inf, method=method))
    src.check_budget(500, 4, epsilon=EPS, delta=delta)
    dataclasses.replace(src.fit, epsilon=EPS, delta=delta).check_noise(500, 4)
    with pytest.raises(ValueError, match=what) as by_source:
        src.check_budget(500, 4, epsilon=1e-300, delta=delta)
    with pytest.raises(ValueError, match=what) as by_fit:
        dataclasses.replace(src.fit, epsilon=1e-300, delta=delta).check_noise(500, 4)
    assert str(by_source.value) == str(by_fit.value)
