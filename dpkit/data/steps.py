"""The Table 3.1 steps shared by every data set (thesis Sec 3.1), applied to a recipe's :class:`Source`.

In order: drop rows with a missing value, take the seeded subsample, drop constant columns, rescale every attribute to
[-1, 1] with ``x -> 2 (x - lower) / (upper - lower) - 1``. Each data-dependent step that changes the result is
recorded in ``provenance["data_dependent_steps"]`` with a :class:`~dpkit.core.exceptions.PrivacyLeakWarning` unless the
registry declares it public; clipping by public bounds gives a :class:`~dpkit.data.errors.ClippingWarning`. The
warnings are returned, so :func:`dpkit.data.load` emits them at its caller's line.
"""
from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.data.errors import ClippingWarning, MalformedDataError
from dpkit.data.recipes import Source
from dpkit.data.registry import DatasetSpec

__all__ = ["Prepared", "rescale", "resolve_bounds", "prepare"]

_BOUNDS_FORMS = "'registry', 'data', a (lower, upper) pair of numbers or per-column arrays, or a dict column -> (lower, upper)"


@dataclass
class Prepared:
    """The result of the steps: X in [-1, 1]^d, its columns and bounds, provenance and the warnings to emit."""

    X: np.ndarray
    columns: tuple[str, ...]
    bounds: np.ndarray
    bounds_source: str
    provenance: dict[str, Any]
    warnings: list[tuple[type[Warning], str]] = field(default_factory=list)


def rescale(values: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, int]:
    """Rescale columns from ``[lower, upper]`` to [-1, 1], clipping values outside; return (X, #clipped).

    Requires ``upper > lower`` for every column (degenerate columns are dropped before).
    """
    v = np.asarray(values, dtype=np.float64)
    lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (v.shape[1],))
    hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (v.shape[1],))
    if not np.all(hi > lo):
        bad = np.flatnonzero(~(hi > lo))
        raise ValueError(f"bounds must satisfy upper > lower for every column; violated at columns {bad.tolist()}")
    outside = (v < lo) | (v > hi)
    X = 2.0 * (np.clip(v, lo, hi) - lo) / (hi - lo) - 1.0
    X = np.ascontiguousarray(np.clip(X, -1.0, 1.0))  # clip: rounding; C order for the mechanisms
    return X, int(outside.sum())


def _user_bounds(bounds: Any, columns: tuple[str, ...], dataset: str = "the data set") -> tuple[np.ndarray, np.ndarray]:
    d = len(columns)
    if isinstance(bounds, Mapping):
        missing = [c for c in columns if c not in bounds]
        unknown = [k for k in bounds if k not in columns]
        if missing:
            hints = [f"{k!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(str(k), missing, n=1))
                                 else "") for k in unknown]
            raise ValueError(f"bounds dict lacks column(s) {missing}"
                             + (f"; it has key(s) that are no kept column: {', '.join(hints)}" if hints else ""))
        if unknown:  # e.g. a column dropped as constant (CTG's DR_count), or a misspelt extra key
            warnings.warn(f"bounds for column(s) {unknown} are not in {dataset}'s kept columns and are ignored",
                          UserWarning, stacklevel=4)
        pairs = [bounds[c] for c in columns]
        try:
            lo = np.array([float(p[0]) for p in pairs])
            hi = np.array([float(p[1]) for p in pairs])
        except (TypeError, ValueError, IndexError, KeyError):
            raise ValueError(f"bounds dict values must be (lower, upper) pairs of numbers; got {pairs[:3]!r}...") from None
        return lo, hi
    try:
        lo_, hi_ = bounds
        lo = np.broadcast_to(np.asarray(lo_, dtype=np.float64), (d,)).copy()
        hi = np.broadcast_to(np.asarray(hi_, dtype=np.float64), (d,)).copy()
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be {_BOUNDS_FORMS} (per-column arrays of length d = {d}); got {bounds!r}") from None
    return lo, hi


def resolve_bounds(spec: DatasetSpec, bounds: Any, values: np.ndarray, columns: tuple[str, ...]):
    """Return (lower, upper, source, reference) for the kept columns; ``source`` is public, data or user."""
    d = values.shape[1]
    if isinstance(bounds, str):
        if bounds not in ("registry", "data"):
            raise ValueError(f"bounds must be {_BOUNDS_FORMS}; got {bounds!r}")
        if bounds == "registry" and spec.public_bounds is not None:
            lo, hi = spec.public_bounds
            return np.full(d, lo), np.full(d, hi), "public", spec.bounds_reference
        lo, hi = values.min(axis=0), values.max(axis=0)
        why = "bounds='data' requested" if bounds == "data" else "the registry has no documented public bounds"
        return lo, hi, "data", f"per-column min/max of the loaded data ({why})"
    lo, hi = _user_bounds(bounds, columns, spec.code)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
        raise ValueError("user bounds must be finite with upper > lower for every column")
    return lo, hi, "user", "bounds passed by the caller (treated as public)"


