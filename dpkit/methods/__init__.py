"""Methods that answer the workload, all of one protocol (:mod:`dpkit.queries.release`), registered
by name in :mod:`dpkit.methods.registry` (the baselines B1–B5 of docs/science/baselines.md, which lists them).

Every method is a frozen keyword-only dataclass whose fields are its parameters, with one verb
``release(X, *, rng=None, ledger=None, workload=None) -> Release``; budgets are spent through a
:class:`dpkit.core.accounting.Ledger` under replace-one neighbours with public n.
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
