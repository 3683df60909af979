"""Errors of :mod:`dpkit.data`: each names the file involved and what to do about it."""
from __future__ import annotations

from dpkit.core.exceptions import DPKitError

__all__ = [
    "DataError",
    "UnknownDatasetError",
    "DataNotFoundError",
    "ChecksumError",
    "MalformedDataError",
    "RegistryError",
]


class DataError(DPKitError):
    """Base class of data-layer errors."""


class UnknownDatasetError(DataError, ValueError):
    """The requested name is not in ``data/registry.yaml``."""


class DataNotFoundError(DataError, FileNotFoundError):
    """A required raw file is in none of the search locations and could not be downloaded."""


class ChecksumError(DataError, ValueError):
    """A file's size or sha256 is none of the registry's accepted variants (corrupt, truncated or edited)."""


class MalformedDataError(DataError, ValueError):
    """A file parses wrongly: wrong field count, non-numeric value, missing column, truncated stream."""


class RegistryError(DataError, RuntimeError):
    """``data/registry.yaml`` is missing or inconsistent."""
