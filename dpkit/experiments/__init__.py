"""Chapter 3 experiments: worst-case error tables (Tables 3.2/3.3) and the κ and k sweeps.

The notebooks ``20_tables``, ``21_kappa_sweep`` and ``22_k_sweep`` (batch path) and their
widgets (interactive path) call the same functions here.

Protocol (thesis Sec 3.1): ε = 1, δ = 10⁻³, σ ∈ {2, 4, 6, 8, 10} with smoothness K = σ²,
C = 10⁴ candidate points; every repetition draws a fresh workload of 10⁴ Gaussian-kernel
mixture queries (2.1) with J = 10 and records the worst absolute error
``max_f |q_f(D̂) − q_f(D)|`` and the worst relative error ``max_f |q_f(D̂) − q_f(D)| / q_f(D)``;
the table reports the mean of the worst errors over the repetitions and the worst running
time. Repetition ``i`` uses child stream ``i`` of one :class:`~numpy.random.SeedSequence`;
within a repetition the workload and the mechanisms get independent grandchildren, and
mechanisms I and II see the *same* workload (a paired comparison).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from dpkit.core.rng import RNGLike, spawn_seeds
from dpkit.core.validation import check_choice, check_positive_int, check_real_in_range

__all__ = [
    "PAPER_TABLE_3_2",
    "PAPER_TABLE_3_3",
    "PAPER_WORST_TIME",
    "paper_value",
    "MechanismConfig",
    "iterate_workloads",
    "cell_seed",
    "worst_errors",
    "run_repetitions",
    "summarise",
    "table_rows",
]

SIGMAS = (2.0, 4.0, 6.0, 8.0, 10.0)

# Thesis Table 3.2 (improved mechanism I, ε-DP) and Table 3.3 (II, (ε,δ)-DP):
# mean worst absolute / relative error over 30 runs, per σ ∈ {2,4,6,8,10}.
PAPER_TABLE_3_2: dict[str, dict[str, tuple[float, ...]]] = {
    "CRM": {"abs": (0.002, 0.010, 0.070, 0.074, 0.041), "rel": (1.796, 0.085, 0.166, 0.122, 0.056)},
    "CSN": {"abs": (0.053, 0.011, 0.011, 0.009, 0.003), "rel": (0.174, 0.015, 0.013, 0.010, 0.003)},
    "CTG": {"abs": (0.053, 0.199, 0.031, 0.054, 0.056), "rel": (0.488, 0.360, 0.041, 0.062, 0.061)},
    "PAM": {"abs": (0.239, 0.278, 0.175, 0.107, 0.065), "rel": (0.848, 0.390, 0.205, 0.117, 0.069)},
    "PKS": {"abs": (0.075, 0.030, 0.049, 0.023, 0.015), "rel": (0.326, 0.044, 0.058, 0.026, 0.016)},
    "WDBC": {"abs": (0.049, 0.167, 0.154, 0.041, 0.024), "rel": (0.355, 0.280, 0.194, 0.047, 0.026)},
}
PAPER_TABLE_3_3: dict[str, dict[str, tuple[float, ...]]] = {
    "CRM": {"abs": (0.000, 0.070, 0.059, 0.111, 0.097), "rel": (0.616, 0.481, 0.141, 0.184, 0.134)},
    "CSN": {"abs": (0.039, 0.026, 0.008, 0.008, 0.003), "rel": (0.095, 0.035, 0.009, 0.008, 0.003)},
    "CTG": {"abs": (0.036, 0.130, 0.062, 0.064, 0.033), "rel": (0.342, 0.234, 0.082, 0.075, 0.036)},
    "PAM": {"abs": (0.190, 0.205, 0.164, 0.089, 0.071), "rel": (0.693, 0.296, 0.194, 0.098, 0.075)},
    "PKS": {"abs": (0.115, 0.033, 0.060, 0.025, 0.023), "rel": (0.440, 0.049, 0.071, 0.028, 0.024)},
    "WDBC": {"abs": (0.063, 0.213, 0.089, 0.069, 0.042), "rel": (0.452, 0.360, 0.113, 0.079, 0.046)},
}
PAPER_WORST_TIME: dict[str, dict[str, float]] = {
    "I": {"CRM": 2.5, "CSN": 1.7, "CTG": 0.7, "PAM": 0.9, "PKS": 0.7, "WDBC": 0.7},
    "II": {"CRM": 6.5, "CSN": 7.2, "CTG": 10.5, "PAM": 12.8, "PKS": 5.4, "WDBC": 10.7},
}


def paper_value(dataset: str, sigma: float, mechanism: str, kind: str) -> float:
    """The thesis's printed number for (data set, σ, mechanism I/II, "abs"/"rel"), NaN if none."""
    table = PAPER_TABLE_3_2 if mechanism == "I" else PAPER_TABLE_3_3
    try:
        return float(table[dataset.upper()][kind][SIGMAS.index(float(sigma))])
    except (KeyError, ValueError):
        return math.nan


