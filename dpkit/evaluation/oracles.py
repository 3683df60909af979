"""Small exact oracles and confidence bounds used by the theorem-check notebooks.

Confidence bounds (:func:`clopper_pearson`, :func:`hoeffding_upper`); KL divergences of Laplace and randomized
response (thesis Lemma 1.8, D–R Lemma 3.18); exact privacy losses and output laws: k-fold Laplace draws, an adaptive
composition with its exact loss (:class:`AdaptiveComposition`, Thm 1.5/1.6), Laplace maxima (D–R Thm 3.8), report
noisy max by quadrature (D–R Claim 3.9, Thm 3.13), k-fold randomized response, the classic Gaussian (D–R Thm 3.22);
and :func:`exact_privacy_loss`, an exact audit of a finite-output mechanism over every replace-one pair of a small
domain (:func:`replace_one_pairs`).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import integrate

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_choice, check_epsilon, check_int_in_range, check_positive_int, check_probability
from dpkit.mechanisms.exponential import Exponential
from dpkit.mechanisms.laplace import Laplace
from dpkit.mechanisms.randomized_response import RandomizedResponse

__all__ = [
    "replace_one_pairs",
    "exact_privacy_loss",
    "ExactLoss",
    "clopper_pearson", "hoeffding_upper", "laplace_shift_kl", "laplace_shift_kl_numeric", "rr_kl", "laplace_loss_samples",
    "AdaptiveComposition", "laplace_max_failure_exact", "report_noisy_max_probabilities", "rr_kfold_delta",
    "gaussian_classic_delta", "gaussian_classic_failure_epsilon",
]


def clopper_pearson(x: int, n: int, confidence: float = 0.95, side: str = "two-sided") -> tuple[float, float]:
    """Exact (Clopper–Pearson) confidence interval for a binomial proportion, as a pair.

    ``side="lower"`` gives ``(CP_L, 1)``, ``"upper"`` gives ``(0, CP_U)`` — one-sided at level
    ``confidence``; ``"two-sided"`` splits the error evenly. Thin wrapper over
    :func:`dpkit.evaluation.audit.clopper_pearson_lower` / :func:`~dpkit.evaluation.audit.clopper_pearson_upper`.
    """
    from dpkit.evaluation.audit import clopper_pearson_lower, clopper_pearson_upper

    n = check_positive_int(n, name="n")
    x = check_int_in_range(x, name="x", low=0, high=n)
    confidence = check_probability(confidence, name="confidence")
    side = check_choice(side, name="side", choices=("two-sided", "lower", "upper"))
    level = confidence if side != "two-sided" else 1.0 - (1.0 - confidence) / 2.0
    lo = float(clopper_pearson_lower(x, n, level)) if side != "upper" else 0.0
    hi = float(clopper_pearson_upper(x, n, level)) if side != "lower" else 1.0
    return (lo, hi)


def hoeffding_upper(values: np.ndarray, gamma: float) -> float:
    """Upper confidence bound (level ``1 − γ``) on the mean of i.i.d. values in [0, 1]: ``x̄ + √(ln(1/γ)/(2N))``."""
    v = np.asarray(values, dtype=float)
    if v.size == 0 or np.any((v < 0) | (v > 1)):
        raise ValueError("values must be a non-empty array in [0, 1]")
    gamma = check_probability(gamma, name="gamma")
    return float(v.mean() + math.sqrt(math.log(1.0 / gamma) / (2.0 * v.size)))


def laplace_shift_kl(epsilon: float) -> float:
    """Closed form ``D(Lap(0, b) ‖ Lap(S, b)) = ε + e^{−ε} − 1`` with ``ε = S/b``."""
    eps = check_epsilon(epsilon)
    return eps + math.expm1(-eps)


def laplace_shift_kl_numeric(epsilon: float) -> float:
    """The same KL by quadrature of ``p(x) ln(p(x)/q(x))`` (independent of the closed form)."""
    eps = check_epsilon(epsilon)
    b, S = 1.0, eps  # scale 1, shift ε

    def integrand(x: float) -> float:
        p = math.exp(-abs(x) / b) / (2 * b)
        return p * (abs(x - S) - abs(x)) / b

    pts = [(-math.inf, 0.0), (0.0, S), (S, math.inf)]
    return float(sum(integrate.quad(integrand, a, c, epsabs=1e-14, epsrel=1e-12)[0] for a, c in pts))


def rr_kl(epsilon: float) -> float:
    """KL divergence between randomized response's output laws for the two inputs: ``ε(e^ε − 1)/(e^ε + 1)``."""
    eps = check_epsilon(epsilon)
    p = 1.0 / (1.0 + math.exp(-eps))
    return p * math.log(p / (1 - p)) + (1 - p) * math.log((1 - p) / p)


