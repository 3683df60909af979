"""Baselines for the trigonometric mechanisms, run on the same data, workload and budget (issue 7;
dwork-roth.md §4.3 B1–B5).

Every baseline is a small frozen keyword-only object whose ``fit(X, rng=, ledger=)`` (synthetic
data) or ``answer(workload, X, rng=, ledger=)`` (direct answering, SmallDB) returns a
:class:`BaselineResult` carrying the ledger record, parameters and timings; budgets are spent
through a :class:`dpkit.core.accounting.Ledger` under replace-one neighbours with public n.

=====================  =========================================================  ===========
class                  what                                                       privacy
=====================  =========================================================  ===========
DirectAnswering        B1: evaluation queries + Laplace I / Laplace II / Gaussian ε or (ε, δ)
IndependentMarginals   per-attribute histograms or mean/variance, independent     ε or (ε, δ)
GaussianFit            Analyze Gauss or PSI + mean, sample N(μ̃, Σ̃) in the cube    ε or (ε, δ)
MWEM                   B4 over uniform (free) or DP-Gaussian (charged) candidates ε (+ δ fit)
SmallDB                B2 net mechanism on a toy grid domain                      ε
TrigBaseline           the improved trig mechanism; ε = ∞ gives the LP floor (B5) as wrapped
SamplingFloor          random subsample of the data (non-private)                 none
CandidateLP            Alg 9/10 with DP-Gaussian / marginal / uniform candidates  as Alg 9/10
compare_private_pca    diffprivlib PCA vs dpkit PSI: captured variance, angle     ε
=====================  =========================================================  ===========
"""
from dpkit.methods._common import BaselineResult, kernel_query_ranges, kernel_values
from dpkit.methods.candidate_lp import CandidateLP
from dpkit.methods.direct import DirectAnswering
from dpkit.methods.gaussian_fit import GaussianFit, psd_project
from dpkit.methods.marginals import IndependentMarginals
from dpkit.methods.mwem import MWEM
from dpkit.methods.pca_compare import compare_private_pca, pca_quality
from dpkit.methods.references import SamplingFloor, TrigBaseline
from dpkit.methods.runner import baseline_suite, cell_seed, direct_crossover_queries, direct_expected_max_error, run_baselines, summarise_baselines, write_conclusion
from dpkit.methods.report import baseline_checks, pca_summary, plot_dataset_summary
from dpkit.methods.smalldb import SmallDB

__all__ = [
    "BaselineResult",
    "kernel_query_ranges",
    "kernel_values",
    "DirectAnswering",
    "IndependentMarginals",
    "GaussianFit",
    "psd_project",
    "MWEM",
    "SmallDB",
    "TrigBaseline",
    "SamplingFloor",
    "CandidateLP",
    "compare_private_pca",
    "pca_quality",
    "baseline_suite",
    "cell_seed",
    "run_baselines",
    "summarise_baselines",
    "write_conclusion",
    "direct_expected_max_error",
    "direct_crossover_queries",
    "baseline_checks",
    "pca_summary",
    "plot_dataset_summary",
]
