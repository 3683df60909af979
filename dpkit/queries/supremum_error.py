"""The error ``E(c)`` of one release at single-kernel centres ``c``, and the records of its worst case.

Shared by the search (:func:`~dpkit.queries.supremum.class_supremum`, the certified lower bound) and
the branch and bound (:func:`~dpkit.queries.supremum_bound.certify_supremum`, the certified upper
bound); :mod:`dpkit.queries.supremum` has the mathematics.

* :class:`AnswerFunction`, :func:`random_feature_answers`, :func:`released_answers` — what a release
  answers for every single-kernel query (a weighted database, or a released answer function).
* :class:`ErrorFunction` — ``E(c)`` and its gradient in the GEMM form, in blocks; :func:`check_supremum_inputs`
  and :func:`resolve_released` check and read the search's inputs.
* :class:`ClassSupremum`, :class:`SupremumInterval` — the results: the certified lower bound with its
  witness, and the certified interval.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from dpkit.core.validation import (
    check_choice,
    check_finite_array,
    check_real_in_range,
)
from dpkit.queries.accurate import EVAL_SLACK, EXP_ULP_F64, Augmented, compound, kernel_block
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64, gamma
from dpkit.queries.synthetic import WeightedDatabase, check_released_database

__all__ = ["AnswerFunction", "ClassSupremum", "SupremumInterval", "random_feature_answers", "released_answers",
           "DOMAINS", "MAX_EXPONENT", "ErrorFunction", "check_supremum_inputs", "resolve_released"]


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