def laplace_loss_samples(k: int, epsilon: float, n_samples: int, *, rng: RNGLike = None) -> np.ndarray:
    """``n_samples`` draws of the privacy loss ``Σ_i ln(p_0(x_i)/p_1(x_i))`` of ``k`` Laplace releases.

    Each release is ``x_i ~ Lap(0, 1/ε)`` compared with ``Lap(1, 1/ε)`` (sensitivity 1,
    worst-case shift), so each term is ``ε(|x_i − 1| − |x_i|) ∈ [−ε, ε]``.
    """
    k = check_positive_int(k, name="k")
    eps = check_epsilon(epsilon)
    n = check_positive_int(n_samples, name="n_samples")
    g = resolve_rng(rng)
    total = np.zeros(n)
    for s in range(0, k, max(1, 4_000_000 // n)):
        x = g.laplace(0.0, 1.0 / eps, size=(n, min(k - s, max(1, 4_000_000 // n))))
        total += (eps * (np.abs(x - 1.0) - np.abs(x))).sum(axis=1)
    return total


def _default_branch_utilities() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    return ((np.array([0.0, 1.0, 2.0]), np.array([2.0, 0.0, 1.0])), (np.array([1.0, 0.0, 1.0]), np.array([1.0, 1.0, 2.0])))


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class AdaptiveComposition:
    """Three different mechanisms composed adaptively, with the exact privacy loss of every output.

    On the neighbours ``db ∈ {0, 1}`` (a count of sensitivity 1 that is also a bit):

    1. ``y = db + Lap(1/ε₁)`` (Laplace, ε₁-DP);
    2. ``z`` = randomized response of the bit ``db`` (ε₂-DP);
    3. the adversary's next query depends on ``y`` (branch ``b = [y > 1/2]``): the exponential
       mechanism (ε₃, Δ = 1) over the utilities ``utilities[db][b]``, which must differ by at most
       1 entry-wise between ``db = 0`` and ``db = 1``.

    By basic composition (thesis Thm 1.5/1.6) the joint output ``(y, z, r)`` is
    ``(ε₁ + ε₂ + ε₃)``-DP. :meth:`privacy_loss` samples outputs under ``db`` and returns
    ``ln P(y, z, r | 0)/P(y, z, r | 1)``, computed exactly from the three output laws.

    Parameters
    ----------
    epsilons : (ε₁, ε₂, ε₃)
    utilities : ((u₀₀, u₀₁), (u₁₀, u₁₁))
        ``utilities[db][branch]``, utility vectors of one common length.
    """

    epsilons: tuple[float, float, float] = (0.3, 0.3, 0.4)
    utilities: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=_default_branch_utilities
    )

    def __post_init__(self) -> None:
        if len(self.epsilons) != 3:
            raise ValueError(f"epsilons must hold (ε₁, ε₂, ε₃); got {self.epsilons!r}")
        u = [[np.asarray(self.utilities[d][b], dtype=float) for b in (0, 1)] for d in (0, 1)]
        if len({v.shape for row in u for v in row}) != 1 or u[0][0].ndim != 1:
            raise ValueError("utilities[db][branch] must be four 1-D vectors of one length")
        if max(float(np.max(np.abs(u[0][b] - u[1][b]))) for b in (0, 1)) > 1.0:
            raise ValueError("utilities of db = 0 and db = 1 must differ by at most the sensitivity 1 entry-wise")

    def privacy_loss(self, db: int, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """``size`` outputs drawn under ``db``, mapped to their exact privacy loss (rounded to 1e-9).

        The rounding keeps the atoms of the loss (e.g. at ε₁ + ε₂ + …) from being split by float
        round-off. Call signature of a vectorised ``mechanism_fn`` of :func:`~dpkit.evaluation.audit.audit`.
        """
        if db not in (0, 1):
            raise ValueError(f"db must be 0 or 1 (the two neighbours); got {db!r}")
        e1, e2, e3 = self.epsilons
        lap1, rr2 = Laplace(epsilon=e1, sensitivity=1.0), RandomizedResponse(epsilon=e2)
        ex3 = Exponential(epsilon=e3, sensitivity=1.0)
        U = self.utilities
        size = size or 1
        y = lap1.release(np.full(size, float(db)), rng=rng)
        z = rr2.release(np.full(size, db), rng=rng)
        branch = (y > 0.5).astype(int)  # the adversary's next query depends on the first output
        r = np.empty(size, dtype=int)
        for b in (0, 1):
            idx = np.flatnonzero(branch == b)
            if idx.size:
                r[idx] = ex3.sample(U[db][b], idx.size, rng=rng)
        loss = e1 * (np.abs(y - 1.0) - np.abs(y)) + np.where(z == 0, e2, -e2)
        for b in (0, 1):
            lr = ex3.log_probabilities(U[0][b]) - ex3.log_probabilities(U[1][b])
            loss = loss + np.where(branch == b, lr[r], 0.0)
        return np.round(loss, 9)


# ---------------------------------------------------------------------- exact oracles of D–R §3
def laplace_max_failure_exact(t: float, k: int) -> float:
    """Exact ``P(max_i |Y_i| > t·b)`` for ``k`` i.i.d. ``Y_i ~ Lap(b)``: ``1 − (1 − e^{−t})^k`` (D–R Fact 3.7, Thm 3.8).

    At ``t = ln(k/β)`` this is ``1 − (1 − β/k)^k ≤ β`` (the union bound of Thm 3.8 is nearly tight).
    Computed as ``−expm1(k·log1p(−e^{−t}))`` (no cancellation for small failure probabilities).

    >>> round(laplace_max_failure_exact(math.log(100 / 0.05), 100), 5)
    0.04878
    """
    k = check_positive_int(k, name="k")
    if not (isinstance(t, (int, float, np.floating)) and math.isfinite(t) and t >= 0):
        raise ValueError(f"t must be a finite number ≥ 0 (the error bound in units of the Laplace scale); got {t!r}")
    return float(-math.expm1(k * math.log1p(-math.exp(-float(t))))) if t > 0 else 1.0


RNM_NOISES = ("laplace", "exponential")


def report_noisy_max_probabilities(
    utilities: np.ndarray, scale: float, noise: str = "laplace", *, epsrel: float = 1e-12,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact output law of report noisy max by 1-D quadrature (D–R Claim 3.9, Thm 3.13).

    ``P(argmax = i) = ∫ f(x − u_i) Π_{j≠i} F(x − u_j) dx`` with ``f, F`` the density and CDF of the
    noise: ``Lap(scale)`` (``noise="laplace"``) or the one-sided ``Exp`` with mean ``scale`` (rate
    ``1/scale``, ``noise="exponential"``). Integrated piecewise by :func:`scipy.integrate.quad`
    between the sorted utilities (the integrand's kinks), with relative tolerance ``epsrel``.

    Returns
    -------
    p : ndarray
        ``P(argmax = i)`` for every i (ties have probability 0: the noise is continuous).
    err : ndarray
        The summed absolute error estimates of ``quad`` for every ``p[i]``.
    """
    u = np.asarray(utilities, dtype=float)
    if u.ndim != 1 or u.size < 2 or not np.all(np.isfinite(u)):
        raise ValueError(f"utilities must be a finite 1-D array with ≥ 2 entries; got shape {u.shape}")
    b = float(scale)
    if not (math.isfinite(b) and b > 0):
        raise ValueError(f"scale must be a finite number > 0; got {scale!r}")
    noise = check_choice(noise, name="noise", choices=RNM_NOISES)

    if noise == "laplace":
        def pdf(z: np.ndarray) -> np.ndarray:
            return np.exp(-np.abs(z) / b) / (2 * b)

        def cdf(z: np.ndarray) -> np.ndarray:
            return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0) / b), 1.0 - 0.5 * np.exp(-np.maximum(z, 0) / b))
        lower = -math.inf
    else:
        def pdf(z: np.ndarray) -> np.ndarray:
            return np.where(z >= 0, np.exp(-np.maximum(z, 0) / b) / b, 0.0)

        def cdf(z: np.ndarray) -> np.ndarray:
            return np.where(z > 0, -np.expm1(-np.maximum(z, 0) / b), 0.0)
        lower = None  # the integrand of i vanishes below max_j u_j (every other noise is ≥ 0)

    knots = np.unique(u)
    p, err = np.zeros(u.size), np.zeros(u.size)
    for i in range(u.size):
        others = np.delete(u, i)

        def integrand(x: float, i: int = i, others: np.ndarray = others) -> float:
            return float(pdf(np.array(x - u[i])) * np.prod(cdf(x - others)))

        start = lower if lower is not None else float(u.max())
        pts = [start] + [float(x) for x in knots if x > start] + [math.inf]
        for a, c in zip(pts[:-1], pts[1:]):
            val, e = integrate.quad(integrand, a, c, epsabs=0.0, epsrel=epsrel, limit=200)
            p[i] += val
            err[i] += e
    return p, err


def rr_kfold_delta(eps_total: float, epsilon: float, k: int) -> float:
    """Exact δ(ε') of k-fold ε-randomized response, from its discrete privacy-loss distribution (docs/science/foundations.md).

    With ``l`` the number of steps (out of k) whose output favours the other input, the loss is
    ``(k − 2l)ε``; ``l ~ Binomial(k, q)`` under the first input and ``Binomial(k, 1 − q)`` under the
    second (``q = 1/(1 + e^ε)``), so ``δ(ε') = Σ_l max(0, P(l) − e^{ε'} P'(l))``. Evaluated from
    :func:`scipy.stats.binom.logpmf` (independent of the KOV code in :mod:`dpkit.core.composition`, which
    computes the same quantity; KOV Thm 3.3 shows k-fold RR is the worst case of k ε-DP mechanisms).

    >>> round(rr_kfold_delta(5.850, 0.1, 100) * 1e9, 1)  # δ(ε') = 2.0e-9
    2.0
    """
    from scipy import stats
    from scipy.special import logsumexp

    eps = check_epsilon(epsilon)
    k = check_positive_int(k, name="k")
    eg = float(eps_total)
    if not (math.isfinite(eg) and eg >= 0):
        raise ValueError(f"eps_total must be a finite number ≥ 0; got {eps_total!r}")
    q = 1.0 / (1.0 + math.exp(eps))
    # every term is ≤ P(l); outside mean ± (60 sd + 60) the binomial pmf is < e^-1800 (far below float64's range)
    sd = math.sqrt(k * q * (1.0 - q))
    ell = np.arange(max(0, math.floor(k * q - 60 * sd - 60)), min(k, math.ceil(k * q + 60 * sd + 60)) + 1)
    lp = stats.binom.logpmf(ell, k, q)
    lq = stats.binom.logpmf(ell, k, 1.0 - q)
    gap = eg + lq - lp  # log(e^{ε'} P'/P); the loss is ln(P/P') = (k − 2l)ε
    pos = gap < 0
    if not pos.any():
        return 0.0
    return float(np.exp(logsumexp(lp[pos] + np.log(-np.expm1(gap[pos])))))


def gaussian_classic_delta(epsilon: float, delta: float) -> float:
    """Exact δ(ε) (Balle–Wang) of the Gaussian mechanism at the classic σ = Δ√(2 ln(1.25/δ))/ε of D–R Thm 3.22.

    With ``c = √(2 ln(1.25/δ))`` the ratio Δ/σ is ``ε/c``, so δ(ε) = Φ(ε/(2c) − c) − e^ε Φ(−ε/(2c) − c)
    (independent of Δ).
    """
    from dpkit.mechanisms.gaussian import gaussian_exact_delta

    eps = check_epsilon(epsilon)
    dl = check_probability(delta, name="delta")
    c = math.sqrt(2.0 * math.log(1.25 / dl))
    return gaussian_exact_delta(c / eps, eps, 1.0)


def gaussian_classic_failure_epsilon(delta: float, *, xtol: float = 1e-12) -> float:
    """ε*: the ε at which the classic calibration σ = Δ√(2 ln(1.25/δ))/ε stops being (ε, δ)-DP (brentq).

    The root of ``gaussian_classic_delta(ε, δ) = δ`` on [10⁻³, 200] (docs/science/foundations.md, Thm 3.22: ε* ≈ 7.5 at
    δ = 10⁻³, 8.4 at 10⁻⁵, 9.4 at 10⁻⁸). Below ε* the exact δ is < δ; the theorem only claims ε < 1.
    """
    from scipy.optimize import brentq

    dl = check_probability(delta, name="delta")
    return float(brentq(lambda e: gaussian_classic_delta(e, dl) / dl - 1.0, 1e-3, 200.0, xtol=xtol, rtol=4 * np.finfo(float).eps))


def replace_one_pairs(rows: Sequence[Hashable], n: int) -> Iterator[tuple[tuple[Hashable, ...], tuple[Hashable, ...]]]:
    """Every pair ``(D, D′)`` of ``n``-row data sets over the finite set ``rows`` that differ in one row.

    ``D`` runs over the multisets of ``n`` rows (a data set's order does not change a mechanism that sees
    its histogram), ``D′`` over every replacement of one of its rows by any row (itself included, a
    harmless zero). There are ``C(|rows| + n − 1, n) · n · |rows|`` pairs.
    """
    n = check_positive_int(n, name="n")
    rows = list(rows)
    for D in itertools.combinations_with_replacement(rows, n):
        for i in range(n):
            for new in rows:
                yield D, D[:i] + (new,) + D[i + 1:]


@dataclass(frozen=True)
class ExactLoss:
    """The largest privacy loss over the pairs: ``loss`` at the pair ``worst`` and its output ``output``."""

    loss: float
    worst: tuple[Any, Any] | None
    output: int | None
    pairs: int


def exact_privacy_loss(log_probs: Callable[[Any], np.ndarray],
                       pairs: Iterable[tuple[Any, Any]]) -> ExactLoss:
    """``max over (D, D′) in pairs and outputs o of |log P(o|D) − log P(o|D′)|`` for a finite output law.

    A mechanism whose outputs are a finite set (the exponential mechanism's selection) is ε-DP exactly when
    this is ≤ ε over *all* neighbour pairs (Def 1 with δ = 0): unlike a sampling audit, the value is exact,
    so a calibration off by a factor shows up in full on the pairs that attain it. ``log_probs(D)`` returns
    the log-probabilities of every output (one fixed order); it is called once per distinct data set.
    """
    memo: dict[Any, np.ndarray] = {}

    def lp(D: Any) -> np.ndarray:
        if D not in memo:
            memo[D] = np.asarray(log_probs(D), dtype=float)
        return memo[D]

    best, worst, output, count = 0.0, None, None, 0
    for D, D2 in pairs:
        count += 1
        diff = np.abs(lp(D) - lp(D2))
        k = int(np.argmax(diff))
        if diff[k] > best:
            best, worst, output = float(diff[k]), (D, D2), k
    return ExactLoss(loss=best, worst=worst, output=output, pairs=count)
