"""Consistent release under multiple linear constraints (Cai, Liu, Xiong, Ying & Wu,
*Approximation method of multiple consistency constraint under differential privacy*, Journal on Communications, 2021).

The constraint system (:mod:`.constraints`), the exact projector (:mod:`.general`), alternating projections
(:mod:`.alternating`), tree consistency (:mod:`.trees`) and the restaurant data (:mod:`.restaurant`); the checks of
notebook 35 are in :mod:`dpkit.claims.consistency` and its siblings.
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
