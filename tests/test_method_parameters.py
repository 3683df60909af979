"""Fix the class, not the example: every parameter of every registered method (the registry's CATALOGUE) and
of the public mechanisms' constructors refuses a value of the wrong type and, where a range applies, a value
outside it, with a ValueError/TypeError whose message names the parameter."""
from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np
import pytest

from dpkit.mechanisms import (
    Exponential,
    Gaussian,
    Laplace,
    LaplaceI,
    LaplaceII,
    NetMechanism,
    ReportNoisyMax,
)
from dpkit.mechanisms.pmw import PrivateMultiplicativeWeights
from dpkit.mechanisms.randomized_response import RandomizedResponse
from dpkit.mechanisms.sparse_vector import AboveThreshold
from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism, TrigonometricMechanism
from dpkit.methods.registry import CATALOGUE

#: One valid instance of every public mechanism (their constructors have required parameters).
MECHANISMS: dict[str, Any] = {
    "Laplace": Laplace(epsilon=1.0, sensitivity=1.0),
    "Gaussian": Gaussian(epsilon=1.0, delta=1e-3, sensitivity=1.0),
    "Exponential": Exponential(epsilon=1.0, sensitivity=1.0),
    "ReportNoisyMax": ReportNoisyMax(epsilon=1.0, sensitivity=1.0),
    "LaplaceI": LaplaceI(epsilon=1.0, sensitivity=1.0, k=3),
    "LaplaceII": LaplaceII(epsilon=1.0, delta=1e-3, sensitivity=1.0, k=3),
    "NetMechanism": NetMechanism(epsilon=1.0, queries=np.ones((1, 2)), candidates=np.ones((1, 2)), n=4),
    "PrivateMultiplicativeWeights": PrivateMultiplicativeWeights(epsilon=1.0, beta=0.1, n=100, domain_size=8,
                                                                 n_queries=5),
    "RandomizedResponse": RandomizedResponse(),
    "AboveThreshold": AboveThreshold(epsilon=1.0),
    "TrigonometricMechanism": TrigonometricMechanism(epsilon=1.0),
    "ImprovedTrigonometricMechanism": ImprovedTrigonometricMechanism(epsilon=1.0),
}
#: Array-valued fields (checked by their own shape tests); a real field of either sign (any finite value).
NO_RANGE = {"queries", "candidates"}
SIGNED = {"threshold"}


def _kind(obj: Any, f: dataclasses.Field) -> str:
    t = str(f.type)
    if t.startswith("bool"):
        return "bool"
    if t.startswith("int"):
        return "int"
    if t.startswith("float"):
        return "float"
    if t.startswith("tuple"):
        return "tuple"
    if t.startswith("str"):
        return "str"
    return "other"


def _bad_values(obj: Any, f: dataclasses.Field) -> list[Any]:
    """A value of the wrong type (a string; a number for a string option) and, where a range applies, values
    outside it (every count of these classes is ≥ 0, every real parameter > 0 or ≥ 0, none NaN)."""
    kind = _kind(obj, f)
    if kind == "str":
        return [3.0, "no-such-option"]
    out: list[Any] = ["x"]
    if f.name in NO_RANGE:
        return out
    if f.name in SIGNED:
        return out + [math.nan, math.inf]
    if kind == "int":
        out += [-1, 2.5]
    elif kind == "float":
        out += [-1.0, math.nan]
    elif kind == "tuple":
        out += [(-1.0,) + tuple(getattr(obj, f.name))[1:]]
    return out


def _cases(objects: dict[str, Any]) -> list[Any]:
    return [pytest.param(obj, f.name, bad, id=f"{label}-{f.name}-{bad!r}")
            for label, obj in objects.items() for f in dataclasses.fields(obj) if f.init
            for bad in _bad_values(obj, f)]


def _check(obj: Any, field: str, bad: Any) -> None:
    with pytest.raises((ValueError, TypeError)) as err:
        dataclasses.replace(obj, **{field: bad})
    assert re.search(rf"(?<![\w.]){re.escape(field)}(?!\w)", str(err.value)), \
        f"{type(obj).__name__}({field}={bad!r}) was refused without naming {field!r}: {err.value}"


@pytest.mark.parametrize("method, field, bad", _cases({e.name: e.method for e in CATALOGUE}))
def test_every_registered_method_refuses_a_bad_parameter_by_name(method, field, bad):
    _check(method, field, bad)


@pytest.mark.parametrize("mechanism, field, bad", _cases(MECHANISMS))
def test_every_public_mechanism_refuses_a_bad_parameter_by_name(mechanism, field, bad):
    _check(mechanism, field, bad)
