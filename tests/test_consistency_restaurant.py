"""Seed 004, Sec. 7: Boosting, the combo projection, Algorithm 1, the closed form, data and privacy step.

Exact identities are compared at rounding level (see test_consistency_core.py). The one
statistical test (Laplace noise scale) uses a 5-standard-error margin derived from the
Laplace law: E|Z| = b and sd|Z| = b, so the mean of N absolute noises has se b/√N.
"""
from __future__ import annotations

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import BudgetExceededError
from dpkit.mechanisms.consistency import (
    COMBO_B,
    COMBOS,
    GeneralProjector,
    KaryTree,
    aggregate,
    algorithm1,
    alternating_projection,
    block_projectors,
    boost,
    closed_form,
    combo_projector,
    generate_restaurant,
    privatize_restaurant,
    restaurant_residual,
    restaurant_sensitivity,
    restaurant_system,
    tree_height,
    tree_residual,
)
from dpkit.mechanisms.consistency.constraints import ConstraintSystem
from dpkit.mechanisms.consistency.restaurant import TABLE2
from dpkit.mechanisms.consistency.trees import tree_constraint_matrix

PI_308 = np.array(
    [
        [236, 12, 16, -56, 116],
        [12, 152, 100, 112, 32],
        [16, 100, 236, -56, -60],
        [-56, 112, -56, 196, 56],
        [116, 32, -60, 56, 104],
    ]
)


def test_tree_height_and_layout():
    assert [tree_height(T) for T in (1, 2, 3, 32, 33, 1024)] == [1, 2, 3, 6, 7, 11]
    assert tree_height(9, 3) == 3 and tree_height(10, 3) == 4
    t = KaryTree(T=37, k=2)
    assert (t.h, t.n_leaves, t.n_nodes) == (7, 64, 127)
    assert t.leaf_index(0) == 63 and t.leaf_index(36) == 99
    with pytest.raises(ValueError, match="day index"):
        t.leaf_index(37)
    with pytest.raises(ValueError, match="k must be at least 2"):
        KaryTree(T=4, k=1)


@pytest.mark.parametrize("k,T", [(2, 8), (3, 9), (2, 32), (4, 16), (3, 7), (2, 37)])
def test_boost_equals_eq7_on_tree_constraints(k, T):
    tree = KaryTree(T=T, k=k)
    c = 3
    S = ConstraintSystem(M=tree_constraint_matrix(tree, c))
    X = np.random.default_rng(T).standard_normal((tree.n_nodes, c)) * 10
    ref = GeneralProjector(system=S, method="pinv").project(X.ravel()).reshape(X.shape)
    Y = boost(X, k)
    assert np.max(np.abs(Y - ref)) < 1e-10
    assert np.max(np.abs(tree_residual(Y, k))) < 1e-10
    # batched over a trailing axis of many trees == tree by tree
    many = np.random.default_rng(1).standard_normal((tree.n_nodes, 4, 2))
    Ym = boost(many, k)
    for i in range(4):
        for j in range(2):
            assert np.allclose(Ym[:, i, j], boost(many[:, i, j], k), atol=1e-12)


def test_aggregate_pads_and_is_consistent():
    L = np.arange(1, 11, dtype=float)[:, None] * [1.0, 2.0]
    X = aggregate(L, k=3)
    tree = KaryTree(T=10, k=3)
    assert X.shape == (tree.n_nodes, 2)
    assert np.allclose(X[0], L.sum(axis=0))
    assert np.all(X[tree.n_internal + 10 :] == 0)  # padded days are zero
    assert np.max(np.abs(tree_residual(X, 3))) == 0


def test_combo_matrix_and_projector():
    assert np.allclose(COMBO_B @ COMBOS.T, 0)  # null(B) ⊇ span(combos)
    assert np.linalg.matrix_rank(COMBOS) == 3 and np.linalg.matrix_rank(COMBO_B) == 2  # so equality
    Pi = combo_projector(COMBO_B)
    assert np.allclose(Pi * 308, PI_308, atol=1e-10)
    assert np.allclose(TABLE2 @ COMBO_B.T, 0)  # every printed Table 2 column is consistent
    assert np.allclose(COMBO_B @ np.full(5, 3.0), [9, 3])  # the paper's impossible (3,…,3)


def _restaurant(T, k=2, seed=0):
    d = generate_restaurant(T, k=k, rng=seed)
    rel = privatize_restaurant(d, 1.0, rng=seed + 1)
    return d, rel


@pytest.mark.parametrize("T,k", [(32, 2), (37, 2), (20, 3)])
def test_closed_form_equals_high_accuracy_reference(T, k):
    d, rel = _restaurant(T, k)
    tree = d.tree
    S, _ = restaurant_system(tree, COMBO_B)
    x = rel.X_noisy.ravel()
    cf = closed_form(rel.X_noisy, COMBO_B, k=k).ravel()
    scale = np.max(np.abs(cf))
    for method, tol in (("splu", 1e-10), ("pinv", 1e-10), ("lsqr", 1e-8)):
        ref = GeneralProjector(system=S, method=method, lsqr_tol=1e-15).project(x)
        assert np.max(np.abs(cf - ref)) < tol * scale, method
    assert np.max(np.abs(S.residual(cf))) < 1e-10 * scale
    # the residual helper matches M x − b
    assert np.allclose(restaurant_residual(rel.X_noisy, tree, COMBO_B), S.residual(x))


