"""The ``sensitivity="exact"`` switch of the trigonometric mechanisms: the grid sensitivity is never
below a brute-force pair scan, never above the default bound, the default is unchanged, and the
moment release calibrated on it is audited on the neighbour pair attaining the maximum (plus a
negative control with a quarter of the sensitivity)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.evaluation.audit import audit
from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism, TrigonometricMechanism
from dpkit.mechanisms.trig.basis import basis_indices, basis_moments, evaluate_basis
from dpkit.mechanisms.trig.grid import grid_points
from dpkit.mechanisms.trig.moments import GridSensitivity, grid_sensitivity, moment_noise, release_moments
from dpkit.mechanisms.trig.privacy import moment_privacy_loss

EPS, DELTA = 1.0, 1e-3


def grid(N, d):
    return np.array(list(itertools.product(grid_points(N), repeat=d)))


def brute_force(idx, N, n):
    """(L1, L2, worst L1 pair) by scanning every pair of grid points."""
    pts = grid(N, idx.shape[1])
    phi = evaluate_basis(pts, idx)[:, 1:]
    diff = phi[:, None, :] - phi[None, :, :]
    l1, l2 = np.abs(diff).sum(-1), np.sqrt((diff**2).sum(-1))
    i, j = np.unravel_index(np.argmax(l1), l1.shape)
    return l1.max() / n, l2.max() / n, (pts[i], pts[j])


CASES = [(d, t, N, R) for d, t, N in itertools.product((1, 2, 3), (2, 3, 4), (2, 3, 5)) for R in (t**d, max(2, t**d // 2))]


@pytest.mark.parametrize("d,t,N,R", CASES)
def test_never_below_the_brute_force_scan_nor_above_the_bound(d, t, N, R):
    idx, n = basis_indices(t, d, R), 10
    l1, l2, _ = brute_force(idx, N, n)
    for scan_max in (0, 10**6):  # the certified range bound, then the exact scan
        s = grid_sensitivity(idx, N, n, scan_max=scan_max)
        assert s.method == ("range-bound" if scan_max == 0 else "exact")
        assert s.l1 >= l1 - 1e-15 and s.l2 >= l2 - 1e-15, (s, l1, l2)
        assert s.l1 <= 2 * (R - 1) / n + 1e-9 and s.l2 <= 2 * math.sqrt(R - 1) / n + 1e-9
    exact = grid_sensitivity(idx, N, n)
    if N**d <= 1024:
        assert exact.l1 == pytest.approx(l1, abs=1e-9) and exact.l2 == pytest.approx(l2, abs=1e-9)


def test_strictly_smaller_on_a_coarse_grid():
    # N = 2: A = {±1/2}; T_1 moves by 1 (not 2), T_2 ≡ −1/2 does not move, x_1x_2 moves by 1/2
    idx = basis_indices(3, 2, 9)
    s = grid_sensitivity(idx, 2, 1, scan_max=0)
    assert s.l1 < 0.5 * 2 * 8 and s.l2 < 2 * math.sqrt(8)
    big = grid_sensitivity(basis_indices(3, 40, 50), 2, 100)  # d = 40: the range bound, far below 2(R−1)/n
    assert big.method == "range-bound" and big.l1 <= 0.5 * 2 * 49 / 100


def test_moment_noise_uses_it_and_the_default_is_unchanged():
    sens = GridSensitivity(l1=0.3, l2=0.1, method="exact")
    assert moment_noise(10, 5, epsilon=1.0).scale == 2 * 4 / 10  # the default bound
    assert moment_noise(10, 5, epsilon=1.0, sensitivity=sens).scale == 0.3
    with pytest.raises(ValueError, match="constants"):
        moment_noise(10, 5, epsilon=1.0, constants="thesis", sensitivity=sens)


@pytest.fixture(scope="module")
def data():
    g = np.random.default_rng(1)
    return np.clip(0.4 * g.standard_normal((120, 3)), -1, 1)


def test_release_with_the_switch(data):
    kw = {"epsilon": EPS, "delta": 0.0, "K": 1.0, "C": 60, "R": 8, "k": 2}
    default = ImprovedTrigonometricMechanism(**kw).release(data, rng=3)
    explicit = ImprovedTrigonometricMechanism(**kw, sensitivity="bound").release(data, rng=3)
    np.testing.assert_array_equal(default.synthetic.points, explicit.synthetic.points)
    np.testing.assert_array_equal(default.diagnostics.noisy_moments, explicit.diagnostics.noisy_moments)
    assert default.params["moment_noise"]["scale"] == pytest.approx(2 * 7 / (120 * EPS / 3), rel=1e-14)
    ex = ImprovedTrigonometricMechanism(**kw, sensitivity="exact").release(data, rng=3)
    assert ex.spent == (EPS, 0.0) and ex.params["sensitivity"] == "exact"
    assert ex.params["moment_noise"]["scale"] <= default.params["moment_noise"]["scale"]
    assert "grid sensitivity" in ex.ledger["entries"][0]["mechanism"]


@pytest.mark.parametrize("kw,msg", [({"sensitivity": "tight"}, "sensitivity"),
                                    ({"sensitivity": "exact", "constants": "thesis"}, "constants")])
def test_bad_switch_is_an_error(kw, msg):
    with pytest.raises(ValueError, match=msg):
        TrigonometricMechanism(epsilon=EPS, **kw)


# --- audit on the pair attaining the exact L1 sensitivity: d = 2, t = 3 (R = 9), N = 2, n = 4
N_GRID, T, N_ROWS = 2, 3, 4


def worst_neighbours():
    idx = basis_indices(T, 2, T**2)
    _, _, (x, y) = brute_force(idx, N_GRID, N_ROWS)
    d0 = np.tile(grid(N_GRID, 2)[0], (N_ROWS, 1))
    d1 = d0.copy()
    d0[0], d1[0] = x, y
    return idx, d0, d1


def loss_statistic(delta):
    idx, d0, d1 = worst_neighbours()
    mech = TrigonometricMechanism(epsilon=EPS, delta=delta, sensitivity="exact", t=T, N=N_GRID)
    b0, b1 = basis_moments(d0, idx), basis_moments(d1, idx)

    def stat(db, rng, size):
        # the switch's calibration (through the mechanism's own moment step), then `size` releases at once
        b, _, noise = mech._noisy_moments(db, idx, epsilon=EPS, delta=delta, led=Ledger(EPS, delta), rng=rng, N=N_GRID)
        return moment_privacy_loss(release_moments(b, noise, rng=rng, size=size), b0, b1, noise)
    return stat, d0, d1


@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_audit_on_the_worst_pair_does_not_refute(delta):
    stat, d0, d1 = loss_statistic(delta)
    res = audit(stat, d0, d1, n_samples=20_000, delta=delta, rng=0)
    assert not res.flags(EPS), res.to_dict()


@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_negative_control_quarter_sensitivity_is_flagged(monkeypatch, delta):
    import dpkit.mechanisms.trig.base as base

    real = base.grid_sensitivity
    monkeypatch.setattr(base, "grid_sensitivity", lambda *a, **k: GridSensitivity(
        l1=real(*a, **k).l1 / 4, l2=real(*a, **k).l2 / 4, method="exact"))
    stat, d0, d1 = loss_statistic(delta)
    res = audit(stat, d0, d1, n_samples=20_000, delta=delta, rng=0)
    assert res.flags(EPS), res.to_dict()
