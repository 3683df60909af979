"""Validation helpers: every bad input gets its error, and the message names the parameter and range."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpkit.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_in_unit_cube,
    check_int_in_range,
    check_positive_int,
    check_probability,
    check_real_in_range,
    check_sensitivity,
)


@pytest.mark.parametrize(
    "value, exc, fragment",
    [
        (0.0, ValueError, "(0, inf)"),
        (-1.0, ValueError, "(0, inf)"),
        (math.inf, ValueError, "finite"),
        (-math.inf, ValueError, "(0, inf)"),
        (math.nan, ValueError, "nan"),
        ("1", TypeError, "real number"),
        (None, TypeError, "real number"),
        (True, TypeError, "real number"),
        (np.array([1.0]), TypeError, "real number"),
    ],
)
def test_epsilon_rejects(value, exc, fragment):
    with pytest.raises(exc) as info:
        check_epsilon(value, name="eps_total")
    assert "eps_total" in str(info.value)
    assert fragment in str(info.value)


def test_epsilon_accepts_and_inf_only_when_allowed():
    assert check_epsilon(0.5) == 0.5
    assert check_epsilon(np.float32(2)) == 2.0
    assert check_epsilon(3) == 3.0
    assert check_epsilon(math.inf, allow_inf=True) == math.inf
    with pytest.raises(ValueError, match=r"epsilon must be in \(0, inf\]"):
        check_epsilon(-math.inf, allow_inf=True)
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(0.0, allow_inf=True)


@pytest.mark.parametrize("value", [-1e-9, 1.0, 1.5, math.nan, math.inf])
def test_delta_rejects_out_of_range(value):
    with pytest.raises(ValueError, match=r"delta_x must be in \[0, 1\)"):
        check_delta(value, name="delta_x")


def test_delta_zero_allowed_or_not():
    assert check_delta(0.0) == 0.0
    assert check_delta(1e-12) == 1e-12
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        check_delta(0.0, allow_zero=False)
    with pytest.raises(TypeError, match="delta"):
        check_delta("0.1")


@pytest.mark.parametrize(
    "value, exc",
    [(0.0, ValueError), (-2.0, ValueError), (math.inf, ValueError), (math.nan, ValueError), ("a", TypeError), (False, TypeError)],
)
def test_sensitivity_rejects(value, exc):
    with pytest.raises(exc, match="sens"):
        check_sensitivity(value, name="sens")


def test_sensitivity_accepts():
    assert check_sensitivity(2) == 2.0


@pytest.mark.parametrize("value, exc", [(0, ValueError), (-3, ValueError), (1.0, TypeError), (True, TypeError), ("2", TypeError)])
def test_positive_int_rejects(value, exc):
    with pytest.raises(exc, match="k"):
        check_positive_int(value, name="k")


def test_int_in_range():
    assert check_int_in_range(np.int64(5), name="m", low=0, high=5) == 5
    with pytest.raises(ValueError, match=r"m must be an integer in \[0, 5\]"):
        check_int_in_range(6, name="m", low=0, high=5)
    with pytest.raises(ValueError, match=r"\[-inf, 2\]"):
        check_int_in_range(3, name="m", high=2)


def test_real_in_range_and_probability():
    assert check_real_in_range(0.0, name="x", low=0.0) == 0.0
    with pytest.raises(ValueError, match=r"x must be in \(0.0, inf\]"):
        check_real_in_range(0.0, name="x", low=0.0, low_inclusive=False)
    with pytest.raises(ValueError, match="x"):
        check_real_in_range(math.nan, name="x")
    with pytest.raises(ValueError, match=r"beta must be in \(0.0, 1.0\)"):
        check_probability(1.0, name="beta")
    with pytest.raises(ValueError, match="beta"):
        check_probability(0.0, name="beta")
    assert check_probability(0.0, name="beta", open_ends=False) == 0.0
    with pytest.raises(TypeError, match="beta"):
        check_probability("0.5", name="beta")


def test_finite_array():
    a = check_finite_array([[1, 2], [3, 4]], name="X", ndim=2, min_rows=2)
    assert a.dtype == float and a.shape == (2, 2)
    with pytest.raises(ValueError, match=r"X must be finite; it has 1 non-finite"):
        check_finite_array([1.0, np.nan], name="X")
    with pytest.raises(ValueError, match=r"X must be finite; it has 2"):
        check_finite_array([np.inf, -np.inf], name="X")
    with pytest.raises(ValueError, match=r"X must have ndim in \(2,\)"):
        check_finite_array([1.0, 2.0], name="X", ndim=2)
    with pytest.raises(ValueError, match="X must have at least 3 rows"):
        check_finite_array([[1.0], [2.0]], name="X", min_rows=3)
    with pytest.raises(TypeError, match="X must be a numeric array"):
        check_finite_array(["a", "b"], name="X")


def test_unit_cube():
    x = check_in_unit_cube([[0.5, -1.0], [1.0, 0.0]])
    assert x.shape == (2, 2)
    with pytest.raises(ValueError, match=r"data must lie in \[-1, 1\]\^d"):
        check_in_unit_cube([[1.5, 0.0]])
    with pytest.raises(ValueError, match="data must have ndim"):
        check_in_unit_cube([0.1, 0.2])
    with pytest.raises(ValueError, match="data must have at least 1 rows"):
        check_in_unit_cube(np.zeros((0, 2)))


def test_choice():
    assert check_choice("a", name="rule", choices=("a", "b")) == "a"
    with pytest.raises(ValueError, match=r"rule must be one of \('a', 'b'\); got 'c'"):
        check_choice("c", name="rule", choices=("a", "b"))
    with pytest.raises(ValueError, match="rule"):
        check_choice(1, name="rule", choices=("a", "b"))


def test_mechanism_constructors_validate():
    """Every mechanism rejects bad parameters with an error naming them."""
    from dpkit.mechanisms import Exponential, Gaussian, Laplace, LaplaceI, LaplaceII, ReportNoisyMax

    with pytest.raises(ValueError, match="epsilon"):
        Laplace(epsilon=0.0, sensitivity=1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        Laplace(epsilon=1.0, sensitivity=-1.0)
    with pytest.raises(ValueError, match="neighbouring"):
        Laplace(epsilon=1.0, sensitivity=1.0, neighbouring="swap")
    with pytest.raises(TypeError):
        Laplace(1.0, 1.0)  # keyword-only
    with pytest.raises(ValueError, match="delta"):
        Gaussian(epsilon=1.0, delta=0.0, sensitivity=1.0)
    with pytest.raises(ValueError, match="calibration"):
        Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, calibration="exact")
    with pytest.raises(ValueError, match=r"epsilon must be in \(0, 1\) for calibration='classic'"):
        Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, calibration="classic")
    with pytest.raises(ValueError, match="sensitivity"):
        Exponential(epsilon=1.0, sensitivity=0.0)
    with pytest.raises(TypeError, match="monotone"):
        Exponential(epsilon=1.0, sensitivity=1.0, monotone="yes")
    with pytest.raises(ValueError, match="noise"):
        ReportNoisyMax(epsilon=1.0, sensitivity=1.0, noise="cauchy")
    with pytest.raises(ValueError, match="k"):
        LaplaceI(epsilon=1.0, sensitivity=1.0, k=0)
    with pytest.raises(ValueError, match="delta"):
        LaplaceII(epsilon=1.0, delta=0.0, sensitivity=1.0, k=3)
    with pytest.raises(ValueError, match="calibration"):
        LaplaceII(epsilon=1.0, delta=1e-5, sensitivity=1.0, k=3, calibration="basic")
    with pytest.raises(ValueError, match="value must be finite"):
        Laplace(epsilon=1.0, sensitivity=1.0).release([1.0, np.nan], rng=0)
    with pytest.raises(ValueError, match="utilities must be finite"):
        Exponential(epsilon=1.0, sensitivity=1.0).probabilities([0.0, np.inf])
