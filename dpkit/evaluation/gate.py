"""The audit gate of the open board: the empirical auditor tries to refute a method's privacy claim before it is ranked.

The claim is the one the caller names (the board passes its own budget for the method's class, never what the method
holds); the method is **refuted** when an audit's Clopper–Pearson lower bound ``ε_lb`` exceeds ε
(:mod:`dpkit.evaluation.audit`), otherwise it **passes**. The page ``docs/science/audit_gate.md`` gives the
neighbours, the statistics and the power in full.

Algorithm (:func:`audit_gate`)
------------------------------
1. Neighbours (:func:`neighbour_pairs`, shape :data:`GATE_SHAPE`): ``n − 1`` background rows and one differing row
   moved between worst-case corners (replace-one), or present and absent (add/remove).
2. Probes: always the release as a black box (:func:`probes`, :func:`synthetic_features`), and for power the
   method's measurement (``audit_steps()``, else an overridden ``measure`` given a fresh ledger holding the claim).
3. Statistic: candidates from a pilot with common random numbers (:meth:`PilotStatistic.candidates`), chosen on
   the audit's selection half; only its estimation half bounds ε.
4. Each of the ``k`` audits runs at confidence ``1 − (1 − confidence)/k`` (Bonferroni).

Guarantees
----------
A method that is (ε, δ)-DP is refuted with probability at most ``1 − confidence``. A pass is not a proof of privacy
(:data:`NOT_A_PROOF`): a leak elsewhere (another pair, a step with little budget, a rare event) can pass; the exact
audit of finite-output selection steps is :func:`dpkit.evaluation.oracles.exact_privacy_loss`.
"""
from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.exceptions import BudgetExceededError
from dpkit.core.rng import RNGLike, spawn_seeds
from dpkit.core.threads import limit_threads
from dpkit.core.validation import check_choice, check_delta, check_int_in_range, check_probability
from dpkit.evaluation.audit import audit_candidates
from dpkit.queries.release import MethodBase
from dpkit.queries.synthetic import check_released_database

__all__ = [
    "NeighbourPair",
    "neighbour_pairs",
    "probes",
    "synthetic_features",
    "WINDOWS",
    "KERNEL_WIDTHS",
    "PilotStatistic",
    "pilot_statistic",
    "BOARD_SHAPES",
    "GATE_SHAPE",
    "GATE_SIGMA",
    "NOT_A_PROOF",
    "GateResult",
    "audit_gate",
]


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
    """The worst-case pairs of the gate (:mod:`dpkit.evaluation.gate`): ``n`` rows (``n − 1`` under add/remove on one side).

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
    one, flip = np.ones(d), np.ones(d)  # replace-one: three cases (the centre one moves every square x_i² by 1)
    k = math.ceil(3 * d / 4)
    flip[:k] = -1.0
    if relation == "replace-one":
        cases = [(f"replace-one: row 0 (-1,…,-1) vs (+1,…,+1) (opposite corners), d={d}", -one, one),
                 (f"replace-one: row 0 (+1,…,+1) vs the corner with its first {k} of {d} coordinates -1 "
                  "(second moments)", one, flip),
                 (f"replace-one: row 0 (+1,…,+1) vs the centre (0,…,0) (squares and mean at once), d={d}", one,
                  np.zeros(d))]
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


#: Half-widths of the per-attribute windows around the differing row's values in which the release probe weighs the
#: synthetic database's mass (the cube's side is 2: a 1/64, 1/16 and 1/4 of it).
WINDOWS: tuple[float, ...] = (1 / 32, 1 / 8, 1 / 2)
#: Widths (of the root mean square distance per attribute) of the Gaussian kernel masses around the differing row.
KERNEL_WIDTHS: tuple[float, ...] = (0.25, 1.0)


def synthetic_features(points: ArrayLike, weights: ArrayLike, centres: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The black-box statistics of a weighted synthetic database at the differing row's values (:func:`probes`).

    For each centre ``c`` (the differing row of each side) and window half-width ``h`` of :data:`WINDOWS`: the
    database's mass within ``h`` of ``c_i`` in each attribute ``i`` (its marginal histogram at the differing cells,
    whatever the method's own grid) and whether that mass is positive (a noisy count clipped at 0 shows only there:
    for Laplace noise on a count this is the sign statistic, close to the likelihood ratio), the mass of the box of
    half-width ``h`` around ``c`` (all attributes at once), and Gaussian kernel masses around ``c``
    (:data:`KERNEL_WIDTHS`); besides them the weighted mean and the weighted second moments (upper triangle).

    Parameters
    ----------
    points : array (m, d)
        The synthetic database's points.
    weights : array (m,)
        Their weights (normalised here).
    centres : mapping name → array (d,)
        Where to look: the differing row's values.

    Returns
    -------
    dict
        ``{feature name: array}``.
    """
    P, w = np.asarray(points, dtype=float), np.asarray(weights, dtype=float)
    total = float(w.sum())
    w = w / total if total != 0 else w
    d = P.shape[1]
    iu = np.triu_indices(d)
    out: dict[str, Any] = {"mean": w @ P, "second": ((P * w[:, None]).T @ P)[iu]}
    for tag, c in centres.items():
        dist = np.abs(P - c[None, :])
        sq = (dist**2).sum(axis=1) / d
        for h in WINDOWS:
            near = dist <= h
            mass = w @ near
            out[f"near ±{h:g} at {tag}"] = mass
            out[f"occupied ±{h:g} at {tag}"] = (mass > 0).astype(float)
            out[f"box ±{h:g} at {tag}"] = float(w @ np.all(near, axis=1))
        for s in KERNEL_WIDTHS:
            out[f"kernel {s:g} at {tag}"] = float(w @ np.exp(-sq / (2 * s * s)))
    return out


