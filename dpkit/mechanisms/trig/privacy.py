"""Exact privacy quantities of the moment release (thesis Alg 4 step 4, Alg 9 step 3).

:func:`moment_sensitivity` gives the exact L1 and L2 sensitivities of the non-constant moments over a finite set of
changed rows; with Laplace noise of scale ``b`` the worst-case privacy loss is exactly ``l1 / b``, which checks the
constants of :func:`~dpkit.mechanisms.trig.moments.moment_noise` without any bound. :func:`moment_privacy_loss` is the
privacy-loss variable of one release, the statistic the auditor thresholds.
"""
from __future__ import annotations

import numpy as np

from dpkit.mechanisms.trig.moments import MomentNoise

__all__ = ["moment_privacy_loss"]


def moment_privacy_loss(release: np.ndarray, b0: np.ndarray, b1: np.ndarray, noise: MomentNoise) -> np.ndarray:
    """Privacy loss ``ln(p_{b0}(ŷ) / p_{b1}(ŷ))`` of releases ``ŷ = b + noise`` of true moments ``b0`` vs ``b1``.

    Parameters
    ----------
    release : array (..., R)
        Outputs of :func:`~dpkit.mechanisms.trig.moments.release_moments` (the constant
        coordinate 0 carries no noise and is ignored).
    b0, b1 : array (R,)
        The true moment vectors of two neighbouring data sets.
    noise : MomentNoise
        The noise the release used: Laplace of scale ``b`` gives
        ``Σ_r (|ŷ_r − b1_r| − |ŷ_r − b0_r|) / b``; Gaussian of standard deviation ``σ`` gives
        ``Σ_r ((ŷ_r − b1_r)² − (ŷ_r − b0_r)²) / (2σ²)``.

    Returns
    -------
    ndarray of shape ``release.shape[:-1]``.
    """
    if not noise.scale > 0:
        raise ValueError(f"noise.scale must be > 0 (a noiseless release has no finite privacy loss); got {noise.scale}")
    y = np.asarray(release, dtype=float)[..., 1:]
    c0, c1 = np.asarray(b0, dtype=float)[1:], np.asarray(b1, dtype=float)[1:]
    if y.shape[-1] != c0.shape[0] or c0.shape != c1.shape:
        raise ValueError(f"release (..., R), b0 and b1 (R,) must agree in R; got {release.shape}, {np.shape(b0)}, {np.shape(b1)}")
    if noise.kind == "laplace":
        return (np.abs(y - c1) - np.abs(y - c0)).sum(axis=-1) / noise.scale
    return ((y - c1) ** 2 - (y - c0) ** 2).sum(axis=-1) / (2.0 * noise.scale**2)
