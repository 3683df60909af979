"""Experiment runners for Cai et al.'s (2021) Figs. 1–4 (docs/science/consistency.md, *The experiments and the speed claim*).

:func:`convergence_study` (Figs. 1/2: ``mse_s`` and ``err_s`` over 100 cycles of Algorithm 1) and :func:`timing_study`
(Figs. 3/4: every solver on the same seeded instance, with accuracy parity; speed compared only as ratios within one
run) return typed rows (:class:`ConvergenceTrace`, :class:`TimingRow`) for the claims and the figures.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Sequence

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.accounting import Ledger
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.threads import limit_threads
from dpkit.core.validation import check_choice, check_positive_int
from dpkit.mechanisms.consistency.general import GeneralProjector
from dpkit.mechanisms.consistency.restaurant import (
    COMBO_B,
    RestaurantData,
    RestaurantRelease,
    generate_restaurant,
    privatize_restaurant,
)
from dpkit.mechanisms.consistency.trees import KaryTree, algorithm1, closed_form, restaurant_residual, restaurant_system

__all__ = [
    "ConvergenceTrace",
    "TimingRow",
    "convergence_study",
    "timing_study",
    "TIMING_METHODS",
    "loglog_slope",
    "speed_ratios",
    "machine_info",
    "restaurant_instance",
]

TIMING_METHODS = ("algorithm1", "algorithm1-100", "pinv", "cholesky", "splu", "lsqr", "closed-form")


@dataclass(frozen=True)
class ConvergenceTrace:
    """One T of :func:`convergence_study`: traces averaged over the repeats (entry 0 = the noisy input).

    ``mse`` (eq. 14), ``err`` (all-node RMSE, eq. 15), ``err_leaf`` (leaf RMSE over the real days),
    ``dist`` (‖x_s − x*‖₂) and ``dist_inf`` have length ``n_iter + 1``; ``err_opt``/``err_leaf_opt``
    are the exact optimum's errors (means over repeats); ``leaf_gap_iter1``, ``mse_max_increase``
    and ``err_max_increase`` are maxima over repeats; ``ledger`` is the first repeat's.
    """

    T: int
    h: int
    n_iter: int
    repeats: int
    mse: np.ndarray
    err: np.ndarray
    err_leaf: np.ndarray
    dist: np.ndarray
    dist_inf: np.ndarray
    leaf_gap_iter1: float
    err_opt: float
    err_leaf_opt: float
    mse_max_increase: float
    err_max_increase: float
    ledger: Ledger | None


@dataclass(frozen=True)
class TimingRow:
    """One (T, method) of :func:`timing_study` (times are medians over the repeats)."""

    T: int
    method: str
    n: int
    m: int
    build_s: float
    solve_s: float
    total_s: float
    n_iter: int | None
    converged: bool
    dist_inf: float
    resid_inf: float


def _blas_limit(threads: int | None) -> ContextManager[Any]:
    return contextlib.nullcontext() if threads is None else limit_threads(threads, user_api=None)


def restaurant_instance(T: int, k: int, epsilon: float, g: np.random.Generator) -> tuple[RestaurantData, RestaurantRelease]:
    """A seeded restaurant instance and its ε-DP release, as the studies draw them.

    Parameters
    ----------
    T : int
        The number of time steps (the tree's leaves).
    k : int
        The tree's arity.
    epsilon : float
        The release's privacy budget (its own :class:`~dpkit.core.accounting.Ledger`).
    g : numpy.random.Generator
        The stream for the data, then the noise.

    Returns
    -------
    tuple of RestaurantData and RestaurantRelease
        ``(data, release)`` of :func:`~dpkit.mechanisms.consistency.restaurant.generate_restaurant` and
        :func:`~dpkit.mechanisms.consistency.restaurant.privatize_restaurant`.
    """
    data = generate_restaurant(T, k=k, rng=g)
    rel = privatize_restaurant(data, epsilon, ledger=Ledger(epsilon, name=f"restaurant-T{T}"), rng=g)
    return data, rel


def convergence_study(
    Ts: Sequence[int],
    *,
    n_iter: int = 100,
    repeats: int = 1,
    epsilon: float = 1.0,
    k: int = 2,
    B: ArrayLike = COMBO_B,
    rng: RNGLike = None,
) -> list[ConvergenceTrace]:
    """Figs. 1/2: Algorithm 1 with a fixed number of cycles (Sec. 8.1), averaged over ``repeats``.

    Returns one :class:`ConvergenceTrace` per T: the averaged traces (length ``n_iter + 1``;
    entry 0 = the noisy input) ``mse``, ``err`` (all-node RMSE), ``err_leaf`` (leaf RMSE over the
    real days), ``dist`` (‖x_s − x*‖₂) and ``dist_inf``, plus ``err_opt``/``err_leaf_opt`` (the
    exact optimum's errors: the dashed line of Fig. 2), ``leaf_gap_iter1`` (max |leaves after
    cycle 1 − optimal leaves|, over repeats), ``mse_max_increase`` (largest relative increase of
    mse between cycles) and ``err_max_increase`` (largest increase of the all-node squared error,
    Fejér monotonicity), and the ledger of the first repeat.
    """
    n_iter = check_positive_int(n_iter, name="n_iter")
    repeats = check_positive_int(repeats, name="repeats")
    B = np.asarray(B, dtype=float)
    gens = spawn(rng, len(Ts) * repeats)
    rows = []
    for it, T in enumerate(Ts):
        acc: dict[str, list[np.ndarray]] = {}
        scal: dict[str, list[float]] = {}
        ledger = None
        for r in range(repeats):
            g = gens[it * repeats + r]
            data, rel = restaurant_instance(T, k, epsilon, g)
            ledger = ledger or rel.ledger
            tree = data.tree
            Xn, Xt = rel.X_noisy, data.X
            ref = closed_form(Xn, B, k=k)
            lv = slice(tree.n_internal, tree.n_internal + T)  # real days only
            c = B.shape[1]

            def err_leaf(Z: np.ndarray, _lv=lv, _Xt=Xt, _T=T, _c=c) -> float:
                return float(np.sqrt(np.sum((Z[_lv] - _Xt[_lv]) ** 2) / (_c * _T)))

            res = algorithm1(Xn, B, k=k, T=T, stop="fixed", max_iter=n_iter, x_true=Xt, x_ref=ref, metrics={"err_leaf": err_leaf})
            for key in ("mse", "err", "err_leaf", "dist", "dist_inf"):
                acc.setdefault(key, []).append(res.trace[key])
            one = algorithm1(Xn, B, k=k, T=T, stop="fixed", max_iter=1, track=False)
            scal.setdefault("leaf_gap_iter1", []).append(float(np.max(np.abs(one.x[tree.leaves] - ref[tree.leaves]))))
            scal.setdefault("err_opt", []).append(float(np.sqrt(np.mean((ref - Xt) ** 2))))
            scal.setdefault("err_leaf_opt", []).append(err_leaf(ref))
            mse = res.trace["mse"]
            scal.setdefault("mse_max_increase", []).append(float(np.max(np.diff(mse[1:]) / mse[1:-1])) if mse.size > 2 else 0.0)
            sq = res.trace["err"] ** 2
            scal.setdefault("err_max_increase", []).append(float(np.max(np.diff(sq)) / sq[0]))
        traces = {key: np.mean(v, axis=0) for key, v in acc.items()}
        worst = {key: float(np.max(scal[key])) for key in ("leaf_gap_iter1", "mse_max_increase", "err_max_increase")}
        means = {key: float(np.mean(scal[key])) for key in ("err_opt", "err_leaf_opt")}
        rows.append(ConvergenceTrace(T=int(T), h=KaryTree(T=T, k=k).h, n_iter=n_iter, repeats=repeats, **traces, **worst, **means,
                                     ledger=ledger))
    return rows


def _run_method(method: str, Xn: np.ndarray, B: np.ndarray, k: int, T: int, tol: float, alg1_max_iter: int) -> dict[str, Any]:
    tree = KaryTree.from_n_nodes(Xn.shape[0], k)
    out: dict[str, Any] = {"n_iter": None, "converged": True}
    if method == "closed-form":
        t0 = time.perf_counter()
        x = closed_form(Xn, B, k=k)
        out.update(build_s=0.0, solve_s=time.perf_counter() - t0)
    elif method in ("algorithm1", "algorithm1-100"):
        t0 = time.perf_counter()
        if method == "algorithm1":
            res = algorithm1(Xn, B, k=k, T=T, stop="mean-change", tol=tol, max_iter=alg1_max_iter, track=False)
        else:
            res = algorithm1(Xn, B, k=k, T=T, stop="fixed", max_iter=100, track=False)
        x = res.x
        out.update(build_s=0.0, solve_s=time.perf_counter() - t0, n_iter=res.n_iter, converged=res.converged)
    else:
        t0 = time.perf_counter()
        system, _ = restaurant_system(tree, B)
        P = GeneralProjector(system=system, method=method, lsqr_tol=1e-12)
        build = time.perf_counter() - t0
        t1 = time.perf_counter()
        x = P.project(Xn.ravel()).reshape(Xn.shape)
        out.update(build_s=build, solve_s=time.perf_counter() - t1)
        if method == "lsqr":
            out["n_iter"] = P.last_info.get("iterations")
            out["converged"] = P.last_info.get("istop") in (1, 2)
    out["total_s"] = out["build_s"] + out["solve_s"]
    out["x"] = x
    return out


def timing_study(
    Ts: Sequence[int],
    *,
    methods: Sequence[str] = TIMING_METHODS,
    tol: float = 1e-6,
    repeats: int = 1,
    epsilon: float = 1.0,
    k: int = 2,
    B: ArrayLike = COMBO_B,
    max_T: dict[str, int] | None = None,
    time_budget: float | None = None,
    alg1_max_iter: int = 1_000_000,
    blas_threads: int | None = 1,
    rng: RNGLike = None,
    progress: Callable[[str], None] | None = None,
) -> list[TimingRow]:
    """Figs. 3/4: wall time of every method on the same seeded instance per T (median of ``repeats``).

    Parameters
    ----------
    Ts : sequence of int
        Numbers of days.
    methods : sequence of str
        Any of ``"algorithm1"`` (to the mean-change stop ``tol``, Sec. 8.2), ``"algorithm1-100"``
        (fixed 100 cycles, Sec. 8.1), ``"pinv"`` (the paper's general solution, dense Moore–Penrose),
        ``"cholesky"`` (dense Cholesky of MMᵀ), ``"splu"`` (sparse LU of MMᵀ: the best sparse
        general-purpose solver available here), ``"lsqr"`` (LSQR, atol = btol = 1e-12) and
        ``"closed-form"`` (Boost(X̃)·Π).
    max_T : dict, optional
        Largest T per method (e.g. ``{"pinv": 512}``: the dense methods need O(T²) memory).
    time_budget : float, optional
        Once a method's total time exceeds this many seconds, larger T are skipped for it.
    alg1_max_iter : int
        Cycle cap of ``"algorithm1"`` (rows report ``converged``).
    blas_threads : int or None
        BLAS thread limit during the timings (default 1: the single-core comparison of the protocol).

    Returns
    -------
    list of TimingRow
        Rows ``(T, method, n, m, build_s, solve_s, total_s, n_iter, converged, dist_inf, resid_inf)``;
        ``dist_inf`` is ‖x − x*‖∞ against the closed form (itself checked against ``splu``/``pinv``
        by the notebook), ``resid_inf`` is ‖M x − b‖∞. Skipped (T, method) pairs are absent.
    """
    for mth in methods:
        check_choice(mth, name="methods", choices=TIMING_METHODS)
    repeats = check_positive_int(repeats, name="repeats")
    B = np.asarray(B, dtype=float)
    max_T = dict(max_T or {})
    over_budget: set[str] = set()
    gens = spawn(rng, len(Ts))
    rows: list[TimingRow] = []
    with _blas_limit(blas_threads):
        for T, g in zip(Ts, gens):
            data, rel = restaurant_instance(T, k, epsilon, g)
            Xn = rel.X_noisy
            ref = closed_form(Xn, B, k=k)
            tree = data.tree
            for mth in methods:
                if mth in over_budget or T > max_T.get(mth, np.inf):
                    continue
                if progress is not None:
                    progress(f"T={T} {mth}")
                runs = [_run_method(mth, Xn, B, k, T, tol, alg1_max_iter) for _ in range(repeats)]
                row = _timing_row(int(T), mth, runs, Xn, B, tree, ref)
                rows.append(row)
                if time_budget is not None and row.total_s > time_budget:
                    over_budget.add(mth)
    return rows


def _timing_row(T: int, method: str, runs: list[dict[str, Any]], Xn: np.ndarray, B: np.ndarray, tree: KaryTree,
                ref: np.ndarray) -> TimingRow:
    """One :class:`TimingRow`: median times over ``runs``, the first run's x checked against ``ref`` and the constraints."""
    x = runs[0]["x"]
    return TimingRow(
        T=T,
        method=method,
        n=int(Xn.size),
        m=int(B.shape[1] * tree.n_internal + np.linalg.matrix_rank(B) * tree.n_leaves),
        build_s=float(np.median([r["build_s"] for r in runs])),
        solve_s=float(np.median([r["solve_s"] for r in runs])),
        total_s=float(np.median([r["total_s"] for r in runs])),
        n_iter=runs[0]["n_iter"],
        converged=bool(runs[0]["converged"]),
        dist_inf=float(np.max(np.abs(x - ref))),
        resid_inf=float(np.max(np.abs(restaurant_residual(x, tree, B)))),
    )


def loglog_slope(Ts: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of log(value) against log(T) (growth exponent)."""
    t, v = np.log(np.asarray(Ts, float)), np.log(np.asarray(values, float))
    if t.size < 2:
        return float("nan")
    return float(np.polyfit(t, v, 1)[0])


def speed_ratios(rows: Sequence[TimingRow], numerator: str, denominator: str) -> dict[int, float]:
    """``total_s(numerator) / total_s(denominator)`` for every T where both were measured (one run)."""
    by = {(r.T, r.method): r.total_s for r in rows}
    Ts = sorted({r.T for r in rows})
    return {T: by[(T, numerator)] / by[(T, denominator)] for T in Ts if (T, numerator) in by and (T, denominator) in by}


def machine_info() -> dict[str, Any]:
    """CPU model, core count and library versions, recorded with every timing run (speed-comparison protocol,
    docs/science/consistency.md)."""
    import os
    import platform

    import scipy

    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu_model": model,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
