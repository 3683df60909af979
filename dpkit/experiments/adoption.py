"""Kept repetitions carried over to new code that computes the same numbers (:mod:`dpkit.experiments.checkpoint`).

A checkpoint folder whose identity differs from the wanted one only in the sources' fingerprint passes to the new
identity when a few kept repetitions (:func:`verified_indices`: by default the lowest and the highest) computed again
with the current code equal the kept ones to the bit (:func:`first_difference`), logged in :data:`ADOPTIONS`
(:func:`adoptions`). Only measured times are ignored; floats compare bit for bit (NaN equals NaN), arrays by dtype,
shape and value, containers recursively, and every value must have the kept value's type. Adoption is switched on
explicitly (``run_cells``'s ``adopt``; docs/guide/batch.md, ``--stale verify``).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpkit.core.validation import check_positive_int

__all__ = ["ADOPTIONS", "DEFAULT_VERIFY_REPS", "adoption_switch", "verify_reps_switch", "verified_indices",
           "first_difference", "record_difference", "adoptions"]

#: Kept repetitions an adoption computes again by default: the lowest and the highest.
DEFAULT_VERIFY_REPS = 2
#: The log of a checkpoint folder's adoptions (a JSON list, one entry per adoption).
ADOPTIONS = "adoptions.json"

_MEASURED_FIELDS = frozenset({"time_s", "timings"})  # a record's measured times
_MEASURED_KEY = "seconds"  # a measured time inside a nested dict (the class supremum's search)


def adoption_switch(adopt: bool) -> bool:
    """``adopt``, checked: adoption is on only when the caller says so (``TypeError`` for anything but a bool)."""
    if not isinstance(adopt, bool):
        raise TypeError(f"adopt must be True or False; got {adopt!r}")
    return adopt


def verify_reps_switch(verify_reps: int | None = None) -> int:
    """How many kept repetitions an adoption computes again: ``verify_reps`` if given, else
    :data:`DEFAULT_VERIFY_REPS` (the lowest and the highest kept index). A value that is not an integer ≥ 1 raises
    ``ValueError`` (``TypeError`` for a non-integer) naming ``verify_reps``."""
    return DEFAULT_VERIFY_REPS if verify_reps is None else check_positive_int(verify_reps, name="verify_reps")


def verified_indices(kept: Sequence[int], n: int) -> list[int]:
    """``n`` of the ``kept`` indices (ascending), evenly spread from the lowest to the highest: 1 the lowest, 2 the
    lowest and the highest, more adds those between, every kept index once ``n`` reaches their number."""
    kept = sorted(int(i) for i in kept)
    if n >= len(kept):
        return kept
    if n == 1:
        return kept[:1]
    return [kept[j * (len(kept) - 1) // (n - 1)] for j in range(n)]


def _same_float(a: float, b: float) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


def first_difference(kept: Any, new: Any, where: str = "") -> tuple[str, Any, Any] | None:
    """The first place where ``new`` differs from ``kept`` (module docstring), as ``(where, kept value, new value)``;
    ``None`` if they are equal. ``where`` names the place (``abs``, ``supremum['witness']``, ``ledger['entries'][0]``)."""
    if type(kept) is not type(new):
        return where, kept, new
    if dataclasses.is_dataclass(kept) and not isinstance(kept, type):
        for f in dataclasses.fields(kept):
            if f.name in _MEASURED_FIELDS:
                continue
            found = first_difference(getattr(kept, f.name), getattr(new, f.name), f"{where}.{f.name}" if where else f.name)
            if found:
                return found
        return None
    if isinstance(kept, dict):
        if set(kept) != set(new):
            return f"{where} (keys)", sorted(map(str, kept)), sorted(map(str, new))
        for key in kept:
            if key == _MEASURED_KEY:
                continue
            found = first_difference(kept[key], new[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(kept, (list, tuple)):
        if len(kept) != len(new):
            return f"{where} (length)", len(kept), len(new)
        for i, (a, b) in enumerate(zip(kept, new)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(kept, np.ndarray):
        if kept.dtype != new.dtype or kept.shape != new.shape:
            return f"{where} (dtype, shape)", (str(kept.dtype), kept.shape), (str(new.dtype), new.shape)
        if kept.dtype.kind in "fc":
            same = np.array_equal(kept, new, equal_nan=True)
        elif kept.dtype.kind == "O":
            return next((found for i, (a, b) in enumerate(zip(kept.ravel(), new.ravel()))
                         if (found := first_difference(a, b, f"{where}.flat[{i}]"))), None)
        else:
            same = np.array_equal(kept, new)
        return None if same else (where, kept, new)
    if isinstance(kept, (float, np.floating)):
        return None if _same_float(kept, new) else (where, kept, new)
    if isinstance(kept, (complex, np.complexfloating)):
        same = _same_float(kept.real, new.real) and _same_float(kept.imag, new.imag)
        return None if same else (where, kept, new)
    try:
        same = bool(kept == new)
    except (TypeError, ValueError):  # no plain equality: compare what is kept on disk
        import pickle

        same = pickle.dumps(kept) == pickle.dumps(new)
    return None if same else (where, kept, new)


def record_difference(kept: Sequence[Any], new: Sequence[Any]) -> str | None:
    """How a repetition's records computed again differ from the kept ones, in words naming the record's method,
    σ, the field and both values (``None``: equal, measured times aside)."""
    if len(kept) != len(new):
        return f"{len(kept)} records kept, {len(new)} now"
    for a, b in zip(kept, new):
        found = first_difference(a, b)
        if found:
            where, was, now = found
            label = ", ".join(f"{name} {getattr(a, attr)!r}" for name, attr in (("method", "method"), ("σ", "sigma"))
                              if hasattr(a, attr))
            return f"{label + ': ' if label else ''}{where or 'the record'} kept {was!r}, now {now!r}"
    return None


def adoptions(folder: str | os.PathLike) -> list[dict[str, Any]]:
    """Every adoption logged below ``folder`` (all its data sets), each log entry with ``dataset``, the folder
    relative to ``folder`` (``.`` for ``folder`` itself); ``[]`` if there is none."""
    base = Path(folder)
    out = []
    for log in sorted(base.rglob(ADOPTIONS)) if base.is_dir() else []:
        for entry in json.loads(log.read_text()):
            out.append({"dataset": log.parent.relative_to(base).as_posix(), **entry})
    return out
