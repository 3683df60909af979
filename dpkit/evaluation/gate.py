"""The audit gate of the open board: the empirical auditor tries to refute a method's privacy claim before it is ranked.

:func:`audit_gate` runs the auditor of :mod:`dpkit.evaluation.audit` (Clopper–Pearson lower bound ε_lb on ε from a
threshold event on one scalar statistic, :func:`~dpkit.evaluation.audit.audit_candidates`) on worst-case neighbours at
the board's sizes and reports a :class:`GateResult`. The claim is the one the caller names (the board passes its own
budget for the method's class, never what the method holds). The method is **refuted** when an audit's
``ε_lb > ε``; otherwise it **passes**.

What is audited (a *probe*: a function of the data and a random generator returning an output):

1. **always the release, as a black box**: what ``method.at_width(σ).release(X, rng=...)`` returns and the board
   scores (:func:`~dpkit.evaluation.gate_pilot.probes`): the answers to a workload of queries centred at the differing
   row, or the statistics of the synthetic database there (:func:`~dpkit.evaluation.gate_pilot.synthetic_features`:
   per attribute its mass within a window of the differing row's value and whether that mass is positive, box and
   kernel masses around the row, its mean and second moments). Whatever ``measure`` does, the release is what is
   published, so a method whose ``measure`` is noisy and whose release is not is refuted here;
2. **for power, a measurement probe** where the method has one: ``method.audit_steps()`` (a hook:
   ``{step name: f(X, rng)}``, the private measurement of each step, e.g. the Gaussian-fit candidates of MWEM; run on
   independent streams and audited jointly), else ``method.measure(X, rng=..., ledger=...)`` where the method overrides
   the template hook of :class:`~dpkit.queries.release.MethodBase`, given a fresh ledger holding the claim as the
   template's release gives it one (a measurement that spends beyond the claim is refuted outright). A method's
   privacy proof covers these measurements (the release is their post-processing), so the claim holds for them.

The audits share the false-refutation budget: each runs at confidence ``1 − (1 − confidence)/k`` for ``k`` audits
(Bonferroni), so a correct claim is refuted with probability at most ``1 − confidence`` in all. ``steps=`` names the
measurement probe (``"steps"`` or ``"measure"``), or ``"release"`` for the release alone.

Neighbours (:func:`~dpkit.evaluation.gate_pilot.neighbour_pairs`): ``n − 1`` background rows (the centre of the cube
unless ``background`` is given, e.g. rows of a real data set) and one differing row: under **replace-one** (the
default, and every dpkit method's relation; a method may state another in a ``neighbouring`` attribute) the row
moves between opposite corners of [-1, 1]^d (the worst case of every count and mean, monotone in each coordinate) or
from the corner (1, …, 1) to the corner with its first ⌈3d/4⌉ coordinates flipped (the worst case of second moments
x xᵀ jointly with the mean) or from that corner to the centre (every square x_i² moves by 1, which no move between
corners does); under **add/remove** one data set has the corner row and the other lacks it. The shape
is :data:`GATE_SHAPE`: the board's fewest rows and attributes (a budget split over the attributes leaks most per
attribute where they are few).

Statistic (chosen on a pilot and on the audit's selection half, never on its estimation half): every numeric leaf of
the probe's output (arrays, numbers, found in dataclasses, mappings and sequences; one leaf per path and size) is a
coordinate. For each pair, ``n_pilot`` draws on both data sets with **common random numbers** (the same stream on
both sides) give the mean shift Δ of every leaf (exactly the difference of the noise-free statistics for additive
noise); a leaf is kept where its shift is clear on the pilot (where some leaves are additive noise on a statistic of
the data, i.e. their differences do not vary, only those), and the pair with the largest pilot separation is audited.
The candidate statistics (:meth:`~dpkit.evaluation.gate_pilot.PilotStatistic.candidates`) are the projections of the
leaves on their shifts (the likelihood ratio for Gaussian noise), their weighted sum (``δ_l/σ_l²``), the sign
statistics ``Σ_j sign(Δ_j)·sign(y_j − m_j)`` of the leaves of several coordinates (close to the likelihood ratio for
Laplace noise, and for a count clipped at 0), and both summed over the places of one feature; the audit's selection
half keeps the one that separates the two data sets best and its event, and only its fresh estimation half bounds ε.

Guarantees and cost
-------------------
* **False refutation**: a method that is (ε, δ)-DP is refuted with probability at most ``1 − confidence``
  (the auditor's guarantee, :mod:`dpkit.evaluation.audit`, Bonferroni over the audits).
* **A pass is not a proof** of privacy (:data:`NOT_A_PROOF`): the auditor can only refute. It sees a few statistics
  on three neighbour pairs and a finite sample; a leak elsewhere (another pair, a selection step with little budget, a
  rare event) can pass. The exact audit of the finite-output selection steps is in
  :func:`dpkit.evaluation.oracles.exact_privacy_loss`.
* **Power**: the auditor needs the statistic's own leak to exceed ε; a method whose budget is spread over many steps
  leaks little in any one of them. What it refutes per method family, measured by ``tools/gate_power.py``, is in the
  add-method guide (docs/guide/add-method.md): e.g. histogram marginals with a quarter of their noise (true ε = 4)
  by both audits, MST's counts with a quarter of theirs by the measurement probe.
* **Cost**: ``2·n_pilot`` probe calls per neighbour pair (3 under replace-one) and probe, plus ``2·n_samples``
  measurements and ``2·n_release`` whole releases for the audits, each at size (n, d), plus the auditor's sorting; ``elapsed_s``
  records it.
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

from dpkit.core.exceptions import BudgetExceededError
from dpkit.core.rng import RNGLike, spawn_seeds
from dpkit.core.threads import limit_threads
from dpkit.core.validation import check_choice, check_delta, check_int_in_range, check_probability
from dpkit.evaluation.audit import audit_candidates
from dpkit.evaluation.gate_pilot import (
    NEIGHBOURING,
    PROBES,
    NeighbourPair,
    PilotStatistic,
    neighbour_pairs,
    pilot_statistic,
    probes,
)

__all__ = ["BOARD_SHAPES", "GATE_SHAPE", "GATE_SIGMA", "NOT_A_PROOF", "GateResult", "NeighbourPair", "audit_gate",
           "neighbour_pairs", "probes"]

#: (n, d) of the board's data sets as loaded by :func:`dpkit.data.load` (Table 3.1 recipes).
BOARD_SHAPES: dict[str, tuple[int, int]] = {
    "CSN": (99_762, 8), "CRM": (1_993, 101), "CTG": (2_126, 28), "PKS": (5_875, 19), "WDBC": (569, 30),
}
#: The gate's data shape: the board's fewest rows (WDBC's) and fewest attributes (CSN's). A method is private at
#: every shape; with few attributes a budget split over the attributes (per-attribute marginals) leaks most per
#: attribute, where an audit of one differing row sees it best.
GATE_SHAPE: tuple[int, int] = (BOARD_SHAPES["WDBC"][0], BOARD_SHAPES["CSN"][1])
#: The kernel width at which the gate releases a method (``at_width``): the board's smallest σ.
GATE_SIGMA = 2.0
#: Shown with every verdict of the gate.
NOT_A_PROOF = ("a pass is not a proof of privacy: the auditor can only refute, and it sees a few neighbour pairs, "
               "a few statistics and a finite sample")


# ---------------------------------------------------------------------------------------------- result
@dataclass(frozen=True)
class GateResult:
    """Outcome of :func:`audit_gate` (module docstring).

    Attributes
    ----------
    name : str
        The entrant's name.
    passed : bool
        No audit refuted the claim (not a proof of privacy).
    epsilon_lb : float
        The largest of the audits' lower bounds on ε (jointly they hold with probability ≥ ``confidence``); the
        fields ``probe`` to ``epsilon_point`` are that audit's.
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
    audits : list of dict
        Every audit (the measurement probe where the method has one, and always the release): its probe, pair,
        statistic, event, ``epsilon_lb`` at its ``confidence`` (Bonferroni), ``refuted``.
    audited : str
        One line of what was audited and at which confidence (shown with the verdict, with :data:`NOT_A_PROOF`).
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
    audits: list[dict[str, Any]] = field(default_factory=list)
    audited: str = ""
    elapsed_s: float = 0.0

    @property
    def refuted(self) -> bool:
        """An audit refuted the claim (its ``epsilon_lb > epsilon``)."""
        return not self.passed

    @property
    def power_note(self) -> str:
        """What was audited (:attr:`audited`), for the verdict's line."""
        return self.audited

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready record for the board (``refuted`` and the ``note`` :data:`NOT_A_PROOF` included)."""
        out = dataclasses.asdict(self)
        out["refuted"] = self.refuted
        out["note"] = NOT_A_PROOF
        return out


def audit_gate(
    name: str,
    method: Any,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    n: int = GATE_SHAPE[0],
    d: int = GATE_SHAPE[1],
    rng: RNGLike = 0,
    n_samples: int = 10_000,
    n_release: int = 3000,
    confidence: float = 0.95,
    n_pilot: int = 16,
    neighbouring: str | None = None,
    background: ArrayLike | None = None,
    steps: str | None = None,
    sigma: float | None = GATE_SIGMA,
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
        The claim; default the method's own ``epsilon`` and ``delta`` (the board passes its own budget for the
        method's class). ε must be finite and > 0 (a non-private method claims nothing to refute).
    n, d : int
        Size of the audited data sets; default :data:`GATE_SHAPE` (WDBC's rows, CSN's attributes).
    rng : int, Generator, SeedSequence or None
        Seed of the pilots and of the audits (independent streams).
    n_samples : int
        Draws per side of the audit of the measurement probe (``steps`` or ``measure``; ≥ 20; half select the event,
        half estimate it).
    n_release : int
        Draws per side of the audit of the release (≥ 20): a whole release per draw, so fewer than ``n_samples``
        by default.
    confidence : float
        A correct claim is refuted with probability ≤ ``1 − confidence`` (jointly over the audits: each is run at
        ``1 − (1 − confidence)/k`` for ``k`` audits, Bonferroni).
    n_pilot : int
        Common-random-number draws per side and neighbour pair that choose each statistic (≥ 3).
    neighbouring : {"replace-one", "add-remove"}, optional
        Default: the method's ``neighbouring`` attribute, else replace-one (every dpkit method's relation).
    background : array (n − 1, d), optional
        The shared rows of the neighbours (default: the centre of the cube).
    steps : {"steps", "measure", "release"}, optional
        The measurement probe audited beside the release (default: the first the method has of ``steps`` and
        ``measure``); ``"release"``: the release only.
    sigma : float or None
        The kernel width at which the release is made (``method.at_width(sigma)``, as the board makes it; default
        :data:`GATE_SIGMA`, the board's smallest); None: the method as given.

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
    n_release = check_int_in_range(n_release, name="n_release", low=20)
    n_pilot = check_int_in_range(n_pilot, name="n_pilot", low=3)
    relation = check_choice(neighbouring if neighbouring is not None else getattr(method, "neighbouring", "replace-one"),
                            name="neighbouring", choices=NEIGHBOURING)
    if steps is not None:
        check_choice(steps, name="steps", choices=PROBES)
    if sigma is not None and not (math.isfinite(float(sigma)) and float(sigma) > 0):
        raise ValueError(f"sigma must be a finite number > 0 or None (the release's kernel width); got {sigma!r}")
    pairs = neighbour_pairs(n, d, relation, background)
    plan = _probe_plan(name, method, pairs[0], steps, eps, dl, sigma)
    level = 1.0 - (1.0 - conf) / len(plan)  # Bonferroni over the audits
    audits: list[dict[str, Any]] = []
    tried: list[dict[str, Any]] = []
    # the first probe's pilot and audit streams are the first two children of rng, the next probe's the two children
    # of the third, and so on (the measurement probe draws what the gate drew when it audited it alone)
    children = spawn_seeds(rng, len(plan) + 1)
    streams = [(children[0], children[1])] + [tuple(c.spawn(2)) for c in children[2:]]
    with limit_threads(1):  # thousands of small measurements: threads only contend
        for pname, seed in zip(plan, streams):
            draws = n_release if pname == "release" else n_samples
            audits.append(_audit_probe(name, method, pname, pairs, n_pilot, draws, level, eps, dl, sigma, seed, tried))
    for a in audits:
        if a["statistic"] is None:  # said, not skipped: the record and the verdict's line carry it
            a["statistic"] = (f"none: no statistic of its output differs clearly between the neighbours on the pilot "
                              f"({n_pilot} draws per side and pair): nothing to refute")
    top = max(audits, key=lambda a: a["epsilon_lb"])
    return GateResult(
        name=name, passed=not any(a["refuted"] for a in audits), epsilon_lb=float(top["epsilon_lb"]), epsilon=eps,
        delta=dl, probe=top["probe"], statistic=top["statistic"], event=dict(top["event"]), pair=str(top["pair"] or ""),
        neighbouring=relation, n=int(pairs[0].d0.shape[0]), d=int(pairs[0].d0.shape[1]), n_samples=int(top["n_samples"]),
        n_pilot=n_pilot, confidence=conf, epsilon_point=float(top["epsilon_point"]), pilot=tried, audits=audits,
        audited=" and ".join(plan) + f" audited, each at confidence {level:.4g}, Bonferroni for {conf:g} jointly",
        elapsed_s=time.perf_counter() - t0)


def _probe_plan(name: str, method: Any, pair: NeighbourPair, steps: str | None, eps: float, dl: float,
                sigma: float | None) -> list[str]:
    """The probes audited: the measurement probe (``steps`` or ``measure``, the first the method has, or the one
    named) and always the release."""
    available = probes(method, pair, epsilon=eps, delta=dl, sigma=sigma)
    if steps is not None and steps not in available:
        raise ValueError(f"steps={steps!r}: method {name!r} ({type(method).__name__}) has no such probe; "
                         f"it has {list(available)}")
    if steps == "release":
        return ["release"]
    first = steps if steps is not None else next(iter(available))
    return [first, "release"] if first != "release" else ["release"]


def _audit_probe(name: str, method: Any, pname: str, pairs: list[NeighbourPair], n_pilot: int, n_samples: int,
                 level: float, eps: float, dl: float, sigma: float | None,
                 seed: tuple[np.random.SeedSequence, np.random.SeedSequence],
                 tried: list[dict[str, Any]]) -> dict[str, Any]:
    """One probe: the pilot over the neighbour pairs (appended to ``tried``; streams ``seed[0]``), then the audit of
    the best pair at ``level`` (stream ``seed[1]``); the audit's record (``statistic`` None when no statistic differs
    on the pilot: nothing to refute)."""
    s_pilot, s_audit = seed
    best: tuple[float, NeighbourPair, PilotStatistic, Callable[..., Any]] | None = None
    record: dict[str, Any] = {"probe": pname, "n_samples": n_samples, "confidence": level, "statistic": None,
                              "pair": None, "event": {}, "epsilon_lb": 0.0, "epsilon_point": 0.0, "refuted": False}
    for pair, ps in zip(pairs, s_pilot.spawn(len(pairs))):
        probe = probes(method, pair, epsilon=eps, delta=dl, sigma=sigma)[pname]
        try:
            stat = pilot_statistic(probe, pair, n_pilot, ps)
        except BudgetExceededError as exc:  # a ledger refuses the probe's spend: it spends more than its budget
            record.update(statistic=f"none: it spends beyond the claim, its ledger refuses the spend ({exc})",
                          pair=pair.description, epsilon_lb=math.inf, epsilon_point=math.inf, refuted=True)
            return record
        sep = 0.0 if stat is None else stat.separation
        tried.append({"probe": pname, "pair": pair.description, "separation": sep,
                      "leaves": [] if stat is None else [p.lstrip(".") for p in stat.paths]})
        if stat is not None and (best is None or sep > best[0]):
            best = (sep, pair, stat, probe)
    if best is None:
        return record
    _, pair, stat, probe = best

    def mechanism(db: np.ndarray, g: np.random.Generator) -> np.ndarray:
        return stat.candidates(probe(db, g))

    res = audit_candidates(mechanism, pair.d0, pair.d1, n_samples=n_samples, confidence=level, delta=dl, rng=s_audit)
    chosen = stat.candidate_names()[int(res.meta["candidate"])]
    record.update(statistic=f"{chosen}, chosen on the audit's selection half among {res.meta['candidates']} "
                            f"candidates ({stat.describe()})", pair=pair.description, event=dict(res.event),
                  epsilon_lb=float(res.epsilon_lb), epsilon_point=float(res.epsilon_point), refuted=bool(res.flags(eps)))
    return record
