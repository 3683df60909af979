"""The audit gate of the open board (dpkit.evaluation.gate) on the registry's methods and on under-noised copies.

False-alarm budget: every gate below runs at CONFIDENCE = 0.99, so a correct method is refuted with probability
at most 1 % per test; over the PASSES tests below (one gate each) the union bound gives at most 1 % × their
number. Seeds are fixed, so the outcomes are deterministic. Sizes: n = 569 rows (WDBC's) and d = 8 attributes
(CSN's), a small but real board shape; AIM's rounds need a whole release per draw (an estimate per round), so
they are audited at a toy size with few draws (a smoke test of the path, weak power: stated, not hidden).

Negative controls: the noise of a method divided by 4 while it claims the same ε must be refuted, with
ε_lb well above ε (the margins below are from the Gaussian privacy curve of the audited statistic: an
under-noised step carrying most of ρ has an exact ε of 3.6–4.7 at δ = 10⁻³, and the auditor's bound at
these sample sizes is about half of it).
"""
from __future__ import annotations

import dataclasses
import math
import sys
import textwrap
import warnings

import numpy as np
import pytest

from dpkit.evaluation.gate import BOARD_SHAPES, GATE_SHAPE, GateResult, audit_gate, neighbour_pairs, probes
from dpkit.methods.registry import get

CONFIDENCE = 0.99
N, D = BOARD_SHAPES["WDBC"][0], BOARD_SHAPES["CSN"][1]
EPS, DELTA = 1.0, 1e-3


def gate(name, method, n_samples=2000, n_release=100, **kw):
    """The gate at the board's shape; the release (always audited beside the measurement probe) with few draws here:
    these registry methods' power is in their measurements, and a whole release of MST or MWEM takes a fraction of
    a second (the release's own power: tests/test_gate_cheaters.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit_gate(name, method, epsilon=method.epsilon, delta=method.delta, n=N, d=D, rng=0,
                          n_samples=n_samples, n_release=n_release, confidence=CONFIDENCE, **kw)


def audit_of(res: GateResult, probe: str) -> dict:
    """The record of one of the gate's audits."""
    (record,) = [a for a in res.audits if a["probe"] == probe]
    return record


# ----------------------------------------------------------------------------- registry methods pass
PASSES = ["mst", "mst-eps", "mwem-gaussian", "mwem-gaussian-eps", "lp-gauss-analyze-gauss-cands",
          "lp-gauss-analyze-gauss-cands-eps"]


@pytest.mark.parametrize("name", PASSES)
def test_registry_method_passes(name):
    if name.startswith("mst"):
        pytest.importorskip("mbi")
    res = gate(name, get(name))
    assert res.passed and not res.refuted, res.as_dict()
    assert res.n == N and res.d == D and res.confidence == CONFIDENCE and res.neighbouring == "replace-one"
    # the audit looked at the released statistics that carry the budget, and always at the release itself, each at
    # its Bonferroni share of the confidence
    expected = {"mst": "measure", "mwem": "steps", "lp-g": "steps"}[name[:4].rstrip("-")]
    assert [a["probe"] for a in res.audits] == [expected, "release"]
    assert all(a["confidence"] == pytest.approx(1 - (1 - CONFIDENCE) / 2) for a in res.audits)


@pytest.mark.parametrize("name,steps", [("mwem-gaussian", ["candidate fit"]),
                                        ("lp-gauss-analyze-gauss-cands", ["moments", "candidate fit"]),
                                        ("lp-uniform-cands", ["moments"]), ("aim", ["initialise"])])
