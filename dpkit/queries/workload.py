"""The smooth-query workload of thesis Chapter 3: Gaussian-kernel mixture queries (2.1).

A query is ``f(x) = Σ_j α_j exp(−‖x − c_j‖² / (2σ²))`` with centres ``c_j ~ U[−1, 1]^d`` and ``α ~ Dirichlet(1, …, 1)``;
by Prop 2.2 the experiments run the mechanisms with smoothness ``K = σ²`` (:func:`smoothness_for_sigma`).
:mod:`dpkit.queries.evaluate` answers the induced linear query ``q_f(D) = (1/n) Σ_{x∈D} f(x)``.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_finite_array, check_positive_int, check_real_in_range

__all__ = [
    "GaussianKernelWorkload",
    "THESIS_SIGMAS",
    "THESIS_N_QUERIES",
    "THESIS_J",
    "smoothness_for_sigma",
    "sigma_for_smoothness",
]

#: Kernel widths of Tables 3.2/3.3 (thesis Sec 3.1).
THESIS_SIGMAS: tuple[float, ...] = (2.0, 4.0, 6.0, 8.0, 10.0)
#: Queries per run and centres per query in Sec 3.1.
THESIS_N_QUERIES: int = 10_000
THESIS_J: int = 10

#: exp(-x) underflows to 0 in float64 beyond about x = 745.
_UNDERFLOW = 700.0
_SIMPLEX_TOL = 1e-9


def smoothness_for_sigma(sigma: float) -> float:
    """The smoothness order the thesis pairs with width σ: ``K = σ²`` (Prop 2.2, Sec 3.1).

    Returned as a float (``K`` need not be an integer in the parameter schedules of
    Thm 2.4/2.5); Prop 2.2's guarantee ``‖f‖_K ≤ 1`` holds for every integer order ``≤ σ²``.
    """
    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    return sigma * sigma


def sigma_for_smoothness(K: float) -> float:
    """Inverse of :func:`smoothness_for_sigma`: the width ``σ = √K``."""
    K = check_real_in_range(K, name="K", low=0.0, low_inclusive=False)
    return math.sqrt(K)


def _check_sigma(sigma: float) -> float:
    """A kernel width in (0, ∞) whose exponent scale ``1/(2σ²)`` is finite and > 0 in float64."""
    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    two_s2 = 2.0 * sigma * sigma
    if not (0.0 < two_s2 < math.inf):
        raise ValueError(f"sigma = {sigma:g} is outside the usable range: 2*sigma^2 = {two_s2:g} must be finite and > 0 "
                         "in float64 (roughly 1e-154 < sigma < 1e154)")
    return sigma


def _kept(a: np.ndarray, own: bool) -> np.ndarray:
    """``a`` as the float64 C-ordered array a workload keeps: ``a`` itself if ``own`` and it is one, else a copy."""
    if own and a.dtype == np.float64 and a.flags.c_contiguous and a.flags.owndata:
        return a
    return np.array(a, dtype=np.float64, order="C", copy=True)


@dataclass(frozen=True, kw_only=True)
class GaussianKernelWorkload:
    """Q Gaussian-kernel mixture queries (thesis (2.1)), frozen and read-only.

    Parameters
    ----------
    centres : array, shape (Q, J, d)
        Kernel centres ``c_{q,j}``; finite. (The generator draws them in ``[-1, 1]^d``; the
        evaluator accepts any finite centres.)
    alphas : array, shape (Q, J)
        Non-negative mixture weights with ``Σ_j α_{q,j} = 1`` for every query (checked to
        1e-9; Prop 2.2 only needs ``‖α‖₁ ≤ 1`` but the thesis draws from the simplex).
    sigma : float
        Common kernel width ``σ > 0``.
    """

    centres: np.ndarray
    alphas: np.ndarray
    sigma: float

    def __post_init__(self) -> None:
        self._validate(own=False)

    @classmethod
    def _owning(cls, centres: np.ndarray, alphas: np.ndarray, sigma: float) -> "GaussianKernelWorkload":
        """A workload that keeps ``centres`` and ``alphas`` themselves, made read-only, instead of copies: only for
        new arrays that nothing else refers to (:meth:`generate`'s). The same checks as the constructor."""
        wl = cls.__new__(cls)
        object.__setattr__(wl, "centres", centres)
        object.__setattr__(wl, "alphas", alphas)
        object.__setattr__(wl, "sigma", sigma)
        wl._validate(own=True)
        return wl

    def _validate(self, *, own: bool) -> None:
        """Check the fields (class docstring) and keep read-only float64 C-ordered arrays: copies, or with ``own``
        the arrays given when they are float64 and C-ordered already (a 10⁵ × 101 copy is 80 MB)."""
        C = check_finite_array(self.centres, name="centres", ndim=3)
        A = check_finite_array(self.alphas, name="alphas", ndim=2)
        if C.shape[0] < 1 or C.shape[1] < 1 or C.shape[2] < 1:
            raise ValueError(f"centres must have shape (Q, J, d) with Q, J, d >= 1; got {C.shape}")
        if A.shape != C.shape[:2]:
            raise ValueError(f"alphas must have shape (Q, J) = {C.shape[:2]} to match centres; got {A.shape}")
        if np.any(A < 0):
            raise ValueError("alphas must be non-negative (mixture weights on the simplex)")
        s = A.sum(axis=1)
        if np.any(np.abs(s - 1.0) > _SIMPLEX_TOL):
            worst = int(np.argmax(np.abs(s - 1.0)))
            raise ValueError(f"alphas must sum to 1 per query; query {worst} sums to {s[worst]:.12g}")
        sigma = _check_sigma(self.sigma)
        reach = max(float(C.max()), -float(C.min()))  # max |c|, without an |C| temporary
        if not np.isfinite(reach * reach * C.shape[2]):
            raise ValueError(f"centres must lie near the cube [-1, 1]^d: max |c| = {reach:.3g} overflows a squared distance")
        # squared distance to the cube (0 when every |c| <= 1, as for generated workloads: skip the passes)
        excess2 = np.sum(np.clip(np.abs(C) - 1.0, 0.0, None) ** 2, axis=-1) if reach > 1.0 else np.zeros(1)
        if float(excess2.max()) / (2.0 * sigma**2) > _UNDERFLOW:
            warnings.warn(f"centres lie so far outside the cube [-1, 1]^d (distance {np.sqrt(excess2.max()):.3g} at "
                          f"sigma = {sigma:g}) that their kernel values underflow to 0 on any data in the cube",
                          RuntimeWarning, stacklevel=3)
        C = _kept(C, own)
        A = _kept(A, own)
        C.setflags(write=False)
        A.setflags(write=False)
        object.__setattr__(self, "centres", C)
        object.__setattr__(self, "alphas", A)
        object.__setattr__(self, "sigma", sigma)

    # ------------------------------------------------------------------ construction
    @classmethod
    def generate(
        cls, n_queries: int, d: int, *, J: int = THESIS_J, sigma: float, rng: RNGLike = None
    ) -> "GaussianKernelWorkload":
        """Draw ``n_queries`` queries (2.1) as in thesis Sec 3.1.

        Draw order (fixed, so a seed reproduces the workload bit for bit): first all centres
        ``U[−1, 1]^{Q×J×d}`` in one call, then all weights ``Dirichlet(1_J)`` row by row in one
        call (``Generator.dirichlet``, i.e. normalised Exp(1) variables: uniform on the simplex).

        Parameters
        ----------
        n_queries : int
            Q ≥ 1 (the thesis uses 10⁴ per run).
        d : int
            Dimension of the data.
        J : int
            Centres per query (10 in the thesis).
        sigma : float
            Kernel width σ > 0 (the thesis pairs it with smoothness K = σ²).
        rng : int, Generator, SeedSequence or None
        """
        Q = check_positive_int(n_queries, name="n_queries")
        d = check_positive_int(d, name="d")
        J = check_positive_int(J, name="J")
        sigma = _check_sigma(sigma)
        g = resolve_rng(rng)
        centres = g.uniform(-1.0, 1.0, size=(Q, J, d))
        alphas = g.dirichlet(np.ones(J), size=Q)
        # Dirichlet rows sum to 1 up to rounding; renormalise so the simplex check is exact.
        alphas = alphas / alphas.sum(axis=1, keepdims=True)
        return cls._owning(centres, alphas, sigma)

    # ------------------------------------------------------------------ shape helpers
    @property
    def n_queries(self) -> int:
        """Q, the number of queries."""
        return int(self.centres.shape[0])

    @property
    def J(self) -> int:
        """Centres per query."""
        return int(self.centres.shape[1])

    @property
    def d(self) -> int:
        """Dimension."""
        return int(self.centres.shape[2])

    @property
    def K(self) -> float:
        """The smoothness order used with this workload in the thesis: ``K = σ²`` (Prop 2.2)."""
        return smoothness_for_sigma(self.sigma)

    @property
    def flat_centres(self) -> np.ndarray:
        """All ``Q·J`` centres as a (Q·J, d) view, query-major (row ``q·J + j`` is ``c_{q,j}``)."""
        return self.centres.reshape(-1, self.d)

    def __len__(self) -> int:
        return self.n_queries

    def subset(self, index: Any) -> "GaussianKernelWorkload":
        """The workload restricted to queries ``index`` (slice, int array or boolean mask)."""
        C = self.centres[index]
        A = self.alphas[index]
        if C.ndim == 2:  # a single integer index
            C, A = C[None], A[None]
        return GaussianKernelWorkload(centres=C, alphas=A, sigma=self.sigma)

    # ------------------------------------------------------------------ evaluation
    def evaluate_function(self, x: Any) -> np.ndarray:
        """``f_q(x)`` for every query at points ``x``, straightforward float64 (for small checks).

        Parameters
        ----------
        x : array, shape (d,) or (m, d)

        Returns
        -------
        ndarray, shape (Q,) for a single point, (Q, m) for m points.

        Notes
        -----
        Memory ``O(Q·J·m·d)``; use :mod:`dpkit.queries.evaluate` for data-set-sized inputs.
        """
        pts = check_finite_array(x, name="x", ndim=(1, 2))
        single = pts.ndim == 1
        pts = np.atleast_2d(pts)
        if pts.shape[1] != self.d:
            raise ValueError(f"x must have d = {self.d} columns; got shape {pts.shape}")
        diff = self.centres[:, :, None, :] - pts[None, None, :, :]  # (Q, J, m, d)
        k = np.exp(-np.einsum("qjmd,qjmd->qjm", diff, diff) / (2.0 * self.sigma**2))
        out = np.einsum("qj,qjm->qm", self.alphas, k)
        return out[:, 0] if single else out

    def params(self) -> dict[str, Any]:
        """Shape and width, for run records (not the centres themselves)."""
        return {"n_queries": self.n_queries, "J": self.J, "d": self.d, "sigma": self.sigma, "K": self.K}
