"""A peer library's private PCA (diffprivlib) against dpkit's private subspace iteration.

Both are run at the same pure ε on data in [-1, 1]^d and compared on

* **captured variance**: tr(Vᵀ A V) / Σ_{s≤k} λ_s, the share of the best rank-k variance that the
  released k directions V capture (A = the true covariance; 1 = perfect);
* **subspace angle**: the largest principal angle (degrees) between span(V) and the true top-k
  eigenspace (:func:`scipy.linalg.subspace_angles`; 0 = perfect, 90 = orthogonal).

Parameters and budgets
----------------------
* dpkit: :class:`dpkit.mechanisms.pca.PrivateSubspaceIteration`, PSI-ε (thesis Alg 7) with the data-independent
  sensitivity bound, the whole ε (it centres by the true mean inside its sensitivity analysis,
  Lemma 2.7, so it needs no private mean).
* diffprivlib: :class:`diffprivlib.models.PCA` (Imtiaz & Sarwate's analyze-then-eigen route) with
  ``centered=False`` — it spends ε/2 on a private mean and ε/2 on the covariance — with **public**
  ``bounds=(-1, 1)`` per feature (so it does not take min/max from the data) and
  ``data_norm = 2√d``: the largest norm a row centred by any mean in the cube can have, so
  its norm clipping never triggers and nothing is taken from the data. (Its own
  ``PrivacyLeakWarning`` would fire if either were left unset.) A fresh
  ``BudgetAccountant`` is passed so runs do not accumulate in its global default accountant.

Versions: diffprivlib 0.6.6 imports ``DOUBLE``/``DTYPE`` from ``sklearn.tree._tree``, which scikit-learn 1.9
removed, so the ``baselines`` extra requires ``scikit-learn<1.9`` (requirements.lock pins 1.8.0).
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
