"""Experiments: the one runner of the protocol and what is built on it.

* :mod:`~dpkit.experiments.protocol` — :func:`run_cell` (every method, one workload per repetition,
  exact answers once), :func:`cell_seed`, :class:`ReleaseRecord`;
* :mod:`~dpkit.experiments.thesis` — Tables 3.2/3.3 (the registry's ``trig-I``/``trig-II``);
* :mod:`~dpkit.experiments.sweeps` — κ and k sweeps (Figs 3.1/3.2);
* :mod:`~dpkit.experiments.baselines` — the baselines comparison and its written conclusion;
* :mod:`~dpkit.experiments.reference` — the thesis's printed numbers (data);
* :mod:`~dpkit.experiments.pca_compare` — diffprivlib's PCA against dpkit's PSI.
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
