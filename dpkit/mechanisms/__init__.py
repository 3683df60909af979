"""Mechanisms of thesis Chapter 1 (and the building blocks of Chapter 2)."""
from dpkit.mechanisms.base import Mechanism
from dpkit.mechanisms.exponential import Exponential, ReportNoisyMax
from dpkit.mechanisms.gaussian import Gaussian, analytic_gaussian_sigma, gaussian_exact_delta
from dpkit.mechanisms.laplace import Laplace
from dpkit.mechanisms.multiquery import (
    LaplaceI,
    LaplaceII,
    laplace_I,
    laplace_I_error_bound,
    laplace_II_error_bound,
    laplace_max_error_bound,
)
from dpkit.mechanisms.net import MAX_CANDIDATES, NetMechanism, count_databases, enumerate_databases

__all__ = [
    "Mechanism",
    "Laplace",
    "Gaussian",
    "gaussian_exact_delta",
    "analytic_gaussian_sigma",
    "Exponential",
    "ReportNoisyMax",
    "LaplaceI",
    "LaplaceII",
    "laplace_I",
    "laplace_max_error_bound",
    "laplace_I_error_bound",
    "laplace_II_error_bound",
    "NetMechanism",
    "count_databases",
    "enumerate_databases",
    "MAX_CANDIDATES",
]
