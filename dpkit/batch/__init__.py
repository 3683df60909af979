"""Batch layer: headless papermill runs of notebooks on Dask (:mod:`dpkit.batch.runner`), the
checks summary over a results folder (:mod:`dpkit.batch.checks`) and the benchmarks
(:mod:`dpkit.batch.bench`). ``python -m dpkit.batch`` is the runner's command line."""
from dpkit.batch.runner import (
    RunSpec,
    collect,
    execute_notebook,
    expand_manifest,
    load_manifest,
    main,
    run_key,
    run_manifest,
    run_one,
)

__all__ = [
    "execute_notebook",
    "RunSpec",
    "load_manifest",
    "expand_manifest",
    "run_key",
    "run_one",
    "run_manifest",
    "collect",
    "main",
]
