"""Common base of dpkit's mechanisms: frozen, keyword-only, validated on construction."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from dpkit.core.accounting import NEIGHBOURING, Ledger
from dpkit.core.validation import check_choice

__all__ = ["Mechanism"]


@dataclass(frozen=True, kw_only=True)
class Mechanism:
    """Base class.

    Subclasses are frozen keyword-only dataclasses whose ``__post_init__`` validates
    every parameter (errors name the parameter and the allowed range) and which expose

    - ``epsilon`` and ``delta``: the guarantee, under ``neighbouring``;
    - ``release(value, *, rng=None, ledger=None, name=None)``: the randomized output;
      when a ledger is given the spend is recorded (and refused if over budget) *before*
      any noise is drawn;
    - closed-form error (``variance``, ``mse``) where one exists.

    ``neighbouring`` is the neighbouring relation the sensitivity was computed under:
    ``"replace-one"`` (the thesis) or ``"add-remove"`` (seeds 001/003 and 004).
    """

    neighbouring: str = "replace-one"

    def __post_init__(self) -> None:
        check_choice(self.neighbouring, name="neighbouring", choices=NEIGHBOURING)

    @property
    def guarantee(self) -> tuple[float, float]:
        """The guarantee (ε, δ) under ``neighbouring``."""
        return (float(getattr(self, "epsilon")), float(getattr(self, "delta", 0.0)))

    def _charge(self, ledger: Ledger | None, name: str | None, **meta: Any) -> None:
        if ledger is not None:
            ledger.spend(
                name or type(self).__name__,
                *self.guarantee,
                mechanism=type(self).__name__,
                neighbouring=self.neighbouring,
                **meta,
            )

    def params(self) -> dict[str, Any]:
        """The mechanism's parameters as a plain dict (for result records)."""
        d = asdict(self)
        d["mechanism"] = type(self).__name__
        return d
