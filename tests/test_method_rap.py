"""RAP (relaxed projection onto noisy trigonometric moments): budget, seeds, the noise-free fit,
parameter errors, the gradient of the shared fitting code, and an audit of the released moments
on the worst-case neighbours (plus a negative control with the noise divided by 4)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from neighbour_pairs import corners as neighbours

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import BudgetExceededError
from dpkit.evaluation.audit import audit
from dpkit.mechanisms.trig.basis import basis_indices, basis_moments
from dpkit.methods._fit import ChebyshevStatistic, FourierStatistic, _separate_residual_and_grad
from dpkit.methods.rap import RelaxedProjection
from dpkit.methods.registry import get, names

EPS, DELTA = 1.0, 1e-3


@pytest.fixture(scope="module")
def data():
    g = np.random.default_rng(5)
    Z = g.standard_normal((200, 2)) @ np.array([[1.0, 0.6, 0.1], [0.0, 0.5, 0.8]])
    return np.clip(0.4 * Z, -1.0, 1.0)


def small(**kw):
    return RelaxedProjection(**{"epsilon": EPS, "delta": DELTA, "R": 8, "m": 30, "max_iter": 50, **kw})


@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_ledger_adds_up_to_the_stated_budget(data, delta):
    rel = small(delta=delta).release(data, rng=0)
    assert rel.spent == (EPS, delta)
    assert rel.privacy == ("ε-DP" if delta == 0 else "(ε,δ)-DP")
    entry = rel.ledger["entries"][0]
    assert entry["neighbouring"] == "replace-one"
    assert entry["mechanism"].startswith("laplace" if delta == 0 else "gaussian")
    assert rel.params["l1_sensitivity"] == pytest.approx(2 * 7 / data.shape[0])


def test_same_seed_same_release(data):
    a, b = small().release(data, rng=11), small().release(data, rng=11)
    np.testing.assert_array_equal(a.synthetic.points, b.synthetic.points)
    np.testing.assert_array_equal(a.diagnostics.noisy_moments, b.diagnostics.noisy_moments)
    c = small().release(data, rng=12)
    assert not np.array_equal(a.synthetic.points, c.synthetic.points)


def test_epsilon_inf_fits_the_exact_moments(data):
    m = small(epsilon=math.inf, m=60, max_iter=300)
    rel = m.release(data, rng=0)
    idx = rel.diagnostics.basis
    b = basis_moments(data, idx)
    np.testing.assert_array_equal(rel.diagnostics.noisy_moments, b)
    fitted = basis_moments(rel.synthetic.points, idx)
    assert np.max(np.abs(fitted - b)) < 1e-3, np.abs(fitted - b)
    assert rel.synthetic.points.min() >= -1.0 and rel.synthetic.points.max() <= 1.0


def test_marginal_pairs_index_set():
    idx = RelaxedProjection(epsilon=EPS, statistics="marginal-pairs", t=3).indices(3)
    assert idx.shape == (1 + 3 * 2 + 3, 3)
    assert not idx[0].any() and len({tuple(r) for r in idx}) == idx.shape[0]
    assert {tuple(r) for r in idx[-3:]} == {(1, 1, 0), (1, 0, 1), (0, 1, 1)}


@pytest.mark.parametrize("kw,msg", [({"R": 1}, "R"), ({"t": 1}, "t"), ({"m": 0}, "m"), ({"max_iter": 0}, "max_iter"),
                                    ({"statistics": "hist"}, "statistics"), ({"epsilon": -1.0}, "epsilon"),
                                    ({"delta": 1.5}, "delta")])
def test_bad_parameters_are_named(kw, msg):
    with pytest.raises(ValueError, match=msg):
        RelaxedProjection(**{"epsilon": EPS, **kw})


def test_R_beyond_basis_refused_before_spending(data):
    led = Ledger(EPS, DELTA)
    with pytest.raises(ValueError, match=r"R must be in \[2, t\^d\]"):
        small(R=28, t=3).release(data, rng=0, ledger=led)
    assert led.total() == (0.0, 0.0)


def test_ledger_without_room_is_refused(data):
    led = Ledger(0.5, DELTA)
    with pytest.raises(BudgetExceededError):
        small().release(data, rng=0, ledger=led)
    assert led.total() == (0.0, 0.0)


def test_noise_cap_picks_R_from_public_quantities():
    m = RelaxedProjection(epsilon=EPS, R=50, max_noise_std=0.07)
    # Laplace std √2·2(R'−1)/(nε) ≤ 0.07 at n = 569 ⇒ R' − 1 ≤ 14.08
    assert m.n_moments(569) == 15 and m.n_moments(10**5) == 50
    assert m.noise_std(15, 569) <= 0.07 < m.noise_std(16, 569)
    assert RelaxedProjection(epsilon=EPS, R=50, max_noise_std=1e-9).n_moments(100) == 2


def test_registered_in_the_leaderboard():
    assert get("rap").privacy == "(ε,δ)-DP" and get("rap-eps").privacy == "ε-DP"
    assert {"rap", "rap-eps"} <= set(names("leaderboard")) & set(names("baselines"))


@pytest.mark.parametrize("stat", [ChebyshevStatistic(basis_indices(4, 3, 30)),
                                  FourierStatistic(np.random.default_rng(1).normal(size=(6, 3)))])
def test_vjp_is_the_gradient(stat):
    g = np.random.default_rng(2)
    Y, h = g.uniform(-0.9, 0.9, (4, 3)), 1e-6
    G = g.normal(size=stat.values(Y).shape)
    num = np.zeros_like(Y)
    for i, j in np.ndindex(*Y.shape):
        E = np.zeros_like(Y)
        E[i, j] = h
        num[i, j] = ((stat.values(Y + E) - stat.values(Y - E)) * G).sum() / (2 * h)
    np.testing.assert_allclose(stat.vjp(Y, G), num, atol=1e-7)


@pytest.mark.parametrize("stat", [ChebyshevStatistic(basis_indices(4, 3, 30)),
                                  FourierStatistic(np.random.default_rng(1).normal(size=(40, 3)))])
def test_residual_and_grad_equals_values_then_vjp_to_the_bit(stat):
    # The fused step (Fourier: YΩᵀ, cos and sin once) must be the separate values + vjp computation,
    # bit for bit, so fused and former fits are the same releases.
    g = np.random.default_rng(3)
    Y = g.uniform(-1, 1, (300, 3))
    b = g.normal(size=stat.values(Y).shape[1]) * 300
    e, grad = stat.residual_and_grad(Y, b)
    e0, grad0 = _separate_residual_and_grad(stat, Y, b)
    assert np.array_equal(e, e0) and np.array_equal(grad, grad0)
    np.testing.assert_allclose(grad, stat.vjp(Y, np.tile(2 * (stat.values(Y).sum(axis=0) - b), (300, 1))), rtol=1e-12)


# --- audit on the worst-case neighbours: R = 3 (1, x1, x2), the changed row moves between opposite
# corners, so both moments move by 2/n: the L1 (4/n) and L2 (2√2/n) sensitivities are attained.
N_SAMPLES = 2000


def moment_stat(method):
    return lambda db, rng: float(method.measure(db, rng=rng)[1][1:].sum())


@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_audit_does_not_refute(delta):
    m = RelaxedProjection(epsilon=EPS, delta=delta, R=3)
    res = audit(moment_stat(m), *neighbours(), n_samples=N_SAMPLES, delta=delta, rng=0)
    assert not res.flags(EPS), res.to_dict()


@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_negative_control_quarter_noise_is_flagged(monkeypatch, delta):
    import dpkit.methods.rap as rap

    real = rap.noisy_release
    monkeypatch.setattr(rap, "noisy_release", lambda v, *, l1, l2, **kw: real(v, l1=l1 / 4.0, l2=l2 / 4.0, **kw))
    m = RelaxedProjection(epsilon=EPS, delta=delta, R=3)
    res = audit(moment_stat(m), *neighbours(), n_samples=N_SAMPLES, delta=delta, rng=0)
    assert res.flags(EPS), res.to_dict()
