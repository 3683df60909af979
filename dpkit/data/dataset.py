"""The loaded data set: ``X`` in [-1, 1]^d with its columns, bounds and provenance."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

__all__ = ["Dataset"]

@dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class Dataset:
    """A loaded data set, ready for the mechanisms: ``X`` in [-1, 1]^d.

    Attributes
    ----------
    name : str
        Registry code (``"CRM"``, ..., ``"mock"``).
    X : ndarray of shape (n, d), float64, read-only
        The preprocessed data rescaled to [-1, 1]^d (thesis Sec 3.1, Table 3.1).
    columns : tuple of str
        Column names of ``X``.
    raw_shape : (int, int)
        Rows x fields of the raw file as read, before preprocessing.
    bounds : ndarray of shape (d, 2)
        ``[lower, upper]`` per column, in original units, used for the rescaling
        ``x -> 2 (x - lower) / (upper - lower) - 1``.
    bounds_source : {"public", "data", "user"}
        Where the bounds came from; ``"data"`` means the min/max of the private data (a
        :class:`~dpkit.core.exceptions.PrivacyLeakWarning` was emitted).
    provenance : dict
        Files (path, sha256, where found, verified?), source, rows/columns dropped and why,
        subsample size and seed, bounds source, the data-dependent steps (each with whether the
        registry declares it public), clipped values and fraction, notes.
    thesis_shape : (int, int) or None
        (n, d) printed in Table 3.1.
    """

    name: str
    title: str
    X: np.ndarray
    columns: tuple[str, ...]
    raw_shape: tuple[int, int]
    bounds: np.ndarray
    bounds_source: str
    provenance: Mapping[str, Any] = field(default_factory=dict)
    thesis_shape: tuple[int, int] | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def shape(self) -> tuple[int, int]:
        """(n, d) after preprocessing."""
        return (self.n, self.d)

    @property
    def matches_thesis(self) -> bool | None:
        """Whether ``shape`` equals Table 3.1's (n, d) (None for ``mock``)."""
        return None if self.thesis_shape is None else self.shape == tuple(self.thesis_shape)

    @property
    def X_original(self) -> np.ndarray:
        """The preprocessed data in original units (inverse of the rescaling; clipped values stay clipped)."""
        return self.to_original(self.X)

    def to_original(self, Z: np.ndarray) -> np.ndarray:
        """Map points of [-1, 1]^d (e.g. a synthetic database) back to original units."""
        Z = np.asarray(Z, dtype=np.float64)
        lo, hi = self.bounds[:, 0], self.bounds[:, 1]
        return lo + (Z + 1.0) * 0.5 * (hi - lo)

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly one-line description (shape vs thesis, source, bounds source)."""
        return {
            "name": self.name,
            "n": self.n,
            "d": self.d,
            "thesis_n": None if self.thesis_shape is None else self.thesis_shape[0],
            "thesis_d": None if self.thesis_shape is None else self.thesis_shape[1],
            "raw_shape": list(self.raw_shape),
            "source": self.provenance.get("source"),
            "bounds_source": self.bounds_source,
        }

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, n={self.n}, d={self.d}, raw_shape={self.raw_shape}, "
            f"thesis_shape={self.thesis_shape}, bounds_source={self.bounds_source!r}, "
            f"source={self.provenance.get('source')!r})"
        )
