"""Parameter validation: every bad input gets an error naming the parameter and range."""
from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Set
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "check_epsilon",
    "check_delta",
    "check_sensitivity",
    "check_positive_int",
    "check_positive_ints",
    "check_budget_fields",
    "check_int_in_range",
    "check_real_in_range",
    "check_positive_finite",
    "check_probability",
    "check_finite_array",
    "check_in_unit_cube",
    "check_choice",
    "check_seed",
    "check_sequence",
    "check_sigmas",
    "check_name",
    "check_name_list",
    "SQRT_FLOAT_MAX",
    "budget_limit_message",
]

#: √(largest double) ≈ 1.34e154: a noisy quantity that is squared (a variance, a norm, an outer product) must stay
#: below it, or the square overflows to inf.
SQRT_FLOAT_MAX = math.sqrt(sys.float_info.max)


def _is_real(x: Any) -> bool:
    return isinstance(x, (Real, np.floating, np.integer)) and not isinstance(x, (bool, np.bool_))


def check_epsilon(epsilon: Any, *, allow_inf: bool = False, name: str = "epsilon") -> float:
    """Validate a privacy parameter ε.

    ε must be a finite real number > 0. ``allow_inf=True`` additionally admits
    ``math.inf``, which by convention means *no noise* (a non-private reference run);
    only functions that document it pass ``allow_inf=True``.
    """
    if not _is_real(epsilon):
        raise TypeError(f"{name} must be a real number; got {type(epsilon).__name__}")
    eps = float(epsilon)
    if math.isnan(eps):
        raise ValueError(f"{name} must be a number in (0, inf); got nan")
    if math.isinf(eps):
        if allow_inf and eps > 0:
            return eps
        allowed = "(0, inf]" if allow_inf else "(0, inf) (finite)"
        raise ValueError(f"{name} must be in {allowed}; got {eps}")
    if eps <= 0:
        raise ValueError(f"{name} must be > 0 (allowed range (0, inf)); got {eps}")
    return eps


def check_delta(delta: Any, *, allow_zero: bool = True, name: str = "delta") -> float:
    """Validate δ ∈ [0, 1) (or (0, 1) with ``allow_zero=False``)."""
    if not _is_real(delta):
        raise TypeError(f"{name} must be a real number; got {type(delta).__name__}")
    d = float(delta)
    lo = "[0, 1)" if allow_zero else "(0, 1)"
    if math.isnan(d) or d < 0 or d >= 1 or (not allow_zero and d == 0):
        raise ValueError(f"{name} must be in {lo}; got {d}")
    return d


def check_sensitivity(sensitivity: Any, *, name: str = "sensitivity") -> float:
    """Validate a sensitivity: finite and > 0."""
    if not _is_real(sensitivity):
        raise TypeError(f"{name} must be a real number; got {type(sensitivity).__name__}")
    s = float(sensitivity)
    if not math.isfinite(s) or s <= 0:
        raise ValueError(f"{name} must be finite and > 0 (allowed range (0, inf)); got {s}")
    return s


def check_int_in_range(value: Any, *, name: str, low: int | None = None, high: int | None = None) -> int:
    """Validate an integer in ``[low, high]`` (either end may be open with ``None``)."""
    if not isinstance(value, (Integral, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        lo = "-inf" if low is None else str(low)
        hi = "inf" if high is None else str(high)
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}]; got {v}")
    return v


def check_positive_int(value: Any, *, name: str) -> int:
    """Validate an integer ≥ 1."""
    return check_int_in_range(value, name=name, low=1)


def check_budget_fields(obj: object, *, allow_inf: bool = False, delta: bool = True,
                        allow_zero_delta: bool = True) -> None:
    """Validate the ``epsilon`` field of a frozen dataclass ``obj`` (:func:`check_epsilon`; ``allow_inf``
    admits ε = ∞) and, unless ``delta=False``, its ``delta`` field (:func:`check_delta`;
    ``allow_zero_delta``), and store them back as floats. For ``__post_init__`` of methods and mechanisms."""
    object.__setattr__(obj, "epsilon", check_epsilon(getattr(obj, "epsilon"), allow_inf=allow_inf))
    if delta:
        object.__setattr__(obj, "delta", check_delta(getattr(obj, "delta"), allow_zero=allow_zero_delta))


