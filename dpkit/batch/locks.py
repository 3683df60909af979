"""One run at a time: a lock per run, and the clean-up of what interrupted runs left behind.

1. A run is locked with :func:`fcntl.flock` on ``.<key>.lock`` beside it; the kernel drops the lock when its holder
   dies, and lock files are never deleted (which keeps ``flock`` race-free).
2. A run executes into ``.<key>.tmp-<random>`` and is renamed into place; a replaced folder is moved aside first.
3. :func:`make_temporary` marks the runner's folders with :data:`MARKER`; :func:`clean_stale` removes only folders of
   exactly that name shape holding the marker whose lock is free, and leaves any other folder alone.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import time
import uuid
from pathlib import Path

__all__ = ["RunLock", "clean_stale", "stale_folders", "make_temporary", "mark_temporary", "unmark", "MARKER"]

#: the file the runner writes into every temporary folder it makes (and removes before installing one)
MARKER = ".dpkit-batch-temporary"
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?:tmp|old)-[0-9a-f]{8}")


class RunLock:
    """An exclusive, process-wide lock on one run (a context manager once :meth:`acquire` succeeded).

    Parameters
    ----------
    path : path-like
        The lock file, ``<output>/<stem>/.<key>.lock``; created if missing, never deleted.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def acquire(self, *, wait: bool = True, poll: float = 0.2, timeout: float | None = None) -> bool:
        """Take the lock; ``False`` if another process holds it and ``wait`` is false (or ``timeout`` passed)."""
        import fcntl  # POSIX only: imported here so that the rest of dpkit.batch imports everywhere

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        t0 = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not wait or (timeout is not None and time.monotonic() - t0 >= timeout):
                    os.close(fd)
                    return False
                time.sleep(poll)
        self._fd = fd
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
        return True

    def release(self) -> None:
        """Drop the lock (the file stays)."""
        if self._fd is not None:
            import fcntl

            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> str:
        """Who holds (or last held) the lock, as written in the lock file."""
        try:
            return self.path.read_text().strip() or "unknown process"
        except OSError:
            return "unknown process"

    def __enter__(self) -> RunLock:
        if not self.held:
            self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _name_of(name: str) -> str | None:
    """``.<name>.tmp-<8 hex>`` / ``.<name>.old-<8 hex>`` -> ``name``; anything else -> ``None``."""
    m = _TEMPORARY.fullmatch(name)
    return m.group("name") if m else None


def _key_of(name: str) -> str | None:
    """``.<key>.tmp-<8 hex>`` / ``.<key>.old-<8 hex>`` with a run key (12 hex digits) -> ``key``; else ``None``."""
    from dpkit.batch.results import is_run_key

    found = _name_of(name)
    return found if found is not None and is_run_key(found) else None


def mark_temporary(folder: Path, note: str = "") -> None:
    """Write the runner's :data:`MARKER` into ``folder`` (a temporary folder the runner made)."""
    (folder / MARKER).write_text(f"made by dpkit.batch; removed when its run is interrupted\n{note}")


def make_temporary(parent: Path, name: str, kind: str = "tmp") -> Path:
    """Create ``<parent>/.<name>.<kind>-<8 hex>`` holding the runner's :data:`MARKER`; return it."""
    folder = parent / f".{name}.{kind}-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    mark_temporary(folder)
    return folder


def unmark(folder: Path) -> None:
    """Remove the :data:`MARKER` from a temporary folder about to be renamed into place."""
    (folder / MARKER).unlink(missing_ok=True)


def stale_folders(parent: Path, name: str) -> list[Path]:
    """The temporary and moved-aside folders the runner made for ``name`` (a run key, or the folder name of a
    ``notebook`` run) below ``parent``: exact ``.<name>.tmp-<8 hex>``/``.<name>.old-<8 hex>`` names holding
    :data:`MARKER`."""
    return sorted(p for p in parent.glob(f".{name}.*-*")
                  if _name_of(p.name) == name and p.is_dir() and (p / MARKER).is_file())


def clean_stale(output: str | os.PathLike) -> list[Path]:
    """Remove the temporary folders of interrupted runs below ``output``; return what was removed.

    Only folders the runner made are removed: a run key's ``.<key>.tmp-<8 hex>``/``.<key>.old-<8 hex>``
    holding :data:`MARKER` (:func:`stale_folders`). A folder is only removed while its run's lock is free
    (taken without waiting), so a run in progress in another process keeps its temporary folder.
    """
    removed: list[Path] = []
    root = Path(output)
    keys = sorted({(p.parent, k) for p in root.glob("*/.*") if (k := _key_of(p.name)) and (p / MARKER).is_file()})
    for parent, key in keys:
        lock = RunLock(parent / f".{key}.lock")
        if not lock.acquire(wait=False):
            continue
        try:
            for p in stale_folders(parent, key):
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
        finally:
            lock.release()
    return removed
