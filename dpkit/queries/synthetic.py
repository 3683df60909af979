"""The synthetic database as a weighted point set (thesis Alg 4 step 7 / Alg 9 step 8).

The mechanisms output m samples from the LP's distribution u* over at most R + 1 distinct
points. m ≈ n^{1.8} can be billions, so dpkit never materialises the m rows unless asked:
a :class:`WeightedDatabase` holds the distinct points, their weights (summing to 1) and m,
and — when it *is* the realised sample — the multiplicities of each point.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from dpkit.core.exceptions import FeasibilityError
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_finite_array, check_positive_int

__all__ = ["WeightedDatabase", "check_released_database", "MAX_SAMPLE_ENTRIES", "MAX_M"]

#: :meth:`WeightedDatabase.sample` refuses to build more than this many entries (rows × d),
#: i.e. 160 MB of float64.
MAX_SAMPLE_ENTRIES = 20_000_000
#: Largest m whose multinomial counts fit numpy's int64 sampler.
MAX_M = 2**62


@dataclass(frozen=True, eq=False)
class WeightedDatabase:
    """Distinct points with weights: the distribution the synthetic database is drawn from.

    Parameters
    ----------
    points : array, shape (s, d)
        Distinct points (grid points of A^d for the trigonometric mechanisms).
    weights : array, shape (s,)
        Non-negative, summing to 1 (checked to 1e-9 and renormalised).
    m : int
        Size of the synthetic database D̂ (number of rows it stands for).
    counts : int array, shape (s,), optional
        If given, this object *is* a realised sample: ``counts.sum() == m`` and
        ``weights == counts / m``; :meth:`multiplicities` returns ``counts`` and
        :meth:`sample` repeats each point exactly ``counts`` times.

    Notes
    -----
    Linear queries are answered exactly from (points, weights): q_f(D̂) = Σ_j w_j f(p_j).
    """

    points: np.ndarray
    weights: np.ndarray
    m: int
    counts: np.ndarray | None = field(default=None)

    @classmethod
    def equally_weighted(cls, points: np.ndarray) -> WeightedDatabase:
        """The database of the rows ``points``, each of weight 1/m (m = the number of rows)."""
        m = len(points)
        return cls(points=points, weights=np.full(m, 1.0 / m), m=m)

    def __post_init__(self) -> None:
        P = check_finite_array(self.points, name="points", ndim=2, min_rows=1)
        w = check_finite_array(self.weights, name="weights", ndim=1)
        if w.shape[0] != P.shape[0]:
            raise ValueError(f"weights has {w.shape[0]} entries but points has {P.shape[0]} rows")
        if np.any(w < 0):
            raise ValueError("weights must be non-negative")
        if abs(w.sum() - 1.0) > 1e-9:
            raise ValueError(f"weights must sum to 1; they sum to {w.sum():.12g}")
        m = check_positive_int(self.m, name="m")
        if m > MAX_M:
            raise FeasibilityError(f"m = {m} exceeds the documented maximum MAX_M = 2^62")
        P = P.copy()
        P.setflags(write=False)
        w = (w / w.sum()).copy()
        w.setflags(write=False)
        object.__setattr__(self, "points", P)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "m", m)
        if self.counts is not None:
            c = np.asarray(self.counts)
            if c.shape != w.shape or not np.issubdtype(c.dtype, np.integer) or np.any(c < 0):
                raise ValueError("counts must be non-negative integers, one per point")
            if int(c.sum()) != m:
                raise ValueError(f"counts sum to {int(c.sum())} but m = {m}")
            c = c.astype(np.int64).copy()
            c.setflags(write=False)
            object.__setattr__(self, "counts", c)

    # ----------------------------------------------------------------- basics
    @property
    def support_size(self) -> int:
        """Number of distinct points with positive weight."""
        return int(np.count_nonzero(self.weights))

    @property
    def n_features(self) -> int:
        return int(self.points.shape[1])

    def __len__(self) -> int:
        return self.m

    def answer(self, values: np.ndarray) -> float:
        """Σ_j w_j values_j — the linear query whose per-point values are ``values``."""
        v = check_finite_array(values, name="values", ndim=1)
        if v.shape[0] != self.points.shape[0]:
            raise ValueError("values must have one entry per point")
        return float(self.weights @ v)

    # ----------------------------------------------------------------- sampling
    def multiplicities(self, rng: RNGLike = None) -> np.ndarray:
        """How many of the m rows of D̂ sit on each point (int64, sums to m).

        A realised sample returns its stored counts (``rng`` unused); otherwise the counts
        are drawn as Multinomial(m, weights) — O(s) work however large m is.
        """
        if self.counts is not None:
            return self.counts.copy()
        return resolve_rng(rng).multinomial(self.m, self.weights).astype(np.int64)

    def sample(self, m: int | None = None, *, rng: RNGLike = None) -> np.ndarray:
        """Materialise rows of D̂ as an (m, d) array, in random order.

        Parameters
        ----------
        m : int, optional
            Number of rows; default ``self.m`` (for a realised sample: exactly its rows).
            Otherwise m i.i.d. draws from the weights.
        rng : seed or Generator

        Raises
        ------
        FeasibilityError
            If m × d exceeds :data:`MAX_SAMPLE_ENTRIES` (use :meth:`multiplicities` or the
            weights instead).
        """
        m_ = self.m if m is None else check_positive_int(m, name="m")
        if m_ * self.n_features > MAX_SAMPLE_ENTRIES:
            raise FeasibilityError(
                f"sample of m = {m_} rows × d = {self.n_features} = {m_ * self.n_features} entries exceeds "
                f"MAX_SAMPLE_ENTRIES = {MAX_SAMPLE_ENTRIES}; use multiplicities() or the weights"
            )
        gen = resolve_rng(rng)
        if m is None and self.counts is not None:
            counts = self.counts
        else:
            counts = gen.multinomial(m_, self.weights)
        rows = np.repeat(np.arange(self.points.shape[0]), counts)
        gen.shuffle(rows)
        return self.points[rows]

    def realise(self, rng: RNGLike = None) -> "WeightedDatabase":
        """The sampled database D̂ as a weighted point set: support of the drawn counts, weights counts/m."""
        c = self.multiplicities(rng)
        keep = c > 0
        return WeightedDatabase(points=self.points[keep], weights=c[keep] / self.m, m=self.m, counts=c[keep])

    # ----------------------------------------------------------------- export
    def to_numpy(self) -> np.ndarray:
        """An (s, d + 1) array: the points, then the weight in the last column."""
        return np.column_stack([self.points, self.weights])

    def to_csv(self, path: str | os.PathLike, *, columns: list[str] | None = None) -> None:
        """Write ``x1, …, xd, weight[, count]`` (one row per distinct point) to ``path``."""
        import pandas as pd

        cols = list(columns) if columns is not None else [f"x{i + 1}" for i in range(self.n_features)]
        if len(cols) != self.n_features:
            raise ValueError(f"columns must name the {self.n_features} features")
        df = pd.DataFrame(self.points, columns=cols)
        df["weight"] = self.weights
        if self.counts is not None:
            df["count"] = self.counts
        df.to_csv(path, index=False)

    def to_dict(self) -> dict[str, Any]:
        return {"m": self.m, "support_size": self.support_size, "n_features": self.n_features}

    def __repr__(self) -> str:
        kind = "sample" if self.counts is not None else "distribution"
        return f"WeightedDatabase({kind}, support={self.support_size}, d={self.n_features}, m={self.m})"


#: the largest deviation from 1 of a released database's weight sum that :func:`check_released_database` accepts
#: (construction renormalises to 1 within rounding; the evaluators of :mod:`dpkit.queries.evaluate` allow 1e-6)
WEIGHT_SUM_TOL = 1e-6


def check_released_database(db: Any, *, name: str = "released") -> WeightedDatabase:
    """``db`` if it is a :class:`WeightedDatabase` whose fields hold a distribution *now*, however it was made.

    Construction validates the fields, but an object made with ``object.__setattr__``, ``copy``/``pickle`` of an
    edited object, ``WeightedDatabase.__new__`` or an array whose write flag was turned back on can hold anything;
    every consumer of a released database's weights (the class supremum, the evaluators) checks it here first, so
    that a weight that is not finite, is negative, or weights that are all zero or do not sum to 1 are refused
    instead of being dropped (a supremum search keeps only the points of positive weight) or averaged in.

    Parameters
    ----------
    db : WeightedDatabase
        The released database.
    name : str
        What it is called in the message (``"released"``, ``"release.synthetic"``).

    Returns
    -------
    WeightedDatabase
        ``db`` itself.

    Raises
    ------
    TypeError
        If ``db`` is not a :class:`WeightedDatabase` or a field is missing.
    ValueError
        Naming ``name``'s field and what is wrong: points not a finite (s, d) array, weights not finite, negative,
        all zero, not one per point, or not summing to 1 (within :data:`WEIGHT_SUM_TOL`).
    """
    if not isinstance(db, WeightedDatabase):
        raise TypeError(f"{name} must be a WeightedDatabase; got {type(db).__name__}")
    missing = [f.name for f in fields(WeightedDatabase) if f.name not in vars(db)]
    if missing:
        raise TypeError(f"{name} is a WeightedDatabase without the field(s) {missing} (made without its constructor)")
    P = check_finite_array(db.points, name=f"{name}.points", ndim=2, min_rows=1)
    w = np.asarray(db.weights)
    if w.ndim != 1 or w.shape[0] != P.shape[0]:
        raise ValueError(f"{name}.weights must hold one weight per point ({P.shape[0]}); got shape {w.shape}")
    try:
        w = np.asarray(w, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}.weights must be numeric; {exc}") from None
    bad = ~np.isfinite(w)
    if bad.any():
        raise ValueError(f"{name}.weights must be finite; {int(bad.sum())} of {w.size} are not "
                         f"(first at index {int(np.flatnonzero(bad)[0])}: {float(w[bad][0])!r})")
    if (w < 0).any():
        i = int(np.flatnonzero(w < 0)[0])
        raise ValueError(f"{name}.weights must be non-negative (a distribution); {int((w < 0).sum())} are negative "
                         f"(first at index {i}: {float(w[i])!r})")
    total = float(w.sum())
    if total == 0.0:
        raise ValueError(f"{name}.weights are all zero: no point carries mass, so it answers no query")
    if abs(total - 1.0) > WEIGHT_SUM_TOL:
        raise ValueError(f"{name}.weights must sum to 1 (a distribution, tolerance {WEIGHT_SUM_TOL:g}); "
                         f"they sum to {total:.12g}")
    return db