def check_positive_ints(obj: object, *names: str) -> None:
    """Validate that every attribute ``names`` of ``obj`` (e.g. a method's count fields) is an integer ≥ 1."""
    for name in names:
        check_int_in_range(getattr(obj, name), name=name, low=1)


def check_real_in_range(
    value: Any,
    *,
    name: str,
    low: float = -math.inf,
    high: float = math.inf,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """Validate a finite real number in the given interval."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__}")
    v = float(value)
    lb = "[" if low_inclusive else "("
    rb = "]" if high_inclusive else ")"
    ok = not math.isnan(v)
    ok = ok and (v >= low if low_inclusive else v > low)
    ok = ok and (v <= high if high_inclusive else v < high)
    ok = ok and (math.isfinite(v) or (math.isinf(v) and (v == low or v == high)))
    if not ok:
        raise ValueError(f"{name} must be in {lb}{low}, {high}{rb}; got {v}")
    return v


def check_positive_finite(value: Any, *, name: str) -> float:
    """Validate a finite real number > 0 (a width, a smoothness order, a scale)."""
    return check_real_in_range(value, name=name, low=0.0, high=math.inf, low_inclusive=False, high_inclusive=False)


def check_probability(value: Any, *, name: str, open_ends: bool = True) -> float:
    """Validate a probability in (0, 1) (or [0, 1] with ``open_ends=False``)."""
    return check_real_in_range(
        value, name=name, low=0.0, high=1.0, low_inclusive=not open_ends, high_inclusive=not open_ends
    )


def check_finite_array(
    x: Any,
    *,
    name: str = "x",
    ndim: int | tuple[int, ...] | None = None,
    dtype: Any = float,
    min_rows: int = 0,
) -> np.ndarray:
    """Convert ``x`` to an array, checking it is numeric (real), finite and of the right rank."""
    if np.iscomplexobj(x):
        raise TypeError(f"{name} must be real; got complex values (dtype {np.asarray(x).dtype})")
    try:
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array; {exc}") from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            raise ValueError(f"{name} must have ndim in {allowed}; got shape {arr.shape}")
    if arr.size and not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} must be finite; it has {bad} non-finite entries (nan or inf)")
    if arr.ndim >= 1 and arr.shape[0] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} rows; got {arr.shape[0]}")
    return arr


def check_in_unit_cube(x: Any, *, name: str = "data", tol: float = 1e-12) -> np.ndarray:
    """Validate an (n, d) data matrix in [-1, 1]^d (the thesis's domain X)."""
    arr = check_finite_array(x, name=name, ndim=2, min_rows=1)
    if arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one column; got shape {arr.shape}")
    lo, hi = float(arr.min()), float(arr.max())
    if lo < -1 - tol or hi > 1 + tol:
        raise ValueError(
            f"{name} must lie in [-1, 1]^d (the domain X of the thesis); got values in [{lo:.6g}, {hi:.6g}]. "
            "Rescale with dpkit.data (public bounds) first."
        )
    return np.clip(arr, -1.0, 1.0)


def check_choice(value: Any, *, name: str, choices: tuple[str, ...]) -> str:
    """Validate a string option."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}; got {value!r}")
    return value


def check_seed(seed: Any, *, name: str = "seed") -> int:
    """Validate a run seed: an integer ≥ 0 (the entropy of a :class:`numpy.random.SeedSequence`).

    Parameters
    ----------
    seed : int
        The seed. A bool, a float (even a whole one such as ``3.0``), a string, ``None`` or a negative
        integer is refused: each would be read as another seed (``int(1.5) == 1``, ``True == 1``) or fail deep
        inside numpy without naming the parameter.
    name : str
        The parameter's name in the message.

    Returns
    -------
    int
        ``seed`` as a Python int.

    Raises
    ------
    TypeError
        For a value that is not an integer, naming ``name`` and the allowed range.
    ValueError
        For a negative integer, naming ``name`` and the allowed range.
    """
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (Integral, np.integer)):
        raise TypeError(f"{name} must be an integer in [0, inf) (a run seed); got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"{name} must be an integer in [0, inf) (a run seed); got {int(seed)}")
    return int(seed)


def check_sequence(values: Any, *, name: str, item: Callable[..., Any] | None = None, distinct: bool = True,
                   what: str = "values") -> list[Any]:
    """Validate a non-empty list of values (a list, tuple or 1-d array), each checked by ``item``.

    A bare scalar, a string (it would be read as its characters), a mapping or a set (no order) is refused, as are
    an empty list and, with ``distinct``, a repeated value (a cell or a sweep point would be run twice or
    silently merged).

    Parameters
    ----------
    values : sequence
        The values.
    name : str
        The parameter's name in the message; an entry is named ``name[i]``.
    item : callable, optional
        ``item(value, name=f"{name}[{i}]")`` validates and returns one entry (e.g. :func:`check_positive_finite`).
    distinct : bool
        Refuse repeated entries.
    what : str
        What the entries are, for the message (``"kernel widths"``, ``"data set names"``).

    Returns
    -------
    list
        The entries as ``item`` returns them.

    Raises
    ------
    TypeError
        For a value that is not a list of entries, or an entry of the wrong type (from ``item``).
    ValueError
        For an empty list, a repeated entry or an entry out of its range (from ``item``).
    """
    if (isinstance(values, (str, bytes, Mapping, Set)) or not hasattr(values, "__iter__")
            or (isinstance(values, np.ndarray) and values.ndim != 1)):
        raise TypeError(f"{name} must be a non-empty list of {what}; got {type(values).__name__} {values!r}"
                        + (f" (did you mean [{values!r}]?)" if not isinstance(values, (Mapping, Set)) else ""))
    out = [v if item is None else item(v, name=f"{name}[{i}]") for i, v in enumerate(values)]
    if not out:
        raise ValueError(f"{name} must not be empty: a non-empty list of {what} is allowed; got []")
    if distinct:
        seen: list[Any] = []
        for v in out:
            if v in seen:
                raise ValueError(f"{name} must hold distinct {what}; {v!r} is given twice in {list(out)!r}")
            seen.append(v)
    return out


def check_sigmas(sigmas: Any, *, name: str = "sigmas") -> list[float]:
    """Validate a list of kernel widths: non-empty, distinct, each finite and > 0 (:func:`check_sequence`)."""
    return check_sequence(sigmas, name=name, item=check_positive_finite, what="kernel widths (finite and > 0)")


def check_name(value: Any, *, name: str) -> str:
    """Validate a name (a data set's, a method's): a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{name} must be a non-empty string (a name); got {type(value).__name__} {value!r}")
    return value


def check_name_list(values: Any, *, name: str = "datasets", what: str = "data set names") -> list[str]:
    """Validate a list of names (data sets, methods): non-empty, distinct, each a non-empty string
    (:func:`check_sequence`); a bare string is refused, not read as its characters."""
    return check_sequence(values, name=name, item=check_name, what=what)


def check_instance(value: Any, *, name: str, types: tuple[type, ...]) -> Any:
    """Validate that ``value`` is an instance of one of ``types`` (a component given as a parameter)."""
    if not isinstance(value, types):
        allowed = " or ".join(t.__name__ for t in types)
        raise TypeError(f"{name} must be a {allowed} instance; got {type(value).__name__} {value!r}")
    return value


def budget_limit_message(owner: str, epsilon: float, delta: float, *, what: str, limit: str, why: str,
                         least: float | None = None) -> str:
    """The message refusing a budget whose noise is too large for a computation on this data (a ValueError's).

    One message for every method and mechanism: it names ε and δ, the quantity that reaches its limit
    (``what`` followed by ``limit``, e.g. ``"the noise scale 3e+200 reaches"`` and ``"sqrt of the largest double
    = 1.341e+154"``), why the computation breaks beyond it (``why``) and, where the noise scales as 1/ε, the
    least supported ε on this data (``least``).
    """
    supported = "" if least is None else f" (supported here: epsilon >= {least:.3g})"
    return (f"epsilon = {epsilon:g} (delta = {delta:g}) is too small for {owner} on this data{supported}: {what} "
            f"{limit}, beyond which {why}; the noise scales as 1/(n epsilon): use a larger epsilon")
