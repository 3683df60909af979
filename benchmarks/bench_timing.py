"""The measurements of :mod:`benchmarks.bench`: loading, mechanism wall times, evaluator speed.

:func:`time_mechanisms` times the registry's ``trig-I``/``trig-II`` per σ (medians, worst time and
stage medians next to the thesis's worst times); :func:`time_evaluators` times
:mod:`dpkit.queries.evaluate` against the float64 baseline on every requested data set.
"""
from __future__ import annotations

import math
import statistics
import time
import traceback
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from dpkit.core.validation import check_positive_int
from dpkit.experiments import PAPER_WORST_TIME
from dpkit.queries.workload import THESIS_SIGMAS, GaussianKernelWorkload

if TYPE_CHECKING:
    from dpkit.queries.release import Method

__all__ = [
    "THESIS_DATASETS", "BenchConfig", "THESIS_WORST_TIME_S", "TARGET_MECHANISM_S", "TARGET_EVALUATOR_SPEEDUP", "load_all",
    "time_mechanisms", "time_evaluators",
]

THESIS_DATASETS: tuple[str, ...] = ("CRM", "CSN", "CTG", "PAM", "PKS", "WDBC")


@dataclass(frozen=True, kw_only=True)
class BenchConfig:
    """What the benchmark runs. :func:`full_config` is the thesis setting, :func:`quick_config` a subset."""

    datasets: tuple[str, ...] = THESIS_DATASETS
    sigmas: tuple[float, ...] = THESIS_SIGMAS
    reps: int = 3  # runs per (data set, σ, mechanism)
    #: registry parameters set on the benchmarked trig-I / trig-II (dpkit.methods.registry.configure)
    method_params: tuple[tuple[str, Any], ...] = ()
    eval_queries: int = 10_000
    eval_J: int = 10
    eval_sigma: float = 4.0  # headline width
    eval_sigmas: tuple[float, ...] = THESIS_SIGMAS  # widths measured per data set (headline included)
    eval_max_evals: float = 2e9  # cap on Q·J·n per measurement (fewer queries on big data)
    eval_reference_queries: int = 10  # at least this many queries for the float64 baseline ...
    eval_reference_evals: float = 2e7  # ... and enough for this many kernel evaluations
    eval_datasets: tuple[str, ...] | None = None  # None: every loaded data set
    eval_repeats: int = 2  # best of, dpkit and baseline timed alternately
    compare_parallel: bool = True
    seed: int = 0
    quick: bool = False

    def __post_init__(self) -> None:
        check_positive_int(self.reps, name="reps")
        check_positive_int(self.eval_queries, name="eval_queries")
        check_positive_int(self.eval_reference_queries, name="eval_reference_queries")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Worst running times printed in Tables 3.2 (I) and 3.3 (II), seconds (C++/CPLEX, 12 cores);
#: the one copy lives in :mod:`dpkit.experiments`.
THESIS_WORST_TIME_S: dict[str, dict[str, float]] = PAPER_WORST_TIME
#: The performance targets: a median run of mechanism I or II below this many seconds, and the
#: evaluator this many times faster than the float64 baseline.
TARGET_MECHANISM_S = 1.0
TARGET_EVALUATOR_SPEEDUP = 10.0


