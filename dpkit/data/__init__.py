"""The six data sets of the thesis's Table 3.1 (plus a seeded ``mock``), loaded with provenance.

>>> from dpkit.data import load
>>> ds = load("mock", n=200, d=3, rng=0)
>>> ds.shape, ds.bounds_source
((200, 3), 'public')

Every data set is described in ``data/registry.yaml`` (UCI page, official URLs, expected files with
sizes and sha256, licence CC BY 4.0, the recipe, the thesis's (n, d), public bounds, the
preprocessing steps its documentation makes public). :func:`load` runs one straight path:

1. the registry entry (:mod:`dpkit.data.registry`) names its recipe object (:mod:`dpkit.data.recipes`);
2. the recipe locates the raw files (explicit ``path``; ``$DPKIT_DATA_DIR``; the repo's gitignored
   ``data/raw/``; the offline copies in ``<shared>/data/raw/``; else a verified download through the pooch registry of
   :mod:`dpkit.data.download`), verifies their checksums on every call (hashes cached per file
   size and mtime) and parses them strictly (:mod:`dpkit.data.parsers`);
3. the Table 3.1 steps (thesis Sec 3.1, :mod:`dpkit.data.steps`): drop rows with missing values,
   subsample, drop constant columns, rescale every attribute to [-1, 1];
4. a :class:`Dataset` with ``X`` and its provenance.

Rescaling bounds are a release about the data when taken from the data (the thesis uses each
attribute's own min/max). :func:`load` uses PUBLIC bounds from the registry where the attribute
documentation gives them (CRM: [0, 1]; mock: [-1, 1]); otherwise it takes min/max from the data,
emits a :class:`~dpkit.core.exceptions.PrivacyLeakWarning` and records ``bounds_source="data"``.
Rows dropped for missing values and constant columns dropped are data-dependent too: each is
recorded in ``provenance["data_dependent_steps"]`` and warned about unless the registry declares
it public. WDBC also comes from scikit-learn's bundled copy, so it works with no files at all.

Your own data (:mod:`dpkit.data.spec`, docs/guide/own-data.md): a spec file's path, a DataFrame
(:func:`from_dataframe`, :func:`register_dataset`) or an installed package's entry point (group ``dpkit.datasets``)
works wherever a registry code does.
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
