"""Claims of notebook 53: reconstruction attacks of Dinur–Nissim (thesis Thm 1.4, Dwork–Roth E20).

On the attacks of :mod:`dpkit.evaluation.reconstruction`: Thm 1.4 by exhaustive search
(:func:`exhaustive_reconstruction`), LP decoding's phase transition at noise √n (:func:`lp_phase_transition`) and the
fundamental law for ε-DP answers (:func:`fundamental_law`, with a per-answer negative control). Statistical checks
follow :mod:`dpkit.claims`'s false-alarm budget and retry rule.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from dpkit.claims.results import NotebookRecorder, NotebookRun, TableResult, retried
from dpkit.core.rng import RNGLike, resolve_rng, spawn
from dpkit.core.validation import check_positive_int, check_seed
from dpkit.evaluation.oracles import hoeffding_upper
from dpkit.evaluation.reconstruction import (
    adversarial_answers,
    all_subsets,
    dp_guess_error_bound,
    exhaustive_attack,
    hamming,
    lp_decode,
    noisy_answers,
    random_secret,
    reconstruct,
)
from dpkit.evaluation.verdicts import FalseAlarmBudget, check

__all__ = ["exhaustive_reconstruction", "lp_phase_transition", "fundamental_law", "fundamental_law_per_answer_control",
           "notebook_checks"]


def exhaustive_reconstruction(
    *, n: int = 12, alphas: Sequence[float] = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0), trials: int = 3, rng: RNGLike = None,
) -> TableResult:
    """Thm 1.4 exactly, for small n: all 2^n subset sums within α ⇒ every consistent candidate within 4α of d.

    For every α, two kinds of answers within α (``trials`` secrets each): uniform noise in [−α, α]
    and the decoy answers of :func:`~dpkit.evaluation.reconstruction.adversarial_answers` (exact sums
    of a c' flipping ⌊α⌋ zeros and ⌊α⌋ ones). Three checks: ``"Thm 1.4"`` (max Hamming/(4α) over
    all consistent candidates ≤ 1), ``"Thm 1.4 (tight)"`` (decoys attain 4α for integer α ≤ n/4) and
    ``"Thm 1.4 (LP)"`` (LP decoding over all subsets, rounded at 1/2, errs on < 8α bits). Table
    columns: ``alpha, answers, trial, consistent, max_hamming, lp_errors, bound_4alpha``.
    """
    g = resolve_rng(rng)
    S = all_subsets(n)
    rows = []
    for alpha in alphas:
        for kind in ("uniform", "decoy"):
            for t in range(trials):
                d = random_secret(n, rng=g)
                if kind == "uniform":
                    a = noisy_answers(S, d, noise="uniform", scale=alpha, rng=g)
                else:
                    a, _ = adversarial_answers(d, alpha, rng=g)
                C, _ = exhaustive_attack(a, alpha, n=n)
                worst = max(hamming(c, d) for c in C)
                c_lp = lp_decode(S, a, objective="feasibility", alpha=alpha)
                rows.append(dict(alpha=alpha, answers=kind, trial=t, consistent=len(C), max_hamming=worst,
                                 lp_errors=hamming(c_lp > 0.5, d), bound_4alpha=4 * alpha))
    exh = pd.DataFrame(rows)
    dec = exh[(exh.answers == "decoy") & (exh.alpha == np.floor(exh.alpha)) & (exh.alpha * 2 <= n / 2)]
    checks = (
        check("Thm 1.4", "all 2^n subset sums within α ⇒ every consistent candidate within 4α of d (exhaustive)",
              (exh.max_hamming / (4 * exh.alpha)).max(), 1.0, relation="<=", note=f"n={n}, {len(exh)} instances"),
        check("Thm 1.4 (tight)", "decoy answers attain Hamming = 4α for integer α (the bound is tight)",
              (dec.max_hamming / (4 * dec.alpha)).max(), 1.0, relation=">="),
        check("Thm 1.4 (LP)", "LP decoding over all subsets, rounded at 1/2: < 8α wrong bits",
              (exh.lp_errors / (8 * exh.alpha)).max(), 1.0, relation="<"),
    )
    return TableResult(checks=checks, table=exh)


def lp_phase_transition(
    *, ns: Sequence[int] = (128, 256, 512), kappas: Sequence[float] = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0),
    kappa_small: float = 0.05, trials: int = 3, rng: RNGLike = None,
) -> TableResult:
    """Dinur–Nissim's LP attack: m = 4n random subsets, uniform noise ``E = κ√n``; at κ = ``kappa_small`` ≤ 4E wrong bits.

    Every n runs every κ of ``kappas ∪ {kappa_small}`` ``trials`` times (minimum-ℓ1 LP,
    :func:`~dpkit.evaluation.reconstruction.reconstruct`). The check is on the small-noise runs;
    the rest of the table shows the error fraction rising to ~1/2 past √n. Table columns:
    ``n, kappa, E, trial, errors, error_fraction``.
    """
    g = resolve_rng(rng)
    rows = []
    for n in ns:
        for kappa in sorted(set(kappas) | {kappa_small}):
            for t in range(trials):
                r = reconstruct(n, 4 * n, noise="uniform", scale=kappa * math.sqrt(n), rng=g)
                rows.append(dict(n=n, kappa=kappa, E=r.scale, trial=t, errors=r.errors, error_fraction=r.error_fraction))
    pt = pd.DataFrame(rows)
    small = pt[pt.kappa == kappa_small]
    c = check("DN LP (small noise)", f"m = 4n random subsets, noise ≤ {kappa_small}·√n: LP decoding within 4E wrong bits",
              (small.errors / (4 * small.E)).max(), 1.0, relation="<=", note=f"n in {list(ns)}, {trials} trials each")
    return TableResult(checks=(c,), table=pt)


def _law_run(label: str, noise_scale: float, epsilon: float, n: int, trials: int, gamma: float,
             rng: RNGLike) -> tuple[float, float, pd.DataFrame]:
    """``trials`` LP attacks on m = 4n Laplace-noised answers: mean error fraction, its Hoeffding UCB and the table row."""
    fr = np.array([reconstruct(n, 4 * n, noise="laplace", scale=noise_scale, rng=g).error_fraction
                   for g in spawn(rng, trials)])
    ucb = hoeffding_upper(fr, gamma)
    row = dict(variant=label, noise_scale=noise_scale, mean_error_fraction=fr.mean(), ucb=ucb,
               bound=dp_guess_error_bound(epsilon))
    return float(fr.mean()), ucb, pd.DataFrame([row])


@retried
def fundamental_law(
    *, epsilon: float = 1.0, n: int = 64, trials: int = 100, gamma: float = 1e-3, rng: RNGLike = None,
) -> TableResult:
    """D–R E20(c): answers ε-DP as a whole (``Lap(m/ε)`` on each of m = 4n subset sums, Prop 1.7) resist every attacker.

    For a uniform secret every guess of a bit is right with probability ≤ e^ε/(1 + e^ε), so the
    expected error fraction is ≥ 1/(1 + e^ε); the one-sided Hoeffding upper confidence bound (level
    1 − γ) of the mean error fraction over ``trials`` independent attacks must reach it.
    """
    m = 4 * n
    mean, ucb, table = _law_run("dp", m / epsilon, epsilon, n, trials, gamma, rng)
    c = check("Fund. law (DP)", f"answers ε-DP in total (Lap(m/ε), ε={epsilon}): expected error fraction ≥ 1/(1+e^ε)",
              ucb, dp_guess_error_bound(epsilon), relation=">=", confidence=1 - gamma, note=f"mean {mean:.3f}, Hoeffding UCB")
    return TableResult(checks=(c,), table=table)


def fundamental_law_per_answer_control(
    *, epsilon: float = 1.0, n: int = 64, trials: int = 100, gamma: float = 1e-3, rng: RNGLike = None,
) -> TableResult:
    """Negative control of :func:`fundamental_law`: ``Lap(1/ε)`` per answer (mε in total) claimed ε-DP; the attack wins."""
    mean, ucb, table = _law_run("per-answer", 1.0 / epsilon, epsilon, n, trials, gamma, rng)
    c = check("Fund. law (per-answer ε)",
              "broken accounting: Lap(1/ε) per answer (mε total) claimed ε-DP: error fraction ≥ 1/(1+e^ε)", ucb,
              dp_guess_error_bound(epsilon), relation=">=", confidence=1 - gamma, expected="FAIL",
              note=f"mean {mean:.3f}; the attack reconstructs the secret")
    return TableResult(checks=(c,), table=table)


def notebook_checks(
    seed: int, quick: bool, false_alarm: float, *, n_exhaustive: int, alphas: Sequence[float], ns: Sequence[int],
    kappas: Sequence[float], kappa_small: float, trials: int, epsilon: float, dp_n: int, dp_trials: int,
) -> NotebookRun:
    """Every check and table row of notebook 53 (``53_reconstruction``) run with these parameters.

    The notebook's parameters in lower case; ``quick`` applies its QUICK sizes. Four streams are spawned from
    ``seed`` (exhaustive attack, LP decoding, phase transition, fundamental law); the budget ``false_alarm`` is
    charged to the one statistical check (the fundamental law). ``parts``: ``exh``, ``pt``, ``laws`` (the sections'
    results).
    """
    seed = check_seed(seed)
    trials, dp_trials = check_positive_int(trials, name="trials"), check_positive_int(dp_trials, name="dp_trials")
    if quick:
        n_exhaustive, ns, kappas, trials, dp_n, dp_trials = 8, [32, 64, 128], [0.05, 0.2, 0.5, 1.0], 2, 32, 120
    params = dict(SEED=seed, QUICK=quick, N_EXHAUSTIVE=n_exhaustive, ALPHAS=alphas, NS=ns, KAPPAS=kappas,
                  KAPPA_SMALL=kappa_small, TRIALS=trials, EPSILON=epsilon, DP_N=dp_n, DP_TRIALS=dp_trials,
                  FALSE_ALARM=false_alarm)
    g_exh, g_lp, g_pt, g_dp = spawn(seed, 4)
    budget = FalseAlarmBudget(false_alarm, n_tests=1)  # the fundamental law
    gamma = budget.level  # the per-test level of every statistical check (negative controls too)
    out = NotebookRecorder()
    exh = exhaustive_reconstruction(n=n_exhaustive, alphas=alphas, trials=trials, rng=g_exh)
    out.table("exhaustive", exh.table.to_dict("records"))
    out.add(*exh.checks)
    pt = lp_phase_transition(ns=ns, kappas=kappas, kappa_small=kappa_small, trials=trials, rng=g_pt)
    out.table("phase_transition", pt.table.to_dict("records"))
    out.add(*pt.checks)
    laws = [law(epsilon=epsilon, n=dp_n, trials=dp_trials, gamma=gamma, rng=g_dp)
            for law in (fundamental_law, fundamental_law_per_answer_control)]
    for law in laws:
        out.table("fundamental_law", law.table.to_dict("records"))
        out.add(*law.checks)
    return out.finish(params, budget, exh=exh, pt=pt, laws=laws)
