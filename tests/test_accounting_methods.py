"""Every (ε, δ) method that splits its budget over several measurements is calibrated at the limit of its exact
composition (``accounting="pld"``, the default), keeps its published calibration behind the switch (``"split"``,
MST's ``"zcdp"``) and records the choice in the release's params and its ledger.

The noise a ``"pld"`` release records is checked here independently of dpkit's accountant: Gaussians only by the
exact Gaussian-DP profile (scipy), anything else with Google's dp-accounting directly (every measurement its own PLD,
pessimistic, grid 10⁻⁴): its composition meets (ε, δ) (δ(ε) ≤ δ), and 0.98 times that noise does not (the calibration
is at the limit: a 2 % margin covers the pessimistic grids of dpkit, 10⁻³, and of the check).
"""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy.stats import norm

from dpkit.methods.direct import DirectAnswering
from dpkit.methods.gaussian_fit import GaussianFit
from dpkit.methods.marginals import IndependentMarginals
from dpkit.methods.mst import MST
from dpkit.methods.registry import get, names

EPS, DELTA = 1.0, 1e-3


def _data(n=400, d=5, seed=0):
    return np.clip(np.random.default_rng(seed).normal(0.0, 0.4, (n, d)), -1.0, 1.0)


def _delta_of(releases, eps, factor=1.0):
    """δ(ε) of the recorded releases (each noise times ``factor``): Gaussians only, exactly (μ = √Σ μᵢ², the analytic
    Gaussian's profile, Balle & Wang Thm 8, with scipy here); otherwise composed by dp-accounting (pessimistic)."""
    if all(r["mechanism"].startswith("gaussian") for r in releases):
        mu = math.sqrt(sum(int(r.get("count", 1)) * (r["sensitivity"] / (factor * r["scale"])) ** 2 for r in releases))
        return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    parts = []
    for r in releases:
        m = factor * r["scale"] / r["sensitivity"]
        for _ in range(int(r.get("count", 1))):
            if r["mechanism"].startswith("gaussian"):
                parts.append(pld.from_gaussian_mechanism(m, value_discretization_interval=1e-4))
            else:
                parts.append(pld.from_laplace_mechanism(m, value_discretization_interval=1e-4))
    total = parts[0]
    for p in parts[1:]:
        total = total.compose(p)
    return total.get_delta_for_epsilon(eps)


PLD_METHODS = {
    "marginals-moments": IndependentMarginals(epsilon=EPS, delta=DELTA, kind="moments"),
    "gauss-analyze-gauss": GaussianFit(epsilon=EPS, delta=DELTA, method="analyze_gauss"),
    "gauss-psi": GaussianFit(epsilon=EPS, delta=DELTA, method="psi"),
}


@pytest.mark.parametrize("name", list(PLD_METHODS))
def test_pld_release_records_its_accounting_and_meets_the_budget_at_the_limit(name):
    method = PLD_METHODS[name]
    assert method.accounting == "pld"  # the default
    rel = method.release(_data(), rng=0)
    assert rel.params["accounting"] == "pld"
    (entry,) = rel.ledger["entries"]  # one spend of the whole budget: the composition
    assert (entry["epsilon"], entry["delta"]) == (EPS, DELTA)
    assert entry["meta"]["accounting"] == "pld" and entry["mechanism"] == "composition (accounting=pld)"
    releases = entry["meta"]["releases"]
    assert _delta_of(releases, EPS) <= DELTA
    assert _delta_of(releases, EPS, factor=0.98) > DELTA  # at the limit, not below it


@pytest.mark.parametrize("name", list(PLD_METHODS))
def test_split_is_the_published_calibration_and_pld_never_adds_noise(name):
    method = PLD_METHODS[name]
    X = _data()
    split = dataclasses.replace(method, accounting="split").release(X, rng=0)
    assert split.params["accounting"] == "split"
    spent = [e for e in split.ledger["entries"] if e["name"] != "pca"]
    assert all("accounting" not in e["meta"] for e in split.ledger["entries"])  # the published ledger, one per share
    split_scales = [e["meta"]["scale"] for e in spent]
    pld_scales = [r["scale"] for r in method.release(X, rng=0).ledger["entries"][0]["meta"]["releases"]]
    assert len(pld_scales) >= len(split_scales)
    # every share's noise shrinks by the same factor t < 1 (the split's mechanisms, the exact composition)
    ratios = [p / s for p, s in zip(pld_scales, split_scales)]
    assert max(ratios) < 0.9 and max(ratios) == pytest.approx(min(ratios), rel=1e-12)


