"""Shared pieces of the marginal-based methods (MST, AIM): a public grid, zCDP accounting, mbi estimation, sampling.

* **Public grid.** Each attribute of [-1, 1] is cut into ``bins`` equal cells; the cell edges depend
  only on ``bins`` (never on the data), so the discretisation is free. A record becomes a vector
  of cell codes; a synthetic record is drawn uniformly inside its cells (:func:`uniform_in_cells`).
* **zCDP → (ε, δ).** Concentrated DP (Bun & Steinke 2016) composes by adding ρ; the total ρ is
  converted to (ε, δ) with the tight conversion of Canonne, Kamath & Steinke (2020, "The Discrete
  Gaussian for Differential Privacy", Prop 12 / Cor 13; the ``cdp_delta`` of their code):

  ``δ(ρ, ε) = inf_{α > 1} exp((α − 1)(αρ − ε)) / (α − 1) · (1 − 1/α)^α``.

  The exponent is convex in α (its derivative ``(2α − 1)ρ − ε + log(1 − 1/α)`` is increasing), so
  the infimum is at the derivative's root, found by :func:`scipy.optimize.brentq`; any α gives a
  valid δ, so a root that is slightly off only makes δ larger. :func:`cdp_rho` inverts it: the
  largest ρ with ``δ(ρ, ε) ≤ δ``, by bisection on ρ (δ(·, ε) is increasing), returning the
  feasible end of the bracket.
* **Estimation.** The noisy marginals are fit by Private-PGM (McKenna, Sheldon & Miklau 2019,
  Alg 1: mirror descent over the marginal polytope, ``mbi.estimation.MirrorDescent``) on
  normalised frequencies (counts / n, n public), which keeps JAX's float32 well conditioned.
* **Sampling.** ``mbi``'s own ``synthetic_data`` draws from NumPy's global state; here rows are
  drawn i.i.d. from the fitted graphical model along the junction tree's elimination order, each
  attribute from its conditional given the attributes already drawn (the same scheme), with the
  caller's ``rng`` only.

* **Compilation cache.** ``mbi`` compiles (XLA) one estimator per clique structure, seconds to a minute
  each, while running it takes milliseconds. On first use :func:`_mbi` points JAX's persistent
  compilation cache at ``$DPKIT_CACHE_DIR/jax`` (default ``~/.cache/dpkit/jax``; ``DPKIT_CACHE_DIR=off``
  or ``DPKIT_JAX_CACHE=0``
  turns it off; a cache directory the caller already configured is kept), so a structure compiled
  once — in any process — is loaded instead of recompiled. The cache stores the compiled
  executable, so results are bit-identical with and without it (tests/test_method_mst.py).
* **Model queries.** :func:`model_marginals` reads marginals of a fitted model exactly: from a model
  clique that contains the query; across connected components of the model's cliques as the product
  of the parts (they are independent); a pair inside one component from that component's calibrated
  elimination tree (:class:`CalibratedTree`, log-domain sum-product, all pairs of a round in one pass);
  a larger part by contracting the component's exponentiated potentials pairwise (rescaled, or in the
  log domain where that could underflow) — no per-query compilation, unlike ``mbi``'s variable elimination.
* **zCDP ledger.** :class:`ZCDPLedger` records ρ per step of a zCDP mechanism, refuses a step that
  would exceed the total ρ and reports whether the steps add up to it.

``mbi`` (and JAX) are optional dependencies (``pip install dpkit[marginal]``), imported on first use.
"""
from __future__ import annotations

import functools
import math
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from dpkit.core.validation import check_delta, check_epsilon, check_int_in_range, check_real_in_range
from dpkit.queries.disk_cache import cache_dir
from dpkit.queries.synthetic import WeightedDatabase

__all__ = ["cdp_delta", "cdp_rho", "MAX_ZCDP_EPSILON", "check_zcdp_budget", "grid_codes", "uniform_in_cells",
           "pair_counts", "project_simplex", "Measurement", "fit_model", "sample_model", "synthetic_database",
           "attr_names", "model_marginals", "ZCDPLedger", "jax_cache_dir", "normalised_contraction", "log_contraction",
           "CalibratedTree"]

Measurement = tuple[tuple[int, ...], np.ndarray, float]
"""A noisy marginal: (attribute indices, noisy counts flattened in C order, noise standard deviation)."""


# ----------------------------------------------------------------------------- zCDP accounting
def _log_delta_at(alpha: float, rho: float, epsilon: float) -> float:
    return (alpha - 1.0) * (alpha * rho - epsilon) + alpha * math.log1p(-1.0 / alpha) - math.log(alpha - 1.0)


