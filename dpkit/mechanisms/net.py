"""The net mechanism over an explicit finite candidate set (thesis Alg 3 / Thm 1.16; D–R Alg 7, Prop 5.1–5.2; SmallDB, D–R Alg 4).

Databases over a finite domain are histograms ``h``; a linear query ``f`` answers ``f·h / n``. The net mechanism is
the exponential mechanism (:class:`~dpkit.mechanisms.exponential.Exponential`) over a data-independent candidate set
(an α-net) with score ``−max_f |q_f(D) − q_f(y)|``, of sensitivity ``max_f (max f − min f)/n`` under replace-one.

Errors: a net larger than :data:`MAX_CANDIDATES` raises :class:`~dpkit.core.exceptions.FeasibilityError` naming the
size, before anything is enumerated.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import FeasibilityError
from dpkit.core.rng import RNGLike
from dpkit.core.validation import (
    check_budget_fields,
    check_finite_array,
    check_int_in_range,
    check_positive_int,
    check_probability,
)
from dpkit.mechanisms.base import Mechanism
from dpkit.mechanisms.exponential import Exponential

__all__ = ["MAX_CANDIDATES", "count_databases", "enumerate_databases", "NetMechanism"]

#: Documented maximum number of candidate databases the net mechanism will enumerate/score.
MAX_CANDIDATES = 2_000_000


def count_databases(domain_size: int, m: int) -> int:
    """Number of size-``m`` databases (multisets / histograms) over a domain of ``domain_size``
    points: ``C(|X| + m − 1, m)`` (D–R §4.1: ``|R| ≤ |X|^m``)."""
    d = check_positive_int(domain_size, name="domain_size")
    m = check_int_in_range(m, name="m", low=0)
    return math.comb(d + m - 1, m)


def enumerate_databases(domain_size: int, m: int, *, max_candidates: int = MAX_CANDIDATES) -> np.ndarray:
    """All histograms of ``m`` rows over ``domain_size`` points (SmallDB's range, D–R Alg 4).

    The count ``C(|X| + m − 1, m)`` is computed first; if it exceeds ``max_candidates`` a
    :class:`~dpkit.core.exceptions.FeasibilityError` naming it is raised before enumerating.

    Returns
    -------
    ndarray of shape (count, domain_size), unsigned int
        One histogram per row (rows sum to ``m``), in reverse lexicographic order
        (first coordinate descending). The dtype is the smallest unsigned type holding ``m``
        (``uint8`` for m ≤ 255), so the largest allowed net takes ``2·10⁶ × |X|`` bytes.
        Cost: linear in the number of rows.

    Examples
    --------
    >>> enumerate_databases(2, 2).tolist()
    [[2, 0], [1, 1], [0, 2]]
    """
    d = check_positive_int(domain_size, name="domain_size")
    m = check_int_in_range(m, name="m", low=0)
    cap = check_positive_int(max_candidates, name="max_candidates")
    count = count_databases(d, m)
    if count > cap:
        raise FeasibilityError(
            f"there are C({d}+{m}-1, {m}) = {count} databases of size m={m} over a domain of {d} points; "
            f"the documented maximum is max_candidates={cap}. Use a smaller domain or m."
        )
    # table[j][t] = all histograms over the last (d - j) points summing to t
    dt = np.min_scalar_type(m) if m > 0 else np.dtype(np.uint8)
    prev: list[np.ndarray] = [np.array([[t]], dtype=dt) for t in range(m + 1)]  # one point
    for _ in range(d - 1):
        cur = []
        for t in range(m + 1):
            blocks = [
                np.hstack([np.full((prev[t - c].shape[0], 1), c, dtype=dt), prev[t - c]]) for c in range(t, -1, -1)
            ]
            cur.append(np.vstack(blocks))
        prev = cur
    out = prev[m]
    assert out.shape[0] == count
    return out


@dataclass(frozen=True, kw_only=True, eq=False)
class NetMechanism(Mechanism):
    """Net mechanism (thesis Alg 3 / Thm 1.16): exponential mechanism over a finite net of databases.

    Parameters
    ----------
    epsilon : float
        ε > 0, finite.
    queries : array of shape (n_queries, domain_size)
        The query set ``Q``: row ``j`` holds ``f_j(x)`` for every domain point (public).
    candidates : array of shape (n_candidates, domain_size)
        The net ``N``: non-negative histograms with positive totals (public and chosen without
        looking at the data), e.g. :func:`enumerate_databases`. Each is evaluated normalised
        by its own size. At most ``max_candidates``.
    n : int
        Size of the private database (public under replace-one neighbours).
    max_candidates : int, default :data:`MAX_CANDIDATES`

    Notes
    -----
    Score ``u(D, y) = −max_f |q_f(D) − q_f(y)|``; sensitivity ``Δ = max_f (max_x f − min_x f)/n``
    (a replace-one change moves ``q_f(D)`` by at most that; ``q_f(y)`` is fixed). Privacy: ε
    (D–R Prop 5.1). Accuracy (thesis Thm 1.16 / D–R Prop 5.2 via Thm 1.15): with probability
    ≥ 1 − β the error is below ``OPT + (2Δ/ε)(ln|N| + ln(1/β))``, where ``OPT`` is the error of
    the best candidate (≤ α for an α-net); :meth:`error_bound`. The thesis states it as
    (2α, β)-accuracy with ``β = |N| exp(−αε/(2Δ))``: :meth:`thesis_beta`.
    """

    epsilon: float
    queries: Any
    candidates: Any
    n: int
    max_candidates: int = MAX_CANDIDATES
    _answers: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.neighbouring != "replace-one":
            raise ValueError("neighbouring must be 'replace-one' for NetMechanism (its utility sensitivity assumes "
                             f"replace-one neighbours with public n; add-remove would reveal n); got {self.neighbouring!r}")
        check_budget_fields(self, delta=False)
        object.__setattr__(self, "n", check_positive_int(self.n, name="n"))
        cap = check_positive_int(self.max_candidates, name="max_candidates")
        q = check_finite_array(self.queries, name="queries", ndim=2, min_rows=1)
        object.__setattr__(self, "queries", q)
        c = np.asarray(self.candidates)
        if c.ndim == 2 and c.shape[0] > cap:
            raise FeasibilityError(
                f"the net has {c.shape[0]} candidates; the documented maximum is max_candidates={cap}"
            )
        if c.ndim != 2 or c.shape[0] < 1 or not (np.issubdtype(c.dtype, np.integer) or np.issubdtype(c.dtype, np.floating)):
            # not an integer/float matrix: full conversion and checks (error names the parameter)
            c = check_finite_array(c, name="candidates", ndim=2, min_rows=1)
        elif np.issubdtype(c.dtype, np.floating) and not np.all(np.isfinite(c)):
            raise ValueError("candidates must be finite")
        if c.shape[1] != q.shape[1]:
            raise ValueError(
                f"candidates must have domain_size={q.shape[1]} columns (as queries); got {c.shape[1]}"
            )
        sizes = c.sum(axis=1, dtype=float)
        if np.any(c < 0) or np.any(sizes <= 0):
            raise ValueError("candidates must be non-negative histograms with positive total size")
        object.__setattr__(self, "candidates", c)  # kept in its own (compact) dtype
        answers = np.empty((c.shape[0], q.shape[0]))
        for s in range(0, c.shape[0], 1 << 16):  # float copies in chunks
            answers[s : s + (1 << 16)] = (c[s : s + (1 << 16)].astype(float) @ q.T) / sizes[s : s + (1 << 16), None]
        object.__setattr__(self, "_answers", answers)

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def size(self) -> int:
        """``|N|``, the number of candidates."""
        return int(self.candidates.shape[0])

    @property
    def sensitivity(self) -> float:
        """Score sensitivity ``Δ = max_f (max f − min f)/n`` (replace-one, n public)."""
        q = self.queries
        return float(np.max(q.max(axis=1) - q.min(axis=1))) / self.n

    @property
    def _exp(self) -> Exponential:
        return Exponential(epsilon=self.epsilon, sensitivity=self.sensitivity, neighbouring=self.neighbouring)

    def _data_answers(self, histogram: Any) -> np.ndarray:
        h = check_finite_array(histogram, name="histogram", ndim=1)
        if h.size != self.queries.shape[1]:
            raise ValueError(f"histogram must have domain_size={self.queries.shape[1]} entries; got {h.size}")
        if np.any(h < 0) or not math.isclose(float(h.sum()), self.n, rel_tol=0, abs_tol=1e-9):
            raise ValueError(f"histogram must be non-negative and sum to n={self.n}; got sum {h.sum():g}")
        return self.queries @ h / self.n

    def errors(self, histogram: Any) -> np.ndarray:
        """``max_f |q_f(D) − q_f(y)|`` for every candidate ``y`` (non-private)."""
        a = self._data_answers(histogram)
        return np.max(np.abs(self._answers - a[None, :]), axis=1)

    def scores(self, histogram: Any) -> np.ndarray:
        """The utilities ``u(D, y) = −errors``."""
        return -self.errors(histogram)

    def probabilities(self, histogram: Any) -> np.ndarray:
        """Exact output law over the candidates (log-sum-exp stable)."""
        return self._exp.probabilities(self.scores(histogram))

    def release(
        self, histogram: Any, *, rng: RNGLike = None, ledger: Ledger | None = None, name: str | None = None
    ) -> tuple[int, np.ndarray]:
        """Sample a synthetic database; returns ``(index, candidates[index])``. Spends (ε, 0)."""
        s = self.scores(histogram)
        self._charge(ledger, name, net_size=self.size, sensitivity=self.sensitivity)
        i = int(self._exp.sample(s, 1, rng=rng)[0])
        return i, self.candidates[i].copy()

    def error_bound(self, beta: float, opt: float = 0.0) -> float:
        """``opt + (2Δ/ε)(ln|N| + ln(1/β))``: error bound holding w.p. ≥ 1 − β (Thm 1.15 applied)."""
        b = check_probability(beta, name="beta")
        return float(opt) + 2.0 * self.sensitivity / self.epsilon * (math.log(self.size) + math.log(1.0 / b))

    def thesis_beta(self, alpha: float) -> float:
        """Thesis Thm 1.16's failure probability ``β = |N| exp(−αε/(2Δ))`` for accuracy 2α (α-net)."""
        a = float(alpha)
        if not a > 0:
            raise ValueError(f"alpha must be > 0; got {alpha}")
        return self.size * math.exp(-a * self.epsilon / (2.0 * self.sensitivity))

    def params(self) -> dict[str, Any]:
        return {
            "mechanism": "NetMechanism",
            "epsilon": self.epsilon,
            "n": self.n,
            "net_size": self.size,
            "n_queries": int(self.queries.shape[0]),
            "domain_size": int(self.queries.shape[1]),
            "sensitivity": self.sensitivity,
            "neighbouring": self.neighbouring,
        }
