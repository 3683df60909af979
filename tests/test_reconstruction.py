"""Reconstruction attacks (thesis Thm 1.4, Dinur–Nissim)."""
import numpy as np
import pytest

from dpkit.core.exceptions import FeasibilityError
from dpkit.evaluation.reconstruction import (
    adversarial_answers,
    all_subsets,
    dp_guess_error_bound,
    exhaustive_attack,
    hamming,
    lp_decode,
    noisy_answers,
    random_secret,
    random_subsets,
    reconstruct,
    subset_sums,
)


def test_all_subsets_enumerates_binary_expansions():
    S = all_subsets(3)
    assert S.shape == (8, 3)
    assert len({tuple(r) for r in S}) == 8
    assert subset_sums(S, np.array([1, 0, 1])).max() == 2


def test_noiseless_lp_recovers_secret_exactly():
    d = random_secret(40, rng=1)
    Q = random_subsets(40, 160, rng=2)
    for obj in ("l1", "linf"):
        c = lp_decode(Q, subset_sums(Q, d), objective=obj)
        assert hamming(c > 0.5, d) == 0


def test_exhaustive_attack_attains_but_never_exceeds_4alpha():
    # Thm 1.4 is deterministic: every consistent candidate is within 4α; the decoy answers attain it
    rng = np.random.default_rng(0)
    n = 8
    for alpha in (1.0, 2.0):
        d = random_secret(n, rng=rng)
        while min(d.sum(), n - d.sum()) < 2 * alpha:
            d = random_secret(n, rng=rng)
        a, decoy = adversarial_answers(d, alpha, rng=rng)
        assert np.abs(a - subset_sums(all_subsets(n), d)).max() <= alpha
        C, resid = exhaustive_attack(a, alpha, n=n)
        dist = [hamming(c, d) for c in C]
        assert any((c == d).all() for c in C)
        assert max(dist) == 4 * alpha


def test_lp_with_all_subsets_within_8alpha():
    rng = np.random.default_rng(3)
    n = 9
    for alpha in (0.5, 1.0, 2.0):
        d = random_secret(n, rng=rng)
        a = noisy_answers(all_subsets(n), d, noise="uniform", scale=alpha, rng=rng)
        c = lp_decode(all_subsets(n), a, objective="feasibility", alpha=alpha)
        assert hamming(c > 0.5, d) < 8 * alpha


def test_dp_answers_defeat_attack_and_underbudget_does_not():
    # ε = 1 total (Lap(m/ε) per answer): expected error ≥ 1/(1+e) ≈ 0.27; one trial of n = 64 bits
    # has std ≤ 0.5/√64·(dependence) — 0.15 leaves > 2 std margin; Lap(1) per answer leaks everything.
    good = reconstruct(64, noise="laplace", scale=4 * 64, rng=5)
    bad = reconstruct(64, noise="laplace", scale=1.0, rng=5)
    assert good.error_fraction >= dp_guess_error_bound(1.0) - 0.15
    assert bad.error_fraction <= 0.05


def test_validation_and_feasibility_errors():
    with pytest.raises(ValueError):
        noisy_answers(np.ones((2, 2)), np.ones(2), noise="gauss")
    with pytest.raises(ValueError):
        lp_decode(np.ones((2, 2)), np.ones(2), objective="feasibility")
    with pytest.raises(FeasibilityError):
        lp_decode(np.ones((3, 2)), np.array([0.0, 2.0, 4.0]), objective="feasibility", alpha=0.1)
    assert reconstruct(16, rng=0) == reconstruct(16, rng=0)
