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

Neighbours (:func:`neighbour_pairs`): ``n − 1`` background rows (the centre of the cube unless ``background``
is given, e.g. rows of a real data set) and one differing row: under **replace-one** (the default, and every
dpkit method's relation; a method may state another in a ``neighbouring`` attribute) the row moves between
opposite corners of [-1, 1]^d (the worst case of every count and mean, monotone in each coordinate) or from
the corner (1, …, 1) to the corner with its first ⌈3d/4⌉ coordinates flipped (the worst case of second moments
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from threadpoolctl import threadpool_limits  # a scikit-learn dependency

from dpkit.core.rng import RNGLike, spawn_seeds
from dpkit.core.validation import check_choice, check_delta, check_int_in_range, check_probability
from dpkit.evaluation.audit import audit
from dpkit.queries.release import MethodBase

__all__ = ["BOARD_SHAPES", "GateResult", "NeighbourPair", "audit_gate", "neighbour_pairs", "probes"]

#: (n, d) of the board's data sets as loaded by :func:`dpkit.data.load` (Table 3.1 recipes).
BOARD_SHAPES: dict[str, tuple[int, int]] = {
    "CSN": (99_762, 8), "CRM": (1_993, 101), "CTG": (2_126, 28), "PKS": (5_875, 19), "WDBC": (569, 30),
}

NEIGHBOURING = ("replace-one", "add-remove")
PROBES = ("steps", "measure", "release")


@dataclass(frozen=True, eq=False)
class NeighbourPair:
    """Two neighbouring data sets ``d0``, ``d1`` in [-1, 1]^d, the relation and a description."""

    description: str
    relation: str
    d0: np.ndarray
    d1: np.ndarray
    a: np.ndarray
    b: np.ndarray | None


def neighbour_pairs(n: int, d: int, relation: str = "replace-one",
                    background: ArrayLike | None = None) -> list[NeighbourPair]:
    """The worst-case pairs of the gate (module docstring): ``n`` rows (``n − 1`` under add/remove on one side).

    Parameters
    ----------
    n, d : int
        Rows (of the larger data set) and attributes; n ≥ 2, d ≥ 1.
    relation : {"replace-one", "add-remove"}
    background : array (n − 1, d), optional
        The rows shared by both data sets, in [-1, 1]^d; default: the centre of the cube.
    """
    n = check_int_in_range(n, name="n", low=2)
    d = check_int_in_range(d, name="d", low=1)
    relation = check_choice(relation, name="relation", choices=NEIGHBOURING)
    if background is None:
        rest = np.zeros((n - 1, d))
    else:
        rest = np.asarray(background, dtype=float)
        if rest.shape != (n - 1, d) or not np.all(np.abs(rest) <= 1.0):
            raise ValueError(f"background must be an array of shape (n - 1, d) = ({n - 1}, {d}) in [-1, 1]; "
                             f"got shape {rest.shape}")
    one, flip = np.ones(d), np.ones(d)
    k = math.ceil(3 * d / 4)
    flip[:k] = -1.0
    if relation == "replace-one":
        cases = [(f"replace-one: row 0 (-1,…,-1) vs (+1,…,+1) (opposite corners), d={d}", -one, one),
                 (f"replace-one: row 0 (+1,…,+1) vs the corner with its first {k} of {d} coordinates -1 "
                  "(second moments)", one, flip)]
        return [NeighbourPair(desc, relation, np.vstack([a, rest]), np.vstack([b, rest]), a, b) for desc, a, b in cases]
    cases2 = [(f"add-remove: row (+1,…,+1) present vs absent, d={d}", one),
              (f"add-remove: row (+1,…,+1 with its first {k} of {d} coordinates -1) present vs absent", flip)]
    return [NeighbourPair(desc, relation, np.vstack([a, rest]), rest.copy(), a, None) for desc, a in cases2]


# ---------------------------------------------------------------------------------------------- probes
def _overrides_measure(method: Any) -> bool:
    fn = getattr(type(method), "measure", None)
    return callable(fn) and fn is not MethodBase.measure


def _steps_probe(method: Any) -> Callable[[np.ndarray, np.random.Generator], Any] | None:
    hook = getattr(method, "audit_steps", None)
    if not callable(hook):
        return None
    steps = dict(hook())
    if not steps:
        return None

    def run(X: np.ndarray, rng: np.random.Generator) -> dict[str, Any]:
        gs = spawn_seeds(rng, len(steps))
        return {name: f(X, np.random.default_rng(s)) for (name, f), s in zip(steps.items(), gs)}

    return run


def _release_probe(method: Any, pair: NeighbourPair) -> Callable[[np.ndarray, np.random.Generator], Any]:
    workload = None
    if getattr(method, "needs_workload", False):
        from dpkit.queries.workload import GaussianKernelWorkload

        pts = [pair.a] + ([pair.b] if pair.b is not None else [-pair.a])
        workload = GaussianKernelWorkload(centres=np.stack(pts)[:, None, :], alphas=np.ones((len(pts), 1)), sigma=1.0)
    ref = np.stack([pair.a] + ([pair.b] if pair.b is not None else []))

    def run(X: np.ndarray, rng: np.random.Generator) -> dict[str, Any]:
        rel = method.release(X, rng=rng, workload=workload) if workload is not None else method.release(X, rng=rng)
        out: dict[str, Any] = {"answers": rel.answers, "diagnostics": rel.diagnostics}
        if rel.synthetic is not None:
            P, w = np.asarray(rel.synthetic.points, dtype=float), np.asarray(rel.synthetic.weights, dtype=float)
            w = w / w.sum()
            sq = ((P[:, None, :] - ref[None, :, :]) ** 2).sum(axis=2) / P.shape[1]
            out["synthetic"] = {"mean": w @ P, "mass_near_differing_row": w @ np.exp(-2.0 * sq)}
        return out

    return run


def probes(method: Any, pair: NeighbourPair) -> dict[str, Callable[[np.ndarray, np.random.Generator], Any]]:
    """The probes the gate can audit for ``method`` (module docstring), in order of preference."""
    out: dict[str, Callable[[np.ndarray, np.random.Generator], Any]] = {}
    steps = _steps_probe(method)
    if steps is not None:
        out["steps"] = steps
    if _overrides_measure(method):
        out["measure"] = lambda X, rng: method.measure(X, rng=rng)
    out["release"] = _release_probe(method, pair)
    return out


# ---------------------------------------------------------------------------------------------- statistic
def _leaves(obj: Any, path: str, out: dict[str, np.ndarray], depth: int = 0) -> None:
    """Every numeric leaf of ``obj`` (flattened float arrays), keyed by its path."""
    if depth > 8 or obj is None or isinstance(obj, (str, bytes, bool, np.bool_)):
        return
    if isinstance(obj, (int, float, np.integer, np.floating)):
        out[path] = np.array([float(obj)])
    elif isinstance(obj, np.ndarray):
        if obj.dtype.kind in "iuf":
            out[path] = np.asarray(obj, dtype=float).ravel()
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            if f.name != "timings":  # wall time: not a function of the data's release
                _leaves(getattr(obj, f.name), f"{path}.{f.name}", out, depth + 1)
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            _leaves(v, f"{path}.{k}", out, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _leaves(v, f"{path}[{i}]", out, depth + 1)


def _flat(obj: Any) -> dict[str, np.ndarray]:
    """The leaves of ``obj`` keyed by path and size (a leaf whose size varies, e.g. the measurement of a selected
    marginal, is one leaf per size)."""
    out: dict[str, np.ndarray] = {}
    _leaves(obj, "", out)
    return {f"{k}[size {v.size}]": v for k, v in out.items()}


@dataclass(frozen=True, eq=False)
class _Statistic:
    """``s(y) = (Σ_l w_l ⟨Δ_l, y_l⟩ − c)/scale``; a leaf absent or of another shape counts 0."""

    paths: tuple[str, ...]
    directions: tuple[np.ndarray, ...]
    weights: np.ndarray
    centre: float
    scale: float
    separation: float

    def projections(self, leaves: Mapping[str, np.ndarray]) -> np.ndarray:
        t = np.zeros(len(self.paths))
        for i, (p, v) in enumerate(zip(self.paths, self.directions)):
            y = leaves.get(p)
            if y is not None:
                t[i] = float(np.dot(v, np.nan_to_num(y, nan=0.0, posinf=0.0, neginf=0.0)))
        return t

    def __call__(self, output: Any) -> float:
        return float((self.weights @ self.projections(_flat(output)) - self.centre) / self.scale)

    def describe(self) -> str:
        top = np.argsort(-np.abs(self.weights))[:4]
        parts = ", ".join(f"{self.paths[i].lstrip('.')}" for i in top)
        return (f"weighted sum of {len(self.paths)} leaf projection(s) on their mean shift "
                f"(largest weights: {parts}); pilot separation {self.separation:.3g}")


def _pilot(probe: Callable[[np.ndarray, np.random.Generator], Any], pair: NeighbourPair, n_pilot: int,
           seed: np.random.SeedSequence) -> _Statistic | None:
    """The statistic of one (probe, pair) from ``n_pilot`` common-random-number draws (module docstring)."""
    outs0, outs1 = [], []
    for s in seed.spawn(n_pilot):
        outs0.append(_flat(probe(pair.d0, np.random.default_rng(s))))
        outs1.append(_flat(probe(pair.d1, np.random.default_rng(s))))
    def finite(o: Mapping[str, np.ndarray], k: str) -> bool:
        return k in o and bool(np.all(np.isfinite(o[k])))

    # a leaf enters where both sides of at least half the common-random-number draws (and 3) release it
    keys = sorted({k for o in outs0 for k in o})
    paths, dirs, additive = [], [], []
    for k in keys:
        both = [(o0[k], o1[k]) for o0, o1 in zip(outs0, outs1) if finite(o0, k) and finite(o1, k)]
        if len(both) < max(3, n_pilot // 2):
            continue
        diffs = np.array([y1 - y0 for y0, y1 in both])
        delta = diffs.mean(axis=0)
        if not np.any(delta != 0):
            continue
        # keep a leaf only if its shift along Δ is clear on the pilot (t > 3): an unclear leaf adds noise, not
        # power. A leaf whose common-random-number differences do not vary (to round-off) is additive noise on
        # a statistic of the data: where there are such leaves, the others (their post-processing, e.g. a PSD
        # projection of noisy moments) are left out
        along = diffs @ delta
        sd, mean = float(along.std(ddof=1)), float(along.mean())
        if sd <= 1e-9 * abs(mean) or mean / (sd / math.sqrt(len(both))) > 3.0:
            paths.append(k)
            dirs.append(delta)
            additive.append(sd <= 1e-9 * abs(mean))
    if any(additive):
        paths = [p for p, a in zip(paths, additive) if a]
        dirs = [v for v, a in zip(dirs, additive) if a]
    if not paths:
        return None
    stat = _Statistic(tuple(paths), tuple(dirs), np.ones(len(paths)), 0.0, 1.0, 0.0)
    T0 = np.array([stat.projections(o) for o in outs0])
    T1 = np.array([stat.projections(o) for o in outs1])
    shift = (T1 - T0).mean(axis=0)
    L = len(paths)
    S = 0.5 * (np.cov(T0, rowvar=False).reshape(L, L) + np.cov(T1, rowvar=False).reshape(L, L))
    # diagonal weights shift/variance (the likelihood ratio for independent Gaussian leaves; a full Σ⁻¹ would
    # overfit the pilot); a leaf without variance on the pilot (released without noise) gets all the weight
    var_l = np.diag(S)
    w = np.where(var_l > 0, shift / np.where(var_l > 0, var_l, 1.0), 0.0)
    if np.any((var_l == 0) & (shift != 0)):
        w = np.where((var_l == 0) & (shift != 0), np.sign(shift), 0.0)
    var = float(w @ S @ w)
    sep = float(w @ shift) / math.sqrt(var) if var > 0 else math.inf
    scale = math.sqrt(var) if var > 0 else max(abs(float(w @ shift)), 1e-300)
    centre = float(w @ T0.mean(axis=0))
    return _Statistic(tuple(paths), tuple(dirs), w, centre, scale, sep)


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
    with threadpool_limits(limits=1, user_api="blas"):  # thousands of small measurements: threads only contend
        res, pname, pair, stat, tried = _run(name, method, pairs, steps, n_pilot, n_samples, conf, dl, rng)
    return GateResult(
        name=name, passed=not res.flags(eps), epsilon_lb=float(res.epsilon_lb), epsilon=eps, delta=dl, probe=pname,
        statistic=stat.describe(), event=dict(res.event), pair=pair.description, neighbouring=relation,
        n=int(pair.d0.shape[0]), d=int(pair.d0.shape[1]), n_samples=n_samples, n_pilot=n_pilot, confidence=conf,
        epsilon_point=float(res.epsilon_point), pilot=tried, elapsed_s=time.perf_counter() - t0)


def _run(name: str, method: Any, pairs: list[NeighbourPair], steps: str | None, n_pilot: int, n_samples: int,
         conf: float, dl: float, rng: RNGLike) -> tuple[Any, str, NeighbourPair, _Statistic, list[dict[str, Any]]]:
    """The pilot over (probe, pair), then the audit of the best; see :func:`audit_gate`."""
    s_pilot, s_audit = spawn_seeds(rng, 2)
    pilot_seeds = s_pilot.spawn(len(pairs))
    tried: list[dict[str, Any]] = []
    best: tuple[float, str, NeighbourPair, _Statistic, Callable[..., Any]] | None = None
    for pair, seed in zip(pairs, pilot_seeds):
        available = probes(method, pair)
        if steps is not None and steps not in available:
            raise ValueError(f"steps={steps!r}: method {name!r} ({type(method).__name__}) has no such probe; "
                             f"it has {list(available)}")
        pname = steps if steps is not None else next(iter(available))
        probe = available[pname]
        stat = _pilot(probe, pair, n_pilot, seed)
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
