"""Finished repetitions kept on disk, so that an interrupted run resumes where it stopped.

A long run of :func:`dpkit.experiments.protocol.run_cells` (a leaderboard data set: 30 repetitions of
every method at five σ, hours of work) loses everything when its kernel is killed, its worker dies or the
machine goes down. With a checkpoint folder, each finished repetition's records are written there
atomically (one file per repetition, a temporary file then a rename), and a later call with the same
inputs loads them instead of computing them again.

The numbers do not change: repetition ``i`` draws its workload and every method's stream from child
``i`` of the run's seed sequences (:mod:`dpkit.experiments.protocol`), never from a stream shared with
the other repetitions, so computing repetitions 0…k−1 in one process and k…R−1 in another gives the
records of one uninterrupted run to the bit (tested).

A checkpoint belongs to exactly one computation. Its *identity* is the data (a SHA-256 of the array),
the data set's name, the run seed, the σ's, the workload size, ``J``, every method's name and
``repr`` (all of its parameters), their order (the order of the records), the seeding scheme (a
repetition seeded by an older scheme, e.g. by a method's position in the list, is never reused) and the dpkit
sources (:func:`~dpkit.core.paths.library_fingerprint`: another version of the code never continues a
run). A folder
written for another identity is never reused or overwritten: opening it raises
:class:`CheckpointMismatchError`, naming the folder and the fields that differ.
The batch runner also records the notebook's fingerprint next to the checkpoint and treats a changed notebook or
library as stale (:mod:`dpkit.batch.runner`).
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpkit.core.paths import library_fingerprint, repetition_file, repetition_files, write_atomic
from dpkit.experiments.records import SEEDING

if TYPE_CHECKING:
    from dpkit.queries.release import Method

__all__ = ["CheckpointMismatchError", "RepetitionCheckpoint", "run_identity", "kept_seconds"]

_IDENTITY = "identity.json"


class CheckpointMismatchError(ValueError):
    """A checkpoint folder holds repetitions of a different computation."""


def run_identity(X: np.ndarray, *, methods: Mapping[str, Method], sigmas: Sequence[float], seed: int, dataset: str,
                 n_queries: int, J: int, supremum: str | None = "cube") -> dict[str, Any]:
    """The identity of a :func:`~dpkit.experiments.protocol.run_cells` computation (module docstring)."""
    data = np.ascontiguousarray(np.asarray(X, dtype=float))
    return {
        "dataset": str(dataset),
        "data_sha256": hashlib.sha256(data.tobytes()).hexdigest(),
        "data_shape": list(data.shape),
        "seed": int(seed),
        "sigmas": [float(s) for s in sigmas],
        "n_queries": int(n_queries),
        "J": int(J),
        "supremum": supremum,  # whether (and over which centres) the records carry the class supremum
        "methods": {str(name): repr(m) for name, m in methods.items()},
        "method_order": [str(name) for name in methods],  # the order of the records of a repetition
        "seeding": SEEDING,  # the seeding scheme: a repetition seeded otherwise is never reused
        "dpkit_sha256": library_fingerprint(),  # the code that computes the records
    }


def _digest(identity: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _differences(found: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    out = []
    for key in sorted(set(found) | set(wanted)):
        a, b = found.get(key), wanted.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            names = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            out.append(f"{key}: {', '.join(names[:6])}{' …' if len(names) > 6 else ''}")
        else:
            out.append(f"{key}: {a!r} there, {b!r} here")
    return out


class RepetitionCheckpoint:
    """A folder of finished repetitions (``rep-00000.pkl``, …) of one computation.

    Parameters
    ----------
    folder : path
        Created if missing. If it already holds repetitions, its ``identity.json`` must equal
        ``identity``; otherwise :class:`CheckpointMismatchError` is raised and nothing is touched.
    identity : dict
        :func:`run_identity` of the computation.

    Notes
    -----
    The files are pickles written by this class for this class: load only folders you wrote.
    """

    def __init__(self, folder: str | os.PathLike, identity: Mapping[str, Any]):
        self.folder = Path(folder)
        self.identity = dict(identity)
        self.digest = _digest(self.identity)
        self.folder.mkdir(parents=True, exist_ok=True)
        meta = self.folder / _IDENTITY
        if meta.is_file():
            try:
                found = json.loads(meta.read_text())
            except ValueError as exc:
                raise CheckpointMismatchError(f"checkpoint {self.folder}: unreadable {_IDENTITY} ({exc}); "
                                              "remove the folder to start afresh") from exc
            if _digest(found) != self.digest:
                raise CheckpointMismatchError(
                    f"checkpoint {self.folder} holds repetitions of a different run ("
                    + "; ".join(_differences(found, self.identity))
                    + "); it is not reused or overwritten: remove it, or pass another folder")
        else:
            write_atomic(meta, json.dumps(self.identity, indent=1, sort_keys=True))

    def _path(self, index: int) -> Path:
        return repetition_file(self.folder, index)

    def done(self) -> list[int]:
        """The indices of the repetitions kept so far, ascending."""
        return sorted(int(p.stem.split("-")[1]) for p in repetition_files(self.folder, recursive=False))

    def load(self, index: int) -> list[Any] | None:
        """The records of repetition ``index``, or ``None`` if it has not finished."""
        path = self._path(index)
        if not path.is_file():
            return None
        try:
            with path.open("rb") as fh:
                kept = pickle.load(fh)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError) as exc:
            raise CheckpointMismatchError(f"checkpoint file {path} is unreadable ({type(exc).__name__}: {exc}); "
                                          "remove it to compute that repetition again") from exc
        if not isinstance(kept, dict) or kept.get("digest") != self.digest or kept.get("index") != int(index):
            raise CheckpointMismatchError(f"checkpoint file {path} belongs to another run or repetition; "
                                          "remove it to compute that repetition again")
        return list(kept["records"])

    def save(self, index: int, records: Sequence[Any], *, seconds: float | None = None) -> None:
        """Keep repetition ``index``'s records (picklable, e.g. the ``RunRecord`` of :mod:`~dpkit.experiments.protocol`;
        atomically: a reader sees all of them or none), with the wall time it took to compute (``seconds``;
        see :func:`kept_seconds`)."""
        payload = {"digest": self.digest, "index": int(index), "records": list(records),
                   "seconds": None if seconds is None else float(seconds)}
        write_atomic(self._path(index), pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))


def kept_seconds(folder: str | os.PathLike) -> tuple[int, float | None]:
    """(repetitions kept, the sum of their compute wall times) below ``folder`` (all its data sets).

    The sum is what the run cost across all its attempts, which a resumed run's own wall time does not
    show; ``None`` when a file does not record its time (written before times were recorded).
    """
    n, total = 0, 0.0
    for path in repetition_files(folder):
        with path.open("rb") as fh:
            seconds = pickle.load(fh).get("seconds")
        n += 1
        total = None if seconds is None or total is None else total + float(seconds)
    return n, total
