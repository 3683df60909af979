"""dpkit — a notebook-centred experiment workbench for differential privacy.

Core reference: J. Huang, *An Efficient Private Mechanism for Smooth Queries with Synthetic Database
Output*, master's thesis, Peking University, 2014 (the "thesis"); ``CITATION.cff`` cites the other works.

``import dpkit as dp`` is the public API (:data:`_API`, every name and its defining module; docs/api/facade.md).
Importing ``dpkit`` loads only the ledger, the exceptions and the random streams; every other name is imported on
first use (PEP 562).

>>> import dpkit as dp
>>> dp.get("trig-I").privacy
'ε-DP'
"""
from __future__ import annotations

import pkgutil
from typing import Any

__version__ = "0.1.0"

from dpkit.core.accounting import Ledger, Spend, ledger_for
from dpkit.core.exceptions import (
    BudgetExceededError,
    DPKitError,
    FeasibilityError,
    PrivacyLeakWarning,
    QuickReplacementWarning,
)
from dpkit.core.rng import resolve_rng, spawn, spawn_seeds

#: The layers, bottom to top; each imports only from the ones before it.
_LAYERS = ("core", "data", "queries", "mechanisms", "methods", "evaluation", "experiments", "board", "claims", "outputs",
           "batch")

#: The façade: every public name of ``import dpkit as dp`` and where it is defined, as
#: :func:`pkgutil.resolve_name` reads it (``"module:name"`` for an object, ``"module"`` for a module, a topic's
#: checks). Imported on first use. One entry per name; a name moves, its entry moves with it.
_API: dict[str, str] = {
    # --- the data -------------------------------------------------------------------------------------------------
    "Dataset": "dpkit.data.dataset:Dataset",
    "load": "dpkit.data.api:load",
    "load_available": "dpkit.data.api:load_available",
    "list_datasets": "dpkit.data.api:list_datasets",
    "dataset_info": "dpkit.data.api:dataset_info",
    "quick_datasets": "dpkit.data.spec:quick_datasets",
    "read_spec": "dpkit.data.spec:read_spec",
    "from_dataframe": "dpkit.data.spec:from_dataframe",
    "register_dataset": "dpkit.data.spec:register_dataset",
    "table_3_1": "dpkit.data.status:table_3_1",
    "shared_raw_dir": "dpkit.data.files:shared_raw_dir",
    # --- the queries and the method protocol ------------------------------------------------------------------
    "GaussianKernelWorkload": "dpkit.queries.workload:GaussianKernelWorkload",
    "answer_data": "dpkit.queries.evaluate:answer_data",
    "answer_synthetic": "dpkit.queries.evaluate:answer_synthetic",
    "WeightedDatabase": "dpkit.queries.synthetic:WeightedDatabase",
    "Release": "dpkit.queries.release:Release",
    "MethodBase": "dpkit.queries.release:MethodBase",
    "smoothness_norm": "dpkit.queries.smoothness:smoothness_norm",
    "prop22_bound": "dpkit.queries.smoothness:prop22_bound",
    "quick_values": "dpkit.core.quick:quick_values",
    # --- mechanisms the notebooks show ------------------------------------------------------------------------
    "Laplace": "dpkit.mechanisms.laplace:Laplace",
    "Gaussian": "dpkit.mechanisms.gaussian:Gaussian",
    "analytic_gaussian_sigma": "dpkit.mechanisms.gaussian:analytic_gaussian_sigma",
    "AboveThreshold": "dpkit.mechanisms.sparse_vector:AboveThreshold",
    "LevelSetDensity": "dpkit.mechanisms.linear:LevelSetDensity",
    "PrivateSubspaceIteration": "dpkit.mechanisms.pca:PrivateSubspaceIteration",
    "covariance": "dpkit.mechanisms.pca:covariance",
    "sample_ellipsoid": "dpkit.mechanisms.ellipsoid:sample_ellipsoid",
    "TrigonometricMechanism": "dpkit.mechanisms.trig:TrigonometricMechanism",
    "moment_noise": "dpkit.mechanisms.trig:moment_noise",
    "generate_restaurant": "dpkit.mechanisms.consistency:generate_restaurant",
    "privatize_restaurant": "dpkit.mechanisms.consistency:privatize_restaurant",
    "advanced_composition": "dpkit.core.composition:advanced_composition",
    "optimal_composition": "dpkit.core.composition:optimal_composition",
    "laplace_privacy_loss_exact": "dpkit.core.pld:laplace_privacy_loss_exact",
    # --- the methods: every registered method's class, and the registry ---------------------------------------
    "ImprovedTrigonometricMechanism": "dpkit.mechanisms.trig:ImprovedTrigonometricMechanism",
    "AIM": "dpkit.methods.aim:AIM",
    "CandidateLP": "dpkit.methods.candidate_lp:CandidateLP",
    "GaussianCandidates": "dpkit.methods.candidates:GaussianCandidates",
    "MarginalCandidates": "dpkit.methods.candidates:MarginalCandidates",
    "UniformCandidates": "dpkit.methods.candidates:UniformCandidates",
    "DirectAnswering": "dpkit.methods.direct:DirectAnswering",
    "GaussianFit": "dpkit.methods.gaussian_fit:GaussianFit",
    "KMEAnswers": "dpkit.methods.kme:KMEAnswers",
    "KMESynthetic": "dpkit.methods.kme:KMESynthetic",
    "IndependentMarginals": "dpkit.methods.marginals:IndependentMarginals",
    "MST": "dpkit.methods.mst:MST",
    "MWEM": "dpkit.methods.mwem:MWEM",
    "RelaxedProjection": "dpkit.methods.rap:RelaxedProjection",
    "SamplingFloor": "dpkit.methods.references:SamplingFloor",
    "SmallDB": "dpkit.methods.smalldb:SmallDB",
    "get": "dpkit.methods.registry:get",
    "names": "dpkit.methods.registry:names",
    "suite": "dpkit.methods.registry:suite",
    "configure": "dpkit.methods.registry:configure",
    "with_budget": "dpkit.methods.registry:with_budget",
    "describe": "dpkit.methods.registry:describe",
    # --- evaluation -------------------------------------------------------------------------------------------
    "Check": "dpkit.evaluation.verdicts:Check",
    "FalseAlarmBudget": "dpkit.evaluation.verdicts:FalseAlarmBudget",
    "audit": "dpkit.evaluation.audit:audit",
    "scalar_releaser": "dpkit.evaluation.audit:scalar_releaser",
    "reconstruct": "dpkit.evaluation.reconstruction:reconstruct",
    # --- the runner: the protocol, tables and sweeps ----------------------------------------------------------
    "run_cell": "dpkit.experiments.protocol:run_cell",
    "run_cells": "dpkit.experiments.protocol:run_cells",
    "cell_seed": "dpkit.experiments.records:cell_seed",
    "table_methods": "dpkit.experiments.thesis:table_methods",
    "table_rows": "dpkit.experiments.thesis:table_rows",
    "sweep": "dpkit.experiments.sweeps:sweep",
    "sweep_rows": "dpkit.experiments.sweeps:sweep_rows",
    "baseline_rows": "dpkit.experiments.baselines:baseline_rows",
    "write_conclusion": "dpkit.experiments.baselines:write_conclusion",
    "repetition_workers": "dpkit.batch.repetitions:repetition_workers",
    # --- the board ----------------------------------------------------------------------------------------------
    "board_methods": "dpkit.board.report:board_methods",
    "board_from_records": "dpkit.board.report:board_from_records",
    "headline": "dpkit.board.report:headline",
    "lost_cells_text": "dpkit.board.report:lost_cells_text",
    "ranking_disagreements": "dpkit.board.report:ranking_disagreements",
    "supremum_rows": "dpkit.board.report:supremum_rows",
    "supremum_summary_text": "dpkit.board.report:supremum_summary_text",
    "BOARD_CAPTION": "dpkit.board.report:BOARD_CAPTION",
    "DISAGREEMENT_COLUMNS": "dpkit.board.report:DISAGREEMENT_COLUMNS",
    "SUPREMUM_COLUMNS": "dpkit.board.report:SUPREMUM_COLUMNS",
    "board_add": "dpkit.board.add:board_add",
    "board_plan": "dpkit.board.add:board_plan",
    "check_new_entrant": "dpkit.board.add:check_new_entrant",
    "run_gate": "dpkit.board.add:run_gate",
    "write_board_copy": "dpkit.board.add:write_board_copy",
    "pair": "dpkit.board.add:pair",
    "rank_entrant": "dpkit.board.add:rank_entrant",
    "ranks_text": "dpkit.board.add:ranks_text",
    "NOT_A_PROOF": "dpkit.board.add:NOT_A_PROOF",
    "outcome_text": "dpkit.board.add:outcome_text",
    "not_ranked_line": "dpkit.board.add:not_ranked_line",
    "read_board": "dpkit.board.records:read_board",
    "records_frame": "dpkit.board.records:records_frame",
    "BOARD_SUPREMUM": "dpkit.board.records:BOARD_SUPREMUM",
    "write_records": "dpkit.board.records:write_records",
    "certified_cells": "dpkit.board.certified:certified_cells",
    "certified_pairs": "dpkit.board.certified:certified_pairs",
    "certified_sentence": "dpkit.board.certified:certified_sentence",
    "interval_ratios": "dpkit.board.certified:interval_ratios",
    "CERTIFIED_COLUMNS": "dpkit.board.certified:CELL_COLUMNS",
    # --- the checks: one module per topic (its ``notebook_checks`` runs a notebook's checks) -----------------
    "data_checks": "dpkit.claims.data",
    "linear_checks": "dpkit.claims.linear",
    "consistency_checks": "dpkit.claims.consistency",
    "baselines_checks": "dpkit.claims.baselines",
    "board_checks": "dpkit.claims.board",
    "sweep_checks": "dpkit.claims.sweeps",
    "laplace_gauss_checks": "dpkit.claims.laplace_gauss",
    "composition_checks": "dpkit.claims.composition",
    "exponential_net_checks": "dpkit.claims.exponential_net",
    "reconstruction_checks": "dpkit.claims.reconstruction",
    "smoothness_checks": "dpkit.claims.smoothness",
    "trig_rates_checks": "dpkit.claims.trig_rates",
    "private_pca_checks": "dpkit.claims.private_pca",
    "ellipsoid_checks": "dpkit.claims.ellipsoid",
    "improved_privacy_checks": "dpkit.claims.improved_privacy",
    "tables_checks": "dpkit.claims.tables",
    "convergence_study": "dpkit.claims.consistency_study:convergence_study",
    "machine_info": "dpkit.claims.consistency_study:machine_info",
    # --- the outputs: the metrics report, figures (style, exporter, the notebooks' figures), tables, widgets ---
    "Report": "dpkit.outputs.report:Report",
    "read_metrics": "dpkit.outputs.report:read_metrics",
    "use_style": "dpkit.outputs.plotting:use_style",
    "style": "dpkit.outputs.plotting:style",
    "new_figure": "dpkit.outputs.plotting:new_figure",
    "show_figure": "dpkit.outputs.plotting:show_figure",
    "export_figure": "dpkit.outputs.plotting:export_figure",
    "dataset_marginals": "dpkit.outputs.figures.data:dataset_marginals",
    "marginal_histograms": "dpkit.outputs.figures.data:marginal_histograms",
    "plot_errors_vs_sigma": "dpkit.outputs.figures.tables:plot_errors_vs_sigma",
    "tables_caption": "dpkit.outputs.figures.tables:tables_caption",
    "plot_sweep": "dpkit.outputs.figures.tables:plot_sweep",
    "check_metric": "dpkit.outputs.figures.metric:check_metric",
    "metric_caption": "dpkit.outputs.figures.metric:metric_caption",
    "plot_densities": "dpkit.outputs.figures.linear:plot_densities",
    "plot_min_rate": "dpkit.outputs.figures.linear:plot_min_rate",
    "plot_rate_heatmaps": "dpkit.outputs.figures.linear:plot_rate_heatmaps",
    "plot_convergence": "dpkit.outputs.figures.consistency:plot_convergence",
    "plot_timing": "dpkit.outputs.figures.consistency:plot_timing",
    "plot_dataset_summary": "dpkit.outputs.figures.baselines:plot_dataset_summary",
    "plot_leaderboard": "dpkit.outputs.figures.leaderboard:plot_leaderboard",
    "plot_leaderboard_supremum": "dpkit.outputs.figures.leaderboard:plot_leaderboard_supremum",
    "leaderboard_caption": "dpkit.outputs.figures.leaderboard:leaderboard_caption",
    "DISAGREEMENTS_CAPTION": "dpkit.outputs.figures.leaderboard:DISAGREEMENTS_CAPTION",
    "LEADERBOARD_SUPREMUM_CAPTION": "dpkit.outputs.figures.leaderboard:LEADERBOARD_SUPREMUM_CAPTION",
    "SUPREMUM_TABLE_CAPTION": "dpkit.outputs.figures.leaderboard:SUPREMUM_TABLE_CAPTION",
    "gaussian_calibrations_figure": "dpkit.outputs.figures.laplace_gauss:gaussian_calibrations_figure",
    "composition_bounds_figure": "dpkit.outputs.figures.composition:composition_bounds_figure",
    "kl_bound_figure": "dpkit.outputs.figures.composition:kl_bound_figure",
    "exponential_tail_figure": "dpkit.outputs.figures.exponential_net:exponential_tail_figure",
    "phase_transition_figure": "dpkit.outputs.figures.reconstruction:phase_transition_figure",
    "derivative_growth_figure": "dpkit.outputs.figures.smoothness:derivative_growth_figure",
    "error_terms_figure": "dpkit.outputs.figures.trig_rates:error_terms_figure",
    "error_vs_n_figure": "dpkit.outputs.figures.trig_rates:error_vs_n_figure",
    "supremum_vs_n_figure": "dpkit.outputs.figures.trig_rates:supremum_vs_n_figure",
    "pca_rates_figure": "dpkit.outputs.figures.private_pca:pca_rates_figure",
    "samplers_figure": "dpkit.outputs.figures.ellipsoid:samplers_figure",
    "export_table": "dpkit.outputs.tables:export_table",
    "rows_frame": "dpkit.outputs.tables:rows_frame",
    "paper_comparison_table": "dpkit.outputs.tables:paper_comparison_table",
    "explorer": "dpkit.outputs.widgets:explorer",
    "as_dataset": "dpkit.outputs.widgets:as_dataset",
    "as_datasets": "dpkit.outputs.widgets:as_datasets",
    "as_list": "dpkit.outputs.widgets:as_list",
    "dataset_label": "dpkit.outputs.widgets:dataset_label",
    "explore": "dpkit.outputs.panels:explore",
    "sweep_panel": "dpkit.outputs.panels:sweep_panel",
    "sweep_notebook": "dpkit.outputs.sweeps:sweep_notebook",
    # --- the checks summary over a results folder -------------------------------------------------------------
    "gather_checks": "dpkit.batch.checks:gather_checks",
    "summarise_checks": "dpkit.batch.checks:summarise_checks",
    "checks_latex": "dpkit.batch.checks:to_latex",
    "checks_markdown": "dpkit.batch.checks:to_markdown",
}

__all__ = [
    "__version__",
    "Ledger",
    "Spend",
    "ledger_for",
    "BudgetExceededError",
    "DPKitError",
    "FeasibilityError",
    "PrivacyLeakWarning",
    "QuickReplacementWarning",
    "resolve_rng",
    "spawn",
    "spawn_seeds",
    *_API,
]



def __getattr__(name: str) -> Any:
    """A façade name (:data:`_API`) or a layer (``dpkit.methods``, ...), imported on first use.

    Resolved on every access (not copied into this module), so ``dp.name`` is always what its defining module holds."""
    import importlib

    if name in _API:
        return pkgutil.resolve_name(_API[name])
    if name in _LAYERS:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'dpkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_LAYERS})
