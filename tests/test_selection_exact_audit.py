"""Exact audits of the selection steps of MST and AIM: the code's own scores and exponential mechanism,
every replace-one pair of a small domain, conditioned on a family of already-released statistics.

A sampling audit sees the privacy loss through a finite sample; with the exponential mechanism's output law
in closed form (``Exponential.log_probabilities``) the loss ``max |log P(o|D) − log P(o|D′)|`` is computed
exactly, so a sensitivity that is a factor 2 too small (the papers' add/remove neighbours, used under
replace-one) shows up in full. The previous, sampled AIM selection audit could not see that factor.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("mbi")

from dpkit.evaluation.oracles import exact_privacy_loss, replace_one_pairs  # noqa: E402
from dpkit.mechanisms.exponential import Exponential  # noqa: E402
from dpkit.methods._discrete import pair_counts  # noqa: E402
from dpkit.methods.aim import AIM, candidates  # noqa: E402
from dpkit.methods.mst import MST  # noqa: E402

EPS = 1.0
D_ATTR, BINS, N = 3, 2, 3
ROWS = list(itertools.product(range(BINS), repeat=D_ATTR))  # every record of the domain, as grid codes


def _joints(seed: int = 0, k: int = 12) -> list[np.ndarray]:
    """Distributions on the domain: uniform, nearly point masses, and sparse random ones."""
    rng = np.random.default_rng(seed)
    m = len(ROWS)
    return ([np.full(m, 1.0 / m)] + [np.eye(m)[i] * 0.999 + 0.001 / m for i in range(m)]
            + [rng.dirichlet(np.full(m, 0.05)) for _ in range(k)])


def _marginals(joint: np.ndarray, cliques) -> list[np.ndarray]:
    J = joint.reshape((BINS,) * D_ATTR)
    return [J.sum(axis=tuple(a for a in range(D_ATTR) if a not in r)).ravel() for r in cliques]


def test_replace_one_pairs_enumerates_the_neighbours():
    pairs = list(replace_one_pairs("ab", 2))
    assert len(pairs) == 3 * 2 * 2  # multisets {aa, ab, bb} × position × new row
    assert (("a", "b"), ("b", "b")) in pairs and all(sum(x != y for x, y in zip(*p)) <= 1 for p in pairs)


def test_exact_loss_of_the_exponential_mechanism_matches_its_closed_form():
    """Oracle check: two outputs with utilities (k, N − k), k = the number of ones (sensitivity 1). Moving one
    record changes k by one; the loss of output 1 is ε/2 − Δ log(e^{εk/2} + e^{ε(N−k)/2}), largest at some k."""
    mech = Exponential(epsilon=EPS, sensitivity=1.0)
    res = exact_privacy_loss(lambda D: mech.log_probabilities(np.array([sum(D), N - sum(D)], dtype=float)),
                             replace_one_pairs((0, 1), N))
    lse = [np.logaddexp(EPS * k / 2, EPS * (N - k) / 2) for k in range(N + 1)]
    closed = max(abs(EPS / 2 - (lse[k + 1] - lse[k])) for k in range(N))
    assert res.loss == pytest.approx(closed, rel=1e-12) and res.loss <= EPS and res.pairs == 4 * N * 2
    assert res.worst is not None and sum(x != y for x, y in zip(*res.worst)) == 1


# ----------------------------------------------------------------------------- AIM
def _aim_loss(selection) -> float:
    cands, w = candidates(D_ATTR)

    def exact(D):
        codes = np.array(D)
        return [np.bincount(codes[:, r[0]], minlength=BINS).astype(float) if len(r) == 1 else
                np.bincount(codes[:, r[0]] * BINS + codes[:, r[1]], minlength=BINS * BINS).astype(float)
                for r in cands]

    worst = 0.0
    for joint in _joints():
        model = _marginals(joint, cands)  # p̂: any distribution (released earlier, fixed here)
        mech = selection(EPS, w)
        res = exact_privacy_loss(lambda D, model=model, mech=mech: mech.log_probabilities(
            AIM.scores(exact(D), model, w, 0.0, N)), replace_one_pairs(ROWS, N))
        worst = max(worst, res.loss)
    return worst


def test_aim_selection_exact_loss_within_epsilon():
    assert _aim_loss(AIM.selection) <= EPS * (1 + 1e-12)


def test_negative_control_aim_add_remove_sensitivity_is_refuted():
    """The paper's sensitivity max w_r (add/remove neighbours) is a factor 2 too small under replace-one."""
    loss = _aim_loss(lambda eps, w: Exponential(epsilon=eps, sensitivity=float(np.max(w))))
    assert loss > 1.5 * EPS, loss


# ----------------------------------------------------------------------------- MST
def _mst_loss(selection) -> float:
    worst = 0.0
    for joint in _joints(seed=1):
        y1 = N * np.stack(_marginals(joint, [(i,) for i in range(D_ATTR)]))  # released one-way counts, fixed
        mech = selection(EPS)
        res = exact_privacy_loss(
            lambda D, y1=y1, mech=mech: mech.log_probabilities(MST.pair_scores(pair_counts(np.array(D), BINS), y1, N)[1]),
            replace_one_pairs(ROWS, N))
        worst = max(worst, res.loss)
    return worst


def test_mst_selection_exact_loss_within_epsilon():
    assert _mst_loss(MST.selection) <= EPS * (1 + 1e-12)


def test_negative_control_mst_add_remove_sensitivity_is_refuted():
    """Sensitivity 1 (the paper's add/remove neighbours) under replace-one: the loss exceeds ε by far."""
    loss = _mst_loss(lambda eps: Exponential(epsilon=eps, sensitivity=1.0))
    assert loss > 1.5 * EPS, loss
