"""Replace-one neighbouring data sets for the audits of the method tests (one helper, shared)."""
from __future__ import annotations

import numpy as np


def replace_one(a, b, n: int = 4, d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Two n×d data sets of zeros that differ in row 0 only: ``a`` in the first, ``b`` in the second."""
    d0, d1 = np.zeros((n, d)), np.zeros((n, d))
    d0[0], d1[0] = a, b
    return d0, d1


def corners(n: int = 4, d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Row 0 at the corner (−1, …, −1) vs (1, …, 1): the worst case for statistics monotone in each coordinate."""
    return replace_one(-1.0, 1.0, n=n, d=d)
