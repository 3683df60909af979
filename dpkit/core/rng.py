"""Randomness: one keyword ``rng`` everywhere, never global state.

Every public function that draws takes ``rng`` (an int, a Generator, a SeedSequence or ``None``), resolved by
:func:`resolve_rng`; repetitions take child streams from one SeedSequence with :func:`spawn`, so a seed gives the same
output bit for bit and repetition ``i`` does not depend on how many run.
"""
from __future__ import annotations

from typing import Union

import numpy as np

RNGLike = Union[int, np.integer, np.random.Generator, np.random.SeedSequence, None]

__all__ = ["RNGLike", "resolve_rng", "spawn", "spawn_seeds"]


def resolve_rng(rng: RNGLike = None) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``rng``.

    Parameters
    ----------
    rng : int, Generator, SeedSequence or None
        A seed, an existing generator (returned as is, so the caller's stream
        advances), a seed sequence, or ``None`` for fresh OS entropy.

    Raises
    ------
    TypeError
        If ``rng`` is of another type (e.g. a float or the legacy ``RandomState``).
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer, np.random.SeedSequence)):
        if isinstance(rng, bool):
            raise TypeError("rng must be int, numpy Generator, SeedSequence or None; got bool")
        if isinstance(rng, (int, np.integer)) and rng < 0:
            raise ValueError(f"rng seed must be a non-negative integer; got {rng}")
        return np.random.default_rng(rng)
    raise TypeError(
        "rng must be int, numpy.random.Generator, numpy.random.SeedSequence or None; "
        f"got {type(rng).__name__}"
    )


def spawn_seeds(rng: RNGLike, n: int) -> list[np.random.SeedSequence]:
    """Return ``n`` independent child :class:`SeedSequence` objects of ``rng``.

    An int or ``None`` seeds a new :class:`SeedSequence`; a :class:`Generator`
    contributes its bit generator's seed sequence via ``Generator.spawn``-style
    derivation (a child sequence drawn from the generator, so the parent advances).
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative integer; got {n!r}")
    if isinstance(rng, np.random.SeedSequence):
        ss = rng
    elif isinstance(rng, np.random.Generator):
        ss = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
    elif rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        resolve_rng(rng)  # validates the seed
        ss = np.random.SeedSequence(rng)
    else:
        raise TypeError(
            "rng must be int, numpy.random.Generator, numpy.random.SeedSequence or None; "
            f"got {type(rng).__name__}"
        )
    return ss.spawn(int(n))


def spawn(rng: RNGLike, n: int) -> list[np.random.Generator]:
    """Return ``n`` independent generators spawned from one seed sequence.

    ``spawn(seed, n)[i]`` is the same stream whatever ``n`` is (for ``n > i``).
    """
    return [np.random.default_rng(s) for s in spawn_seeds(rng, n)]
