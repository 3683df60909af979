"""Seed 004 experiment runners: structure and accuracy parity of the rows (never absolute times)."""
from __future__ import annotations

import numpy as np
import pytest

from dpkit.claims.consistency_study import (
    TIMING_METHODS,
    convergence_study,
    loglog_slope,
    machine_info,
    speed_ratios,
    timing_study,
)


def test_timing_study_rows_and_parity():
    rows = timing_study([8, 16], methods=TIMING_METHODS, tol=1e-6, max_T={"pinv": 8}, rng=0)
    got = {(r.T, r.method) for r in rows}
    assert (16, "pinv") not in got and (8, "pinv") in got  # max_T respected
    assert len(rows) == 2 * len(TIMING_METHODS) - 1
    for r in rows:
        assert r.total_s == pytest.approx(r.build_s + r.solve_s)
        if r.method not in ("algorithm1", "algorithm1-100"):
            assert r.dist_inf < 1e-8 and r.resid_inf < 1e-8  # exact methods agree with the closed form
    alg = [r for r in rows if r.method == "algorithm1"]
    assert all(r.converged and r.n_iter > 1 for r in alg)
    ratios = speed_ratios(rows, "pinv", "closed-form")
    assert set(ratios) == {8} and ratios[8] > 0
    # budget: any positive time exceeds a zero budget, so only the first T is run per method
    rows_b = timing_study([8, 16], methods=("closed-form",), time_budget=0.0, rng=0)
    assert [r.T for r in rows_b] == [8]
    with pytest.raises(ValueError, match="methods"):
        timing_study([8], methods=("cvx",))


def test_convergence_study_shapes_and_same_seed():
    a = convergence_study([8, 13], n_iter=5, repeats=2, rng=1)
    b = convergence_study([8, 13], n_iter=5, repeats=2, rng=1)
    assert [r.T for r in a] == [8, 13]
    for ra, rb in zip(a, b):
        assert ra.mse.shape == (6,) and ra.err.shape == (6,)
        assert np.array_equal(ra.err, rb.err)
        assert ra.leaf_gap_iter1 < 1e-9
        assert ra.err[-1] >= ra.err_opt - 1e-9  # the optimum has the smallest all-node error (Thm 4)


def test_loglog_slope_and_machine_info():
    assert loglog_slope([1, 2, 4, 8], [3, 24, 192, 1536]) == pytest.approx(3.0)
    assert np.isnan(loglog_slope([1], [1]))
    info = machine_info()
    assert {"cpu_model", "numpy", "scipy"} <= set(info)
