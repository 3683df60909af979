"""Checks of the baselines comparison (notebook ``40_baselines``): each can fail.

The ledger totals equal the stated budgets; the noise-free LP is no worse than the private trig
mechanism on average; the direct-answering errors match their closed forms (dwork-roth.md §4.3).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpkit.evaluation.verdicts import Check, check
from dpkit.experiments.baselines import gaussian_abs_max_mean
from dpkit.experiments.protocol import RunRecord
from dpkit.experiments.summary import records_frame

__all__ = ["baseline_checks"]


def baseline_checks(records: Sequence[RunRecord], rows: Sequence[dict[str, Any]]) -> list[Check]:
    """The notebook's checks on the run records and the summary rows (module docstring)."""
    out: list[Check] = []
    rec = records_frame(records)
    rec["epsilon"] = [float(p["epsilon"]) for p in rec["params"]]
    rec["delta"] = [float(p.get("delta", 0.0)) for p in rec["params"]]
    priv = rec[rec["privacy"] != "non-private"]
    dev = float(np.max(np.abs(priv["eps_spent"] - priv["epsilon"]) / priv["epsilon"]))
    out.append(check("ledger-epsilon", "every private method's ledger spends exactly its stated ε (relative deviation)",
                 dev, 1e-9, relation="<=", note=f"{len(priv)} runs of {priv['method'].nunique()} methods"))
    over = float(np.max(priv["delta_spent"] - priv["delta"]))
    out.append(check("ledger-delta", "no private method's ledger spends more δ than stated (δ_spent − δ)",
                 over, 0.0, relation="<="))

    df = pd.DataFrame(list(rows))
    piv = df.pivot_table(index=["dataset", "sigma"], columns="method", values="abs_mean")
    if {"lp-eps-inf", "trig-II"} <= set(piv.columns):
        diff = float((piv["lp-eps-inf"] - piv["trig-II"]).mean())
        out.append(check("eps-inf-floor", "the noise-free LP (ε = ∞) has mean worst abs. error ≤ trig-II's, averaged over "
                     "(data set, σ) cells: noise only adds error on average (dwork-roth §4.3 B5)", diff, 0.0,
                     relation="<=", note="statistic: mean of (lp-eps-inf − trig-II) worst abs. errors"))
    for noise, name in (("laplace_I", "direct-laplace_I"), ("gaussian", "direct-gaussian")):
        sub = rec[rec["method"] == name]
        if sub.empty:
            continue
        Q = np.array([int(p["n_queries"]) for p in sub["params"]])
        s = np.array([float(p["scale_mean"]) for p in sub["params"]])
        z = sub["abs"].to_numpy() / s  # worst |noise| in units of the noise scale
        if noise == "laplace_I":
            # max of Q iid Exp(1): mean H_Q, variance Σ 1/k² ≤ π²/6
            exp_ = np.array([math.fsum(1.0 / k for k in range(1, q + 1)) for q in Q])
            sd = math.pi / math.sqrt(6.0)
            claim = "direct Laplace I: mean worst error / b = H_Q (max of Q iid |Lap(b)| ~ Exp(b))"
        else:
            exp_ = np.array([gaussian_abs_max_mean(int(q)) for q in Q])
            sd = 1.0  # Gaussian Poincaré: Var(max_q |Z_q|) ≤ 1 (a 1-Lipschitz function of N(0, I))
            claim = "direct Gaussian: mean worst error / s = E max_q |N(0,1)| over Q queries"
        stat = float(abs(np.mean(z - exp_)))
        out.append(check(f"direct-{noise}-theory", claim + " (|mean − theory|, 4 sd of the mean; Chebyshev ≥ 93.75%)",
                     stat, 4.0 * sd / math.sqrt(len(z)), relation="<=", confidence=0.9375,
                     note=f"{len(z)} runs"))
    return out
