"""WeightedDatabase: m rows represented without materialising them."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpkit.core.exceptions import FeasibilityError
from dpkit.mechanisms.trig import WeightedDatabase
from dpkit.queries.synthetic import MAX_SAMPLE_ENTRIES


def _db(m=1000):
    P = np.array([[0.5, -0.5], [0.25, 0.25], [-0.75, 0.0]])
    return WeightedDatabase(points=P, weights=np.array([0.5, 0.3, 0.2]), m=m)


def test_huge_m_multiplicities_without_allocating_rows():
    m = 10**12
    db = _db(m)
    c = db.multiplicities(rng=0)
    assert c.dtype == np.int64 and c.sum() == m and c.shape == (3,)
    # multinomial counts: |c_j/m − w_j| ≤ 6 sd with sd ≤ 0.5/√m
    assert np.all(np.abs(c / m - db.weights) < 6 * 0.5 / np.sqrt(m))
    with pytest.raises(FeasibilityError, match="MAX_SAMPLE_ENTRIES"):
        db.sample(rng=0)
    assert len(db) == m and db.support_size == 3


def test_sample_reproducible_and_with_right_counts():
    db = _db(2000)
    a, b = db.sample(rng=3), db.sample(rng=3)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (2000, 2)
    r = db.realise(rng=3)
    assert r.counts.sum() == 2000 and r.m == 2000
    np.testing.assert_allclose(r.weights, r.counts / 2000)
    s = r.sample(rng=1)  # a realised sample repeats exactly its counts
    for p, c in zip(r.points, r.counts):
        assert np.sum(np.all(s == p, axis=1)) == c
    np.testing.assert_array_equal(r.multiplicities(), r.counts)
    assert db.sample(10, rng=0).shape == (10, 2)
    assert MAX_SAMPLE_ENTRIES >= 10**6


def test_exports(tmp_path):
    db = _db(10)
    arr = db.to_numpy()
    assert arr.shape == (3, 3)
    np.testing.assert_allclose(arr[:, -1], db.weights)
    db.realise(rng=0).to_csv(tmp_path / "s.csv")
    df = pd.read_csv(tmp_path / "s.csv")
    assert list(df.columns[:3]) == ["x1", "x2", "weight"] and df["count"].sum() == 10
    assert np.isclose(db.answer(np.array([1.0, 2.0, 3.0])), 0.5 + 0.6 + 0.6)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(weights=np.array([0.5, 0.3, 0.3])), "sum to 1"),
        (dict(weights=np.array([1.2, -0.2, 0.0])), "non-negative"),
        (dict(weights=np.array([0.5, 0.5])), "entries"),
        (dict(m=0), "m must"),
        (dict(points=np.array([[np.nan, 0], [0, 0], [0, 0]])), "finite"),
        (dict(counts=np.array([1, 1, 1])), "counts sum"),
    ],
)
def test_bad_inputs(kw, match):
    base = dict(points=np.zeros((3, 2)), weights=np.array([0.5, 0.3, 0.2]), m=10)
    base.update(kw)
    with pytest.raises(ValueError, match=match):
        WeightedDatabase(**base)
