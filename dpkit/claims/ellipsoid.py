"""Claims on uniform sampling in an ellipsoid (thesis Alg 8, ``ellrnd``) and its erratum.

Notebook ``57_ellipsoid`` calls these functions. :func:`sampler_tests` tests the radius law, the direction law and
the polar-cap share of each sampler (Bonferroni within a sampler); the checks say every point lies in the ellipsoid,
the Gaussian-direction sampler passes, the printed radius and the printed k = 2 case are right, and the printed
angles for k ≥ 3 are not uniform directions (negative control, an erratum). The tests: docs/science/derivations.md.
"""
from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
from scipy import stats

from dpkit.claims.results import NotebookRecorder, NotebookRun
from dpkit.claims.streams import Streams
from dpkit.core.rng import RNGLike
from dpkit.core.validation import check_seed
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check
from dpkit.mechanisms.ellipsoid import sample_ellipsoid

__all__ = [
    "EllipsoidStreams",
    "SamplerTest",
    "SamplerScatter",
    "sampler_tests",
    "containment_check",
    "correct_sampler_check",
    "printed_radius_check",
    "printed_k2_check",
    "printed_angles_check",
    "sampler_scatter",
    "notebook_checks",
]


@dataclass(frozen=True)
class EllipsoidStreams(Streams):
    """One stream per sampler (``method="uniform"``, ``method="thesis"``)."""

    uniform: np.random.Generator
    thesis: np.random.Generator


#: The sampler methods compared, one per field of :class:`EllipsoidStreams` (in spawn order).
METHODS = tuple(f.name for f in dataclasses.fields(EllipsoidStreams))


@dataclass(frozen=True)
class SamplerTest:
    """The three tests for one sampler and dimension k (p-values), the largest normalised radius and the cap shares."""

    method: str
    k: int
    max_norm: float
    p_radius: float
    p_direction: float
    p_cap: float
    cap_share: float
    cap_share_uniform: float


@dataclass(frozen=True, eq=False)
class SamplerScatter:
    """Points of both samplers in the unit ball (for the scatter figure)."""

    k: int
    uniform: np.ndarray
    thesis: np.ndarray


def sampler_tests(*, n_points: int, dims: list[int], cap: float, rng: EllipsoidStreams | RNGLike) -> tuple[SamplerTest, ...]:
    """Radius, direction and polar-cap tests of both samplers of Alg 8 for every k in ``dims``.

    Per k the semi-axes are ``linspace(0.5, 3, k)`` times a random factor in [0.5, 2] (the
    tests are on ``y = x/a``, so they hold for any axes); ``n_points`` points per (sampler, k).
    """
    s = EllipsoidStreams.resolve(rng)
    out: list[SamplerTest] = []
    for method in METHODS:
        g = getattr(s, method)
        for k in dims:
            axes = np.linspace(0.5, 3.0, k) * float(g.uniform(0.5, 2.0))
            y = sample_ellipsoid(n_points, axes, rng=g, method=method) / axes
            r = np.linalg.norm(y, axis=1)
            u1 = y[:, 0] / r
            direction = stats.beta(0.5, (k - 1) / 2)
            p_cap_true = 0.5 * direction.sf(cap**2)
            out.append(SamplerTest(
                method=method, k=k, max_norm=float(r.max()),
                p_radius=stats.kstest(r**k, "uniform").pvalue,
                p_direction=stats.kstest(u1**2, direction.cdf).pvalue,
                p_cap=stats.binomtest(int(np.sum(u1 > cap)), n_points, p_cap_true).pvalue,
                cap_share=float(np.mean(u1 > cap)), cap_share_uniform=p_cap_true))
    return tuple(out)


def _min_p(tests: tuple[SamplerTest, ...], method: str, fields: tuple[str, ...], ks: str = "all") -> tuple[float, int]:
    """Smallest p-value among ``fields`` of ``method``'s tests (k filtered by ``ks``: "all", "2" or ">=3") and G = 3·#k."""
    mine = [t for t in tests if t.method == method]
    chosen = [t for t in mine if ks == "all" or (ks == "2" and t.k == 2) or (ks == ">=3" and t.k >= 3)]
    if not chosen:
        raise ValueError(f"no {method!r} sampler tests with k {ks} (dims must include such k)")
    return float(min(getattr(t, f) for t in chosen for f in fields)), 3 * len(mine)


