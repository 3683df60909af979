"""dpkit's compiled Private-PGM estimator (dpkit.methods._compiled_pgm) against mbi's own.

The oracle (Hugin message passing with the junction tree as data) must give mbi's marginals to float32
rounding: a few hundred summations of numbers at most 1 in single precision (2⁻²⁴ ≈ 6·10⁻⁸ each) stay far
below the 2·10⁻⁵ allowed. A negative control (the reverse messages not divided out) must miss by far more.
Whole fits are the same algorithm in another summation order, so they are compared on what the algorithm
promises: marginals near mbi's and a loss no worse than mbi's by more than a small fraction.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("mbi")

from dpkit.methods._compiled_pgm import (  # noqa: E402
    _programs,
    fit_model_compiled,
    hugin_marginals,
    plan_structure,
)
from dpkit.methods._discrete import attr_names, fit_model, load_mbi, model_marginals  # noqa: E402

ORACLE_TOL = 2e-5

STRUCTURES = {
    # a chain, and two attributes in components of their own
    "chain": (6, 3, [(0, 1), (1, 2), (2, 3), (4,), (5,)]),
    # a cycle with a chord-free square: the junction tree has cliques of three
    "cycle": (5, 2, [(0, 1), (1, 2), (2, 3), (0, 3), (0, 4)]),
    # a three-way clique joined to a pair, four values per attribute
    "triple": (4, 4, [(0, 1, 2), (2, 3)]),
    # a star whose centre is in every message
    "star": (7, 3, [(0, k) for k in range(1, 7)]),
}


def _domain(d: int, bins: int):
    mbi = load_mbi()
    return mbi.Domain(attr_names(d), [bins] * d)


def _measurements(d: int, bins: int, cliques, values=None):
    mbi = load_mbi()
    names = attr_names(d)
    out = []
    for k, c in enumerate(cliques):
        y = np.zeros(bins ** len(c)) if values is None else values[k]
        out.append(mbi.LinearMeasurement(y, tuple(names[i] for i in c), stddev=1.0))
    return out


def _mbi_hugin(domain, cliques, thetas):
    mbi = load_mbi()
    from mbi import marginal_oracles

    pot = mbi.CliqueVector(domain, cliques, {c: mbi.Factor(domain.project(c), t) for c, t in zip(cliques, thetas)})
    return marginal_oracles.message_passing_hugin(pot, 1.0)


def _random_potentials(plan, bins: int, seed: int = 7):
    """Log-potentials N(0, 3²) on the plan's loss cliques: θ's flat vector and the tables, in the plan's order."""
    rng = np.random.default_rng(seed)
    theta = np.zeros(plan.theta_size, dtype=np.float32)
    thetas = []
    for c, o in zip(plan.cliques, plan.offsets):
        t = (3.0 * rng.standard_normal((bins,) * len(c))).astype(np.float32)
        theta[o:o + t.size] = t.ravel()
        thetas.append(t)
    return theta, thetas


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_oracle_matches_mbi_hugin(name):
    d, bins, cl = STRUCTURES[name]
    domain = _domain(d, bins)
    plan = plan_structure(domain, _measurements(d, bins, cl), bins)
    theta, thetas = _random_potentials(plan, bins)
    ours = hugin_marginals(plan, theta)
    ref = _mbi_hugin(domain, plan.cliques, thetas)
    err = max(float(np.abs(ours[o:o + bins ** len(c)] - np.asarray(ref[c].values).ravel()).max())
              for c, o in zip(plan.cliques, plan.offsets))
    assert err <= ORACLE_TOL, (name, err)
    # each loss clique's marginal is a distribution
    for c, o in zip(plan.cliques, plan.offsets):
        assert abs(float(ours[o:o + bins ** len(c)].sum()) - 1.0) <= ORACLE_TOL


def test_oracle_negative_control_without_reverse_messages():
    """The same oracle that forgets to divide out the message a clique already received misses by far more."""
    d, bins, cl = STRUCTURES["chain"]
    domain = _domain(d, bins)
    plan = plan_structure(domain, _measurements(d, bins, cl), bins)
    theta, thetas = _random_potentials(plan, bins)
    arrays = dict(plan.arrays)
    arrays["e_rev"] = np.full_like(arrays["e_rev"], arrays["written"].shape[1] - 1)
    broken = np.asarray(_programs()["marginals"](theta, arrays))
    ref = _mbi_hugin(domain, plan.cliques, thetas)
    err = max(float(np.abs(broken[o:o + bins ** len(c)] - np.asarray(ref[c].values).ravel()).max())
              for c, o in zip(plan.cliques, plan.offsets))
    assert err > 100 * ORACLE_TOL, err


