"""Benchmarks of dpkit, run from the repository root (README.md): ``python -m benchmarks.bench``,
``python -m benchmarks.bench_truth``."""
