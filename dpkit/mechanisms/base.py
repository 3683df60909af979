"""Common base of dpkit's mechanisms: frozen, keyword-only, validated on construction."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.accounting import NEIGHBOURING, Ledger
from dpkit.core.rng import RNGLike
from dpkit.core.validation import check_choice, check_finite_array

__all__ = ["Mechanism", "AdditiveNoiseMechanism"]


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
    ``"replace-one"`` (the thesis) or ``"add-remove"`` (Wu, He & Xia 2017; Cai et al. 2021).
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


@dataclass(frozen=True, kw_only=True)
class AdditiveNoiseMechanism(Mechanism):
    """A mechanism that releases ``value + Z`` with noise ``Z`` independent of the value.

    Subclasses (Laplace, Gaussian, staircase, the level-set mechanism) implement
    :meth:`_add_noise` and :meth:`_ledger_meta`; :meth:`release` checks the value, records the
    spend and only then draws the noise. :attr:`scalar_only` names why a subclass releases one
    scalar query at a time (``None``: any shape, independent noise per entry).
    """

    scalar_only: ClassVar[str | None] = None

    def release(
        self,
        value: ArrayLike,
        *,
        rng: RNGLike = None,
        ledger: Ledger | None = None,
        name: str | None = None,
    ) -> np.ndarray | float:
        """Return ``value + Z`` (same shape; a float for a scalar): the noise law is the class's.

        Parameters
        ----------
        value : array_like
            The exact query answer ``f(D)`` (finite; one entry when :attr:`scalar_only`).
        rng : int, Generator, SeedSequence or None
            Seed of the noise; the same seed gives the same release bit for bit.
        ledger : Ledger, optional
            Charged with the mechanism's (ε, δ) *before* any noise is drawn (refused if over budget).
        name : str, optional
            Label of the spend (default: the class name).
        """
        x = check_finite_array(value, name="value")
        if self.scalar_only is not None and x.size != 1:
            raise ValueError(f"value must be a scalar ({self.scalar_only}); got shape {x.shape}")
        self._charge(ledger, name, **self._ledger_meta(x))
        out = self._add_noise(x, rng)
        if not np.all(np.isfinite(out)):  # a finite scale whose draws overflow float64 (e.g. Laplace b = 1e308)
            raise OverflowError(f"{type(self).__name__}: value + noise overflowed to ±inf in float64 (noise scale "
                                f"{self.params().get('scale', '?')}); epsilon is too small for this sensitivity. "
                                "The spend stays recorded in the ledger; nothing was released")
        return float(out) if np.ndim(out) == 0 else out

    def _ledger_meta(self, x: np.ndarray) -> dict[str, Any]:
        """What the ledger records next to the spend of releasing ``x``."""
        raise NotImplementedError  # pragma: no cover

    def _add_noise(self, x: np.ndarray, rng: RNGLike) -> np.ndarray | float:
        """``x + Z`` for the checked value ``x`` (called after the spend is recorded)."""
        raise NotImplementedError  # pragma: no cover
