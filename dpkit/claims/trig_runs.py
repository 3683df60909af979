"""The runs behind notebook ``55_trig_rates``'s rate checks: the full-grid trigonometric mechanism (thesis Alg 4/5)
released over a range of n, each release scored on a Gaussian-kernel workload and, with ``supremum_seed``, on the
whole query class (:mod:`dpkit.queries.supremum`); and the five error sources of (2.5) switched off one by one.
:mod:`dpkit.claims.trig_rates` fits and checks them.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

from dpkit.claims.streams import Streams
from dpkit.claims.trig_sensitivity import (  # noqa: F401 - re-exported
    SCAN_CONFIGS_FULL,
    SCAN_CONFIGS_QUICK,
    SensitivityScanRow,
    grid_pair_scan,
    sensitivity_scan,
)
from dpkit.core.rng import RNGLike
from dpkit.core.validation import check_positive_finite, check_positive_int
from dpkit.mechanisms.trig.mechanisms import TrigDiagnostics, TrigonometricMechanism
from dpkit.queries.evaluate import answer_reference
from dpkit.queries.release import Release
from dpkit.queries.supremum import certify_supremum, class_supremum
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["TrigStreams", "RateRun", "SupremumRow", "SlopeFit", "MomentPrivacyRow", "ErrorTerm", "claimed_exponent",
           "SUPREMUM_MAX_BOXES", "SUPREMUM_RTOL", "rate_runs", "error_terms"]


@dataclass(frozen=True)
class TrigStreams(Streams):
    """The notebook's streams: data sets, workloads, mechanism coins (shared by :func:`rate_runs` then :func:`error_terms`)."""

    data: np.random.Generator
    work: np.random.Generator
    mech: np.random.Generator


@dataclass(frozen=True)
class RateRun:
    """One mechanism run of :func:`rate_runs` (a table row).

    The ``sup_*`` fields (None unless :func:`rate_runs` got ``supremum_seed``) describe the error of the worst query
    of the whole class (2.1), centres anywhere in R^d (``domain="space"`` of :mod:`dpkit.queries.supremum`):
    ``sup_search`` is :func:`~dpkit.queries.supremum.class_supremum`'s certified lower bound; for d ≤ 2
    ``sup_lower``/``sup_upper`` are :func:`~dpkit.queries.supremum.certify_supremum`'s proven interval (``sup_upper``
    the bound over the boxes still open if ``sup_closed`` is False: valid, but looser than the target gap),
    ``sup_boxes`` the boxes it evaluated; for d > 2 ``sup_lower = sup_search`` and ``sup_upper`` is None.
    """

    d: int
    n: int
    mechanism: str
    rep: int
    t: int
    N: int
    m: int
    worst_error: float
    lp_time: float
    support: int
    basis: int
    size_ok: bool
    sup_search: float | None = None
    sup_lower: float | None = None
    sup_upper: float | None = None
    sup_closed: bool | None = None
    sup_boxes: int | None = None

    @property
    def supremum(self) -> float:
        """The class supremum the rate check uses: the certified upper end ``sup_upper`` if there is one, else ``sup_lower``."""
        if self.sup_lower is None:
            raise ValueError(f"run d={self.d}, n={self.n}, mechanism {self.mechanism}, rep {self.rep} has no class supremum; "
                             "pass supremum_seed to rate_runs")
        return self.sup_lower if self.sup_upper is None else self.sup_upper


@dataclass(frozen=True)
class SupremumRow:
    """Medians over the repetitions of one (d, mechanism, n) of :func:`rate_runs` (:func:`supremum_table`)."""

    d: int
    mechanism: str
    n: int
    reps: int
    worst_error: float
    sup_lower: float
    supremum: float
    ratio: float
    all_closed: bool


@dataclass(frozen=True)
class SlopeFit:
    """A fitted log–log slope in n and the exponent the theorem claims (``mechanism`` "I", "II" or "I (LP time)")."""

    d: int
    mechanism: str
    slope: float
    se: float
    claimed: float
    n_points: int


@dataclass(frozen=True)
class MomentPrivacyRow:
    """Exact sensitivity and worst-case privacy loss of the Alg 4 moment release for one (d, constants)."""

    d: int
    t: int
    N: int
    R: int
    constants: str
    exact_l1: float
    bound_l1: float
    scale: float
    eps_exact: float



