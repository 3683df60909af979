"""A peer library's private PCA (diffprivlib) against dpkit's private subspace iteration.

Both run at the same pure ε on data in [-1, 1]^d (dpkit: PSI-ε with the data-independent sensitivity bound, the whole
ε; diffprivlib: ``PCA`` with public ``bounds=(-1, 1)``, ``data_norm = 2√d`` and a fresh ``BudgetAccountant``, so
nothing is taken from the data) and are compared on

1. **captured variance**: tr(Vᵀ A V) / Σ_{s≤k} λ_s (1 = perfect);
2. **subspace angle**: the largest principal angle to the true top-k eigenspace (degrees; 0 = perfect).

The choice of parameters and the versions: docs/science/private_pca.md.
"""
from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.linalg import subspace_angles

from dpkit.core.accounting import Ledger
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.validation import check_epsilon, check_in_unit_cube, check_int_in_range
from dpkit.mechanisms.pca import PrivateSubspaceIteration, covariance

__all__ = ["pca_summary", "import_diffprivlib_pca", "pca_quality", "compare_private_pca"]


def import_diffprivlib_pca():
    """``diffprivlib.models.PCA`` and ``diffprivlib.accountant.BudgetAccountant`` (imported lazily: diffprivlib is the
    optional ``baselines`` extra)."""
    try:
        from diffprivlib.accountant import BudgetAccountant
        from diffprivlib.models import PCA
    except ImportError as exc:  # pragma: no cover - depends on the environment
        import sklearn

        raise ImportError(f"diffprivlib could not be imported with scikit-learn {sklearn.__version__} ({exc}); "
                          "the PCA comparison needs pip install 'dpkit[baselines]' (scikit-learn<1.9), "
                          "or the pinned stack: pip install -r requirements.lock") from exc

    return PCA, BudgetAccountant


def pca_quality(components: np.ndarray, A: np.ndarray) -> dict[str, float]:
    """Captured-variance ratio and largest principal angle (degrees) of the rows of ``components``
    (k, d) against the true covariance ``A`` (d, d)."""
    V = np.linalg.qr(np.asarray(components, dtype=float).T)[0]  # (d, k) orthonormal
    k = V.shape[1]
    w, U = np.linalg.eigh(A)
    top = U[:, np.argsort(w)[::-1][:k]]
    best = float(np.sort(w)[::-1][:k].sum())
    cap = float(np.trace(V.T @ A @ V)) / best if best > 0 else math.nan
    ang = float(np.degrees(subspace_angles(V, top).max()))
    return {"captured_variance": cap, "max_angle_deg": ang}


def compare_private_pca(X: Any, *, k: int = 2, epsilon: float = 1.0, n_iter: int = 10,
                        rng: RNGLike = None) -> list[dict[str, Any]]:
    """One run of each private PCA at the same ε; rows ``{method, epsilon, k, captured_variance,
    max_angle_deg, time_s, ledger}`` plus an ``"exact"`` row (non-private eigenvectors).

    ``rng`` seeds both (diffprivlib takes an integer ``random_state`` drawn from it).
    """
    X = check_in_unit_cube(X, name="X")
    n, d = X.shape
    k = check_int_in_range(k, name="k", low=1, high=d)
    eps = check_epsilon(epsilon)
    A = covariance(X)
    g_psi, g_dpl = spawn(rng, 2)
    rows: list[dict[str, Any]] = []
    w, U = np.linalg.eigh(A)
    rows.append({"method": "exact", "epsilon": math.inf, "k": k, **pca_quality(U[:, np.argsort(w)[::-1][:k]].T, A),
                 "time_s": 0.0, "ledger": None})

    led = Ledger(eps, 0.0, name="dpkit-psi")
    t0 = time.perf_counter()
    psi = PrivateSubspaceIteration(n_components=k, n_iter=n_iter, epsilon=eps, delta=0.0).fit(X, rng=g_psi, ledger=led)
    rows.append({"method": "dpkit-psi", "epsilon": eps, "k": k, **pca_quality(psi.components_, A),
                 "time_s": time.perf_counter() - t0, "ledger": led.to_dict(), "noise_scale": psi.noise_scale_})

    PCA, BudgetAccountant = import_diffprivlib_pca()
    led = Ledger(eps, 0.0, name="diffprivlib-pca")
    led.spend("pca", eps, 0.0, mechanism="diffprivlib.models.PCA (eps/2 mean, eps/2 covariance)",
              neighbouring="replace-one", data_norm=2.0 * math.sqrt(d), bounds=(-1.0, 1.0),
              note="guarantee as analysed by diffprivlib (not re-derived in dpkit)")
    acc = BudgetAccountant()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=UserWarning)  # a diffprivlib PrivacyLeakWarning would be a bug here
        pca = PCA(n_components=k, epsilon=eps, data_norm=2.0 * math.sqrt(d), centered=False,
                  bounds=(-np.ones(d), np.ones(d)), random_state=int(g_dpl.integers(2**31 - 1)), accountant=acc)
        pca.fit(X)
    rows.append({"method": "diffprivlib", "epsilon": eps, "k": k, **pca_quality(pca.components_, A),
                 "time_s": time.perf_counter() - t0, "ledger": led.to_dict(),
                 "diffprivlib_spent": list(acc.total())})
    return rows


def pca_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean ± std of captured variance and largest angle per (dataset, method) from
    :func:`compare_private_pca` rows tagged with ``dataset`` (no rows: an empty list)."""
    df = pd.DataFrame(list(rows))
    out: list[dict[str, Any]] = []
    if df.empty:
        return out
    for (ds, m), g in df.groupby(["dataset", "method"], sort=False):
        out.append({"dataset": ds, "method": m, "epsilon": float(g["epsilon"].iloc[0]), "k": int(g["k"].iloc[0]),
                    "captured_variance_mean": float(g["captured_variance"].mean()),
                    "captured_variance_std": float(g["captured_variance"].std(ddof=1)) if len(g) > 1 else 0.0,
                    "max_angle_deg_mean": float(g["max_angle_deg"].mean()),
                    "max_angle_deg_std": float(g["max_angle_deg"].std(ddof=1)) if len(g) > 1 else 0.0,
                    "time_s": float(g["time_s"].mean()), "reps": int(len(g))})
    return out