def cdp_delta(rho: float, epsilon: float) -> float:
    """δ such that ρ-zCDP implies (ε, δ)-DP (Canonne, Kamath & Steinke 2020, Prop 12 / Cor 13; module docstring).

    Parameters
    ----------
    rho : float
        ρ ≥ 0 (ρ = 0 gives δ = 0).
    epsilon : float
        ε ≥ 0, finite.

    Examples
    --------
    >>> round(cdp_delta(0.5, 3.0), 6) < math.exp(-(3.0 - 0.5) ** 2 / (4 * 0.5))  # tighter than Bun-Steinke's bound
    True
    """
    rho = check_real_in_range(rho, name="rho", low=0.0)
    epsilon = check_real_in_range(epsilon, name="epsilon", low=0.0)
    if math.isinf(rho) or math.isinf(epsilon):
        raise ValueError(f"rho and epsilon must be finite; got rho={rho}, epsilon={epsilon}")
    if rho == 0.0:
        return 0.0

    def slope(alpha: float) -> float:
        return (2.0 * alpha - 1.0) * rho - epsilon + math.log1p(-1.0 / alpha)

    lo, hi = 1.0 + 1e-12, (epsilon + 1.0) / (2.0 * rho) + 2.0
    while slope(hi) < 0.0:  # pragma: no cover - the bracket above always has slope(hi) > 0
        hi *= 2.0
    alpha = lo if slope(lo) >= 0.0 else brentq(slope, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=500)
    log_delta = _log_delta_at(max(alpha, 1.0 + 1e-12), rho, epsilon)
    return 1.0 if log_delta >= 0.0 else math.exp(log_delta)  # δ ≤ 1; exp of a large log δ would overflow


#: The largest ε :func:`cdp_rho` converts: half the largest double. Its bisection on ρ ∈ [0, ε] takes
#: midpoints ``0.5 * (lo + hi)`` with both ends near ε (ρ → ε as ε grows), and ``lo + hi`` overflows to ∞
#: beyond this (any δ).
MAX_ZCDP_EPSILON = sys.float_info.max / 2.0


def check_zcdp_budget(epsilon: float, delta: float) -> None:
    """Refuse, naming ε and δ, a budget the zCDP conversion (δ > 0) cannot take: a finite ε above
    :data:`MAX_ZCDP_EPSILON`, or an (ε, δ) whose ρ (:func:`cdp_rho`) is below the smallest normal double."""
    _check_zcdp_epsilon(epsilon, delta)
    if delta > 0 and math.isfinite(epsilon):
        cdp_rho(epsilon, delta)


def _check_zcdp_epsilon(epsilon: float, delta: float) -> None:
    if delta > 0 and math.isfinite(epsilon) and epsilon > MAX_ZCDP_EPSILON:
        raise ValueError(f"epsilon must be in (0, {MAX_ZCDP_EPSILON:.6g}] for the zCDP conversion at "
                         f"delta = {delta:g}; got epsilon = {epsilon:g}: the conversion's bisection on rho in "
                         "[0, epsilon] adds its bracket ends, which overflows beyond half the largest double")


@functools.lru_cache(maxsize=256)
def cdp_rho(epsilon: float, delta: float) -> float:
    """The largest ρ whose zCDP guarantee implies (ε, δ)-DP under :func:`cdp_delta` (bisection on ρ).

    ε must be at most :data:`MAX_ZCDP_EPSILON`, and ρ at least the smallest normal double (a ValueError
    naming ε and δ otherwise).

    Examples
    --------
    >>> rho = cdp_rho(1.0, 1e-3)
    >>> cdp_delta(rho, 1.0) <= 1e-3
    True
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    _check_zcdp_epsilon(epsilon, delta)
    lo, hi = 0.0, max(epsilon, 1.0)
    while cdp_delta(hi, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if cdp_delta(mid, epsilon) <= delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    if lo < sys.float_info.min:  # ρ ≈ ε²/(4 log(1/δ)) underflows: the noise std √(1/ρ) would be infinite
        raise ValueError(f"epsilon = {epsilon:g} with delta = {delta:g} is too small for the zCDP conversion: rho = "
                         f"{lo:g} is below the smallest normal double {sys.float_info.min:.4g} (the noise std "
                         "sqrt(1/rho) would be infinite); use a larger epsilon or delta")
    return lo


# ----------------------------------------------------------------------------- public grid
def grid_codes(X: np.ndarray, bins: int) -> np.ndarray:
    """Cell index in {0, …, bins − 1} of every coordinate on the public grid of ``bins`` equal cells of [-1, 1]."""
    bins = check_int_in_range(bins, name="bins", low=1)
    return np.minimum(np.floor((np.asarray(X, dtype=float) + 1.0) * (bins / 2.0)), bins - 1).astype(np.int64)


def uniform_in_cells(codes: np.ndarray, bins: int, rng: np.random.Generator) -> np.ndarray:
    """A point drawn uniformly inside each record's cells (the inverse of :func:`grid_codes`)."""
    return -1.0 + (codes + rng.random(codes.shape)) * (2.0 / bins)


