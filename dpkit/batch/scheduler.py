"""Where a batch runs: the scheduler argument, the local Dask cluster and the client.

:func:`check_scheduler` accepts ``local``, ``sync`` or a Dask scheduler address; :func:`batch_client` gives no
client for ``sync``, else a Dask client (of a new single-threaded-worker :func:`_local_cluster` without a
dashboard for ``local``), closed afterwards. :func:`environ_restored` sets environment variables for a block and
restores them on exit (the in-process runs set the kernels' thread share; ``benchmarks/dask_scaling.py``).
"""
from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Iterator

from dpkit.batch.manifest import (
    BatchError,
)

if TYPE_CHECKING:
    from distributed import Client, LocalCluster

__all__ = ["check_scheduler", "probe_scheduler", "batch_client", "LOCAL_WORKER_CONFIG", "CONNECT_TIMEOUT"]

#: Seconds a Dask scheduler address has to accept a connection and answer Dask's ``identity`` request
#: (:func:`probe_scheduler`) before a batch gives up on it, naming the address.
CONNECT_TIMEOUT = 10.0


# --------------------------------------------------------------------------- batches
def check_scheduler(scheduler: str) -> str:
    """``local``, ``sync`` or a Dask scheduler address (``tcp://host:8786``, ``host:8786``); else a :class:`BatchError`."""
    import difflib
    import re

    if scheduler in ("local", "sync") or (isinstance(scheduler, str) and (
            re.fullmatch(r"[a-z][a-z0-9+.-]*://\S+", scheduler) or re.fullmatch(r"[^\s:/]+:\d+", scheduler))):
        return scheduler  # an address: probe_scheduler says if no Dask scheduler answers there (exit 2, naming it)
    close = difflib.get_close_matches(str(scheduler), ["local", "sync"], n=1)
    raise BatchError(f"--scheduler must be 'local', 'sync' or a Dask scheduler address such as tcp://host:8786; "
                     f"got {scheduler!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))


def probe_scheduler(address: str, *, timeout: float | None = None, what: str = "--scheduler") -> dict:
    """Ask ``address`` for Dask's ``identity`` within ``timeout`` seconds; return it if a Dask scheduler answers.

    ``distributed.Client(address)`` waits for a refused or unreachable address until its connect timeout, and on
    an address where something else listens (an HTTP server, say) it can wait forever for a handshake that never
    comes, or read the other protocol's bytes as a frame length and fail to allocate it. This probe bounds the
    whole exchange (connect, handshake, reply) with :func:`asyncio.wait_for`, in a thread of its own (so it also
    works where an event loop already runs, as in a Jupyter kernel), and turns every failure into one line.

    Parameters
    ----------
    address : str
        A Dask scheduler address (``tcp://host:8786`` or ``host:8786``).
    timeout : float, optional
        Seconds for the whole exchange; default :data:`CONNECT_TIMEOUT`.
    what : str
        Where the address came from, for the message (``--scheduler``, ``DPKIT_SCHEDULER``).

    Returns
    -------
    dict
        The scheduler's identity (``type``, ``id``, ``address``, ``workers``, ...).

    Raises
    ------
    BatchError
        Naming ``what`` and ``address``: nothing answered within ``timeout`` (refused, unreachable, silent), the
        answer was not Dask's protocol, or a Dask server other than a scheduler answered.
    """
    import asyncio
    import concurrent.futures

    limit = CONNECT_TIMEOUT if timeout is None else float(timeout)

    async def identity() -> dict:
        from distributed.core import rpc

        r = rpc(address, timeout=limit)
        try:
            return await r.identity()
        finally:
            await r.close_rpc()

    def ask() -> dict:
        return asyncio.run(asyncio.wait_for(identity(), limit))

    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="dpkit-probe-scheduler")
    try:
        info = pool.submit(ask).result(timeout=limit + 5.0)
    except (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError):
        raise BatchError(f"{what} {address}: no Dask scheduler answered within {limit:g} s (something listens there "
                         "but does not answer Dask's handshake, or nothing at all; check the address)") from None
    except OSError as exc:
        raise BatchError(f"{what} {address}: cannot connect to a Dask scheduler within {limit:g} s "
                         f"({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # another protocol's bytes read as Dask's: garbage frames, huge lengths, bad headers
        raise BatchError(f"{what} {address}: the server there does not speak Dask's protocol "
                         f"({type(exc).__name__}: {str(exc)[:120]})") from None
    finally:
        pool.shutdown(wait=False)
    kind = info.get("type") if isinstance(info, dict) else None
    if kind != "Scheduler":
        raise BatchError(f"{what} {address}: a Dask {kind or 'server'} answered, not a scheduler; give the "
                         "scheduler's address")
    return info


#: the Dask configuration the local cluster is made under (:func:`_local_cluster`): its nannies do not put
#: ``MALLOC_TRIM_THRESHOLD_`` into their workers' environment
LOCAL_WORKER_CONFIG: dict[str, None] = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


def _local_cluster(n_workers: int) -> LocalCluster:
    """A LocalCluster of ``n_workers`` single-threaded processes and no dashboard.

    ``dashboard_address=None`` alone still serves HTTP on port 8787 (distributed always starts the
    scheduler's HTTP server); it is bound to a free local port and stopped at once.

    Its nannies spawn their workers without distributed's ``MALLOC_TRIM_THRESHOLD_=65536``
    (``distributed.nanny.pre-spawn-environ``; a value in this process's own environment is still inherited).
    Setting that variable at all turns off glibc's dynamic mmap threshold [1]_, so every array above
    128 KiB is mapped and unmapped again, its pages faulted in anew: a CRM repetition of the tables then
    spends about five times as long in the kernel and takes about 1.4 times as long (the performance page).
    The numbers do not depend on it.

    References
    ----------
    .. [1] The GNU C Library, ``mallopt(3)``: ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` (setting either
       disables the dynamic adjustment of the mmap threshold).
    """
    import dask
    from dask.distributed import LocalCluster

    with dask.config.set(LOCAL_WORKER_CONFIG):  # the nannies read it once, when made; a restarted worker gets the same
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                               dashboard_address="127.0.0.1:0", worker_dashboard_address=None)
    http = getattr(cluster.scheduler, "http_server", None)
    if http is not None:
        async def _stop() -> None:
            http.stop()
            cluster.scheduler.services.pop("dashboard", None)

        cluster.sync(_stop)
        cluster.scheduler_info.get("services", {}).pop("dashboard", None)  # so dashboard_link is ""
    return cluster