def test_closed_form_detects_wrong_order_of_operations():
    """Π on the leaves only (no internal nodes) is NOT the optimum: the check can fail."""
    d, rel = _restaurant(16)
    Y = boost(rel.X_noisy, 2)
    Y[d.tree.leaves] = Y[d.tree.leaves] @ combo_projector(COMBO_B)
    assert np.max(np.abs(Y - closed_form(rel.X_noisy, COMBO_B))) > 1e-3


def test_algorithm1_is_eq8_with_two_blocks_and_converges():
    d, rel = _restaurant(8)
    tree = d.tree
    S, blocks = restaurant_system(tree, COMBO_B)
    generic = alternating_projection(rel.X_noisy.ravel(), block_projectors(S, blocks, method="pinv"), stop="fixed", max_iter=5)
    alg = algorithm1(rel.X_noisy, COMBO_B, stop="fixed", max_iter=5, track=False)
    assert np.max(np.abs(generic.x - alg.x.ravel())) < 1e-9
    ref = closed_form(rel.X_noisy, COMBO_B)
    res = algorithm1(rel.X_noisy, COMBO_B, stop="mean-change", tol=1e-13, max_iter=20_000, x_ref=ref, x_true=d.X)
    assert res.converged and res.trace["dist_inf"][-1] < 1e-9
    assert np.all(np.diff(res.trace["dist"]) <= 1e-9)
    assert np.all(np.diff(res.trace["err"] ** 2) <= 1e-9)  # Fejér: all-node error never increases
    assert res.trace["mse"][-1] < 1e-18


def test_algorithm1_leaves_optimal_after_one_cycle_and_ablation():
    d, rel = _restaurant(64)
    ref = closed_form(rel.X_noisy, COMBO_B)
    one = algorithm1(rel.X_noisy, COMBO_B, stop="fixed", max_iter=1, track=False)
    lv = d.tree.leaves
    assert np.max(np.abs(one.x[lv] - ref[lv])) < 1e-9
    assert np.max(np.abs(one.x - ref)) > 1e-2  # ...but the internal nodes are not yet optimal
    abl = algorithm1(rel.X_noisy, COMBO_B, stop="fixed", max_iter=1, combo="all-nodes", track=False)
    assert np.max(np.abs(abl.x - ref)) < 1e-9


def test_paper_stop_rule_does_not_give_1e6_accuracy():
    """The 10⁻⁶ mean-change rule stops far from the optimum (contraction ≈ 1 − 1/(2T−1))."""
    d, rel = _restaurant(64)
    ref = closed_form(rel.X_noisy, COMBO_B)
    res = algorithm1(rel.X_noisy, COMBO_B, stop="mean-change", tol=1e-6, max_iter=100_000, track=False)
    assert res.converged
    assert np.max(np.abs(res.x - ref)) > 1e-4


def test_sensitivity_matches_brute_force_neighbours():
    T, k = 13, 2
    d = generate_restaurant(T, k=k, rng=3)
    h = tree_height(T, k)
    assert restaurant_sensitivity(T, k=k) == 5 * h == restaurant_sensitivity(T, k=k, rule="paper")
    worst = 0.0
    for t in range(T):
        for combo in COMBOS:
            sales = d.sales.copy()
            sales[t] += combo  # add one event: a customer buys one combo on day t
            worst = max(worst, float(np.abs(aggregate(sales, k) - d.X).sum()))
    assert worst == restaurant_sensitivity(T, k=k)


def test_privacy_step_spends_through_ledger_and_has_the_right_scale():
    d = generate_restaurant(300, rng=0)
    led = Ledger(1.5)
    rel = privatize_restaurant(d, 1.0, ledger=led, rng=1)
    assert led.spent == (1.0, 0.0)
    e = led.entries[0]
    assert e.mechanism == "Laplace" and e.neighbouring == "add-remove"
    b = rel.sensitivity / 1.0
    N = rel.X_noisy.size
    mad = float(np.mean(np.abs(rel.X_noisy - d.X)))
    assert abs(mad - b) < 5 * b / np.sqrt(N)  # E|Lap(b)| = b, sd = b
    with pytest.raises(BudgetExceededError):
        privatize_restaurant(d, 1.0, ledger=led, rng=2)
    same = privatize_restaurant(d, 1.0, rng=1)
    assert np.array_equal(same.X_noisy, rel.X_noisy)  # seeded, bit-identical
    assert rel.ledger["entries"][0]["epsilon"] == 1.0


def test_generator_is_consistent_and_seeded():
    d = generate_restaurant(50, rng=4)
    assert np.allclose(d.sales @ COMBO_B.T, 0)
    assert np.max(np.abs(restaurant_residual(d.X, d.tree, COMBO_B))) == 0
    assert np.array_equal(generate_restaurant(50, rng=4).X, d.X)


def test_bad_inputs_trees():
    with pytest.raises(ValueError, match="complete"):
        boost(np.zeros(6), 2)
    with pytest.raises(ValueError, match=r"shape \(n_nodes, 5\)"):
        closed_form(np.zeros((7, 4)), COMBO_B)
    with pytest.raises(ValueError, match="finite"):
        closed_form(np.full((7, 5), np.nan), COMBO_B)
    with pytest.raises(ValueError, match="combo"):
        algorithm1(np.zeros((7, 5)), COMBO_B, combo="internal")
    with pytest.raises(ValueError, match="epsilon"):
        privatize_restaurant(generate_restaurant(4, rng=0), -1.0)
    with pytest.raises(ValueError, match="mean_combos"):
        generate_restaurant(4, mean_combos=(1.0, 2.0), rng=0)
    with pytest.raises(ValueError, match="T"):
        generate_restaurant(0, rng=0)
