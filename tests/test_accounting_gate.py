"""The auditor tries to refute every new calibration: the board's audit gate
(:func:`dpkit.evaluation.gate.audit_gate`, at the board's sizes :data:`~dpkit.evaluation.gate.GATE_SHAPE` and claim
(ε, δ) = (1, 10⁻³), board-add's defaults, seeds fixed) on the ``accounting="pld"`` calibrations, and on a negative
control that is too tight.

* Positive controls: the moments marginals, Analyze Gauss and the PSI Gaussian fit at the exact composition pass (a
  correct claim is refuted with probability ≤ 5 % per gate; the seeds are fixed, so the outcomes are fixed). The
  trigonometric mechanism II at ``"pld"`` passes too, but the gate finds no statistic of its release that differs
  between the neighbours on its pilot (ε_lb = 0, no measurement probe): a pass without power, not asserted here.
* Negative control: the same moments marginals calibrated by an accountant that composes with μ = max μᵢ over the
  attributes, as if each coordinate of the mean and of the second moments were its own release (the classic mistake
  "every coordinate is (ε, δ)-DP, so the vector is"). At d = 8 its true μ is √(2d) = 4 times the claim's: the mean
  alone is √d·μ* ≈ 1.1-GDP at μ* = 0.39, true ε ≈ 3 at δ = 10⁻³ for the pair, which the measurement probe refutes
  (asserted: refuted, ε_lb > 1, the claim). A calibration too tight by less (μ = max over the two releases: √2, true
  ε ≈ 1.5) is below the gate's power at these sizes (the add-method guide's power table: histogram marginals with a
  quarter of their noise, true ε = 4, are refuted); it is refuted by the exact composition instead
  (tests/test_accountant.py::test_negative_controls_are_refuted_by_the_exact_composition).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import pytest

from dpkit.core import accountant
from dpkit.evaluation.gate import audit_gate
from dpkit.mechanisms import vector_release
from dpkit.mechanisms.vector_release import Share
from dpkit.methods.candidate_lp import CandidateLP
from dpkit.methods.candidates import GaussianCandidates
from dpkit.methods.gaussian_fit import GaussianFit
from dpkit.methods.marginals import IndependentMarginals
from dpkit.methods.mwem import MWEM

pytestmark = pytest.mark.slow

EPS, DELTA = 1.0, 1e-3


def gate(name, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit_gate(name, method, epsilon=EPS, delta=DELTA, rng=0)


@pytest.mark.parametrize("method", [IndependentMarginals(epsilon=EPS, delta=DELTA, kind="moments"),
                                    GaussianFit(epsilon=EPS, delta=DELTA, method="analyze_gauss"),
                                    GaussianFit(epsilon=EPS, delta=DELTA, method="psi")],
                         ids=["marginals-moments", "gauss-analyze-gauss", "gauss-psi"])
def test_the_gate_does_not_refute_the_exact_composition(method):
    assert method.accounting == "pld"
    res = gate(method.name, method)
    assert res.passed, res.as_dict()
    assert [a["probe"] for a in res.audits] == ["measure", "release"]


@pytest.mark.parametrize("method", [MWEM(epsilon=EPS, delta=DELTA, candidates=GaussianCandidates(), accounting="pld",
                                         C=2000),
                                    CandidateLP(epsilon=EPS, delta=DELTA, candidates=GaussianCandidates(),
                                                accounting="pld")],
                         ids=["mwem-gaussian", "lp-gauss-analyze-gauss-cands"])
def test_the_gate_does_not_refute_the_rounds_and_moments_composed_exactly(method):
    """MWEM's and the candidate LP's whole composition at ``"pld"``: the gate audits the candidate fit (and the LP's
    moments) at the composed noise (``audit_steps``) and the whole release; it does not refute them. The release with
    100 draws per side (a whole MWEM release takes a fraction of a second; its measurements carry the power, as in
    tests/test_audit_gate.py; MWEM with 2000 candidates, its calibration does not depend on C), the measurement probe
    with 2000. Its power: the add-method guide's table (MWEM's fit refuted with a quarter of its noise)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = audit_gate(method.name, method, epsilon=EPS, delta=DELTA, rng=0, n_samples=2000, n_release=100)
    assert res.passed, res.as_dict()
    assert [a["probe"] for a in res.audits] == ["steps", "release"]


@dataclass(frozen=True, kw_only=True)
class PerCoordinateMax(IndependentMarginals):
    """The negative control (module docstring): the shares' L2 sensitivities are one coordinate's (2/n, 1/n), and the
    accountant composes with μ = max (``rule="max-gaussian"``, patched in by the test)."""

    def moment_shares(self, n: int, d: int) -> list[Share]:
        e2, d2 = self.epsilon / 2.0, self.delta / 2.0
        return [Share("mean", e2, d2, 2.0 * d / n, 2.0 / n), Share("second_moment", e2, d2, d / n, 1.0 / n)]


def test_a_too_tight_calibration_is_refuted_by_the_gate(monkeypatch):
    monkeypatch.setattr(vector_release, "plan_factor",
                        lambda steps, e, d: min(1.0, accountant.calibrate(steps, e, d, rule="max-gaussian")))
    method = PerCoordinateMax(epsilon=EPS, delta=DELTA, kind="moments")
    rel = method.release(__import__("numpy").zeros((10, 8)), rng=0)
    (entry,) = rel.ledger["entries"]
    sigma_mean = entry["meta"]["releases"][0]["scale"]
    true_mu = math.sqrt(2 * 8) * (2.0 / 10) / sigma_mean  # both releases: √d each, composed √2
    assert true_mu > 1.5  # the mistake is what the docstring says
    res = gate("marginals-moments (mu = max per coordinate)", method)
    assert res.refuted, res.as_dict()
    assert res.epsilon_lb > EPS