@dataclass(frozen=True, kw_only=True)
class MechanismConfig:
    """Parameters of the improved trigonometric mechanism in an experiment.

    The thesis does not state R, k, L (PSI iterations) or κ for Tables 3.2/3.3; the
    defaults here are the values of its own sweeps (R = 50, k = 2, L = 10, κ = 7).
    """

    mechanism: str = "I"  # "I" (ε-DP, Alg 9) or "II" ((ε,δ)-DP, Alg 10)
    epsilon: float = 1.0
    delta: float = 1e-3  # used by mechanism II only
    C: int = 10_000
    R: int = 50
    k: int = 2
    n_iter: int = 10
    kappa: float = 7.0
    constants: str = "correct"

    def __post_init__(self) -> None:
        check_choice(self.mechanism, name="mechanism", choices=("I", "II"))
        check_choice(self.constants, name="constants", choices=("correct", "thesis"))

    def build(self, K: float):
        """The configured :class:`~dpkit.mechanisms.trig.ImprovedTrigonometricMechanism` for smoothness ``K``."""
        from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism

        return ImprovedTrigonometricMechanism(
            epsilon=self.epsilon,
            delta=0.0 if self.mechanism == "I" else self.delta,
            K=float(K),
            C=self.C,
            R=self.R,
            k=self.k,
            n_iter=self.n_iter,
            kappa=self.kappa,
            constants=self.constants,
        )

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def iterate_workloads(
    X: np.ndarray,
    *,
    sigma: float,
    n_streams: int,
    reps: int,
    n_queries: int = 10_000,
    J: int = 10,
    rng: RNGLike = 0,
    progress: bool = False,
    answer_kwargs: dict[str, Any] | None = None,
    answer_fn: Any = None,
) -> Iterator[tuple[int, Any, np.ndarray, float, list[np.random.Generator]]]:
    """The repetition skeleton of the Chapter 3 protocol, shared by every experiment loop.

    For repetition ``i`` (child ``i`` of one SeedSequence made from ``rng``) yields
    ``(i, workload, truth, truth_seconds, generators)``: a fresh workload of ``n_queries``
    kernel mixtures of width σ, its exact answers on ``X`` (computed once, shared by all
    methods), and ``n_streams`` independent generators, one per method, so that method
    ``j`` of repetition ``i`` sees the same stream whatever the other methods are.
    """
    from tqdm.auto import tqdm

    from dpkit.queries.evaluate import answer_data
    from dpkit.queries.workload import GaussianKernelWorkload

    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    reps = check_positive_int(reps, name="reps")
    X = np.asarray(X, dtype=float)
    for i, seed in enumerate(tqdm(spawn_seeds(rng, reps), disable=not progress, desc=f"σ={sigma:g}")):
        w_seed, *m_seeds = seed.spawn(1 + int(n_streams))
        wl = GaussianKernelWorkload.generate(n_queries, X.shape[1], J=J, sigma=sigma, rng=np.random.default_rng(w_seed))
        t0 = time.perf_counter()
        truth = answer_fn(wl, X) if answer_fn is not None else answer_data(wl, X, **(answer_kwargs or {}))
        yield i, wl, truth, time.perf_counter() - t0, [np.random.default_rng(ms) for ms in m_seeds]


def cell_seed(seed: int, dataset: str, sigma: float) -> np.random.SeedSequence:
    """The SeedSequence of one table cell, from the run seed and the cell's *values*.

    Because it does not depend on where the cell sits in a list of data sets or σ's, a table
    computed in one run and the same table split over many batch runs give identical numbers.
    """
    import zlib

    return np.random.SeedSequence([int(seed), zlib.crc32(str(dataset).upper().encode()), int(round(float(sigma) * 1000))])


