"""Entrants from anywhere: methods named by import path or registered by another package.

Beside the names of :mod:`dpkit.methods.registry`, the leaderboard accepts ``"package.module:NAME"`` (a method class,
instantiated with its defaults, or a configured instance) and a name a package registers in the entry-point group
:data:`ENTRY_POINT_GROUP` (docs/guide/add-method.md). Every entrant gets the board's budget
(:func:`dpkit.methods.registry.with_budget`) and is checked before anything runs:

1. :func:`check_protocol`: a frozen dataclass instance with ``epsilon``, ``delta``, ``name``, a ``privacy`` class of
   :data:`~dpkit.queries.release.PRIVACY_CLASSES`, callable ``at_width`` and ``release``;
2. :func:`check_board_budget`: it holds the board's budget once set;
3. :func:`trial_release` on a small synthetic array (no real data) and :func:`check_spent`: its ledger spends
   something, within the board's budget for its class.

Errors: every failure raises :class:`EntrantError` naming the entrant and what is missing.
"""
from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np

from dpkit.queries.release import PRIVACY_CLASSES, Method, Release

__all__ = ["ENTRY_POINT_GROUP", "EntrantError", "BudgetViolationError", "is_entrant_name", "entry_point_names",
           "load_object", "instantiate", "check_protocol", "class_budget", "check_board_budget", "check_spent",
           "trial_release", "load_entrant", "load_entrants"]

#: The entry-point group through which a package registers methods by name.
ENTRY_POINT_GROUP = "dpkit.methods"

#: The trial release's synthetic data (rows, dimension), workload (queries, centres per query) and kernel width.
TRIAL_SHAPE = (40, 8)  # d = 8: the trigonometric methods need t^d >= R (50) moments
TRIAL_WORKLOAD = (20, 2)
TRIAL_SIGMA = 2.0


class EntrantError(ValueError):
    """An entrant that cannot be loaded or does not follow the method protocol (the message names it)."""


class BudgetViolationError(EntrantError):
    """An entrant that is not released at the board's budget, or a release whose ledger records nothing spent or
    more than the board's budget for its privacy class (the message names the entrant, the release and the spend)."""


def is_entrant_name(name: object) -> bool:
    """True for an import path ``"package.module:NAME"`` (a string with a module part and an attribute part)."""
    if not isinstance(name, str) or name.count(":") != 1:
        return False
    module, attr = name.split(":")
    return bool(module.strip()) and bool(attr.strip())


def _entry_points() -> dict[str, metadata.EntryPoint]:
    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found and found[ep.name].value != ep.value:
            raise EntrantError(f"entry point {ep.name!r} of group {ENTRY_POINT_GROUP!r} is registered twice, as "
                               f"{found[ep.name].value!r} and {ep.value!r}: uninstall one of the packages")
        found[ep.name] = ep
    return found


def entry_point_names() -> list[str]:
    """The names registered in the entry-point group :data:`ENTRY_POINT_GROUP`, sorted."""
    return sorted(_entry_points())


def load_object(name: str) -> Any:
    """The object an entrant name stands for: ``"package.module:NAME"`` imported, or an entry point loaded.

    Raises
    ------
    EntrantError
        For a module that cannot be imported, a missing attribute, or a name that is neither an import path nor
        a registered entry point.
    """
    if is_entrant_name(name):
        module_name, attr = (s.strip() for s in name.split(":"))
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise EntrantError(f"entrant {name!r}: module {module_name!r} cannot be imported "
                               f"({type(exc).__name__}: {exc})") from exc
        obj: Any = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise EntrantError(f"entrant {name!r}: module {module_name!r} has no attribute {attr!r}")
            obj = getattr(obj, part)
        return obj
    eps = _entry_points()
    if name not in eps:
        raise EntrantError(f"entrant {name!r}: neither an import path 'package.module:NAME' nor a name registered in "
                           f"the entry-point group {ENTRY_POINT_GROUP!r} (registered: "
                           f"{', '.join(eps) or 'none'})")
    try:
        return eps[name].load()
    except (ImportError, AttributeError) as exc:
        raise EntrantError(f"entrant {name!r}: its entry point {eps[name].value!r} (group {ENTRY_POINT_GROUP!r}) "
                           f"cannot be loaded ({type(exc).__name__}: {exc})") from exc