@dataclass(frozen=True)
class ErrorTerm:
    """Median worst-case error of one variant of :func:`error_terms`."""

    variant: str
    median_worst_error: float


def claimed_exponent(d: int, mechanism: str, K: float) -> float:
    """Rate exponent of the worst-case error in n: ``−K/(2d+K)`` (Thm 2.4 (2), I), ``−2K/(3d+2K)`` (Thm 2.5 (2), II)."""
    if mechanism not in ("I", "II"):
        raise ValueError(f"mechanism must be 'I' or 'II'; got {mechanism!r}")
    return -K / (2 * d + K) if mechanism == "I" else -2 * K / (3 * d + 2 * K)


def _workload(d: int, n_queries: int, J: int, sigma: float, rng: np.random.Generator) -> GaussianKernelWorkload:
    # The draws of GaussianKernelWorkload.generate, without its renormalisation of α (so the numbers match bit for bit).
    centres, alphas = rng.uniform(-1, 1, (n_queries, J, d)), rng.dirichlet(np.ones(J), n_queries)
    return GaussianKernelWorkload(centres=centres, alphas=alphas, sigma=sigma)


def _data(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    return np.clip(rng.normal(0.2, 0.4, (n, d)), -1, 1)


def _errors(workload: GaussianKernelWorkload, res: Release[TrigDiagnostics], truth: np.ndarray) -> np.ndarray:
    return np.abs(answer_reference(workload, res.synthetic.points, res.synthetic.weights) - truth)


def _worst_error(workload: GaussianKernelWorkload, res: Release[TrigDiagnostics], truth: np.ndarray) -> float:
    return float(_errors(workload, res, truth).max())


#: Boxes :func:`~dpkit.queries.supremum.certify_supremum` may evaluate per release in :func:`rate_runs` (d ≤ 2), and
#: its relative target gap, with no absolute floor: the supremum falls to ~10⁻⁵ at n = 10⁵, where the default floor
#: 10⁻⁶ would be a 10 % gap. At SEED = 0 every release of notebook 55 closes the gap: QUICK (24 releases) within
#: 10⁵ boxes, full sizes (70 releases) within 2.6·10⁵ (the most at d = 2, n = 30,000); the budget leaves a margin.
#: A release that does not close records the bound over the open boxes (valid, looser) and ``sup_closed`` False.
SUPREMUM_MAX_BOXES = 600_000
SUPREMUM_RTOL = 1e-3
_SUPREMUM_KEY = zlib.crc32(b"supremum")


def _supremum_fields(X: np.ndarray, res: Release[TrigDiagnostics], sigma: float, errors: np.ndarray,
                     workload: GaussianKernelWorkload, rng: np.random.Generator) -> dict[str, float | int | bool | None]:
    """The ``sup_*`` fields of :class:`RateRun` for one release (the search also starts from the workload's worst centres)."""
    d, J = X.shape[1], workload.centres.shape[1]
    # the data side exactly at every size: each run draws its own data, so a low-rank embedding would be fitted
    # for one search only (the fit, O(n²), costs more than the exact search)
    found = class_supremum(X, res.synthetic, sigma, rng=rng, domain="space",
                           workload_centres=workload.centres.reshape(-1, d), workload_scores=np.repeat(errors, J),
                           lowrank_above=None)
    lower = float(found.sup_abs) - float(found.numerical_bound)
    if d > 2:
        return dict(sup_search=lower, sup_lower=lower, sup_upper=None, sup_closed=None, sup_boxes=None)
    iv = certify_supremum(X, res.synthetic, sigma, initial=found, domain="space", max_boxes=SUPREMUM_MAX_BOXES,
                          rtol=SUPREMUM_RTOL, atol=0.0)
    return dict(sup_search=lower, sup_lower=iv.lower, sup_upper=iv.unfinished_upper, sup_closed=iv.finished,
                sup_boxes=iv.n_boxes)


def rate_runs(
    *,
    ns_d1: list[int],
    ns_d2: list[int],
    reps: int,
    n_queries: int,
    J: int,
    epsilon: float,
    delta: float,
    sigma: float,
    rng: TrigStreams | RNGLike,
    supremum_seed: int | None = None,
) -> tuple[RateRun, ...]:
    """Worst-case error, LP time and sizes of mechanism I (d = 1, 2) and II (d = 1) for each n.

    For each d one workload of ``n_queries`` queries (2.1) with ``J`` centres and width σ
    (K = σ²); for each n one data set ``clip(N(0.2, 0.4²))`` in [-1, 1]^d; ``reps`` runs per
    mechanism vary only the mechanism's coins.

    With ``supremum_seed`` every run also records the class supremum of its release (the ``sup_*`` fields of
    :class:`RateRun`): the whole class (2.1), centres anywhere (``domain="space"``, the search box from the
    localisation lemma of :mod:`dpkit.queries.supremum`); for d ≤ 2 the certified interval of
    :func:`~dpkit.queries.supremum.certify_supremum` (budget :data:`SUPREMUM_MAX_BOXES` boxes, relative gap
    :data:`SUPREMUM_RTOL`). The search draws from its own stream per run,
    ``SeedSequence([crc32("supremum"), supremum_seed, d, n, 1 or 2 (mechanism I or II), rep])``, never from ``rng``:
    every other number is the same with or without it.
    """
    sigma = check_positive_finite(sigma, name="sigma")
    reps, n_queries, J = (check_positive_int(v, name=k) for k, v in (("reps", reps), ("n_queries", n_queries), ("J", J)))
    s = TrigStreams.resolve(rng)
    K = sigma**2
    runs: list[RateRun] = []
    for d, ns in ((1, ns_d1), (2, ns_d2)):
        workload = _workload(d, n_queries, J, sigma, s.work)
        for n in ns:
            X = _data(n, d, s.data)  # one data set per n; the repetitions vary the mechanism's coins
            truth = answer_reference(workload, X)
            for dl in (0.0, delta):
                if dl > 0 and d == 2:
                    continue
                for r in range(reps):
                    res = TrigonometricMechanism(epsilon=epsilon, delta=dl, K=K).release(X, rng=s.mech)
                    errors = _errors(workload, res, truth)
                    sup = {} if supremum_seed is None else _supremum_fields(
                        X, res, sigma, errors, workload,
                        np.random.default_rng(np.random.SeedSequence([_SUPREMUM_KEY, supremum_seed, d, n, 2 if dl else 1, r])))
                    runs.append(RateRun(
                        d=d, n=n, mechanism="II" if dl else "I", rep=r, t=res.params["t"], N=res.params["N"], m=res.params["m"],
                        worst_error=float(errors.max()), lp_time=res.timings["lp"],
                        support=res.diagnostics.lp_database.support_size, basis=res.params["R"],
                        size_ok=int(res.synthetic.multiplicities().sum()) == res.params["m"], **sup))
    return tuple(runs)


def error_terms(
    *, n: int, reps: int, n_queries: int, J: int, epsilon: float, sigma: float, rng: TrigStreams | RNGLike
) -> tuple[ErrorTerm, ...]:
    """The error sources of (2.5) isolated by switching them off one by one (d = 1, mechanism I).

    Variants: all sources; no noise (ε = ∞); no noise and no sampling (the LP weights as D̂);
    then a finer grid (4N), lattice rounding of the weights, a richer basis (2t). Median over
    ``reps`` runs of the worst-case error over the workload.
    """
    sigma = check_positive_finite(sigma, name="sigma")
    reps, n_queries, J = (check_positive_int(v, name=k) for k, v in (("reps", reps), ("n_queries", n_queries), ("J", J)))
    s = TrigStreams.resolve(rng)
    d, K = 1, sigma**2
    X = _data(n, d, s.data)
    workload = _workload(d, n_queries, J, sigma, s.work)
    truth = answer_reference(workload, X)
    base = TrigonometricMechanism(epsilon=epsilon, K=K).schedule(n, d)
    variants = {
        "all sources": dict(epsilon=epsilon),
        "no noise (ε = ∞)": dict(epsilon=math.inf),
        "no noise, no sampling": dict(epsilon=math.inf, output="weights"),
        "no noise, no sampling, finer grid (4N)": dict(epsilon=math.inf, output="weights", N=4 * base.N),
        "no noise, no sampling, + lattice rounding": dict(epsilon=math.inf, output="weights", lattice=True),
        "no noise, no sampling, richer basis (2t)": dict(epsilon=math.inf, output="weights", t=2 * base.t),
    }
    out: list[ErrorTerm] = []
    for name, kw in variants.items():
        errs = [_worst_error(workload, TrigonometricMechanism(K=K, **kw).release(X, rng=s.mech), truth) for _ in range(reps)]
        out.append(ErrorTerm(variant=name, median_worst_error=float(np.median(errs))))
    return tuple(out)
