"""The audit gate of the open board: the empirical auditor tries to refute a method's privacy claim before it is ranked.

:func:`audit_gate` runs :func:`dpkit.evaluation.audit.audit` (Clopper–Pearson lower bound ε_lb on ε from a
threshold event on one scalar statistic) on the method's **released statistics** at the sizes of the board's
data sets, on worst-case neighbours, and reports a :class:`GateResult`. The method is **refuted** when
``ε_lb > ε`` (the claimed ε); otherwise it **passes**.

What is audited (a *probe*: a function of the data and a random generator returning a release):

1. ``method.audit_steps()`` where the method defines it (a hook: ``{step name: f(X, rng)}``, the private
   measurement of each step, e.g. the Gaussian-fit candidates of MWEM); all steps are run on independent
   streams and audited jointly (one output per draw holding every step's release);
2. else ``method.measure(X, rng=...)`` where the method overrides the template hook of
   :class:`~dpkit.queries.release.MethodBase` (the statistics :meth:`~dpkit.queries.release.MethodBase.release`
   post-processes into the synthetic database; cheaper than a release: no synthesis);
3. else the whole ``method.release(X, rng=...)``: its answers, its diagnostics and a summary of the synthetic
   database (weighted mean, weighted kernel mass at the two values of the differing row).

A method's privacy proof covers each probe's output (the measurements; the synthetic database is their
post-processing), so an (ε, δ)-DP claim holds for it. ``steps=`` names the probe explicitly (``"steps"``,
``"measure"`` or ``"release"``).

Neighbours (:func:`~dpkit.evaluation.gate_pilot.neighbour_pairs`): ``n − 1`` background rows (the centre of the cube
unless ``background`` is given, e.g. rows of a real data set) and one differing row: under **replace-one** (the
default, and every dpkit method's relation; a method may state another in a ``neighbouring`` attribute) the row
moves between opposite corners of [-1, 1]^d (the worst case of every count and mean, monotone in each coordinate) or
from the corner (1, …, 1) to the corner with its first ⌈3d/4⌉ coordinates flipped (the worst case of second moments
x xᵀ jointly with the mean); under **add/remove** one data set has the corner row and the other lacks it.

Statistic (chosen on a pilot, never on the audit's draws): every numeric leaf of the release (arrays, numbers,
found in dataclasses, mappings and sequences; one leaf per path and size) is a coordinate. For each pair, ``n_pilot``
draws on both data sets with **common random numbers** (the same stream on both sides) give the mean shift Δ of
every leaf (exactly the difference of the noise-free statistics for additive noise); each leaf is projected on
its Δ (a leaf is kept where its shift is clear on the pilot; where some leaves are additive noise on a statistic
of the data, i.e. their differences do not vary, only those), and the projections are combined with the weights
``δ_l/σ_l²`` (δ_l the mean shift of projection l, σ_l² its variance on the pilot). For additive Gaussian noise
of one scale per leaf this is the likelihood-ratio statistic, i.e. the most powerful test. The pair with the
largest pilot separation (mean shift over standard deviation of the statistic) is audited. The pilot
uses streams independent of the audit's, so the choice costs no confidence.

Guarantees and cost
-------------------
* **False refutation**: a method that is (ε, δ)-DP is refuted with probability at most ``1 − confidence``
  (the auditor's guarantee, :mod:`dpkit.evaluation.audit`; one audit per gate).
* **A pass is not a proof** of privacy: the auditor can only refute. It sees one statistic on a few
  neighbour pairs and a finite sample; a leak elsewhere (another pair, a selection step with little budget,
  a rare event) can pass. The exact audit of the finite-output selection steps is in
  :func:`dpkit.evaluation.oracles.exact_privacy_loss`.
* **Power**: the auditor needs the statistic's own leak to exceed ε; a method whose budget is spread over
  many steps leaks little in any one of them, and a noise scale 4 times too small is caught where the
  audited statistics carry most of the budget (e.g. MST's one- and two-way counts, two thirds of ρ).
* **Cost**: ``2·n_pilot`` probe calls per neighbour pair (2 pairs) plus ``2·n_samples`` for the audit, each
  call one private measurement at size (n, d) (a whole release for probe 3), plus the auditor's sorting;
  ``elapsed_s`` records it.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.rng import RNGLike, spawn_seeds
from dpkit.core.threads import limit_threads
from dpkit.core.validation import check_choice, check_delta, check_int_in_range, check_probability
from dpkit.evaluation.audit import audit
from dpkit.evaluation.gate_pilot import (
    NEIGHBOURING,
    PROBES,
    NeighbourPair,
    PilotStatistic,
    neighbour_pairs,
    pilot_statistic,
    probes,
)

__all__ = ["BOARD_SHAPES", "GateResult", "NeighbourPair", "audit_gate", "neighbour_pairs", "probes"]

#: (n, d) of the board's data sets as loaded by :func:`dpkit.data.load` (Table 3.1 recipes).
BOARD_SHAPES: dict[str, tuple[int, int]] = {
    "CSN": (99_762, 8), "CRM": (1_993, 101), "CTG": (2_126, 28), "PKS": (5_875, 19), "WDBC": (569, 30),
}


# ---------------------------------------------------------------------------------------------- result
@dataclass(frozen=True)
class GateResult:
    """Outcome of :func:`audit_gate` (module docstring).

    Attributes
    ----------
    name : str
        The entrant's name.
    passed : bool
        ``epsilon_lb <= epsilon``: the audit did not refute the claim (not a proof of privacy).
    epsilon_lb : float
        The auditor's lower bound on ε (holds with probability ≥ ``confidence``).
    epsilon, delta : float
        The claim audited.
    probe : str
        What was audited: ``"steps"``, ``"measure"`` or ``"release"`` (module docstring).
    statistic : str
        The scalar statistic (its leaves and pilot separation).
    event : dict
        The threshold event of the audit (:class:`~dpkit.evaluation.audit.AuditResult`).
    pair : str
        The neighbour pair audited; ``neighbouring`` its relation.
    n, d : int
        Size of the data sets audited.
    n_samples, n_pilot : int
        Draws per side of the audit, and pilot draws per side and pair.
    confidence : float
        A correct claim is refuted with probability ≤ ``1 − confidence``.
    epsilon_point : float
        The plug-in estimate on the audit's estimation half (for tightness).
    pilot : list of dict
        Every (probe, pair) tried on the pilot with its separation.
    elapsed_s : float
        Wall time of the gate.
    """

    name: str
    passed: bool
    epsilon_lb: float
    epsilon: float
    delta: float
    probe: str
    statistic: str
    event: dict[str, Any]
    pair: str
    neighbouring: str
    n: int
    d: int
    n_samples: int
    n_pilot: int
    confidence: float
    epsilon_point: float
    pilot: list[dict[str, Any]] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def refuted(self) -> bool:
        """The audit refuted the claim: ``epsilon_lb > epsilon``."""
        return not self.passed

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready record for the board (``refuted`` included)."""
        out = dataclasses.asdict(self)
        out["refuted"] = self.refuted
        return out