def instantiate(name: str, obj: Any) -> Any:
    """A method instance from ``obj``: a class is instantiated with its defaults, an instance is kept.

    Raises
    ------
    EntrantError
        For a class that is not a dataclass, or whose construction with its defaults fails (a field without a
        default, a default its validation refuses).
    """
    if not isinstance(obj, type):
        return obj
    if not dataclasses.is_dataclass(obj):
        raise EntrantError(f"entrant {name!r}: class {obj.__qualname__} is not a dataclass (a method is a frozen "
                           "dataclass whose fields are its parameters; see dpkit.queries.release)")
    required = [f.name for f in dataclasses.fields(obj) if f.init and f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]
    if required:
        raise EntrantError(f"entrant {name!r}: class {obj.__qualname__} has field(s) without a default {required}; "
                           "the board instantiates a class with its defaults (register a configured instance instead)")
    try:
        return obj()
    except Exception as exc:
        raise EntrantError(f"entrant {name!r}: {obj.__qualname__}() with its defaults failed "
                           f"({type(exc).__name__}: {exc})") from exc


def check_protocol(name: str, method: Any) -> None:
    """Refuse a ``method`` that does not follow the protocol of :mod:`dpkit.queries.release`, naming what is missing.

    Required: a frozen dataclass instance with the fields ``epsilon`` and ``delta``, a string ``name``, a
    ``privacy`` in :data:`~dpkit.queries.release.PRIVACY_CLASSES` and callable ``at_width`` and ``release``.

    Raises
    ------
    EntrantError
        Listing every missing piece.
    """
    missing: list[str] = []
    what = type(method).__qualname__
    if not dataclasses.is_dataclass(method) or isinstance(method, type):
        missing.append("a dataclass instance (its fields are its parameters)")
    else:
        if not type(method).__dataclass_params__.frozen:  # type: ignore[attr-defined]
            missing.append("a frozen dataclass (@dataclass(frozen=True): a method is its configuration)")
        fields = {f.name for f in dataclasses.fields(method)}
        missing += [f"the field {f!r}" for f in ("epsilon", "delta") if f not in fields]
    for verb in ("release", "at_width"):
        if not callable(getattr(method, verb, None)):
            missing.append(f"a method {verb}()")
    try:
        label = getattr(method, "name")
    except Exception as exc:
        label, missing = None, missing + [f"a name (it raised {type(exc).__name__}: {exc})"]
    else:
        if not isinstance(label, str):
            missing.append(f"a string name (got {label!r})")
    try:
        privacy = getattr(method, "privacy")
    except Exception as exc:
        missing.append(f"a privacy class (it raised {type(exc).__name__}: {exc})")
    else:
        if privacy not in PRIVACY_CLASSES:
            missing.append(f"a privacy class in {PRIVACY_CLASSES} (got {privacy!r})")
    if missing:
        raise EntrantError(f"entrant {name!r} ({what}) does not follow the method protocol of dpkit.queries.release: "
                           f"it lacks {'; '.join(missing)}")


#: Relative slack of the spend checks: a budget split into parts and summed again may exceed it by round-off.
SPEND_RTOL = 1e-9


def class_budget(privacy: str, *, epsilon: float, delta: float) -> tuple[float, float]:
    """The board's budget ``(ε, δ)`` for a method of privacy class ``privacy``: ``(ε, 0)`` for ε-DP, ``(ε, δ)`` for
    (ε, δ)-DP, ``(∞, 1)`` for a non-private reference (it spends nothing it is held to, and is never ranked).

    >>> class_budget("ε-DP", epsilon=1.0, delta=1e-3), class_budget("(ε,δ)-DP", epsilon=1.0, delta=1e-3)
    ((1.0, 0.0), (1.0, 0.001))
    """
    if privacy == "non-private":
        return math.inf, 1.0
    if privacy not in PRIVACY_CLASSES:
        raise EntrantError(f"privacy class {privacy!r} is not one of {PRIVACY_CLASSES}")
    return float(epsilon), (0.0 if privacy == "ε-DP" else float(delta))