def test_registry_hooks_expose_the_private_measurements(name, steps):
    """MWEM and the candidate LPs release their Gaussian-fit candidates only through the synthetic database, AIM
    its measurements only through a whole (slow) release: their audit_steps hooks expose them to the gate."""
    m = get(name)
    pair = neighbour_pairs(N, D)[0]
    available = probes(m, pair)
    assert next(iter(available)) == "steps" and list(m.audit_steps()) == steps
    out = available["steps"](pair.d0, np.random.default_rng(0))
    assert list(out) == steps
    if "candidate fit" in out:
        assert out["candidate fit"].moments.shape == (D * (D + 1) // 2,)  # the noisy upper triangle of M


def test_aim_initial_measurement_passes_at_board_size():
    pytest.importorskip("mbi")
    res = gate("aim", get("aim"), n_release=20)
    assert res.passed and [a["probe"] for a in res.audits] == ["steps", "release"], res.as_dict()
    assert any("initialise" in leaf for p in res.pilot for leaf in p["leaves"])


def test_aim_rounds_pass_on_whole_releases_at_a_small_size():
    """The whole release as a black box (its synthetic database at the differing row) at n = 60, d = 3, 4 rounds:
    2·(2·8 + 100) whole releases, a smoke test of the path with little power."""
    pytest.importorskip("mbi")
    from dpkit.methods.aim import AIM

    m = AIM(epsilon=EPS, delta=DELTA, bins=2, rounds=4, iters=10, final_iters=10, m=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = audit_gate("aim-small", m, epsilon=EPS, delta=DELTA, n=60, d=3, n_samples=100, n_release=100, n_pilot=16,
                         confidence=CONFIDENCE, rng=0, steps="release")
    assert res.passed and res.probe == "release" and [a["probe"] for a in res.audits] == ["release"], res.as_dict()
    # at this size its noise hides the differing row from the pilot's 16 draws: said in the record, not an error
    assert all(p["leaves"] == [] for p in res.pilot) and res.statistic.startswith("none: no statistic")


# ----------------------------------------------------------------------------- negative controls
def test_negative_control_quarter_noise_mst_is_refuted():
    """MST at its registry configuration with every count's noise std divided by 4 (a subclass)."""
    pytest.importorskip("mbi")
    from dpkit.methods.mst import MST

    class QuarterNoiseMST(MST):
        def _noise(self, g, std, shape):
            return super()._noise(g, std / 4.0, shape)

    res = gate("mst/4", QuarterNoiseMST(epsilon=EPS, delta=DELTA), n_samples=4000)
    assert res.refuted and audit_of(res, "measure")["refuted"], res.as_dict()  # its margin: _near_theory below
    # the statistic is Gaussian with μ² = 16·2(ρ₁ + ρ₃) (the one- and two-way counts, 2/3 of ρ, noise std / 4)
    from dpkit.core.zcdp import cdp_rho

    _near_theory(res, "measure", math.sqrt(16 * 2 * (2 / 3) * cdp_rho(EPS, DELTA)))


def test_negative_control_quarter_noise_aim_initial_measurement_is_refuted(monkeypatch):
    """AIM with σ₀/4 (its one-way measurement carrying α = 0.99 of ρ: rounds = d)."""
    pytest.importorskip("mbi")
    import dpkit.methods.aim as aim_module

    real = aim_module.initial_scales
    monkeypatch.setattr(aim_module, "initial_scales", lambda *a: (real(*a)[0] / 4.0, real(*a)[1]))
    m = aim_module.AIM(epsilon=EPS, delta=DELTA, rounds=D, alpha=0.99)
    res = gate("aim/4", m, n_samples=4000)
    assert res.refuted and audit_of(res, "steps")["refuted"], res.as_dict()  # its margin: _near_theory below
    # its release charges AIM's own zCDP accountant with the divided noise's ρ, which refuses it
    assert audit_of(res, "release")["epsilon_lb"] == math.inf and "ledger refuses" in audit_of(res, "release")["statistic"]
    from dpkit.core.zcdp import cdp_rho

    _near_theory(res, "steps", math.sqrt(16 * 2 * 0.99 * cdp_rho(EPS, DELTA)))  # d one-way counts, 1/σ₀² = αρ/d each


def test_negative_control_quarter_noise_mwem_gaussian_candidates_is_refuted(monkeypatch):
    """MWEM's Gaussian-fit candidates with the fit's noise divided by 4 (candidate_share 0.98: the fit carries
    the budget)."""
    import dpkit.mechanisms.vector_release as vr
    from dpkit.methods import GaussianCandidates, GaussianFit

    real = vr.noisy_release  # the fit's releases under its published split (accounting="split", the control's shape)
    monkeypatch.setattr(vr, "noisy_release", lambda v, *, l1, l2, **kw: real(v, l1=l1 / 4.0, l2=l2 / 4.0, **kw))
    published_fit = GaussianCandidates(fit=GaussianFit(epsilon=math.inf, accounting="split"))
    m = dataclasses.replace(get("mwem-gaussian"), candidate_share=0.98, candidates=published_fit, accounting="split")
    assert m.candidates.fit.accounting == m.accounting == "split"
    res = gate("mwem-gaussian/4", m, n_samples=10_000)
    # Analyze Gauss splits the fit's budget between the mean and the second moments, so the statistic's
    # Gaussian shift is μ = 4·(Δ/σ)·√(k/d + 2k(d − k)/d²) on the pair x = 1, y = 1 with k = 3d/4 coordinates −1
    # (Δ/σ of one half at (0.49, 5·10⁻⁴)): exact ε ≈ 2.5, and the auditor's bound at 10⁴ draws about 1.2
    from dpkit.mechanisms.gaussian import analytic_gaussian_sigma

    k = math.ceil(3 * D / 4)
    mu = 4.0 / analytic_gaussian_sigma(0.98 * EPS / 2, DELTA / 2, 1.0) * math.sqrt(k / D + 2 * k * (D - k) / D**2)
    assert res.refuted, res.as_dict()
    assert "candidate fit.moments[size 36]" in [leaf for p in res.pilot for leaf in p["leaves"]]  # Analyze Gauss's M̃
    _near_theory(res, "steps", mu)


SCRATCH = textwrap.dedent('''
    """An entrant written outside dpkit: a noisy mean released with a quarter of the Gaussian noise it needs."""
    import math
    from dataclasses import dataclass

    import numpy as np

    from dpkit.core.rng import resolve_rng
    from dpkit.mechanisms.gaussian import analytic_gaussian_sigma
    from dpkit.queries.release import MethodBase
    from dpkit.queries.synthetic import WeightedDatabase


    @dataclass(frozen=True, kw_only=True)
    class NoisyMean(MethodBase):
        label = "noisy-mean"
        epsilon: float
        delta: float
        shrink: float = 4.0

        def measure(self, X, *, rng=None, ledger=None):
            X = np.asarray(X, dtype=float)
            n, d = X.shape
            sigma = analytic_gaussian_sigma(self.epsilon, self.delta, 2.0 * math.sqrt(d) / n) / self.shrink
            return X.mean(axis=0) + resolve_rng(rng).normal(0.0, sigma, size=d)

        def synthesize(self, stats, X, *, rng, timer):
            return WeightedDatabase.equally_weighted(np.clip(stats, -1, 1)[None, :]), None

        def release_params(self, stats, X, ledger):
            return {"epsilon": self.epsilon, "delta": self.delta}
''')


@pytest.fixture
def scratch_module(tmp_path, monkeypatch):
    (tmp_path / "my_entrant.py").write_text(SCRATCH)
    monkeypatch.syspath_prepend(str(tmp_path))
    import my_entrant

    yield my_entrant
    sys.modules.pop("my_entrant", None)


def test_under_noised_entrant_from_a_scratch_module_is_refuted(scratch_module):
    res = audit_gate("noisy-mean", scratch_module.NoisyMean(epsilon=EPS, delta=DELTA), epsilon=EPS, delta=DELTA,
                     n_samples=4000, confidence=CONFIDENCE)
    assert res.refuted and res.epsilon_lb > 1.5 * EPS, res.as_dict()
    assert audit_of(res, "measure")["refuted"] and audit_of(res, "release")["refuted"]  # its release is its mean
    record = res.as_dict()
    assert record["refuted"] is True and record["epsilon_lb"] == res.epsilon_lb and record["name"] == "noisy-mean"


def test_correctly_noised_entrant_from_a_scratch_module_passes(scratch_module):
    res = audit_gate("noisy-mean", scratch_module.NoisyMean(epsilon=EPS, delta=DELTA, shrink=1.0), epsilon=EPS,
                     delta=DELTA, n_samples=4000, confidence=CONFIDENCE)
    assert res.passed, res.as_dict()
    assert res.pair.startswith("replace-one") and (res.n, res.d) == GATE_SHAPE


# ----------------------------------------------------------------------------- the gate's own contract
def test_default_call_signature_and_record():
    res = audit_gate("mwem-gaussian", get("mwem-gaussian"), epsilon=EPS, delta=DELTA, n_samples=200, n_release=20,
                     n_pilot=4)
    assert isinstance(res, GateResult) and (res.n, res.d) == GATE_SHAPE == (BOARD_SHAPES["WDBC"][0], BOARD_SHAPES["CSN"][1])
    rec = res.as_dict()
    for key in ("name", "passed", "refuted", "epsilon_lb", "epsilon", "delta", "statistic", "event", "pair",
                "n_samples", "confidence", "audits", "audited", "elapsed_s"):
        assert key in rec
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.passed = False  # type: ignore[misc]


def test_neighbour_pairs_differ_in_one_row_at_corners():
    for p in neighbour_pairs(10, 4):
        assert p.d0.shape == p.d1.shape == (10, 4)
        assert np.count_nonzero(np.any(p.d0 != p.d1, axis=1)) == 1 and np.all(np.abs(p.d0[0]) == 1)
    (add, _) = neighbour_pairs(10, 4, "add-remove")
    assert add.d0.shape == (10, 4) and add.d1.shape == (9, 4) and np.array_equal(add.d0[1:], add.d1)


@pytest.mark.parametrize("kw,match", [({"epsilon": math.inf}, "epsilon"), ({"confidence": 1.0}, "confidence"),
                                      ({"n_samples": 5}, "n_samples"), ({"neighbouring": "swap"}, "neighbouring"),
                                      ({"steps": "lp"}, "steps"), ({"n": 1}, "n")])
def test_bad_arguments_are_named(kw, match):
    args = {"epsilon": EPS, "delta": DELTA, **kw}
    with pytest.raises(ValueError, match=match):
        audit_gate("mwem-gaussian", get("mwem-gaussian"), **args)


def test_a_probe_the_method_lacks_is_refused():
    with pytest.raises(ValueError, match="measure"):
        audit_gate("mwem-gaussian", get("mwem-gaussian"), epsilon=EPS, delta=DELTA, steps="measure", n_samples=20,
                   n_release=20)


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact ε(δ) of a Gaussian shift μ (unit variance): δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)."""
    from scipy import optimize, stats

    def excess(e):
        return stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta

    return float(optimize.brentq(excess, 1e-9, 100.0))


def _expected_bound(mu: float, n_est: int, delta: float, confidence: float) -> float:
    """The auditor's bound for a Gaussian shift μ at the expected counts of the best event {s > τ}."""
    from scipy import stats

    from dpkit.evaluation.audit import clopper_pearson_lower, clopper_pearson_upper

    level = 1.0 - (1.0 - confidence) / 2.0
    tau = np.linspace(-2.0, 8.0, 1001)
    lo = clopper_pearson_lower(np.round(n_est * stats.norm.sf(tau - mu)), n_est, level)
    hi = clopper_pearson_upper(np.round(n_est * stats.norm.sf(tau)), n_est, level)
    ok = lo > delta
    return float(np.max(np.log((lo[ok] - delta) / hi[ok])))


def _near_theory(res: GateResult, probe: str, mu: float) -> None:
    """The audit of ``probe``: its ε_lb is a valid bound (≤ the exact ε of the audited Gaussian statistic) and has the
    power theory gives it at its confidence (≥ 3/4 of the bound at the expected counts: the pilot's statistic and the
    event chosen on the selection half lose a little)."""
    a = audit_of(res, probe)
    lb, n_est = a["epsilon_lb"], a["n_samples"] // 2
    assert lb <= _gaussian_epsilon(mu, res.delta), (lb, mu)
    assert lb >= 0.75 * _expected_bound(mu, n_est, res.delta, a["confidence"]), (
        lb, _expected_bound(mu, n_est, res.delta, a["confidence"]))
