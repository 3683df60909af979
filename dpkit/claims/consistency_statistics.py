"""Numerical statistics for Cai et al.'s (2021) Properties 1–3, Theorems 1–5 and the Sec. 6 convergence claim.

Each function returns relative residuals (≈ 0 when the claim holds up to rounding) in a small
frozen dataclass; :mod:`dpkit.claims.consistency` compares them with their bounds, and the unit
tests use the same code.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.mechanisms.consistency.alternating import alternating_projection, block_projectors
from dpkit.mechanisms.consistency.constraints import ConstraintSystem, random_consistent_system, random_partition
from dpkit.mechanisms.consistency.general import GeneralProjector

__all__ = [
    "IterationSpectrum",
    "iteration_spectrum",
    "predicted_distances",
    "PinvResiduals",
    "TheoremResiduals",
    "PartitionConvergence",
    "SuiteWorst",
    "pinv_property_residuals",
    "theorem_residuals",
    "partition_convergence",
    "consistent_point",
    "random_system_suite",
]


@dataclass(frozen=True)
class PinvResiduals:
    """Properties 1–3 of the Moore–Penrose inverse (see :func:`pinv_property_residuals`)."""

    prop1: float
    prop2: float
    prop3_idempotent: float
    prop3_norm_P: float
    prop3_norm_I_minus_P: float
    prop3_norm_dist01: float


@dataclass(frozen=True)
class TheoremResiduals:
    """Theorems 1–5 and Cor. 1 at one point (see :func:`theorem_residuals`)."""

    thm1_solver_gap: float
    thm1_feasibility: float
    thm1_objective_margin: float
    thm2_idempotence: float
    cor1_fixed_point: float
    thm3_identity: float
    thm4_pythagoras: float
    thm5_inner: float


@dataclass(frozen=True)
class PartitionConvergence:
    """One run of eq. (8) with a random partition (see :func:`partition_convergence`)."""

    rel_dist: float
    fejer_increase: float
    telescope: float
    inner_drift: float
    n_iter: float
    converged: float


@dataclass(frozen=True)
class SuiteWorst(TheoremResiduals):
    """Worst case over random systems (see :func:`random_system_suite`): the theorem residuals of
    :class:`TheoremResiduals` and the Property/Sec. 6 residuals below, each the maximum over the
    systems, except ``thm1_objective_margin`` (the minimum) and ``sec6_converged`` (the fraction
    of Sec. 6 runs that met the stop rule)."""

    prop1: float
    prop2: float
    prop3_idempotent: float
    prop3_norm_dist01: float
    sec6_rel_dist: float
    sec6_fejer_increase: float
    sec6_telescope: float
    sec6_inner_drift: float
    sec6_converged: float


def consistent_point(system: ConstraintSystem, *, rng: RNGLike = None, scale: float = 1.0) -> np.ndarray:
    """A random point ``p`` with ``M p = b`` (the projection of a random Gaussian vector; Cor. 1)."""
    g = resolve_rng(rng)
    return GeneralProjector(system=system, method="pinv").project(scale * g.standard_normal(system.n))


def pinv_property_residuals(M: Any) -> PinvResiduals:
    """Properties 1–3 for a (dense or sparse) matrix M, as relative residuals.

    * ``prop1``: ‖M^† − Mᵀ(MMᵀ)^†‖_F / ‖M^†‖_F
    * ``prop2``: ‖M M^† M − M‖_F / ‖M‖_F
    * ``prop3_idempotent``: ‖P² − P‖_F / max(1, ‖P‖_F) with P = M^†M
    * ``prop3_norm_P``, ``prop3_norm_I_minus_P``: spectral norms (must lie in [0, 1]; in fact {0, 1})
    * ``prop3_norm_dist01``: the larger distance of those two norms from the set {0, 1}
    """
    A = M.toarray() if hasattr(M, "toarray") else np.asarray(M, dtype=float)
    Mp = np.linalg.pinv(A)
    alt = A.T @ np.linalg.pinv(A @ A.T)
    P = Mp @ A
    n = A.shape[1]
    nP = float(np.linalg.norm(P, 2))
    nQ = float(np.linalg.norm(np.eye(n) - P, 2))
    dist01 = max(min(abs(v), abs(v - 1.0)) for v in (nP, nQ))
    return PinvResiduals(
        prop1=float(np.linalg.norm(Mp - alt) / max(np.linalg.norm(Mp), 1e-300)),
        prop2=float(np.linalg.norm(A @ Mp @ A - A) / max(np.linalg.norm(A), 1e-300)),
        prop3_idempotent=float(np.linalg.norm(P @ P - P) / max(1.0, np.linalg.norm(P))),
        prop3_norm_P=nP,
        prop3_norm_I_minus_P=nQ,
        prop3_norm_dist01=float(dist01),
    )


def theorem_residuals(system: ConstraintSystem, x: Any, *, rng: RNGLike = None, n_feasible: int = 20) -> TheoremResiduals:
    """Theorems 1–5 and Cor. 1 at the point ``x`` (relative residuals; ≈ 0 when they hold).

    * ``thm1_solver_gap``: max ‖y_pinv − y_other‖∞ / (1 + ‖y‖∞) over LSQR and (full row rank) Cholesky
    * ``thm1_feasibility``: ‖M y − b‖∞ / (1 + ‖b‖∞)
    * ``thm1_objective_margin``: min over random feasible p of (‖x − p‖ − ‖x − y‖)/‖x‖ (must be ≥ −1e-12)
    * ``thm2_idempotence``: ‖f(f(x)) − f(x)‖∞ / (1 + ‖y‖∞)
    * ``cor1_fixed_point``: ‖f(p) − p‖∞ / (1 + ‖p‖∞)
    * ``thm3_identity``: |⟨x − p, y − p⟩ − ‖y − p‖²| / ‖x − p‖² (so ⟨x−p, y−p⟩ = 0 forces p = y)
    * ``thm4_pythagoras``: |‖x − p‖² − ‖y − x‖² − ‖y − p‖²| / ‖x − p‖²  (eq. 10)
    * ``thm5_inner``: |⟨p₁ − p₂, x − p₂⟩ − ⟨p₁ − p₂, y − p₂⟩| / (max(‖p₁ − p₂‖, 1 + ‖p₂‖)·‖x − p₂‖)  (eq. 12;
      the max keeps the ratio meaningful when the solution set is a single point and p₁ − p₂ is rounding noise)
    """
    g = resolve_rng(rng)
    x = system.check_x(x)
    f = GeneralProjector(system=system, method="pinv")
    y = f.project(x)
    ynorm = 1.0 + float(np.max(np.abs(y)))
    others = [GeneralProjector(system=system, method="lsqr").project(x)]
    rank = np.linalg.matrix_rank(system.M.toarray())
    if rank == system.m:
        others.append(GeneralProjector(system=system, method="cholesky").project(x))
    gap = max(float(np.max(np.abs(y - o))) for o in others) / ynorm
    ps = [f.project(y + g.standard_normal(system.n) * (1 + np.linalg.norm(x - y))) for _ in range(max(n_feasible, 2))]
    d_opt = float(np.linalg.norm(x - y))
    margin = min(float(np.linalg.norm(x - p)) - d_opt for p in ps) / max(float(np.linalg.norm(x)), 1e-300)
    p, p2 = ps[0], ps[1]
    xp2 = float(np.sum((x - p) ** 2))
    return TheoremResiduals(
        thm1_solver_gap=gap,
        thm1_feasibility=float(np.max(np.abs(system.residual(y)))) / (1 + float(np.max(np.abs(system.b)))),
        thm1_objective_margin=margin,
        thm2_idempotence=float(np.max(np.abs(f.project(y) - y))) / ynorm,
        cor1_fixed_point=float(np.max(np.abs(f.project(p) - p))) / (1 + float(np.max(np.abs(p)))),
        thm3_identity=abs(float(np.dot(x - p, y - p)) - float(np.sum((y - p) ** 2))) / xp2,
        thm4_pythagoras=abs(xp2 - float(np.sum((y - x) ** 2)) - float(np.sum((y - p) ** 2))) / xp2,
        thm5_inner=abs(float(np.dot(p - p2, x - p2)) - float(np.dot(p - p2, y - p2)))
        / (max(float(np.linalg.norm(p - p2)), 1.0 + float(np.linalg.norm(p2))) * float(np.linalg.norm(x - p2))),
    )


def partition_convergence(
    system: ConstraintSystem,
    x: Any,
    *,
    k: int,
    rng: RNGLike = None,
    tol: float = 1e-14,
    max_iter: int = 20_000,
) -> PartitionConvergence:
    """Sec. 6: eq. (8) with a random k-block partition in random order converges to ``f_{M,b}(x)``.

    Returns ``rel_dist`` = ‖x_s − f(x)‖ / (1 + ‖f(x)‖) at the end, ``fejer_increase`` = the largest
    relative increase of ‖x_s − p‖² between cycles (≤ 0 up to rounding: Fejér monotone),
    ``telescope`` = the largest relative residual of ‖x₀ − p‖² = ‖x_s − p‖² + Σ‖steps‖²
    (Sec. 6 step 1), ``inner_drift`` = the largest relative change of ⟨p₁ − p₂, x_s − p₂⟩ (Thm. 5),
    ``n_iter`` and ``converged``.
    """
    g = resolve_rng(rng)
    x = system.check_x(x)
    blocks = random_partition(system.m, k, rng=g)  # random blocks in random order
    projs = block_projectors(system, blocks)
    ref = GeneralProjector(system=system, method="pinv").project(x)
    p1 = consistent_point(system, rng=g, scale=1 + float(np.linalg.norm(x)))
    p2 = consistent_point(system, rng=g, scale=1 + float(np.linalg.norm(x)))
    res = alternating_projection(x, projs, stop="mean-change", tol=tol, max_iter=max_iter, x_ref=ref, invariants=(p1, p2))
    fe = res.trace["fejer"]
    inner = res.trace["inner"]
    return PartitionConvergence(
        rel_dist=float(np.linalg.norm(res.x - ref)) / (1 + float(np.linalg.norm(ref))),
        fejer_increase=float(np.max(np.diff(fe)) / fe[0]) if fe.size > 1 else 0.0,
        telescope=float(np.max(np.abs(res.trace["telescope"])) / fe[0]),
        inner_drift=float(np.max(np.abs(inner - inner[0])) / (1 + abs(inner[0]))),
        n_iter=float(res.n_iter),
        converged=float(res.converged),
    )


def random_system_suite(n_systems: int, *, max_size: int = 12, rng: RNGLike = None) -> SuiteWorst:
    """Worst case over ``n_systems`` random consistent systems of Properties 1–3, Theorems 1–5 and Sec. 6.

    Each system has ``m, n ∈ [1, max_size]`` and a random rank (so rank-deficient and
    over-determined systems occur); Sec. 6 uses a random partition into ``k ∈ {1, …, m}`` blocks
    in random order. Returns the maximum of every relative residual (``thm1_objective_margin``:
    the minimum; ``sec6_converged``: the fraction of runs that met the stop rule).
    """
    from dpkit.core.validation import check_positive_int

    n_systems = check_positive_int(n_systems, name="n_systems")
    g = resolve_rng(rng)
    worst: dict[str, float] = {}
    conv = []
    for _ in range(n_systems):
        m, n = (int(v) for v in g.integers(1, max_size + 1, size=2))
        r = int(g.integers(1, min(m, n) + 1))
        S, _ = random_consistent_system(m, n, rank=r, rng=g)
        x = g.standard_normal(n) * 3
        stats = {**asdict(pinv_property_residuals(S.M)), **asdict(theorem_residuals(S, x, rng=g))}
        k = int(g.integers(1, m + 1))
        sec6 = asdict(partition_convergence(S, x, k=k, rng=g))
        conv.append(sec6.pop("converged"))
        sec6.pop("n_iter")
        stats.update({f"sec6_{key}": v for key, v in sec6.items()})
        for key, v in stats.items():
            if key in ("prop3_norm_P", "prop3_norm_I_minus_P"):
                continue
            if key == "thm1_objective_margin":
                worst[key] = min(worst.get(key, np.inf), v)
            else:
                worst[key] = max(worst.get(key, -np.inf), v)
    worst["sec6_converged"] = float(np.mean(conv))
    return SuiteWorst(**worst)


# ----------------------------------------------------------------------------- exact contraction factor
@dataclass(frozen=True)
class IterationSpectrum:
    """Spectrum of one cycle of Algorithm 1 (``x ← P₂P₁x``) on the restaurant trees, from :func:`iteration_spectrum`.

    ``eigenvalues``/``eigenvectors`` are those of the symmetric ``S = P₁P₂P₁`` (same non-zero spectrum as ``P₂P₁``);
    ``factor`` is the largest eigenvalue below 1 (the exact per-cycle contraction on the complement of the fixed
    space); ``fixed_dim`` the number of unit eigenvalues (``dim`` of the consistent set); ``P1`` the tree projector.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    factor: float
    fixed_dim: int
    P1: np.ndarray
    eig_tol: float