def _release_probe(method: Any, pair: NeighbourPair,
                   sigma: float | None = None) -> Callable[[np.ndarray, np.random.Generator], Any]:
    """The whole release as a black box: what ``release(X, rng=...)`` returns and the board scores, its answers to a
    workload of queries centred at the differing row, or :func:`synthetic_features` of its synthetic database (never
    its diagnostics, which the board does not score and a method may fill as it likes)."""
    workload = None
    if getattr(method, "needs_workload", False):
        from dpkit.queries.workload import GaussianKernelWorkload

        pts = [pair.a] + ([pair.b] if pair.b is not None else [-pair.a])
        workload = GaussianKernelWorkload(centres=np.stack(pts)[:, None, :], alphas=np.ones((len(pts), 1)), sigma=1.0)
    centres = {"d0's row": pair.a, **({"d1's row": pair.b} if pair.b is not None else {})}  # a group: " at <row>"
    releaser = method.at_width(sigma) if sigma is not None and callable(getattr(method, "at_width", None)) else method

    def run(X: np.ndarray, rng: np.random.Generator) -> dict[str, Any]:
        rel = releaser.release(X, rng=rng, workload=workload) if workload is not None else releaser.release(X, rng=rng)
        out: dict[str, Any] = {}
        if rel.answers is not None:
            out["answers"] = np.asarray(rel.answers, dtype=float)
        if rel.synthetic is not None:
            syn = check_released_database(rel.synthetic, name="release.synthetic")  # no NaN/negative/zero mass
            out["synthetic"] = synthetic_features(syn.points, syn.weights, centres)
        return out

    return run