def worst_errors(estimate: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(worst absolute error, worst relative error ``|q̂ − q|/q``) over a workload (thesis Sec 3.1)."""
    err = np.abs(np.asarray(estimate) - np.asarray(truth))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = err / np.abs(truth)
    return float(err.max()), float(np.nanmax(rel))


def run_repetitions(
    X: np.ndarray,
    *,
    sigma: float,
    configs: Sequence[MechanismConfig],
    reps: int,
    n_queries: int = 10_000,
    J: int = 10,
    rng: RNGLike = 0,
    progress: bool = False,
    answer_kwargs: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Run ``reps`` repetitions of every mechanism config at width σ (K = σ²) on data ``X``.

    Returns one record per (repetition, config): ``{rep, mechanism, constants, sigma, abs, rel,
    time_s, timings, support_size, lp_status, params, ledger}``. The true answers of each
    repetition's workload are computed once and shared by all configs.
    """
    from dpkit.queries.evaluate import answer_synthetic

    records: list[dict[str, Any]] = []
    for i, wl, truth, _, gens in iterate_workloads(X, sigma=sigma, n_streams=len(configs), reps=reps,
                                                    n_queries=n_queries, J=J, rng=rng, progress=progress,
                                                    answer_kwargs=answer_kwargs):
        for cfg, g in zip(configs, gens):
            mech = cfg.build(K=sigma**2)
            t0 = time.perf_counter()
            res = mech.fit(X, rng=g)
            t_fit = time.perf_counter() - t0
            est = answer_synthetic(wl, res.synthetic.points, res.synthetic.weights, **(answer_kwargs or {}))
            abs_err, rel_err = worst_errors(est, truth)
            records.append(
                {
                    "rep": i,
                    "mechanism": cfg.mechanism,
                    "constants": cfg.constants,
                    "sigma": float(sigma),
                    "abs": abs_err,
                    "rel": rel_err,
                    "time_s": t_fit,
                    "timings": dict(res.timings),
                    "support_size": int(res.lp.get("support_size", len(res.synthetic.weights))),
                    "lp_status": res.lp.get("status"),
                    "params": dict(res.params),
                    "ledger": res.ledger,
                }
            )
    return records


def summarise(records: Iterable[dict[str, Any]], *, dataset: str) -> list[dict[str, Any]]:
    """Aggregate repetition records to table rows (mean ± std, min, max of the worst errors).

    Rows carry the contract keys ``dataset, sigma, mechanism, abs_mean, rel_mean,
    time_max_s, paper_abs, paper_rel`` plus spreads, ratios and the stage split of the
    slowest run.
    """
    import pandas as pd

    df = pd.DataFrame(list(records))
    rows: list[dict[str, Any]] = []
    if df.empty:
        return rows
    if "constants" not in df:
        df["constants"] = "correct"
    for (mech, constants, sigma), g in df.groupby(["mechanism", "constants", "sigma"], sort=True):
        slowest = g.loc[g["time_s"].idxmax()]
        pa, pr = paper_value(dataset, sigma, mech, "abs"), paper_value(dataset, sigma, mech, "rel")
        am, rm = float(g["abs"].mean()), float(g["rel"].mean())
        rows.append(
            {
                "dataset": dataset,
                "sigma": float(sigma),
                "mechanism": mech,
                "constants": constants,
                "abs_mean": am,
                "abs_std": float(g["abs"].std(ddof=1)) if len(g) > 1 else 0.0,
                "abs_min": float(g["abs"].min()),
                "abs_max": float(g["abs"].max()),
                "rel_mean": rm,
                "rel_std": float(g["rel"].std(ddof=1)) if len(g) > 1 else 0.0,
                "time_max_s": float(g["time_s"].max()),
                "time_median_s": float(g["time_s"].median()),
                "stages_of_slowest": {k: float(v) for k, v in dict(slowest["timings"]).items()},
                "support_size_median": float(g["support_size"].median()),
                "reps": int(len(g)),
                "paper_abs": pa,
                "paper_rel": pr,
                "ratio_abs": am / pa if pa and not math.isnan(pa) else math.nan,
                "ratio_rel": rm / pr if pr and not math.isnan(pr) else math.nan,
                "paper_time_s": PAPER_WORST_TIME.get(mech, {}).get(dataset.upper(), math.nan),
            }
        )
    return rows


def table_rows(*args: Any, dataset: str, **kwargs: Any) -> list[dict[str, Any]]:
    """``summarise(run_repetitions(...))`` in one call."""
    return summarise(run_repetitions(*args, **kwargs), dataset=dataset)


# --------------------------------------------------------------------------- sweeps (Figs 3.1 and 3.2)
def sweep(
    X: np.ndarray,
    *,
    param: str,
    values: Sequence[Any],
    base: MechanismConfig,
    sigma: float,
    reps: int,
    n_queries: int = 10_000,
    J: int = 10,
    rng: RNGLike = 0,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Worst-case errors of ``base`` with ``param`` set to each of ``values`` (thesis Sec 3.2).

    Each value gets the same repetition seeds (common random numbers: the same workloads),
    so differences between values are not workload noise. Records carry ``param`` and ``value``.
    """
    from dataclasses import replace

    if param not in MechanismConfig.__dataclass_fields__:
        raise ValueError(f"param must be a MechanismConfig field {tuple(MechanismConfig.__dataclass_fields__)}; got {param!r}")
    if len(values) == 0:
        raise ValueError("values must be non-empty")
    seed_root = spawn_seeds(rng, 1)[0]
    out: list[dict[str, Any]] = []
    from tqdm.auto import tqdm

    for v in tqdm(list(values), disable=not progress, desc=f"{param} sweep"):
        cfg = replace(base, **{param: v})
        recs = run_repetitions(X, sigma=sigma, configs=[cfg], reps=reps, n_queries=n_queries, J=J, rng=seed_root)
        for r in recs:
            r.update(param=param, value=v)
        out.extend(recs)
    return out


def sweep_rows(records: Iterable[dict[str, Any]], *, dataset: str) -> list[dict[str, Any]]:
    """Mean, std, min and max of the worst errors per swept value."""
    import pandas as pd

    df = pd.DataFrame(list(records))
    rows = []
    for (param, value), g in df.groupby(["param", "value"], sort=True):
        rows.append({
            "dataset": dataset, "param": param, "value": value, "mechanism": g["mechanism"].iloc[0],
            "sigma": float(g["sigma"].iloc[0]), "abs_mean": float(g["abs"].mean()),
            "abs_std": float(g["abs"].std(ddof=1)) if len(g) > 1 else 0.0,
            "abs_min": float(g["abs"].min()), "abs_max": float(g["abs"].max()),
            "rel_mean": float(g["rel"].mean()), "time_median_s": float(g["time_s"].median()), "reps": int(len(g)),
        })
    return rows


# --------------------------------------------------------------------------- tables and figures
def rows_frame(rows: Iterable[dict[str, Any]]):
    """Rows as a DataFrame with nested dicts dropped (for display and export)."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    return df[[c for c in df.columns if not df[c].map(lambda v: isinstance(v, dict)).any()]] if not df.empty else df


def paper_comparison_table(rows: Iterable[dict[str, Any]]):
    """Tables 3.2/3.3 layout: one line per (mechanism, data set, abs|rel), σ as columns,
    each cell ``ours ± std (paper)``; plus the worst time next to the paper's."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    lines = []
    if df.empty:
        return pd.DataFrame(columns=["mechanism", "constants", "dataset", "error"])
    if "constants" not in df:
        df["constants"] = "correct"
    for (mech, constants, ds), g in df.groupby(["mechanism", "constants", "dataset"], sort=True):
        for kind in ("abs", "rel"):
            line = {"mechanism": mech, "constants": constants, "dataset": ds, "error": kind}
            for _, r in g.sort_values("sigma").iterrows():
                line[f"σ={r['sigma']:g}"] = f"{r[f'{kind}_mean']:.3f} ± {r[f'{kind}_std']:.3f} ({r[f'paper_{kind}']:.3f})"
            if kind == "abs":
                line["worst time (s)"] = f"{g['time_max_s'].max():.2f} ({g['paper_time_s'].iloc[0]:.1f})"
            else:
                line["worst time (s)"] = ""
            lines.append(line)
    return pd.DataFrame(lines)


def export_table(df, name: str, output_dir) -> list:
    """Write a DataFrame as CSV, markdown and LaTeX (``name.csv|md|tex``) into ``output_dir``."""
    from pathlib import Path

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.csv", out / f"{name}.md", out / f"{name}.tex"]
    df.to_csv(paths[0], index=False)
    paths[1].write_text(df.to_markdown(index=False) if _has_tabulate() else df.to_string(index=False))
    paths[2].write_text(df.to_latex(index=False, escape=True))
    return paths


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401

        return True
    except ImportError:
        return False


def plot_errors_vs_sigma(rows: Iterable[dict[str, Any]], *, kind: str = "abs", title: str = ""):
    """Mean worst error vs σ, one panel per data set: ours (±std) next to the thesis's numbers.

    Colour = mechanism (I, II); solid = dpkit with correct constants, dotted = printed constants,
    dashed with crosses = the thesis's Table 3.2/3.3. Log scale (printed zeros are not drawn).
    """
    import pandas as pd

    from dpkit.outputs.plotting import PALETTE, new_figure

    df = pd.DataFrame(list(rows))
    if df.empty:
        fig, ax = new_figure(width="double", aspect=0.42)
        ax.text(0.5, 0.5, "no data set available", ha="center", va="center", transform=ax.transAxes)
        return fig
    if "constants" not in df:
        df["constants"] = "correct"
    datasets = sorted(df["dataset"].unique())
    ncols = min(3, len(datasets))
    nrows = -(-len(datasets) // ncols)
    fig, axes = new_figure(nrows, ncols, width="double", aspect=0.3 * nrows if nrows > 1 else 0.36,
                           sharex=True, squeeze=False)
    colours = {"I": PALETTE[0], "II": PALETTE[1]}
    for ax, ds in zip(axes.flat, datasets):
        for (mech, constants), g in df[df.dataset == ds].groupby(["mechanism", "constants"], sort=True):
            g = g.sort_values("sigma")
            c = colours.get(mech, PALETTE[2])
            ax.errorbar(g["sigma"], g[f"{kind}_mean"], yerr=g[f"{kind}_std"], marker="o", ms=3, capsize=2, color=c,
                        ls="-" if constants == "correct" else ":", alpha=1.0 if constants == "correct" else 0.8,
                        label=f"{mech} dpkit" + ("" if constants == "correct" else " (printed constants)"))
            if constants == "correct":
                paper = g[g[f"paper_{kind}"] > 0]
                ax.plot(paper["sigma"], paper[f"paper_{kind}"], ls="--", marker="x", color=c, alpha=0.6,
                        label=f"{mech} thesis")
        ax.set_yscale("log")
        ax.set_title(ds)
    for ax in axes.flat[len(datasets):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("σ (K = σ²)")
    for ax in axes[:, 0]:
        ax.set_ylabel(f"worst {'abs.' if kind == 'abs' else 'rel.'} error")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(6, len(labels)), fontsize=6)
    if title:
        fig.suptitle(title)
    return fig


def plot_sweep(rows: Iterable[dict[str, Any]], *, xlabel: str, title: str = "", logx: bool = False):
    """Mean worst absolute error (± std, min–max band) vs the swept parameter."""
    import pandas as pd

    from dpkit.outputs.plotting import new_figure

    df = pd.DataFrame(list(rows)).sort_values("value")
    fig, ax = new_figure()
    ax.fill_between(df["value"], df["abs_min"], df["abs_max"], alpha=0.15, label="min–max over reps")
    ax.errorbar(df["value"], df["abs_mean"], yerr=df["abs_std"], marker="o", capsize=2, label="mean ± std")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("worst absolute error")
    if logx:
        ax.set_xscale("log")
    ax.legend()
    if title:
        ax.set_title(title)
    return fig


def explore(
    *,
    X: np.ndarray,
    dataset: str,
    epsilon: float,
    delta: float,
    sigma: float,
    kappa: float,
    k: int,
    C: int,
    R: int,
    reps: int,
    mechanisms: Sequence[str] = ("I", "II"),
    n_queries: int = 2_000,
    seed: int = 0,
):
    """The widgets' fast path: a few repetitions of the same functions as the batch path.

    Returns ``(figure, DataFrame)``: worst absolute error per repetition and mechanism, and
    the summary rows.
    """
    from dpkit.outputs.plotting import new_figure

    d = X.shape[1]
    configs = [MechanismConfig(mechanism=m, epsilon=epsilon, delta=delta, kappa=kappa, k=min(int(k), d), C=int(C),
                               R=int(R)) for m in mechanisms]
    recs = run_repetitions(X, sigma=sigma, configs=configs, reps=int(reps), n_queries=int(n_queries), rng=int(seed))
    rows = summarise(recs, dataset=dataset)
    fig, ax = new_figure()
    for m in mechanisms:
        vals = [r["abs"] for r in recs if r["mechanism"] == m]
        ax.plot(range(len(vals)), vals, marker="o", label=f"mechanism {m}")
        p = paper_value(dataset, sigma, m, "abs")
        if not math.isnan(p):
            ax.axhline(p, ls="--", lw=1, color=ax.lines[-1].get_color(), alpha=0.7, label=f"thesis {m}")
    ax.set_xlabel("repetition")
    ax.set_ylabel("worst absolute error")
    ax.set_title(f"{dataset}: ε={epsilon:g}, σ={sigma:g}, κ={kappa:g}, k={k}, C={C}, R={R}")
    ax.legend()
    return fig, rows_frame(rows)


# --------------------------------------------------------------------------- assembling batch runs
def rows_from_runs(output: str, *, notebook: str = "20_tables") -> list[dict[str, Any]]:
    """Table rows of every finished ``notebook`` run under a batch output folder.

    Rows of the same (data set, σ, mechanism, constants) from several runs are an error (two runs
    computed the same cell): nothing is silently overwritten.
    """
    import json
    from pathlib import Path

    rows, seen = [], {}
    for rj in sorted(Path(output).glob(f"{notebook}/*/run.json")):
        info = json.loads(rj.read_text())
        mj = rj.parent / "metrics.json"
        if info.get("status") != "ok" or not mj.is_file():
            continue
        for r in json.loads(mj.read_text()).get("table", []):
            key = (r["dataset"], r["sigma"], r["mechanism"], r.get("constants", "correct"))
            if key in seen:
                raise ValueError(f"cell {key} computed by two runs: {seen[key]} and {rj.parent.name}")
            seen[key] = rj.parent.name
            rows.append(r)
    return rows


def assemble_tables(output: str, *, out: str | None = None, paper_figures: bool = False) -> dict[str, Any]:
    """Tables 3.2/3.3 (ours ± std next to the thesis), figures and worst times from a batch output.

    Writes ``tables_3_2_3_3.{csv,md,tex}``, ``tables_rows.csv`` and ``tables_{abs,rel}_vs_sigma.{pdf,png}``
    into ``out`` (default ``<output>/assembled``) and, with ``paper_figures``, the figures into ``figures/``.
    """
    from pathlib import Path

    from dpkit.outputs.plotting import export_figure

    rows = rows_from_runs(output)
    if not rows:
        raise FileNotFoundError(f"no finished 20_tables runs with rows under {output}")
    dest = Path(out) if out else Path(output) / "assembled"
    comparison = paper_comparison_table(rows)
    export_table(comparison, "tables_3_2_3_3", dest)
    export_table(rows_frame(rows), "tables_rows", dest)
    for kind in ("abs", "rel"):
        fig = plot_errors_vs_sigma(rows, kind=kind, title=f"worst {kind} error vs σ (dpkit solid, thesis dashed)")
        export_figure(fig, f"tables_{kind}_vs_sigma", dest, notebook="20_tables", paper=paper_figures)
    df = rows_frame(rows)
    worst = df.groupby(["dataset", "mechanism", "constants"])["time_max_s"].max().reset_index()
    export_table(worst, "worst_times", dest)
    return {"rows": len(rows), "out": str(dest), "datasets": sorted({r["dataset"] for r in rows})}


def main(argv: list[str] | None = None) -> int:
    """``python -m dpkit.experiments tables OUTPUT [--out DIR] [--paper-figures]``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m dpkit.experiments")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tables", help="assemble Tables 3.2/3.3 from the 20_tables runs of a batch output")
    t.add_argument("output")
    t.add_argument("--out", default=None)
    t.add_argument("--paper-figures", action="store_true", help="also export the figures into figures/")
    args = ap.parse_args(argv)
    info = assemble_tables(args.output, out=args.out, paper_figures=args.paper_figures)
    print(f"assembled {info['rows']} rows ({', '.join(info['datasets'])}) into {info['out']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
