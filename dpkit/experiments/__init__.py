"""Experiments: the one runner of the protocol (:mod:`~dpkit.experiments.protocol`) and what is built on it: Tables
3.2/3.3 (:mod:`~dpkit.experiments.thesis`), the sweeps (:mod:`~dpkit.experiments.sweeps`), the baselines
(:mod:`~dpkit.experiments.baselines`), the printed numbers (:mod:`~dpkit.experiments.reference`), the PCA
comparison (:mod:`~dpkit.experiments.pca_compare`), and the published tables and checks as data
(:mod:`~dpkit.experiments.tables_records`, :mod:`~dpkit.experiments.checks_records`).
"""
from dpkit.experiments.protocol import run_cell, run_cells
from dpkit.experiments.records import ReleaseRecord, as_methods, cell_seed, repetitions, shared_seed, width_independent
from dpkit.experiments.reference import PAPER_TABLE_3_2, PAPER_TABLE_3_3, PAPER_WORST_TIME, SIGMAS, paper_value
from dpkit.experiments.sweeps import parse_values, sweep, sweep_rows
from dpkit.experiments.thesis import run_table_cell, table_methods, table_rows

__all__ = [
    "ReleaseRecord",
    "as_methods",
    "cell_seed",
    "repetitions",
    "run_cell",
    "run_cells",
    "shared_seed",
    "width_independent",
    "PAPER_TABLE_3_2",
    "PAPER_TABLE_3_3",
    "PAPER_WORST_TIME",
    "SIGMAS",
    "paper_value",
    "parse_values",
    "sweep",
    "sweep_rows",
    "run_table_cell",
    "table_methods",
    "table_rows",
]
