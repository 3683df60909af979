"""Randomness: one keyword ``rng``; same seed => bit-identical output, different seeds differ."""
from __future__ import annotations

import numpy as np
import pytest

from dpkit.core.rng import resolve_rng, spawn, spawn_seeds
from dpkit.mechanisms import Exponential, Gaussian, Laplace, LaplaceI, ReportNoisyMax


def test_resolve_types():
    g = np.random.default_rng(1)
    assert resolve_rng(g) is g  # passed through: the caller's stream advances
    assert isinstance(resolve_rng(None), np.random.Generator)
    assert isinstance(resolve_rng(np.random.SeedSequence(3)), np.random.Generator)
    assert resolve_rng(np.int64(4)).random() == resolve_rng(4).random()


@pytest.mark.parametrize(
    "bad, exc",
    [(1.5, TypeError), (True, TypeError), (np.random.RandomState(0), TypeError), ("0", TypeError), (-1, ValueError)],
)
def test_resolve_rejects(bad, exc):
    with pytest.raises(exc, match="rng"):
        resolve_rng(bad)


def test_same_seed_identical_different_seeds_differ():
    a = resolve_rng(123).random(50)
    b = resolve_rng(123).random(50)
    c = resolve_rng(124).random(50)
    assert np.array_equal(a, b)
    assert not np.any(a == c)


def test_spawn_prefix_stable_and_independent():
    s3 = [g.random(20) for g in spawn(7, 3)]
    s5 = [g.random(20) for g in spawn(7, 5)]
    for x, y in zip(s3, s5):  # child i does not depend on how many children there are
        assert np.array_equal(x, y)
    assert not np.array_equal(s5[0], s5[1])
    assert len(spawn_seeds(7, 0)) == 0
    with pytest.raises(ValueError, match="n must be a non-negative integer"):
        spawn(7, -1)
    with pytest.raises(TypeError, match="rng"):
        spawn(1.5, 2)


def test_spawn_from_generator_advances_parent():
    g = np.random.default_rng(0)
    a = [c.random() for c in spawn(g, 2)]
    b = [c.random() for c in spawn(g, 2)]
    assert a != b
    g2 = np.random.default_rng(0)
    assert [c.random() for c in spawn(g2, 2)] == a


MECHS = [
    (Laplace(epsilon=1.0, sensitivity=1.0), np.zeros(5)),
    (Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0), np.zeros(5)),
    (LaplaceI(epsilon=1.0, sensitivity=1.0, k=5), np.zeros(5)),
]


@pytest.mark.parametrize("mech, value", MECHS, ids=lambda m: type(m).__name__)
def test_mechanism_reproducible(mech, value):
    a = mech.release(value, rng=11)
    b = mech.release(value, rng=11)
    c = mech.release(value, rng=12)
    assert np.array_equal(a, b)
    assert not np.any(a == c)


def test_selection_mechanisms_reproducible():
    u = np.linspace(0.0, 3.0, 30)
    for m in (Exponential(epsilon=1.0, sensitivity=1.0), ReportNoisyMax(epsilon=1.0, sensitivity=1.0)):
        a = m.sample(u, 200, rng=5)
        assert np.array_equal(a, m.sample(u, 200, rng=5))
        assert not np.array_equal(a, m.sample(u, 200, rng=6))
        assert m.release(u, rng=5) == m.release(u, rng=5)


def test_no_global_state():
    np.random.seed(0)
    a = Laplace(epsilon=1.0, sensitivity=1.0).release(np.zeros(3), rng=1)
    np.random.seed(99)
    b = Laplace(epsilon=1.0, sensitivity=1.0).release(np.zeros(3), rng=1)
    assert np.array_equal(a, b)
