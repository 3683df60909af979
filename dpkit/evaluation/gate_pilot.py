"""What the audit gate audits, chosen before its audit: the neighbour pairs, the probes of a method and the
candidate statistics of a probe's output, chosen on a pilot.

:func:`neighbour_pairs` makes the gate's worst-case neighbouring data sets (replace-one or add/remove);
:func:`probes` lists what can be audited of a method (its ``audit_steps``, its ``measure``, and always its whole
``release`` as a black box, :func:`synthetic_features`); :func:`pilot_statistic` finds, on common-random-number draws
independent of the audit's, the leaves of the output that shift between a pair and the candidate statistics built on
them (:class:`PilotStatistic`), among which the audit's selection half chooses. :mod:`dpkit.evaluation.gate`
describes all three, runs the pilots and the audits (:func:`~dpkit.evaluation.gate.audit_gate`); it re-exports
:class:`NeighbourPair`, :func:`neighbour_pairs` and :func:`probes`.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.rng import spawn_seeds
from dpkit.core.validation import check_choice, check_int_in_range
from dpkit.queries.release import MethodBase
from dpkit.queries.synthetic import check_released_database

__all__ = ["NeighbourPair", "neighbour_pairs", "probes", "synthetic_features", "WINDOWS", "KERNEL_WIDTHS",
           "PilotStatistic", "pilot_statistic"]

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

