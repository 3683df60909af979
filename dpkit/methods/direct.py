"""B1 — direct answering of the evaluation queries (baseline B1 of docs/science/baselines.md; thesis Prop 1.7, 1.12, Ex 1.3).

Not a synthetic database: the Q evaluation queries are answered with noise, the budget split across them, so its
error grows with Q (≈ Q/(εn) pure, ≈ √Q/(εn) approximate). Noise (per-query sensitivity Δ_q = range_q/n,
:mod:`dpkit.methods._kernels`):

1. ``"laplace_I"``: ε-DP, Lap(Σ_q Δ_q / ε) on every answer (Prop 1.7).
2. ``"laplace_II"``: (ε, δ)-DP, Lap(Δ_q/ε₀) per query with ε₀ from advanced composition
   (:func:`dpkit.core.composition.per_step_epsilon`, ``accounting="split"``) or from the exact PLD composition
   (``accounting="pld"``, default, :mod:`dpkit.core.accountant`). The printed Prop 1.12 scale is not used
   (docs/science/errata.md, *erratum-laplace-ii*).
3. ``"gaussian"``: (ε, δ)-DP, the analytic Gaussian mechanism on the L2 sensitivity
   (:class:`dpkit.mechanisms.gaussian.Gaussian`).

The whole vector is one ledger entry ``"answers"``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core import accountant
from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.threads import one_blas_thread
from dpkit.core.validation import check_budget_fields, check_choice, check_in_unit_cube
from dpkit.methods._kernels import kernel_query_ranges
from dpkit.queries.release import MethodBase, Release, Timer
from dpkit.queries.truth_cache import exact_truth
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["DirectAnswering", "NOISES", "laplace_II_query_epsilon"]

NOISES = ("laplace_I", "laplace_II", "gaussian")


def laplace_II_query_epsilon(epsilon: float, delta: float, queries: int, *, accounting: str = "pld") -> float:
    """Laplace II's per-query ε₀ for ``queries`` answers at a total (ε, δ): from advanced composition
    (``accounting="split"``, the published calibration) or that ε₀ divided by the accountant's factor ``t ≤ 1`` for
    the exact composition of the ``queries`` Laplace releases (``"pld"``, :func:`dpkit.core.accountant.calibrate`).
    A query of L1 sensitivity Δ gets Laplace noise of scale Δ/ε₀.

    Raises
    ------
    ValueError
        For an ``accounting`` other than ``"pld"`` or ``"split"``.
    """
    from dpkit.core.composition import per_step_epsilon

    accountant.check_accounting(accounting, allowed=("pld", "split"))
    eps0 = per_step_epsilon(epsilon, delta, queries, rule="advanced")[0]
    if accounting == "pld":
        eps0 = eps0 / accountant.plan_factor([accountant.laplace(1.0 / eps0, count=queries)], epsilon, delta)
    return eps0

@dataclass(frozen=True, kw_only=True)
class DirectAnswering(MethodBase):
    """Answer the workload directly with noise (B1).

    Parameters
    ----------
    epsilon : float
        Total ε (``math.inf``: exact answers, a reference).
    delta : float
        Total δ (must be > 0 for ``"laplace_II"`` and ``"gaussian"``; ignored by ``"laplace_I"``,
        which spends δ = 0).
    noise : {"laplace_I", "laplace_II", "gaussian"}
    sensitivity : {"range", "unit"}
        ``"range"`` (default): Δ_q = (sup f_q − inf f_q)/n bounded from the public query
        (module :mod:`dpkit.methods._kernels`); ``"unit"``: the generic Δ_q = 1/n.
    accounting : {"pld", "split"}
        ``"laplace_II"`` only (module docstring): the per-query ε₀ from the Q releases' exact composition (default)
        or from advanced composition (the published calibration). Recorded in the params and the ledger. The
        other noises release one vector at the whole budget, already exact.
    """

    epsilon: float
    delta: float = 0.0
    noise: str = "laplace_I"
    sensitivity: str = "range"
    accounting: str = "pld"

    def __post_init__(self) -> None:
        check_budget_fields(self, allow_inf=True)
        check_choice(self.noise, name="noise", choices=NOISES)
        check_choice(self.sensitivity, name="sensitivity", choices=("range", "unit"))
        accountant.check_accounting(self.accounting, allowed=("pld", "split"))
        if self.noise != "laplace_I" and self.delta == 0 and not math.isinf(self.epsilon):
            raise ValueError(f"delta must be in (0, 1) for noise={self.noise!r}; got 0")

    needs_workload = True

    @property
    def name(self) -> str:
        return f"direct-{self.noise}"

    def sensitivities(self, workload: GaussianKernelWorkload, n: int) -> np.ndarray:
        """Per-query replace-one sensitivities Δ_q (shape (Q,))."""
        Q = int(np.asarray(workload.alphas).shape[0])
        if self.sensitivity == "unit":
            return np.full(Q, 1.0 / n)
        return kernel_query_ranges(workload.centres, workload.alphas, workload.sigma) / n

    def noise_scales(self, workload: GaussianKernelWorkload, n: int) -> tuple[np.ndarray, str, float, float]:
        """(per-query scale, kind, ε spent, δ spent) — Laplace scale b_q or Gaussian std."""
        sens = self.sensitivities(workload, n)
        Q = sens.shape[0]
        if math.isinf(self.epsilon):
            return np.zeros(Q), "none", self.epsilon, 0.0
        if self.noise == "laplace_I":
            return np.full(Q, sens.sum() / self.epsilon), "laplace", self.epsilon, 0.0
        if self.noise == "laplace_II":
            eps0 = laplace_II_query_epsilon(self.epsilon, self.delta, Q, accounting=self.accounting)
            return sens / eps0, "laplace", self.epsilon, self.delta
        from dpkit.mechanisms.gaussian import Gaussian

        g = Gaussian(epsilon=self.epsilon, delta=self.delta, sensitivity=float(np.linalg.norm(sens)))
        return np.full(Q, g.sigma), "gaussian", self.epsilon, self.delta

    @one_blas_thread
    def release(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None,
                workload: GaussianKernelWorkload | None = None) -> Release[None]:
        """Noisy answers to every query of ``workload`` on data ``X`` ⊂ [-1, 1]^d.

        The exact answers come from :func:`dpkit.queries.truth_cache.exact_truth` (computed once per
        data set and workload, shared with the evaluation); their computation time is charged to this
        release as the stage ``"truth"``: it is the method's real cost.
        """
        wl = self._require_workload(workload)
        tm = Timer()
        X = check_in_unit_cube(X, name="X")
        n = X.shape[0]
        scales, kind, eps, dl = self.noise_scales(wl, n)
        led = ledger_for(ledger, eps, dl, self.name)
        sens = self.sensitivities(wl, n)
        led.spend(
            "answers", eps, dl, mechanism=f"{kind} ({self.noise})", neighbouring="replace-one",
            **({"accounting": self.accounting} if self.noise == "laplace_II" else {}),
            n_queries=int(scales.shape[0]), scale_max=float(scales.max(initial=0.0)),
            l1_sensitivity=float(sens.sum()), l2_sensitivity=float(np.linalg.norm(sens)),
        )
        truth = exact_truth(wl, X)
        a = np.array(truth.answers, dtype=float)
        with tm("noise"):
            gen = resolve_rng(rng)
            if kind == "laplace":
                a = a + gen.laplace(0.0, 1.0, size=a.shape) * scales
            elif kind == "gaussian":
                a = a + gen.normal(0.0, 1.0, size=a.shape) * scales
        timings = tm.done()
        timings["truth"] = truth.seconds
        timings["total"] += truth.seconds
        params = {
            "method": self.name, "epsilon": self.epsilon, "delta": self.delta, "noise": self.noise,
            "sensitivity_rule": self.sensitivity, **({"accounting": self.accounting} if self.noise == "laplace_II" else {}),
            "n": n, "n_queries": int(scales.shape[0]),
            "noise_kind": kind, "scale_mean": float(scales.mean()) if scales.size else 0.0,
            "sensitivity_mean_times_n": float(sens.mean() * n),
        }
        return Release(method=self.name, privacy=self.privacy, params=params, ledger=led.to_dict(), timings=timings,
                       answers=a)
