"""Finished repetitions kept on disk, so that an interrupted run resumes where it stopped.

Each finished repetition of :func:`dpkit.experiments.protocol.run_cells` is written atomically to a checkpoint folder
and loaded instead of computed by a later call with the same inputs (docs/guide/batch.md, "Resuming a long run").

Guarantees
----------
1. The numbers do not change: repetition ``i`` draws every stream from child ``i`` of the run's seed sequences, so a
   run resumed in another process gives the records of one uninterrupted run to the bit.
2. A checkpoint belongs to one computation, its *identity*: the data's SHA-256 and name, the run seed, the σ's, the
   workload size, ``J``, every method's name and ``repr`` in order, the seeding scheme and the dpkit sources
   (:func:`~dpkit.core.paths.library_fingerprint`).
3. *Adoption* (:mod:`dpkit.experiments.adoption`): a folder that differs only in the sources is reused when the
   repetitions computed again with the current code equal the kept ones to the bit.

Errors: opening a folder of another identity, or a failed adoption, raises :class:`CheckpointMismatchError`, naming
the folder and the fields that differ; nothing is touched.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpkit.core.machine import numerics_machine
from dpkit.core.paths import library_fingerprint, repetition_file, repetition_files, write_atomic
from dpkit.core.validation import check_positive_int
from dpkit.experiments.adoption import ADOPTIONS, record_difference, verified_indices
from dpkit.experiments.records import SEEDING

if TYPE_CHECKING:
    from dpkit.queries.release import Method

__all__ = ["CheckpointMismatchError", "RepetitionCheckpoint", "run_identity", "kept_seconds", "kept_times",
           "kept_machines", "kept_meta", "machine_counts"]

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


def _only_sources_differ(found: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether two identities differ in the dpkit sources' fingerprint and in nothing else."""
    if not isinstance(found.get("dpkit_sha256"), str) or "dpkit_sha256" not in wanted:
        return False
    return _digest({**found, "dpkit_sha256": ""}) == _digest({**wanted, "dpkit_sha256": ""})