def audit_gate(
    name: str,
    method: Any,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    n: int = BOARD_SHAPES["WDBC"][0],
    d: int = BOARD_SHAPES["WDBC"][1],
    rng: RNGLike = 0,
    n_samples: int = 4000,
    confidence: float = 0.95,
    n_pilot: int = 16,
    neighbouring: str | None = None,
    background: ArrayLike | None = None,
    steps: str | None = None,
) -> GateResult:
    """Try to refute ``method``'s (ε, δ) claim with the empirical auditor (module docstring).

    Parameters
    ----------
    name : str
        The entrant's name (recorded).
    method : method
        Anything with ``release(X, *, rng=...)`` (:class:`~dpkit.queries.release.Method`), optionally
        ``measure`` and ``audit_steps`` (module docstring).
    epsilon, delta : float, optional
        The claim; default the method's own ``epsilon`` and ``delta``. ε must be finite and > 0 (a non-private
        method claims nothing to refute).
    n, d : int
        Size of the audited data sets; default the smallest board data set, WDBC (:data:`BOARD_SHAPES`).
    rng : int, Generator, SeedSequence or None
        Seed of the pilot and of the audit (independent streams).
    n_samples : int
        Draws per side of the audit (≥ 20; half select the event, half estimate it).
    confidence : float
        A correct claim is refuted with probability ≤ ``1 − confidence``.
    n_pilot : int
        Common-random-number draws per side and neighbour pair that choose the statistic (≥ 3).
    neighbouring : {"replace-one", "add-remove"}, optional
        Default: the method's ``neighbouring`` attribute, else replace-one (every dpkit method's relation).
    background : array (n − 1, d), optional
        The shared rows of the neighbours (default: the centre of the cube).
    steps : {"steps", "measure", "release"}, optional
        Audit this probe only (default: the first the method has, in this order; module docstring).

    Returns
    -------
    GateResult
    """
    t0 = time.perf_counter()
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string (the entrant's name); got {name!r}")
    if not callable(getattr(method, "release", None)):
        raise TypeError(f"method {name!r} must have release(X, *, rng=...); got {type(method).__name__}")
    eps = float(getattr(method, "epsilon", math.nan) if epsilon is None else epsilon)
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"epsilon of {name!r} must be a finite number > 0 (the claim to audit; a non-private "
                         f"method, epsilon = inf, claims nothing to refute); got {eps!r}")
    dl = check_delta(float(getattr(method, "delta", 0.0) if delta is None else delta), name="delta")
    conf = check_probability(confidence, name="confidence")
    n_samples = check_int_in_range(n_samples, name="n_samples", low=20)
    n_pilot = check_int_in_range(n_pilot, name="n_pilot", low=3)
    relation = check_choice(neighbouring if neighbouring is not None else getattr(method, "neighbouring", "replace-one"),
                            name="neighbouring", choices=NEIGHBOURING)
    if steps is not None:
        check_choice(steps, name="steps", choices=PROBES)
    pairs = neighbour_pairs(n, d, relation, background)
    with limit_threads(1):  # thousands of small measurements: threads only contend
        res, pname, pair, stat, tried = _run(name, method, pairs, steps, n_pilot, n_samples, conf, dl, rng)
    return GateResult(
        name=name, passed=not res.flags(eps), epsilon_lb=float(res.epsilon_lb), epsilon=eps, delta=dl, probe=pname,
        statistic=stat.describe(), event=dict(res.event), pair=pair.description, neighbouring=relation,
        n=int(pair.d0.shape[0]), d=int(pair.d0.shape[1]), n_samples=n_samples, n_pilot=n_pilot, confidence=conf,
        epsilon_point=float(res.epsilon_point), pilot=tried, elapsed_s=time.perf_counter() - t0)