def check_board_budget(name: str, method: Any, *, epsilon: float, delta: float) -> None:
    """Refuse an entrant whose own ``epsilon``/``delta`` are not the board's budget for its privacy class after the
    board set them (an entrant that keeps its own ε, e.g. by resetting it in ``__post_init__``).

    Raises
    ------
    BudgetViolationError
        Naming the entrant, its (ε, δ) and the board's.
    """
    privacy = getattr(method, "privacy", None)
    if privacy == "non-private":
        return
    want_eps, want_delta = class_budget(privacy, epsilon=epsilon, delta=delta)
    got_eps, got_delta = float(getattr(method, "epsilon", math.nan)), float(getattr(method, "delta", math.nan))
    if got_eps != want_eps or got_delta != want_delta:
        raise BudgetViolationError(f"entrant {name!r} ({privacy}) holds ε = {got_eps:g}, δ = {got_delta:g} after the "
                                   f"board set its budget ε = {want_eps:g}, δ = {want_delta:g}: an entrant is released "
                                   "at the board's budget, whatever its own defaults")


def check_spent(name: str, where: str, *, privacy: str, spent: tuple[float, float], epsilon: float, delta: float,
                entries: int | None = None) -> None:
    """Refuse one release of entrant ``name`` whose ledger is not within the board's budget for its privacy class.

    The one check of every path an entrant takes to the board (the trial release of :func:`load_entrant`, and every
    record of a board-add, :func:`dpkit.board.add.check_entrant_spend`): for a private release the
    ledger must record something spent (ε > 0 and, where the ledger is at hand, at least one spend), ε spent ≤ the
    board's ε, δ spent ≤ the board's δ, and δ spent exactly 0 for an ε-DP release (:func:`class_budget`); a
    non-private release is never ranked and is not checked.

    Parameters
    ----------
    name : str
        The entrant (named in the message).
    where : str
        Which release (named in the message), e.g. ``"record (WDBC, σ=2, rep 0)"``.
    privacy : str
        The release's privacy class.
    spent : (float, float)
        The (ε, δ) its ledger records spent.
    epsilon, delta : float
        The board's budget (ε; δ of the (ε, δ)-DP table).
    entries : int, optional
        The number of spends in its ledger, where known.

    Raises
    ------
    BudgetViolationError
        Naming the entrant, the release, the spend and the board's budget.
    """
    if privacy == "non-private":
        return
    budget_eps, budget_delta = class_budget(privacy, epsilon=epsilon, delta=delta)
    eps, dl = (float(x) for x in spent)
    budget = f"the board's budget ε = {budget_eps:g}, δ = {budget_delta:g}"
    if not (math.isfinite(eps) and math.isfinite(dl)):
        problem = f"no finite (ε, δ) spent (against {budget}): spend through the ledger"
    elif eps <= 0 or entries == 0:
        problem = f"nothing spent (an empty ledger; {budget}): a private method spends its budget through the ledger"
    elif privacy == "ε-DP" and dl != 0:
        problem = f"δ > 0 in an ε-DP release ({budget}: the ε-DP table's δ is exactly 0)"
    elif eps > budget_eps * (1 + SPEND_RTOL) or dl > budget_delta * (1 + SPEND_RTOL):
        problem = f"beyond {budget}"
    else:
        return
    raise BudgetViolationError(f"entrant {name!r}: {where} ({privacy}) records ε = {eps:g}, δ = {dl:g} spent, "
                               f"{problem}")