class RepetitionCheckpoint:
    """A folder of finished repetitions (``rep-00000.pkl``, …) of one computation.

    Parameters
    ----------
    folder : path
        Created if missing. If it already holds repetitions, its ``identity.json`` must equal
        ``identity``; otherwise :class:`CheckpointMismatchError` is raised and nothing is touched (but see
        ``verify``).
    identity : dict
        :func:`run_identity` of the computation.
    verify : callable, optional
        ``verify(i)``: repetition ``i``'s records computed now, with the current code. Given, a folder whose
        identity differs from ``identity`` only in ``dpkit_sha256`` is *adopted* (module docstring): the
        repetitions ``verify_at`` are computed again and compared with the kept ones
        (:func:`~dpkit.experiments.adoption.record_difference`); if all are equal to the bit (measured times
        aside) the folder passes to ``identity``, else :class:`CheckpointMismatchError` names the first difference
        and nothing is touched. Any other difference raises as without ``verify``.
    verify_at : sequence of int, or int, optional
        The kept repetitions computed again to adopt a folder (default: the lowest and the highest kept index); an
        int ``n``: ``n`` kept indices evenly spread from the lowest to the highest
        (:func:`~dpkit.experiments.adoption.verified_indices`; 2 is the default).

    Notes
    -----
    The files are pickles written by this class for this class: load only folders you wrote.
    """

    def __init__(self, folder: str | os.PathLike, identity: Mapping[str, Any], *,
                 verify: Callable[[int], Sequence[Any]] | None = None, verify_at: Sequence[int] | int | None = None):
        self.folder = Path(folder)
        self.identity = dict(identity)
        self.digest = _digest(self.identity)
        self._warned_machine = False
        self.folder.mkdir(parents=True, exist_ok=True)
        meta = self.folder / _IDENTITY
        if meta.is_file():
            try:
                found = json.loads(meta.read_text())
            except ValueError as exc:
                raise CheckpointMismatchError(f"checkpoint {self.folder}: unreadable {_IDENTITY} ({exc}); "
                                              "remove the folder to start afresh") from exc
            if _digest(found) == self.digest:
                return
            if verify is not None and isinstance(found, dict) and _only_sources_differ(found, self.identity):
                self._adopt(found, verify, verify_at)
                return
            raise CheckpointMismatchError(
                f"checkpoint {self.folder} holds repetitions of a different run ("
                + "; ".join(_differences(found, self.identity))
                + "); it is not reused or overwritten: remove it, or pass another folder")
        else:
            write_atomic(meta, json.dumps(self.identity, indent=1, sort_keys=True))

    def _adopt(self, found: dict[str, Any], verify: Callable[[int], Sequence[Any]],
               verify_at: Sequence[int] | int | None) -> None:
        """Pass the folder from identity ``found`` (other dpkit sources) to ``self.identity`` if the repetitions
        ``verify_at`` computed now equal the kept ones; raise naming the first difference otherwise."""
        old, new = str(found["dpkit_sha256"]), str(self.identity["dpkit_sha256"])
        kept = self.done()
        if verify_at is None:
            indices = sorted({kept[0], kept[-1]}) if kept else []
        elif isinstance(verify_at, (int, np.integer)):
            indices = verified_indices(kept, check_positive_int(verify_at, name="verify_at"))
        else:
            indices = sorted({int(i) for i in verify_at})
            if not set(indices) <= set(kept):
                raise ValueError(f"verify_at must name kept repetitions of {self.folder} (kept: {kept}); "
                                 f"got {list(verify_at)}")
        # a file written again by an adoption that was cut off already carries the new identity's digest
        payloads = {i: self._read(i, (_digest(found), self.digest)) for i in kept}
        for i in indices:
            why = record_difference(payloads[i]["records"], list(verify(i)))
            if why:
                raise CheckpointMismatchError(
                    f"checkpoint {self.folder}: repetition {i} computed again by dpkit {new} differs from the one "
                    f"kept by dpkit {old} ({why}); the kept repetitions are not adopted and nothing was changed: "
                    "start afresh with --stale rerun (the batch moves them to <output>/.superseded/, not deleted)")
        write_atomic(self.folder / f"identity-{old[:12]}.json", (self.folder / _IDENTITY).read_bytes())
        for i, payload in payloads.items():  # the machine that computed it stays recorded (or unrecorded)
            self._write(i, payload["records"], payload.get("seconds"), machine=payload.get("machine"))
        log = self.folder / ADOPTIONS
        entries = json.loads(log.read_text()) if log.is_file() else []
        entries.append({"from": old, "to": new, "verified": indices, "adopted": len(kept),
                        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        write_atomic(log, json.dumps(entries, indent=1))
        write_atomic(self.folder / _IDENTITY, json.dumps(self.identity, indent=1, sort_keys=True))
        print(f"checkpoint {self.folder}: adopted {len(kept)} repetition(s) kept by dpkit {old} for dpkit {new}: "
              f"repetition(s) {indices} computed again are equal to the bit (times aside); logged in {log}",
              file=sys.stderr)

    def _path(self, index: int) -> Path:
        return repetition_file(self.folder, index)

    def done(self) -> list[int]:
        """The indices of the repetitions kept so far, ascending."""
        return sorted(int(p.stem.split("-")[1]) for p in repetition_files(self.folder, recursive=False))

    def _read(self, index: int, digests: tuple[str, ...]) -> dict[str, Any]:
        path = self._path(index)
        kept = _unpickle(path)
        if not isinstance(kept, dict) or kept.get("digest") not in digests or kept.get("index") != int(index):
            raise CheckpointMismatchError(f"checkpoint file {path} belongs to another run or repetition; "
                                          "remove it to compute that repetition again")
        return kept

    def load(self, index: int) -> list[Any] | None:
        """The records of repetition ``index``, or ``None`` if it has not finished.

        A repetition kept by another kind of machine (:func:`~dpkit.core.machine.numerics_machine`: another processor
        or other numpy kernels) is loaded with a ``RuntimeWarning``, once per checkpoint: its records are correct,
        but their last bits need not be those the running machine computes, so the run mixes two machines' numbers."""
        if not self._path(index).is_file():
            return None
        kept = self._read(index, (self.digest,))
        other, here = kept.get("machine"), numerics_machine()
        if other is not None and other != here and not self._warned_machine:
            self._warned_machine = True
            warnings.warn(f"checkpoint {self.folder}: kept repetition {index} was computed on another kind of machine "
                          f"({other}; the running one: {here}); its records are loaded, correct but not necessarily "
                          "with the bits the running machine computes, so this run mixes two machines' numbers "
                          "(run.json lists them under checkpoint.machines)", RuntimeWarning, stacklevel=2)
        return list(kept["records"])

    def save(self, index: int, records: Sequence[Any], *, seconds: float | None = None) -> None:
        """Keep repetition ``index``'s records (picklable, e.g. the ``ReleaseRecord`` of :mod:`~dpkit.experiments.protocol`;
        atomically: a reader sees all of them or none), with the wall time it took to compute (``seconds``;
        see :func:`kept_seconds`)."""
        self._write(index, records, None if seconds is None else float(seconds), machine=numerics_machine())

    def _write(self, index: int, records: Sequence[Any], seconds: float | None, *, machine: str | None) -> None:
        """Write repetition ``index``; ``machine``: the one that computed it (``None``: unrecorded, a file from before
        machines were recorded, kept so by an adoption)."""
        payload = {"digest": self.digest, "index": int(index), "records": list(records), "seconds": seconds,
                   "machine": machine}
        write_atomic(self._path(index), pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))


def _unpickle(path: Path) -> Any:
    """The payload of the kept repetition ``path``; a file that cannot be read back (truncated, or pickled by a dpkit
    whose record classes have other names) raises :class:`CheckpointMismatchError` naming it, in one line."""
    try:
        with path.open("rb") as fh:
            return pickle.load(fh)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError) as exc:
        raise CheckpointMismatchError(f"checkpoint file {path} is unreadable ({type(exc).__name__}: {exc}); "
                                      "remove it to compute that repetition again") from exc


