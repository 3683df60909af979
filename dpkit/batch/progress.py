"""The progress of a batch in tasks, shown on its progress bar.

:class:`TaskProgress` counts a run that keeps its repetitions as that many tasks and the others as one, and moves
the bar as repetitions are kept, before their run finishes. :mod:`dpkit.batch.runner` uses it and sets how
often the kept repetitions are counted (:data:`dpkit.batch.runner.PROGRESS_POLL_S`).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from dpkit.batch.execute import kept_repetitions
from dpkit.batch.manifest import RunSpec, declared_parameters
from dpkit.batch.stale import checkpoint_folder
from dpkit.batch.status import total_repetitions

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["TaskProgress"]


class TaskProgress:
    """The progress of a batch in tasks, shown on its progress bar.

    A run that keeps its repetitions (its notebook declares ``CHECKPOINT_DIR``) and whose parameters give their
    number (:func:`~dpkit.batch.status.total_repetitions`, as ``status`` counts them) is that many tasks; any other
    run is one. A finished run counts all its tasks; one not finished, the repetitions kept in its checkpoint folder
    (:func:`~dpkit.batch.execute.kept_repetitions`), counted every ``poll_s`` seconds by a thread while the bar is
    shown (:meth:`shown_on`). The count shown never goes back.
    """

    def __init__(self, specs: list[RunSpec], out: Path) -> None:
        self._weight: dict[Path, int] = {}
        self._keep: dict[Path, Path] = {}  # the runs whose kept repetitions are counted: their checkpoint folders
        for s in specs:
            final = s.folder(out)
            n = total_repetitions(s) if "CHECKPOINT_DIR" in declared_parameters(s.notebook) else None
            self._weight[final] = n or 1
            if n:
                self._keep[final] = checkpoint_folder(s, final.parent)
        self._done: set[Path] = set()
        self._shown = 0
        self._lock = threading.Lock()
        self._bar: tqdm | None = None

    @property
    def total(self) -> int:
        """All the tasks of the runs."""
        return sum(self._weight.values())

    def count(self) -> int:
        """The tasks done: all those of the finished runs, and the kept repetitions of the others."""
        with self._lock:
            done = set(self._done)
        n = sum(w for f, w in self._weight.items() if f in done)
        for f, keep in self._keep.items():
            if f not in done:
                try:
                    n += min(kept_repetitions(keep), self._weight[f])
                except OSError:  # the folder changed while it was read (a run that just finished removes it)
                    pass
        return n

    def finished(self, spec: RunSpec, out: Path) -> None:
        """Count all the tasks of run ``spec`` as done."""
        with self._lock:
            self._done.add(spec.folder(out))
        self._show()

    def _show(self) -> None:
        if self._bar is None or self._bar.disable:
            return
        n = self.count()
        with self._lock:
            if n > self._shown:
                self._bar.update(n - self._shown)
                self._shown = n

    def _poll(self, stop: threading.Event, poll_s: float) -> None:
        while not stop.wait(poll_s):
            self._show()

    @contextmanager
    def shown_on(self, bar: tqdm, *, poll_s: float) -> Iterator[TaskProgress]:
        """Show the progress on ``bar``; while in the block, a daemon thread counts the kept repetitions every
        ``poll_s`` seconds (stopped and joined on the way out)."""
        self._bar = bar
        stop = threading.Event()
        thread = None
        if self._keep and not bar.disable:
            thread = threading.Thread(target=self._poll, args=(stop, poll_s), name="dpkit-batch-progress", daemon=True)
            thread.start()
        try:
            self._show()  # the repetitions an earlier attempt kept
            yield self
        finally:
            stop.set()
            if thread is not None:
                thread.join()