def iteration_spectrum(tree: Any, B: np.ndarray, *, fixed_tol: float = 1e-8) -> IterationSpectrum:
    """Build the two projectors of Algorithm 1 from their constraint definitions (not from dpkit's projector code):
    ``P₁ = I − Aᵀ(AAᵀ)⁻¹A`` for the tree rows ``A`` (``x_parent − Σ x_child = 0`` per item; row-major ``(node, item)``
    variables) and ``P₂ = I_internal ⊕ (I_leaves ⊗ Π)`` with ``Π = I − Bᵀ(BBᵀ)⁻¹B``; then ``eigh`` of ``S = P₁P₂P₁``.

    A cycle maps ``e_s = x_s − x*`` (``x*`` the projection onto the intersection) to ``e_{s+1} = P₂P₁e_s``; with
    ``f₀ = P₁e₀`` one has ``‖e_s‖² = f₀ᵀ S^{2s−1} f₀`` (``s ≥ 1``), so the per-cycle contraction tends to the largest
    eigenvalue of ``S`` below 1. ``eig_tol = 10·N·u`` (``N`` variables) is the eigensolver's rounding level."""
    from dpkit.mechanisms.consistency.trees import tree_constraint_matrix

    B = np.asarray(B, dtype=float)
    c = B.shape[1]
    A = tree_constraint_matrix(tree, c).toarray()
    N = A.shape[1]
    P1 = np.eye(N) - A.T @ np.linalg.solve(A @ A.T, A)
    Pi = np.eye(c) - B.T @ np.linalg.solve(B @ B.T, B)
    P2 = np.eye(N)
    lv = slice(tree.n_internal * c, N)
    P2[lv, lv] = np.kron(np.eye(tree.n_leaves), Pi)
    S = P1 @ P2 @ P1
    mu, V = np.linalg.eigh((S + S.T) / 2)
    free = mu < 1 - fixed_tol
    return IterationSpectrum(eigenvalues=mu, eigenvectors=V, factor=float(mu[free].max()), fixed_dim=int((~free).sum()),
                             P1=P1, eig_tol=10 * N * float(np.finfo(float).eps))


def predicted_distances(spec: IterationSpectrum, e0: np.ndarray, cycles: int) -> np.ndarray:
    """``‖e_s‖`` for ``s = 0..cycles`` from the spectral expansion ``‖e_s‖² = Σ_j c_j² μ_j^{2s−1}`` (``c = Vᵀ P₁ e₀``)."""
    e0 = np.asarray(e0, dtype=float).ravel()
    coef2 = (spec.eigenvectors.T @ (spec.P1 @ e0)) ** 2
    mu = np.clip(spec.eigenvalues, 0.0, None)
    out = [float(np.linalg.norm(e0))]
    for s in range(1, cycles + 1):
        out.append(float(np.sqrt(np.sum(coef2 * mu ** (2 * s - 1)))))
    return np.asarray(out)
