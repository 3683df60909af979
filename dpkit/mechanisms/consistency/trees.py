"""Hierarchical-tree consistency, the per-day combo projection, Algorithm 1 and the one-pass closed form.

Cai et al. 2021, Sec. 7 (docs/science/consistency.md). A complete k-ary tree over ``T`` days is stored in heap layout,
a release for ``c`` items as ``(n_nodes, c)``, every operation batched over the trailing axes:

1. :func:`boost`: Hay et al. (2010) Boosting, the exact projection onto ``x_parent = Σ x_children``;
2. :func:`combo_projector`: ``Π = I − Bᵀ(BBᵀ)⁻¹B``, the per-day projection onto ``B v = 0`` (eq. 13);
3. :func:`algorithm1`: Algorithm 1, Boosting and ``Π`` on the leaves, alternated;
4. :func:`closed_form`: [ours] the exact optimum in one pass, ``Boost(X̃)·Π`` on all nodes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpkit.core.validation import check_choice, check_positive_int
from dpkit.mechanisms.consistency.alternating import AlternatingResult, alternating_projection
from dpkit.mechanisms.consistency.constraints import ConstraintSystem

__all__ = [
    "KaryTree",
    "tree_height",
    "aggregate",
    "boost",
    "tree_residual",
    "tree_constraint_matrix",
    "combo_projector",
    "TreeProjector",
    "LeafComboProjector",
    "NodeComboProjector",
    "restaurant_system",
    "restaurant_residual",
    "algorithm1",
    "closed_form",
]


def tree_height(T: int, k: int = 2) -> int:
    """``h = ⌈log_k T⌉ + 1`` (Cai et al. 2021, Sec. 7), computed in integers."""
    T = check_positive_int(T, name="T")
    k = check_positive_int(k, name="k")
    if k < 2:
        raise ValueError(f"k must be at least 2; got {k}")
    e, p = 0, 1
    while p < T:
        p *= k
        e += 1
    return e + 1


@dataclass(frozen=True, kw_only=True)
class KaryTree:
    """Layout of the complete k-ary tree over ``T`` days (padded to ``k^{h−1}`` leaves).

    Parameters
    ----------
    T : int
        Number of real days (≥ 1).
    k : int
        Branching factor (≥ 2; the experiments of Cai et al. 2021 use 2).
    """

    T: int
    k: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "T", check_positive_int(self.T, name="T"))
        tree_height(self.T, self.k)  # validates k

    @property
    def h(self) -> int:
        """Number of levels ``⌈log_k T⌉ + 1``."""
        return tree_height(self.T, self.k)

    @property
    def n_leaves(self) -> int:
        """Padded number of leaves ``k^{h−1}`` (≥ T)."""
        return self.k ** (self.h - 1)

    @property
    def n_nodes(self) -> int:
        return (self.k**self.h - 1) // (self.k - 1)

    @property
    def n_internal(self) -> int:
        return self.n_nodes - self.n_leaves

    def offset(self, d: int) -> int:
        """First row of level ``d`` (root level 0)."""
        return (self.k**d - 1) // (self.k - 1)

    @property
    def leaves(self) -> slice:
        """Rows of the leaf level (days 0 … n_leaves−1; days ≥ T are padding)."""
        return slice(self.n_internal, self.n_nodes)

    def leaf_index(self, t: Any) -> Any:
        """σ(t): the row of day ``t`` (0-based)."""
        t = np.asarray(t)
        if np.any(t < 0) or np.any(t >= self.T):
            raise ValueError(f"day index must lie in [0, {self.T - 1}]")
        return self.n_internal + t

    @classmethod
    def from_n_nodes(cls, n_nodes: int, k: int) -> "KaryTree":
        """The tree with ``n_nodes`` rows (T set to the full leaf count)."""
        h, n = 0, 0
        while n < n_nodes:
            n += k**h
            h += 1
        if n != n_nodes:
            raise ValueError(f"{n_nodes} rows is not the size of a complete {k}-ary tree")
        return cls(T=k ** (h - 1), k=k)


def _tree_of(X: np.ndarray, k: int) -> KaryTree:
    if X.ndim < 1:
        raise ValueError("a tree array needs at least one axis (nodes)")
    return KaryTree.from_n_nodes(X.shape[0], k)


def aggregate(leaves: Any, k: int = 2) -> np.ndarray:
    """Build the consistent tree (internal node = sum of its children) from leaf values.

    ``leaves`` has shape ``(T, …)``; it is padded with zero days to ``k^{h−1}`` leaves.
    Returns shape ``(n_nodes, …)``.
    """
    L = np.asarray(leaves, dtype=float)
    if L.ndim < 1 or L.shape[0] < 1:
        raise ValueError(f"leaves must have shape (T, ...) with T ≥ 1; got {L.shape}")
    tree = KaryTree(T=L.shape[0], k=k)
    X = np.zeros((tree.n_nodes,) + L.shape[1:])
    X[tree.n_internal : tree.n_internal + L.shape[0]] = L
    for d in range(tree.h - 2, -1, -1):
        o, o1, o2 = tree.offset(d), tree.offset(d + 1), tree.offset(d + 2)
        X[o:o1] = X[o1:o2].reshape((o1 - o, k) + L.shape[1:]).sum(axis=1)
    return X


def tree_residual(X: Any, k: int = 2) -> np.ndarray:
    """Tree consistency deviation ``x_parent − Σ x_children`` for every internal node, shape ``(n_internal, …)``."""
    X = np.asarray(X, dtype=float)
    tree = _tree_of(X, k)
    out = np.empty((tree.n_internal,) + X.shape[1:])
    for d in range(tree.h - 1):
        o, o1, o2 = tree.offset(d), tree.offset(d + 1), tree.offset(d + 2)
        out[o:o1] = X[o:o1] - X[o1:o2].reshape((o1 - o, k) + X.shape[1:]).sum(axis=1)
    return out


def boost(X: Any, k: int = 2) -> np.ndarray:
    """Hay et al. (2010) Boosting: the exact least-squares projection onto tree consistency.

    Heights ``l = 1`` at the leaves. Bottom-up ``z = x̃`` at leaves, else
    ``z = a_l x̃ + b_l Σ_children z`` with ``a_l = (k^l − k^{l−1})/(k^l − 1)``,
    ``b_l = (k^{l−1} − 1)/(k^l − 1)``; top-down ``x̄_root = z_root``,
    ``x̄_v = z_v + (x̄_parent − Σ_siblings z)/k`` (Hay et al. 2010). Equals eq. (7) on the tree
    constraints; O(#nodes), batched over trailing axes.

    Parameters
    ----------
    X : array, shape (n_nodes, …)
        Noisy tree(s) in heap layout.
    k : int
        Branching factor.
    """
    X = np.asarray(X, dtype=float)
    tree = _tree_of(X, k)
    h, rest = tree.h, X.shape[1:]
    z = X.copy()
    for d in range(h - 2, -1, -1):
        height = h - d  # height of level d
        q = float(k) ** (-height)
        a = (1.0 - 1.0 / k) / (1.0 - q)
        bco = (1.0 / k - q) / (1.0 - q)
        o, o1, o2 = tree.offset(d), tree.offset(d + 1), tree.offset(d + 2)
        z[o:o1] = a * X[o:o1] + bco * z[o1:o2].reshape((o1 - o, k) + rest).sum(axis=1)
    out = z  # reuse: level d of ``out`` only depends on level d−1 of out and level d of z
    for d in range(1, h):
        o0, o, o1 = tree.offset(d - 1), tree.offset(d), tree.offset(d + 1)
        zc = z[o:o1].reshape((o - o0, k) + rest)
        adj = (out[o0:o] - zc.sum(axis=1)) / k
        out[o:o1] = (zc + adj[:, None]).reshape((o1 - o,) + rest)
    return out


def tree_constraint_matrix(tree: KaryTree, c: int = 1) -> sp.csr_matrix:
    """Sparse rows ``x_{j,i} − Σ_{j'∈child(j)} x_{j',i} = 0`` for every internal node j and item i.

    Variables are the row-major flattening of the ``(n_nodes, c)`` array (index ``j·c + i``).
    """
    c = check_positive_int(c, name="c")
    k, ni = tree.k, tree.n_internal
    parents = np.repeat(np.arange(ni), c) * c + np.tile(np.arange(c), ni)  # variable of (j, i)
    rows = np.arange(ni * c)
    j = np.repeat(np.arange(ni), c)
    i = np.tile(np.arange(c), ni)
    child_rows = np.repeat(rows, k)
    child_cols = ((k * np.repeat(j, k) + np.tile(np.arange(1, k + 1), ni * c)) * c + np.repeat(i, k))
    r = np.concatenate([rows, child_rows])
    col = np.concatenate([parents, child_cols])
    val = np.concatenate([np.ones(ni * c), -np.ones(ni * c * k)])
    return sp.csr_matrix((val, (r, col)), shape=(ni * c, tree.n_nodes * c))


def combo_projector(B: Any) -> np.ndarray:
    """``Π = I − Bᵀ(BBᵀ)^†B``, the orthogonal projector onto ``null(B)`` (eq. 7 with b = 0).

    For the combo matrix of eq. (13), ``Π = (1/308)·[[236, 12, 16, −56, 116], …]`` (docs/science/consistency.md).
    """
    B = np.asarray(B, dtype=float)
    if B.ndim != 2 or B.size == 0:
        raise ValueError(f"B must be a non-empty 2-d matrix; got shape {B.shape}")
    if not np.all(np.isfinite(B)):
        raise ValueError("B must be finite")
    P = np.eye(B.shape[1]) - np.linalg.pinv(B) @ B
    return (P + P.T) / 2


class TreeProjector:
    """``f_1`` of Algorithm 1: Boosting on every item's tree (all columns at once)."""

    def __init__(self, k: int = 2) -> None:
        self.k = k

    def project(self, X: np.ndarray) -> np.ndarray:
        return boost(X, self.k)


class LeafComboProjector:
    """``f_2`` of Algorithm 1: each day's leaf vector ``v_t ← Π v_t``; internal nodes untouched.

    This is the exact Euclidean projection onto ``{B v_t = 0 ∀t}`` in the full node space
    (Algorithm 1, step 4.2; docs/science/consistency.md, *Algorithm 1*).
    """

    def __init__(self, tree: KaryTree, B: Any) -> None:
        self.tree = tree
        self.Pi = combo_projector(B)

    def project(self, X: np.ndarray) -> np.ndarray:
        Y = X.copy()
        Y[self.tree.leaves] = X[self.tree.leaves] @ self.Pi
        return Y


class NodeComboProjector(LeafComboProjector):
    """Ablation: ``Π`` on *every* node (adds the implied constraints ``B x_node = 0``)."""

    def project(self, X: np.ndarray) -> np.ndarray:
        return X @ self.Pi


def restaurant_system(tree: KaryTree, B: Any) -> tuple[ConstraintSystem, list[np.ndarray]]:
    """The full sparse system ``M x = 0`` of Sec. 7 and its two-block partition.

    Rows: the tree constraints of every item (``c·n_internal`` rows) then ``B v_t = 0`` for every
    leaf (``rank(B)·n_leaves`` rows; padded days included). Variables: the row-major flattening of
    the ``(n_nodes, c)`` release. Returns ``(system, [tree_rows, combo_rows])``.
    """
    B = np.asarray(B, dtype=float)
    c = B.shape[1]
    Mt = tree_constraint_matrix(tree, c)
    sel = sp.eye(tree.n_nodes, format="csr")[tree.n_internal :]
    Mc = sp.kron(sel, sp.csr_matrix(B), format="csr")
    M = sp.vstack([Mt, Mc], format="csr")
    blocks = [np.arange(Mt.shape[0]), np.arange(Mt.shape[0], M.shape[0])]
    return ConstraintSystem(M=M, b=None, check_consistency=False), blocks


def restaurant_residual(X: np.ndarray, tree: KaryTree, B: Any) -> np.ndarray:
    """``ψ = M x − b`` of the restaurant system without forming M: tree rows, then combo rows."""
    B = np.asarray(B, dtype=float)
    return np.concatenate([tree_residual(X, tree.k).ravel(), (X[tree.leaves] @ B.T).ravel()])


def _check_release(X: Any, k: int, c: int) -> tuple[np.ndarray, KaryTree]:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != c:
        raise ValueError(f"X must have shape (n_nodes, {c}) (one column per item); got {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite")
    return X, KaryTree.from_n_nodes(X.shape[0], k)


def closed_form(X_noisy: Any, B: Any, *, k: int = 2) -> np.ndarray:
    """[ours] The exact optimum of Sec. 7 in one pass: ``Boost(X̃)·Π`` on all nodes.

    The feasible set is ``{A L : L Bᵀ = 0}`` (A = tree aggregation), i.e. the intersection of
    the tree-consistent set (left action on columns) and ``{X : X Π = X}`` (right action on rows).
    The two orthogonal projectors commute, so their product is the projection onto the
    intersection (docs/science/consistency.md, *A one-pass closed form*).
    """
    B = np.asarray(B, dtype=float)
    X, _ = _check_release(X_noisy, k, B.shape[1])
    return boost(X, k) @ combo_projector(B)


def algorithm1(
    X_noisy: Any,
    B: Any,
    *,
    k: int = 2,
    T: int | None = None,
    stop: str = "mean-change",
    tol: float = 1e-6,
    max_iter: int = 100,
    x_true: Any = None,
    x_ref: Any = None,
    track: bool = True,
    combo: str = "leaves",
    metrics: dict | None = None,
    progress: bool = False,
) -> AlternatingResult:
    """Algorithm 1 of Cai et al. 2021 (docs/science/consistency.md): alternate Boosting
    on all trees and ``Π`` on each day's leaves.

    Parameters
    ----------
    X_noisy : array, shape (n_nodes, c)
        Noisy trees, one column per item.
    B : array, shape (r, c)
        Combo constraint matrix (eq. 13).
    k : int
        Branching factor.
    T : int, optional
        Number of real days (normaliser of eqs. 14/15); default the padded leaf count.
    stop, tol, max_iter
        Stopping rule (see :func:`alternating_projection`): ``"fixed"`` 100 cycles (Sec. 8.1) or
        mean |Δx| over all nodes ``< 10⁻⁶`` (Sec. 8.2).
    x_true, x_ref : array, optional
        Un-noised trees and the exact optimum, for the ``err`` and ``dist`` traces.
    track : bool
        Record ``mse``/``err``/``dist`` traces (turn off for timing).
    combo : {"leaves", "all-nodes"}
        ``"leaves"`` is Algorithm 1; ``"all-nodes"`` is the ablation that also projects internal
        nodes (converges in one cycle; docs/science/consistency.md, *A one-pass closed form*).
    metrics : dict of callables, optional
        Extra per-cycle traces (see :func:`alternating_projection`).

    Notes
    -----
    Normalisers (the paper's ``c|T|`` is ambiguous; docs/science/errata.md, *erratum-cc-normalisers*):
    ``mse_s = ‖ψ‖²/(c·T)`` over all constraint rows (eq. 14); ``err_s`` is the RMSE over *all* nodes,
    ``sqrt(‖x − x_true‖²/(c·n_nodes))`` (eq. 15); the stop rule averages |Δx| over all ``c·n_nodes`` entries.
    """
    B = np.asarray(B, dtype=float)
    X, tree = _check_release(X_noisy, k, B.shape[1])
    check_choice(combo, name="combo", choices=("leaves", "all-nodes"))
    c = B.shape[1]
    T = tree.n_leaves if T is None else check_positive_int(T, name="T")
    P2 = LeafComboProjector(tree, B) if combo == "leaves" else NodeComboProjector(tree, B)
    return alternating_projection(
        X,
        [TreeProjector(k), P2],
        stop=stop,
        tol=tol,
        max_iter=max_iter,
        residual=(lambda Z: restaurant_residual(Z, tree, B)) if track else None,
        x_true=x_true if track else None,
        x_ref=x_ref if track else None,
        mse_norm=c * T,
        err_norm=c * tree.n_nodes,
        change_norm=c * tree.n_nodes,
        metrics=metrics if track else None,
        progress=progress,
    )