def test_psi_route_composes_its_private_pca_with_the_moments():
    X = _data()
    pld_rel = GaussianFit(epsilon=EPS, delta=DELTA, method="psi").release(X, rng=0)
    split_rel = GaussianFit(epsilon=EPS, delta=DELTA, method="psi", accounting="split").release(X, rng=0)
    assert pld_rel.params["pca_noise_scale"] < 0.9 * split_rel.params["pca_noise_scale"]
    (pca,) = [r for r in pld_rel.ledger["entries"][0]["meta"]["releases"] if r["name"] == "pca"]
    assert pca["count"] == 10 and pca["scale"] == pld_rel.params["pca_noise_scale"]


def test_mechanism_ii_composes_moments_mean_and_pca():
    from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism

    X = _data(n=300, d=3)
    kw = dict(epsilon=EPS, delta=DELTA, K=4.0, R=8, C=200)
    pld_rel = ImprovedTrigonometricMechanism(**kw).release(X, rng=0)
    split_rel = ImprovedTrigonometricMechanism(**kw, accounting="split").release(X, rng=0)
    assert pld_rel.params["accounting"] == "pld" and split_rel.params["accounting"] == "split"
    t = pld_rel.params["accounting_factor"]
    assert 0.5 < t < 0.9 and split_rel.params["accounting_factor"] == 1.0
    for key in ("moments", "mean", "pca"):
        assert pld_rel.params["noise_scales"][key] == pytest.approx(t * split_rel.params["noise_scales"][key], rel=1e-12)
    (entry,) = pld_rel.ledger["entries"]
    assert (entry["epsilon"], entry["delta"], entry["meta"]["accounting"]) == (EPS, DELTA, "pld")
    assert [e["name"] for e in split_rel.ledger["entries"]] == ["moments", "mean", "pca"]  # the thesis's split
    # the recorded noise composes to (ε, δ) (moments Gaussian on their L2 sensitivity, mean Laplace on 2d/n, PSI's
    # L Gaussian multiplications on ρ√k)
    n, d = X.shape
    sens = pld_rel.params["sensitivities"]
    releases = [
        {"mechanism": pld_rel.params["noise_scales"]["moments_kind"], "scale": pld_rel.params["noise_scales"]["moments"],
         "sensitivity": sens["moments_l2"] if pld_rel.params["noise_scales"]["moments_kind"] == "gaussian"
         else sens["moments_l1"]},
        {"mechanism": "laplace", "scale": pld_rel.params["noise_scales"]["mean"], "sensitivity": 2.0 * d / n},
        {"mechanism": "gaussian", "scale": pld_rel.params["noise_scales"]["pca"],
         "sensitivity": sens["pca_spectral"] * math.sqrt(2), "count": 10},
    ]
    assert _delta_of(releases, EPS) <= DELTA < _delta_of(releases, EPS, factor=0.98)


def test_printed_constants_need_the_printed_split():
    from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism

    with pytest.raises(ValueError, match="accounting='pld' needs constants='correct'.*allowed accounting for the "
                                         "printed calibration: 'split'"):
        ImprovedTrigonometricMechanism(epsilon=EPS, delta=DELTA, constants="thesis")
    ImprovedTrigonometricMechanism(epsilon=EPS, delta=DELTA, constants="thesis", accounting="split")
    ImprovedTrigonometricMechanism(epsilon=EPS, delta=0.0, constants="thesis")  # mechanism I: nothing to compose


