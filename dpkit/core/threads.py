"""Thread shares: how many threads each of several concurrent processes may use, and the environment that holds a
new process to its share.

1. :func:`thread_share`: processes computing at once on one machine split its cores, ``share = max(1, cores // slots)``.
2. :func:`thread_environ`: the variables that hold a new process to its share (``DPKIT_THREADS``,
   :data:`BLAS_VARIABLES`, and for a share of one ``XLA_FLAGS``).
3. :func:`one_blas_thread`: BLAS and LAPACK held to one thread around a function (every release, the low-rank fit),
   since a threaded BLAS splits its sums by its thread count; :func:`limit_threads` is the one way dpkit changes the
   loaded libraries' thread pools (a kept ``threadpoolctl`` controller, renewed after new imports).

Guarantee: no result of dpkit depends on a thread count (the evaluator sums in a fixed order; BLAS runs on one
thread inside a release).
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ContextManager, ParamSpec, TypeVar

from dpkit.core.validation import check_choice, check_int_in_range

__all__ = ["BLAS_VARIABLES", "thread_share", "thread_environ", "environ_restored", "limit_threads", "one_blas_thread"]

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


#: The kept controller and the number of imported modules when it was made (:func:`limit_threads`).
_CONTROLLER: tuple[int, Any] | None = None


def _controller() -> Any:
    """A ``threadpoolctl.ThreadpoolController`` of the libraries loaded now (made again after any new import)."""
    global _CONTROLLER
    from threadpoolctl import ThreadpoolController  # a scikit-learn dependency

    modules = len(sys.modules)
    kept = _CONTROLLER
    if kept is None or kept[0] != modules:
        kept = _CONTROLLER = (modules, ThreadpoolController())
    return kept[1]


def limit_threads(limits: int = 1, *, user_api: str | None = "blas") -> ContextManager[Any]:
    """A context manager that holds the thread pools of ``user_api`` to ``limits`` threads and restores them on exit.

    Parameters
    ----------
    limits : int
        The thread count, ≥ 1.
    user_api : {"blas", "openmp"} or None
        The pools to limit: BLAS and LAPACK (default), OpenMP, or every pool (None), as ``threadpoolctl``'s
        ``threadpool_limits(limits, user_api)``, with the same effect.

    Raises
    ------
    TypeError
        ``limits`` is not an integer.
    ValueError
        ``limits`` is below 1, or ``user_api`` is not one of the choices.
    """
    n = check_int_in_range(limits, name="limits", low=1)
    if user_api is not None:
        check_choice(user_api, name="user_api", choices=("blas", "openmp"))
    return _controller().limit(limits=n, user_api=user_api)


def one_blas_thread(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorate ``fn`` to run with BLAS and LAPACK held to one thread (``threadpoolctl``).

    A threaded BLAS splits a product's or a factorisation's sums by its thread count, so the same call gives other
    last bits with one thread (a batch task's share) than with every core (a notebook). Held to one thread, ``fn``
    gives the same bits on either; the caller's setting is restored afterwards.
    """

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with limit_threads(1):
            return fn(*args, **kwargs)

    return wrapper
