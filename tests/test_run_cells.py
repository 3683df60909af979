"""run_cells: the cells of one data set share their σ-independent releases, and only those."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from dpkit import experiments as ex
from dpkit.methods.references import SamplingFloor
from dpkit.methods.registry import get

SIGMAS = (2.0, 4.0, 6.0)


@pytest.fixture(scope="module")
def X():
    from dpkit.data import load

    return load("mock", n=300, d=4, rng=1).X


@dataclass(frozen=True, kw_only=True)
class CountingFloor(SamplingFloor):
    """A σ-independent method that counts its releases."""

    calls: ClassVar[list[int]] = []

    def release(self, X: Any, **kw: Any) -> Any:
        CountingFloor.calls.append(1)
        return super().release(X, **kw)


def _methods() -> dict[str, Any]:
    return {"trig-II": get("trig-II", C=300, R=10), "marginals-histogram": get("marginals-histogram"),
            "direct-gaussian": get("direct-gaussian"), "kme-answers": get("kme-answers", max_features=64),
            "count": CountingFloor(size=20)}


def _key(r: ex.ReleaseRecord) -> tuple:
    return (r.rep, r.method, r.sigma, r.abs, r.rel, r.support_size, r.eps_spent, r.delta_spent)


def test_width_independence_is_read_from_the_method():
    m = _methods()
    assert ex.width_independent(m["marginals-histogram"], SIGMAS) and ex.width_independent(m["count"], SIGMAS)
    assert not ex.width_independent(m["trig-II"], SIGMAS)  # K = σ²
    assert not ex.width_independent(m["direct-gaussian"], SIGMAS)  # answers the workload
    assert not ex.width_independent(m["kme-answers"], SIGMAS)


def test_width_dependent_methods_keep_the_streams_of_run_cell(X):
    recs = ex.run_cells(X, methods=_methods(), sigmas=SIGMAS, reps=2, seed=3, dataset="mock", n_queries=150)
    for s in SIGMAS:
        ref = ex.run_cell(X, methods=_methods(), sigma=s, reps=2, n_queries=150, rng=ex.cell_seed(3, "mock", s))
        for name in ("trig-II", "direct-gaussian", "kme-answers"):
            got = [_key(r) for r in recs if r.sigma == s and r.method == name]
            want = [_key(r) for r in ref if r.method == name]
            assert got == want and len(got) == 2


def test_independent_methods_are_released_once_per_repetition_and_shared(X):
    CountingFloor.calls.clear()
    recs = ex.run_cells(X, methods=_methods(), sigmas=SIGMAS, reps=3, seed=3, dataset="mock", n_queries=150)
    assert len(CountingFloor.calls) == 3  # not 3 × len(SIGMAS)
    assert [r.sigma for r in recs] == sorted([r.sigma for r in recs], key=SIGMAS.index)  # σ-major
    for rep in range(3):
        hist = [r for r in recs if r.method == "marginals-histogram" and r.rep == rep]
        assert len(hist) == len(SIGMAS) and len({r.time_s for r in hist}) == 1  # one release, its time on each row
        assert len({r.abs for r in hist}) == len(SIGMAS)  # evaluated on each σ's own workload
    # control: in run_cell every cell draws its own release
    CountingFloor.calls.clear()
    for s in SIGMAS:
        ex.run_cell(X, methods=_methods(), sigma=s, reps=3, n_queries=150, rng=ex.cell_seed(3, "mock", s))
    assert len(CountingFloor.calls) == 3 * len(SIGMAS)


def test_numbers_do_not_depend_on_which_sigmas_run_together(X):
    together = ex.run_cells(X, methods=_methods(), sigmas=SIGMAS, reps=2, seed=3, dataset="mock", n_queries=150)
    alone = ex.run_cells(X, methods=_methods(), sigmas=[4.0], reps=2, seed=3, dataset="mock", n_queries=150)
    assert [_key(r) for r in together if r.sigma == 4.0] == [_key(r) for r in alone]
    other = ex.run_cells(X, methods=_methods(), sigmas=[4.0], reps=2, seed=4, dataset="mock", n_queries=150)
    assert [_key(r) for r in other] != [_key(r) for r in alone]  # control: the seed matters


def test_shared_seed_differs_from_every_cell_seed():
    a = ex.shared_seed(0, "CSN").generate_state(4)
    for s in (2.0, 4.0, 1e-4):
        assert not np.array_equal(a, ex.cell_seed(0, "CSN", s).generate_state(4))
    assert not np.array_equal(a, ex.shared_seed(0, "CRM").generate_state(4))
    assert np.array_equal(a, ex.shared_seed(0, "csn").generate_state(4))


@pytest.mark.parametrize("sigmas, msg", [([], "must not be empty"), ([2.0, 2.0], "distinct"), ([0.0], "sigmas")])
def test_bad_sigmas_are_named(X, sigmas, msg):
    with pytest.raises(ValueError, match=msg):
        ex.run_cells(X, methods=_methods(), sigmas=sigmas, reps=1, seed=0, dataset="mock")