def containment_check(tests: tuple[SamplerTest, ...]) -> Check:
    """Alg 8: every sampled point satisfies ``Σ(x_i/a_i)² ≤ 1`` (statistic: largest ``‖x/a‖``, both samplers)."""
    return check("Alg 8 (containment)", "every point lies in the ellipsoid: max Σ(x_i/a_i)² ≤ 1 (both samplers)",
                 max(t.max_norm for t in tests), 1.0 + 1e-12, relation="<=")


def correct_sampler_check(tests: tuple[SamplerTest, ...], *, gamma: float = 1e-3) -> Check:
    """The Gaussian-direction sampler: radius, direction and cap tests all accept (min p ≥ γ/G)."""
    p, G = _min_p(tests, "uniform", ("p_radius", "p_direction", "p_cap"))
    return check("Alg 8 (correct sampler)",
                 "Gaussian-direction sampler: radius, direction and cap tests all accept (min p ≥ γ/G)",
                 p, gamma / G, relation=">=", confidence=1 - gamma)


def printed_radius_check(tests: tuple[SamplerTest, ...], *, gamma: float = 1e-3) -> Check:
    """The printed sampler's radius ``Beta(k, 1)`` is the uniform-ball radius law (KS, min p ≥ γ/G)."""
    p, G = _min_p(tests, "thesis", ("p_radius",))
    return check("Alg 8 (printed radius)", "printed sampler: radius Beta(k, 1) is the uniform-ball radius law (KS, min p ≥ γ/G)",
                 p, gamma / G, relation=">=", confidence=1 - gamma)


def printed_k2_check(tests: tuple[SamplerTest, ...], *, gamma: float = 1e-3) -> Check:
    """For k = 2 the printed sampler's single angle is uniform: direction and cap tests accept."""
    p, G = _min_p(tests, "thesis", ("p_direction", "p_cap"), ks="2")
    return check("Alg 8 (printed, k = 2)", "printed sampler is uniform for k = 2 (direction and cap tests accept)",
                 p, gamma / G, relation=">=", confidence=1 - gamma)


def printed_angles_check(tests: tuple[SamplerTest, ...], *, gamma: float = 1e-3) -> Check:
    """Negative control: the printed uniform-angle sampler has uniform directions for k ≥ 3 (expected FAIL)."""
    p, G = _min_p(tests, "thesis", ("p_direction", "p_cap"), ks=">=3")
    return check("Alg 8 (printed angles, k ≥ 3)",
                 "printed uniform-angle sampler has uniform directions for k ≥ 3 (min p of direction/cap tests ≥ γ/G)",
                 p, gamma / G, relation=">=", confidence=1 - gamma, expected="FAIL",
                 note="erratum: uniform hyperspherical angles are not uniform on the sphere")


def sampler_scatter(*, n_points: int = 3000, k: int = 3, seed: int) -> SamplerScatter:
    """``n_points`` points of each sampler in the unit ball of R^k, each drawn with a fresh generator seeded by ``seed``."""
    pts = {m: sample_ellipsoid(n_points, np.ones(k), rng=seed, method=m) for m in METHODS}
    return SamplerScatter(k=k, uniform=pts["uniform"], thesis=pts["thesis"])


def notebook_checks(seed: int, quick: bool, false_alarm: float, *, n_points: int, dims: Sequence[int], cap: float) -> NotebookRun:
    """Every check and table row of notebook 57 (``57_ellipsoid``) run with these parameters.

    The notebook's parameters in lower case; ``quick`` applies its QUICK sizes. One stream per sampler
    (:class:`EllipsoidStreams`, from ``seed``); the budget ``false_alarm`` is split over the three checks expected to
    pass. ``parts``: ``tests`` (the sampler tests).
    """
    seed = check_seed(seed)
    if quick:
        n_points, dims = 20000, [2, 3, 5]
    params = dict(SEED=seed, QUICK=quick, N_POINTS=n_points, DIMS=dims, CAP=cap, FALSE_ALARM=false_alarm)
    streams = EllipsoidStreams.from_seed(seed)  # one stream per sampler
    budget = FalseAlarmBudget(false_alarm, n_tests=3)  # the correct sampler, the printed radius, the printed k = 2
    gamma = budget.level  # the per-test level of every statistical check (negative controls too)
    out = NotebookRecorder()
    tests = sampler_tests(n_points=n_points, dims=dims, cap=cap, rng=streams)
    for r in tests:
        out.row(**asdict(r))
    out.add(containment_check(tests))
    out.add(correct_sampler_check(tests, gamma=gamma))
    out.add(printed_radius_check(tests, gamma=gamma))
    out.add(printed_k2_check(tests, gamma=gamma))
    out.add(printed_angles_check(tests, gamma=gamma))
    return out.finish(params, budget, tests=tests)
