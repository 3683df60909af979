"""Relaxed projection: fit m continuous points in [-1, 1]^d to released statistics by gradient descent.

Shared by :mod:`dpkit.methods.rap` (trigonometric moments, Aydore et al. 2021) and :mod:`dpkit.methods.kme`
(random Fourier features, DP-MERF). Given a statistic map S : [-1, 1]^d → R^K and a released target â:

1. start from m uniform points of the cube (data-independent, drawn from ``rng``);
2. minimise ‖Σ_i S(y_i) − m â‖² (m² times the mean's loss, for L-BFGS-B's scale-dependent rules) by L-BFGS-B with box
   bounds, the gradient from each statistic's :meth:`PointStatistic.residual_and_grad`.

The fit only reads â: post-processing, no budget. Details: docs/science/derivations.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.optimize import Bounds, minimize

from dpkit.core.threads import limit_threads
from dpkit.mechanisms.trig.basis import evaluate_basis

__all__ = ["PointStatistic", "ChebyshevStatistic", "FourierStatistic", "FitResult", "fit_points"]


class PointStatistic(Protocol):
    """A per-point statistic map S: ``values(Y)`` (m, K) and ``vjp(Y, G)`` = Σ_k G[i, k] ∇S_k(y_i) (m, d)."""

    def values(self, Y: np.ndarray) -> np.ndarray: ...

    def vjp(self, Y: np.ndarray, G: np.ndarray) -> np.ndarray: ...

    def residual_and_grad(self, Y: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """e = Σ_i S(y_i) − b (K,) and the gradient of ‖e‖² in Y, ``vjp(Y, 2e broadcast to (m, K))``."""
        ...


def _separate_residual_and_grad(stat: PointStatistic, Y: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`PointStatistic.residual_and_grad` by one ``values`` and one ``vjp`` call (no shared work)."""
    e = stat.values(Y).sum(axis=0) - b
    return e, stat.vjp(Y, np.broadcast_to(2.0 * e, (Y.shape[0], e.shape[0])))