def _run(name: str, method: Any, pairs: list[NeighbourPair], steps: str | None, n_pilot: int, n_samples: int,
         conf: float, dl: float, rng: RNGLike) -> tuple[Any, str, NeighbourPair, PilotStatistic, list[dict[str, Any]]]:
    """The pilot over (probe, pair), then the audit of the best; see :func:`audit_gate`."""
    s_pilot, s_audit = spawn_seeds(rng, 2)
    pilot_seeds = s_pilot.spawn(len(pairs))
    tried: list[dict[str, Any]] = []
    best: tuple[float, str, NeighbourPair, PilotStatistic, Callable[..., Any]] | None = None
    for pair, seed in zip(pairs, pilot_seeds):
        available = probes(method, pair)
        if steps is not None and steps not in available:
            raise ValueError(f"steps={steps!r}: method {name!r} ({type(method).__name__}) has no such probe; "
                             f"it has {list(available)}")
        pname = steps if steps is not None else next(iter(available))
        probe = available[pname]
        stat = pilot_statistic(probe, pair, n_pilot, seed)
        sep = 0.0 if stat is None else stat.separation
        tried.append({"probe": pname, "pair": pair.description, "separation": sep,
                      "leaves": [] if stat is None else [p.lstrip(".") for p in stat.paths]})
        if stat is not None and (best is None or sep > best[0]):
            best = (sep, pname, pair, stat, probe)
    if best is None:
        raise ValueError(f"method {name!r}: no released statistic differs between the neighbours on the pilot "
                         f"({n_pilot} draws per side); the gate has nothing to audit (is the release data-independent?)")
    _, pname, pair, stat, probe = best

    def mechanism(db: np.ndarray, g: np.random.Generator) -> float:
        return stat(probe(db, g))

    res = audit(mechanism, pair.d0, pair.d1, n_samples=n_samples, confidence=conf, delta=dl, rng=s_audit)
    return res, pname, pair, stat, tried
