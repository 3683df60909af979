"""Private multiplicative weights: online MW driven by NumericSparse (Dwork–Roth §4.2, Alg. 6, Thm 4.13/4.14).

:class:`PrivateMultiplicativeWeights` runs NumericSparse (D–R Alg. 3, δ = 0) on the derived stream of query errors
with threshold ``T = 2α`` and the MW update (D–R Alg. 5, ``η = α/2``) on each answered query; :func:`pmw_alpha` is
Thm 4.14's α as a fixed point (docs/science/foundations.md, *Private multiplicative weights*).

Guarantees: (ε, 0)-DP (Thm 4.13) for a query order independent of the data; with probability ≥ 1 − β every answer
is within ``3α``. ``adaptive=True`` picks queries from the data and is not private at all
(:meth:`PrivateMultiplicativeWeights.run`).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_choice, check_epsilon, check_finite_array, check_positive_int, check_probability
from dpkit.mechanisms.base import Mechanism

__all__ = ["pmw_alpha", "PMWRun", "PrivateMultiplicativeWeights"]

VARIANTS = ("correct", "printed-threshold")


def _check_sizes(domain_size: int, n_queries: int, n: int) -> tuple[int, int, int]:
    X = check_positive_int(domain_size, name="domain_size")
    if X < 2:
        raise ValueError(f"domain_size must be ≥ 2 (ln|X| > 0); got {domain_size!r}")
    return X, check_positive_int(n_queries, name="n_queries"), check_positive_int(n, name="n")


def pmw_alpha(*, domain_size: int, n_queries: int, epsilon: float, beta: float, n: int) -> float:
    """Thm 4.14 (δ = 0): the smallest α with ``α ≥ 36 ln|X| (ln(2|Q|) + ln(16 ln|X|/(α²β)))/(ε n α²)`` (brentq).

    The printed constants are garbled (docs/science/errata.md, *erratum-dr-pmw-constants*); this is the
    self-consistent form from Thm 3.28 with c = 4 ln|X|/α², k = 2|Q|, T = 2α (docs/science/foundations.md).
    Example: |X| = 441, |Q| = 200, ε = 1, β = 0.05, n = 10⁷ gives α = 0.0744.

    >>> round(pmw_alpha(domain_size=441, n_queries=200, epsilon=1.0, beta=0.05, n=10**7), 4)
    0.0744
    """
    X, Q, n = _check_sizes(domain_size, n_queries, n)
    eps = check_epsilon(epsilon)
    beta = check_probability(beta, name="beta")
    L = math.log(X)

    def h(a: float) -> float:  # increasing in α; its root is the fixed point
        return a**3 * eps * n - 36.0 * L * (math.log(2 * Q) + math.log(16.0 * L / (a * a * beta)))

    hi = 1.0
    while h(hi) < 0:
        hi *= 2.0
    return float(brentq(h, 1e-12, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps))


@dataclass(frozen=True)
class PMWRun:
    """One run of :class:`PrivateMultiplicativeWeights`.

    Attributes
    ----------
    answers : ndarray
        ``a_i`` for the queries answered (NaN after an early halt).
    query_index : ndarray
        Which row of ``queries`` was asked at each step.
    n_updates : int
        MW updates made (NumericSparse's ⊤ answers that moved the hypothesis).
    n_above : int
        NumericSparse's ⊤ answers (its ``count``; it halts at ``c``).
    halted : bool
        Whether NumericSparse reached its cutoff before the stream ended.
    hypothesis : ndarray
        The final ``x^t`` (a distribution on X: a synthetic database).
    """

    answers: np.ndarray
    query_index: np.ndarray
    n_updates: int
    n_above: int
    halted: bool
    hypothesis: np.ndarray


@dataclass(frozen=True, kw_only=True)
class PrivateMultiplicativeWeights(Mechanism):
    """Online private multiplicative weights with NumericSparse, δ = 0 (D–R Alg. 6).

    Parameters
    ----------
    epsilon : float
        ε > 0 of the whole run.
    beta : float
        Failure probability of the accuracy guarantee, in (0, 1).
    n : int
        Number of records ‖x‖₁ (the normalised queries have sensitivity 1/n).
    domain_size : int
        |X| ≥ 2.
    n_queries : int
        |Q|: the stream has at most this many queries (NumericSparse sees k = 2|Q| derived queries).
    variant : {"correct", "printed-threshold"}, default "correct"
        ``"printed-threshold"`` exists only as a negative control: the translation's misprinted setup
        ``T ← ⌈1/α⌉`` (*erratum-dr-pmw-constants*) instead of ``T = 2α``, which is never crossed by normalised queries,
        so every answer is the uninformed ``f(x⁰)``.

    Notes
    -----
    ``alpha`` is the accuracy for the integer cutoff ``c = ⌈4 ln|X|/α₀²⌉`` (α₀ = :func:`pmw_alpha`):
    ``T = 2α = 18c(ln(2|Q|) + ln(4c/β))/(εn)`` (≥ 2α₀, equal up to the rounding of c). Thm 4.14's
    guarantee is then ``max_i |f_i(x) − a_i| ≤ 3·alpha`` with probability ≥ 1 − β.
    """

    epsilon: float
    beta: float
    n: int
    domain_size: int
    n_queries: int
    variant: str = "correct"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice(self.variant, name="variant", choices=VARIANTS)
        check_epsilon(self.epsilon)
        check_probability(self.beta, name="beta")
        _check_sizes(self.domain_size, self.n_queries, self.n)

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def alpha_fixed_point(self) -> float:
        """α₀ of :func:`pmw_alpha` (real-valued c)."""
        return pmw_alpha(domain_size=self.domain_size, n_queries=self.n_queries, epsilon=self.epsilon, beta=self.beta, n=self.n)

    @property
    def cutoff(self) -> int:
        """NumericSparse's cutoff ``c = ⌈4 ln|X|/α₀²⌉`` (Thm 4.10's bound on the number of MW updates)."""
        return math.ceil(4.0 * math.log(self.domain_size) / self.alpha_fixed_point**2)

    @property
    def threshold(self) -> float:
        """``T = 18c(ln(2|Q|) + ln(4c/β))/(εn)``: twice NumericSparse's accuracy (Thm 3.28, δ = 0, k = 2|Q|).

        (``⌈1/α₀⌉`` for the negative-control ``variant="printed-threshold"``.)
        """
        if self.variant == "printed-threshold":
            return float(math.ceil(1.0 / self.alpha_fixed_point))
        c = self.cutoff
        return 18.0 * c * (math.log(2 * self.n_queries) + math.log(4.0 * c / self.beta)) / (self.epsilon * self.n)

    @property
    def alpha(self) -> float:
        """``T/2``: the α of Thm 4.14 for this cutoff (answers within 3α w.p. ≥ 1 − β).

        The same value for both variants (the printed variant claims the correct guarantee).
        """
        c = self.cutoff
        return 9.0 * c * (math.log(2 * self.n_queries) + math.log(4.0 * c / self.beta)) / (self.epsilon * self.n)

    @property
    def eta(self) -> float:
        """MW learning rate ``η = α/2`` (D–R Thm 4.10)."""
        return self.alpha / 2.0

    def noise_scales(self) -> tuple[float, float, float]:
        """Laplace scales of the threshold, the derived queries and the numeric answers (normalised by 1/n).

        NumericSparse with δ = 0: ``ε₁ = 8ε/9``, ``ε₂ = 2ε/9``, ``σ(e) = 2c/e`` (D–R Alg. 3, Thm 3.27):
        threshold ``Lap(σ(ε₁)/n)``, queries ``Lap(2σ(ε₁)/n)``, answers ``Lap(σ(ε₂)/n)``.
        """
        c = self.cutoff
        s1 = 2.0 * c / (8.0 * self.epsilon / 9.0) / self.n
        s2 = 2.0 * c / (2.0 * self.epsilon / 9.0) / self.n
        return s1, 2.0 * s1, s2

    def run(
        self, x: ArrayLike, queries: ArrayLike, *, order: ArrayLike | None = None, adaptive: bool = False,
        rng: RNGLike = None, ledger: Ledger | None = None, name: str | None = None,
    ) -> PMWRun:
        """Answer a stream of queries on the data distribution ``x`` (length |X|, sums to 1).

        ``queries`` is a (m, |X|) array with values in [0, 1], m ≤ ``n_queries``. The stream asks
        the rows in ``order`` (default 0..m−1, public: it must not depend on the data) and spends (ε, 0)
        through ``ledger``.

        ``adaptive=True`` instead asks, at every step, a not-yet-asked query with the largest current error
        ``|f(x) − f(x^t)|``: an adversary who knows the data, for testing the accuracy of Thm 4.14 (which
        holds for any stream). It is **not private**: the order is chosen from the data and returned in
        ``query_index`` (two neighbours can give different first queries with probability 1, so ε = ∞).
        It therefore refuses a ``ledger`` (:class:`ValueError` naming ``adaptive``) and otherwise warns
        :class:`~dpkit.core.exceptions.PrivacyLeakWarning`.
        """
        if adaptive:
            if ledger is not None:
                raise ValueError("adaptive=True is not differentially private (each next query is chosen from the data "
                                 "and the order is released in query_index), so it cannot spend (ε, 0) from a ledger; "
                                 "use a public order (adaptive=False, order=...) or no ledger")
            warnings.warn("adaptive=True chooses each next query from the private data and releases that order "
                          "(query_index): this run is not differentially private", PrivacyLeakWarning, stacklevel=2)
        X = self.domain_size
        p = check_finite_array(x, name="x", ndim=1)
        if p.size != X or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
            raise ValueError(f"x must be a distribution on the {X} domain points (non-negative, summing to 1)")
        F = check_finite_array(queries, name="queries", ndim=2)
        if F.shape[1] != X or F.shape[0] > self.n_queries or np.any((F < 0) | (F > 1)):
            raise ValueError(f"queries must be an (m, {X}) array with values in [0, 1] and m ≤ n_queries = {self.n_queries}; "
                             f"got shape {F.shape}")
        m = F.shape[0]
        idx_order = np.arange(m) if order is None else np.asarray(order, dtype=int)
        if idx_order.shape != (m,) or not np.array_equal(np.sort(idx_order), np.arange(m)):
            raise ValueError(f"order must be a permutation of 0..{m - 1} (each query asked once); got {order!r}")
        self._charge(ledger, name, n_queries=int(m), alpha=self.alpha, cutoff=self.cutoff)
        g = resolve_rng(rng)
        s_t, s_q, s_a = self.noise_scales()
        T, c, eta = self.threshold, self.cutoff, self.eta
        truth = F @ p
        h = np.full(X, 1.0 / X)
        t_hat = T + g.laplace(0.0, s_t)
        count, updates, halted = 0, 0, False
        answers, asked = np.full(m, np.nan), np.full(m, -1)
        remaining = np.ones(m, dtype=bool)
        for step in range(m):
            if adaptive:
                err = np.where(remaining, np.abs(truth - F @ h), -np.inf)
                i = int(np.argmax(err))
            else:
                i = int(idx_order[step])
            remaining[i] = False
            asked[step] = i
            est = float(F[i] @ h)
            v = float(truth[i]) - est
            e = [None, None]
            for j, val in enumerate((v, -v)):  # the derived queries f'_{2i−1}, f'_{2i}
                if val + g.laplace(0.0, s_q) >= t_hat:
                    e[j] = val + g.laplace(0.0, s_a)
                    count += 1
                    if count >= c:
                        halted = True
                        break
                    t_hat = T + g.laplace(0.0, s_t)
            if e[0] is None and e[1] is None:
                answers[step] = est
            else:
                a = est + e[0] if e[0] is not None else est - e[1]
                answers[step] = a
                r = F[i] if a < est else 1.0 - F[i]
                h = h * np.exp(-eta * r)
                h /= h.sum()
                updates += 1
            if halted:
                break
        return PMWRun(answers=answers, query_index=asked, n_updates=updates, n_above=count, halted=halted, hypothesis=h)
