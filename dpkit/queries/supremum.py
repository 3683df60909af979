"""The worst case over the whole query class: the supremum of one release's error over single kernels.

The tables report the worst error over a finite workload of Gaussian-kernel *mixture* queries
(:mod:`dpkit.queries.workload`). The accuracy theorems bound the error of the worst query of the
whole class ``f(x) = Σ_j α_j exp(−‖x − c_j‖²/(2σ²))``, ``‖α‖₁ ≤ 1`` (thesis (2.1)). This module
computes that worst case for one release.

**Single kernels suffice.** With ``K̄_P(c) = Σ_i w_i exp(−‖p_i − c‖²/(2σ²))`` (``w`` the weights
of a weighted point set ``P``: ``1/n`` per row of the data ``D``, the synthetic database's own
weights for ``D̂``) the error of ``f`` is ``q_f(D̂) − q_f(D) = Σ_j α_j E(c_j)`` with
``E(c) = K̄_D̂(c) − K̄_D(c)``: linear in ``α``. A linear function on the ℓ₁ ball attains its
largest absolute value at a vertex ``±e_j``, so
``sup_f |q_f(D̂) − q_f(D)| = sup_c |E(c)|`` (the class is that of [1, (2.1)]). For a method that releases an answer
function ``a(c)`` for every single-kernel query (a kernel mean embedding), ``E(c) = a(c) − K̄_D(c)``
and the same argument holds.

**Where the maximum sits** (``domain``). The workload draws its centres in the cube
``[-1, 1]^d``; the class (2.1) does not restrict them (its smoothness bound, thesis Prop 2.2,
holds for every centre). ``domain="cube"`` (default) searches ``c ∈ [-1, 1]^d``;
``domain="space"`` searches all of ``R^d`` for weighted databases, using:

*Lemma.* Let ``π(c)`` be the point of the cube nearest ``c`` and ``δ = ‖c − π(c)‖``. For every
``p`` in the cube ``‖p − c‖² ≥ ‖p − π(c)‖² + δ²`` (the projection on a convex set makes
``⟨p − π(c), c − π(c)⟩ ≤ 0``), so ``0 ≤ K̄_P(c) ≤ e^{−δ²/(2σ²)} K̄_P(π(c)) ≤ e^{−δ²/(2σ²)}`` for
both (non-negative) point sets, and ``|E(c)| ≤ max(K̄_D̂(c), K̄_D(c)) ≤ e^{−δ²/(2σ²)}``. Hence if
some centre has ``|E| ≥ S > 0``, every centre with a larger error lies within distance
``R = σ √(2 ln(1/S))`` of the cube, inside the box ``[-1 − R, 1 + R]^d``; ``E`` is continuous
and vanishes at infinity, so the supremum is attained there. It need not be attained in the
cube: for ``D = {1}``, ``D̂ = {0.9}`` (d = 1, σ = 4), ``E(c) = k(0.9, c) − k(1, c)`` is close to
``−0.1 (c − 0.95)/σ² · e^{−(c − 0.95)²/(2σ²)}``, largest in absolute value at ``|c − 0.95| ≈ σ``
(``c ≈ −3.05`` and ``c ≈ 4.95``); its largest value on the cube, at ``c = −1``, is about 30 % smaller
(``tests/test_supremum.py`` checks this). A released answer function need not decay outside the cube (random
Fourier features are almost periodic), so ``domain="space"`` is refused for it.

**Algorithm** (:func:`class_supremum`). (1) *Screening*: candidate centres — the workload's
worst centres (if given), a subsample of the data's and of the synthetic set's own points,
uniform points of the cube — are evaluated in one batch (the GEMM form of
:mod:`dpkit.queries.gemm`, float64). (2) *Batched ascent*: the best candidates of each source are
ascended together: one L-BFGS-B run [2, 3] on the stacked variables ``(c_1, …, c_S)`` with
bounds, maximising the separable sum ``Σ_s sign_s E(c_s)`` (``sign_s`` the sign of the start's
error), so every objective call is one GEMM over all S centres; exact gradients
``∇E(c) = σ⁻² Σ_i v_i k(p_i, c)(p_i − c)``. (3) *Polish*: the best ascended centres are refined
one by one (L-BFGS-B, tight tolerances). (4) *Certification*: the best few centres found are
re-evaluated exactly in float64 (direct differences, correctly rounded sums: ``math.fsum``); the
largest is the witness ``c*``. ``|E(c*)|`` is a certified *lower* bound on the supremum; its
rounding bound is ``numerical_bound``.

**Large data** (``lowrank_above``). Steps (1)–(3) may evaluate the data side with the low-rank
surrogate ``K̃_D(c) = Σ_l β_l k(z_l, c)`` of the data's kernel mean embedding
(:mod:`dpkit.queries.lowrank`) instead of ``K̄_D``: the landmarks enter the signed point set with
weights ``−β_l``. Step (4) is unchanged (the full data), so the witness's error stays exact. With
``g = m_D − Σ_l β_l k(z_l, ·)`` the surrogate errs by ``g(c) = ⟨g, k_c⟩``, at most
``‖g‖·‖k_c‖ ≤ mmd`` at every centre (``ClassSupremum.surrogate_bound``).

**Relative error.** ``sup_c |E(c)|/K̄_D(c)`` is dominated by centres where ``K̄_D`` is tiny
(corners of the cube, far from the data), so it is not searched; the result reports the
witness's relative error ``|E(c*)|/K̄_D(c*)``, the relative error of the query attaining the
absolute supremum.

**Certified upper bound** (:func:`certify_supremum`, d ≤ 8): branch and bound over boxes; see
its docstring.

**Modules.** This module is the search; the error function and the result records are
:mod:`dpkit.queries.supremum_error`, the certified upper bound :mod:`dpkit.queries.supremum_bound`
(their public names are importable from here).

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

import math
import time
from typing import Any

import numpy as np
from scipy.optimize import fmin_l_bfgs_b

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.threads import limit_threads
from dpkit.core.validation import (
    check_finite_array,
    check_int_in_range,
)
from dpkit.queries.exact import DEFAULT_TOL, embedding_for
from dpkit.queries.lowrank import FitOptions
from dpkit.queries.supremum_bound import (
    BoxData,
    certify_supremum,
    interval_box_bound,
    proven_box_bound,
    taylor_box_bound,
)
from dpkit.queries.supremum_error import (
    DOMAINS,
    MAX_EXPONENT,
    AnswerFunction,
    ClassSupremum,
    ErrorFunction,
    SupremumInterval,
    check_supremum_inputs,
    random_feature_answers,
    released_answers,
    resolve_released,
)

__all__ = [
    "AnswerFunction",
    "ClassSupremum",
    "SupremumInterval",
    "BoxData",
    "proven_box_bound",
    "taylor_box_bound",
    "interval_box_bound",
    "class_supremum",
    "certify_supremum",
    "random_feature_answers",
    "released_answers",
    "DOMAINS",
    "LOWRANK_ABOVE",
]

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


