"""Consistent release under multiple linear constraints (Cai, Liu, Xiong, Ying & Wu,
*Approximation method of multiple consistency constraint under differential privacy*, Journal on Communications, 2021).

* :mod:`.constraints` – the validated sparse system ``M x = b`` and row partitions (eqs. 4–5).
* :mod:`.general` – the exact projector ``f_{M,b}`` of eq. (7): dense pinv / Cholesky, sparse LU, LSQR.
* :mod:`.alternating` – the alternating-projection driver of eq. (8) with the paper's stopping rules.
* :mod:`.trees` – Boosting, the per-day combo projection, Algorithm 1 and the closed form ``Boost(X̃)·Π``.
* :mod:`.restaurant` – the synthetic restaurant data and the Laplace privacy step.

The checks of the paper's claims and the Fig. 1–4 experiment runners used by
``notebooks/35_consistency.ipynb`` are in :mod:`dpkit.claims.consistency`,
:mod:`dpkit.claims.consistency_statistics` and :mod:`dpkit.claims.consistency_study`.
"""
from __future__ import annotations

from dpkit.mechanisms.consistency.alternating import AlternatingResult, alternating_projection, block_projectors
from dpkit.mechanisms.consistency.constraints import (
    ConstraintSystem,
    InconsistentConstraintsError,
    contiguous_partition,
    random_consistent_system,
    random_partition,
)
from dpkit.mechanisms.consistency.general import GeneralProjector, project_general
from dpkit.mechanisms.consistency.restaurant import (
    COMBO_B,
    COMBOS,
    ITEMS,
    RestaurantData,
    RestaurantRelease,
    generate_restaurant,
    privatize_restaurant,
    restaurant_sensitivity,
)
from dpkit.mechanisms.consistency.trees import (
    KaryTree,
    LeafComboProjector,
    TreeProjector,
    aggregate,
    algorithm1,
    boost,
    closed_form,
    combo_projector,
    restaurant_residual,
    restaurant_system,
    tree_height,
    tree_residual,
)

__all__ = [
    "AlternatingResult",
    "alternating_projection",
    "block_projectors",
    "ConstraintSystem",
    "InconsistentConstraintsError",
    "contiguous_partition",
    "random_consistent_system",
    "random_partition",
    "GeneralProjector",
    "project_general",
    "COMBO_B",
    "COMBOS",
    "ITEMS",
    "RestaurantData",
    "RestaurantRelease",
    "generate_restaurant",
    "privatize_restaurant",
    "restaurant_sensitivity",
    "KaryTree",
    "LeafComboProjector",
    "TreeProjector",
    "aggregate",
    "algorithm1",
    "boost",
    "closed_form",
    "combo_projector",
    "restaurant_residual",
    "restaurant_system",
    "tree_height",
    "tree_residual",
]