def _step(spec: DatasetSpec, key: str, detail: str, steps: list[dict[str, Any]], warns: list) -> None:
    """Record a data-dependent step; queue a PrivacyLeakWarning unless the registry declares it public."""
    reference = spec.public_steps.get(key)
    steps.append({"step": key, "detail": detail, "public": reference is not None, "reference": reference or ""})
    if reference is None:
        warns.append((PrivacyLeakWarning,
                      f"{spec.code}: {detail}; this depends on the private data and is released outside any privacy "
                      f"budget. If the documentation of the data publishes it, declare it in data/registry.yaml "
                      f"(public_steps: {key}: <reference>)."))


def _drop_missing(spec: DatasetSpec, values: np.ndarray, notes: list, steps: list, warns: list) -> tuple[np.ndarray, int]:
    nan_rows = np.isnan(values).any(axis=1)
    k = int(nan_rows.sum())
    if k:
        values = values[~nan_rows]
        notes.append(f"dropped {k} row(s) with a missing value")
        _step(spec, "drop_missing_rows", f"dropped {k} row(s) with a missing value", steps, warns)
    return values, k


def _subsample(spec: DatasetSpec, values: np.ndarray, n: int | None, rng: np.random.Generator, seed: int | str | None,
               notes: list) -> tuple[np.ndarray, dict[str, Any] | None]:
    if n is None:
        return values, None
    N = values.shape[0]
    if n > N:
        raise ValueError(f"n = {n} exceeds the {N} rows available for {spec.code}")
    if n == N:
        return values, None
    idx = np.sort(rng.choice(N, size=int(n), replace=False))
    notes.append(f"seeded subsample of {n} of {N} rows (seed {seed})")
    return values[idx], {"n": int(n), "of": int(N), "seed": seed,
                         "method": "uniform without replacement (numpy Generator.choice), original order kept"}


def _drop_constant(spec: DatasetSpec, values: np.ndarray, columns: tuple[str, ...], notes: list, steps: list,
                   warns: list) -> tuple[np.ndarray, tuple[str, ...], list[str]]:
    const = values.min(axis=0) == values.max(axis=0)
    dropped = [c for c, k in zip(columns, const) if k]
    if dropped:
        values = values[:, ~const]
        columns = tuple(c for c, k in zip(columns, const) if not k)
        notes.append(f"dropped constant column(s) {dropped}")
        _step(spec, "drop_constant_columns", f"dropped constant column(s) {dropped}", steps, warns)
    return values, columns, dropped


def prepare(spec: DatasetSpec, src: Source, *, bounds: Any, rng: np.random.Generator, seed: int | str | None) -> Prepared:
    """Apply the Table 3.1 steps to ``src``; return X, bounds, provenance and the warnings to emit."""
    table = src.table
    notes, steps, warns = list(src.notes), [], []
    values, columns = np.asarray(table.values), tuple(table.columns)
    values, n_missing = _drop_missing(spec, values, notes, steps, warns)
    values, subsample = _subsample(spec, values, src.subsample_n, rng, seed, notes)
    if values.shape[0] < 2:
        used = [f.get("file") for f in src.files]
        raise MalformedDataError(f"[{spec.code}] fewer than 2 rows left after preprocessing; check the file(s) {used}")
    values, columns, dropped_const = _drop_constant(spec, values, columns, notes, steps, warns)
    lo, hi, bsrc, bref = resolve_bounds(spec, bounds, values, columns)
    if bsrc == "data":
        steps.append({"step": "bounds", "detail": bref, "public": False, "reference": ""})
        warns.append((PrivacyLeakWarning,
                      f"{spec.code}: rescaling bounds are the {bref}; this is a release about the data outside any privacy "
                      "budget. Pass public bounds (bounds=(lower, upper)) or add them to data/registry.yaml to avoid it."))
    X, clipped = rescale(values, lo, hi)
    if clipped:
        frac = clipped / X.size
        warns.append((ClippingWarning,
                      f"{spec.code}: {clipped} of {X.size} values ({frac:.1%}) lie outside the {bsrc} bounds "
                      f"({bref}) and were clipped to them; check the bounds argument if that is not intended."))
    X.setflags(write=False)
    B = np.column_stack([lo, hi]).astype(np.float64)
    B.setflags(write=False)
    notes.extend(table.notes)
    prov: dict[str, Any] = {
        "files": src.files, "source": src.source, **src.extra,
        "rows_dropped_missing": n_missing, "subsample": subsample, "columns_dropped_constant": dropped_const,
        "columns_excluded": dict(table.excluded), "bounds_source": bsrc, "bounds_reference": bref,
        "data_dependent_steps": steps, "privacy_leak_warning": any(not s["public"] for s in steps),
        "clipped_values": clipped, "clipped_fraction": clipped / X.size if X.size else 0.0,
        "raw_shape": list(table.raw_shape), "shape": [int(X.shape[0]), int(X.shape[1])],
        "thesis_shape": None if spec.thesis_shape is None else list(spec.thesis_shape), "notes": notes,
    }
    return Prepared(X, columns, B, bsrc, prov, warns)
