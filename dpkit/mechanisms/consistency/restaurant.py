"""Synthetic restaurant sales (Cai et al. 2021, Sec. 1 and 7) and its Laplace privacy step.

Five items are sold only inside three combos; the generator draws daily combo counts, turns them into item sales
(``B v_t = 0``, eq. 13) and builds one complete k-ary tree per item. Privacy (Sec. 7): event-level DP under add/remove
of one combo purchase; the release's L1 sensitivity is ``Δ = 5·h`` (docs/science/errata.md,
*erratum-cc-sensitivity*, ``sensitivity_rule``) and every node gets ``Lap(Δ/ε)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.accounting import Ledger
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_choice, check_epsilon, check_finite_array, check_positive_int
from dpkit.mechanisms.consistency.trees import KaryTree, aggregate, tree_height
from dpkit.mechanisms.laplace import Laplace

__all__ = [
    "ITEMS",
    "COMBOS",
    "COMBO_B",
    "TABLE2",
    "RestaurantData",
    "RestaurantRelease",
    "generate_restaurant",
    "restaurant_sensitivity",
    "privatize_restaurant",
]

ITEMS = ("cola", "burger", "wings", "fries", "nuggets")
#: combo contents (rows) in portions of each item (Sec. 1)
COMBOS = np.array([[2, 1, 1, 0, 1], [0, 2, 2, 1, 0], [1, 1, 0, 1, 1]], dtype=float)
#: eq. (13): null(B) is exactly the span of the combo vectors
COMBO_B = np.array([[1, -5, 3, 4, 0], [-1, -1, 1, 0, 2]], dtype=float)
#: Table 2 columns Day1, Day2, Day25 (item sales); implied combo counts (11,10,13), (9,6,7), (10,8,11)
TABLE2 = np.array([[35, 44, 31, 23, 24], [25, 28, 21, 13, 16], [31, 37, 26, 19, 21]], dtype=float)
#: mean daily combo counts used by default (≈ the Table 2 implied counts)
DEFAULT_MEAN_COMBOS = (10.0, 8.0, 10.0)
SENSITIVITY_RULES = ("max-portions", "paper")


@dataclass(frozen=True, kw_only=True, eq=False)
class RestaurantData:
    """Un-noised synthetic data: combo counts ``(T, 3)``, sales ``(T, 5)``, trees ``X (n_nodes, 5)``."""

    tree: KaryTree
    combo_counts: np.ndarray
    sales: np.ndarray
    X: np.ndarray

    @property
    def T(self) -> int:
        return self.tree.T


def generate_restaurant(
    T: int,
    *,
    k: int = 2,
    mean_combos: Any = DEFAULT_MEAN_COMBOS,
    combos: Any = COMBOS,
    rng: RNGLike = None,
) -> RestaurantData:
    """Draw ``T`` days of combo counts (independent Poisson), item sales and the per-item trees.

    Parameters
    ----------
    T : int
        Number of days (any ≥ 1; the trees are padded with zero days to ``k^{h−1}`` leaves).
    k : int
        Branching factor of the trees (paper: 2).
    mean_combos : sequence of 3 floats
        Poisson means of the daily combo counts (default ≈ Table 2's implied counts).
    combos : array (n_combos, c)
        Combo contents (default the paper's three combos).
    rng : seed or Generator

    Notes
    -----
    Cai et al. 2021 gives no generator (the data are "virtual"); the optimal-release error does not
    depend on the data content (Sec. 8, ref. [19]), so any consistent data serve.
    """
    T = check_positive_int(T, name="T")
    C = check_finite_array(combos, name="combos", ndim=2)
    lam = check_finite_array(mean_combos, name="mean_combos", ndim=1)
    if lam.shape[0] != C.shape[0] or np.any(lam < 0):
        raise ValueError(f"mean_combos must be {C.shape[0]} non-negative means (one per combo); got {lam}")
    g = resolve_rng(rng)
    counts = g.poisson(lam, size=(T, C.shape[0])).astype(float)
    sales = counts @ C
    tree = KaryTree(T=T, k=k)
    return RestaurantData(tree=tree, combo_counts=counts, sales=sales, X=aggregate(sales, k))


def restaurant_sensitivity(T: int, *, k: int = 2, rule: str = "max-portions", combos: Any = COMBOS) -> float:
    """L1 sensitivity of all trees under add/remove of one combo purchase (Sec. 7).

    ``rule="max-portions"`` (default, correct): ``Δ = (max portions per combo)·h``.
    ``rule="paper"``: ``Δ = c·h`` with ``c`` the number of items, as printed. Both are ``5h`` here.
    """
    check_choice(rule, name="rule", choices=SENSITIVITY_RULES)
    C = check_finite_array(combos, name="combos", ndim=2)
    h = tree_height(T, k)
    per_day = float(np.abs(C).sum(axis=1).max()) if rule == "max-portions" else float(C.shape[1])
    return per_day * h


@dataclass(frozen=True, kw_only=True, eq=False)
class RestaurantRelease:
    """The noisy trees ``X̃`` with the mechanism's parameters and the ledger."""

    data: RestaurantData
    X_noisy: np.ndarray
    epsilon: float
    sensitivity: float
    mechanism: dict
    ledger: dict


def privatize_restaurant(
    data: RestaurantData,
    epsilon: float = 1.0,
    *,
    ledger: Ledger | None = None,
    rng: RNGLike = None,
    sensitivity_rule: str = "max-portions",
) -> RestaurantRelease:
    """Algorithm 1 step 3: ``Lap(Δ/ε)`` on every node of every tree, spent through a Ledger.

    Parameters
    ----------
    data : RestaurantData
    epsilon : float
        Privacy budget (paper: 1).
    ledger : Ledger, optional
        Spent ``(ε, 0)`` under ``"add-remove"`` (event level); a new ``Ledger(epsilon)`` if None.
    rng : seed or Generator
    sensitivity_rule : {"max-portions", "paper"}
        See :func:`restaurant_sensitivity`.
    """
    if not isinstance(data, RestaurantData):
        raise TypeError(f"data must be a RestaurantData; got {type(data).__name__}")
    epsilon = check_epsilon(epsilon, name="epsilon")
    delta_1 = restaurant_sensitivity(data.tree.T, k=data.tree.k, rule=sensitivity_rule)
    if ledger is None:
        ledger = Ledger(epsilon, name="restaurant")
    mech = Laplace(epsilon=epsilon, sensitivity=delta_1, neighbouring="add-remove")
    Xn = mech.release(data.X, rng=rng, ledger=ledger, name="restaurant-trees")
    return RestaurantRelease(
        data=data,
        X_noisy=np.asarray(Xn),
        epsilon=epsilon,
        sensitivity=delta_1,
        mechanism=mech.params(),
        ledger=ledger.to_dict(),
    )
