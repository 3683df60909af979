"""The public entry points: :func:`load` (recipe -> Table 3.1 steps -> :class:`Dataset`), :func:`fetch`,
:func:`list_datasets` and :func:`dataset_info`."""
from __future__ import annotations

import os
import warnings
from typing import Any, Mapping

import numpy as np

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_int_in_range
from dpkit.data.dataset import Dataset
from dpkit.data.errors import DataNotFoundError, DataUnavailableError
from dpkit.data.files import FoundFile
from dpkit.data.recipes import Source, recipe_for
from dpkit.data.registry import DatasetSpec, get_spec, load_registry, registry_path
from dpkit.data.spec import UserSpec, is_user_dataset, load_user, resolve_user, user_datasets
from dpkit.data.steps import Prepared, prepare

__all__ = ["load", "load_available", "fetch", "list_datasets", "dataset_info"]


def list_datasets(*, user: bool = False) -> list[str]:
    """Registry codes, in registry order (``["CRM", "CSN", "CTG", "PAM", "PKS", "WDBC", "mock"]``); with ``user``,
    followed by the names of :func:`dpkit.data.register_dataset` and of the entry points of group ``dpkit.datasets``
    (:mod:`dpkit.data.spec`)."""
    return list(load_registry()) + (user_datasets() if user else [])


def dataset_info(name: str) -> DatasetSpec | UserSpec:
    """The registry entry of ``name`` (UCI id, page, files, recipe, thesis shape, public bounds); for your own data
    set (a spec path, a registered name, an entry point's name) its checked spec (:class:`~dpkit.data.spec.UserSpec`)."""
    if is_user_dataset(name):
        return resolve_user(name)
    return get_spec(name)


def fetch(
    name: str,
    *,
    dest: str | os.PathLike | None = None,
    progress: bool = False,
    include_optional: bool = True,
    missing_only: bool = True,
) -> list[FoundFile]:
    """Download ``name``'s files from UCI into ``dest`` (default ``$DPKIT_DATA_DIR`` or ``data/raw``), verified.

    Each file is streamed by pooch to a temporary file, checked (registry size and sha256, or a
    full strict parse for the CSN training file, which has no published checksum) and only then
    moved into place. With ``missing_only`` (default) files already found in a search location
    are skipped. Returns the list of installed :class:`~dpkit.data.files.FoundFile`. Offline this
    raises :class:`~dpkit.data.errors.DataNotFoundError` with what to download and where to put it.
    """
    return recipe_for(get_spec(name)).fetch(dest=dest, progress=progress, include_optional=include_optional,
                                            missing_only=missing_only)


def _check_flag(value: Any, name: str, *, allow_none: bool = False) -> None:
    if isinstance(value, (bool, np.bool_)) or (allow_none and value is None):
        return
    allowed = "True, False or None" if allow_none else "True or False"
    raise TypeError(f"{name} must be {allowed}; got {value!r} ({type(value).__name__})")


def _seed_repr(rng: RNGLike) -> int | str | None:
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return rng
    return None if rng is None else type(rng).__name__


def load(
    name: str,
    *,
    path: str | os.PathLike | None = None,
    bounds: str | tuple | Mapping[str, tuple[float, float]] = "registry",
    n: int | None = None,
    d: int | None = None,
    rng: RNGLike = 0,
    verify: bool = True,
    download: bool | None = None,
    source: str | None = None,
    subjects: list[int] | None = None,
) -> Dataset:
    """Load a Table 3.1 data set (or ``mock``) rescaled to [-1, 1]^d, with provenance.

    One straight path: registry entry -> recipe object (:mod:`dpkit.data.recipes`: locate, verify,
    parse) -> Table 3.1 steps (:mod:`dpkit.data.steps`) -> :class:`Dataset`.

    Parameters
    ----------
    name : str or path
        ``"CRM"``, ``"CSN"``, ``"CTG"``, ``"PAM"``, ``"PKS"``, ``"WDBC"`` or ``"mock"`` (case-insensitive); or your
        own data (:mod:`dpkit.data.spec`): a spec file's path (``.yaml``/``.yml``), a name given by
        :func:`~dpkit.data.spec.register_dataset` or an entry point's name of group ``dpkit.datasets``.
    path : path, optional
        A raw data file or a folder holding it (then the only place searched).
    bounds : "registry", "data", (lower, upper) or dict column -> (lower, upper)
        ``"registry"`` (default): the registry's public bounds, else the data's own min/max (thesis
        Sec 3.1, warns). ``"data"``: always the data's min/max (warns). A pair (of numbers or
        per-column arrays) or a dict: public bounds from the caller. Values outside public or user
        bounds are clipped (warns with the fraction, also in the provenance).
    n : int, optional
        Seeded subsample size, at least 2 (without replacement, original order kept). Default: the
        thesis's recipe (all rows; CSN: 100000 of the training file when present). For ``mock``: rows (1000).
    d : int, optional
        ``mock`` only: columns (default 5).
    rng : int, Generator, SeedSequence or None
        Seed of subsamples and of ``mock`` (default 0, so loads are reproducible).
    verify : bool
        Check sizes and sha256 against the registry (default). ``False`` loads an edited copy
        and says "not verified" in the provenance.
    download : bool, optional
        Download missing required files (default: yes unless ``DPKIT_OFFLINE=1``); the CSN
        training file (no published checksum) only with ``download=True``.
    source : {"files", "sklearn"}, optional
        WDBC only: the raw file or scikit-learn's bundled copy (default: the file if found).
    subjects : list of int, optional
        PAM only: which Protocol subject files (101..109) to use (default all nine).

    Returns
    -------
    Dataset

    Raises
    ------
    UnknownDatasetError, DataNotFoundError, ChecksumError, MalformedDataError, DataConfigError, SpecError
        Each names the file, folder or variable and the fix; nothing is silently skipped or half-loaded.
    ValueError, TypeError
        A bad argument (``n``, ``d``, ``bounds``, ``source``, ``subjects``, ``verify``, ``download``, ``rng``), named.

    Warns
    -----
    PrivacyLeakWarning
        Once per data-dependent step not declared public in the registry (data-derived bounds, rows
        dropped for missing values, constant columns dropped); see ``provenance["data_dependent_steps"]``.
    ClippingWarning
        Values outside public or user bounds were clipped (fraction in the message).
    """
    if is_user_dataset(name):
        return load_user(name, path=path, bounds=bounds, n=n, d=d, rng=rng, verify=verify, download=download,
                         source=source, subjects=subjects, _stacklevel=4)
    spec = get_spec(name)
    recipe = recipe_for(spec)
    n = None if n is None else check_int_in_range(n, name="n", low=2)
    d = None if d is None else check_int_in_range(d, name="d", low=1)
    _check_flag(verify, "verify")
    _check_flag(download, "download", allow_none=True)
    options = {"d": d, "source": source, "subjects": subjects}
    recipe.check_options(**options)
    gen, seed = resolve_rng(rng), _seed_repr(rng)
    src = recipe.read(path=path, verify=bool(verify), allow_download=download, n=n, rng=gen, seed=seed, options=options)
    prep = prepare(spec, src, bounds=bounds, rng=gen, seed=seed)
    for category, message in prep.warnings:
        warnings.warn(message, category, stacklevel=2)
    return _dataset(spec, src, prep)


