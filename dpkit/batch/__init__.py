"""Batch layer: headless papermill runs of notebooks on Dask (:mod:`dpkit.batch.runner`: manifests in
:mod:`~dpkit.batch.manifest`, one notebook in :mod:`~dpkit.batch.execute`, a run's recorded outcome in
:mod:`~dpkit.batch.outcome`, run locks in :mod:`~dpkit.batch.locks`, stale runs in :mod:`~dpkit.batch.stale`,
repetitions as Dask tasks in :mod:`~dpkit.batch.repetitions`, where a batch stands in :mod:`~dpkit.batch.status`,
reading results back in :mod:`~dpkit.batch.results`), the checks summary (:mod:`dpkit.batch.checks`) and the assembler
of tables and the leaderboard (:mod:`dpkit.batch.assemble`); the command line is :mod:`dpkit.batch.cli`
(docs/guide/batch.md).
"""
from dpkit.batch.cli import main
from dpkit.batch.execute import execute_notebook, failure_message
from dpkit.batch.manifest import (
    BatchError,
    ManifestError,
    NotebookParameterError,
    NotebookParameterTypeError,
    RunSpec,
    check_parameters,
    expand_manifest,
    load_manifest,
    run_key,
)
from dpkit.batch.outcome import record_failure
from dpkit.batch.results import Problem, collect, scan_runs
from dpkit.batch.runner import run_manifest, run_one

__all__ = [
    "execute_notebook",
    "failure_message",
    "RunSpec",
    "load_manifest",
    "expand_manifest",
    "check_parameters",
    "run_key",
    "run_one",
    "record_failure",
    "run_manifest",
    "collect",
    "scan_runs",
    "Problem",
    "BatchError",
    "ManifestError",
    "NotebookParameterError",
    "NotebookParameterTypeError",
    "main",
]
