"""Errors and warnings of :mod:`dpkit.data`: each names the file, folder or parameter involved and what to do."""
from __future__ import annotations

from dpkit.core.exceptions import DPKitError

__all__ = [
    "DataError",
    "UnknownDatasetError",
    "DataNotFoundError",
    "DataUnavailableError",
    "ChecksumError",
    "MalformedDataError",
    "RegistryError",
    "DataConfigError",
    "SpecError",
    "ClippingWarning",
]


class DataError(DPKitError):
    """Base class of data-layer errors."""


class UnknownDatasetError(DataError, ValueError):
    """The requested name is not in ``data/registry.yaml``."""


class DataNotFoundError(DataError, FileNotFoundError):
    """A required raw file is in none of the search locations and could not be downloaded."""


class DataUnavailableError(DataNotFoundError):
    """None of the requested data sets is on this machine, and each is documented in ``data/registry.yaml``
    (``unavailable_offline``) as possibly unavailable: a recorded skip, not a fault
    (:func:`dpkit.data.load_available`; a batch run records it as ``unavailable`` with this message)."""


class ChecksumError(DataError, ValueError):
    """A file's size or sha256 is none of the registry's accepted variants (corrupt, truncated or edited)."""


class MalformedDataError(DataError, ValueError):
    """A file parses wrongly: wrong field count, non-numeric value, missing column, truncated stream."""


class RegistryError(DataError, RuntimeError):
    """``data/registry.yaml`` is missing, unreadable or inconsistent."""


class DataConfigError(DataError, ValueError):
    """An environment variable of the data layer (``DPKIT_DATA_DIR``, ``DPKIT_SHARED_DIR``,
    ``DPKIT_OFFLINE``) names a folder that does not exist, a file, or an unknown value."""


class SpecError(DataError, ValueError):
    """A data set spec (a spec file, a DataFrame's spec keys, an entry point of group ``dpkit.datasets``) is malformed:
    an unknown key, a name that collides with a registered data set, bounds or an encoding that make no sense
    (:mod:`dpkit.data.spec`). The message names its spec and the key."""


class ClippingWarning(UserWarning):
    """Values of the data lay outside the public or user-given rescaling bounds and were clipped.

    The message gives the clipped fraction. It is meant for the curator who holds the data (the
    count is a statistic of the private data and is not a release; it is recorded in the provenance).
    """
