"""Private-PGM's mirror descent compiled once per problem size, for estimators refitted every round (AIM).

``mbi``'s :class:`~mbi.estimation.MirrorDescent` compiles (XLA) a new program for every new set of measured cliques.
Here the junction tree is *data*: the same algorithm runs as one program whose inputs are index maps padded to powers
of two, so one compiled program serves every round whose sizes fall in the same buckets.

Algorithm (McKenna, Sheldon & Miklau 2019 [1]_, Alg 1, as ``mbi`` 2.0 implements it):

1. Model: log-potentials on the maximal measured cliques, placed in ``mbi``'s junction tree.
2. Marginals: Hugin message passing in log space, the messages of one level computed together.
3. Loss ``L(μ) = ½ Σ_M ‖(P_M μ − y_M)/σ_M‖²`` on the noisy counts divided by n.
4. Mirror descent with ``mbi``'s Armijo step rule, ``ceil(iters/50)·50`` steps in one ``lax.scan``; warm start from a
   previous model's potentials.

The result is an ``mbi.MarkovRandomField``: ``mbi``'s algorithm, not its bits (marginals differ by about 10⁻⁴).

References
----------
.. [1] R. McKenna, D. Sheldon, G. Miklau. "Graphical-model based estimation and inference for differential
   privacy." ICML 2019.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from dpkit.core.validation import check_choice
from dpkit.methods._discrete import attr_names, fit_model, load_mbi

__all__ = ["ESTIMATORS", "StructurePlan", "fit_model_compiled", "fitter", "hugin_marginals"]

#: The implementations of Private-PGM's estimation a method can choose (its ``estimator`` field): dpkit's,
#: compiled once per padded size (:func:`fit_model_compiled`), or ``mbi``'s own (:func:`~dpkit.methods._discrete.fit_model`).
ESTIMATORS = ("compiled", "mbi")

#: ``mbi``'s ``CALLBACK_EVERY``: its estimator runs whole blocks of this many steps.
STEP_BLOCK = 50
#: The least padded size of any array of the plan.
_MIN_PAD = 8


def _pad(n: int) -> int:
    """``n`` rounded up to a power of two (at least :data:`_MIN_PAD`), leaving room for one dump entry."""
    return max(_MIN_PAD, 1 << int(n).bit_length())


def _cells(width: int, bins: int) -> np.ndarray:
    """All cells of ``width`` attributes with ``bins`` values each, in C order, as rows of codes."""
    if width == 0:
        return np.zeros((1, 0), dtype=np.int64)
    grids = np.meshgrid(*[np.arange(bins)] * width, indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def _sub_index(cells: np.ndarray, attrs: Sequence[Any], sub: Sequence[Any], bins: int) -> np.ndarray:
    """The flat index (C order over ``sub``) of each of ``cells`` (rows over ``attrs``) in the sub-table ``sub``."""
    idx = np.zeros(len(cells), dtype=np.int64)
    for a in sub:
        idx = idx * bins + cells[:, list(attrs).index(a)]
    return idx


@dataclass(frozen=True)
class StructurePlan:
    """The index maps of one model structure, padded (module docstring).

    ``arrays``: the program's inputs (numpy, int32/bool/float32); ``cliques``: the loss cliques in ``mbi``'s
    order, ``offsets``: where each one's cells start in θ, ``theta_size``: θ's padded length; ``shape_key``: the
    padded sizes (one compiled program per distinct key)."""

    arrays: dict[str, np.ndarray]
    cliques: list[tuple[Any, ...]]
    offsets: list[int]
    bins: int
    lipschitz: float
    theta_size: int

    @property
    def shape_key(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        return tuple((k, v.shape) for k, v in sorted(self.arrays.items()))


def plan_structure(domain: Any, measurements: Sequence[Any], bins: int) -> StructurePlan:
    """The :class:`StructurePlan` of ``mbi`` measurements (``LinearMeasurement``, identity queries) on ``domain``.

    Raises
    ------
    ValueError
        When the attributes do not all have ``bins`` values.
    """
    load_mbi()
    from mbi import clique_utils, junction_tree, marginal_loss

    if any(int(s) != bins for s in domain.shape):
        raise ValueError(f"bins: every attribute must have {bins} values; got {list(domain.shape)}")
    loss_fn = marginal_loss.from_linear_measurements(list(measurements), domain)
    cliques = [tuple(c) for c in loss_fn.cliques]
    tree, _order = junction_tree.make_junction_tree(domain, cliques)
    maxc = [tuple(c) for c in junction_tree.maximal_cliques(tree)]
    kid = {c: k for k, c in enumerate(maxc)}
    cells_of = [_cells(len(c), bins) for c in maxc]
    # θ: the loss cliques' cells, then one zero entry
    offsets, t = [], 0
    for c in cliques:
        offsets.append(t)
        t += bins ** len(c)
    T = _pad(t)
    zero_t = T - 1
    # beliefs: the maximal cliques' cells, then one dump cell (always -inf)
    coff, nc = [], 0
    for cells in cells_of:
        coff.append(nc)
        nc += len(cells)
    C = _pad(nc)
    dump = C - 1
    owner = [next(k for k, m in enumerate(maxc) if set(c) <= set(m)) for c in cliques]
    slots = [sum(1 for o in owner if o == k) for k in range(len(maxc))]
    S = _pad(max(slots) if slots else 1)
    expand = np.full((C, S), zero_t, dtype=np.int32)
    clique_id = np.full(C, len(maxc), dtype=np.int32)
    valid = np.zeros(C, dtype=bool)
    for k, cells in enumerate(cells_of):
        clique_id[coff[k]:coff[k] + len(cells)] = k
        valid[coff[k]:coff[k] + len(cells)] = True
    used = [0] * len(maxc)
    out_src, out_dst = [], []
    for ci, c in enumerate(cliques):
        k = owner[ci]
        rows = slice(coff[k], coff[k] + len(cells_of[k]))
        sub = offsets[ci] + _sub_index(cells_of[k], maxc[k], c, bins)
        expand[rows, used[k]] = sub
        used[k] += 1
        out_src.append(np.arange(rows.start, rows.stop))
        out_dst.append(sub)
    o_src, o_dst = np.concatenate(out_src), np.concatenate(out_dst)
    n_out = _pad(len(o_src))
    o_src = np.pad(o_src, (0, n_out - len(o_src)), constant_values=dump).astype(np.int32)
    o_dst = np.pad(o_dst, (0, n_out - len(o_dst)), constant_values=zero_t).astype(np.int32)
    # messages by level; separators in sorted attribute order for both directions
    order = [(tuple(i), tuple(j)) for i, j in junction_tree.message_passing_order(tree)]
    nbrs = {m: [tuple(x) for x in tree.neighbors(m)] for m in maxc}
    level: dict[tuple[tuple[Any, ...], tuple[Any, ...]], int] = {}
    for i, j in order:
        level[(i, j)] = 1 + max([level[(k, i)] for k in nbrs[i] if k != j], default=-1)
    n_levels = max(level.values(), default=-1) + 1
    moff, nm = {}, 0
    for i, j in order:
        moff[(i, j)] = nm
        nm += bins ** len(set(i) & set(j))
    M = _pad(nm)
    zero_m = M - 1
    per_level = [[e for e in order if level[e] == lv] for lv in range(n_levels)]
    width = max((sum(len(cells_of[kid[i]]) for i, _j in es) for es in per_level), default=1)
    width = max(width, max((sum(len(cells_of[kid[j]]) for _i, j in es) for es in per_level), default=1))
    E, L = _pad(width), _pad(n_levels)
    e_src = np.full((L, E), dump, dtype=np.int32)
    e_seg = np.full((L, E), zero_m, dtype=np.int32)
    e_rev = np.full((L, E), zero_m, dtype=np.int32)
    f_dst = np.full((L, E), dump, dtype=np.int32)
    f_msg = np.full((L, E), zero_m, dtype=np.int32)
    written = np.zeros((L, M), dtype=bool)
    for lv, es in enumerate(per_level):
        a = b = 0
        for i, j in es:
            sep = sorted(set(i) & set(j), key=list(domain.attributes).index)
            ki, kj = kid[i], kid[j]
            si = _sub_index(cells_of[ki], i, sep, bins)
            sj = _sub_index(cells_of[kj], j, sep, bins)
            e_src[lv, a:a + len(si)] = coff[ki] + np.arange(len(si))
            e_seg[lv, a:a + len(si)] = moff[(i, j)] + si
            if level[(j, i)] < lv:
                e_rev[lv, a:a + len(si)] = moff[(j, i)] + si
            a += len(si)
            f_dst[lv, b:b + len(sj)] = coff[kj] + np.arange(len(sj))
            f_msg[lv, b:b + len(sj)] = moff[(i, j)] + sj
            b += len(sj)
            written[lv, moff[(i, j)]:moff[(i, j)] + bins ** len(sep)] = True
    # the measurements: cells of the routed loss clique -> cells of the measured clique
    route = clique_utils.clique_mapping(cliques, [tuple(m.clique) for m in measurements], domain)
    pos = {c: k for k, c in enumerate(cliques)}
    m_src, m_dst, ys, ws, ny = [], [], [], [], 0
    for m in measurements:
        q = tuple(route[tuple(m.clique)])
        qc = _cells(len(q), bins)
        m_src.append(offsets[pos[q]] + np.arange(len(qc)))
        m_dst.append(ny + _sub_index(qc, q, tuple(m.clique), bins))
        y = np.asarray(m.noisy_measurement, dtype=np.float32).ravel()
        ys.append(y)
        ws.append(np.full(len(y), 1.0 / max(float(m.stddev), 1e-12), dtype=np.float32))
        ny += len(y)
    src, dst = np.concatenate(m_src), np.concatenate(m_dst)
    P, Y = _pad(len(src)), _pad(ny)
    arrays = {
        "expand": expand, "clique_id": clique_id, "valid": valid,
        "e_src": e_src, "e_seg": e_seg, "e_rev": e_rev, "f_dst": f_dst, "f_msg": f_msg, "written": written,
        "o_src": o_src, "o_dst": o_dst, "n_levels": np.asarray(n_levels, dtype=np.int32),
        "m_src": np.pad(src, (0, P - len(src)), constant_values=zero_t).astype(np.int32),
        "m_dst": np.pad(dst, (0, P - len(dst)), constant_values=Y - 1).astype(np.int32),
        "y": np.pad(np.concatenate(ys), (0, Y - ny)).astype(np.float32),
        "w": np.pad(np.concatenate(ws), (0, Y - ny)).astype(np.float32),
        "n_cliques": np.zeros(_pad(len(maxc)), dtype=bool),  # its shape: the padded number of maximal cliques
    }
    return StructurePlan(arrays=arrays, cliques=cliques, offsets=offsets, bins=bins,
                         lipschitz=float(loss_fn.lipschitz), theta_size=T)


@cache
def _programs() -> dict[str, Any]:
    """The compiled functions (JAX imported on first use; jit caches one program per padded shape)."""
    import jax
    import jax.numpy as jnp

    def seg_lse(x: Any, seg: Any, n: int) -> Any:
        mx = jax.ops.segment_max(x, seg, num_segments=n)
        mx = jnp.where(jnp.isfinite(mx), mx, 0.0)
        s = jax.ops.segment_sum(jnp.exp(x - mx[seg]), seg, num_segments=n)
        return jnp.log(jnp.maximum(s, jnp.finfo(x.dtype).tiny)) + mx

    def marginals(theta: Any, pl: dict[str, Any]) -> Any:
        neg = jnp.asarray(-1e30, theta.dtype)
        valid = pl["valid"]
        n_msg = pl["written"].shape[1]
        b = jnp.where(valid, theta[pl["expand"]].sum(-1), neg)
        msgs = jnp.zeros(n_msg, theta.dtype)

        def level(lv: Any, carry: Any) -> Any:
            b, msgs = carry
            tau = b[pl["e_src"][lv]] - msgs[pl["e_rev"][lv]]
            new = seg_lse(tau, pl["e_seg"][lv], n_msg)
            msgs = jnp.where(pl["written"][lv], new, msgs).at[-1].set(0.0)
            b = b.at[pl["f_dst"][lv]].add(msgs[pl["f_msg"][lv]])
            return jnp.where(valid, b, neg), msgs

        b, _ = jax.lax.fori_loop(0, pl["n_levels"], level, (b, msgs))
        logz = seg_lse(b, pl["clique_id"], pl["n_cliques"].shape[0] + 1)
        p = jnp.where(valid, jnp.exp(b - logz[pl["clique_id"]]), 0.0)
        return jax.ops.segment_sum(p[pl["o_src"]], pl["o_dst"], num_segments=theta.shape[0])

    def loss(mu: Any, pl: dict[str, Any]) -> Any:
        proj = jax.ops.segment_sum(mu[pl["m_src"]], pl["m_dst"], num_segments=pl["y"].shape[0])
        r = (proj - pl["y"]) * pl["w"]
        return 0.5 * jnp.vdot(r, r)

    @jax.jit(static_argnames=["steps"])
    def descend(theta: Any, alpha: Any, pl: dict[str, Any], steps: int) -> Any:
        mu = marginals(theta, pl)
        value = loss(mu, pl)

        def step(carry: Any, _x: Any) -> Any:
            th, mu, value, a = carry
            g = jax.grad(loss)(mu, pl)
            th2 = th - a * g
            mu2 = marginals(th2, pl)
            value2 = loss(mu2, pl)
            ok = value - value2 >= 0.5 * a * jnp.vdot(g, mu - mu2)
            return (jnp.where(ok, th2, th), jnp.where(ok, mu2, mu), jnp.where(ok, value2, value),
                    jnp.where(ok, 1.01 * a, 0.5 * a)), None

        (theta, mu, value, _a), _ = jax.lax.scan(step, (theta, mu, value, alpha), None, length=steps)
        return theta, mu, value

    return {"marginals": jax.jit(marginals), "descend": descend, "loss": jax.jit(loss)}


def hugin_marginals(plan: StructurePlan, theta: np.ndarray) -> np.ndarray:
    """The loss cliques' marginals (probabilities, θ's flat layout) of the potentials ``theta`` (the oracle alone)."""
    import jax.numpy as jnp

    return np.asarray(_programs()["marginals"](jnp.asarray(theta, dtype=jnp.float32), plan.arrays))


def _flat_potentials(plan: StructurePlan, warm_start: Any) -> np.ndarray:
    """θ's flat vector: zeros, or ``warm_start``'s potentials expanded onto the plan's loss cliques."""
    theta = np.zeros(plan.theta_size, dtype=np.float32)
    if warm_start is None:
        return theta
    pot = warm_start.potentials.expand(plan.cliques)
    for c, o in zip(plan.cliques, plan.offsets):
        v = np.asarray(pot[c].values, dtype=np.float32)
        theta[o:o + v.size] = v.ravel()
    return theta


