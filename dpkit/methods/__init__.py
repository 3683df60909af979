"""Methods that answer the workload, all of one protocol (:mod:`dpkit.queries.release`), registered
by name in :mod:`dpkit.methods.registry` (the baselines B1–B5 of docs/science/baselines.md).

Every method is a frozen keyword-only dataclass whose fields are its parameters, with one verb
``release(X, *, rng=None, ledger=None, workload=None) -> Release``; budgets are spent through a
:class:`dpkit.core.accounting.Ledger` under replace-one neighbours with public n.

=====================  ============================================================  ===========
class                  what                                                          privacy
=====================  ============================================================  ===========
ImprovedTrig…          Alg 9/10 (:mod:`dpkit.mechanisms.trig`); ε = ∞: the LP floor  ε / (ε, δ)
DirectAnswering        B1: evaluation queries + Laplace I / Laplace II / Gaussian    ε or (ε, δ)
IndependentMarginals   per-attribute histograms or mean/variance, independent        ε or (ε, δ)
GaussianFit            Analyze Gauss or PSI + mean, sample N(μ̃, Σ̃) in the cube       ε or (ε, δ)
MWEM                   B4 over uniform (free) or DP-Gaussian (charged) candidates    ε (+ δ fit)
SmallDB                B2 net mechanism on a toy grid domain                         ε
SamplingFloor          random subsample of the data (non-private)                    none
CandidateLP            Alg 9/10 with DP-Gaussian / marginal / uniform candidates     as Alg 9/10
…Candidates            the candidate sources of MWEM and CandidateLP (components)    (charged)
MST                    max-spanning-tree marginals + Private-PGM on a public grid    ε or (ε, δ)
AIM                    adaptive marginals (McKenna et al. 2022) + Private-PGM        (ε, δ) (zCDP)
RelaxedProjection      RAP: noisy trig moments, m points fitted by L-BFGS-B          ε or (ε, δ)
KMEAnswers             noisy random-Fourier mean embedding, answers from it          ε or (ε, δ)
KMESynthetic           m points fitted to the noisy mean embedding                   ε or (ε, δ)
=====================  ============================================================  ===========
"""
from dpkit.methods._kernels import kernel_query_ranges, kernel_values
from dpkit.methods.aim import AIM
from dpkit.methods.candidate_lp import CandidateLP
from dpkit.methods.candidates import GaussianCandidates, MarginalCandidates, UniformCandidates
from dpkit.methods.direct import DirectAnswering
from dpkit.methods.gaussian_fit import GaussianFit, psd_project
from dpkit.methods.kme import KMEAnswers, KMESynthetic
from dpkit.methods.marginals import IndependentMarginals
from dpkit.methods.mst import MST
from dpkit.methods.mwem import MWEM
from dpkit.methods.rap import RelaxedProjection
from dpkit.methods.references import SamplingFloor
from dpkit.methods.registry import configure, get, names, suite
from dpkit.methods.smalldb import SmallDB

__all__ = [
    "kernel_query_ranges",
    "kernel_values",
    "DirectAnswering",
    "IndependentMarginals",
    "GaussianFit",
    "psd_project",
    "MWEM",
    "MST",
    "AIM",
    "RelaxedProjection",
    "KMEAnswers",
    "KMESynthetic",
    "SmallDB",
    "SamplingFloor",
    "CandidateLP",
    "UniformCandidates",
    "GaussianCandidates",
    "MarginalCandidates",
    "configure",
    "get",
    "names",
    "suite",
]
