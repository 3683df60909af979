"""Mechanisms of thesis Chapter 1 (and the building blocks of Chapter 2)."""
from .base import Mechanism
from .laplace import Laplace

__all__ = ["Mechanism", "Laplace"]
