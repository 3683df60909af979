"""Thread shares: how many threads each of several concurrent processes may use, and the environment that holds a
new process to its share.

Several processes that compute at once on one machine (the Dask workers of a batch, the worker processes of
:func:`~dpkit.experiments.protocol.run_cells`) split its cores: ``share = max(1, cores // slots)``
(:func:`thread_share`). A process started with :func:`thread_environ`'s variables keeps to its share in every
library that reads them when it loads:

* ``DPKIT_THREADS``: the Gaussian-kernel evaluator's worker threads (:func:`dpkit.queries.gemm.usable_cores`, read at
  every call);
* ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``VECLIB_MAXIMUM_THREADS`` and
  ``NUMEXPR_NUM_THREADS`` (:data:`BLAS_VARIABLES`): BLAS and its kin;
* for a share of one, ``--xla_cpu_multi_thread_eigen=false`` in ``XLA_FLAGS``: JAX (used by ``mbi``).

The evaluator's results do not depend on its thread count (the same numbers to the bit). A threaded BLAS's do: it
splits its sums by its thread count. :func:`one_blas_thread` holds BLAS and LAPACK to one thread around a function
(every release of dpkit's methods, the low-rank embedding's fit), so its bits are the same on any machine setting.
"""
from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import ParamSpec, TypeVar

__all__ = ["BLAS_VARIABLES", "thread_share", "thread_environ", "environ_restored", "one_blas_thread"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: The variables the BLAS libraries (OpenBLAS, MKL, Accelerate, OpenMP) and numexpr read for their thread count.
BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                  "NUMEXPR_NUM_THREADS")
_EIGEN_FLAG = "--xla_cpu_multi_thread_eigen"


def thread_share(cores: int, slots: int) -> int:
    """Threads for each of ``slots`` concurrent processes (or runs) on ``cores`` cores: ``max(1, cores // slots)``."""
    return max(1, int(cores) // max(1, int(slots)))


def thread_environ(threads: int, xla_flags: str | None = None) -> dict[str, str]:
    """Environment variables that hold a new process to ``threads`` threads (see the module docstring).

    ``xla_flags`` is the ``XLA_FLAGS`` to extend (default: this process's); its own
    ``--xla_cpu_multi_thread_eigen`` setting is replaced.
    """
    n = str(int(threads))
    env = {"DPKIT_THREADS": n, **{var: n for var in BLAS_VARIABLES}}
    flags = os.environ.get("XLA_FLAGS", "") if xla_flags is None else xla_flags
    kept = [f for f in flags.split() if not f.startswith(_EIGEN_FLAG)]
    env["XLA_FLAGS"] = " ".join(kept + ([f"{_EIGEN_FLAG}=false"] if int(threads) == 1 else []))
    return env


@contextlib.contextmanager
def environ_restored(names: Iterable[str] = (), /, **values: str | None) -> Iterator[None]:
    """Within the block, set the environment variables ``values`` (``None``: unset); on exit, put them and the
    variables ``names`` back as they were on entry (set to their value, or unset).

    ``with environ_restored(["OMP_NUM_THREADS"]):`` lets the block change ``OMP_NUM_THREADS`` for what it starts,
    and not for the caller; ``with environ_restored(**thread_environ(1)):`` starts processes held to one thread.
    """
    saved = {n: os.environ.get(n) for n in [*names, *values]}
    try:
        _put(values)
        yield
    finally:
        _put(saved)


def _put(values: Mapping[str, str | None]) -> None:
    """Set each variable of ``values`` in this process's environment (``None``: unset it)."""
    for n, v in values.items():
        if v is None:
            os.environ.pop(n, None)
        else:
            os.environ[n] = v


def one_blas_thread(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorate ``fn`` to run with BLAS and LAPACK held to one thread (``threadpoolctl``).

    A threaded BLAS splits a product's or a factorisation's sums by its thread count, so the same call gives other
    last bits with one thread (a batch task's share) than with every core (a notebook). Held to one thread, ``fn``
    gives the same bits on either; the caller's setting is restored afterwards.
    """

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        from threadpoolctl import threadpool_limits  # a scikit-learn dependency

        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return wrapper
