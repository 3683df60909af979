"""A certified upper bound on the worst case over the query class: branch and bound over boxes (d ≤ 8).

The search of :mod:`dpkit.queries.supremum` gives a certified *lower* bound; :func:`certify_supremum`
brackets the supremum ``sup_c |E(c)|`` between it and a proven upper bound (its docstring has the
method; the per-box bounds are :func:`taylor_box_bound` and :func:`interval_box_bound`).
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from dpkit.core.threads import limit_threads
from dpkit.core.validation import (
    check_int_in_range,
    check_real_in_range,
)
from dpkit.queries.accurate import EXP_ULP_F64, compound
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64 as _U
from dpkit.queries.rounding import gamma
from dpkit.queries.supremum_error import (
    MAX_EXPONENT,
    ClassSupremum,
    ErrorFunction,
    SupremumInterval,
    check_supremum_inputs,
    resolve_released,
)
from dpkit.queries.synthetic import WeightedDatabase

__all__ = ["BoxData", "proven_box_bound", "taylor_box_bound", "interval_box_bound", "certify_supremum"]


# ---------------------------------------------------------------------------------------------
# certified upper bound: branch and bound
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, eq=False)
class BoxData:
    """What the box bound of :func:`certify_supremum` sees for a batch of k boxes ``[centre − half, centre + half]``.

    Attributes
    ----------
    centre, half : ndarray (k, d)
    value : ndarray (k,)
        ``E`` at the centre (computed).
    gradient : ndarray (k, d)
        ``∇E`` at the centre (computed).
    hessian : ndarray (k,)
        A proven bound on ``‖∇²E‖₂`` over the box.
    interval : ndarray (k,)
        A proven bound on ``|E|`` over the box from the per-group nearest/farthest distances.
    margin : ndarray (k,)
        A proven bound on the rounding error of the Taylor bound's computed terms (the interval
        bound carries its own).
    """

    centre: np.ndarray
    half: np.ndarray
    value: np.ndarray
    gradient: np.ndarray
    hessian: np.ndarray
    interval: np.ndarray
    margin: np.ndarray


def taylor_box_bound(b: BoxData) -> np.ndarray:
    """``max_{c∈box} |E(c)| ≤ |E(c₀)| + Σ_k |∂_k E(c₀)| h_k + ½ H ‖h‖² + margin`` (Taylor's formula with the
    Lagrange remainder; see :func:`certify_supremum`)."""
    return (np.abs(b.value) + np.sum(np.abs(b.gradient) * b.half, axis=1)
            + 0.5 * b.hessian * np.sum(b.half**2, axis=1) + b.margin)


def interval_box_bound(b: BoxData) -> np.ndarray:
    """``max_{c∈box} |E(c)| ≤`` the per-group interval bound (nearest and farthest distances; see
    :func:`certify_supremum`)."""
    return np.asarray(b.interval, dtype=np.float64).copy()


def proven_box_bound(b: BoxData) -> np.ndarray:
    """The smaller of :func:`taylor_box_bound` and :func:`interval_box_bound` (both proven)."""
    return np.minimum(taylor_box_bound(b), interval_box_bound(b))


def _groups(P: np.ndarray, v: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split the signed points into ≤ ``n_groups`` kd-tree leaves (median of the widest coordinate);
    per leaf its bounding box and its positive and negative mass."""
    leaves = [np.arange(P.shape[0])]
    while len(leaves) < n_groups:
        j = max(range(len(leaves)), key=lambda i: leaves[i].size)
        idx = leaves[j]
        if idx.size < 2:
            break
        Q = P[idx]
        k = int(np.argmax(Q.max(axis=0) - Q.min(axis=0)))
        order = np.argsort(Q[:, k], kind="stable")
        h = idx.size // 2
        leaves[j:j + 1] = [idx[order[:h]], idx[order[h:]]]
    lo = np.array([P[i].min(axis=0) for i in leaves])
    hi = np.array([P[i].max(axis=0) for i in leaves])
    pos = np.array([float(np.clip(v[i], 0.0, None).sum()) for i in leaves])
    neg = np.array([float(np.clip(-v[i], 0.0, None).sum()) for i in leaves])
    return lo, hi, pos, neg


