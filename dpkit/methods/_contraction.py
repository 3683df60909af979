"""Exact marginals of a graphical model ``∝ exp(Σ_k θ_k)`` without compilation (used by :mod:`dpkit.methods._discrete`).

:class:`CalibratedTree` (log-domain sum-product: all pair marginals in one pass), :func:`normalised_contraction`
(rescaled pairwise contraction; :func:`scaled_contraction` bounds the underflow loss) and :func:`log_contraction`
(exact in the log domain, where that loss exceeds :data:`LOG_LOSS_LIMIT`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["CalibratedTree", "normalised_contraction", "log_contraction", "scaled_contraction", "LOG_LOSS_LIMIT"]


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
    (:func:`scaled_contraction` bounds the loss; :func:`log_contraction` is exact there).
    """
    return scaled_contraction(factors, output)[0]


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


def scaled_contraction(factors: Sequence[tuple[np.ndarray, Sequence[int]]],
                       output: Sequence[int]) -> tuple[np.ndarray, float]:
    """:func:`normalised_contraction` and ``log B``, a bound on how much it may have lost to underflow.

    Every intermediate of factors with maximum 1 has maximum ≤ n (the terms per cell), so a step maps
    absolute errors δ_A, δ_B of its inputs (maximum 1) and its own flush to zero below ``tiny`` (the
    smallest normal float64) to ``(n (δ_A + δ_B) + tiny)/top`` after the division by its maximum ``top``.
    By induction the result (maximum 1) is within ``tiny · (steps + 1) · Π_steps 2n/top`` of the exact
    scaled contraction, entrywise; ``log B`` is the logarithm of that bound (``inf`` when a step was all zero).

    Parameters
    ----------
    factors : sequence of (numpy.ndarray, sequence of int)
        Non-negative factors with their axis labels; the loss bound assumes each has maximum 1 (exponentiated
        potentials divided by their maximum).
    output : sequence of int
        The labels of the result's axes, in order.

    Returns
    -------
    tuple of numpy.ndarray and float
        The contraction divided by its maximum, and ``log B`` (compare with :data:`LOG_LOSS_LIMIT`).
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
LOG_LOSS_LIMIT = math.log(1e-12)