@contextlib.contextmanager
def batch_client(scheduler: str, workers: int | None) -> Iterator[Client | None]:
    """``None`` for ``sync``, else a Dask client (of a new LocalCluster for ``local``), closed afterwards.

    An address is probed first (:func:`probe_scheduler`): an unreachable address, or one where something other than
    a Dask scheduler listens, is a :class:`BatchError` naming it within :data:`CONNECT_TIMEOUT` seconds.
    """
    if scheduler == "sync":
        yield None
        return
    import logging

    from dask.distributed import Client

    # a LocalCluster's nannies write their pre-spawn environment (OMP_NUM_THREADS=1, ...) into this process too:
    # put the caller's environment back afterwards, so that what runs here later is not changed by a batch
    saved = dict(os.environ)
    cluster = _local_cluster(workers or os.cpu_count() or 1) if scheduler == "local" else None
    try:
        if cluster is None:
            probe_scheduler(scheduler)  # one line naming the address, within CONNECT_TIMEOUT, instead of a hang
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        else:
            client = Client(cluster)
    except BaseException:
        if cluster is not None:
            cluster.close()
        _restore_environ(saved)
        raise
    try:
        yield client
    finally:
        # workers' heartbeats racing the shutdown log CommClosedError tracebacks: noise, not failures
        for name in ("distributed", "distributed.worker", "distributed.nanny", "distributed.core"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        client.close()
        if cluster is not None:
            cluster.close()
        _restore_environ(saved)


def _restore_environ(saved: dict[str, str]) -> None:
    """Make ``os.environ`` equal to ``saved`` again (variables added since are removed)."""
    for name in set(os.environ) - set(saved):
        del os.environ[name]
    for name, value in saved.items():
        if os.environ.get(name) != value:
            os.environ[name] = value