def certify_supremum(
    X: Any,
    released: Any,
    sigma: float,
    *,
    initial: ClassSupremum | None = None,
    domain: str = "cube",
    max_boxes: int = 20_000,
    batch: int = 64,
    n_groups: int = 64,
    rtol: float = 1e-3,
    atol: float = 1e-6,
    box_bound: Callable[[BoxData], np.ndarray] | None = None,
) -> SupremumInterval:
    """A certified interval ``[lower, upper]`` for ``sup_c |E(c)|`` of a weighted database, d ≤ 8.

    Branch and bound over boxes of the search domain (the cube, or ``[-reach, reach]^d`` for
    ``domain="space"``, module lemma) [5]. For each box with centre ``c₀`` and half-widths ``h``:

    * **Taylor bound.** ``E(c) = E(c₀) + ∇E(c₀)·(c − c₀) + ½ (c − c₀)ᵀ∇²E(ξ)(c − c₀)``, so
      ``|E| ≤ |E(c₀)| + Σ_k |∂_k E(c₀)| h_k + ½ H ‖h‖²`` with ``H ≥ sup_box ‖∇²E‖₂``. The Hessian
      of ``k(p, ·)`` is ``k(p, c)(uuᵀ/σ⁴ − I/σ²)``, ``u = c − p``: its norm is
      ``k/σ² · max(1, |‖u‖²/σ² − 1|) ≤ e^{−d_min²/(2σ²)} max(1, d_max²/σ² − 1)/σ²`` (and ≤ 1/σ²,
      since ``e^{−x/2} max(1, x − 1) ≤ 1``), ``d_min``/``d_max`` the nearest/farthest distance of
      ``p`` to the box. ``E(c₀)`` and ``∇E(c₀)`` keep the cancellation between the two point sets,
      so near the maximum the bound is tight to second order.
    * **Interval bound.** Per point ``k(p, c) ∈ [e^{−d_max²/(2σ²)}, e^{−d_min²/(2σ²)}]``; the
      error is a difference of two such sums, so each point's term is bounded with its sign.
    * **Efficiency.** Both the Hessian and the interval bounds use groups of points (kd-tree
      leaves, ``n_groups``) with the distances between the group's bounding box and the box
      (``O(groups·d)`` per box); ``E(c₀)`` and ``∇E(c₀)`` are one GEMM over all points for a
      batch of ``batch`` boxes.

    The upper bound of a box is the smaller of the two; the Taylor bound carries the rounding margin
    of its computed terms (``2ρ'·Σ|v|·(1 + (max|p| + reach)Σ_k h_k/σ²)``, with ``ρ'`` the float64
    GEMM kernel-value bound — exponent error ``γ_{2d+8} s(‖p‖ + ‖c‖)²`` as in
    :mod:`dpkit.queries.accurate` — compounded with ``γ_{n+d+4}``), the interval and curvature bounds
    round their kernel bounds outwards, and every box is widened by a few ulps (the computed halves
    of a box need not tile it to the last bit). Boxes are
    split in halves along their widest side, the largest bound first; boxes whose bound is below
    the best proven value are dropped. The search stops when ``upper − lower ≤ max(atol, rtol·lower)``
    (``finished``) or after ``max_boxes`` boxes (then only ``lower`` is claimed).

    Parameters
    ----------
    X, released, sigma, domain
        As :func:`class_supremum` (``released`` must be a weighted database).
    initial : ClassSupremum, optional
        A result of :func:`class_supremum` (same inputs): its certified value seeds the lower bound.
    max_boxes : int
        Budget of boxes evaluated (default 20,000).
    batch : int
        Boxes split per step (default 64).
    n_groups : int
        Point groups of the bounds (default 64).
    rtol, atol : float
        Target gap (default 10⁻³ relative, 10⁻⁶ absolute).
    box_bound : callable, optional
        Replaces :func:`proven_box_bound` (tests use it to show that a wrong bound is caught).

    Raises
    ------
    ValueError
        For d > 8 or an answer-function release (the bounds need two weighted point sets).
    """
    with limit_threads(1):
        return _certify_supremum(X, released, sigma, initial=initial, domain=domain, max_boxes=max_boxes, batch=batch,
                                 n_groups=n_groups, rtol=rtol, atol=atol, box_bound=box_bound)