def _dataset(spec: DatasetSpec, src: Source, prep: Prepared) -> Dataset:
    provenance = {
        "dataset": spec.code, "title": spec.title, "uci_id": spec.uci_id, "page": spec.page, "licence": spec.licence,
        "citation": spec.citation, "recipe": spec.preprocessing, "registry": str(registry_path()), **prep.provenance,
    }
    return Dataset(name=spec.code, title=spec.title, X=prep.X, columns=prep.columns,
                   raw_shape=tuple(int(s) for s in src.table.raw_shape), bounds=prep.bounds,
                   bounds_source=prep.bounds_source, provenance=provenance, thesis_shape=spec.thesis_shape)


def load_available(
    names: Any, *, parameter: str = "DATASETS", **kwargs: Any
) -> tuple[dict[str, Dataset], dict[str, str]]:
    """Load every data set of ``names`` whose files are on this machine (or downloadable); name the others.

    The notebooks' loading step. Only a data set that ``data/registry.yaml`` documents as possibly
    unavailable offline (``unavailable_offline``, e.g. PAM) may be absent: its
    :class:`~dpkit.data.errors.DataNotFoundError` is reported in the second dict, with the first line of its
    message and the registry's reason. Every other error propagates: a documented data set's file missing from an
    explicit ``path``, an undocumented data set's files missing, an unknown name, a checksum mismatch, a malformed
    file; so a damaged or misplaced file never turns into a quietly shorter table.

    Parameters
    ----------
    names : list of str
        Registry codes (:func:`list_datasets`) or your own data sets (spec paths, registered names), each at most
        once. A spec path's data set is keyed by its spec's ``name``.
    parameter : str
        The caller's name for ``names`` (a notebook parameter), used in error messages.
    **kwargs
        Passed to :func:`load` for every data set.

    Returns
    -------
    (dict code -> Dataset, dict code -> reason), both in the order of ``names``.

    Raises
    ------
    TypeError
        ``names`` is not a list or tuple of strings (e.g. a JSON list passed as one string).
    ValueError
        ``names`` is empty or repeats a code.
    DataUnavailableError
        None of ``names`` is here and each is documented as possibly unavailable offline: the message names
        each with the registry's reason (a batch run records it as ``unavailable``, not as a failure).
    DataNotFoundError
        A data set that is not documented as possibly unavailable (or is looked for under an explicit
        ``path``) is missing.
    """
    if not isinstance(names, (list, tuple)) or not all(isinstance(x, str) for x in names):
        raise TypeError(f"{parameter} must be a list of data set codes such as ['CRM', 'WDBC'], "
                        f"got {type(names).__name__} {names!r}")
    if not names:
        raise ValueError(f"{parameter} is empty: name at least one of {list_datasets()}")
    repeated = sorted({x for x in names if list(names).count(x) > 1})
    if repeated:
        raise ValueError(f"{parameter} repeats {repeated}")
    data: dict[str, Dataset] = {}
    missing: dict[str, str] = {}
    for name in names:
        try:
            ds = load(name, **kwargs)
        except DataNotFoundError as exc:
            if is_user_dataset(name):  # your own data is never documented as possibly unavailable
                raise
            documented = get_spec(name).unavailable_offline
            if not documented or kwargs.get("path") is not None:
                raise
            missing[name] = (f"{type(exc).__name__}: {str(exc).splitlines()[0]} (documented as possibly unavailable "
                             f"offline in data/registry.yaml: {documented})")
            continue
        key = ds.name if is_user_dataset(name) else name
        if key in data:
            raise ValueError(f"{parameter}: {name!r} is the data set {key!r} a second time")
        data[key] = ds
    if not data:
        raise DataUnavailableError(f"none of {parameter} = {list(names)} is available here: "
                                   + "; ".join(f"{k}: {v}" for k, v in missing.items()))
    return data, missing
