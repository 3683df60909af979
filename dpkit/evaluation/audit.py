"""Empirical privacy auditor: a Clopper–Pearson lower bound on ε from threshold events (thesis Def 2).

Given a mechanism ``M``, neighbouring inputs ``d0, d1`` and a scalar statistic ``s`` of the output, :func:`audit`
looks for an event ``E`` with ``P(M(d_a) ∈ E) > e^ε P(M(d_b) ∈ E) + δ``, which contradicts (ε, δ)-DP
(docs/science/foundations.md, *The audit protocol*):

1. Draw ``n_samples`` outputs per side on independent streams, split into a selection and an estimation half.
2. Candidate events ``{s > τ}``, ``{s < τ}`` (and ``{s = τ}`` for few distinct values), τ on quantiles of the pooled
   selection statistic, in both directions.
3. Keep the candidate with the best lower bound on the selection half.
4. On the estimation half, one-sided Clopper–Pearson bounds at level ``1 − (1 − confidence)/2`` give
   ``ε_lb = ln((p_lo − δ)/p_hi)`` (0 if ``p_lo ≤ δ``).

Guarantee: a correct (ε, δ)-DP mechanism is flagged (``ε_lb > ε``) with probability at most ``1 − confidence``. The
auditor can only falsify a privacy claim, never certify one.
"""
from __future__ import annotations

import inspect
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from dpkit.core.rng import RNGLike, spawn
from dpkit.core.validation import check_delta, check_int_in_range, check_positive_int, check_probability
from dpkit.mechanisms.base import Mechanism

__all__ = ["AuditResult", "audit", "audit_candidates", "clopper_pearson_lower", "clopper_pearson_upper",
           "scalar_releaser"]


def clopper_pearson_lower(k: ArrayLike, n: ArrayLike, level: float) -> np.ndarray:
    """One-sided Clopper–Pearson lower bound: ``P(p ≥ lower) ≥ level``. (0 when k = 0.)"""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        lo = stats.beta.ppf(1.0 - level, k, n - k + 1.0)
    return np.where(k <= 0, 0.0, np.nan_to_num(lo, nan=0.0))


