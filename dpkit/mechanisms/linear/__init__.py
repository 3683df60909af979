"""The near-optimal additive-noise mechanism for 1-D linear queries (Wu, He & Xia,
*Near-Optimal Differentially Private Mechanism for Linear Queries*, Journal of Software 28(9), 2017).

Interval arithmetic, level sets, the density, the tuning of Figs 1–2, the Algorithm 2 release and the staircase peer;
the checks are in :mod:`dpkit.claims.linear`.
"""
from dpkit.mechanisms.linear.density import LevelSetDensity, laplace_abs_error, rate_curve, staircase_abs_error
from dpkit.mechanisms.linear.levelset import LevelSets, build_level_sets, ladder_sets, neighbour_set
from dpkit.mechanisms.linear.mechanism import LinearQueryMechanism, linear_query_value
from dpkit.mechanisms.linear.staircase import Staircase, optimal_gamma
from dpkit.mechanisms.linear.tuning import RadiusSearch, RateGrid, optimal_radius, rate_grid

__all__ = [
    "LinearQueryMechanism",
    "linear_query_value",
    "Staircase",
    "optimal_gamma",
    "LevelSetDensity",
    "LevelSets",
    "build_level_sets",
    "ladder_sets",
    "neighbour_set",
    "RadiusSearch",
    "RateGrid",
    "optimal_radius",
    "rate_grid",
    "rate_curve",
    "laplace_abs_error",
    "staircase_abs_error",
]
