"""The worst case over the whole query class: the supremum of one release's error over single kernels.

The accuracy theorems bound the worst query of the class ``f(x) = Σ_j α_j exp(−‖x − c_j‖²/(2σ²))``,
``‖α‖₁ ≤ 1`` ([1, (2.1)]); the error is linear in ``α``, so its supremum is that over single kernels,
``sup_c |E(c)|`` with ``E(c) = K̄_D̂(c) − K̄_D(c)``. ``domain="cube"`` searches ``[-1, 1]^d``, ``domain="space"``
all of ``R^d`` (weighted databases only: the error decays outside the cube). The derivations, the measurements and
the worked example are on the page ``docs/class_supremum.md``.

Algorithm (:func:`class_supremum`)
----------------------------------
1. Screening: candidate centres (the workload's worst, data and synthetic points, uniform points) in one GEMM batch
   (:mod:`dpkit.queries.gemm`); above ``lowrank_above`` rows the data side is the low-rank embedding
   (:mod:`dpkit.queries.lowrank`, surrogate error at most ``mmd``).
2. Batched ascent: one L-BFGS-B run [2, 3] on the stacked best candidates, with exact gradients.
3. Polish: the best ascended centres one by one, tight tolerances.
4. Certification: the best centres re-evaluated exactly in float64 (``math.fsum``) [4]; the largest ``|E(c*)|`` is a
   certified *lower* bound, with its rounding bound ``numerical_bound``.

:func:`certify_supremum` (d ≤ 8) gives a certified upper bound by branch and bound over boxes [5].

References
----------
[1] J. Huang, *An Efficient Private Mechanism for Smooth Queries with Synthetic Database
    Output*, master's thesis, Peking University, 2014.
[2] R. H. Byrd, P. Lu, J. Nocedal, C. Zhu, "A limited memory algorithm for bound constrained
    optimization", SIAM J. Sci. Comput. 16(5), 1995.
[3] C. Zhu, R. H. Byrd, P. Lu, J. Nocedal, "Algorithm 778: L-BFGS-B", ACM TOMS 23(4), 1997.
[4] N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM, 2002.
[5] R. E. Moore, R. B. Kearfott, M. J. Cloud, *Introduction to Interval Analysis*, SIAM, 2009.
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from scipy.optimize import fmin_l_bfgs_b

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.threads import limit_threads
from dpkit.core.validation import (
    check_choice,
    check_finite_array,
    check_int_in_range,
    check_real_in_range,
)
from dpkit.queries.accurate import EVAL_SLACK, EXP_ULP_F64, Augmented, compound, kernel_block
from dpkit.queries.exact import DEFAULT_TOL, embedding_for
from dpkit.queries.lowrank import FitOptions
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64, gamma
from dpkit.queries.synthetic import WeightedDatabase, check_released_database

__all__ = [
    "AnswerFunction",
    "ClassSupremum",
    "SupremumInterval",
    "random_feature_answers",
    "released_answers",
    "DOMAINS",
    "MAX_EXPONENT",
    "ErrorFunction",
    "check_supremum_inputs",
    "resolve_released",
    "BoxData",
    "proven_box_bound",
    "taylor_box_bound",
    "interval_box_bound",
    "certify_supremum",
    "class_supremum",
    "LOWRANK_ABOVE",
]


#: Search domains of the centre: the cube the workload draws from, or all of R^d (the class (2.1)).
DOMAINS = ("cube", "space")
_U = UNIT_ROUNDOFF_F64
_BLOCK_POINTS = 4096
#: exp(−x) for x ≥ this is 0 in float64; kept away from the kernel-value bound's limit.
MAX_EXPONENT = 700.0


# ---------------------------------------------------------------------------------------------
# released answers
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, eq=False)
class AnswerFunction:
    """A release that answers every single-kernel query: ``a(c) ≈ q_{k(·, c)}(D)`` at any centre.

    Attributes
    ----------
    value : callable
        ``value(C)`` for centres ``C`` (M, d) returns the released answers (M,).
    gradient : callable or None
        ``gradient(C)`` returns ``∇a`` at every centre (M, d); None: central differences.
    value_and_gradient : callable or None
        ``value_and_gradient(C)`` returns ``(value(C), gradient(C))`` at once (the same numbers, sharing the work
        both need); None: the two are called one after the other.
    rounding_bound : float
        Proven bound on ``|computed value − exact value of a|`` for centres in the cube.
    name : str
        For messages.
    """

    value: Callable[[np.ndarray], np.ndarray]
    gradient: Callable[[np.ndarray], np.ndarray] | None = None
    value_and_gradient: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
    rounding_bound: float = 0.0
    name: str = "answer function"


def random_feature_answers(omega: Any, embedding: Any) -> AnswerFunction:
    """The answer function of a released random-feature mean embedding (the kernel-mean-embedding method).

    With frequencies ``Ω`` (D, d) and the released embedding ``μ̂ = (μ_c, μ_s)`` (2D,), the answer
    to the single kernel at ``c`` is ``a(c) = (cos(Ωc)·μ_c + sin(Ωc)·μ_s)/√D`` and
    ``∇a(c) = Ωᵀ(cos(Ωc)∘μ_s − sin(Ωc)∘μ_c)/√D``.

    Rounding (float64, ``u = 2⁻⁵³``, centres in the cube): ``θ_k = ω_k·c`` errs by
    ``≤ γ_d ‖ω_k‖₁`` [4, Thm 3.5], cos/sin add ≤ 4 ulp (``8u``) and are 1-Lipschitz, so each
    feature errs by ``e ≤ γ_d max_k ‖ω_k‖₁ + 8u``; the length-2D dot product adds
    ``γ_{2D+1}`` relative to ``Σ|φ_k μ_k|``: ``rounding_bound = (e + γ_{2D+1})‖μ̂‖₁/√D``.
    """
    Om = check_finite_array(omega, name="omega", ndim=2, min_rows=1)
    mu = check_finite_array(embedding, name="embedding", ndim=1)
    D, d = Om.shape
    if mu.shape[0] != 2 * D:
        raise ValueError(f"embedding must have 2D = {2 * D} entries (cos then sin features); got {mu.shape[0]}")
    mc, ms = mu[:D].copy(), mu[D:].copy()
    scale = 1.0 / math.sqrt(D)

    def value(C: np.ndarray) -> np.ndarray:
        Z = C @ Om.T
        return (np.cos(Z) @ mc + np.sin(Z) @ ms) * scale

    def grad(C: np.ndarray) -> np.ndarray:
        Z = C @ Om.T
        return ((np.cos(Z) * ms - np.sin(Z) * mc) @ Om) * scale

    def value_grad(C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # value's and grad's expressions, Ωc once
        Z = C @ Om.T
        cz, sz = np.cos(Z), np.sin(Z)
        return (cz @ mc + sz @ ms) * scale, ((cz * ms - sz * mc) @ Om) * scale

    e = gamma(d, _U) * float(np.abs(Om).sum(axis=1).max()) + 8.0 * _U
    bound = (e + gamma(2 * D + 1, _U)) * float(np.abs(mu).sum()) * scale * (1.0 + EVAL_SLACK)
    return AnswerFunction(value=value, gradient=grad, rounding_bound=bound, name="random-feature embedding",
                          value_and_gradient=value_grad)


def released_answers(release: Any) -> WeightedDatabase | AnswerFunction | str:
    """What a :class:`~dpkit.queries.release.Release` answers single-kernel queries with.

    The synthetic database if it has one; the random-feature answer function if its diagnostics
    hold the released frequencies and embedding (attributes ``omega`` and ``noisy_embedding``);
    otherwise a string saying why the release has no answer for queries outside its workload.
    """
    syn = getattr(release, "synthetic", None)
    if syn is not None:
        return syn
    diag = getattr(release, "diagnostics", None)
    omega, emb = getattr(diag, "omega", None), getattr(diag, "noisy_embedding", None)
    if omega is not None and emb is not None:
        return random_feature_answers(omega, emb)
    name = getattr(release, "method", type(release).__name__)
    ans = getattr(release, "answers", None)
    count = "" if ans is None else f" {np.shape(ans)[0]}"
    return (f"{name} releases answers to the workload's own{count} queries only: it has no answer for any other "
            "query, so the supremum over the query class is not defined for it")


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, eq=False)
class ClassSupremum:
    """The largest single-kernel error found for one release (a certified lower bound on the class supremum).

    Attributes
    ----------
    applicable : bool
        False for releases without answers outside their workload (then every number is None).
    reason : str
        Why not applicable ("" when applicable).
    sup_abs : float or None
        ``|E(c*)|``, exact up to ``numerical_bound``: no query of the class has a smaller worst
        error than ``sup_abs − numerical_bound``.
    witness : ndarray (d,) or None
        The centre ``c*``: the single-kernel query ``f = exp(−‖· − c*‖²/(2σ²))`` attains it.
    signed_error : float or None
        ``E(c*) = q_f(D̂) − q_f(D)`` (released minus true).
    truth, released : float or None
        ``K̄_D(c*)`` and the released answer at ``c*`` (each within ``numerical_bound`` too).
    witness_rel : float or None
        ``|E(c*)|/K̄_D(c*)`` — the witness's relative error, not the class supremum of the
        relative error (which corners far from the data dominate; see the module docs).
    numerical_bound : float or None
        Proven bound on the rounding error of ``signed_error`` (and of ``sup_abs``).
    domain : str
        ``"cube"`` or ``"space"``; ``reach`` is the half-width of the searched box ``[-reach, reach]^d``.
    n_evaluations, n_gradients : int
        Centres whose error (resp. error and gradient) was computed.
    n_starts, n_ascended : int
        Candidate centres screened, and those of them ascended (the search's effort beside ``n_evaluations``: two
        releases' ``sup_abs`` are lower bounds found with comparable effort when these agree).
    source : str
        Which kind of start led to the witness (``"workload"``, ``"data"``, ``"synthetic"``, ``"random"``).
    data_side : str
        What the screening and the ascent evaluated ``K̄_D`` with: ``"exact"`` (the data) or
        ``"lowrank"`` (a kernel mean embedding's surrogate; the certification is exact either way).
    rank : int
        Landmarks of the surrogate (0 for ``"exact"``).
    surrogate_bound : float or None
        For ``"lowrank"``: a proven bound on ``|K̃_D(c) − K̄_D(c)|`` at every centre ``c`` of ``R^d``
        (exact arithmetic, the stored coefficients): the embedding's ``mmd``, since
        ``K̄_D(c) − K̃_D(c) = ⟨g, k_c⟩`` with ``‖k_c‖ = 1``. None for ``"exact"``.
    seconds : float
    """

    applicable: bool
    reason: str = ""
    sup_abs: float | None = None
    witness: np.ndarray | None = field(default=None, repr=False)
    signed_error: float | None = None
    truth: float | None = None
    released: float | None = None
    witness_rel: float | None = None
    numerical_bound: float | None = None
    domain: str = "cube"
    reach: float | None = None
    sigma: float | None = None
    n_evaluations: int = 0
    n_gradients: int = 0
    n_starts: int = 0
    n_ascended: int = 0
    source: str = ""
    data_side: str = "exact"
    rank: int = 0
    surrogate_bound: float | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Scalars for run records (the witness as a list)."""
        out = {k: getattr(self, k) for k in ("applicable", "reason", "sup_abs", "signed_error", "truth", "released",
                                              "witness_rel", "numerical_bound", "domain", "reach", "sigma",
                                              "n_evaluations", "n_gradients", "n_starts", "n_ascended", "source",
                                              "data_side", "rank", "surrogate_bound", "seconds")}
        out["witness"] = None if self.witness is None else [float(v) for v in self.witness]
        return out


@dataclass(frozen=True, kw_only=True, eq=False)
class SupremumInterval:
    """A certified interval for ``sup_c |E(c)|`` from :func:`certify_supremum`.

    Attributes
    ----------
    lower : float
        A proven lower bound (the exact error of ``witness`` minus its rounding bound).
    upper : float or None
        A proven upper bound with ``upper − lower ≤ gap_tol`` — None when the budget ran out
        first (``finished`` False): then only ``lower`` is claimed.
    gap : float or None
        ``upper − lower``.
    finished : bool
        The gap was closed within the budget.
    status : str
        ``"finished"`` or what stopped the search.
    unfinished_upper : float
        The largest bound over the boxes still open when the search stopped (a valid but
        loose upper bound; equal to ``upper`` when finished).
    witness : ndarray (d,)
    n_boxes : int
        Boxes evaluated.
    domain, reach : as :class:`ClassSupremum`.
    seconds : float
    """

    lower: float
    upper: float | None
    gap: float | None
    finished: bool
    status: str
    unfinished_upper: float
    witness: np.ndarray = field(repr=False)
    n_boxes: int
    domain: str
    reach: float
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("lower", "upper", "gap", "finished", "status", "unfinished_upper",
                                              "n_boxes", "domain", "reach", "seconds")}
        out["witness"] = [float(v) for v in self.witness]
        return out


# ---------------------------------------------------------------------------------------------
# the error function
# ---------------------------------------------------------------------------------------------
class ErrorFunction:
    """``E(c) = a(c) − K̄_D(c)`` with batched values and gradients (float64, GEMM form).

    A weighted database and the data are one signed point set ``(p_i, v_i)``; an answer function
    is evaluated separately. With ``surrogate = (Z, β)`` the batched values and gradients use
    ``Σ_l β_l k(z_l, c)`` for the data side (a low-rank embedding's landmarks and coefficients) while
    :meth:`exact` still evaluates the full data.

    Parameters
    ----------
    X : numpy.ndarray
        The data, ``(n, d)`` (:func:`check_supremum_inputs`).
    released : WeightedDatabase or AnswerFunction
        What the release answers (:func:`resolve_released`).
    sigma : float
        The kernel width.
    surrogate : tuple of numpy.ndarray, optional
        ``(Z, β)``: landmarks and coefficients standing in for the data in the batched values and gradients.
    """

    def __init__(self, X: np.ndarray, released: WeightedDatabase | AnswerFunction, sigma: float, *,
                 surrogate: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.sigma = sigma
        self.inv_s2 = 1.0 / (sigma * sigma)
        if surrogate is None:
            Xu, counts = np.unique(X, axis=0, return_counts=True)
            self.data_points = Xu
            self.data_weights = counts / float(X.shape[0])
            Dp, Dw = Xu, self.data_weights
        else:
            # the rows only meet the certification (exact, one fsum per centre): merging duplicates (a sort of
            # n rows) would cost more than the whole search on the surrogate
            self.data_points = np.ascontiguousarray(X, dtype=np.float64)
            self.data_weights = np.full(X.shape[0], 1.0 / X.shape[0])
            Dp, Dw = surrogate
        self.answer: AnswerFunction | None = None
        if isinstance(released, WeightedDatabase):
            check_released_database(released)  # a NaN or negative weight would be dropped below, not refused
            keep = released.weights > 0
            self.syn_points = np.ascontiguousarray(released.points[keep], dtype=np.float64)
            self.syn_weights = np.asarray(released.weights[keep], dtype=np.float64)
            P = np.vstack([self.syn_points, Dp])
            v = np.concatenate([self.syn_weights, -Dw])
        else:
            self.answer = released
            self.syn_points = np.empty((0, X.shape[1]))
            self.syn_weights = np.empty(0)
            P, v = Dp, -Dw
        self.points = np.ascontiguousarray(P)
        self.v = v
        self.aug = Augmented(self.points, sigma)
        # [v, v∘P]: one GEMM gives Σ v_i k_i and Σ v_i k_i p_i
        self.V = np.ascontiguousarray(np.column_stack([v, v[:, None] * self.points]))
        self.d = X.shape[1]
        self.n_evaluations = 0
        self.n_gradients = 0

    def values(self, C: np.ndarray) -> np.ndarray:
        """``E`` at every row of ``C`` (search accuracy)."""
        self.n_evaluations += C.shape[0]
        out = self._sums(C, with_grad=False)[:, 0]
        if self.answer is not None:
            out = out + np.asarray(self.answer.value(C), dtype=np.float64)
        return out

    def values_gradients(self, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(E, ∇E)`` at every row of ``C``."""
        self.n_evaluations += C.shape[0]
        self.n_gradients += C.shape[0]
        S = self._sums(C, with_grad=True)
        E = S[:, 0].copy()
        G = (S[:, 1:] - E[:, None] * C) * self.inv_s2
        if self.answer is not None and self.answer.value_and_gradient is not None:
            va, ga = self.answer.value_and_gradient(C)
            E += np.asarray(va, dtype=np.float64)
            G += np.asarray(ga, dtype=np.float64)
        elif self.answer is not None:
            E += np.asarray(self.answer.value(C), dtype=np.float64)
            if self.answer.gradient is not None:
                G += np.asarray(self.answer.gradient(C), dtype=np.float64)
            else:
                G += self._central_differences(C)
        return E, G

    def _central_differences(self, C: np.ndarray) -> np.ndarray:
        assert self.answer is not None
        M, d = C.shape
        h = 1e-6
        shifts = np.concatenate([C[:, None, :] + h * np.eye(d)[None], C[:, None, :] - h * np.eye(d)[None]], axis=1)
        vals = np.asarray(self.answer.value(shifts.reshape(-1, d)), dtype=np.float64).reshape(M, 2 * d)
        return (vals[:, :d] - vals[:, d:]) / (2.0 * h)

    def _sums(self, C: np.ndarray, *, with_grad: bool) -> np.ndarray:
        """``Σ_i v_i k(p_i, c)`` (and ``Σ_i v_i k(p_i, c) p_i``) per centre, blockwise over points."""
        C = np.ascontiguousarray(C, dtype=np.float64)
        B = Augmented(C, self.sigma).b
        A = self.aug.a
        cols = self.V if with_grad else self.V[:, :1]
        out = np.zeros((C.shape[0], cols.shape[1]))
        n = A.shape[0]
        for j0 in range(0, n, _BLOCK_POINTS):
            j1 = min(j0 + _BLOCK_POINTS, n)
            out += kernel_block(B, A[j0:j1]) @ cols[j0:j1]
        return out

    # ------------------------------------------------------------------ exact evaluation
    def exact(self, c: np.ndarray) -> tuple[float, float, float, float]:
        """``(E(c), released a(c), K̄_D(c), rounding bound of E(c))`` in float64, direct differences.

        Squared distances from rounded differences: relative error ``≤ γ_{d+2}``; times ``s``
        (itself rounded, ``γ_2``) and the exponent's relative error is ``≤ γ_{d+5}`` [4, Sec 3.1], so each
        kernel value errs relatively by ``ρ = e^{γ_{d+5} x_max}(1 + 2·EXP_ULP_F64·u) − 1`` with
        ``x_max`` the largest exponent; products with the weights add ``γ_1`` and ``math.fsum``
        rounds each sum correctly (``u``). ``E = a − t`` adds ``u|E|``.
        """
        s = 1.0 / (2.0 * self.sigma * self.sigma)

        def ksum(P: np.ndarray, w: np.ndarray) -> tuple[float, float]:
            if P.shape[0] == 0:
                return 0.0, 0.0
            diff = P - c[None, :]
            x = np.einsum("ij,ij->i", diff, diff) * s
            xmax = float(x.max())
            if xmax * (1.0 + gamma(self.d + 5, _U)) > MAX_EXPONENT:
                # terms with exponents beyond ~700 are not resolved: computed and true values are both below
                # e^{-699} (the weights sum to at most 1), so their error is too
                tail = math.exp(1.0 - MAX_EXPONENT)
            else:
                tail = 0.0
            val = math.fsum(w * np.exp(-x))
            rho = compound(math.expm1(gamma(self.d + 5, _U) * min(xmax, MAX_EXPONENT)), 2.0 * EXP_ULP_F64 * _U,
                           gamma(1, _U), _U)
            return val, rho * val + tail

        t, bt = ksum(self.data_points, self.data_weights)
        if self.answer is None:
            a, ba = ksum(self.syn_points, self.syn_weights)
        else:
            a = float(np.asarray(self.answer.value(c[None, :]), dtype=np.float64)[0])
            ba = float(self.answer.rounding_bound)
        E = a - t
        return E, a, t, (ba + bt + _U * abs(E)) * (1.0 + EVAL_SLACK)


def check_supremum_inputs(X: Any, sigma: Any, domain: str) -> tuple[np.ndarray, float]:
    """The data and kernel width of a class-supremum search, checked.

    Parameters
    ----------
    X : array_like
        The data: a finite ``(n, d)`` array, ``n ≥ 1``, in the cube ``[-1, 1]^d``.
    sigma : float
        The kernel width: finite and ``> 0``.
    domain : str
        One of :data:`DOMAINS`.

    Returns
    -------
    tuple of numpy.ndarray and float
        ``(X, sigma)`` as float64.

    Raises
    ------
    TypeError, ValueError
        Naming the parameter that is not of its type or out of its range.
    """
    P = check_finite_array(X, name="X", ndim=2, min_rows=1)
    if np.any(np.abs(P) > 1.0):
        raise ValueError("X must lie in the cube [-1, 1]^d (every |x_ij| <= 1)")
    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    if not math.isfinite(sigma):
        raise ValueError("sigma must be finite")
    check_choice(domain, name="domain", choices=DOMAINS)
    return P, sigma


def resolve_released(released: Any, d: int) -> WeightedDatabase | AnswerFunction | str:
    """What ``released`` answers for every single-kernel query (:func:`released_answers`), checked against ``d``.

    Parameters
    ----------
    released : WeightedDatabase, AnswerFunction or Release
        A release, or what it answers.
    d : int
        The data's number of columns.

    Returns
    -------
    WeightedDatabase, AnswerFunction or str
        As :func:`released_answers`: a string says why the release has no class supremum.

    Raises
    ------
    ValueError
        When the released points do not have ``d`` columns, or the released database's weights are not a
        distribution (non-finite, negative, all zero, not summing to 1), however it was constructed
        (:func:`~dpkit.queries.synthetic.check_released_database`).
    """
    if isinstance(released, (WeightedDatabase, AnswerFunction)):
        out: WeightedDatabase | AnswerFunction | str = released
    else:
        out = released_answers(released)
    if isinstance(out, WeightedDatabase):
        check_released_database(out, name="released" if out is released else "release.synthetic")
        if out.n_features != d:
            raise ValueError(f"the released points have d = {out.n_features} columns but X has {d}")
    return out


# ---------------------------------------------------------------------------------------------
# certified upper bound: branch and bound
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, eq=False)
class BoxData:
    """What the box bound of :func:`certify_supremum` sees for a batch of k boxes ``[centre − half, centre + half]``.

    Attributes
    ----------
    centre, half : ndarray (k, d)
    value : ndarray (k,)
        ``E`` at the centre (computed).
    gradient : ndarray (k, d)
        ``∇E`` at the centre (computed).
    hessian : ndarray (k,)
        A proven bound on ``‖∇²E‖₂`` over the box.
    interval : ndarray (k,)
        A proven bound on ``|E|`` over the box from the per-group nearest/farthest distances.
    margin : ndarray (k,)
        A proven bound on the rounding error of the Taylor bound's computed terms (the interval
        bound carries its own).
    """

    centre: np.ndarray
    half: np.ndarray
    value: np.ndarray
    gradient: np.ndarray
    hessian: np.ndarray
    interval: np.ndarray
    margin: np.ndarray


def taylor_box_bound(b: BoxData) -> np.ndarray:
    """``max_{c∈box} |E(c)| ≤ |E(c₀)| + Σ_k |∂_k E(c₀)| h_k + ½ H ‖h‖² + margin`` (Taylor's formula with the
    Lagrange remainder; see :func:`certify_supremum`)."""
    return (np.abs(b.value) + np.sum(np.abs(b.gradient) * b.half, axis=1)
            + 0.5 * b.hessian * np.sum(b.half**2, axis=1) + b.margin)


def interval_box_bound(b: BoxData) -> np.ndarray:
    """``max_{c∈box} |E(c)| ≤`` the per-group interval bound (nearest and farthest distances; see
    :func:`certify_supremum`)."""
    return np.asarray(b.interval, dtype=np.float64).copy()


def proven_box_bound(b: BoxData) -> np.ndarray:
    """The smaller of :func:`taylor_box_bound` and :func:`interval_box_bound` (both proven)."""
    return np.minimum(taylor_box_bound(b), interval_box_bound(b))


def _groups(P: np.ndarray, v: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split the signed points into ≤ ``n_groups`` kd-tree leaves (median of the widest coordinate);
    per leaf its bounding box and its positive and negative mass."""
    leaves = [np.arange(P.shape[0])]
    while len(leaves) < n_groups:
        j = max(range(len(leaves)), key=lambda i: leaves[i].size)
        idx = leaves[j]
        if idx.size < 2:
            break
        Q = P[idx]
        k = int(np.argmax(Q.max(axis=0) - Q.min(axis=0)))
        order = np.argsort(Q[:, k], kind="stable")
        h = idx.size // 2
        leaves[j:j + 1] = [idx[order[:h]], idx[order[h:]]]
    lo = np.array([P[i].min(axis=0) for i in leaves])
    hi = np.array([P[i].max(axis=0) for i in leaves])
    pos = np.array([float(np.clip(v[i], 0.0, None).sum()) for i in leaves])
    neg = np.array([float(np.clip(-v[i], 0.0, None).sum()) for i in leaves])
    return lo, hi, pos, neg


def certify_supremum(
    X: Any,
    released: Any,
    sigma: float,
    *,
    initial: ClassSupremum | None = None,
    domain: str = "cube",
    max_boxes: int = 20_000,
    batch: int = 64,
    n_groups: int = 64,
    rtol: float = 1e-3,
    atol: float = 1e-6,
    box_bound: Callable[[BoxData], np.ndarray] | None = None,
) -> SupremumInterval:
    """A certified interval ``[lower, upper]`` for ``sup_c |E(c)|`` of a weighted database, d ≤ 8.

    Branch and bound over boxes of the search domain (the cube, or ``[-reach, reach]^d`` for
    ``domain="space"``, module lemma) [5]. For each box with centre ``c₀`` and half-widths ``h``:

    * **Taylor bound.** ``E(c) = E(c₀) + ∇E(c₀)·(c − c₀) + ½ (c − c₀)ᵀ∇²E(ξ)(c − c₀)``, so
      ``|E| ≤ |E(c₀)| + Σ_k |∂_k E(c₀)| h_k + ½ H ‖h‖²`` with ``H ≥ sup_box ‖∇²E‖₂``. The Hessian
      of ``k(p, ·)`` is ``k(p, c)(uuᵀ/σ⁴ − I/σ²)``, ``u = c − p``: its norm is
      ``k/σ² · max(1, |‖u‖²/σ² − 1|) ≤ e^{−d_min²/(2σ²)} max(1, d_max²/σ² − 1)/σ²`` (and ≤ 1/σ²,
      since ``e^{−x/2} max(1, x − 1) ≤ 1``), ``d_min``/``d_max`` the nearest/farthest distance of
      ``p`` to the box. ``E(c₀)`` and ``∇E(c₀)`` keep the cancellation between the two point sets,
      so near the maximum the bound is tight to second order.
    * **Interval bound.** Per point ``k(p, c) ∈ [e^{−d_max²/(2σ²)}, e^{−d_min²/(2σ²)}]``; the
      error is a difference of two such sums, so each point's term is bounded with its sign.
    * **Efficiency.** Both the Hessian and the interval bounds use groups of points (kd-tree
      leaves, ``n_groups``) with the distances between the group's bounding box and the box
      (``O(groups·d)`` per box); ``E(c₀)`` and ``∇E(c₀)`` are one GEMM over all points for a
      batch of ``batch`` boxes.

    The upper bound of a box is the smaller of the two; the Taylor bound carries the rounding margin
    of its computed terms (``2ρ'·Σ|v|·(1 + (max|p| + reach)Σ_k h_k/σ²)``, with ``ρ'`` the float64
    GEMM kernel-value bound — exponent error ``γ_{2d+8} s(‖p‖ + ‖c‖)²`` as in
    :mod:`dpkit.queries.accurate` — compounded with ``γ_{n+d+4}``), the interval and curvature bounds
    round their kernel bounds outwards, and every box is widened by a few ulps (the computed halves
    of a box need not tile it to the last bit). Boxes are
    split in halves along their widest side, the largest bound first; boxes whose bound is below
    the best proven value are dropped. The search stops when ``upper − lower ≤ max(atol, rtol·lower)``
    (``finished``) or after ``max_boxes`` boxes (then only ``lower`` is claimed).

    Parameters
    ----------
    X, released, sigma, domain
        As :func:`class_supremum` (``released`` must be a weighted database).
    initial : ClassSupremum, optional
        A result of :func:`class_supremum` (same inputs): its certified value seeds the lower bound.
    max_boxes : int
        Budget of boxes evaluated (default 20,000).
    batch : int
        Boxes split per step (default 64).
    n_groups : int
        Point groups of the bounds (default 64).
    rtol, atol : float
        Target gap (default 10⁻³ relative, 10⁻⁶ absolute).
    box_bound : callable, optional
        Replaces :func:`proven_box_bound` (tests use it to show that a wrong bound is caught).

    Raises
    ------
    ValueError
        For d > 8 or an answer-function release (the bounds need two weighted point sets).
    """
    with limit_threads(1):
        return _certify_supremum(X, released, sigma, initial=initial, domain=domain, max_boxes=max_boxes, batch=batch,
                                 n_groups=n_groups, rtol=rtol, atol=atol, box_bound=box_bound)


def _certify_supremum(
    X: Any, released: Any, sigma: float, *, initial: ClassSupremum | None, domain: str, max_boxes: int, batch: int,
    n_groups: int, rtol: float, atol: float, box_bound: Callable[[BoxData], np.ndarray] | None,
) -> SupremumInterval:
    t0 = time.perf_counter()
    P, sigma = check_supremum_inputs(X, sigma, domain)
    n, d = P.shape
    check_int_in_range(d, name="d (columns of X)", low=1, high=8)
    max_boxes = check_int_in_range(max_boxes, name="max_boxes", low=1)
    batch = check_int_in_range(batch, name="batch", low=1)
    n_groups = check_int_in_range(n_groups, name="n_groups", low=1)
    rtol = check_real_in_range(rtol, name="rtol", low=0.0)
    atol = check_real_in_range(atol, name="atol", low=0.0)
    rel = resolve_released(released, d)
    if not isinstance(rel, WeightedDatabase):
        raise ValueError("certify_supremum needs a weighted database (synthetic data) as released; got "
                         + (rel if isinstance(rel, str) else rel.name))
    bound_fn = proven_box_bound if box_bound is None else box_bound
    err = ErrorFunction(P, rel, sigma)
    s2 = sigma * sigma

    # proven lower bound and witness to start from
    if initial is not None:
        if not initial.applicable or initial.witness is None or initial.domain != domain:
            raise ValueError("initial must be an applicable class_supremum result of the same domain")
        witness = np.array(initial.witness, dtype=np.float64)
        lower = float(initial.sup_abs) - float(initial.numerical_bound)
        reach = float(initial.reach)
    else:
        C = np.vstack([err.points[: min(256, err.points.shape[0])], np.zeros((1, d))])
        i = int(np.argmax(np.abs(err.values(C))))
        e, _, _, b = err.exact(C[i])
        witness, lower = C[i].copy(), abs(e) - b
        reach = 1.0
        if domain == "space":
            reach = 1.0 + (sigma * math.sqrt(2.0 * math.log(1.0 / lower)) if 0.0 < lower < 1.0
                           else sigma * math.sqrt(2.0 * MAX_EXPONENT) if lower <= 0.0 else 0.0)

    glo, ghi, gpos, gneg = _groups(err.points, err.v, n_groups)
    abs_v = float(np.abs(err.v).sum())
    max_p = float(np.abs(err.points).max())
    # rounding of the GEMM-form values and gradients at box centres: exponent error ≤ γ_{2d+8} s(‖p‖ + ‖c‖)²
    # (as in dpkit.queries.accurate, without its underflow limit: terms that underflow are < 1e-300 each)
    norm_p = float(np.sqrt(np.einsum("ij,ij->i", err.points, err.points).max()))
    x_gemm = (norm_p + reach * math.sqrt(d)) ** 2 / (2.0 * s2)
    rho_k = compound(math.expm1(gamma(2 * d + 8, _U) * x_gemm), 2.0 * EXP_ULP_F64 * _U)
    rho = compound(rho_k, gamma(err.points.shape[0] + d + 4, _U))
    g_groups = gamma(n_groups + 4, _U)

    def evaluate(centre: np.ndarray, half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        val, grad = err.values_gradients(centre)
        # the computed children need not tile the parent to the last bit: widen every box by a few ulps
        half = half * (1.0 + 4.0 * _U) + 4.0 * _U * (np.abs(centre) + half)
        blo, bhi = centre - half, centre + half
        gap = np.maximum(np.maximum(glo[None] - bhi[:, None], blo[:, None] - ghi[None]), 0.0)
        dmin2 = np.einsum("kgd,kgd->kg", gap, gap)
        far = np.maximum(np.abs(ghi[None] - blo[:, None]), np.abs(bhi[:, None] - glo[None]))
        dmax2 = np.einsum("kgd,kgd->kg", far, far)
        # exponents err relatively by ≤ γ_{d+5}, exp by 4 ulp: round the kernel bounds outwards by rx
        rx = compound(gamma(d + 5, _U) * float(dmax2.max(initial=0.0)) / (2.0 * s2), 2.0 * EXP_ULP_F64 * _U)
        kmax = np.exp(-dmin2 / (2.0 * s2)) * (1.0 + rx)
        kmin = np.exp(-dmax2 / (2.0 * s2)) * max(0.0, 1.0 - rx)
        up, down = 1.0 + g_groups, 1.0 - g_groups
        hi_e = (kmax @ gpos) * up - (kmin @ gneg) * down
        lo_e = (kmin @ gpos) * down - (kmax @ gneg) * up
        interval = np.maximum(hi_e, -lo_e) * (1.0 + 2.0 * _U) + 1e-300
        factor = np.maximum(1.0, dmax2 / s2 - 1.0) * (1.0 + gamma(d + 6, _U))
        hess = np.minimum((kmax * factor) @ (gpos + gneg) * up / s2, abs_v / s2) * (1.0 + 2.0 * _U)
        margin = 2.0 * rho * abs_v * (1.0 + (max_p + reach) * half.sum(axis=1) / s2) + 1e-300
        data = BoxData(centre=centre, half=half, value=val, gradient=grad, hessian=hess, interval=interval,
                       margin=margin)
        return np.asarray(bound_fn(data), dtype=np.float64), np.abs(val) - margin

    # root
    heap: list[tuple[float, int, np.ndarray, np.ndarray]] = []
    centre, half = np.zeros((1, d)), np.full((1, d), reach)
    ub, lb = evaluate(centre, half)
    if lb[0] > lower:
        lower, witness = float(lb[0]), centre[0].copy()
    counter = 0
    heapq.heappush(heap, (-float(ub[0]), counter, centre[0], half[0]))
    n_boxes = 1
    status = "budget of boxes exhausted: lower bound only"
    while heap:
        top = -heap[0][0]
        if top - lower <= max(atol, rtol * lower):
            status = "finished"
            break
        if n_boxes >= max_boxes:
            break
        popped = [heapq.heappop(heap) for _ in range(min(batch, len(heap), max(1, (max_boxes - n_boxes) // 2)))]
        cs, hs = [], []
        for _, _, c, h in popped:
            k = int(np.argmax(h))
            h2 = h.copy()
            h2[k] /= 2.0
            for sgn in (-1.0, 1.0):
                c2 = c.copy()
                c2[k] += sgn * h2[k]
                cs.append(c2)
                hs.append(h2)
        centre, half = np.array(cs), np.array(hs)
        ub, lb = evaluate(centre, half)
        n_boxes += centre.shape[0]
        j = int(np.argmax(lb))
        if lb[j] > lower:
            lower, witness = float(lb[j]), centre[j].copy()
        for i in range(centre.shape[0]):
            if ub[i] > lower:
                counter += 1
                heapq.heappush(heap, (-float(ub[i]), counter, centre[i], half[i]))
    open_upper = max(lower, -heap[0][0]) if heap else lower
    # the witness's exact value (the search's lower bound used the GEMM values minus their margin)
    e, _, _, b = err.exact(witness)
    lower = max(lower, abs(e) - b)
    finished = status == "finished"
    upper = max(open_upper, lower) if finished else None
    w = witness.copy()
    w.setflags(write=False)
    return SupremumInterval(
        lower=lower, upper=upper, gap=None if upper is None else upper - lower, finished=finished, status=status,
        unfinished_upper=max(open_upper, lower), witness=w, n_boxes=n_boxes, domain=domain, reach=reach,
        seconds=time.perf_counter() - t0,
    )


#: Data rows above which :func:`class_supremum` searches on the low-rank surrogate of the data side.
LOWRANK_ABOVE = 20_000


# ---------------------------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------------------------
def _not_applicable(reason: str, domain: str, sigma: float, t0: float) -> ClassSupremum:
    return ClassSupremum(applicable=False, reason=reason, domain=domain, sigma=sigma, seconds=time.perf_counter() - t0)


def _subsample(P: np.ndarray, k: int, g: np.random.Generator) -> np.ndarray:
    if k == 0 or P.shape[0] == 0:
        return np.empty((0, P.shape[1]))
    if P.shape[0] <= k:
        return P
    return P[np.sort(g.choice(P.shape[0], size=k, replace=False))]


def class_supremum(
    X: Any,
    released: Any,
    sigma: float,
    *,
    rng: RNGLike = None,
    domain: str = "cube",
    workload_centres: Any | None = None,
    workload_scores: Any | None = None,
    n_workload_starts: int = 16,
    n_data_starts: int = 128,
    n_synthetic_starts: int = 128,
    n_random_starts: int = 256,
    n_ascents: int = 32,
    n_polish: int = 4,
    max_iter: int = 100,
    polish_iter: int = 200,
    n_certify: int = 4,
    lowrank_above: int | None = LOWRANK_ABOVE,
) -> ClassSupremum:
    """The largest error over single-kernel queries of one release, with the witness centre.

    Parameters
    ----------
    X : array (n, d)
        The data ``D`` in ``[-1, 1]^d`` (rows weighted ``1/n``).
    released : WeightedDatabase, AnswerFunction or Release
        The synthetic database, an answer function for single kernels, or a method's release
        (:func:`released_answers`). A release that only answers its workload's queries gives a
        result with ``applicable=False`` and the reason.
    sigma : float
        Kernel width σ.
    rng : seed or Generator
        Draws the subsamples and the random starts (same seed ⇒ same result).
    domain : {"cube", "space"}
        Centres in ``[-1, 1]^d`` (the workload's range, default) or anywhere (the class (2.1); the
        search box ``[-1 − R, 1 + R]^d`` from the module's lemma; weighted databases only).
    workload_centres : array (M, d), optional
        Centres of the workload (e.g. those of its worst queries).
    workload_scores : array (M,), optional
        A score per workload centre (e.g. its error, or its query's error); the
        ``n_workload_starts`` highest are used. Without scores a random subsample is.
    n_workload_starts, n_data_starts, n_synthetic_starts, n_random_starts : int
        Candidate centres of each source (default 16, 128, 128, 256), all screened in one batch.
    n_ascents : int
        Candidates ascended together (default 32): the best of each source in turn.
    n_polish : int
        Ascended centres refined one by one (default 4).
    max_iter, polish_iter : int
        L-BFGS-B iterations of the batched ascent (default 100) and of each polish (default 200).
    n_certify : int
        Best centres re-evaluated exactly (default 4); the witness is the largest.
    lowrank_above : int or None
        Data with more rows than this (default :data:`LOWRANK_ABOVE`) are screened and ascended on
        the low-rank surrogate ``K̃_D(c) = Σ_l β_l k(z_l, c)`` of the kernel mean embedding of
        ``(X, σ)`` (:func:`~dpkit.queries.exact.embedding_for` with the options the exact answers
        use, so a pipeline's cached embedding is reused; otherwise it is fitted and cached); the
        certification stays exact on the full data. None: always the data.

    Returns
    -------
    ClassSupremum

    Notes
    -----
    The algorithm is in the module docstring. Cost: the screening evaluates
    ``n_workload + n_data + n_synthetic + n_random`` centres, the ascent at most about
    ``1.25·max_iter·n_ascents`` centres with gradients, the polish ``n_polish·polish_iter``;
    each centre costs ``O((n + s)·d)`` (``s`` released points), ``O((r + s)·d)`` on the
    low-rank surrogate (``r`` landmarks), and the certification ``O(n·d)`` per certified centre. BLAS runs single-threaded
    meanwhile (threadpoolctl): the products are small and many, where BLAS's own threads
    only cost synchronisation.
    """
    with limit_threads(1):
        return _class_supremum(X, released, sigma, rng=rng, domain=domain, workload_centres=workload_centres,
                               workload_scores=workload_scores, n_workload_starts=n_workload_starts,
                               n_data_starts=n_data_starts, n_synthetic_starts=n_synthetic_starts,
                               n_random_starts=n_random_starts, n_ascents=n_ascents, n_polish=n_polish,
                               max_iter=max_iter, polish_iter=polish_iter, n_certify=n_certify,
                               lowrank_above=lowrank_above)


def _class_supremum(
    X: Any, released: Any, sigma: float, *, rng: RNGLike, domain: str, workload_centres: Any | None,
    workload_scores: Any | None, n_workload_starts: int, n_data_starts: int, n_synthetic_starts: int,
    n_random_starts: int, n_ascents: int, n_polish: int, max_iter: int, polish_iter: int, n_certify: int,
    lowrank_above: int | None,
) -> ClassSupremum:
    t0 = time.perf_counter()
    P, sigma = check_supremum_inputs(X, sigma, domain)
    n, d = P.shape
    counts = {}
    for name, val in (("n_workload_starts", n_workload_starts), ("n_data_starts", n_data_starts),
                      ("n_synthetic_starts", n_synthetic_starts), ("n_random_starts", n_random_starts),
                      ("n_polish", n_polish)):
        counts[name] = check_int_in_range(val, name=name, low=0)
    n_ascents = check_int_in_range(n_ascents, name="n_ascents", low=1)
    max_iter = check_int_in_range(max_iter, name="max_iter", low=1)
    polish_iter = check_int_in_range(polish_iter, name="polish_iter", low=1)
    n_certify = check_int_in_range(n_certify, name="n_certify", low=1)
    if lowrank_above is not None:
        lowrank_above = check_int_in_range(lowrank_above, name="lowrank_above", low=0)
    rel = resolve_released(released, d)
    if isinstance(rel, str):
        return _not_applicable(rel, domain, sigma, t0)
    if isinstance(rel, AnswerFunction) and domain == "space":
        raise ValueError("domain='space' needs a weighted database: a released answer function need not decay "
                         "outside the cube, so the supremum over all centres is not localised; use domain='cube'")
    g = resolve_rng(rng)
    side: dict[str, Any] = {}
    surrogate = None
    if lowrank_above is not None and n > lowrank_above:
        # the options of the exact answers (dpkit.queries.exact.exact_answers' default): one cache entry for both
        emb, _ = embedding_for(P, sigma, options=FitOptions(tol=DEFAULT_TOL))
        surrogate = (emb.landmarks, emb.beta)
        side = {"data_side": "lowrank", "rank": emb.rank, "surrogate_bound": float(emb.mmd)}
    err = ErrorFunction(P, rel, sigma, surrogate=surrogate)

    # ---- candidates
    sources: list[tuple[str, np.ndarray]] = []
    if workload_centres is not None:
        Wc = check_finite_array(workload_centres, name="workload_centres", ndim=2)
        if Wc.shape[1] != d:
            raise ValueError(f"workload_centres must have d = {d} columns; got shape {Wc.shape}")
        k = counts["n_workload_starts"]
        if workload_scores is not None:
            sc = check_finite_array(workload_scores, name="workload_scores", ndim=1)
            if sc.shape[0] != Wc.shape[0]:
                raise ValueError(f"workload_scores must have one entry per workload centre ({Wc.shape[0]})")
            order = np.argsort(-sc, kind="stable")[:k]
            sources.append(("workload", Wc[order]))
        else:
            sources.append(("workload", _subsample(Wc, k, g)))
    sources.append(("data", _subsample(err.data_points, counts["n_data_starts"], g)))
    sources.append(("synthetic", _subsample(err.syn_points, counts["n_synthetic_starts"], g)))
    sources.append(("random", g.uniform(-1.0, 1.0, size=(counts["n_random_starts"], d))))
    sources = [(s, np.clip(C, -1.0, 1.0)) for s, C in sources if C.shape[0] > 0]
    if not sources:
        raise ValueError("no start: every start count is 0 (set n_random_starts >= 1)")
    C0 = np.vstack([C for _, C in sources])
    labels = np.concatenate([np.full(C.shape[0], i) for i, (_, C) in enumerate(sources)])
    E0 = err.values(C0)

    reach = 1.0
    if domain == "space":
        i = int(np.argmax(np.abs(E0)))
        e_ex, _, _, b_ex = err.exact(C0[i])
        S = abs(e_ex) - b_ex
        # every centre with |E| > S lies within R of the cube (module lemma); S ≤ 0: nothing localises it
        R = sigma * math.sqrt(2.0 * math.log(1.0 / S)) if 0.0 < S < 1.0 else (0.0 if S >= 1.0 else math.inf)
        if not math.isfinite(R):
            R = sigma * math.sqrt(2.0 * MAX_EXPONENT)  # |E| ≤ e^{-700}: below every rounding bound
        reach = 1.0 + R

    # ---- batched ascent from the best candidates of each source, in turn
    order_by_source = [np.flatnonzero(labels == i)[np.argsort(-np.abs(E0[labels == i]), kind="stable")]
                       for i in range(len(sources))]
    chosen: list[int] = []
    depth = 0
    while len(chosen) < min(n_ascents, C0.shape[0]):
        added = False
        for idx in order_by_source:
            if depth < idx.size and len(chosen) < n_ascents:
                chosen.append(int(idx[depth]))
                added = True
        if not added:
            break
        depth += 1
    starts = C0[chosen]
    signs = np.where(E0[chosen] >= 0, 1.0, -1.0)
    start_labels = labels[chosen]
    S_n = starts.shape[0]

    def stacked(z: np.ndarray) -> tuple[float, np.ndarray]:
        Cz = z.reshape(S_n, d)
        Ez, Gz = err.values_gradients(Cz)
        return float(-np.sum(signs * Ez)), (-(signs[:, None] * Gz)).ravel()

    bounds = [(-reach, reach)] * (S_n * d)
    z, _, _ = fmin_l_bfgs_b(stacked, starts.ravel(), bounds=bounds, maxiter=max_iter, factr=1e2, pgtol=1e-12,
                            m=20)
    ascended = np.clip(z.reshape(S_n, d), -reach, reach)
    Ea = err.values(ascended)

    # ---- polish the best ascended centres one by one
    best = np.argsort(-np.abs(Ea), kind="stable")[: counts["n_polish"]]
    polished, pol_labels = [], []
    for i in best:
        sgn = 1.0 if Ea[i] >= 0 else -1.0

        def single(x: np.ndarray, sgn: float = sgn) -> tuple[float, np.ndarray]:
            e1, g1 = err.values_gradients(x[None, :])
            return float(-sgn * e1[0]), -sgn * g1[0]

        x, _, _ = fmin_l_bfgs_b(single, ascended[i], bounds=[(-reach, reach)] * d, maxiter=polish_iter, factr=10.0,
                                pgtol=1e-14, m=20)
        polished.append(np.clip(x, -reach, reach))
        pol_labels.append(start_labels[i])
    Cand = np.vstack([C0, ascended] + ([np.vstack(polished)] if polished else []))
    cand_labels = np.concatenate([labels, start_labels, np.asarray(pol_labels, dtype=labels.dtype)])
    Ec = np.concatenate([E0, Ea, err.values(np.vstack(polished)) if polished else np.empty(0)])

    # ---- certify the best few exactly
    top = np.argsort(-np.abs(Ec), kind="stable")[:n_certify]
    results = [(err.exact(Cand[i]), i) for i in top]
    (e, a, t, bound), i = max(results, key=lambda r: abs(r[0][0]))
    witness = Cand[i].copy()
    witness.setflags(write=False)
    return ClassSupremum(
        applicable=True,
        sup_abs=abs(e),
        witness=witness,
        signed_error=e,
        truth=t,
        released=a,
        witness_rel=abs(e) / t if t > 0 else math.inf,
        numerical_bound=bound,
        domain=domain,
        reach=reach,
        sigma=sigma,
        n_evaluations=err.n_evaluations,
        n_gradients=err.n_gradients,
        n_starts=int(C0.shape[0]),
        n_ascended=int(S_n),
        source=sources[int(cand_labels[i])][0],
        seconds=time.perf_counter() - t0,
        **side,
    )
