"""Private subspace iteration (thesis Algorithms 6 and 7, after Hardt 2013) as a scikit-learn estimator.

The science, the errata and the proofs: docs/science/private_pca.md.

1. Start from X⁽⁰⁾ = GS(G⁽⁰⁾), a random d×k orthonormal basis.
2. L times: W⁽ˡ⁾ = A X⁽ˡ⁻¹⁾ + G⁽ˡ⁾ with d×k noise G⁽ˡ⁾, X⁽ˡ⁾ = GS(W⁽ˡ⁾), A the covariance.
3. Output X⁽ᴸ⁾ and the eigenvalue estimates λ̂_s = ‖w_s⁽ᴸ⁾‖₂.

Privacy under replace-one neighbours with the sensitivity c of Lemma 2.7 (``sensitivity="bound"``: c = 4d/n):
PSI-(ε,δ) (``delta > 0``) Gaussian noise σ = c√(4kL log(1/δ))/ε; PSI-ε (``delta == 0``) Laplace noise
σ = 10c√d kL/ε (over-noised by the printed factor 10).

Errors: :meth:`PrivateSubspaceIteration.fit` raises ``ValueError`` where the printed Gaussian σ is not proven;
``sensitivity="thesis"`` warns :class:`~dpkit.core.exceptions.PrivacyLeakWarning`; ``bounds=(lower, upper)`` rescales
and clips (:class:`~dpkit.data.errors.ClippingWarning`), ``bounds=None`` requires X ⊂ [-1, 1]^d.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from dpkit.core.accountant import Step
from dpkit.core.accountant import gaussian as accountant_gaussian
from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.threads import limit_threads
from dpkit.core.validation import (
    SQRT_FLOAT_MAX,
    budget_limit_message,
    check_choice,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_in_unit_cube,
    check_positive_finite,
    check_positive_int,
)
from dpkit.data.errors import ClippingWarning
from dpkit.data.steps import rescale

__all__ = [
    "PrivateSubspaceIteration",
    "covariance_sensitivity",
    "psi_noise_scale",
    "covariance",
    "subspace_iteration_step",
    "check_psi_noise_scale",
    "psi_step",
]


def covariance(X: np.ndarray) -> np.ndarray:
    """A(D) = (1/n) Σ (z − z̄)(z − z̄)ᵀ (centred by the true mean, as in Lemma 2.7)."""
    Xc = X - X.mean(axis=0)
    return (Xc.T @ Xc) / X.shape[0]


def covariance_sensitivity(n: int, d: int, mean_norm: float | None = None) -> float:
    """Bound c of (2.10) on ‖A(D) − A(D')‖₂ for replace-one neighbours in [-1, 1]^d.

    ``mean_norm=None`` uses the data-independent ‖D̄‖ ≤ √d (dpkit's default).
    """
    n = check_positive_int(n, name="n")
    d = check_positive_int(d, name="d")
    M = math.sqrt(d) if mean_norm is None else float(mean_norm)
    if not math.isfinite(M) or M < 0:
        raise ValueError(f"mean_norm must be finite and >= 0; got {mean_norm}")
    p = 1.0 / n + (n - 1) ** 2 / n**2
    sd = math.sqrt(d)
    return ((1.0 / p) * (M + sd / n) ** 2 + p * d + 2.0 * sd * M + 2.0 * d / n) / n


def psi_noise_scale(sensitivity: float, *, d: int, k: int, n_iter: int, epsilon: float, delta: float) -> float:
    """σ of Alg 6 (δ > 0, Gaussian std) or Alg 7 (δ = 0, Laplace scale); 0 for ε = ∞."""
    if math.isinf(epsilon):
        return 0.0
    if delta > 0:
        if epsilon > 8 * (1 - 1 / math.sqrt(2)) * math.log(1 / delta):
            raise ValueError(
                f"PSI-(eps,delta) noise sigma = rho*sqrt(4kL log(1/delta))/eps is only proven for "
                f"epsilon <= 2.34*log(1/delta) = {8 * (1 - 1 / math.sqrt(2)) * math.log(1 / delta):.4g}; "
                f"got epsilon = {epsilon}"
            )
        return sensitivity * math.sqrt(4.0 * k * n_iter * math.log(1.0 / delta)) / epsilon
    return 10.0 * sensitivity * math.sqrt(d) * k * n_iter / epsilon


def psi_step(sigma: float, *, sensitivity: float, k: int, n_iter: int) -> Step:
    """PSI-(ε,δ)'s noise as a step of the accountant: ``n_iter`` Gaussian multiplications, each of L2
    (Frobenius) sensitivity ρ√k (docs/science/private_pca.md), with noise std σ: noise multiplier σ/(ρ√k)."""
    return accountant_gaussian(sigma / (sensitivity * math.sqrt(k)), count=n_iter, name="pca")


def check_psi_noise_scale(sigma: float, *, d: int, epsilon: float, delta: float,
                          owner: str = "PrivateSubspaceIteration") -> None:
    """Refuse a PSI noise scale σ whose eigenvalue estimates cannot be computed, before anything is spent.

    The estimates are the column norms of W = A X + G (G of std or scale σ per entry), taken through their
    squares, which overflow beyond √(largest double) (:data:`~dpkit.core.validation.SQRT_FLOAT_MAX`); a column's
    norm is about σ√d, so σ√d must stay below it. σ scales as 1/ε, so this is a least ε for the data's n and d.

    Raises
    ------
    ValueError
        Naming ε, δ and the least supported ε, if σ√d reaches the limit.
    """
    if sigma * math.sqrt(d) >= SQRT_FLOAT_MAX:
        raise ValueError(budget_limit_message(
            owner, epsilon, delta, what=f"the PCA's noise scale {sigma:.3g} times sqrt(d) reaches",
            limit=f"sqrt of the largest double = {SQRT_FLOAT_MAX:.4g}",
            why="the squared norms of its noisy columns (the eigenvalue estimates) overflow",
            least=epsilon * sigma * math.sqrt(d) / SQRT_FLOAT_MAX))


def subspace_iteration_step(
    A: np.ndarray, Xcur: np.ndarray, noise_scale: float, *, noise: str, rng: np.random.Generator
) -> np.ndarray:
    """One noisy multiplication W = A X + G, G of shape d×k (Gaussian std or Laplace scale)."""
    W = A @ Xcur
    if noise_scale > 0:
        if noise == "gaussian":
            W = W + rng.normal(0.0, noise_scale, size=W.shape)
        else:
            W = W + rng.laplace(0.0, noise_scale, size=W.shape)
    return W


def _gs(W: np.ndarray) -> np.ndarray:
    """Gram–Schmidt orthonormalisation (reduced QR; signs fixed so diag(R) ≥ 0)."""
    Q, Rm = np.linalg.qr(W)
    s = np.sign(np.diag(Rm))
    s[s == 0] = 1.0
    return Q * s


class PrivateSubspaceIteration(TransformerMixin, BaseEstimator):
    """Private PCA by noisy subspace iteration: PSI-ε (Alg 7) or PSI-(ε,δ) (Alg 6).

    Parameters
    ----------
    n_components : int
        k, the output dimension (1 ≤ k ≤ d).
    n_iter : int
        L, the number of iterations.
    epsilon : float
        Privacy budget of the PCA step (> 0; ``math.inf`` = no noise, a reference run).
    delta : float
        0 ⇒ PSI-ε with Laplace noise; > 0 ⇒ PSI-(ε,δ) with Gaussian noise.
    sensitivity : {"bound", "thesis"}
        ``"bound"`` (default): ρ = c(n, d, √d), data-independent. ``"thesis"``: ρ = c(n, d, ‖mean‖)
        with the printed noisy-mean norm (not a valid sensitivity; warns PrivacyLeakWarning).
    mean : array of shape (d,), optional
        The ε'-DP mean estimate μ̃ (used by ``sensitivity="thesis"`` and by :meth:`transform`); in the
        rescaled coordinates when ``bounds`` is given.
    bounds : (lower, upper), optional
        Public bounds of the data (each a scalar or one value per feature). X is rescaled from them to
        [-1, 1]^d with clipping (:class:`~dpkit.data.errors.ClippingWarning` gives the clipped fraction).
        ``None`` (default): X must already lie in [-1, 1]^d.
    noise_scale : float, optional
        PSI-(ε,δ) only: the Gaussian σ per entry of G set by a caller that accounts the PCA inside a larger
        composition (:func:`psi_step`, :mod:`dpkit.core.accountant`) instead of Alg 6's σ. That caller spends the
        composition's budget: :meth:`fit` then spends nothing and refuses a ``ledger``.

    Attributes
    ----------
    components_ : ndarray (k, d)
        Rows are the private principal directions (X⁽ᴸ⁾ transposed, like sklearn).
    explained_variance_ : ndarray (k,)
        λ̂_s = ‖w_s⁽ᴸ⁾‖₂.
    noise_scale_ : float
        σ (Gaussian std or Laplace scale) per entry of G.
    sensitivity_ : float
        ρ used.
    noise_ : str
        "gaussian" or "laplace".
    n_features_in_, n_samples_ : int
    ledger_ : dict
        The ledger record after the spend.
    """

    def __init__(
        self,
        n_components: int = 2,
        n_iter: int = 10,
        epsilon: float = 1.0,
        delta: float = 0.0,
        sensitivity: str = "bound",
        mean: Any = None,
        bounds: Any = None,
        noise_scale: float | None = None,
    ) -> None:
        self.n_components = n_components
        self.n_iter = n_iter
        self.epsilon = epsilon
        self.delta = delta
        self.sensitivity = sensitivity
        self.mean = mean
        self.bounds = bounds
        self.noise_scale = noise_scale

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]  # computes in float64 whatever the input
        return tags

    def _validated(self, X: Any, *, reset: bool) -> np.ndarray:
        """X as a dense 2-D float64 array (scikit-learn's checks and messages), in [-1, 1]^d.

        Without ``bounds`` X must already lie in the domain; with them it is rescaled and clipped.
        """
        try:
            from sklearn.utils.validation import validate_data
        except ImportError:  # scikit-learn < 1.6
            X = self._validate_data(X, reset=reset, dtype=np.float64, force_all_finite=False)
        else:
            X = validate_data(self, X, reset=reset, dtype=np.float64, ensure_all_finite=False)
        X = check_finite_array(X, name="X", ndim=2)  # dpkit's message: how many entries are not finite
        if self.bounds is None:
            return check_in_unit_cube(X, name="X") if reset else X
        lower, upper = _check_bounds(self.bounds, X.shape[1])
        Z, clipped = rescale(X, lower, upper)
        if clipped:
            warnings.warn(f"{clipped} of {X.size} values of X ({clipped / X.size:.2%}) lay outside bounds and were "
                          "clipped", ClippingWarning, stacklevel=3)
        return Z

    def fit(self, X: Any, y: Any = None, *, rng: RNGLike = None, ledger: Ledger | None = None) -> "PrivateSubspaceIteration":
        """Run the private subspace iteration on ``X`` ⊂ [-1, 1]^d; spend (ε, δ) as ``"pca"``.

        An ε so small that the noise's column norms overflow is refused before the spend
        (:func:`check_psi_noise_scale`, a ValueError naming ε).
        """
        X = self._validated(X, reset=True)
        n, d = X.shape
        k = check_positive_int(self.n_components, name="n_components")
        if k > d:
            raise ValueError(f"n_components must be in [1, d] = [1, {d}] (n_features = {d}); got {k}")
        L = check_positive_int(self.n_iter, name="n_iter")
        eps = check_epsilon(self.epsilon, allow_inf=True)
        delta = check_delta(self.delta)
        mode = check_choice(self.sensitivity, name="sensitivity", choices=("bound", "thesis"))
        mean = None
        if self.mean is not None:
            mean = check_finite_array(self.mean, name="mean", ndim=1)
            if mean.shape[0] != d:
                raise ValueError(f"mean must have d = {d} entries; got {mean.shape[0]}")
        if mode == "bound":
            rho = covariance_sensitivity(n, d)
        else:
            M = float(np.linalg.norm(mean if mean is not None else X.mean(axis=0)))
            warnings.warn(
                "sensitivity='thesis' uses the (noisy) mean norm in Lemma 2.7's bound (2.10); a noisy mean "
                "does not bound the private ||mean||, so the PCA noise is not a valid DP calibration",
                PrivacyLeakWarning,
                stacklevel=2,
            )
            rho = covariance_sensitivity(n, d, M)
        noise = "gaussian" if delta > 0 else "laplace"
        if self.noise_scale is None:
            sigma = psi_noise_scale(rho, d=d, k=k, n_iter=L, epsilon=eps, delta=delta)
        else:
            if delta == 0 or math.isinf(eps) or ledger is not None:
                raise ValueError("noise_scale is for PSI-(eps,delta) accounted by its caller: it needs 0 < delta, a "
                                 "finite epsilon and ledger=None (the caller spends the composition); got "
                                 f"delta={delta:g}, epsilon={eps:g}, ledger={'given' if ledger is not None else None}")
            sigma = check_positive_finite(self.noise_scale, name="noise_scale")
        check_psi_noise_scale(sigma, d=d, epsilon=eps, delta=delta)
        if ledger is not None:
            ledger.spend(
                "pca",
                eps,
                delta,
                mechanism="PSI-(eps,delta) (Alg 6)" if delta > 0 else "PSI-eps (Alg 7)",
                neighbouring="replace-one",
                noise=noise,
                noise_scale=sigma,
                sensitivity=rho,
                sensitivity_mode=mode,
                n_components=k,
                n_iter=L,
            )
        gen = resolve_rng(rng)
        # Single-threaded BLAS: these GEMMs are small, and threaded BLAS is far slower on them under load
        # (docs/performance_notes.md).
        with limit_threads(1):
            A = covariance(X)
            Xcur = _gs(gen.standard_normal((d, k)))
            W = Xcur
            for _ in range(L):
                W = subspace_iteration_step(A, Xcur, sigma, noise=noise, rng=gen)
                Xcur = _gs(W)
        self.components_ = Xcur.T.copy()
        self.explained_variance_ = np.linalg.norm(W, axis=0)
        if not np.all(np.isfinite(self.explained_variance_)):  # a draw far in the noise's tail (after the spend)
            raise ValueError(budget_limit_message(
                "PrivateSubspaceIteration", eps, delta,
                what=f"a noisy column's norm (noise scale {sigma:.3g}) reaches",
                limit=f"sqrt of the largest double = {SQRT_FLOAT_MAX:.4g}", why="its square overflows"))
        self.noise_scale_ = float(sigma)
        self.sensitivity_ = float(rho)
        self.noise_ = noise
        self.n_features_in_ = d
        self.n_samples_ = n
        self.mean_ = mean
        self.privacy_ = (eps, delta)
        self.ledger_ = ledger.to_dict() if ledger is not None else None
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Project onto ``components_`` (centred by the supplied private ``mean`` if any; rescaled
        and clipped by ``bounds`` if given)."""
        if not hasattr(self, "components_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("PrivateSubspaceIteration is not fitted yet; call fit first")
        X = self._validated(X, reset=False)
        Xc = X - self.mean_ if self.mean_ is not None else X
        return Xc @ self.components_.T


def _check_bounds(bounds: Any, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` as two length-``d`` arrays with ``upper > lower`` (scalars broadcast)."""
    try:
        lower, upper = bounds
        lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (d,))
        hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (d,))
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be (lower, upper), each a number or {d} numbers (one per feature); "
                         f"got {bounds!r}") from None
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
        raise ValueError(f"bounds must be finite with upper > lower for every feature; got {bounds!r}")
    return lo, hi