def pair_counts(codes: np.ndarray, bins: int) -> np.ndarray:
    """All one- and two-way counts at once: ``C[i, a, j, b] = #{rows : code_i = a, code_j = b}`` (d, bins, d, bins)."""
    n, d = codes.shape
    onehot = np.zeros((n, d * bins))
    onehot[np.arange(n)[:, None], np.arange(d)[None, :] * bins + codes] = 1.0
    return (onehot.T @ onehot).reshape(d, bins, d, bins)


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``v`` onto the probability simplex (Duchi et al. 2008, Fig 1).

    For one-way measurements only, Private-PGM's L2 estimate factorises into exactly this per attribute.
    """
    v = np.atleast_2d(np.asarray(v, dtype=float))
    u = -np.sort(-v, axis=1)
    css = np.cumsum(u, axis=1) - 1.0
    k = np.arange(1, v.shape[1] + 1)
    rho = np.count_nonzero(u - css / k > 0, axis=1)
    if np.any(rho == 0):  # a row's largest entry reaches 2^53, where subtracting 1 is lost (exact: rho >= 1); the
        return project_simplex(v - u[:, :1])  # projection is invariant to a shift of the row: shift its largest to 0
    theta = css[np.arange(v.shape[0]), rho - 1] / rho
    return np.maximum(v - theta[:, None], 0.0)


# ----------------------------------------------------------------------------- mbi estimation and sampling
def jax_cache_dir() -> str | None:
    """The persistent compilation cache directory dpkit sets for JAX (module docstring); ``None`` if turned off."""
    if os.environ.get("DPKIT_JAX_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    if os.environ.get("DPKIT_CACHE_DIR") is not None:  # dpkit's cache root; "off" etc. turn both caches off
        root = cache_dir()
        return None if root is None else os.path.join(root, "jax")
    return os.path.join(os.path.expanduser("~"), ".cache", "dpkit", "jax")  # programs hold no data: per user


@functools.lru_cache(maxsize=1)
def _configure_jax_cache() -> str | None:
    import jax

    if jax.config.jax_compilation_cache_dir:  # the caller's own cache wins
        return str(jax.config.jax_compilation_cache_dir)
    path = jax_cache_dir()
    if path is None:
        return None
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:  # pragma: no cover - read-only home: run without the cache, and say so
        warnings.warn(f"JAX compilation cache not used: cannot create {path!r} ({exc}); set DPKIT_CACHE_DIR",
                      RuntimeWarning, stacklevel=2)
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    # every program, also the small per-operation ones (about 0.1 s each to compile, a few dozen per process)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


def _mbi() -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # mbi's import-time advice about JAX's float32 / cache
            import mbi
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("MST/AIM need the optional dependency mbi>=2.0: pip install 'dpkit[marginal]'") from exc
    _configure_jax_cache()
    return mbi


def attr_names(d: int) -> list[int]:
    """Attribute names of the mbi domain: attribute i is named by the rank of the string ``f"x{i}"``
    among ``x0, …, x{d-1}`` in sorted (lexicographic) order, e.g. d = 12: 0, 1, 4, 5, …, 11, 2, 3.

    Integers, not strings: ``mbi`` builds its junction tree and message schedule partly by iterating
    over sets of attribute names, and Python randomises string hashes per process
    (``PYTHONHASHSEED``), so with the names ``x0, …`` the compiled program — though not its results —
    changed from process to process, and the persistent compilation cache never hit across processes.
    Integer hashes are fixed. The ranks keep every ``sorted`` order of the former names, so the
    junction trees, elimination orders and hence the estimates are those of the names ``x0, …``
    (bit for bit in tests/test_method_mst.py)."""
    order = sorted(range(d), key=lambda i: f"x{i}")
    rank = {i: r for r, i in enumerate(order)}
    return [rank[i] for i in range(d)]


def fit_model(measurements: Sequence[Measurement], *, d: int, bins: int, n: int, iters: int,
              warm_start: Any = None) -> Any:
    """Private-PGM estimate (``MirrorDescent``, ``iters`` steps, optionally warm-started from a previous
    model) of the distribution on the grid from the noisy counts, each divided by the public n (total 1)."""
    mbi = _mbi()
    names = attr_names(d)
    domain = mbi.Domain(names, [bins] * d)
    ms = [mbi.LinearMeasurement(np.asarray(y, dtype=float) / n, tuple(names[i] for i in cl), stddev=float(s) / n)
          for cl, y, s in measurements]
    model = mbi.estimation.MirrorDescent().estimate(domain, ms, known_total=1.0, iters=int(iters),
                                                  warm_start=warm_start)
    _bound_jax_memory(tuple(tuple(cl) for cl, _y, _s in measurements), d, bins)
    return model


#: Distinct model structures whose compiled programs JAX may keep in memory before they are dropped.
MAX_STRUCTURES_IN_MEMORY = 16
_structures: set[tuple[Any, ...]] = set()


def _bound_jax_memory(cliques: tuple[tuple[int, ...], ...], d: int, bins: int) -> None:
    """Drop JAX's in-memory compiled programs once more than :data:`MAX_STRUCTURES_IN_MEMORY` model
    structures have been fitted in this process.

    Every new structure (an MST tree, an AIM round) compiles new programs, which JAX keeps for the
    process's life: about 170 MB per MST release on CRM (d = 101), so a 30-repetition board grew by
    gigabytes. The programs stay in the persistent cache on disk, a structure seen again is loaded from
    there, and compilation is deterministic: the estimates are the same to the bit (tested).
    """
    _structures.add((d, bins, cliques))
    if len(_structures) > MAX_STRUCTURES_IN_MEMORY:
        import jax

        jax.clear_caches()
        _structures.clear()


def synthetic_database(model: Any, m: int, bins: int, rng: np.random.Generator) -> WeightedDatabase:
    """``m`` rows drawn from the model (:func:`sample_model`), each uniform inside its cells, weights 1/m."""
    pts = uniform_in_cells(sample_model(model, m, rng), bins, rng)
    return WeightedDatabase(points=pts, weights=np.full(m, 1.0 / m), m=m)


def sample_model(model: Any, m: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` i.i.d. rows of cell codes (m, d) from a fitted ``mbi.MarkovRandomField`` (module docstring)."""
    mbi = _mbi()
    domain = model.domain
    names = list(domain.attributes)
    index = {a: i for i, a in enumerate(names)}
    jtree, order = mbi.junction_tree.make_junction_tree(domain, [tuple(cl) for cl in model.cliques])
    cliques = [set(cl) for cl in jtree.nodes]
    out = np.zeros((m, len(names)), dtype=np.int64)
    used: set[str] = set()
    for col in order[::-1]:
        parents = sorted(used & set().union(*[c for c in cliques if col in c]), key=index.__getitem__)
        marg = np.asarray(model.project(tuple(parents) + (col,)).datavector(flatten=False), dtype=float)
        marg = np.maximum(marg, 0.0)
        cond = marg[tuple(out[:, index[p]] for p in parents)] if parents else np.broadcast_to(marg, (m, marg.size))
        tot = cond.sum(axis=1, keepdims=True)
        cond = np.where(tot > 0, cond / np.where(tot > 0, tot, 1.0), 1.0 / marg.shape[-1])
        cdf = np.cumsum(cond, axis=1)
        cdf[:, -1] = 1.0
        out[:, index[col]] = np.minimum((cdf < rng.random((m, 1))).sum(axis=1), marg.shape[-1] - 1)
        used.add(col)
    return out