def load_all(names: Sequence[str], loader: Callable[[str], Any]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``(data, skipped)``: the (n, d) array of every data set that loads, the reason for every one that does not."""
    data, skipped = {}, {}
    for name in names:
        try:
            obj = loader(name)
            X = np.asarray(getattr(obj, "X", obj), dtype=float)
            if X.ndim != 2 or X.shape[0] < 1:
                raise ValueError(f"loader returned shape {X.shape}")
            data[name] = X
        except Exception as exc:  # record why, keep going (a data set that fails to load is skipped)
            msg = f"{type(exc).__name__}: {exc}"
            skipped[name] = msg if len(msg) < 600 else msg[:600] + " …"
    return data, skipped


def _mechanism(cfg: BenchConfig, mech: str, sigma: float) -> Method:
    """The benchmarked mechanism: the registry's ``trig-I``/``trig-II`` (as the experiments run it) at width σ."""
    from dpkit.methods.registry import get

    return get(f"trig-{mech}", **dict(cfg.method_params)).at_width(sigma)


def time_mechanisms(
    name: str, X: np.ndarray, cfg: BenchConfig, seed: np.random.SeedSequence, progress: bool
) -> dict[str, Any]:
    """Wall times of ``trig-I`` and ``trig-II`` on ``X`` over ``cfg.sigmas`` × ``cfg.reps`` runs (failures recorded)."""
    from tqdm.auto import tqdm

    out: dict[str, Any] = {}
    runs = [(mech, s, r) for mech in ("I", "II") for s in cfg.sigmas for r in range(cfg.reps)]
    seeds = seed.spawn(len(runs))
    records: dict[str, list[dict[str, Any]]] = {"I": [], "II": []}
    errors: dict[str, list[str]] = {"I": [], "II": []}
    for (mech, sigma, rep), ss in tqdm(list(zip(runs, seeds)), disable=not progress, desc=name):
        try:
            m = _mechanism(cfg, mech, sigma)
            t0 = time.perf_counter()
            res = m.release(X, rng=np.random.default_rng(ss))
            wall = time.perf_counter() - t0
            records[mech].append(
                {
                    "sigma": sigma,
                    "rep": rep,
                    "wall_s": wall,
                    "timings": {k: float(v) for k, v in dict(res.timings).items()},
                    "support_size": int(np.asarray(res.synthetic.weights).shape[0]),
                }
            )
        except Exception as exc:
            errors[mech].append(f"σ={sigma:g} rep={rep}: {type(exc).__name__}: {exc}")
    for mech in ("I", "II"):
        recs = records[mech]
        entry: dict[str, Any] = {
            "runs": len(recs),
            "failed_runs": len(errors[mech]),
            "errors": errors[mech][:5],
            "thesis_worst_s": THESIS_WORST_TIME_S[mech].get(name.upper(), math.nan),
        }
        if recs:
            walls = [r["wall_s"] for r in recs]
            stages = sorted({k for r in recs for k in r["timings"]})
            entry.update(
                median_s=statistics.median(walls),
                max_s=max(walls),
                min_s=min(walls),
                stages={k: statistics.median([r["timings"].get(k, 0.0) for r in recs]) for k in stages},
                by_sigma={
                    f"{s:g}": {
                        "median_s": statistics.median([r["wall_s"] for r in recs if r["sigma"] == s]),
                        "max_s": max(r["wall_s"] for r in recs if r["sigma"] == s),
                        "median_stages": {
                            k: statistics.median([r["timings"].get(k, 0.0) for r in recs if r["sigma"] == s])
                            for k in stages
                        },
                    }
                    for s in cfg.sigmas
                    if any(r["sigma"] == s for r in recs)
                },
                support_size_median=statistics.median([r["support_size"] for r in recs]),
                target_met=statistics.median(walls) < TARGET_MECHANISM_S,
            )
        else:
            entry.update(median_s=math.nan, max_s=math.nan, stages={}, target_met=False)
        out[mech] = entry
    return out


def _time_evaluator(
    X: np.ndarray, cfg: BenchConfig, seed: np.random.SeedSequence, compare_parallel: bool
) -> dict[str, Any]:
    """Evaluator vs baseline at every ``cfg.eval_sigmas`` (and the headline ``cfg.eval_sigma``)."""
    from dpkit.queries.evaluate import answer_data, kernel_evals_per_second

    n, d = X.shape
    Q = int(max(1, min(cfg.eval_queries, cfg.eval_max_evals // (cfg.eval_J * n))))
    q_ref = int(min(Q, max(cfg.eval_reference_queries, math.ceil(cfg.eval_reference_evals / (cfg.eval_J * n)))))
    sigmas = list(dict.fromkeys([float(cfg.eval_sigma), *map(float, cfg.eval_sigmas)]))
    by_sigma: dict[str, Any] = {}
    seeds = seed.spawn(len(sigmas))
    for sigma, ss in zip(sigmas, seeds):
        wl = GaussianKernelWorkload.generate(Q, d, J=cfg.eval_J, sigma=sigma, rng=np.random.default_rng(ss))
        by_sigma[f"{sigma:g}"] = kernel_evals_per_second(wl, X, n_reference_queries=q_ref, repeats=cfg.eval_repeats)
    res = dict(by_sigma[f"{float(cfg.eval_sigma):g}"])
    res["by_sigma"] = by_sigma
    res["min_speedup"] = min(v["speedup"] for v in by_sigma.values())
    if compare_parallel:
        # the headline workload again with each parallel strategy (≤ 200 queries: "blas" is slow)
        wl = GaussianKernelWorkload.generate(
            min(Q, 200), d, J=cfg.eval_J, sigma=cfg.eval_sigma, rng=np.random.default_rng(seeds[0])
        )
        cmp: dict[str, Any] = {"queries": wl.n_queries}
        for label, kw in (
            ("threads", dict(parallel="threads")),
            ("single_thread", dict(parallel="threads", n_threads=1)),
            ("blas_threads", dict(parallel="blas")),
        ):
            t0 = time.perf_counter()
            answer_data(wl, X, **kw)
            dt = time.perf_counter() - t0
            cmp[label] = {"seconds": dt, "kernel_evals_per_s": wl.n_queries * wl.J * n / dt}
        res["parallel_comparison"] = cmp
    return res


def time_evaluators(
    cfg: BenchConfig, data: dict[str, np.ndarray], eval_seeds: Sequence[np.random.SeedSequence], datasets: dict[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """The evaluator on the requested data sets that loaded (default all); headline = most rows.

    Each measurement is also stored under ``datasets[name]["evaluator"]``; returns ``(evaluator, headline)``.
    """
    eval_names = [n for n in (cfg.eval_datasets or cfg.datasets) if n in data]
    if not eval_names and data:
        eval_names = [max(data, key=lambda n: data[n].shape[0])]
    evaluator: dict[str, Any] = {}
    headline = max(eval_names, key=lambda n: data[n].shape[0]) if eval_names else None
    for name in eval_names:
        idx = list(cfg.datasets).index(name)
        try:
            evaluator[name] = _time_evaluator(
                data[name], cfg, eval_seeds[idx], cfg.compare_parallel and name == headline
            )
        except Exception as exc:  # pragma: no cover - reported, not hidden
            evaluator[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        if name in datasets:
            datasets[name]["evaluator"] = evaluator[name]
    return evaluator, headline
