"""Shared pieces of the marginal-based methods (MST, AIM): a public grid, mbi estimation, sampling.

* **Public grid.** Each attribute of [-1, 1] is cut into ``bins`` equal cells that depend only on ``bins``, so the
  discretisation is free; a synthetic record is drawn uniformly inside its cells (:func:`uniform_in_cells`).
* **Estimation.** Private-PGM (McKenna, Sheldon & Miklau 2019, Alg 1) on normalised frequencies (counts / n, n public).
* **Sampling.** Rows drawn from the fitted model along the junction tree's elimination order with the caller's
  ``rng`` only (``mbi``'s own sampler uses NumPy's global state).
* **Model queries.** :func:`model_marginals` reads a fitted model's marginals exactly, without per-query compilation
  (:mod:`dpkit.methods._contraction`).
* **Compilation cache.** :func:`load_mbi` points JAX's persistent compilation cache at dpkit's cache folder (the
  settings ``DPKIT_CACHE_DIR``, ``DPKIT_JAX_CACHE``); results are bit-identical with and without it.

The zCDP accounting is :mod:`dpkit.core.zcdp`. ``mbi`` and JAX are optional dependencies (the ``marginal`` extra).
"""
from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from dpkit.core.settings import setting
from dpkit.core.validation import check_int_in_range
from dpkit.methods._contraction import LOG_LOSS_LIMIT, CalibratedTree, log_contraction, scaled_contraction
from dpkit.queries.disk_cache import cache_dir
from dpkit.queries.synthetic import WeightedDatabase

__all__ = [
    "grid_codes",
    "uniform_in_cells",
    "cell_cdf",
    "pair_counts",
    "project_simplex",
    "Measurement",
    "fit_model",
    "sample_model",
    "synthetic_database",
    "attr_names",
    "model_marginals",
    "jax_cache_dir",
    "load_mbi",
    "MBI_IMPORT_ADVICE",
]

Measurement = tuple[tuple[int, ...], np.ndarray, float]
"""A noisy marginal: (attribute indices, noisy counts flattened in C order, noise standard deviation)."""


# ----------------------------------------------------------------------------- public grid
def grid_codes(X: np.ndarray, bins: int) -> np.ndarray:
    """Cell index in {0, …, bins − 1} of every coordinate on the public grid of ``bins`` equal cells of [-1, 1]."""
    bins = check_int_in_range(bins, name="bins", low=1)
    return np.minimum(np.floor((np.asarray(X, dtype=float) + 1.0) * (bins / 2.0)), bins - 1).astype(np.int64)


def uniform_in_cells(codes: np.ndarray, bins: int, rng: np.random.Generator) -> np.ndarray:
    """A point drawn uniformly inside each record's cells (the inverse of :func:`grid_codes`)."""
    return -1.0 + (codes + rng.random(codes.shape)) * (2.0 / bins)


def cell_cdf(P: np.ndarray) -> np.ndarray:
    """Per row of non-negative cell weights ``P`` (rows, cells), the cumulative distribution over its cells:
    the row normalised (uniform if it sums to 0), its last entry set to exactly 1 (for inverse-CDF draws)."""
    tot = P.sum(axis=1, keepdims=True)
    P = np.where(tot > 0, P / np.where(tot > 0, tot, 1.0), 1.0 / P.shape[-1])
    cdf = np.cumsum(P, axis=1)
    cdf[:, -1] = 1.0
    return cdf


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
    if (setting("DPKIT_JAX_CACHE") or "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    if setting("DPKIT_CACHE_DIR") is not None:  # dpkit's cache root; "off" etc. turn both caches off
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
    # every program, also the small per-operation ones (a few dozen per process)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


#: The two ``UserWarning``\ s ``mbi`` emits when it is first imported (its ``__init__``), as message patterns for
#: :func:`warnings.filterwarnings`: JAX runs in float32 (dpkit fits normalised frequencies, module docstring), and
#: JAX's persistent compilation cache is on (dpkit turns it on on purpose: one program per structure, loaded
#: instead of compiled again). :func:`load_mbi` silences these two, by message and category; any other warning
#: of the import is shown.
MBI_IMPORT_ADVICE: tuple[str, ...] = (r"JAX is running in float32 mode", r"JAX persistent compilation cache is enabled")


def load_mbi() -> Any:
    """The ``mbi`` package (Private-PGM), imported on first use, with JAX's persistent compilation cache set up;
    ``mbi``'s import-time advice (:data:`MBI_IMPORT_ADVICE`) is not printed.

    Returns
    -------
    module
        ``mbi``.

    Raises
    ------
    ImportError
        When ``mbi`` is not installed, naming the optional dependency ``dpkit[marginal]``.
    """
    try:
        with warnings.catch_warnings():
            for message in MBI_IMPORT_ADVICE:  # mbi's two import-time notes, and nothing else
                warnings.filterwarnings("ignore", message=message, category=UserWarning)
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
    mbi = load_mbi()
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
    return WeightedDatabase.equally_weighted(pts)


def sample_model(model: Any, m: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` i.i.d. rows of cell codes (m, d) from a fitted ``mbi.MarkovRandomField`` (module docstring)."""
    mbi = load_mbi()
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
        cdf = cell_cdf(cond)
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
    them; leaving them out is what keeps AIM's rounds on CRM, d = 101, cheap.) A larger
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
            m, log_loss = scaled_contraction([(np.exp(v - v.max()), lab) for v, lab in members], list(q))
            if not log_loss <= LOG_LOSS_LIMIT:  # the mass barely overlaps: exact in the log domain instead
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
