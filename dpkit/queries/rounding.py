"""Floating-point error bounds of the Gaussian-kernel sums and the precision choice.

The kernel-sum engine (:mod:`dpkit.queries.gemm`) evaluates ``k(c) = Σ_i w_i exp(−‖p_i − c‖²/(2σ²))`` through one
GEMM per block. This module bounds the relative error of every kernel mean and answer a priori, and chooses the
precision from it:

1. :func:`float32_error_bound`: rounding of the augmented rows and the dot product (Higham, Thm 3.5), ``exp``'s own
   error (``EXP_ULP_F32`` ulp), the float32 partial sums and the float64 tail; every term is non-negative, so the
   relative bound carries to every answer.
2. ``precision="auto"`` (default) uses float32 where that bound is ≤ ``rtol`` (default 1e-5), float64 otherwise;
   ``precision="mixed"`` (float64 GEMM, float32 exp) is offered but never chosen by "auto".

The derivation and the worst cases of the thesis's data sets: ``docs/science/derivations.md``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.validation import check_choice, check_positive_int, check_real_in_range

__all__ = [
    "float32_error_bound",
    "choose_precision",
    "Precision",
    "gamma",
    "UNIT_ROUNDOFF_F32",
    "UNIT_ROUNDOFF_F64",
    "EXP_ULP_F32",
    "DEFAULT_RTOL",
    "SUM_GROUP",
]

UNIT_ROUNDOFF_F32 = 2.0**-24
UNIT_ROUNDOFF_F64 = 2.0**-53
#: Assumed maximal error of numpy's float32 ``exp`` in units in the last place
#: (NumPy's SIMD float32 exp is documented well below this; ``tests/test_evaluate.py`` checks it).
EXP_ULP_F32 = 4.0
#: Default tolerance on the relative error bound for ``precision="auto"``.
DEFAULT_RTOL = 1e-5
#: Terms per float32 partial sum (then float64).
SUM_GROUP = 8


def _exp_bound(x: float) -> float:
    """``exp(x)`` for an error-bound exponent; ``inf`` (no useful bound) where ``math.exp`` would overflow."""
    return math.exp(x) if x < _LOG_FLOAT_MAX else math.inf


_LOG_FLOAT_MAX = math.log(np.finfo(np.float64).max)


def gamma(k: float, u: float) -> float:
    """Higham's ``γ_k = k u / (1 − k u)`` (bound on ``|Π(1 + δ_i)^{±1} − 1|`` for k roundings)."""
    ku = k * u
    return ku / (1.0 - ku)



# ---------------------------------------------------------------------------------------------
# error bound and precision choice
# ---------------------------------------------------------------------------------------------
def float32_error_bound(
    d: int,
    sigma: float,
    *,
    max_norm_points: float | None = None,
    max_norm_centres: float | None = None,
    max_abs_log_weight: float = 0.0,
    n_points: int = 100_000,
    J: int = 10,
    distances: str = "float32",
) -> float:
    """A-priori bound ρ on the relative error of every float32 kernel mean and answer.

    See the module docstring for the derivation:
    ``ρ = exp(Δ)·(1 + 2·EXP_ULP_F32·u)(1 + γ_7)(1 + γ⁽⁶⁴⁾_{n/8+J+2}) − 1`` with ``s = 1/(2σ²)``,
    ``u = 2⁻²⁴``, ``X = s(‖p‖+‖c‖)² + |log ω|`` and ``Δ = γ_{d+5}·X`` when the distances
    (the GEMM) are float32, ``Δ = (γ⁽⁶⁴⁾_{d+5} + u)·X`` when they are float64 and only rounded
    to float32 before ``exp`` (``distances="float64"``, the "mixed" precision).

    Parameters
    ----------
    d : int
        Dimension.
    sigma : float
        Kernel width.
    max_norm_points, max_norm_centres : float, optional
        Bounds on ``‖p‖`` and ``‖c‖``; default ``√d`` (the cube ``[-1, 1]^d``).
    max_abs_log_weight : float
        Bound on ``|log(w_i / max w)|`` (0 for uniform weights).
    n_points : int
        Number of (distinct) points, for the float64 summation term.
    J : int
        Centres per query.
    distances : {"float32", "float64"}
        Precision of the GEMM.
    """
    d = check_positive_int(d, name="d")
    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    check_choice(distances, name="distances", choices=("float32", "float64"))
    u = UNIT_ROUNDOFF_F32
    npx = math.sqrt(d) if max_norm_points is None else float(max_norm_points)
    ncx = math.sqrt(d) if max_norm_centres is None else float(max_norm_centres)
    s = 1.0 / (2.0 * sigma * sigma)
    X = _max_exponent(npx, ncx, s, abs(float(max_abs_log_weight)))
    if distances == "float32":
        delta = gamma(d + 5, u) * X
    else:
        delta = (gamma(d + 5, UNIT_ROUNDOFF_F64) + u) * X
    tail = gamma(n_points / SUM_GROUP + J + 2, UNIT_ROUNDOFF_F64)
    return _exp_bound(delta) * (1 + 2 * EXP_ULP_F32 * u) * (1 + gamma(SUM_GROUP - 1, u)) * (1 + tail) - 1.0


