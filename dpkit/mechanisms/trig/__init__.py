"""The trigonometric mechanism family of thesis Chapter 2 (Algorithms 4, 5, 9, 10).

* :class:`TrigonometricMechanism` — Alg 4 (mechanism I, ε-DP, ``delta == 0``) and Alg 5
  (mechanism II, (ε,δ)-DP, ``delta > 0``) on the full grid A^d with the full basis T_t^d.
* :class:`ImprovedTrigonometricMechanism` — Alg 9 (I) and Alg 10 (II): R basis functions,
  a private mean, private PCA, C candidate points from an ellipsoid, and the LP over them.

Both are methods of the one protocol (:mod:`dpkit.queries.release`): ``release(X, rng=, ledger=)``
returns a :class:`~dpkit.queries.release.Release` whose ``diagnostics`` is a
:class:`TrigDiagnostics`; ``at_width(σ)`` sets the smoothness K = σ² of the thesis's experiments.
Both calibrations assume replace-one neighbours with public n; ``neighbouring="add-remove"`` is
refused (it would reveal n exactly).

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
:class:`~dpkit.core.exceptions.FeasibilityError` naming N^d and t^d, when
N^d > :data:`~dpkit.mechanisms.trig.base.MAX_GRID_POINTS`, t^d > :data:`~dpkit.mechanisms.trig.base.MAX_BASIS_SIZE`
or t^d · N^d > :data:`~dpkit.mechanisms.trig.base.MAX_W_ENTRIES`. Grids beyond
:data:`dpkit.mechanisms.trig.lp.CG_THRESHOLD` points are solved by exact column generation.

Performance: the LP is the bottleneck at large K; BLAS is pinned to one thread inside ``fit``
(:data:`~dpkit.mechanisms.trig.base.BLAS_THREADS`), since threaded BLAS is far slower on these small products under load. Timings:
docs/performance_notes.md.

For R = 50, n = 10³, ε = 1, δ = 10⁻³ the correct mechanism-II moment noise (Gaussian,
σ ≈ 99/n) has a *smaller* standard deviation than the printed Laplace II
(√2 · 79/n ≈ 111/n) — the printed variant is both less private and less accurate.

Public API::

    from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism, TrigonometricMechanism, TrigDiagnostics
    rel = ImprovedTrigonometricMechanism(epsilon=1.0, delta=0.0, K=4.0).release(X, rng=0)
    rel.synthetic, rel.ledger, rel.diagnostics.lp
"""
from dpkit.mechanisms.trig.base import TrigDiagnostics
from dpkit.mechanisms.trig.basis import basis_indices, basis_moments, evaluate_basis, iter_basis_indices
from dpkit.mechanisms.trig.full_grid import TrigonometricMechanism
from dpkit.mechanisms.trig.grid import discretise, discretise_indices, grid_points, lattice_round
from dpkit.mechanisms.trig.improved import ImprovedTrigonometricMechanism
from dpkit.mechanisms.trig.lp import LPError, LPSolution, solve_l1_lp
from dpkit.mechanisms.trig.moments import MomentNoise, moment_noise, release_moments
from dpkit.mechanisms.trig.schedules import Schedule, schedule, schedule_I, schedule_II
from dpkit.queries.synthetic import WeightedDatabase

__all__ = [
    "ImprovedTrigonometricMechanism",
    "TrigonometricMechanism",
    "TrigDiagnostics",
    "WeightedDatabase",
    "MomentNoise",
    "moment_noise",
    "release_moments",
    "basis_indices",
    "iter_basis_indices",
    "evaluate_basis",
    "basis_moments",
    "grid_points",
    "discretise",
    "discretise_indices",
    "lattice_round",
    "solve_l1_lp",
    "LPError",
    "LPSolution",
    "Schedule",
    "schedule",
    "schedule_I",
    "schedule_II",
]
