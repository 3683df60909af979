"""The trigonometric mechanisms of thesis Chapter 2.

* :class:`TrigonometricMechanism` — Alg 4 (mechanism I, ε-DP, ``delta == 0``) and Alg 5
  (mechanism II, (ε,δ)-DP, ``delta > 0``) on the full grid A^d with the full basis T_t^d.
* :class:`ImprovedTrigonometricMechanism` — Alg 9 (I) and Alg 10 (II): R basis functions,
  a private mean, private PCA, C candidate points from an ellipsoid, and the LP over them.

Moment noise (Alg 4 step 4, Alg 9 step 3 — **[erratum]** on the constants)
---------------------------------------------------------------------------------
Every basis function satisfies |φ_r| ≤ 1 on [-1, 1]^d, so under replace-one each moment
b_r = (1/n) Σ φ_r(x) moves by at most 2/n; the constant moment b_0 ≡ 1 does not move and gets
no noise. For the R − 1 non-constant moments:

* L1 sensitivity 2(R − 1)/n ⇒ the ε_m-DP Laplace release uses scale 2(R − 1)/(n ε_m)
  (``constants="correct"``, mechanism I). The printed scales t^d/(nε) (Alg 4) and 3R/(nε)
  (Alg 9, ε_m = ε/3) both equal R/(n ε_m): about half the correct one.
* Mechanism II, ``constants="correct"``: the moments must be (ε_m, δ_m)-DP with ε_m = ε/3,
  δ_m = δ/2 (Alg 10; ε_m = ε, δ_m = δ for Alg 5). We use the **Gaussian mechanism** on the L2
  sensitivity Δ₂ = 2√(R − 1)/n, calibrated exactly by the analytic Gaussian mechanism (Balle &
  Wang 2018, Thm 8) — a single (ε_m, δ_m) statement, no composition theorem needed. It is
  tighter than Laplace II with the correct per-coordinate sensitivity 2/n (scale
  2√(2(R−1) log(1/δ_m))/(n ε_m) via Thm 1.11, whose proof has the Prop 1.12 erratum). When
  pure Laplace noise with scale 2(R−1)/(n ε_m) has a *smaller* standard deviation (only for
  very few moments), that ε_m-DP release is used instead (it is also (ε_m, δ_m)-DP); the choice
  depends on public quantities only and is recorded in ``params["moment_noise"]``.
* ``constants="thesis"`` reproduces the printed scales exactly: Lap(t^d/(nε)) (Alg 4),
  Lap(√(2 t^d log(1/δ))/(nε)) (Alg 5), Lap(3R/(nε)) (Alg 9), Lap(3√(2R log(1/δ))/(nε)) (Alg 10).
  The ε-DP ones (Alg 4, Alg 9) are **under-noised** by a factor ≈ 2 for every R (the tests and
  the audit show it). The (ε,δ) ones (Alg 5, Alg 10) use the per-coordinate sensitivity 1/n where
  2/n is right, but their √(2R log(1/δ)) factor exceeds 2(R − 1) for small R (e.g. R = 6,
  δ = 10⁻³), so for few moments the printed Alg 10 scale is in fact *over*-noised and exactly
  private (notebook 58 shows it); for the thesis's R = 50 it is under-noised.

Mean (Alg 9 step 4): Lap(6d/(nε)) per coordinate = L1 sensitivity 2d/n at ε/3 — correct as
printed. PCA: :class:`dpkit.mechanisms.pca.PrivateSubspaceIteration` with (ε/3, 0) (Alg 9) or (ε/3, δ/2)
(Alg 10; **[erratum]** the printed line calls PSIeps). Total: ε/3 × 3 and δ/2 + δ/2 by basic
composition (Thm 2.13), each step recorded in the ledger before its noise is drawn.

Feasibility (full grid)
-----------------------
:class:`TrigonometricMechanism` builds the dense W of size t^d × N^d. It refuses, with a
:class:`~dpkit.core.exceptions.FeasibilityError` naming N^d and t^d, when N^d > :data:`MAX_GRID_POINTS`,
t^d > :data:`MAX_BASIS_SIZE` or t^d · N^d > :data:`MAX_W_ENTRIES`. Grids beyond
:data:`dpkit.mechanisms.trig.lp.CG_THRESHOLD` points are solved by exact column generation (d = 3,
n = 2·10⁴, K = 4: N^d ≈ 1.5·10⁵ grid points in ≈ 2 s).

Performance (improved mechanisms, C = 10⁴, R = 50, k = 2, L = 10, ε = 1, δ ∈ {0, 10⁻³},
K = σ² ∈ {4, 100}; 2-core machine at load ≈ 5): median 0.01–0.31 s per run on CRM, CSN, CTG,
PKS, WDBC (PAM not available locally; a synthetic 19870 × 28 stand-in: ≈ 0.2 s). The LP is the
bottleneck at large K (up to ≈ 0.3 s, ≈ 10⁴ distinct candidates); moments take ≤ 0.03 s at
n = 10⁵. BLAS is pinned to one thread inside ``fit`` (:data:`BLAS_THREADS`): threaded BLAS under
load turned the 101 × 101 covariance into a 0.2–0.4 s step.

For R = 50, n = 10³, ε = 1, δ = 10⁻³ the correct mechanism-II moment noise (Gaussian,
σ ≈ 99/n) has a *smaller* standard deviation than the printed Laplace II
(√2 · 79/n ≈ 111/n) — the printed variant is both less private and less accurate.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits  # a scikit-learn dependency

from dpkit.core.accounting import Ledger, ledger_for
from dpkit.mechanisms.ellipsoid import sample_ellipsoid
from dpkit.core.exceptions import FeasibilityError
from dpkit.mechanisms.base import Mechanism
from dpkit.mechanisms.laplace import Laplace
from dpkit.mechanisms.pca import PrivateSubspaceIteration, psi_noise_scale
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_in_unit_cube,
    check_int_in_range,
    check_positive_int,
    check_real_in_range,
)
from dpkit.mechanisms.trig._noise import analytic_gaussian_sigma, gaussian_noise, laplace_noise
from dpkit.mechanisms.trig.basis import basis_indices, basis_moments, evaluate_basis
from dpkit.mechanisms.trig.grid import discretise, discretise_indices, grid_points, lattice_round
from dpkit.mechanisms.trig.lp import LP_METHODS, solve_l1_lp
from dpkit.mechanisms.trig.schedules import Schedule, schedule
from dpkit.queries.synthetic import WeightedDatabase

__all__ = [
    "MomentNoise",
    "moment_noise",
    "release_moments",
    "TrigResult",
    "TrigonometricMechanism",
    "ImprovedTrigonometricMechanism",
    "MAX_GRID_POINTS",
    "MAX_BASIS_SIZE",
    "MAX_W_ENTRIES",
]

#: Documented feasible sizes of the full-grid mechanism (Alg 4/5).
MAX_GRID_POINTS = 250_000
MAX_BASIS_SIZE = 5_000
MAX_W_ENTRIES = 20_000_000

#: BLAS threads inside ``fit``: every matrix product here is small (≤ 10⁴ × 101), and on the
#: shared 2-core machine threaded BLAS was up to 50× slower than one thread under load.
BLAS_THREADS = 1

CONSTANTS = ("correct", "thesis")
OUTPUTS = ("sample", "weights")


# ----------------------------------------------------------------------------- moment noise
@dataclass(frozen=True)
class MomentNoise:
    """How the non-constant moments are noised.

    kind : "laplace" or "gaussian"; scale : Laplace scale b or Gaussian σ;
    l1_sensitivity, l2_sensitivity : the true sensitivities 2(R−1)/n and 2√(R−1)/n;
    epsilon, delta : the guarantee claimed for this step; rule : a human-readable formula.
    """

    kind: str
    scale: float
    l1_sensitivity: float
    l2_sensitivity: float
    epsilon: float
    delta: float
    constants: str
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def moment_noise(
    n: int,
    R: int,
    *,
    epsilon: float,
    delta: float = 0.0,
    constants: str = "correct",
    thesis_delta: float | None = None,
) -> MomentNoise:
    """Noise for releasing R moments (constant included) at (ε_m, δ_m) = (``epsilon``, ``delta``).

    ``thesis_delta`` is the δ that the printed formula puts inside log(1/δ) (the mechanism's
    total δ; Alg 10 prints 3√(2R log(1/δ))/(nε) with the total δ). See the module docstring.
    """
    n = check_positive_int(n, name="n")
    R = check_positive_int(R, name="R")
    eps = check_epsilon(epsilon, allow_inf=True)
    delta = check_delta(delta)
    constants = check_choice(constants, name="constants", choices=CONSTANTS)
    l1 = 2.0 * (R - 1) / n
    l2 = 2.0 * math.sqrt(R - 1) / n
    inf = math.isinf(eps)
    if constants == "thesis":
        if delta == 0:
            scale = 0.0 if inf else R / (n * eps)
            return MomentNoise("laplace", scale, l1, l2, eps, delta, constants, "Lap(R/(n eps_m)) [printed]")
        td = delta if thesis_delta is None else check_delta(thesis_delta, allow_zero=False, name="thesis_delta")
        scale = 0.0 if inf else math.sqrt(2.0 * R * math.log(1.0 / td)) / (n * eps)
        return MomentNoise(
            "laplace", scale, l1, l2, eps, delta, constants, "Lap(sqrt(2R log(1/delta))/(n eps_m)) [printed]"
        )
    lap = 0.0 if inf else l1 / eps
    if delta == 0 or R == 1:
        return MomentNoise("laplace", lap, l1, l2, eps, delta, constants, "Lap(2(R-1)/(n eps_m))")
    sig = analytic_gaussian_sigma(eps, delta, l2)
    if math.sqrt(2.0) * lap < sig:
        return MomentNoise("laplace", lap, l1, l2, eps, delta, constants, "Lap(2(R-1)/(n eps_m)) (smaller std)")
    return MomentNoise("gaussian", sig, l1, l2, eps, delta, constants, "N(0, s^2), analytic Gaussian on 2sqrt(R-1)/n")


def release_moments(
    b: np.ndarray, noise: MomentNoise, *, rng: np.random.Generator, size: int | None = None
) -> np.ndarray:
    """b̂ = b + noise on every coordinate but the constant one (index 0, which stays exactly b_0).

    ``size`` draws that many independent releases (shape (size, R)) — for audits.
    """
    b = np.asarray(b, dtype=float)
    shape = (b.shape[0] - 1,) if size is None else (int(size), b.shape[0] - 1)
    z = laplace_noise(rng, noise.scale, shape) if noise.kind == "laplace" else gaussian_noise(rng, noise.scale, shape)
    out = np.broadcast_to(b, (b.shape[0],) if size is None else (int(size), b.shape[0])).copy()
    out[..., 1:] += z
    return out


def _spend_moments(ledger: Ledger, noise: MomentNoise, R: int) -> None:
    ledger.spend(
        "moments",
        noise.epsilon,
        noise.delta,
        mechanism=f"{noise.kind} ({noise.rule})",
        neighbouring="replace-one",
        scale=noise.scale,
        l1_sensitivity=noise.l1_sensitivity,
        l2_sensitivity=noise.l2_sensitivity,
        n_moments=R,
        constants=noise.constants,
    )


# ----------------------------------------------------------------------------- result
@dataclass(frozen=True, eq=False)
class TrigResult:
    """Output of a trigonometric mechanism run.

    Attributes
    ----------
    synthetic : WeightedDatabase
        The synthetic database D̂: by default (``output="sample"``) the realised m samples as
        distinct points with multiplicities (weights = counts/m); with ``output="weights"`` the
        LP weights themselves.
    lp_database : WeightedDatabase
        The LP distribution u* over its support (≤ R + 1 points at a vertex).
    params : dict
        t, N, m, L, R, C, k, n_iter, kappa, K, epsilon, delta, constants, noise scales and
        sensitivities, sizes.
    ledger : dict
        :meth:`dpkit.core.accounting.Ledger.to_dict` after the run.
    lp : dict
        status, message, objective, support_size, n_vars, n_constraints, method, seconds.
    timings : dict
        Seconds per stage and "total".
    noisy_moments : ndarray (R,)
        The released b̂ (private output).
    true_moments : ndarray (R,)
        The exact moments b of the discretised data — **private**, diagnostics only; never
        publish them.
    basis : ndarray (R, d)
        The index vectors r (row order = moment order).
    noisy_mean, components, eigenvalues : released intermediate quantities (Alg 9/10 only).
    candidates : ndarray (C', d)
        The distinct discretised candidate points (the LP's columns).
    """

    synthetic: WeightedDatabase
    lp_database: WeightedDatabase
    params: dict
    ledger: dict
    lp: dict
    timings: dict
    noisy_moments: np.ndarray
    true_moments: np.ndarray
    basis: np.ndarray
    candidates: np.ndarray
    noisy_mean: np.ndarray | None = None
    components: np.ndarray | None = None
    eigenvalues: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record of the run (no private quantities): params, ledger, LP, timings, sizes."""
        return {
            "params": self.params,
            "ledger": self.ledger,
            "lp": self.lp,
            "timings": self.timings,
            "synthetic": self.synthetic.to_dict(),
            "noisy_moments": self.noisy_moments.tolist(),
        }


def _validate_common(m: Any) -> None:
    """Validate (and normalise) the fields both mechanisms share: ε, δ, K, constants, output, LP, lattice."""
    object.__setattr__(m, "epsilon", check_epsilon(m.epsilon, allow_inf=True))
    object.__setattr__(m, "delta", check_delta(m.delta))
    object.__setattr__(m, "K", check_real_in_range(m.K, name="K", low=0.0, low_inclusive=False))
    if math.isinf(m.K):
        raise ValueError("K must be finite")
    check_choice(m.constants, name="constants", choices=CONSTANTS)
    check_choice(m.output, name="output", choices=OUTPUTS)
    check_choice(m.lp_method, name="lp_method", choices=LP_METHODS)
    if not isinstance(m.lattice, bool):
        raise TypeError("lattice must be a bool")


def _unique_rows(cells: np.ndarray) -> np.ndarray:
    """Distinct rows of an int array, in order of first occurrence (a byte-view hash; ~10× faster
    than ``np.unique(axis=0)`` at C = 10⁴, d = 101)."""
    c = np.ascontiguousarray(cells.astype(np.int32 if cells.max(initial=0) < 2**31 else np.int64))
    v = c.view(np.dtype((np.void, c.dtype.itemsize * c.shape[1]))).ravel()
    _, first = np.unique(v, return_index=True)
    return cells[np.sort(first)]


def _finish(
    *,
    points: np.ndarray,
    W: np.ndarray,
    b_hat: np.ndarray,
    m: int,
    output: str,
    lp_method: str,
    gen_sample: np.random.Generator,
    timings: dict,
) -> tuple[WeightedDatabase, WeightedDatabase, dict]:
    t0 = time.perf_counter()
    sol = solve_l1_lp(W, b_hat, method=lp_method)
    timings["lp"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    keep = sol.u > 0
    lp_db = WeightedDatabase(points=points[keep], weights=sol.u[keep], m=m)
    synth = lp_db.realise(gen_sample) if output == "sample" else lp_db
    timings["sample"] = time.perf_counter() - t0
    return synth, lp_db, sol.to_dict()


@dataclass(frozen=True, kw_only=True)
class _TrigBase(Mechanism):
    """Shared entry point: :meth:`fit` runs the subclass's ``_fit`` with single-threaded BLAS."""

    def fit(self, X: Any, *, rng: RNGLike = None, ledger: Ledger | None = None) -> TrigResult:
        """Run the mechanism on ``X`` ⊂ [-1, 1]^d (n rows) and return a :class:`TrigResult`.

        Parameters
        ----------
        X : array (n, d)
            The private data in [-1, 1]^d (finite).
        rng : int, Generator, SeedSequence or None
            Seed; the same seed gives bit-identical output.
        ledger : Ledger, optional
            Charged with every step (refused up front if the total does not fit); a fresh
            ledger with exactly (ε, δ) when omitted.

        Notes
        -----
        BLAS runs single-threaded inside (see :data:`BLAS_THREADS`).
        """
        with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
            return self._fit(X, rng=rng, ledger=ledger)

    def _fit(self, X: Any, *, rng: RNGLike, ledger: Ledger | None) -> TrigResult:  # pragma: no cover
        raise NotImplementedError


# ----------------------------------------------------------------------------- Alg 4 / 5
@dataclass(frozen=True, kw_only=True)
class TrigonometricMechanism(_TrigBase):
    """Trigonometric mechanism on the full grid: Alg 4 (``delta == 0``) / Alg 5 (``delta > 0``).

    Parameters
    ----------
    epsilon : float
        Total ε (> 0; ``math.inf`` for a noise-free reference run).
    delta : float
        0 ⇒ mechanism I (Thm 2.4 schedule); in (0, 1) ⇒ mechanism II (Thm 2.5 schedule).
    K : float
        Smoothness order (experiments use K = σ²).
    constants : {"correct", "thesis"}
        Noise calibration (module docstring).
    lattice : bool
        Round W to the value lattice {i/L} (Alg 4 step 5). Off by default (floating point).
    t, N : int, optional
        Override the schedule's basis degree bound / grid size (e.g. for error-vs-t studies).
    output : {"sample", "weights"}
        What ``result.synthetic`` is (see :class:`TrigResult`).
    lp_method : str
        HiGHS method (:data:`dpkit.mechanisms.trig.lp.LP_METHODS`).

    Raises
    ------
    FeasibilityError
        At :meth:`fit`, if N^d, t^d or t^d·N^d exceed the documented limits.
    """

    epsilon: float
    delta: float = 0.0
    K: float = 1.0
    constants: str = "correct"
    lattice: bool = False
    t: int | None = None
    N: int | None = None
    output: str = "sample"
    lp_method: str = "highs-ds"

    def __post_init__(self) -> None:
        super().__post_init__()
        _validate_common(self)
        if self.t is not None:
            check_positive_int(self.t, name="t")
        if self.N is not None:
            check_positive_int(self.N, name="N")

    def schedule(self, n: int, d: int) -> Schedule:
        """t, N, m, L for this run (Thm 2.4 / 2.5, with the t and N overrides)."""
        s = schedule(n, d, self.K, self.delta)
        return Schedule(t=self.t or s.t, N=self.N or s.N, m=s.m, L=s.L)

    def _fit(self, X: Any, *, rng: RNGLike, ledger: Ledger | None) -> TrigResult:
        """Alg 4/5 on ``X`` ⊂ [-1, 1]^d (called by :meth:`fit`)."""
        T0 = time.perf_counter()
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        sch = self.schedule(n, d)
        t, N, m, L = sch.t, sch.N, sch.m, sch.L
        grid_size, basis_size = N**d, t**d
        if grid_size > MAX_GRID_POINTS or basis_size > MAX_BASIS_SIZE or grid_size * basis_size > MAX_W_ENTRIES:
            raise FeasibilityError(
                f"full-grid trigonometric mechanism infeasible for n={n}, d={d}, K={self.K}: grid N^d = {N}^{d} = "
                f"{grid_size} points, basis t^d = {t}^{d} = {basis_size} functions, W has {grid_size * basis_size} "
                f"entries (documented limits: N^d <= {MAX_GRID_POINTS}, t^d <= {MAX_BASIS_SIZE}, "
                f"t^d*N^d <= {MAX_W_ENTRIES}); use ImprovedTrigonometricMechanism"
            )
        led = ledger_for(ledger, self.epsilon, self.delta, "TrigonometricMechanism")
        g_noise, g_sample = spawn(rng, 2)
        # same stage keys as Alg 9/10; Alg 4/5 have no mean or PCA step (0 s), "candidates" = the grid
        timings: dict[str, float] = {"mean": 0.0, "pca": 0.0}

        t0 = time.perf_counter()
        Xd = discretise(X, N)
        timings["discretise"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        idx = basis_indices(t, d)
        b = basis_moments(Xd, idx)
        noise = moment_noise(
            n, idx.shape[0], epsilon=self.epsilon, delta=self.delta, constants=self.constants, thesis_delta=self.delta or None
        )
        _spend_moments(led, noise, idx.shape[0])
        b_hat = release_moments(b, noise, rng=g_noise)
        timings["moments"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        a = grid_points(N)
        mesh = np.meshgrid(*([a] * d), indexing="ij")
        points = np.stack([g.ravel() for g in mesh], axis=1)
        W = evaluate_basis(points, idx).T
        if self.lattice:
            W = lattice_round(W, L)
        timings["candidates"] = time.perf_counter() - t0

        synth, lp_db, lp = _finish(
            points=points, W=np.ascontiguousarray(W), b_hat=b_hat, m=m, output=self.output,
            lp_method=self.lp_method, gen_sample=g_sample, timings=timings,
        )
        timings["total"] = time.perf_counter() - T0
        params = {
            "algorithm": "Alg 5 (II)" if self.delta > 0 else "Alg 4 (I)",
            "n": n, "d": d, "t": t, "N": N, "m": m, "L": L, "R": int(idx.shape[0]),
            "grid_size": grid_size, "K": self.K, "epsilon": self.epsilon, "delta": self.delta,
            "constants": self.constants, "lattice": self.lattice, "output": self.output,
            "noise_scales": {"moments": noise.scale},
            "moment_noise": noise.to_dict(),
            "sensitivities": {"moments_l1": noise.l1_sensitivity, "moments_l2": noise.l2_sensitivity},
            "neighbouring": self.neighbouring,
        }
        return TrigResult(
            synthetic=synth, lp_database=lp_db, params=params, ledger=led.to_dict(), lp=lp, timings=timings,
            noisy_moments=b_hat, true_moments=b, basis=idx, candidates=points,
        )


# ----------------------------------------------------------------------------- Alg 9 / 10
@dataclass(frozen=True, kw_only=True)
class ImprovedTrigonometricMechanism(_TrigBase):
    """Improved trigonometric mechanism: Alg 9 (I, ε-DP, ``delta == 0``) / Alg 10 (II, (ε,δ)-DP).

    Parameters
    ----------
    epsilon : float
        Total ε, split ε/3 (moments) + ε/3 (mean) + ε/3 (PCA). ``math.inf`` = noise-free reference.
    delta : float
        0 ⇒ mechanism I; in (0, 1) ⇒ mechanism II with δ/2 to the moments and δ/2 to the PCA.
    K : float
        Smoothness order (schedules of Thm 2.4/2.5; experiments use K = σ²).
    C : int
        Number of candidate points drawn from the ellipsoid (≥ 1).
    R : int
        Number of basis functions T_R (≤ t^d; the constant one included).
    k : int
        PCA output dimension (≤ d).
    n_iter : int
        PSI iterations L.
    kappa : float
        Ellipsoid scale κ: semi-axes κ√λ̂.
    constants : {"correct", "thesis"}
        Moment-noise calibration (module docstring).
    sampler : {"uniform", "thesis"}
        Ellipsoid sampler (:func:`dpkit.mechanisms.ellipsoid.sample_ellipsoid`).
    pca_sensitivity : {"bound", "thesis"}
        Covariance sensitivity (:class:`dpkit.mechanisms.pca.PrivateSubspaceIteration`).
    lattice : bool
        Round W to the lattice {i/L}.
    output : {"sample", "weights"}
        What ``result.synthetic`` is (see :class:`TrigResult`).
    lp_method : str
        HiGHS method.
    """

    epsilon: float
    delta: float = 0.0
    K: float = 4.0
    C: int = 10_000
    R: int = 50
    k: int = 2
    n_iter: int = 10
    kappa: float = 7.0
    constants: str = "correct"
    sampler: str = "uniform"
    pca_sensitivity: str = "bound"
    lattice: bool = False
    output: str = "sample"
    lp_method: str = "highs-ds"

    def __post_init__(self) -> None:
        super().__post_init__()
        _validate_common(self)
        check_int_in_range(self.C, name="C", low=1)
        check_int_in_range(self.R, name="R", low=1)
        check_int_in_range(self.k, name="k", low=1)
        check_int_in_range(self.n_iter, name="n_iter", low=1)
        object.__setattr__(
            self, "kappa", check_real_in_range(self.kappa, name="kappa", low=0.0, low_inclusive=False)
        )
        if math.isinf(self.kappa):
            raise ValueError("kappa must be finite")
        check_choice(self.sampler, name="sampler", choices=("uniform", "thesis"))
        check_choice(self.pca_sensitivity, name="pca_sensitivity", choices=("bound", "thesis"))

    def schedule(self, n: int, d: int) -> Schedule:
        """t, N, m, L of Thm 2.4 (δ = 0) or Thm 2.5 (δ > 0)."""
        return schedule(n, d, self.K, self.delta)

    def _fit(self, X: Any, *, rng: RNGLike, ledger: Ledger | None) -> TrigResult:
        """Alg 9/10 on ``X`` ⊂ [-1, 1]^d (called by :meth:`fit`).

        ``rng`` seeds five independent child streams (moments, mean, PCA, candidates, sample),
        so the same seed gives bit-identical output.
        """
        T0 = time.perf_counter()
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        if self.k > d:
            raise ValueError(f"k must be in [1, d] = [1, {d}]; got k = {self.k}")
        sch = self.schedule(n, d)
        t, N, m, L = sch.t, sch.N, sch.m, sch.L
        if self.R > t**d:
            raise ValueError(
                f"R must be in [1, t^d] = [1, {t}^{d} = {t**d}] for n={n}, d={d}, K={self.K} (t from Thm "
                f"{'2.5' if self.delta > 0 else '2.4'}); got R = {self.R}"
            )
        eps3 = self.epsilon / 3.0
        d_m = self.delta / 2.0
        # fail before anything is spent if PSI-(ε,δ)'s printed σ is outside its proven range
        psi_noise_scale(1.0, d=d, k=self.k, n_iter=self.n_iter, epsilon=eps3, delta=d_m)
        led = ledger_for(ledger, self.epsilon, self.delta, "ImprovedTrigonometricMechanism")
        g_mom, g_mean, g_pca, g_cand, g_sample = spawn(rng, 5)
        timings: dict[str, float] = {}

        # 1. discretise
        t0 = time.perf_counter()
        Xd = discretise(X, N)
        timings["discretise"] = time.perf_counter() - t0

        # 2-3. basis T_R and noisy moments (ε/3, δ/2)
        t0 = time.perf_counter()
        idx = basis_indices(t, d, self.R)
        b = basis_moments(Xd, idx)
        noise = moment_noise(
            n, self.R, epsilon=eps3, delta=d_m, constants=self.constants, thesis_delta=self.delta or None
        )
        _spend_moments(led, noise, self.R)
        b_hat = release_moments(b, noise, rng=g_mom)
        timings["moments"] = time.perf_counter() - t0

        # 4. noisy mean, Lap(6d/(nε)) = L1 sensitivity 2d/n at ε/3
        t0 = time.perf_counter()
        mean_mech = Laplace(epsilon=eps3, sensitivity=2.0 * d / n, neighbouring="replace-one")
        mu = np.asarray(mean_mech.release(X.mean(axis=0), rng=g_mean, ledger=led, name="mean"), dtype=float)
        timings["mean"] = time.perf_counter() - t0

        # 5. private PCA (ε/3[, δ/2])
        t0 = time.perf_counter()
        psi = PrivateSubspaceIteration(
            n_components=self.k, n_iter=self.n_iter, epsilon=eps3, delta=d_m, sensitivity=self.pca_sensitivity, mean=mu
        ).fit(X, rng=g_pca, ledger=led)
        timings["pca"] = time.perf_counter() - t0

        # 6. candidates: ellipsoid in the PCA subspace around μ̃, clipped and discretised
        t0 = time.perf_counter()
        axes = self.kappa * np.sqrt(psi.explained_variance_)
        Z = sample_ellipsoid(self.C, axes, rng=g_cand, method=self.sampler)
        G = np.clip(mu + Z @ psi.components_, -1.0, 1.0)
        cells = _unique_rows(discretise_indices(G, N))
        points = (2.0 * cells + 1.0 - N) / N
        W = np.ascontiguousarray(evaluate_basis(points, idx).T)
        if self.lattice:
            W = lattice_round(W, L)
        timings["candidates"] = time.perf_counter() - t0

        # 7-8. LP and sampling
        synth, lp_db, lp = _finish(
            points=points, W=W, b_hat=b_hat, m=m, output=self.output, lp_method=self.lp_method,
            gen_sample=g_sample, timings=timings,
        )
        timings["total"] = time.perf_counter() - T0
        params = {
            "algorithm": "Alg 10 (II)" if self.delta > 0 else "Alg 9 (I)",
            "n": n, "d": d, "t": t, "N": N, "m": m, "L": L, "R": self.R, "C": self.C,
            "n_candidates_distinct": int(points.shape[0]), "k": self.k, "n_iter": self.n_iter,
            "kappa": self.kappa, "K": self.K, "epsilon": self.epsilon, "delta": self.delta,
            "constants": self.constants, "sampler": self.sampler, "pca_sensitivity": self.pca_sensitivity,
            "lattice": self.lattice, "output": self.output,
            "budget_split": {
                "moments": (eps3, d_m), "mean": (eps3, 0.0), "pca": (eps3, d_m),
            },
            "noise_scales": {
                "moments": noise.scale, "moments_kind": noise.kind,
                "mean": mean_mech.scale, "pca": psi.noise_scale_, "pca_kind": psi.noise_,
            },
            "moment_noise": noise.to_dict(),
            "sensitivities": {
                "moments_l1": noise.l1_sensitivity, "moments_l2": noise.l2_sensitivity,
                "mean_l1": 2.0 * d / n, "pca_spectral": psi.sensitivity_,
            },
            "neighbouring": self.neighbouring,
        }
        return TrigResult(
            synthetic=synth, lp_database=lp_db, params=params, ledger=led.to_dict(), lp=lp, timings=timings,
            noisy_moments=b_hat, true_moments=b, basis=idx, candidates=points,
            noisy_mean=mu, components=psi.components_, eigenvalues=psi.explained_variance_,
        )
