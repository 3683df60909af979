"""Dask workers of a batch: their thread share, and a start-of-batch check that each sees the notebooks and output.

1. Thread share: the cores of a worker's CPU affinity mask (:func:`~dpkit.queries.gemm.usable_cores`) are split
   between the task slots that share them, ``share = max(1, cores // slots)``; the kernels a worker starts get it
   through :func:`~dpkit.core.threads.thread_environ` (``DPKIT_THREADS``, the BLAS variables, ``XLA_FLAGS``). The
   share never changes a number.
2. Start-of-batch check: :func:`check_workers` runs :func:`probe_worker` on every worker, which reads a token file the
   batch wrote into the output folder, writes its own, and reads each notebook.

Errors: the first problem is a :class:`~dpkit.batch.manifest.BatchError` naming the worker and the path; a worker
with ``MALLOC_TRIM_THRESHOLD_`` in its environment gets a ``RuntimeWarning`` (docs/guide/batch.md says why and how to
configure the workers).
"""
from __future__ import annotations

import os
import socket
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpkit.batch.manifest import BatchError, notebook_fingerprint
from dpkit.core.threads import thread_share

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["slot_key", "probe_worker", "check_workers", "worker_share", "cluster_shares", "warn_malloc_trim"]

def _mask() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return list(range(os.cpu_count() or 1))


def slot_key() -> str:
    """This machine and CPU affinity mask (``host:0,1``): the workers that share them share their cores."""
    return f"{socket.gethostname()}:{','.join(map(str, _mask()))}"


def _nthreads(worker: Any) -> int:
    state = getattr(worker, "state", None)
    return int(getattr(state, "nthreads", None) or getattr(worker, "nthreads", 1) or 1)


def probe_worker(output: str, token_name: str, token: str, notebooks: dict[str, str], dask_worker: Any = None
                 ) -> dict[str, Any]:
    """Run on a worker: its slot key, cores and threads, and the first problem it has with the batch's files.

    ``problem`` is ``None`` when the worker reads ``token`` from ``<output>/<token_name>``, can create a file
    in ``output`` and reads every notebook of ``notebooks`` (path → fingerprint) with the same fingerprint.
    """
    info: dict[str, Any] = {**_slot_info(dask_worker), "cwd": os.getcwd(), "problem": None}
    out = Path(output)
    try:
        seen = (out / token_name).read_text()
    except OSError as exc:
        seen = f"unreadable ({type(exc).__name__}: {exc.strerror or exc})"
    if seen != token:
        info["problem"] = (f"does not see the output folder {out} of this batch (the file {token_name} the batch "
                           f"wrote there is {'missing' if not (out / token_name).exists() else seen!s}); "
                           "it must be the same folder at the same path on every worker (a shared file system)")
        return info
    try:
        with tempfile.NamedTemporaryFile(dir=out, prefix=".worker-write-test-"):
            pass
    except OSError as exc:
        info["problem"] = f"cannot write to the output folder {out}: {type(exc).__name__}: {exc.strerror or exc}"
        return info
    for path, fingerprint in notebooks.items():
        try:
            theirs = notebook_fingerprint(path)
        except (OSError, ValueError) as exc:
            info["problem"] = f"cannot read the notebook {path}: {type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}"
            return info
        if theirs != fingerprint:
            info["problem"] = (f"sees another version of the notebook {path} (cells {theirs}, here {fingerprint}); "
                               "every worker must read the same notebooks at the same paths")
            return info
    return info


def check_workers(client: Client, notebooks: list[Path], output: Path) -> dict[str, int]:
    """Check every worker of ``client`` (:func:`probe_worker`); return the thread share of each slot key.

    Raises
    ------
    BatchError
        One line naming the first worker with a problem and the path (and how many others have one), or that
        the cluster has no worker.
    """
    fingerprints = {str(p): notebook_fingerprint(p) for p in sorted(set(notebooks))}
    token_name, token = f".worker-check-{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
    path = Path(output) / token_name
    path.write_text(token)
    try:
        infos = client.run(probe_worker, str(output), token_name, token, fingerprints)
    finally:
        path.unlink(missing_ok=True)
    if not infos:
        raise BatchError(f"the Dask cluster at {client.scheduler.address} has no worker")
    bad = [(addr, i) for addr, i in sorted(infos.items()) if i["problem"]]
    if bad:
        addr, i = bad[0]
        more = f" (and {len(bad) - 1} more worker(s))" if len(bad) > 1 else ""
        raise BatchError(f"Dask worker {addr} (working directory {i['cwd']}) {i['problem']}{more}")
    warn_malloc_trim(infos, stacklevel=3)
    return _shares(infos.values())


def warn_malloc_trim(infos: dict[str, dict[str, Any]], *, stacklevel: int = 2) -> None:
    """A ``RuntimeWarning`` if a worker's probe (``infos``: address → :func:`probe_worker`'s or the slot info) saw
    ``MALLOC_TRIM_THRESHOLD_`` in its environment (module docstring), naming how many and the first."""
    trimmed = sorted(addr for addr, i in infos.items() if i.get("malloc_trim") is not None)
    if trimmed:
        warnings.warn(f"{len(trimmed)} of {len(infos)} Dask workers (first: {trimmed[0]}) run with MALLOC_TRIM_THRESHOLD_="
                      f"{infos[trimmed[0]]['malloc_trim']} (distributed's nanny sets it by default), which turns off glibc's "
                      "dynamic mmap threshold: their runs take about 1.4 times as long (the same numbers). Start the "
                      "workers without it: the batch guide's Dask configuration (\"Several machines\"), or for a Client "
                      "made in a notebook, dask.config.set({'distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_': "
                      "None}) before making it", RuntimeWarning, stacklevel=stacklevel)


def _shares(infos: Any) -> dict[str, int]:
    """The thread share of each slot key from the workers' ``slot``, ``cores`` and ``nthreads``."""
    slots: dict[str, int] = {}
    cores: dict[str, int] = {}
    for i in infos:
        slots[i["slot"]] = slots.get(i["slot"], 0) + i["nthreads"]
        cores[i["slot"]] = min(cores.get(i["slot"], i["cores"]), i["cores"])
    return {key: thread_share(cores[key], n) for key, n in slots.items()}


def _slot_info(dask_worker: Any = None) -> dict[str, Any]:
    return {"slot": slot_key(), "cores": len(_mask()), "nthreads": _nthreads(dask_worker) if dask_worker is not None else 1,
            "malloc_trim": os.environ.get("MALLOC_TRIM_THRESHOLD_")}


def cluster_shares(client: Client) -> dict[str, int]:
    """The thread share of each slot key of ``client``'s workers now (as :func:`check_workers`, without its file
    checks, with its warning of ``MALLOC_TRIM_THRESHOLD_``): what each of a worker's task slots may use
    (:func:`worker_share`)."""
    infos = client.run(_slot_info)
    warn_malloc_trim(infos, stacklevel=3)
    return _shares(infos.values())


def worker_share(shares: dict[str, int], worker: Any) -> int:
    """The thread share of the worker running this task: its slot's (:func:`check_workers`); a worker that joined
    after the check (another machine or mask) takes its cores over its own threads."""
    key = slot_key()
    return shares[key] if key in shares else thread_share(len(_mask()), _nthreads(worker))