def clopper_pearson_upper(k: ArrayLike, n: ArrayLike, level: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound: ``P(p ≤ upper) ≥ level``. (1 when k = n.)"""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        hi = stats.beta.ppf(level, k + 1.0, n - k)
    return np.where(k >= n, 1.0, np.nan_to_num(hi, nan=1.0))


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`.

    Attributes
    ----------
    epsilon_lb : float
        Lower bound on ε holding with probability ≥ ``confidence`` (≥ 0).
    event : dict
        The event: ``{"kind": ">"|"<"|"==", "threshold": τ, "direction": "d0 vs d1"|"d1 vs d0"}``;
        the direction names ``a vs b`` in ``P(M(d_a) ∈ E) ≤ e^ε P(M(d_b) ∈ E) + δ``.
    n_samples : int
        Draws per side (half for selection, half for estimation).
    confidence : float
    p0_hat, p1_hat : float
        Empirical probabilities of the event under d0 and d1 (estimation half).
    p_lower, p_upper : float
        The Clopper–Pearson bounds used (``p_a ≥ p_lower``, ``p_b ≤ p_upper``).
    epsilon_point : float
        The plug-in ``ln((p̂_a − δ)/p̂_b)`` on the estimation half (for tightness).
    selection_epsilon_lb : float
        The chosen event's bound on the selection half (optimistically biased; for reference).
    delta : float
    n_events : int
        Number of candidate events compared on the selection half.
    elapsed_s : float
        Wall time of the call.
    """

    epsilon_lb: float
    event: dict[str, Any]
    n_samples: int
    confidence: float
    p0_hat: float
    p1_hat: float
    p_lower: float
    p_upper: float
    epsilon_point: float
    selection_epsilon_lb: float
    delta: float
    n_events: int
    elapsed_s: float
    meta: dict[str, Any] = field(default_factory=dict)

    def flags(self, epsilon: float) -> bool:
        """True if the audit contradicts an ε claim (``epsilon_lb > epsilon``)."""
        return self.epsilon_lb > float(epsilon)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _accepts_size(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "size" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _draw(mechanism_fn: Callable[..., Any], db: Any, n: int, rng: np.random.Generator, vectorised: bool) -> np.ndarray:
    if vectorised:
        out = np.asarray(mechanism_fn(db, rng, size=n))
        if out.ndim == 0 or out.shape[0] != n:
            raise ValueError(
                f"mechanism_fn(database, rng, size={n}) must return an array whose first dimension is {n}; "
                f"got shape {out.shape}"
            )
        return out
    return np.asarray([mechanism_fn(db, rng) for _ in range(n)])


def _apply_statistic(statistic: Callable[[Any], Any] | None, out: np.ndarray) -> np.ndarray:
    n = out.shape[0]
    if statistic is None:
        if out.ndim == 1 or (out.ndim == 2 and out.shape[1] == 1):
            s = out.reshape(n)
        else:
            raise ValueError(
                f"outputs have shape {out.shape[1:]} per draw; pass statistic= mapping an output to a scalar"
            )
    else:
        try:
            s = np.asarray(statistic(out), dtype=float)
        except Exception:  # statistic written for one output only
            s = None
        if s is None or s.shape != (n,):
            s = np.asarray([statistic(o) for o in out], dtype=float)
    s = np.asarray(s, dtype=float)
    if s.shape != (n,) or not np.all(np.isfinite(s)):
        raise ValueError("statistic must map each output to one finite real number")
    return s


def _counts(sorted_s: np.ndarray, taus: np.ndarray) -> dict[str, np.ndarray]:
    n = sorted_s.size
    left = np.searchsorted(sorted_s, taus, side="left")
    right = np.searchsorted(sorted_s, taus, side="right")
    return {">": n - right, "<": left, "==": right - left}


def _eps_lb(ka: np.ndarray, kb: np.ndarray, n: int, level: float, delta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lo = clopper_pearson_lower(ka, n, level)
    hi = clopper_pearson_upper(kb, n, level)
    num = lo - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(num > 0, np.log(np.maximum(num, 1e-300) / hi), 0.0)
    return np.maximum(e, 0.0), lo, hi


def audit(
    mechanism_fn: Callable[..., Any],
    d0: Any,
    d1: Any,
    *,
    statistic: Callable[[Any], Any] | None = None,
    n_samples: int = 100_000,
    confidence: float = 0.95,
    delta: float = 0.0,
    rng: RNGLike = None,
    n_thresholds: int = 128,
    tol: float | None = 1e-9,
) -> AuditResult:
    """Empirical lower bound on the ε of ``mechanism_fn`` on the neighbours ``(d0, d1)``.

    Parameters
    ----------
    mechanism_fn : callable
        ``mechanism_fn(database, rng)`` → one output (scalar or array). If it accepts a keyword
        ``size`` it is called once per sample as ``mechanism_fn(database, rng, size=n)`` and must
        return ``n`` outputs stacked along axis 0 (fast path).
    d0, d1 : any
        The neighbouring inputs, passed through to ``mechanism_fn``.
    statistic : callable, optional
        Maps outputs to a real number. It is first tried on the stacked array of outputs
        (vectorised, must return shape ``(n,)``), else applied per output. Default: the output
        itself (scalar outputs only).
    n_samples : int, default 100 000
        Draws per side, ≥ 20; half select the event, half estimate it.
    confidence : float, default 0.95
        Joint confidence of the two Clopper–Pearson bounds.
    delta : float, default 0
        The δ of the claim being audited (subtracted: ``ln((p_lo − δ)/p_hi)``).
    rng : int, Generator, SeedSequence or None
        Seed of the four independent streams (selection/estimation × d0/d1).
    n_thresholds : int, default 128
        Number of candidate thresholds (quantiles of the pooled selection statistic).
    tol : float or None, default 1e-9
        Statistic values are snapped to the grid ``tol·ℤ`` before events are formed, so values
        that differ only by floating-point round-off count as equal. Without it an atom of the
        output law (e.g. a clipped output) computed as 0.7243852634450137 on one side and
        0.7243852634450132 on the other is split by a threshold between the two, one side gets
        probability 0 and a *correct* mechanism is "refuted". ``None`` disables snapping
        (for statistics whose meaningful differences are below ``tol``).

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> def lap(db, rng, size=None):
    ...     return db + rng.laplace(0.0, 1.0, size=size)
    >>> res = audit(lap, 0.0, 1.0, n_samples=20_000, rng=0)
    >>> res.flags(1.0)
    False
    """
    t0 = time.perf_counter()
    n, conf, dl, T = _check_audit_args(mechanism_fn, statistic, n_samples, confidence, delta, n_thresholds, tol)
    n_sel = n // 2
    n_est = n - n_sel
    g_sel0, g_sel1, g_est0, g_est1 = spawn(rng, 4)
    vec = _accepts_size(mechanism_fn)

    def stat(db: Any, m: int, g: np.random.Generator) -> np.ndarray:
        values = _apply_statistic(statistic, _draw(mechanism_fn, db, m, g, vec))
        if tol is not None:
            values = np.round(values / tol) * tol
        return np.sort(values)

    level = 1.0 - (1.0 - conf) / 2.0  # Bonferroni over the two one-sided bounds
    sel_lb, (kind, a, b, tau), n_events, discrete = _select_event(
        (stat(d0, n_sel, g_sel0), stat(d1, n_sel, g_sel1)), T, level, dl)
    est = _estimate((stat(d0, n_est, g_est0), stat(d1, n_est, g_est1)), kind, a, b, tau, level, dl)
    return AuditResult(
        **est, n_samples=n, confidence=conf, selection_epsilon_lb=sel_lb, delta=dl, n_events=n_events,
        elapsed_s=time.perf_counter() - t0,
        meta={"n_selection": n_sel, "n_estimation": n_est, "vectorised": vec, "discrete": discrete, "tol": tol},
    )


def audit_candidates(
    mechanism_fn: Callable[[Any, np.random.Generator], ArrayLike],
    d0: Any,
    d1: Any,
    *,
    n_samples: int = 100_000,
    confidence: float = 0.95,
    delta: float = 0.0,
    rng: RNGLike = None,
    n_thresholds: int = 128,
    tol: float | None = 1e-9,
) -> AuditResult:
    """:func:`audit` with several candidate statistics: the selection half chooses the statistic as well as the event.

    ``mechanism_fn(database, rng)`` returns ``K`` real numbers per draw (``K`` candidate statistics of one output,
    the same ``K`` on every draw). On the selection half the candidate that separates the two sides best is kept
    (mean difference over the pooled standard deviation: estimated on thousands of draws it is far less noisy than
    the bound of a tail event, so many candidates cost little power to the winner's curse), and its best event is
    found as in :func:`audit` (steps 2–3); the estimation half, drawn independently, evaluates only that event
    (step 4). The choice of statistic, like that of the event, is made on draws
    independent of the estimate, so the guarantee is :func:`audit`'s: **a correct mechanism is flagged with
    probability at most 1 − confidence**, whatever ``K``. ``meta["candidate"]`` is the index chosen. The parameters
    are :func:`audit`'s (``mechanism_fn`` is called once per draw, and there is no ``statistic``).

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> def two(db, rng):
    ...     y = db + rng.laplace(0.0, 1.0)
    ...     return [y, rng.normal()]  # the second candidate carries nothing
    >>> res = audit_candidates(two, 0.0, 1.0, n_samples=4000, rng=0)
    >>> res.meta["candidate"], res.flags(1.0)
    (0, False)
    """
    t0 = time.perf_counter()
    n, conf, dl, T = _check_audit_args(mechanism_fn, None, n_samples, confidence, delta, n_thresholds, tol)
    n_sel = n // 2
    n_est = n - n_sel
    g_sel0, g_sel1, g_est0, g_est1 = spawn(rng, 4)

    def draws(db: Any, m: int, g: np.random.Generator) -> np.ndarray:
        out = np.asarray([np.asarray(mechanism_fn(db, g), dtype=float).ravel() for _ in range(m)])
        if out.ndim != 2 or not np.all(np.isfinite(out)):
            raise ValueError("mechanism_fn must return the same number of finite candidate statistics on every draw")
        return np.round(out / tol) * tol if tol is not None else out

    level = 1.0 - (1.0 - conf) / 2.0  # Bonferroni over the two one-sided bounds
    sel = (draws(d0, n_sel, g_sel0), draws(d1, n_sel, g_sel1))
    if sel[0].shape[1] != sel[1].shape[1]:
        raise ValueError("mechanism_fn must return the same number of candidate statistics on both data sets")
    shift = np.abs(sel[0].mean(axis=0) - sel[1].mean(axis=0))
    sd = np.sqrt(0.5 * (sel[0].var(axis=0) + sel[1].var(axis=0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        separation = np.where(sd > 0, shift / np.where(sd > 0, sd, 1.0), np.where(shift > 0, np.inf, 0.0))
    k = int(np.argmax(separation))
    sel_lb, (kind, a, b, tau), n_events, discrete = _select_event((np.sort(sel[0][:, k]), np.sort(sel[1][:, k])), T,
                                                                  level, dl)
    est = (draws(d0, n_est, g_est0)[:, k], draws(d1, n_est, g_est1)[:, k])
    result = _estimate((np.sort(est[0]), np.sort(est[1])), kind, a, b, tau, level, dl)
    return AuditResult(
        **result, n_samples=n, confidence=conf, selection_epsilon_lb=sel_lb, delta=dl,
        n_events=n_events, elapsed_s=time.perf_counter() - t0,
        meta={"n_selection": n_sel, "n_estimation": n_est, "vectorised": False, "discrete": discrete, "tol": tol,
              "candidate": k, "candidates": int(sel[0].shape[1])},
    )


def _check_audit_args(mechanism_fn: Callable[..., Any], statistic: Callable[[Any], Any] | None, n_samples: int,
                      confidence: float, delta: float, n_thresholds: int, tol: float | None) -> tuple[int, float, float, int]:
    """The validated ``(n_samples, confidence, delta, n_thresholds)``; errors name the argument."""
    if not callable(mechanism_fn):
        raise TypeError("mechanism_fn must be callable as mechanism_fn(database, rng)")
    n = check_int_in_range(n_samples, name="n_samples", low=20)
    conf = check_probability(confidence, name="confidence")
    dl = check_delta(delta, name="delta")
    T = check_positive_int(n_thresholds, name="n_thresholds")
    if statistic is not None and not callable(statistic):
        raise TypeError("statistic must be callable or None")
    if tol is not None and not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite number > 0 or None; got {tol!r}")
    return n, conf, dl, T


def _select_event(
    sel: tuple[np.ndarray, np.ndarray], T: int, level: float, dl: float
) -> tuple[float, tuple[str, int, int, float], int, bool]:
    """Steps 2–3: the candidate event with the best lower bound on the (sorted) selection statistics.

    Returns ``(bound, (kind, a, b, τ), number of events compared, discrete)``.
    """
    n_sel = sel[0].size
    pooled = np.concatenate(sel)
    uniq = np.unique(pooled)
    discrete = uniq.size <= T
    taus = uniq if discrete else np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, T + 2)[1:-1]))
    kinds = (">", "<", "==") if discrete else (">", "<")
    c_sel = (_counts(sel[0], taus), _counts(sel[1], taus))
    best = (-1.0, None)
    n_events = 0
    for kind in kinds:
        for a, b in ((0, 1), (1, 0)):
            e, _, _ = _eps_lb(c_sel[a][kind], c_sel[b][kind], n_sel, level, dl)
            # ties: prefer the event with larger count under a (more stable)
            j = int(np.argmax(e))
            n_events += taus.size
            if e[j] > best[0]:
                best = (float(e[j]), (kind, a, b, float(taus[j])))
    return best[0], best[1], n_events, discrete  # type: ignore[return-value]


def _estimate(est: tuple[np.ndarray, np.ndarray], kind: str, a: int, b: int, tau: float, level: float,
              dl: float) -> dict[str, Any]:
    """Step 4: the chosen event on the (sorted) estimation statistics; the :class:`AuditResult` fields it sets."""
    n_est = est[0].size
    c_est = (_counts(est[0], np.array([tau])), _counts(est[1], np.array([tau])))
    ka, kb = c_est[a][kind], c_est[b][kind]
    e, lo, hi = _eps_lb(ka, kb, n_est, level, dl)
    p_hat = (float(c_est[0][kind][0]) / n_est, float(c_est[1][kind][0]) / n_est)
    pa, pb = p_hat[a], p_hat[b]
    with np.errstate(divide="ignore"):
        point = math.log((pa - dl) / pb) if pa - dl > 0 and pb > 0 else (math.inf if pa - dl > 0 else 0.0)
    return {
        "epsilon_lb": float(e[0]),
        "event": {"kind": kind, "threshold": tau, "direction": f"d{a} vs d{b}"},
        "p0_hat": p_hat[0],
        "p1_hat": p_hat[1],
        "p_lower": float(lo[0]),
        "p_upper": float(hi[0]),
        "epsilon_point": point,
    }


def scalar_releaser(
    mechanism: Mechanism, post: Callable[[np.ndarray], np.ndarray] | None = None
) -> Callable[..., np.ndarray]:
    """A vectorised ``mechanism_fn`` for :func:`audit`: ``size`` releases of a scalar query value.

    The database handed to the returned function is the query value itself (a number), so the
    neighbours of the audit are two values ``f(D), f(D')`` at distance ≤ the sensitivity. One call
    releases ``np.full(size, f(D))`` in one draw of ``mechanism.release`` (one coordinate per
    sample), then applies ``post`` (a post-processing map, thesis Prop 1.1) if given.

    Parameters
    ----------
    mechanism : Mechanism
        Anything with ``release(values, *, rng)`` adding independent noise per coordinate
        (e.g. :class:`~dpkit.mechanisms.laplace.Laplace`, :class:`~dpkit.mechanisms.gaussian.Gaussian`).
    post : callable, optional
        Element-wise map applied to the releases.

    Examples
    --------
    >>> from dpkit.mechanisms.laplace import Laplace
    >>> res = audit(scalar_releaser(Laplace(epsilon=1.0, sensitivity=1.0)), 0.0, 1.0, n_samples=20_000, rng=0)
    >>> res.flags(1.0)
    False
    """
    if not callable(getattr(mechanism, "release", None)):
        raise TypeError(f"mechanism must have a release(values, *, rng) method; got {type(mechanism).__name__}")
    if post is not None and not callable(post):
        raise TypeError("post must be callable or None")

    def release(db: float, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        y = mechanism.release(np.full(size or 1, float(db)), rng=rng)  # type: ignore[attr-defined]
        return y if post is None else post(y)

    return release
