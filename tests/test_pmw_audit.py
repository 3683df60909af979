"""The auditor tries to refute private multiplicative weights' ε (D–R Thm 4.13).

PMW touches the data only through NumericSparse (D–R Alg. 3, δ = 0): threshold noise Lap(σ(ε₁)/n), query noise
Lap(2σ(ε₁)/n), numeric answers Lap(σ(ε₂)/n), σ(e) = 2c/e, ε₁ = 8ε/9, ε₂ = 2ε/9. Its privacy does not depend on
the (public) threshold T, so the audit sets T = 0.5: with the mechanism's own T (≥ 50/n at these sizes) the sparse
vector never fires, the output does not depend on the data, and no audit could refute anything. The neighbours
are two distributions on a two-point domain, n = 2 records, differing in one record (the query's value moves by
1/n = 0.5, its sensitivity); the released statistic is the first answer when the sparse vector fired and −100 when
it did not, so the threshold events see both parts of the loss: whether it fired (ε₁) and the noisy value (ε₂).
One query exposes only part of the worst-case loss, so the negative control divides all three noise scales by 16
(true ε = 16) and must be refuted by more than twice the claim.
"""
from __future__ import annotations

import numpy as np

from dpkit.evaluation.audit import audit
from dpkit.mechanisms.pmw import PrivateMultiplicativeWeights

EPS = 1.0
N = 2
X0 = np.array([0.5, 0.5])
X1 = np.array([1.0, 0.0])  # one of the n = 2 records moved: f = 1{point 0} changes by 1/n
F = np.array([[1.0, 0.0]])
N_SAMPLES = 20_000


class AuditThreshold(PrivateMultiplicativeWeights):
    """PMW with the public threshold T = 0.5 (the privacy proof holds for any T)."""

    @property
    def threshold(self) -> float:
        return 0.5


def _mech() -> AuditThreshold:
    return AuditThreshold(epsilon=EPS, beta=0.5, n=N, domain_size=2, n_queries=1)


def released(m):
    def fn(x, rng):
        run = m.run(x, F, rng=rng)
        return run.answers[0] if run.n_above > 0 else -100.0
    return fn


def test_setting_fires_the_sparse_vector_and_needs_the_lowered_threshold():
    m = _mech()
    assert m.cutoff == 1
    g = np.random.default_rng(0)
    fired = [np.mean([m.run(x, F, rng=g).n_above > 0 for _ in range(2000)]) for x in (X0, X1)]
    assert 0.1 < fired[0] < fired[1] < 0.95
    # the mechanism's own threshold at n = 2 is far above any query value
    assert PrivateMultiplicativeWeights(epsilon=EPS, beta=0.5, n=N, domain_size=2, n_queries=1).threshold > 10.0


def test_audit_does_not_refute():
    res = audit(released(_mech()), X0, X1, n_samples=N_SAMPLES, rng=0)
    assert not res.flags(EPS), res.to_dict()


def test_negative_control_sixteenth_noise_is_refuted_by_a_wide_margin(monkeypatch):
    real = PrivateMultiplicativeWeights.noise_scales
    monkeypatch.setattr(PrivateMultiplicativeWeights, "noise_scales", lambda self: tuple(s / 16.0 for s in real(self)))
    res = audit(released(_mech()), X0, X1, n_samples=N_SAMPLES, rng=0)
    assert res.epsilon_lb > 2.0 * EPS, res.to_dict()
