"""Parameter sweeps of one method (thesis Sec 3.2, Figs 3.1 and 3.2: κ and k).

Every value gets the same repetition seeds (common random numbers: the same workloads), so
differences between values are not workload noise. A sweep is ``dataclasses.replace(method,
**{param: value})`` for each value, run through the one runner.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpkit.core.rng import RNGLike, spawn_seeds
from dpkit.core.validation import check_positive_finite, check_positive_int, check_sequence
from dpkit.experiments.protocol import run_cell
from dpkit.experiments.records import ReleaseRecord
from dpkit.experiments.summary import SUP_KEYS, records_frame, spread_stats
from dpkit.queries.release import Method

__all__ = ["sweep", "sweep_rows", "parse_values"]


def sweep(X: np.ndarray, *, method: Method, param: str, values: Sequence[Any], sigma: float, reps: int,
          n_queries: int = 10_000, J: int = 10, rng: RNGLike = 0, progress: bool = False) -> dict[Any, list[ReleaseRecord]]:
    """Worst-case errors of ``method`` with ``param`` set to each of ``values`` (common random numbers).

    Returns
    -------
    dict
        ``value -> records`` in the order of ``values``.

    Raises
    ------
    TypeError, ValueError
        Before any work, naming the parameter: ``param`` not a field of the method, ``values`` not a non-empty list
        of distinct values (a bare value or string, or a repeated value that would be merged in the result),
        ``sigma`` not finite and > 0, ``reps``, ``n_queries`` or ``J`` not an integer ≥ 1.
    """
    fields = {f.name for f in dataclasses.fields(method)}
    if param not in fields:
        raise ValueError(f"param must be a field of {type(method).__name__} {sorted(fields)}; got {param!r}")
    values = check_sequence(values, name="values", what=f"values of {param}")
    sigma = check_positive_finite(sigma, name="sigma")
    reps = check_positive_int(reps, name="reps")
    n_queries = check_positive_int(n_queries, name="n_queries")
    J = check_positive_int(J, name="J")
    seed_root = spawn_seeds(rng, 1)[0]
    out: dict[Any, list[ReleaseRecord]] = {}
    for v in tqdm(list(values), disable=not progress, desc=f"{param} sweep"):
        m = dataclasses.replace(method, **{param: v})
        # a fresh copy of the root for every value: SeedSequence.spawn counts the children it has handed out, so
        # the root itself would give the second value the repetitions reps…2·reps−1 (other workloads, no pairing)
        root = np.random.SeedSequence(seed_root.entropy, spawn_key=seed_root.spawn_key, pool_size=seed_root.pool_size)
        out[v] = run_cell(X, methods={m.name: m}, sigma=sigma, reps=reps, n_queries=n_queries, J=J, rng=root)
    return out


def sweep_rows(results: dict[Any, list[ReleaseRecord]], *, dataset: str, param: str) -> list[dict[str, Any]]:
    """Mean, std, min and max of the worst errors per swept value (ascending), and of the class supremum
    (:data:`~dpkit.experiments.summary.SUP_KEYS`, with the mean certified upper bound ``sup_upper_mean`` beside
    ``sup_abs_mean``, and ``sup_abs_min``; ``None`` where a method has none)."""
    rows = []
    for value in sorted(results):
        g = records_frame(results[value])
        st = spread_stats(g)
        sup = g["sup_abs"].dropna().astype(float) if "sup_abs" in g else []
        rows.append({
            "dataset": dataset, "param": param, "value": value, "method": str(g["method"].iloc[0]),
            "mechanism": "II" if float(g["params"].iloc[0]["delta"]) > 0 else "I",
            "sigma": float(g["sigma"].iloc[0]), **{k: st[k] for k in (
                "abs_mean", "abs_std", "abs_min", "abs_max", "rel_mean", "time_median_s", "reps", *SUP_KEYS)},
            "sup_abs_min": float(min(sup)) if len(sup) else None,
        })
    return rows


def parse_values(text: str, *, kind: type = float, name: str = "values") -> list[Any]:
    """A sweep grid typed as text (``"0.5, 1, 2"``) as a list of ``kind``; errors name the bad entry.

    >>> parse_values("1, 2.5,4")
    [1.0, 2.5, 4.0]
    >>> parse_values("1, x", kind=int)
    Traceback (most recent call last):
    ...
    ValueError: values: entry 2 ('x') is not a valid int
    """
    out = []
    for i, tok in enumerate((t.strip() for t in str(text).split(",")), start=1):
        if not tok:
            continue
        try:
            out.append(kind(tok))
        except ValueError:
            raise ValueError(f"{name}: entry {i} ({tok!r}) is not a valid {kind.__name__}") from None
    if not out:
        raise ValueError(f"{name}: no values in {text!r}")
    return out
