"""Fault catalogue of the mechanisms and methods: every bad input is a clear error (or a warning) that names the
parameter; nothing is silently accepted."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.core.validation import check_in_unit_cube
from dpkit.mechanisms.laplace import Laplace
from dpkit.mechanisms.net import NetMechanism
from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism, TrigonometricMechanism
from dpkit.methods import DirectAnswering, IndependentMarginals
from dpkit.methods.registry import configure, get, suite
from dpkit.queries.workload import GaussianKernelWorkload

X = np.random.default_rng(0).uniform(-1, 1, size=(300, 3))


@pytest.mark.parametrize("make, exc, word", [
    (lambda: Laplace(epsilon=1e-320, sensitivity=1e10), ValueError, "overflows"),
    (lambda: Laplace(epsilon=-1.0, sensitivity=1.0), ValueError, "epsilon"),
    (lambda: Laplace(epsilon=1.0, sensitivity=-1.0), ValueError, "sensitivity"),
    (lambda: Ledger(1.0, 0.0).can_spend(-5), ValueError, "epsilon"),
    (lambda: Ledger(1.0, 0.0).can_spend(0.5, delta=2.0), ValueError, "delta"),
    (lambda: check_in_unit_cube(np.array([[0.1 + 0.2j, 0.3]]), name="X"), TypeError, "X must be real"),
    (lambda: check_in_unit_cube(np.array([[1.5, 0.0]]), name="X"), ValueError, "X"),
    (lambda: check_in_unit_cube(np.array([[np.nan, 0.0]]), name="X"), ValueError, "X"),
    (lambda: ImprovedTrigonometricMechanism(epsilon=1.0, neighbouring="add-remove"), ValueError, "neighbouring"),
    (lambda: TrigonometricMechanism(epsilon=1.0, neighbouring="add-remove"), ValueError, "neighbouring"),
    (lambda: NetMechanism(epsilon=1.0, queries=np.ones((1, 2)), candidates=np.ones((1, 2)), n=4,
                          neighbouring="add-remove"), ValueError, "neighbouring"),
    (lambda: ImprovedTrigonometricMechanism(epsilon=1.0, kappa=math.inf), ValueError, "kappa"),
    (lambda: ImprovedTrigonometricMechanism(epsilon=1.0, C=0), ValueError, "C"),
    (lambda: ImprovedTrigonometricMechanism(epsilon=1.0, constants="printed"), ValueError, "constants"),
    (lambda: ImprovedTrigonometricMechanism(epsilon=1.0, K=4.0, R=9, C=50).release(X, rng=0), ValueError, "R must be"),
    (lambda: ImprovedTrigonometricMechanism(epsilon=1.0, K=4.0, R=4, C=50, k=4).release(X, rng=0), ValueError, "k must"),
    (lambda: DirectAnswering(epsilon=1.0, delta=0.0, noise="gaussian"), ValueError, "delta"),
    (lambda: DirectAnswering(epsilon=1.0).release(X, rng=0), ValueError, "workload"),
    (lambda: IndependentMarginals(epsilon=1.0, kind="copula"), ValueError, "kind"),
    (lambda: get("trig-III"), KeyError, "trig-III"),
    (lambda: get("trig-I", kapa=2.0), ValueError, "kapa"),
    (lambda: suite("baseline"), ValueError, "suite"),
    (lambda: suite("baselines", include=["trig-III"]), ValueError, "trig-III"),
    (lambda: GaussianKernelWorkload.generate(0, 3, J=2, sigma=2.0, rng=0), ValueError, "n_queries"),
    (lambda: GaussianKernelWorkload.generate(5, 3, J=2, sigma=-1.0, rng=0), ValueError, "sigma"),
])
def test_bad_input_is_a_clear_error(make, exc, word):
    with pytest.raises(exc, match=word):
        make()


def test_kappa_collapsing_the_candidates_warns():
    with pytest.warns(RuntimeWarning, match="kappa"):
        ImprovedTrigonometricMechanism(epsilon=1.0, K=4.0, C=100, R=8, kappa=1e-9).release(X, rng=0)


def test_configure_refuses_a_budget_outside_the_privacy_class():
    with pytest.raises(ValueError, match="'trig-I' is ε-DP"):
        configure(get("trig-I"), delta=0.01)
    with pytest.raises(ValueError, match="'subsample' is a non-private reference"):
        configure(get("subsample"), epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert configure(get("trig-II"), epsilon=0.5, delta=1e-4).privacy == "(ε,δ)-DP"


def test_kernel_centres_far_outside_the_cube():
    wl = GaussianKernelWorkload.generate(3, 2, J=2, sigma=2.0, rng=0)
    with pytest.raises(ValueError, match="centres"):
        GaussianKernelWorkload(centres=wl.centres * 1e200, alphas=wl.alphas, sigma=2.0)
    with pytest.warns(RuntimeWarning, match="underflow"):
        GaussianKernelWorkload(centres=wl.centres * 0 + 200.0, alphas=wl.alphas, sigma=2.0)
    GaussianKernelWorkload(centres=wl.centres * 3.0, alphas=wl.alphas, sigma=2.0)  # adversarial but meaningful: no warning


@pytest.mark.parametrize("factor, bounded", [(1e5, True), (1e10, False), (1e150, False)])
def test_answers_with_centres_far_outside_the_cube_are_zero_not_overflow(factor, bounded):
    """Centres far outside the cube: the workload warns, and the answers are the exact zeros (kernel underflow), not
    ``OverflowError`` from ``math.exp`` of the a-priori error bound. At 1e5 the float64 bound is still finite (the
    float32 one is not, so float64 is chosen); beyond, the bound is ``inf`` and evaluation says so."""
    from dpkit.queries.evaluate import answer_data, answer_reference

    wl = GaussianKernelWorkload.generate(3, 3, J=2, sigma=2.0, rng=0)
    with pytest.warns(RuntimeWarning, match="underflow"):
        far = GaussianKernelWorkload(centres=wl.centres * factor, alphas=wl.alphas, sigma=2.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ans, info = answer_data(far, X, return_info=True)
    said = [str(w.message) for w in caught if "error bound" in str(w.message)]
    if bounded:
        assert info["dtype"] == "float64" and math.isfinite(info["error_bound"]) and not said
    else:
        assert info["error_bound"] == math.inf and said and "outside the cube" in said[0]
    np.testing.assert_array_equal(ans, answer_reference(far, X))
    np.testing.assert_array_equal(ans, np.zeros(3))


@pytest.mark.parametrize("sigma", [1e-200, 1e200])
def test_kernel_width_whose_exponent_scale_is_not_finite_is_an_error(sigma):
    wl = GaussianKernelWorkload.generate(3, 3, J=2, sigma=2.0, rng=0)
    with pytest.raises(ValueError, match="sigma"):
        GaussianKernelWorkload(centres=wl.centres, alphas=wl.alphas, sigma=sigma)
    with pytest.raises(ValueError, match="sigma"):
        GaussianKernelWorkload.generate(3, 3, J=2, sigma=sigma, rng=0)


def test_noise_that_overflows_to_inf_is_an_error_not_a_release():
    """A Laplace scale that is finite (1e308) but whose draws overflow float64: no ±inf "release"."""
    m = Laplace(epsilon=1e-308, sensitivity=1.0)
    assert math.isfinite(m.scale)
    led = Ledger(1.0, 0.0)
    with pytest.raises(OverflowError, match="scale"):
        m.release(np.zeros(64), rng=0, ledger=Ledger(math.inf, 0.0))
    assert np.all(np.isfinite(Laplace(epsilon=1.0, sensitivity=1.0).release(np.zeros(64), rng=0, ledger=led)))