def test_direct_laplace_ii_takes_the_largest_per_query_epsilon_of_the_exact_composition():
    from dpkit.core.composition import per_step_epsilon
    from dpkit.queries.workload import GaussianKernelWorkload

    X = _data(n=300, d=3)
    wl = GaussianKernelWorkload.generate(200, 3, sigma=2.0, rng=0)
    pld_m = DirectAnswering(epsilon=EPS, delta=DELTA, noise="laplace_II")
    split_m = dataclasses.replace(pld_m, accounting="split")
    b_pld, *_ = pld_m.noise_scales(wl, 300)
    b_split, *_ = split_m.noise_scales(wl, 300)
    eps0_split = per_step_epsilon(EPS, DELTA, 200, rule="advanced")[0]
    eps0_pld = eps0_split * b_split[0] / b_pld[0]
    assert eps0_pld > 1.3 * eps0_split
    releases = [{"mechanism": "laplace", "scale": 1.0 / eps0_pld, "sensitivity": 1.0, "count": 200}]
    assert _delta_of(releases, EPS) <= DELTA < _delta_of(releases, EPS, factor=0.98)
    rel = pld_m.release(X, rng=0, workload=wl)
    assert rel.params["accounting"] == "pld" and rel.ledger["entries"][0]["meta"]["accounting"] == "pld"


def test_mst_pld_is_never_noisier_than_its_published_zcdp():
    """MST's selections enter the PLD by the bounded-range pair (dpkit.core.accountant.selection_loss_cdf), with its
    Gaussians composed exactly: at the board's budget the whole composition needs less noise than its published zCDP
    plan (a factor below 1, every step scaled by it), and spends exactly (ε, δ) by the accountant."""
    from dpkit.core import accountant
    from dpkit.methods.mst import noise_plan, plan_steps

    for d in (3, 8, 30):
        z = noise_plan(EPS, DELTA, d, (1 / 3, 1 / 3, 1 / 3), "zcdp")
        p = noise_plan(EPS, DELTA, d, (1 / 3, 1 / 3, 1 / 3), "pld")
        assert 0.9 < p["accounting_factor"] < 0.99
        assert p["std1"] < z["std1"] and p["std3"] < z["std3"] and p["eps_round"] > z["eps_round"]
        assert accountant.composed_delta(plan_steps(p, d), EPS) <= DELTA * (1 + 1e-9)
    X = _data(n=300, d=3)
    rel = MST(epsilon=EPS, delta=DELTA, m=200, iters=50).release(X, rng=0)
    assert rel.params["accounting"] == "pld" and rel.ledger["entries"][0]["meta"]["accounting"] == "pld"
    zc = MST(epsilon=EPS, delta=DELTA, m=200, iters=50, accounting="zcdp").release(X, rng=0)
    assert zc.params["accounting"] == "zcdp" and zc.ledger["entries"][0]["name"] == "mst (zCDP total)"


@pytest.mark.parametrize("make,allowed", [
    (lambda a: IndependentMarginals(epsilon=EPS, delta=DELTA, kind="moments", accounting=a), "('pld', 'split')"),
    (lambda a: GaussianFit(epsilon=EPS, delta=DELTA, accounting=a), "('pld', 'split')"),
    (lambda a: MST(epsilon=EPS, delta=DELTA, accounting=a), "('pld', 'zcdp')"),
    (lambda a: DirectAnswering(epsilon=EPS, delta=DELTA, noise="laplace_II", accounting=a), "('pld', 'split')"),
])
def test_accounting_is_validated_naming_the_parameter_and_the_allowed_values(make, allowed):
    with pytest.raises(ValueError, match=re.escape(f"accounting must be one of {allowed}; got 'exact'")):
        make("exact")


def test_the_board_entries_are_calibrated_by_the_exact_composition():
    """The board ranks the tight variant of every (ε, δ) method that has an accounting switch, in place of the
    published one (docs/science/accounting.md)."""
    for name in ("marginals-moments", "gauss-analyze-gauss", "gauss-psi", "trig-II", "direct-laplace_II", "mst"):
        assert get(name).accounting == "pld", name
    for name in ("mwem-gaussian", "lp-gauss-analyze-gauss-cands"):
        assert get(name).candidates.fit.accounting == "pld", name
    assert "trig-II" in names("tables")


@pytest.mark.slow
def test_the_docs_noise_table_is_the_tools_output():
    """docs/science/accounting.md's table is written by tools/accounting_table.py, never by hand."""
    from tools.accounting_table import main

    assert main(["--check"]) == 0