def trial_release(name: str, method: Method, *, epsilon: float | None = None,
                  delta: float | None = None) -> Release[Any]:
    """One tiny release of ``method`` on a small synthetic array (drawn here, seed 0: no real data is spent),
    at kernel width :data:`TRIAL_SIGMA` with a small workload, checked to carry a ledger record.

    The release must be a :class:`~dpkit.queries.release.Release` of the method's privacy class whose ``ledger``
    records the (ε, δ) spent, within the board's budget ``epsilon``, ``delta`` for that class (default: the method's
    own; :func:`check_spent`).

    Raises
    ------
    EntrantError
        For a release that fails, is not a Release, or has no ledger record; :class:`BudgetViolationError` for one
        whose ledger records nothing spent or more than the budget.
    """
    from dpkit.queries.workload import GaussianKernelWorkload

    rng = np.random.default_rng(0)
    n, d = TRIAL_SHAPE
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    wl = GaussianKernelWorkload.generate(TRIAL_WORKLOAD[0], d, J=TRIAL_WORKLOAD[1], sigma=TRIAL_SIGMA, rng=rng)
    where = f"entrant {name!r}: its trial release (a {n}×{d} synthetic array, no real data)"
    try:
        widened = method.at_width(TRIAL_SIGMA)
    except Exception as exc:
        raise EntrantError(f"{where} failed: at_width({TRIAL_SIGMA:g}): {type(exc).__name__}: {exc}") from exc
    if epsilon is not None and delta is not None:  # the method the board releases at a width holds its budget too
        check_board_budget(f"{name} at width {TRIAL_SIGMA:g}", widened, epsilon=epsilon, delta=delta)
    try:
        rel = widened.release(X, rng=np.random.default_rng(1), workload=wl)
    except Exception as exc:
        raise EntrantError(f"{where} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(rel, Release):
        raise EntrantError(f"{where} returned a {type(rel).__name__}, not a dpkit.queries.release.Release")
    ledger = rel.ledger
    spent = ledger.get("spent") if isinstance(ledger, dict) else None
    if not isinstance(spent, dict) or "epsilon" not in spent or "delta" not in spent:
        raise EntrantError(f"{where} has no ledger record: Release.ledger must be Ledger.to_dict() with the (ε, δ) "
                           f"spent (spend through the ledger, dpkit.core.accounting.ledger_for); got {ledger!r}")
    if rel.privacy != method.privacy:
        raise BudgetViolationError(f"{where} is released as {rel.privacy!r} but the method's class is "
                                   f"{method.privacy!r}")
    entries = ledger.get("entries")
    check_spent(name, f"its trial release (a {n}×{d} synthetic array, no real data)", privacy=rel.privacy,
                spent=(float(spent["epsilon"]), float(spent["delta"])),
                epsilon=float(getattr(method, "epsilon") if epsilon is None else epsilon),
                delta=float(getattr(method, "delta") if delta is None else delta),
                entries=len(entries) if isinstance(entries, list) else None)
    return rel


def load_entrant(name: str, *, epsilon: float, delta: float, trial: bool = True) -> Method:
    """The entrant ``name`` at the board's budget (:func:`~dpkit.methods.registry.with_budget`), checked.

    Parameters
    ----------
    name : str
        ``"package.module:NAME"`` or a name of the entry-point group :data:`ENTRY_POINT_GROUP`.
    epsilon, delta : float
        The board's budget: ε set on a private method, δ on an (ε, δ)-DP method only.
    trial : bool
        Make the trial release (:func:`trial_release`).

    Raises
    ------
    EntrantError
        Before anything runs, naming the entrant and what is missing; :class:`BudgetViolationError` for an entrant
        that does not hold the board's budget once set (:func:`check_board_budget`) or whose trial release records
        nothing spent or more than that budget (:func:`check_spent`).
    """
    from dpkit.methods.registry import with_budget

    method = instantiate(name, load_object(name))
    check_protocol(name, method)
    try:
        method = with_budget(method, epsilon=epsilon, delta=delta)
    except Exception as exc:
        raise EntrantError(f"entrant {name!r}: setting the board's budget ε = {epsilon:g}, δ = {delta:g} failed "
                           f"({type(exc).__name__}: {exc})") from exc
    check_board_budget(name, method, epsilon=epsilon, delta=delta)
    if trial:
        trial_release(name, method, epsilon=epsilon, delta=delta)
    return method


def load_entrants(requested: Sequence[str], *, epsilon: float, delta: float, trial: bool = True) -> dict[str, Method]:
    """``{name: method}`` for every name of ``requested`` (:func:`load_entrant`), in the order given."""
    return {n: load_entrant(n, epsilon=epsilon, delta=delta, trial=trial) for n in dict.fromkeys(requested)}