def kept_meta(folder: str | os.PathLike) -> list[dict[str, Any]]:
    """``{"seconds", "machine"}`` of each kept repetition below ``folder`` (all its data sets), in file order, each
    file read once: the compute wall time it recorded (``None``: written before times were recorded) and the machine
    that computed it (:func:`~dpkit.core.machine.numerics_machine`; ``"unrecorded"``: written before machines were).
    A file that cannot be read back raises :class:`CheckpointMismatchError` naming it."""
    out: list[dict[str, Any]] = []
    for path in repetition_files(folder):
        kept = _unpickle(path)
        seconds = kept.get("seconds") if isinstance(kept, dict) else None
        out.append({"seconds": None if seconds is None else float(seconds), "machine": kept.get("machine") or "unrecorded"})
    return out


def kept_times(folder: str | os.PathLike) -> list[float | None]:
    """The compute wall time each kept repetition below ``folder`` recorded, in file order (:func:`kept_meta`)."""
    return [m["seconds"] for m in kept_meta(folder)]


def machine_counts(meta: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many of the kept repetitions ``meta`` (:func:`kept_meta`) each kind of machine computed."""
    out: dict[str, int] = {}
    for m in meta:
        out[m["machine"]] = out.get(m["machine"], 0) + 1
    return out


def kept_machines(folder: str | os.PathLike) -> dict[str, int]:
    """How many kept repetitions below ``folder`` each kind of machine computed (:func:`kept_meta`)."""
    return machine_counts(kept_meta(folder))


def kept_seconds(folder: str | os.PathLike) -> tuple[int, float | None]:
    """(repetitions kept, the sum of their compute wall times) below ``folder`` (all its data sets).

    The sum is what the run cost across all its attempts, which a resumed run's own wall time does not
    show; ``None`` when a file does not record its time (written before times were recorded).
    """
    times = kept_times(folder)
    total: float | None = 0.0
    for seconds in times:
        total = None if seconds is None or total is None else total + seconds
    return len(times), total
