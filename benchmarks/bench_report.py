"""The ``bench.md`` table and the ``bench.json`` file of :mod:`benchmarks.bench`.

:func:`render_markdown` renders a :func:`benchmarks.bench.run_benchmark` result (medians and
worst times next to the thesis's worst times, the evaluator's speed-up, the targets recorded in
``result["targets"]``); :func:`write_outputs` writes both files. Both are re-exported by
:mod:`benchmarks.bench`.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["render_markdown", "write_outputs"]


def _fmt(x: Any, nd: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def _load(avg: Any) -> str:
    return "–" if not avg else "/".join(f"{float(a):.1f}" for a in avg)


_MECH_COLUMNS = ["data", "n", "d", "mech", "runs", "median (s)", "max (s)", "thesis worst (s)", "median stages (s)", "target"]
_EVAL_COLUMNS = ["data", "n (unique)", "d", "σ", "Q", "precision", "error bound", "dpkit evals/s", "baseline evals/s",
                 "speed-up"]


def render_markdown(result: dict[str, Any]) -> str:
    """The ``bench.md`` table: medians and worst times next to the thesis's worst times."""
    t = result["targets"]
    lines = _header(result)
    lines += _table_head(
        "Improved trigonometric mechanisms I (Alg 9) and II (Alg 10): wall time per run",
        f"Target: median < {t['mechanism_median_s']:g} s per run. The thesis's column is its *worst* time "
        "(Tables 3.2/3.3, C++/CPLEX on 12 cores); compare it with our max.",
        _MECH_COLUMNS,
    )
    lines += _mechanism_rows(result)
    lines += _table_head(
        "Evaluator (dpkit.queries.evaluate) vs the float64 numpy baseline (same run)",
        f"Target: ≥ {t['evaluator_speedup']:g}×. Logical kernel evaluations Q·J·n per second; the baseline "
        "(`answer_reference`) is timed on the first queries of the same workload.",
        _EVAL_COLUMNS,
    )
    lines += _evaluator_rows(result)
    lines += [
        "",
        "## Targets",
        "",
        f"- mechanisms < {t['mechanism_median_s']:g} s median: {'met' if t['mechanisms_met'] else 'MISSED'}"
        + (f" (missed: {', '.join(t['mechanisms_missed'])})" if t["mechanisms_missed"] else ""),
        f"- evaluator ≥ {t['evaluator_speedup']:g}× (headline): {'met' if t['evaluator_met'] else 'MISSED'}; "
        f"on every measured data set and σ: {'met' if t['evaluator_met_on_every_dataset'] else 'MISSED'} "
        f"(min {_fmt(result.get('evaluator_min_speedup'), 1)}×)",
        "",
    ]
    return "\n".join(lines)


def _header(result: dict[str, Any]) -> list[str]:
    """Title and the run's setting (the benchmarked trig-II's parameters, σ grid, load)."""
    from dpkit.methods.registry import get

    cfg = result.get("config", {})
    meta = result["meta"]
    m = get("trig-II", **dict(cfg.get("method_params", ())))
    return [
        "# dpkit benchmark",
        "",
        f"Created {meta['created']} · {'quick subset' if cfg.get('quick') else 'full'} · "
        f"ε = {m.epsilon}, δ = {m.delta} (II), C = {m.C}, R = {m.R}, "
        f"k = {m.k}, L = {m.n_iter}, κ = {m.kappa}, σ ∈ {list(cfg.get('sigmas', []))} (K = σ²), "
        f"{cfg.get('reps')} run(s) per σ · load average (1/5/15 min) before {_load(meta.get('loadavg_before'))}, "
        f"after {_load(meta.get('loadavg_after'))} on {meta.get('cpus')} CPUs.",
    ]


def _table_head(title: str, intro: str, columns: list[str]) -> list[str]:
    """A section title, its one-paragraph intro and the header of its markdown table."""
    return ["", f"## {title}", "", intro, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def _mechanism_rows(result: dict[str, Any]) -> list[str]:
    """Wall times of mechanisms I and II per data set, then the data sets that failed to load."""
    lines = []
    for name, e in result["datasets"].items():
        for mech in ("I", "II"):
            m = e[mech]
            stages = ", ".join(f"{k} {v:.3f}" for k, v in m.get("stages", {}).items() if k != "total")
            ok = "met" if m.get("target_met") else "**missed**"
            lines.append(
                f"| {name} | {e['n']} | {e['d']} | {mech} | {m['runs']} | {_fmt(m.get('median_s'))} | "
                f"{_fmt(m.get('max_s'))} | {_fmt(m.get('thesis_worst_s'), 1)} | {stages} | {ok} |"
            )
    if result["skipped"]:
        lines += ["", "Skipped data sets (failed to load):", ""]
        lines += [f"- **{k}**: {v.splitlines()[0] if v else v}" for k, v in result["skipped"].items()]
    return lines


def _evaluator_rows(result: dict[str, Any]) -> list[str]:
    """The evaluator against the float64 baseline per data set and σ, the headline and the parallel strategies."""
    lines = []
    for name, r in result["evaluator"].items():
        if "error" in r:
            lines.append(f"| {name} | – | – | – | – | – | – | – | – | error: {r['error']} |")
            continue
        for e in r.get("by_sigma", {"": r}).values():
            lines.append(
                f"| {name} | {e['n']} ({e['n_unique']}) | {e['d']} | {e['sigma']:g} | {e['n_queries']} "
                f"(ref {e['reference_queries']}) | {e['dtype']} | {e['error_bound']:.1e} | "
                f"{e['kernel_evals_per_s']:.3g} | {e['reference_kernel_evals_per_s']:.3g} | {e['speedup']:.1f}× |"
            )
    lines += [
        "",
        f"Headline ({result.get('evaluator_headline_dataset')}): speed-up {_fmt(result.get('evaluator_speedup'), 1)}×, "
        f"{result.get('evaluator_kernel_evals_per_s', float('nan')):.3g} kernel evaluations/s.",
    ]
    for r in result["evaluator"].values():
        cmp = r.get("parallel_comparison") if isinstance(r, dict) else None
        if cmp:
            lines += [
                "",
                f"Parallel strategy ({cmp['queries']} queries): "
                + ", ".join(f"{k} {v['kernel_evals_per_s']:.3g} evals/s" for k, v in cmp.items() if isinstance(v, dict)),
            ]
    return lines


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def write_outputs(result: dict[str, Any], out: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``<out>/bench.json`` (NaN → null) and ``<out>/bench.md``; return both paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pj, pm = out / "bench.json", out / "bench.md"
    pj.write_text(json.dumps(_jsonable(result), indent=2, allow_nan=False) + "\n")
    pm.write_text(render_markdown(result))
    return pj, pm


