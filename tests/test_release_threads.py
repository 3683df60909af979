"""A record does not depend on how many threads BLAS may use: the runner releases with BLAS held to one thread, as a
batch task's thread share does, so a notebook using every core gives the batch's bits for the same seed.

Without it, a Gaussian fit's covariance and samples (``gauss-analyze-gauss``, the Gaussian candidates of MWEM and the
LPs) and the random-feature answers of ``kme-answers-eps`` moved in their last bits with OpenBLAS's thread count at
CRM's size (d = 101, n ≈ 2,000), and with them every error of the record.
"""
from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from dpkit.board.report import board_methods
from dpkit.experiments import run_cell
from dpkit.queries.release import MethodBase


def _records(blas_threads: int) -> list[tuple[float, float]]:
    X = np.round(np.random.default_rng(5).uniform(-1.0, 1.0, (2000, 101)) * 10) / 10
    fit = board_methods(["gauss-analyze-gauss"], epsilon=1.0, delta=1e-3)["gauss-analyze-gauss"]

    class Unheld(type(fit)):  # an entrant's release that does not hold BLAS itself: only the runner does
        release = MethodBase.release.__wrapped__

    methods = {"gauss-analyze-gauss": Unheld(**fit.fields())}
    with threadpool_limits(limits=blas_threads, user_api="blas"):
        recs = run_cell(X, methods=methods, sigma=4.0, reps=1, n_queries=50, rng=3, supremum=None)
    return [(r.abs, r.rel) for r in recs]


def test_records_are_the_same_bits_with_one_or_four_blas_threads():
    assert _records(1) == _records(4)


def _direct(name: str, blas_threads: int) -> tuple[bytes, bytes]:
    X = np.round(np.random.default_rng(5).uniform(-1.0, 1.0, (2000, 101)) * 10) / 10
    method = board_methods([name], epsilon=1.0, delta=1e-3)[name]
    with threadpool_limits(limits=blas_threads, user_api="blas"):
        rel = method.release(X, rng=7)
    return rel.synthetic.points.tobytes(), rel.synthetic.weights.tobytes()


def test_a_direct_release_is_the_same_bits_with_one_or_four_blas_threads():
    """Every dpkit method's ``release`` holds BLAS to one thread itself (:func:`dpkit.core.threads.one_blas_thread`),
    so a release called outside the runner gives the runner's bits too: a Gaussian fit (the template release) and
    MWEM with Gaussian candidates (its own release)."""
    for name in ("gauss-analyze-gauss", "mwem-gaussian"):
        assert _direct(name, 1) == _direct(name, 4), name


# ----------------------------------------------------------------------------- the limit itself
def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_limit_threads_holds_blas_to_its_limit_and_restores_the_caller_s():
    from dpkit.core.threads import limit_threads

    with threadpool_limits(limits=2, user_api="blas"):
        assert set(_blas_threads()) == {2}
        with limit_threads(1):
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {2}


def test_limit_threads_keeps_its_controller_until_a_module_is_imported(monkeypatch):
    """The point of the kept controller (no scan of the loaded libraries per limit), and its safety: after an
    import, which may load a BLAS, the libraries are scanned again."""
    import sys
    import types

    from dpkit.core import threads

    first = threads._controller()
    assert threads._controller() is first
    monkeypatch.setitem(sys.modules, "_dpkit_test_newly_imported", types.ModuleType("_dpkit_test_newly_imported"))
    assert threads._controller() is not first


def test_limit_threads_names_a_wrong_argument():
    from dpkit.core.threads import limit_threads

    with pytest.raises(ValueError, match=r"limits must be an integer in \[1, inf\]; got 0"):
        limit_threads(0)
    with pytest.raises(ValueError, match=r"user_api must be one of \('blas', 'openmp'\)"):
        limit_threads(1, user_api="cuda")
