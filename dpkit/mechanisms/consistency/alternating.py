"""The multiple-consistency approximation method: cyclic projections over row blocks (Cai et al. 2021, eq. 8).

``x̄ = lim_t (f_k ∘ … ∘ f_1)^t (x̃)`` with ``f_i`` the exact projector onto ``{M_i x = b_i}`` converges to the
projection onto the intersection (docs/science/consistency.md, *Alternating projections*). It stops after a fixed
number of cycles (Sec. 8.1) or when the mean absolute change per cycle is below ``tol`` (Sec. 8.2).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.validation import check_choice, check_positive_int, check_real_in_range
from dpkit.mechanisms.consistency.constraints import ConstraintSystem
from dpkit.mechanisms.consistency.general import GeneralProjector

__all__ = ["AlternatingResult", "alternating_projection", "block_projectors", "STOP_RULES"]

STOP_RULES = ("fixed", "mean-change")


class SupportsProject(Protocol):
    """Anything with ``project(x)`` (e.g. :class:`GeneralProjector`, the tree projectors)."""

    def project(self, x: np.ndarray) -> np.ndarray: ...


#: A projector: an object with ``project(x)`` or a callable ``x -> f(x)``.
Projector = Union[SupportsProject, Callable[[np.ndarray], np.ndarray]]


def _apply(P: Projector, x: np.ndarray) -> np.ndarray:
    if hasattr(P, "project"):
        return P.project(x)
    if callable(P):
        return P(x)
    raise TypeError(f"projectors must have a .project(x) method or be callable; got {type(P).__name__}")


@dataclass(frozen=True, kw_only=True, eq=False)
class AlternatingResult:
    """Outcome of :func:`alternating_projection`.

    Attributes
    ----------
    x : ndarray
        The last iterate ``x^{(s)}``.
    n_iter : int
        Number of full cycles run.
    converged : bool
        Whether the ``mean-change`` rule fired (always True for ``fixed``).
    stop : str
        The stopping rule.
    seconds : float
        Wall time of the iterations (trace bookkeeping included when ``trace=True``).
    trace : dict of ndarray
        Per cycle ``s = 0, 1, …, n_iter`` (entry 0 is the input): ``change`` (mean |Δx|, NaN at 0),
        and when requested ``mse`` (eq. 14), ``err`` (eq. 15), ``dist``/``dist_inf`` (distance to the
        exact optimum), ``fejer`` (‖x_s − p₁‖²), ``telescope`` (Sec. 6 step 1 identity residual) and
        ``inner`` (⟨p₁ − p₂, x_s − p₂⟩, constant by Thm. 5).
    """

    x: np.ndarray
    n_iter: int
    converged: bool
    stop: str
    seconds: float
    trace: dict[str, np.ndarray] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_iter": self.n_iter,
            "converged": self.converged,
            "stop": self.stop,
            "seconds": self.seconds,
            "trace": {k: v.tolist() for k, v in self.trace.items()},
        }


def block_projectors(
    system: ConstraintSystem, blocks: Sequence[Sequence[int]], *, method: str = "auto"
) -> list[GeneralProjector]:
    """Exact projectors ``f_i = f_{M_i, b_i}`` (eq. 7 on each block) for a row partition."""
    return [GeneralProjector(system=blk, method=method) for blk in system.partition(blocks)]


def alternating_projection(
    x0: ArrayLike,
    projectors: Sequence[Projector],
    *,
    stop: str = "mean-change",
    tol: float = 1e-6,
    max_iter: int = 100,
    residual: ConstraintSystem | Callable[[np.ndarray], np.ndarray] | None = None,
    x_true: ArrayLike | None = None,
    x_ref: ArrayLike | None = None,
    mse_norm: float | None = None,
    err_norm: float | None = None,
    change_norm: float | None = None,
    invariants: tuple[ArrayLike, ArrayLike] | None = None,
    metrics: dict[str, Callable[[np.ndarray], float]] | None = None,
    progress: bool = False,
) -> AlternatingResult:
    """Run eq. (8): cycles ``x ← f_k(…f_1(x))`` until a stopping rule fires.

    Parameters
    ----------
    x0 : array
        The noisy release ``x̃`` (any shape; projectors act on arrays of that shape).
    projectors : sequence
        ``f_1, …, f_k`` in application order (objects with ``project(x)`` or callables). Each must
        be the exact projector onto its block's affine set.
    stop : {"mean-change", "fixed"}
        ``"fixed"``: exactly ``max_iter`` cycles (Sec. 8.1). ``"mean-change"``: stop after the first
        cycle with ``Σ|x^{(s)} − x^{(s−1)}| / change_norm < tol`` (Sec. 8.2), at most ``max_iter`` cycles.
    tol : float
        Tolerance of the mean-change rule (paper: 10⁻⁶).
    max_iter : int
        Cycle limit.
    residual : ConstraintSystem or callable, optional
        ``ψ(x) = M x − b`` of the *whole* system; enables the ``mse`` trace
        ``mse_s = ‖ψ(x_s)‖² / mse_norm`` (eq. 14).
    x_true : array, optional
        The un-noised data; enables ``err_s = sqrt(‖x_s − x_true‖² / err_norm)`` (eq. 15).
    x_ref : array, optional
        The exact optimum ``f_{M,b}(x̃)``; enables ``dist`` (2-norm) and ``dist_inf``.
    mse_norm, err_norm, change_norm : float, optional
        Normalisers (default: number of entries of ``x0``). Cai et al. 2021 writes ``c|T|`` for all three;
        see :mod:`dpkit.mechanisms.consistency.restaurant` for the reading used there.
    invariants : (p1, p2), optional
        Two points consistent with the whole system; enables the Sec. 6 traces ``fejer``,
        ``telescope`` and ``inner``.
    metrics : dict of callables, optional
        Extra per-cycle traces ``name -> f(x_s)`` (e.g. the leaf-only error).
    progress : bool
        Show a tqdm bar.

    Returns
    -------
    AlternatingResult
    """
    check_choice(stop, name="stop", choices=STOP_RULES)
    max_iter = check_positive_int(max_iter, name="max_iter")
    tol = check_real_in_range(tol, name="tol", low=0.0, low_inclusive=False)
    x = _start(x0, projectors)
    N = float(x.size)
    change_norm = N if change_norm is None else float(change_norm)
    tracer = _Tracer(x, residual=residual, x_true=x_true, x_ref=x_ref, invariants=invariants, metrics=metrics,
                     mse_norm=N if mse_norm is None else float(mse_norm),
                     err_norm=N if err_norm is None else float(err_norm))
    t0 = time.perf_counter()
    converged = False
    s = 0
    with _progress_bar(progress, max_iter) as bar:
        for s in range(1, max_iter + 1):
            prev = x
            for P in projectors:
                nxt = _apply(P, x)
                tracer.step(x, nxt)
                x = nxt
            change = float(np.sum(np.abs(x - prev))) / change_norm
            tracer.record(x, change)
            bar.update(1)
            if stop == "mean-change" and change < tol:
                converged = True
                break
        seconds = time.perf_counter() - t0
    return AlternatingResult(x=x, n_iter=s, converged=converged or stop == "fixed", stop=stop, seconds=seconds,
                             trace=tracer.trace())


def _start(x0: ArrayLike, projectors: Sequence[Projector]) -> np.ndarray:
    """A float copy of ``x0`` (finite), after checking there is at least one projector."""
    if len(projectors) == 0:
        raise ValueError("projectors must contain at least one projector")
    x = np.array(x0, dtype=float, copy=True)
    if not np.all(np.isfinite(x)):
        raise ValueError("x0 must be finite")
    return x


def _progress_bar(progress: bool, total: int) -> Any:
    """A tqdm bar over the cycles, or a no-op stand-in (tqdm is imported only when asked for)."""
    if not progress:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="alternating projection")


class _NoBar:
    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None


class _Tracer:
    """The per-cycle traces of :func:`alternating_projection` (see :class:`AlternatingResult`)."""

    def __init__(self, x0: np.ndarray, *, residual: ConstraintSystem | Callable[[np.ndarray], np.ndarray] | None,
                 x_true: ArrayLike | None, x_ref: ArrayLike | None, invariants: tuple[ArrayLike, ArrayLike] | None,
                 metrics: dict[str, Callable[[np.ndarray], float]] | None, mse_norm: float, err_norm: float) -> None:
        self.shape = x0.shape
        if isinstance(residual, ConstraintSystem):
            system = residual
            self.resid: Callable[[np.ndarray], np.ndarray] | None = lambda z: system.residual(z.ravel())
        else:
            self.resid = residual
        self.xt = None if x_true is None else self._shape_ok(x_true, "x_true")
        self.xr = None if x_ref is None else self._shape_ok(x_ref, "x_ref")
        self.inv = None if invariants is None else tuple(self._shape_ok(p, "invariants") for p in invariants)
        self.metrics = metrics or {}
        self.mse_norm, self.err_norm = mse_norm, err_norm
        self.tr: dict[str, list[float]] = {"change": []}
        self.steps_sq = 0.0
        self.fe0 = float(np.sum(np.square(x0 - self.inv[0]))) if self.inv is not None else 0.0
        self.record(x0, np.nan)

    def _shape_ok(self, a: ArrayLike, name: str) -> np.ndarray:
        a = np.asarray(a, dtype=float)
        if a.shape != self.shape:
            raise ValueError(f"{name} must have the shape of x0 {self.shape}; got {a.shape}")
        return a

    def step(self, x: np.ndarray, nxt: np.ndarray) -> None:
        """One projection ``x → nxt`` (the telescope trace sums the squared steps)."""
        if self.inv is not None:
            self.steps_sq += float(np.sum(np.square(nxt - x)))

    def record(self, z: np.ndarray, change: float) -> None:
        """The traces of the iterate ``z`` after a cycle whose mean change was ``change``."""
        tr = self.tr
        tr["change"].append(change)
        if self.resid is not None:
            tr.setdefault("mse", []).append(float(np.sum(np.square(self.resid(z)))) / self.mse_norm)
        if self.xt is not None:
            tr.setdefault("err", []).append(float(np.sqrt(np.sum(np.square(z - self.xt)) / self.err_norm)))
        if self.xr is not None:
            d = z - self.xr
            tr.setdefault("dist", []).append(float(np.linalg.norm(d.ravel())))
            tr.setdefault("dist_inf", []).append(float(np.max(np.abs(d))))
        if self.inv is not None:
            p1, p2 = self.inv
            fe = float(np.sum(np.square(z - p1)))
            tr.setdefault("fejer", []).append(fe)
            tr.setdefault("telescope", []).append(self.fe0 - fe - self.steps_sq)
            tr.setdefault("inner", []).append(float(np.vdot(p1 - p2, z - p2)))
        for name, fn in self.metrics.items():
            tr.setdefault(name, []).append(float(fn(z)))

    def trace(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(v) for k, v in self.tr.items()}