def _noisy_counts(d: int, bins: int, cliques, n: int, sigma: float, seed: int):
    """Noisy marginal counts of n rows drawn from a random correlated distribution on the grid."""
    rng = np.random.default_rng(seed)
    skew = 0.5 ** np.arange(bins)
    base = rng.choice(bins, size=(n, 1), p=skew / skew.sum())
    X = (base + (rng.random((n, d)) < 0.2)) % bins  # attributes skewed and correlated through `base`
    out = []
    for c in cliques:
        idx = np.zeros(n, dtype=np.int64)
        for a in c:
            idx = idx * bins + X[:, a]
        y = np.bincount(idx, minlength=bins ** len(c)).astype(float)
        out.append((tuple(c), y + rng.normal(0.0, sigma, size=y.shape), sigma))
    return out


def _loss(model, meas, d, n):
    cl = [c for c, _y, _s in meas]
    got = model_marginals(model, cl)
    return 0.5 * sum(float((((n * p).ravel() - y) / s) ** 2 @ np.ones(y.size)) for p, (_c, y, s) in zip(got, meas))


@pytest.mark.parametrize("name", ["chain", "cycle", "triple"])
def test_fit_matches_mbi(name):
    """1000 steps from zero: marginals within 10⁻³ of mbi's, loss within 1 % (float32 paths diverge slowly)."""
    d, bins, cl = STRUCTURES[name]
    n = 2000
    meas = [((i,), *_noisy_counts(d, bins, [(i,)], n, 20.0, 1 + i)[0][1:]) for i in range(d)]
    meas += _noisy_counts(d, bins, [c for c in cl if len(c) > 1], n, 60.0, 99)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fit_model(meas, d=d, bins=bins, n=n, iters=1000)
        ours = fit_model_compiled(meas, d=d, bins=bins, n=n, iters=1000)
    cl_all = [c for c, _y, _s in meas]
    diff = max(float(np.abs(a - b).max()) for a, b in zip(model_marginals(ours, cl_all), model_marginals(ref, cl_all)))
    assert diff <= 1e-3, diff
    l_ours, l_ref = _loss(ours, meas, d, n), _loss(ref, meas, d, n)
    assert l_ours <= 1.01 * l_ref + 1e-6, (l_ours, l_ref)
    # the fit moved far from the start (uniform marginals): the comparison is not between two untouched models
    uniform = 0.5 * sum(float((((n / y.size) - y) / s) @ (((n / y.size) - y) / s)) for _c, y, s in meas)
    assert uniform > 10.0 * l_ours, (uniform, l_ours)


def test_warm_start_chain_matches_mbi():
    """AIM's pattern: fit, add a clique, refit warm-started from the last model; both chains stay close."""
    d, bins = 6, 3
    n = 3000
    meas = [((i,), *_noisy_counts(d, bins, [(i,)], n, 15.0, 10 + i)[0][1:]) for i in range(d)]
    extra = _noisy_counts(d, bins, [(0, 1), (1, 2), (0, 2), (3, 4)], n, 15.0, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fit_model(meas, d=d, bins=bins, n=n, iters=200)
        ours = fit_model_compiled(meas, d=d, bins=bins, n=n, iters=200)
        for k in range(1, len(extra) + 1):
            ref = fit_model(meas + extra[:k], d=d, bins=bins, n=n, iters=200, warm_start=ref)
            ours = fit_model_compiled(meas + extra[:k], d=d, bins=bins, n=n, iters=200, warm_start=ours)
    cl_all = [c for c, _y, _s in meas + extra]
    diff = max(float(np.abs(a - b).max()) for a, b in zip(model_marginals(ours, cl_all), model_marginals(ref, cl_all)))
    assert diff <= 1e-3, diff
    assert set(map(tuple, ours.cliques)) == set(map(tuple, ref.cliques))


def test_one_program_for_structures_of_one_bucket():
    """Two different structures whose padded sizes agree run the same compiled program (no new compilation)."""
    d, bins = 8, 3
    n = 1000
    one = [((i,), *_noisy_counts(d, bins, [(i,)], n, 10.0, i)[0][1:]) for i in range(d)]
    a = one + _noisy_counts(d, bins, [(0, 1), (2, 3)], n, 10.0, 1)
    b = one + _noisy_counts(d, bins, [(4, 5), (1, 6)], n, 10.0, 2)
    domain = _domain(d, bins)
    mbi = load_mbi()
    names = attr_names(d)

    def plan(meas):
        ms = [mbi.LinearMeasurement(np.asarray(y) / n, tuple(names[i] for i in c), stddev=s / n) for c, y, s in meas]
        return plan_structure(domain, ms, bins)

    assert plan(a).shape_key == plan(b).shape_key
    descend = _programs()["descend"]
    fit_model_compiled(a, d=d, bins=bins, n=n, iters=50)
    size = descend._cache_size()
    fit_model_compiled(b, d=d, bins=bins, n=n, iters=50)
    assert descend._cache_size() == size


def test_fit_arguments_are_checked():
    with pytest.raises(ValueError, match="iters"):
        fit_model_compiled([((0,), np.ones(3), 1.0)], d=2, bins=3, n=10, iters=0)
    with pytest.raises(ValueError, match="measurements"):
        fit_model_compiled([], d=2, bins=3, n=10, iters=10)
