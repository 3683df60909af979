"""The privacy ledger: every budget in dpkit is spent through one :class:`Ledger`.

A ledger holds a total (ε, δ), records each :class:`Spend`, and refuses any spend that would take the total beyond the
budget (:class:`~dpkit.core.exceptions.BudgetExceededError`) under basic composition (thesis Thm 1.5/1.6), unless it
was created with a tighter ``composition=``; :meth:`Ledger.total` reports advanced or optimal totals
(:mod:`dpkit.core.composition`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

from dpkit.core.exceptions import BudgetExceededError
from dpkit.core.validation import check_choice, check_delta, check_epsilon

__all__ = ["Spend", "Ledger", "ledger_for"]

_TOL = 1e-12
NEIGHBOURING = ("replace-one", "add-remove")


@dataclass(frozen=True)
class Spend:
    """One entry of a ledger: what a step cost."""

    name: str
    epsilon: float
    delta: float = 0.0
    mechanism: str | None = None
    neighbouring: str = "replace-one"
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["meta"] = {k: _jsonable(v) for k, v in self.meta.items()}
        return d


def _jsonable(v: Any) -> Any:
    try:
        import numpy as np

        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, np.ndarray):
            return v.tolist()
    except ImportError:  # pragma: no cover
        pass
    return v


class Ledger:
    """A privacy budget and the record of what was spent from it.

    Parameters
    ----------
    epsilon : float
        Total ε budget (> 0; ``math.inf`` for a non-private reference run).
    delta : float, default 0
        Total δ budget in [0, 1).
    composition : {"basic", "advanced", "optimal"}, default "basic"
        The rule under which :meth:`total` composes the spends and under which a spend
        is refused. ``"basic"`` (thesis Thm 1.6) is valid for any sequence;
        ``"advanced"`` (Thm 1.11) and ``"optimal"`` (Kairouz–Oh–Viswanath, homogeneous
        spends only) need ``delta_slack`` δ' set aside from the δ budget.
    delta_slack : float, default 0
        δ' for advanced/optimal composition.
    name : str, optional
        A label carried into reports.

    Examples
    --------
    >>> led = Ledger(epsilon=1.0)
    >>> _ = led.spend("moments", epsilon=1/3)
    >>> led.remaining
    (0.666..., 0.0)
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        composition: str = "basic",
        delta_slack: float = 0.0,
        name: str | None = None,
    ) -> None:
        self.epsilon = check_epsilon(epsilon, allow_inf=True, name="epsilon")
        self.delta = check_delta(delta, name="delta")
        self.composition = check_choice(composition, name="composition", choices=("basic", "advanced", "optimal"))
        self.delta_slack = check_delta(delta_slack, name="delta_slack")
        if composition != "basic" and not (0 < self.delta_slack <= self.delta):
            raise ValueError(
                f"delta_slack must be in (0, delta={self.delta}] for composition={composition!r}; got {delta_slack}"
            )
        self.name = name
        self._entries: list[Spend] = []

    # ------------------------------------------------------------------ records
    @property
    def entries(self) -> tuple[Spend, ...]:
        """The spends so far, in order."""
        return tuple(self._entries)

    def __iter__(self) -> Iterator[Spend]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def total(self, rule: str | None = None) -> tuple[float, float]:
        """(ε, δ) of everything spent so far under ``rule`` (default: the ledger's rule)."""
        rule = self.composition if rule is None else check_choice(
            rule, name="rule", choices=("basic", "advanced", "optimal")
        )
        pairs = [(s.epsilon, s.delta) for s in self._entries]
        return _compose(pairs, rule, self.delta_slack)

    @property
    def spent(self) -> tuple[float, float]:
        """(ε, δ) spent under the ledger's composition rule."""
        return self.total()

    @property
    def remaining(self) -> tuple[float, float]:
        """Budget left under basic accounting (ε, δ), never negative."""
        e, d = self.total("basic")
        return (max(self.epsilon - e, 0.0), max(self.delta - d, 0.0))

    def can_spend(self, epsilon: float, delta: float = 0.0) -> bool:
        """Whether a spend of (ε, δ) fits the budget under the ledger's rule (ε > 0 and δ in [0, 1) are validated)."""
        epsilon = check_epsilon(epsilon, allow_inf=math.isinf(self.epsilon), name="epsilon")
        delta = check_delta(delta, name="delta")
        pairs = [(s.epsilon, s.delta) for s in self._entries] + [(float(epsilon), float(delta))]
        e, d = _compose(pairs, self.composition, self.delta_slack)
        return e <= self.epsilon * (1 + _TOL) + _TOL and d <= self.delta * (1 + _TOL) + _TOL

    # ------------------------------------------------------------------ spending
    def spend(
        self,
        name: str,
        epsilon: float,
        delta: float = 0.0,
        *,
        mechanism: str | None = None,
        neighbouring: str = "replace-one",
        **meta: Any,
    ) -> Spend:
        """Record a spend of (ε, δ); refuse it if the budget would be exceeded.

        Raises
        ------
        BudgetExceededError
            If the composed total would exceed the ledger's (ε, δ). Nothing is recorded.
        """
        if not isinstance(name, str) or not name:
            raise TypeError("name must be a non-empty string naming the step")
        eps = check_epsilon(epsilon, allow_inf=math.isinf(self.epsilon), name="epsilon")
        dl = check_delta(delta, name="delta")
        check_choice(neighbouring, name="neighbouring", choices=NEIGHBOURING)
        if not self.can_spend(eps, dl):
            e, d = self.total()
            raise BudgetExceededError(
                f"spend {name!r} of (epsilon={eps:.6g}, delta={dl:.3g}) would exceed the budget "
                f"(epsilon={self.epsilon:.6g}, delta={self.delta:.3g}) of ledger {self.name or ''!s}; "
                f"already spent (epsilon={e:.6g}, delta={d:.3g}) under {self.composition} composition"
            )
        entry = Spend(name=name, epsilon=eps, delta=dl, mechanism=mechanism, neighbouring=neighbouring, meta=dict(meta))
        self._entries.append(entry)
        return entry

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record: budget, rule, spends and totals."""
        e, d = self.total()
        eb, db = self.total("basic")
        return {
            "name": self.name,
            "budget": {"epsilon": self.epsilon, "delta": self.delta},
            "composition": self.composition,
            "delta_slack": self.delta_slack,
            "spent": {"epsilon": e, "delta": d},
            "spent_basic": {"epsilon": eb, "delta": db},
            "entries": [s.to_dict() for s in self._entries],
        }

    def __repr__(self) -> str:
        e, d = self.total()
        return (
            f"Ledger(epsilon={self.epsilon:g}, delta={self.delta:g}, composition={self.composition!r}, "
            f"spent=({e:.4g}, {d:.3g}), entries={len(self._entries)})"
        )


def ledger_for(ledger: Ledger | None, epsilon: float, delta: float, name: str) -> Ledger:
    """The ledger a composite mechanism spends (ε, δ) through.

    ``None`` gives a fresh ledger with exactly that budget (named ``name``); a caller's ledger
    is returned as is after checking it has room for the whole (ε, δ), so a composite
    mechanism is refused *before* any of its steps spends or draws noise.

    Raises
    ------
    BudgetExceededError
        If the caller's ledger cannot take (ε, δ).
    """
    if ledger is None:
        return Ledger(epsilon, delta, name=name)
    if not isinstance(ledger, Ledger):
        raise TypeError(f"ledger must be a dpkit Ledger or None; got {type(ledger).__name__}")
    if not ledger.can_spend(epsilon, delta):
        e, d = ledger.total()
        raise BudgetExceededError(
            f"{name} needs (epsilon={epsilon:g}, delta={delta:g}) but the ledger has spent ({e:g}, {d:g}) "
            f"of ({ledger.epsilon:g}, {ledger.delta:g})"
        )
    return ledger


def _compose(pairs: list[tuple[float, float]], rule: str, delta_slack: float) -> tuple[float, float]:
    if not pairs:
        return (0.0, 0.0)
    if rule == "basic":
        return (math.fsum(p[0] for p in pairs), math.fsum(p[1] for p in pairs))
    from dpkit.core import composition  # local import: composition builds on validation only

    if rule == "advanced":
        return composition.advanced_composition_heterogeneous(pairs, delta_slack)
    return composition.optimal_composition_pairs(pairs, delta_slack)
