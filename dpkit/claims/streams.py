"""Named random streams shared by the sections of a theorem-check notebook.

A topic module declares its streams as a frozen dataclass of generators deriving from :class:`Streams`, spawned once
from ``SEED``; its claim functions accept that object or a plain seed:

>>> from dataclasses import dataclass
>>> import numpy as np
>>> @dataclass(frozen=True)
... class Two(Streams):
...     first: np.random.Generator
...     second: np.random.Generator
>>> s = Two.resolve(0)
>>> float(s.second.random()) == float(spawn(0, 2)[1].random())
True
>>> Two.resolve(s) is s
True
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TypeVar

from dpkit.core.rng import RNGLike, spawn

__all__ = ["Streams"]

S = TypeVar("S", bound="Streams")


@dataclass(frozen=True)
class Streams:
    """Base of a topic's named streams: subclasses add one ``numpy.random.Generator`` field per stream."""

    @classmethod
    def from_seed(cls: type[S], rng: RNGLike) -> S:
        """``spawn(rng, n)`` with ``n`` the number of fields, assigned to the fields in declaration order."""
        return cls(*spawn(rng, len(fields(cls))))

    @classmethod
    def resolve(cls: type[S], rng: S | RNGLike) -> S:
        """``rng`` itself if it already is such a stream set (its generators advance), else :meth:`from_seed`."""
        return rng if isinstance(rng, cls) else cls.from_seed(rng)