def components(n: int, groups: Sequence[Sequence[int]]) -> list[int]:
    """The connected component of each of the vertices 0, …, n − 1 of the graph that joins the members of every
    group (a clique), as labels 0, 1, … in order of each component's lowest vertex
    (:func:`scipy.sparse.csgraph.connected_components`)."""
    rows = [int(g[0]) for g in groups for _a in g[1:]]
    cols = [int(a) for g in groups for a in g[1:]]
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    _k, labels = connected_components(graph, directed=False)
    return [int(x) for x in labels]


def model_marginals(model: Any, cliques: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """Exact marginals (probabilities, float64, axes in the clique's order) of a fitted ``mbi`` model.

    A query inside a clique of the model is summed from that clique's marginal. The model's distribution
    is ``∝ Π_C exp(θ_C)``, so attributes in different connected components of its cliques are
    independent: a query spanning components is the outer product of its parts' marginals. A pair inside
    one component but outside every clique is read from that component's calibrated elimination tree
    (:class:`CalibratedTree`: exact, in the log domain, built once per component for all the pairs asked
    for). (The factors of other components only scale a component's sum, and its normalisation removes
    them; leaving them out is what makes AIM's rounds on CRM, d = 101, take seconds, not minutes.) A larger
    part contracts the exponentiated potentials ``exp(θ_C − max θ_C)`` of its component pairwise, rescaling
    each intermediate (:func:`normalised_contraction`), or, where that contraction's bound on its underflow
    loss exceeds 10⁻¹² of its maximum (potentials spanning hundreds of nats, as in AIM's late rounds on CRM),
    exactly in the log domain (:func:`log_contraction`).
    """
    index = {a: i for i, a in enumerate(model.domain.attributes)}
    margs = [(tuple(index[a] for a in f.domain.attributes), np.asarray(f.values, dtype=float))
             for f in model.marginals.tables.values()]
    logs = [(np.asarray(f.values, dtype=float), [index[a] for a in f.domain.attributes])
            for f in model.potentials.tables.values()]
    comp = components(len(index), [lab for _v, lab in logs])
    log_members: dict[int, list[tuple[np.ndarray, list[int]]]] = {}
    for v, lab in logs:
        log_members.setdefault(comp[lab[0]], []).append((v, lab))

    def home(q: tuple[int, ...]) -> tuple[tuple[int, ...], np.ndarray] | None:
        return next(((cl, v) for cl, v in margs if set(q) <= set(cl)), None)

    def split(q: tuple[int, ...]) -> list[tuple[int, ...]]:
        groups: dict[int, list[int]] = {}
        for a in q:
            groups.setdefault(comp[a], []).append(a)
        return [tuple(g) for g in groups.values()]

    queries = [tuple(int(a) for a in q) for q in cliques]
    wanted: dict[int, set[tuple[int, int]]] = {}  # pairs outside the model's cliques, per component
    for q in queries:
        for g in split(q):
            if len(g) == 2 and g[0] != g[1] and home(g) is None:
                wanted.setdefault(comp[g[0]], set()).add((g[0], g[1]))
    pairs: dict[tuple[int, int], np.ndarray] = {}
    for c, need in wanted.items():
        pairs.update(CalibratedTree(log_members[c]).pair_marginals(sorted(need)))

    def part(q: tuple[int, ...]) -> np.ndarray:
        found = home(q)
        if found is not None:
            cl, v = found
            m = v.sum(axis=tuple(k for k, a in enumerate(cl) if a not in q))
            m = np.transpose(m, [sorted(set(q), key=cl.index).index(a) for a in q])
        elif q in pairs:
            m = pairs[q]
        else:
            members = log_members[comp[q[0]]]
            m, log_loss = _scaled_contraction([(np.exp(v - v.max()), lab) for v, lab in members], list(q))
            if not log_loss <= _LOG_LOSS_LIMIT:  # the mass barely overlaps: exact in the log domain instead
                m = np.exp(log_contraction(members, list(q)))
        m = np.maximum(m, 0.0)
        return m / m.sum()

    out = []
    for q in queries:
        groups = split(q)
        if len(groups) == 1:
            out.append(part(q))
            continue
        order = [a for g in groups for a in g]
        m = np.ones(())
        for g in groups:
            m = np.multiply.outer(m, part(g))
        out.append(np.transpose(m, [order.index(a) for a in q]))
    return out


def _einsum(*operands: tuple[np.ndarray, Sequence[int]], out: Sequence[int]) -> np.ndarray:
    """``np.einsum`` of ``(array, labels)`` operands onto the labels ``out``, for any integer labels (numpy's
    sublist form accepts only 52 distinct ones, so they are renumbered)."""
    rename: dict[int, int] = {}
    args: list[Any] = []
    for arr, lab in operands:
        args += [arr, [rename.setdefault(x, len(rename)) for x in lab]]
    return np.einsum(*args, [rename[x] for x in out], optimize=False)


def _expand(arr: np.ndarray, labels: Sequence[int], target: Sequence[int]) -> np.ndarray:
    """``arr`` (axes ``labels``, a subset of ``target``) transposed and reshaped to broadcast against ``target``."""
    labels = list(labels)
    present = [x for x in target if x in labels]
    arr = np.transpose(arr, [labels.index(x) for x in present])
    shape = dict(zip(present, arr.shape))
    return arr.reshape([shape.get(x, 1) for x in target])


class CalibratedTree:
    r"""Exact marginals of one connected model ``∝ exp(Σ_k θ_k)`` from a calibrated elimination tree.

    Parameters
    ----------
    log_factors : sequence of (array, labels)
        The potentials θ_k of one connected component (float64 logs; labels are attribute indices).

    Notes
    -----
    The attributes are eliminated greedily, fewest neighbours first (lowest index on ties). Eliminating
    v makes the cluster ``C_v = {v} ∪ N(v)`` (its neighbours at that moment) and joins them; the parent of
    ``C_v`` is the cluster of the neighbour eliminated next, and ``C_v ∩ C_parent = C_v \ {v}`` (the
    separator ``S_v``): a junction tree (Koller & Friedman 2009, Thm 10.4). Each potential goes to the
    cluster of its first-eliminated attribute, which holds all of its attributes. Two passes of log-domain
    sum-product (upward in elimination order, downward in reverse; K&F Alg 10.2, with the incoming message
    subtracted as in HUGIN, all logs finite) give each cluster's log-belief, hence its marginal ``P(C_v)``
    in float64, so nothing underflows however little the factors' mass overlaps.

    A pair (a, b) outside every cluster (:meth:`pair_marginals`) is propagated from a's cluster through the
    tree (K&F §10.3.3, "out-of-clique inference"): carrying ``P(a, C_u)`` to a neighbour C across their
    separator S gives ``P(a, C) = Σ_{C_u \ (S ∪ {a})} P(a, C_u) · P(C) / P(S)``, exact because the tree's
    joint is ``Π P(C) / Π P(S)``; one traversal per source a gives all its pairs.
    """

    def __init__(self, log_factors: Sequence[tuple[np.ndarray, Sequence[int]]]) -> None:
        factors = [(np.asarray(a, dtype=float), [int(x) for x in lab]) for a, lab in log_factors]
        sizes = {x: n for a, lab in factors for x, n in zip(lab, a.shape)}
        adj: dict[int, set[int]] = {x: set() for x in sorted(sizes)}
        for _a, lab in factors:
            for x in lab:
                adj[x].update(y for y in lab if y != x)
        order: list[int] = []
        clusters: dict[int, list[int]] = {}
        while adj:
            v = min(adj, key=lambda u: (len(adj[u]), u))
            nb = adj.pop(v)
            clusters[v] = [v] + sorted(nb)
            for u in nb:
                adj[u] |= nb - {u}
                adj[u].discard(v)
            order.append(v)
        pos = {v: t for t, v in enumerate(order)}
        self.sizes, self.order, self.clusters = sizes, order, clusters
        self.parent = {v: min(clusters[v][1:], key=pos.__getitem__) if len(clusters[v]) > 1 else None for v in order}
        self.children: dict[int, list[int]] = {v: [] for v in order}
        for v in order:
            if self.parent[v] is not None:
                self.children[self.parent[v]].append(v)
        psi = {v: np.zeros([sizes[x] for x in clusters[v]]) for v in order}
        for a, lab in factors:
            v = min(lab, key=pos.__getitem__)
            psi[v] = psi[v] + _expand(a, lab, clusters[v])
        self._calibrate(psi)

    def _separator(self, v: int) -> list[int]:
        return self.clusters[v][1:]

    def _calibrate(self, psi: dict[int, np.ndarray]) -> None:
        from scipy.special import logsumexp

        up: dict[int, np.ndarray] = {}
        down: dict[int, np.ndarray] = {}
        for v in self.order:  # upward: children are eliminated before their parent
            total = psi[v]
            for c in self.children[v]:
                total = total + _expand(up[c], self._separator(c), self.clusters[v])
            if self.parent[v] is not None:
                up[v] = logsumexp(total, axis=0)  # sum out v (the cluster's first label): over S_v
            psi[v] = total  # now ψ_v + every message from below
        self.marginal: dict[int, np.ndarray] = {}
        for v in reversed(self.order):  # downward
            total = psi[v]
            if self.parent[v] is not None:
                total = total + _expand(down[v], self._separator(v), self.clusters[v])
            p = np.exp(total - logsumexp(total))
            self.marginal[v] = p
            for c in self.children[v]:
                sep = self._separator(c)
                rest = tuple(k for k, x in enumerate(self.clusters[v]) if x not in sep)
                msg = total - _expand(up[c], sep, self.clusters[v])
                kept = [x for x in self.clusters[v] if x in sep]
                m = logsumexp(msg, axis=rest) if rest else msg
                down[c] = np.transpose(m, [kept.index(x) for x in sep])

    def _conditional(self, frm: int, to: int) -> tuple[np.ndarray, list[int]]:
        """``P(C_to) / P(S)`` over C_to's labels, S the separator of the tree edge between the two clusters."""
        child = frm if self.parent.get(frm) == to else to
        sep = self._separator(child)
        p, lab = self.marginal[to], self.clusters[to]
        ps = _einsum((p, lab), out=sep)
        denom = _expand(ps, sep, lab)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(denom > 0, p / np.where(denom > 0, denom, 1.0), 0.0), lab

    def pair_marginals(self, pairs: Sequence[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
        """``{(a, b): P(a, b)}`` (axes a, b; each sums to 1 up to rounding) for pairs of this component."""
        want: dict[int, set[int]] = {}
        for a, b in pairs:
            want.setdefault(int(a), set()).add(int(b))
        cond: dict[tuple[int, int], tuple[np.ndarray, list[int]]] = {}
        out: dict[tuple[int, int], np.ndarray] = {}
        for a, bs in want.items():
            start = a
            todo = set(bs)
            stack: list[tuple[int, int | None, np.ndarray, list[int]]] = [
                (start, None, self.marginal[start], self.clusters[start])]
            while stack and todo:
                u, frm, J, lab = stack.pop()
                for b in [b for b in lab if b in todo]:
                    out[(a, b)] = _einsum((J, lab), out=[a, b])
                    todo.discard(b)
                for c in self.children[u] + ([self.parent[u]] if self.parent[u] is not None else []):
                    if c == frm:
                        continue
                    child = c if self.parent.get(c) == u else u
                    sep = self._separator(child)
                    keep = list(dict.fromkeys(sep + [a]))
                    M = _einsum((J, lab), out=keep)
                    if (u, c) not in cond:
                        cond[(u, c)] = self._conditional(u, c)
                    P, plab = cond[(u, c)]
                    new = list(dict.fromkeys(plab + [a]))
                    stack.append((c, u, _einsum((M, keep), (P, plab), out=new), new))
            if todo:
                raise ValueError(f"attributes {sorted(todo)} are not in the component of attribute {a}")
        return {(a, b): out[(a, b)] for a, b in pairs}


def normalised_contraction(factors: Sequence[tuple[np.ndarray, Sequence[int]]], output: Sequence[int]) -> np.ndarray:
    """``Σ_{other labels} Π_k F_k`` over the labels ``output``, up to a positive constant, without underflow.

    The sum-product of non-negative factors (each ``(array, labels)``), contracted pairwise in
    ``opt_einsum``'s greedy order; every intermediate is divided by its maximum. The result is the exact
    contraction times a positive constant (the product of those maxima), which the caller's normalisation
    removes. Contracting all factors at once instead multiplies tens of numbers ≤ 1 per cell: on CTG
    (d = 27), after 23 AIM rounds, every cell of 357 of 406 candidate marginals underflowed to 0 and the
    normalised marginal was 0/0. Where the factors' mass barely overlaps even this underflows
    (:func:`_scaled_contraction` bounds the loss; :func:`log_contraction` is exact there).
    """
    return _scaled_contraction(factors, output)[0]


def _pairwise_steps(ops: list[tuple[np.ndarray, list[int]]], output: Sequence[int]) -> Any:
    """Walk ``opt_einsum``'s greedy pairwise order over the factors ``ops`` (each ``(array, labels)``), in place.

    Each step yields ``(taken, keep)``: the operands it combines (removed from ``ops``) and the labels still
    needed afterwards (the output's and those of the remaining operands). The caller combines ``taken`` and
    appends the result, labelled by its kept labels, to ``ops``; once the walk ends ``ops`` holds one factor.
    """
    import opt_einsum

    path, _ = opt_einsum.contract_path(*[x for op in ops for x in op], list(output), optimize="greedy")
    for step in path:
        taken = [ops[k] for k in step]
        for k in sorted(step, reverse=True):
            del ops[k]
        yield taken, set(output).union(*[set(lab) for _a, lab in ops])


def _scaled_contraction(factors: Sequence[tuple[np.ndarray, Sequence[int]]],
                        output: Sequence[int]) -> tuple[np.ndarray, float]:
    """:func:`normalised_contraction` and ``log B``, a bound on how much it may have lost to underflow.

    Every intermediate of factors with maximum 1 has maximum ≤ n (the terms per cell), so a step maps
    absolute errors δ_A, δ_B of its inputs (maximum 1) and its own flush to zero below ``tiny`` (the
    smallest normal float64) to ``(n (δ_A + δ_B) + tiny)/top`` after the division by its maximum ``top``.
    By induction the result (maximum 1) is within ``tiny · (steps + 1) · Π_steps 2n/top`` of the exact
    scaled contraction, entrywise; ``log B`` is the logarithm of that bound (``inf`` when a step was all zero).
    """
    import opt_einsum

    ops = [(np.asarray(a, dtype=float), list(lab)) for a, lab in factors]
    step_terms = []
    for taken, keep in _pairwise_steps(ops, output):
        labels = list(dict.fromkeys(x for _a, lab in taken for x in lab if x in keep))
        arr = opt_einsum.contract(*[x for op in taken for x in op], labels)
        top = float(np.max(arr)) if arr.size else 0.0
        sizes = {x: n for a, lab in taken for x, n in zip(lab, a.shape)}
        terms = math.prod(n for x, n in sizes.items() if x not in keep)
        step_terms.append(math.log(2.0 * terms) - math.log(top) if top > 0 else math.inf)
        ops.append((arr / top if top > 0 else arr, labels))
    (arr, labels), = ops
    log_bound = math.log(np.finfo(float).tiny) + math.log(len(step_terms) + 1)
    for term in step_terms:
        log_bound += term
    return np.transpose(arr, [labels.index(x) for x in output]), log_bound


def log_contraction(log_factors: Sequence[tuple[np.ndarray, Sequence[int]]], output: Sequence[int]) -> np.ndarray:
    """``log Σ_{other labels} exp(Σ_k θ_k)`` over the labels ``output``, up to an additive constant, exactly.

    The log-domain sum-product of the potentials θ_k (each ``(array, labels)``), in the pairwise order of
    :func:`normalised_contraction`: each step adds its operands broadcast over the union of their labels
    and sums out the labels no longer needed by log-sum-exp (:func:`scipy.special.logsumexp`), so nothing
    underflows however little the factors' mass overlaps. It costs the union of every step's labels in
    memory (refused above 2·10⁷ cells) and is used where the scaled contraction's loss bound is too large.
    """
    from scipy.special import logsumexp

    ops = [(np.asarray(a, dtype=float), list(lab)) for a, lab in log_factors]
    for taken, keep in _pairwise_steps(ops, output):
        union = list(dict.fromkeys(x for _a, lab in taken for x in lab))
        sizes = {x: n for a, lab in taken for x, n in zip(lab, a.shape)}
        cells = math.prod(sizes[x] for x in union)
        if cells > 2 * 10**7:
            raise MemoryError(f"log_contraction: a step spans {cells} cells (labels {union}); more than 2e7")
        total = np.zeros([sizes[x] for x in union])
        for a, lab in taken:
            shape = [sizes[x] if x in lab else 1 for x in union]
            total = total + np.transpose(a, [lab.index(x) for x in union if x in lab]).reshape(shape)
        gone = tuple(i for i, x in enumerate(union) if x not in keep)
        labels = [x for x in union if x in keep]
        arr = logsumexp(total, axis=gone) if gone else total
        ops.append((arr - np.max(arr), labels))
    (arr, labels), = ops
    return np.transpose(arr, [labels.index(x) for x in output])


#: Largest accepted bound (natural log) on the scaled contraction's underflow loss: 10⁻¹² of its maximum.
_LOG_LOSS_LIMIT = math.log(1e-12)


class ZCDPLedger:
    """ρ spent per step of a zCDP mechanism (Bun & Steinke 2016, Lemma 1.7: ρ adds up under composition).

    A step that would take the total beyond ``rho`` (relative tolerance 10⁻¹²) is refused with
    :class:`~dpkit.core.exceptions.BudgetExceededError` before anything is recorded.

    >>> led = ZCDPLedger(0.5)
    >>> led.charge("one-way", 0.2, sigma=3.0)
    0.2
    >>> round(led.remaining, 12)
    0.3
    """

    def __init__(self, rho: float) -> None:
        self.rho = check_real_in_range(rho, name="rho", low=0.0, low_inclusive=False)
        self.steps: list[dict[str, Any]] = []

    @property
    def spent(self) -> float:
        return math.fsum(s["rho"] for s in self.steps)

    @property
    def remaining(self) -> float:
        return max(self.rho - self.spent, 0.0)

    def charge(self, name: str, rho: float, **meta: Any) -> float:
        """Record ``rho`` for the step ``name``; refuse it if the total would exceed the budget."""
        from dpkit.core.exceptions import BudgetExceededError

        rho = check_real_in_range(rho, name="rho", low=0.0)
        if self.spent + rho > self.rho * (1.0 + 1e-12):
            raise BudgetExceededError(f"zCDP step {name!r} of rho={rho:.6g} would exceed the budget rho={self.rho:.6g} "
                                      f"(spent {self.spent:.6g})")
        self.steps.append({"name": name, "rho": float(rho), **meta})
        return float(rho)

    def to_list(self) -> list[dict[str, Any]]:
        return [dict(s) for s in self.steps]