def fit_model_compiled(measurements: Sequence[tuple[Sequence[int], Any, float]], *, d: int, bins: int, n: int,
                       iters: int, warm_start: Any = None) -> Any:
    """Private-PGM's mirror-descent estimate (module docstring), compiled once per padded size.

    Parameters
    ----------
    measurements : sequence of (clique, noisy counts, σ)
        Cliques as attribute indices 0 … d − 1, counts flattened in C order over the clique, σ the noise's
        standard deviation (counts, not yet divided by n).
    d, bins, n : int
        Attributes, cells per attribute, public number of rows (the total; counts are divided by it).
    iters : int
        Mirror-descent steps, rounded up to whole blocks of 50 as ``mbi`` runs them.
    warm_start : mbi.MarkovRandomField or None
        A previous model whose potentials start the descent.

    Returns
    -------
    mbi.MarkovRandomField
        Potentials and marginals on the loss cliques, total 1.

    Raises
    ------
    ValueError
        When ``iters`` < 1 or ``measurements`` is empty.
    """
    if int(iters) < 1:
        raise ValueError(f"iters must be >= 1; got {iters}")
    if not measurements:
        raise ValueError("measurements: at least one measurement is needed")
    mbi = load_mbi()
    import jax.numpy as jnp

    names = attr_names(d)
    domain = mbi.Domain(names, [bins] * d)
    ms = [mbi.LinearMeasurement(np.asarray(y, dtype=float) / n, tuple(names[i] for i in cl), stddev=float(s) / n)
          for cl, y, s in measurements]
    plan = plan_structure(domain, ms, bins)
    theta0 = _flat_potentials(plan, warm_start)
    steps = STEP_BLOCK * math.ceil(int(iters) / STEP_BLOCK)
    theta, mu, _value = _programs()["descend"](jnp.asarray(theta0), jnp.float32(2.0 / plan.lipschitz), plan.arrays,
                                               steps=steps)
    theta, mu = np.asarray(theta), np.asarray(mu)
    pots, margs = {}, {}
    for c, o in zip(plan.cliques, plan.offsets):
        shape = (bins,) * len(c)
        size = bins ** len(c)
        pots[c] = mbi.Factor(domain.project(c), jnp.asarray(theta[o:o + size].reshape(shape)))
        margs[c] = mbi.Factor(domain.project(c), jnp.asarray(mu[o:o + size].reshape(shape)))
    return mbi.MarkovRandomField(potentials=mbi.CliqueVector(domain, plan.cliques, pots),
                                 marginals=mbi.CliqueVector(domain, plan.cliques, margs), total=1.0)



def fitter(estimator: str) -> Callable[..., Any]:
    """The estimation function of ``estimator`` (one of :data:`ESTIMATORS`), with :func:`fit_model_compiled`'s signature.

    Raises
    ------
    ValueError
        When ``estimator`` is not one of :data:`ESTIMATORS`, naming the choices.
    """
    check_choice(estimator, name="estimator", choices=ESTIMATORS)
    return fit_model_compiled if estimator == "compiled" else fit_model