def _max_exponent(norm_p: float, norm_c: float, s: float, max_abs_log_weight: float) -> float:
    """Bound on |−s‖p − c‖² + log ω| and on the sum of the absolute GEMM terms."""
    return s * (norm_p + norm_c) ** 2 + max_abs_log_weight


@dataclass(frozen=True)
class Precision:
    """Resolved numerics of one evaluation: GEMM dtype, exp dtype and the relative error bound."""

    name: str  # "float32", "mixed" or "float64"
    gemm_dtype: Any
    exp_dtype: Any
    error_bound: float


def choose_precision(
    precision: str,
    *,
    d: int,
    sigma: float,
    max_norm_points: float,
    max_norm_centres: float,
    max_abs_log_weight: float,
    n_points: int,
    J: int = 10,
    rtol: float = DEFAULT_RTOL,
) -> Precision:
    """Resolve ``precision`` ("auto", "float32", "mixed", "float64") and its error bound.

    "auto" takes float32 (float32 GEMM and exp) when its bound (:func:`float32_error_bound`)
    is ≤ ``rtol`` and no exponent can fall below −80 (float32 ``exp`` underflows near −87,
    which would make relative errors of tiny answers meaningless), else float64. "mixed"
    (float64 GEMM, float32 exp) is only used when asked for (it measured no faster than
    float64; docs/performance_notes.md). The float64 bound has
    the same structure with ``u = 2⁻⁵³`` (≈ 10⁻¹³ in the thesis's settings).
    """
    check_choice(precision, name="precision", choices=("auto", "float32", "mixed", "float64"))
    rtol = check_real_in_range(rtol, name="rtol", low=0.0, low_inclusive=False)
    kw = dict(
        max_norm_points=max_norm_points,
        max_norm_centres=max_norm_centres,
        max_abs_log_weight=max_abs_log_weight,
        n_points=n_points,
        J=J,
    )
    rho32 = float32_error_bound(d, sigma, distances="float32", **kw)
    rho_mixed = float32_error_bound(d, sigma, distances="float64", **kw)
    s = 1.0 / (2.0 * sigma * sigma)
    X = _max_exponent(max_norm_points, max_norm_centres, s, max_abs_log_weight)
    underflow_safe = X < 80.0
    if precision == "float32" or (precision == "auto" and rho32 <= rtol and underflow_safe):
        return Precision("float32", np.float32, np.float32, rho32)
    if precision == "mixed":
        return Precision("mixed", np.float64, np.float32, rho_mixed)
    u = UNIT_ROUNDOFF_F64
    rho64 = _exp_bound(gamma(d + 5, u) * X) * (1 + 8 * u) * (1 + gamma(SUM_GROUP - 1, u)) * (
        1 + gamma(n_points / SUM_GROUP + J + 2, u)
    ) - 1.0
    return Precision("float64", np.float64, np.float64, rho64)