def _certify_supremum(
    X: Any, released: Any, sigma: float, *, initial: ClassSupremum | None, domain: str, max_boxes: int, batch: int,
    n_groups: int, rtol: float, atol: float, box_bound: Callable[[BoxData], np.ndarray] | None,
) -> SupremumInterval:
    t0 = time.perf_counter()
    P, sigma = check_supremum_inputs(X, sigma, domain)
    n, d = P.shape
    check_int_in_range(d, name="d (columns of X)", low=1, high=8)
    max_boxes = check_int_in_range(max_boxes, name="max_boxes", low=1)
    batch = check_int_in_range(batch, name="batch", low=1)
    n_groups = check_int_in_range(n_groups, name="n_groups", low=1)
    rtol = check_real_in_range(rtol, name="rtol", low=0.0)
    atol = check_real_in_range(atol, name="atol", low=0.0)
    rel = resolve_released(released, d)
    if not isinstance(rel, WeightedDatabase):
        raise ValueError("certify_supremum needs a weighted database (synthetic data) as released; got "
                         + (rel if isinstance(rel, str) else rel.name))
    bound_fn = proven_box_bound if box_bound is None else box_bound
    err = ErrorFunction(P, rel, sigma)
    s2 = sigma * sigma

    # proven lower bound and witness to start from
    if initial is not None:
        if not initial.applicable or initial.witness is None or initial.domain != domain:
            raise ValueError("initial must be an applicable class_supremum result of the same domain")
        witness = np.array(initial.witness, dtype=np.float64)
        lower = float(initial.sup_abs) - float(initial.numerical_bound)
        reach = float(initial.reach)
    else:
        C = np.vstack([err.points[: min(256, err.points.shape[0])], np.zeros((1, d))])
        i = int(np.argmax(np.abs(err.values(C))))
        e, _, _, b = err.exact(C[i])
        witness, lower = C[i].copy(), abs(e) - b
        reach = 1.0
        if domain == "space":
            reach = 1.0 + (sigma * math.sqrt(2.0 * math.log(1.0 / lower)) if 0.0 < lower < 1.0
                           else sigma * math.sqrt(2.0 * MAX_EXPONENT) if lower <= 0.0 else 0.0)

    glo, ghi, gpos, gneg = _groups(err.points, err.v, n_groups)
    abs_v = float(np.abs(err.v).sum())
    max_p = float(np.abs(err.points).max())
    # rounding of the GEMM-form values and gradients at box centres: exponent error ≤ γ_{2d+8} s(‖p‖ + ‖c‖)²
    # (as in dpkit.queries.accurate, without its underflow limit: terms that underflow are < 1e-300 each)
    norm_p = float(np.sqrt(np.einsum("ij,ij->i", err.points, err.points).max()))
    x_gemm = (norm_p + reach * math.sqrt(d)) ** 2 / (2.0 * s2)
    rho_k = compound(math.expm1(gamma(2 * d + 8, _U) * x_gemm), 2.0 * EXP_ULP_F64 * _U)
    rho = compound(rho_k, gamma(err.points.shape[0] + d + 4, _U))
    g_groups = gamma(n_groups + 4, _U)

    def evaluate(centre: np.ndarray, half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        val, grad = err.values_gradients(centre)
        # the computed children need not tile the parent to the last bit: widen every box by a few ulps
        half = half * (1.0 + 4.0 * _U) + 4.0 * _U * (np.abs(centre) + half)
        blo, bhi = centre - half, centre + half
        gap = np.maximum(np.maximum(glo[None] - bhi[:, None], blo[:, None] - ghi[None]), 0.0)
        dmin2 = np.einsum("kgd,kgd->kg", gap, gap)
        far = np.maximum(np.abs(ghi[None] - blo[:, None]), np.abs(bhi[:, None] - glo[None]))
        dmax2 = np.einsum("kgd,kgd->kg", far, far)
        # exponents err relatively by ≤ γ_{d+5}, exp by 4 ulp: round the kernel bounds outwards by rx
        rx = compound(gamma(d + 5, _U) * float(dmax2.max(initial=0.0)) / (2.0 * s2), 2.0 * EXP_ULP_F64 * _U)
        kmax = np.exp(-dmin2 / (2.0 * s2)) * (1.0 + rx)
        kmin = np.exp(-dmax2 / (2.0 * s2)) * max(0.0, 1.0 - rx)
        up, down = 1.0 + g_groups, 1.0 - g_groups
        hi_e = (kmax @ gpos) * up - (kmin @ gneg) * down
        lo_e = (kmin @ gpos) * down - (kmax @ gneg) * up
        interval = np.maximum(hi_e, -lo_e) * (1.0 + 2.0 * _U) + 1e-300
        factor = np.maximum(1.0, dmax2 / s2 - 1.0) * (1.0 + gamma(d + 6, _U))
        hess = np.minimum((kmax * factor) @ (gpos + gneg) * up / s2, abs_v / s2) * (1.0 + 2.0 * _U)
        margin = 2.0 * rho * abs_v * (1.0 + (max_p + reach) * half.sum(axis=1) / s2) + 1e-300
        data = BoxData(centre=centre, half=half, value=val, gradient=grad, hessian=hess, interval=interval,
                       margin=margin)
        return np.asarray(bound_fn(data), dtype=np.float64), np.abs(val) - margin

    # root
    heap: list[tuple[float, int, np.ndarray, np.ndarray]] = []
    centre, half = np.zeros((1, d)), np.full((1, d), reach)
    ub, lb = evaluate(centre, half)
    if lb[0] > lower:
        lower, witness = float(lb[0]), centre[0].copy()
    counter = 0
    heapq.heappush(heap, (-float(ub[0]), counter, centre[0], half[0]))
    n_boxes = 1
    status = "budget of boxes exhausted: lower bound only"
    while heap:
        top = -heap[0][0]
        if top - lower <= max(atol, rtol * lower):
            status = "finished"
            break
        if n_boxes >= max_boxes:
            break
        popped = [heapq.heappop(heap) for _ in range(min(batch, len(heap), max(1, (max_boxes - n_boxes) // 2)))]
        cs, hs = [], []
        for _, _, c, h in popped:
            k = int(np.argmax(h))
            h2 = h.copy()
            h2[k] /= 2.0
            for sgn in (-1.0, 1.0):
                c2 = c.copy()
                c2[k] += sgn * h2[k]
                cs.append(c2)
                hs.append(h2)
        centre, half = np.array(cs), np.array(hs)
        ub, lb = evaluate(centre, half)
        n_boxes += centre.shape[0]
        j = int(np.argmax(lb))
        if lb[j] > lower:
            lower, witness = float(lb[j]), centre[j].copy()
        for i in range(centre.shape[0]):
            if ub[i] > lower:
                counter += 1
                heapq.heappush(heap, (-float(ub[i]), counter, centre[i], half[i]))
    open_upper = max(lower, -heap[0][0]) if heap else lower
    # the witness's exact value (the search's lower bound used the GEMM values minus their margin)
    e, _, _, b = err.exact(witness)
    lower = max(lower, abs(e) - b)
    finished = status == "finished"
    upper = max(open_upper, lower) if finished else None
    w = witness.copy()
    w.setflags(write=False)
    return SupremumInterval(
        lower=lower, upper=upper, gap=None if upper is None else upper - lower, finished=finished, status=status,
        unfinished_upper=max(open_upper, lower), witness=w, n_boxes=n_boxes, domain=domain, reach=reach,
        seconds=time.perf_counter() - t0,
    )
