"""The six data sets of the thesis's Table 3.1 (plus a seeded ``mock``), loaded with provenance.

>>> from dpkit.data import load
>>> ds = load("mock", n=200, d=3, rng=0)
>>> ds.shape, ds.bounds_source
((200, 3), 'public')

:func:`load` runs one straight path from the registry (``data/registry.yaml``, :mod:`dpkit.data.registry`):

1. the entry's recipe (:mod:`dpkit.data.recipes`) locates the raw files, verifies their checksums on every call and
   parses them strictly;
2. the Table 3.1 steps (thesis Sec 3.1, :mod:`dpkit.data.steps`), rescaling every attribute to [-1, 1];
3. a :class:`Dataset` with ``X`` and its provenance.

Privacy: bounds taken from the data (where the registry has no public ones) warn
:class:`~dpkit.core.exceptions.PrivacyLeakWarning` and record ``bounds_source="data"``; other data-dependent steps are
recorded in ``provenance["data_dependent_steps"]`` and warned about unless declared public. Own data:
:mod:`dpkit.data.spec`.
"""
from __future__ import annotations

from dpkit.data import errors
from dpkit.data.api import dataset_info, fetch, list_datasets, load, load_available
from dpkit.data.dataset import Dataset
from dpkit.data.errors import *  # noqa: F403  (the error and warning classes, listed in errors.__all__)
from dpkit.data.recipes import SKLEARN_SOURCE, recipe_for
from dpkit.data.spec import from_dataframe, quick_datasets, read_spec, register_dataset, unregister_dataset
from dpkit.data.status import status, table_3_1
from dpkit.data.steps import rescale

__all__ = [
    "Dataset",
    "load",
    "load_available",
    "list_datasets",
    "dataset_info",
    "fetch",
    "status",
    "table_3_1",
    "rescale",
    "recipe_for",
    "SKLEARN_SOURCE",
    "from_dataframe",
    "read_spec",
    "quick_datasets",
    "register_dataset",
    "unregister_dataset",
    *errors.__all__,
]
