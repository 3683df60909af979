"""Where each data set's files are, whether they verify, and Table 3.1 side by side (never raises for data problems)."""
from __future__ import annotations

import warnings
from typing import Any

from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.core.rng import RNGLike
from dpkit.data.api import list_datasets, load
from dpkit.data.errors import ChecksumError, DataError, DataNotFoundError, MalformedDataError
from dpkit.data.files import find_file, verify_file
from dpkit.data.registry import get_spec
from dpkit.data.spec import is_user_dataset, user_file_status

__all__ = ["status", "table_3_1"]


def status(name: str, *, path=None, load_data: bool = True) -> dict[str, Any]:
    """Where each file of ``name`` is, whether its checksum is ok, and the loaded shape vs the thesis.

    Never raises for data problems: they are reported in ``"status"`` (``OK``, ``OK (n differs)``,
    ``MISSING``, ``BAD CHECKSUM``, ``MALFORMED``, ``ERROR``) and ``"message"``. Your own data set (a spec path, a
    registered name, an entry point's name) too: its ``"origin"`` (its spec file, ``register_dataset``, the entry
    point) and its one file, found without downloading, with its sha256 and whether it is the declared one
    (:func:`~dpkit.data.spec.user_file_status`).
    """
    if is_user_dataset(name):
        return _user_status(name, path=path, load_data=load_data)
    spec = get_spec(name)
    out: dict[str, Any] = {"name": spec.code, "title": spec.title, "thesis_shape": spec.thesis_shape, "files": [],
                           "shape": None, "source": None, "status": None, "message": ""}
    if spec.synthetic:
        ds = load(spec.code)
        out.update(shape=ds.shape, source="synthetic", status="OK")
        return out
    for f in spec.files:
        hit = find_file(spec.code, f, path=path)
        row = {"role": f.role, "name": f.name, "optional": f.optional, "found_in": None, "path": None, "checksum": "not found"}
        if hit is not None:
            row.update(found_in=hit.found_in, path=str(hit.path))
            try:
                _sha, variant = verify_file(spec.code, f, hit.path)
                row["checksum"] = "ok" if variant is not None else "no published checksum"
            except ChecksumError as exc:
                row["checksum"] = "MISMATCH"
                out["message"] = str(exc)
        out["files"].append(row)
    if not load_data:
        return out
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            ds = load(spec.code, path=path, download=False)
        out.update(shape=ds.shape, source=ds.provenance.get("source"))
        if ds.matches_thesis:
            out["status"] = "OK"
        elif spec.thesis_d == ds.d:
            out["status"] = "OK (n differs)"
            out["message"] = "; ".join(ds.provenance["notes"][:1])
        else:
            out["status"] = "SHAPE DIFFERS"
    except DataError as exc:
        out.update(status=_error_status(exc), message=str(exc))
    return out


def _error_status(exc: DataError) -> str:
    """The status word of a data set that failed to load with ``exc``."""
    for kind, word in ((DataNotFoundError, "MISSING"), (ChecksumError, "BAD CHECKSUM"),
                       (MalformedDataError, "MALFORMED")):
        if isinstance(exc, kind):
            return word
    return "ERROR"


def _user_status(name: Any, *, path: Any, load_data: bool) -> dict[str, Any]:
    out = user_file_status(name)
    if not load_data or out["status"] is not None:
        return out
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            ds = load(name, path=path, download=False)
        out.update(shape=ds.shape, status="OK")
    except DataError as exc:
        out.update(status=_error_status(exc), message=str(exc))
    return out


def table_3_1(names: list[str] | None = None, *, rng: RNGLike = 0, path=None) -> list[dict[str, Any]]:
    """Table 3.1 side by side: thesis (n, d) vs what loads here, with status and source.

    Data-derived bounds are computed silently here (only shapes are reported).
    """
    rows = []
    for code in names or [c for c in list_datasets() if not get_spec(c).synthetic]:
        spec = get_spec(code)
        row = {"code": spec.code, "data set": spec.title, "thesis_n": spec.thesis_n, "thesis_d": spec.thesis_d,
               "n": None, "d": None, "status": "", "source": "", "bounds": "", "note": ""}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                ds = load(code, rng=rng, path=path, download=False)
            row.update(n=ds.n, d=ds.d, source=ds.provenance["source"], bounds=ds.bounds_source)
            if ds.matches_thesis:
                row["status"] = "match"
            elif ds.d == spec.thesis_d:
                row["status"] = "d matches, n differs"
                row["note"] = ds.provenance["notes"][0] if ds.provenance["notes"] else ""
            else:
                row["status"] = "shape differs"
        except DataError as exc:
            row["status"] = "unavailable (" + type(exc).__name__ + ")"
            row["note"] = str(exc).splitlines()[0]
        rows.append(row)
    return rows