def probes(method: Any, pair: NeighbourPair, *, epsilon: float | None = None, delta: float | None = None,
           sigma: float | None = None) -> dict[str, Callable[[np.ndarray, np.random.Generator], Any]]:
    """The probes the gate can audit for ``method`` (:mod:`dpkit.evaluation.gate`): its ``audit_steps`` and its
    ``measure`` where it has them, in this order, then always the whole ``release``.

    ``measure`` is called as :meth:`~dpkit.queries.release.MethodBase.release` calls it, with a fresh ledger holding
    the audited claim ``epsilon``, ``delta`` (default: the method's own); the release at kernel width ``sigma``
    (:meth:`~dpkit.queries.release.MethodBase.at_width`; default: the method as given).
    """
    from dpkit.core.accounting import Ledger

    eps = float(getattr(method, "epsilon", math.inf) if epsilon is None else epsilon)
    dl = float(getattr(method, "delta", 0.0) if delta is None else delta)
    label = str(getattr(method, "name", type(method).__name__))
    out: dict[str, Callable[[np.ndarray, np.random.Generator], Any]] = {}
    steps = _steps_probe(method)
    if steps is not None:
        out["steps"] = steps
    if _overrides_measure(method):
        out["measure"] = lambda X, rng: method.measure(X, rng=rng, ledger=Ledger(eps, dl, name=label))
    out["release"] = _release_probe(method, pair, sigma)
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
class PilotStatistic:
    """``s(y) = (Σ_l w_l ⟨Δ_l, y_l⟩ − c)/scale``; a leaf absent or of another shape counts 0.

    Made by :func:`pilot_statistic`; calling it on a release gives the scalar the gate audits.

    Attributes
    ----------
    paths : tuple of str
        The numeric leaves of the release it reads (each a path with its size).
    directions : tuple of numpy.ndarray
        ``Δ_l``: each leaf's mean shift between the pair on the pilot.
    weights : numpy.ndarray
        ``w_l``, one per leaf.
    centre, scale : float
        ``c``, the weighted projection's pilot mean on the first data set, and the divisor, its pooled pilot
        standard deviation.
    separation : float
        The pilot's separation of the pair (mean shift over standard deviation).
    midpoints : tuple of numpy.ndarray
        Each leaf's pilot mean halfway between the two data sets (the thresholds of its sign statistic).
    """

    paths: tuple[str, ...]
    directions: tuple[np.ndarray, ...]
    weights: np.ndarray
    centre: float
    scale: float
    separation: float
    midpoints: tuple[np.ndarray, ...] = ()

    def _groups(self) -> dict[str, list[int]]:
        """Leaves of one feature at several places (``"… at <row>"``, :func:`synthetic_features`), by feature."""
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(self.paths):
            if " at " in p:
                groups.setdefault(re.sub(r" at [^\[]*", "", p), []).append(i)
        return {g: ix for g, ix in groups.items() if len(ix) > 1}

    def _signed(self) -> list[int]:
        return [i for i, v in enumerate(self.directions) if np.count_nonzero(v) > 1] if self.midpoints else []

    def candidate_names(self) -> list[str]:
        """The names of :meth:`candidates`, in order."""
        signed, groups = self._signed(), self._groups()
        names = ["weighted sum of every leaf's projection"]
        names += [f"projection of {p.lstrip('.')}" for p in self.paths]
        names += [f"sign statistic of {self.paths[i].lstrip('.')}" for i in signed]
        names += [f"projections of {g.lstrip('.')} at every row" for g in groups]
        names += [f"sign statistics of {g.lstrip('.')} at every row" for g, ix in groups.items()
                  if any(i in signed for i in ix)]
        return names

    def candidates(self, output: Any) -> np.ndarray:
        """The candidate statistics of one output (:func:`~dpkit.evaluation.audit.audit_candidates` chooses one on
        its selection half): the weighted sum (:meth:`__call__`), each leaf's projection on its mean shift, for a
        leaf of several shifting coordinates its sign statistic ``Σ_j sign(Δ_j)·sign(y_j − m_j)`` (``m_j`` the
        pilot's midpoint: close to the likelihood ratio for Laplace noise and for a count clipped at 0, where the
        projection is for Gaussian noise), and the sums of both over the places of one feature (the mass near the
        differing row of each side, :func:`synthetic_features`)."""
        leaves = _flat(output)
        t = self.projections(leaves)
        signed, groups = self._signed(), self._groups()
        sign = {}
        for i in signed:
            y = leaves.get(self.paths[i])
            v = self.directions[i]
            if y is None or y.shape != v.shape:
                sign[i] = 0.0
            else:
                y = np.nan_to_num(y, nan=0.0, posinf=0.0, neginf=0.0)
                sign[i] = float(np.sum(np.sign(v) * np.sign(y - self.midpoints[i])))
        out = [float((self.weights @ t - self.centre) / self.scale)] + t.tolist() + [sign[i] for i in signed]
        out += [float(sum(t[i] / max(float(np.dot(self.directions[i], self.directions[i])), 1e-300) for i in ix))
                for ix in groups.values()]
        out += [float(sum(sign.get(i, 0.0) for i in ix)) for ix in groups.values() if any(i in signed for i in ix)]
        return np.asarray(out)

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


def pilot_statistic(probe: Callable[[np.ndarray, np.random.Generator], Any], pair: NeighbourPair, n_pilot: int,
                    seed: np.random.SeedSequence) -> PilotStatistic | None:
    """The statistic of one (probe, pair) from ``n_pilot`` common-random-number draws (:mod:`dpkit.evaluation.gate`).

    Parameters
    ----------
    probe : callable
        ``probe(X, rng)``: the audited output of a method on data ``X``.
    pair : NeighbourPair
        The neighbouring data sets.
    n_pilot : int
        Draws per side; draw ``i`` of both sides uses the same stream.
    seed : numpy.random.SeedSequence
        The pilot's seed (independent of the audit's).

    Returns
    -------
    PilotStatistic or None
        The weighted projection of the leaves that shift clearly, or ``None`` when no leaf does.
    """
    outs0, outs1 = [], []
    for s in seed.spawn(n_pilot):
        outs0.append(_flat(probe(pair.d0, np.random.default_rng(s))))
        outs1.append(_flat(probe(pair.d1, np.random.default_rng(s))))
    def finite(o: Mapping[str, np.ndarray], k: str) -> bool:
        return k in o and bool(np.all(np.isfinite(o[k])))

    # a leaf enters where both sides of at least half the common-random-number draws (and 3) release it
    keys = sorted({k for o in outs0 for k in o})
    paths, dirs, additive, mids = [], [], [], []
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
            mids.append(0.5 * np.mean([y0 + y1 for y0, y1 in both], axis=0))
    if any(additive):
        paths = [p for p, a in zip(paths, additive) if a]
        dirs = [v for v, a in zip(dirs, additive) if a]
        mids = [m for m, a in zip(mids, additive) if a]
    if not paths:
        return None
    stat = PilotStatistic(tuple(paths), tuple(dirs), np.ones(len(paths)), 0.0, 1.0, 0.0)
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
    return PilotStatistic(tuple(paths), tuple(dirs), w, centre, scale, sep, tuple(mids))


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