class ChebyshevStatistic:
    """The trigonometric moments φ_r(y) = Π_i T_{r_i}(y_i) of :mod:`dpkit.mechanisms.trig.basis`.

    Every index vector r is stored as ``s`` (coordinate, degree) slots (padded with degree 0,
    whose factor is T_0 = 1 with derivative 0), so values and gradients are dense array products.
    Derivatives by the recurrence T'_{k+1} = 2 T_k + 2y T'_k − T'_{k−1} (T'_0 = 0, T'_1 = 1).
    """

    def __init__(self, indices: np.ndarray) -> None:
        idx = np.asarray(indices, dtype=np.int64)
        self.indices = idx
        s = max(1, int((idx > 0).sum(axis=1).max()))
        self.coord = np.zeros((idx.shape[0], s), dtype=np.int64)
        self.deg = np.zeros((idx.shape[0], s), dtype=np.int64)
        for r, row in enumerate(idx):
            nz = np.flatnonzero(row)
            self.coord[r, : nz.size] = nz
            self.deg[r, : nz.size] = row[nz]
        self.kmax = int(idx.max(initial=0))

    def _tables(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        T = np.empty((self.kmax + 1,) + Y.shape)
        dT = np.empty_like(T)
        T[0], dT[0] = 1.0, 0.0
        if self.kmax >= 1:
            T[1], dT[1] = Y, 1.0
        for k in range(1, self.kmax):
            T[k + 1] = 2.0 * Y * T[k] - T[k - 1]
            dT[k + 1] = 2.0 * T[k] + 2.0 * Y * dT[k] - dT[k - 1]
        return T, dT

    def values(self, Y: np.ndarray) -> np.ndarray:
        return evaluate_basis(Y, self.indices)

    def vjp(self, Y: np.ndarray, G: np.ndarray) -> np.ndarray:
        T, dT = self._tables(Y)
        F = T[self.deg, :, self.coord]  # (R, s, m): the factors of every basis function
        out = np.zeros((Y.shape[1], Y.shape[0]))
        for j in range(self.coord.shape[1]):
            others = np.prod(np.delete(F, j, axis=1), axis=1) if F.shape[1] > 1 else 1.0
            contrib = G.T * others * dT[self.deg[:, j], :, self.coord[:, j]]  # (R, m)
            np.add.at(out, self.coord[:, j], contrib)
        return out.T

    def residual_and_grad(self, Y: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`PointStatistic.residual_and_grad` (values by :func:`evaluate_basis`, then :meth:`vjp`)."""
        return _separate_residual_and_grad(self, Y, b)


class FourierStatistic:
    """Normalised random Fourier features φ(y) = (cos(Ωy), sin(Ωy)) / √D of the Gaussian kernel.

    With the D rows of Ω drawn i.i.d. N(0, I_d/σ²), φ(x)·φ(c) = (1/D) Σ_k cos(ω_k·(x − c)) is an
    unbiased estimate of exp(−‖x − c‖²/(2σ²)) (Rahimi–Recht 2007), and ‖φ(x)‖₂ = 1 exactly.
    """

    def __init__(self, omega: np.ndarray) -> None:
        self.omega = np.asarray(omega, dtype=float)
        self.scale = 1.0 / np.sqrt(self.omega.shape[0])

    def values(self, Y: np.ndarray) -> np.ndarray:
        Z = Y @ self.omega.T
        return np.concatenate([np.cos(Z), np.sin(Z)], axis=1) * self.scale

    def mean(self, Y: np.ndarray, *, block: int = 2048) -> np.ndarray:
        """(1/n) Σ_i φ(y_i) (2D,), a block of rows at a time (temporary memory ≈ 64·block·D bytes, not
        16·n·D).

        The rows are added in order, each block's first row carrying the running sum, which is the
        row-by-row sum of ``values(Y).mean(axis=0)``. Every block has between ``block`` and
        2·``block`` − 1 rows (the last takes the remainder; n < 2·``block``: one block), so the matrix
        products stay on the BLAS path of the full product and the result equals
        ``values(Y).mean(axis=0)`` to the bit (tested).
        """
        Y = np.asarray(Y, dtype=float)
        n = Y.shape[0]
        if n == 0:
            raise ValueError("Y must have at least one row")
        starts = list(range(0, n - block + 1, block)) if n >= 2 * block else [0]
        acc: np.ndarray | None = None
        for i, s in enumerate(starts):
            V = self.values(Y[s : starts[i + 1] if i + 1 < len(starts) else n])
            if acc is not None:
                V[0] += acc
            acc = np.add.reduce(V, axis=0)
        assert acc is not None
        return acc / n

    def vjp(self, Y: np.ndarray, G: np.ndarray) -> np.ndarray:
        Z = Y @ self.omega.T
        D = self.omega.shape[0]
        return ((G[:, D:] * np.cos(Z) - G[:, :D] * np.sin(Z)) * self.scale) @ self.omega

    def residual_and_grad(self, Y: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`PointStatistic.residual_and_grad` with Z = YΩᵀ, cos Z and sin Z computed once.

        The same array expressions as :meth:`values` and :meth:`vjp`, in the same order, so the result
        equals :func:`_separate_residual_and_grad` to the bit (tested) at about 2/3 of its cost (one
        m×d×D product and one cos/sin pair fewer).
        """
        Z = Y @ self.omega.T
        C, S = np.cos(Z), np.sin(Z)
        e = (np.concatenate([C, S], axis=1) * self.scale).sum(axis=0) - b
        D = self.omega.shape[0]
        G = np.broadcast_to(2.0 * e, (Y.shape[0], e.shape[0]))
        return e, ((G[:, D:] * C - G[:, :D] * S) * self.scale) @ self.omega


@dataclass(frozen=True, kw_only=True, eq=False)
class FitResult:
    """The fitted points (m, d), the final loss ‖mean S(Y) − â‖², iterations and the optimiser's message."""

    points: np.ndarray
    loss: float
    n_iter: int
    message: str

    def to_dict(self) -> dict[str, object]:
        return {"loss": self.loss, "n_iter": self.n_iter, "message": self.message}


def fit_points(stat: PointStatistic, target: np.ndarray, *, m: int, d: int, rng: np.random.Generator,
               max_iter: int = 200) -> FitResult:
    """Minimise ‖(1/m) Σ_i S(y_i) − target‖² over Y ∈ [-1, 1]^{m×d} by L-BFGS-B (module docstring).

    The start is Y₀ ~ U[-1, 1]^{m×d} from ``rng`` (data-independent); the result depends only on
    ``target``, ``rng`` and the public sizes, hence is post-processing of the release of ``target``.
    BLAS runs single-threaded meanwhile (threadpoolctl): the products of a step are small (m × d × K), where
    BLAS's own threads only cost synchronisation, several times the fit's time beside other load, with the same
    points to the bit (docs/performance_notes.md).
    """
    a = np.asarray(target, dtype=float)

    def loss_grad(flat: np.ndarray) -> tuple[float, np.ndarray]:  # m² L(Y) = ‖Σ_i S(y_i) − m â‖² and its gradient
        e, grad = stat.residual_and_grad(flat.reshape(m, d), m * a)
        return float(e @ e), grad.ravel()

    y0 = rng.uniform(-1.0, 1.0, size=m * d)
    with limit_threads(1):
        res = minimize(loss_grad, y0, jac=True, method="L-BFGS-B",
                       bounds=Bounds(np.full(m * d, -1.0), np.full(m * d, 1.0)), options={"maxiter": int(max_iter)})
    pts = np.clip(res.x.reshape(m, d), -1.0, 1.0)
    return FitResult(points=pts, loss=float(res.fun) / m**2, n_iter=int(res.nit), message=str(res.message))
