"""One registry of methods by name: manifests, widgets, benchmarks and notebooks name methods as data.

Every entry is a *configured instance* of a method class plus the suites it belongs to (:data:`CATALOGUE`).

>>> from dpkit.methods.registry import get, names
>>> get("trig-II").delta
0.001
>>> get("marginals-histogram-eps").privacy
'ε-DP'
>>> "trig-I" in names("tables")
True

Errors: :func:`get` and :func:`configure` refuse a parameter a method does not have, or a budget outside its privacy
class; :func:`suite` sets a suite-wide value only on members that have the field, respecting their classes.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism
from dpkit.methods.aim import AIM
from dpkit.methods.candidate_lp import CandidateLP
from dpkit.methods.candidates import GaussianCandidates, UniformCandidates
from dpkit.methods.direct import DirectAnswering
from dpkit.methods.gaussian_fit import GaussianFit
from dpkit.methods.kme import KMEAnswers, KMESynthetic
from dpkit.methods.marginals import IndependentMarginals
from dpkit.methods.mst import MST
from dpkit.methods.mwem import MWEM
from dpkit.methods.rap import RelaxedProjection
from dpkit.methods.references import SamplingFloor
from dpkit.methods.smalldb import SmallDB
from dpkit.queries.release import Method

__all__ = ["Entry", "CATALOGUE", "REGISTRY", "PRIVACY_CLASSES", "get", "with_budget", "names", "suites", "suite", "configure",
           "describe", "check_names", "check_method"]

EPS, DELTA = 1.0, 1e-3  # the thesis's budget (Sec 3.1)


@dataclass(frozen=True)
class Entry:
    """A registered method: its name, the configured instance and the suites it is part of."""

    name: str
    method: Method
    suites: tuple[str, ...] = ()

    @property
    def privacy(self) -> str:
        return self.method.privacy


_T = ("tables",)
_B = ("baselines",)
_TB = ("tables", "baselines")
_L = ("leaderboard",)
_S = ("slow",)  # registered and tested, run only when named (AIM: the full board runs it from its own manifest)
_BL = ("baselines", "leaderboard")

#: The Gaussian-fit candidates of the (ε, δ) entries, calibrated by the exact composition (``accounting="pld"``).
_FIT = GaussianCandidates(fit=GaussianFit(epsilon=math.inf, accounting="pld"))

#: Every registered method (name, instance, suites), in the order tables list them. The (ε, δ) entries are calibrated
#: by the exact privacy loss of their composition (``accounting="pld"``, :mod:`dpkit.core.accountant`): the board ranks
#: the tight variant in place of the published one (``"split"``, MST's ``"zcdp"``), which stays one switch away
#: (docs/science/accounting.md); the thesis's tables reproduce mechanism II at its published ``"split"``.
CATALOGUE: tuple[Entry, ...] = (
    Entry("trig-I", ImprovedTrigonometricMechanism(epsilon=EPS, delta=0.0), _TB),
    Entry("trig-II", ImprovedTrigonometricMechanism(epsilon=EPS, delta=DELTA, accounting="pld"), _TB),
    Entry("lp-eps-inf", ImprovedTrigonometricMechanism(epsilon=math.inf, delta=DELTA), _B),
    Entry("subsample", SamplingFloor(size=51), _B),
    Entry("direct-laplace_I", DirectAnswering(epsilon=EPS, delta=0.0, noise="laplace_I"), _B),
    Entry("direct-laplace_II", DirectAnswering(epsilon=EPS, delta=DELTA, noise="laplace_II", accounting="pld"), _B),
    Entry("direct-gaussian", DirectAnswering(epsilon=EPS, delta=DELTA, noise="gaussian"), _B),
    Entry("marginals-histogram", IndependentMarginals(epsilon=EPS, delta=DELTA, kind="histogram"), _B),
    Entry("marginals-moments", IndependentMarginals(epsilon=EPS, delta=DELTA, kind="moments", accounting="pld"), _B),
    Entry("gauss-analyze-gauss", GaussianFit(epsilon=EPS, delta=DELTA, method="analyze_gauss", accounting="pld"), _B),
    Entry("gauss-psi", GaussianFit(epsilon=EPS, delta=DELTA, method="psi", accounting="pld"), _B),
    Entry("mwem-uniform", MWEM(epsilon=EPS, delta=0.0, candidates=UniformCandidates()), _B),
    Entry("mwem-gaussian", MWEM(epsilon=EPS, delta=DELTA, candidates=_FIT, accounting="pld"), _B),
    Entry("lp-gauss-analyze-gauss-cands", CandidateLP(epsilon=EPS, delta=DELTA, candidates=_FIT, accounting="pld"), _B),
    Entry("lp-uniform-cands", CandidateLP(epsilon=EPS, delta=DELTA, candidates=UniformCandidates()), _B),
    # ε-DP variants of the baselines that have one (Table 3.2 is compared at δ = 0)
    Entry("marginals-histogram-eps", IndependentMarginals(epsilon=EPS, delta=0.0, kind="histogram"), _B),
    Entry("marginals-moments-eps", IndependentMarginals(epsilon=EPS, delta=0.0, kind="moments"), _B),
    Entry("gauss-analyze-gauss-eps", GaussianFit(epsilon=EPS, delta=0.0, method="analyze_gauss"), _B),
    Entry("gauss-psi-eps", GaussianFit(epsilon=EPS, delta=0.0, method="psi"), _B),
    # marginal-based synthetic data on a public grid (Private-PGM; needs the optional dependency mbi). Not in
    # "baselines": notebook 40 runs that whole suite and its QUICK test allows 60 s, while a release compiles (JAX)
    # its estimator's programs the first time a process meets their size (timings: docs/performance_notes.md)
    Entry("mst", MST(epsilon=EPS, delta=DELTA, accounting="pld"), _L),
    Entry("mst-eps", MST(epsilon=EPS, delta=0.0), _L),
    # AIM (McKenna et al. 2022) on the same grid and mbi; (ε, δ) only, its adaptive rounds kept by a Gaussian-DP filter
    # (accounting="gdp"; the published zCDP filter: accounting="zcdp"; no ε-DP variant, see dpkit.methods.aim).
    # Suite "slow": every round adds a marginal and fits the model again. dpkit's compiled estimator (the default,
    # dpkit.methods._compiled_pgm) compiles a handful of programs per process, not one per round as mbi's does,
    # yet a release still costs many of MST's fits, and most on the widest data (CRM); measured times:
    # docs/results/performance.md. The full board runs it from its own manifest
    # (notebooks/manifests/leaderboard_aim.yaml, make leaderboard-aim); else name it: notebook 45 with
    # METHODS=["aim", ...], or suite("slow").
    Entry("aim", AIM(epsilon=EPS, delta=DELTA), _S),
    # relaxed projection onto noisy trigonometric moments (Aydore et al. 2021)
    Entry("rap", RelaxedProjection(epsilon=EPS, delta=DELTA), _BL),
    Entry("rap-eps", RelaxedProjection(epsilon=EPS, delta=0.0, max_noise_std=0.07), _BL),
    # kernel mean embedding (random Fourier features at the workload's σ; DP-MERF idea, Harder et al. 2021)
    Entry("kme-answers", KMEAnswers(epsilon=EPS, delta=DELTA), _BL),
    Entry("kme-answers-eps", KMEAnswers(epsilon=EPS, delta=0.0), _BL),
    Entry("kme-synthetic", KMESynthetic(epsilon=EPS, delta=DELTA), _BL),
    Entry("kme-synthetic-eps", KMESynthetic(epsilon=EPS, delta=0.0), _BL),
    # ε-DP variants of the Gaussian-candidate MWEM and the candidate LPs (Table 3.2 is compared at δ = 0)
    Entry("mwem-gaussian-eps", MWEM(epsilon=EPS, delta=0.0, candidates=GaussianCandidates()), _BL),
    Entry("lp-gauss-analyze-gauss-cands-eps", CandidateLP(epsilon=EPS, delta=0.0, candidates=GaussianCandidates()), _BL),
    Entry("lp-uniform-cands-eps", CandidateLP(epsilon=EPS, delta=0.0, candidates=UniformCandidates()), _BL),
    # the 2-d toy panel of notebook 40 (SmallDB is exponential in the domain)
    Entry("smalldb", SmallDB(epsilon=EPS, levels=4, m=4), ("toy",)),
)

REGISTRY: dict[str, Entry] = {e.name: e for e in CATALOGUE}
if len(REGISTRY) != len(CATALOGUE):  # pragma: no cover - a catalogue typo
    raise RuntimeError("duplicate method names in dpkit.methods.registry.CATALOGUE")


#: the privacy classes of the registered methods (:attr:`Entry.privacy`)
PRIVACY_CLASSES = ("(ε,δ)-DP", "ε-DP", "non-private")


def suites() -> list[str]:
    """The suites of the catalogue, sorted."""
    return sorted({s for e in CATALOGUE for s in e.suites})


def check_method(method: Any, *, name: str = "method") -> Method:
    """``method`` if it is a method *instance* (a dataclass following :class:`~dpkit.queries.release.Method`).

    A registered name (a string), a method class (``TrigonometricMechanism`` instead of an instance) or any other
    object is refused naming the argument and what it was given, with the call that gives a method.

    Raises
    ------
    TypeError
        Naming ``name`` and the type given.
    """
    if isinstance(method, str):
        close = method if method in REGISTRY else next(iter(difflib.get_close_matches(method, list(REGISTRY), n=1)), None)
        hint = f"; use get({close!r}) for the registered method" if close else ""
        raise TypeError(f"{name} must be a method instance, not the name {method!r}{hint}")
    if isinstance(method, type):
        raise TypeError(f"{name} must be a method instance, not the class {method.__name__} (did you mean "
                        f"{method.__name__}(...)?)")
    if not (dataclasses.is_dataclass(method) and isinstance(method, Method)):
        raise TypeError(f"{name} must be a method instance (a dataclass with epsilon, delta, name, privacy, at_width "
                        f"and release, e.g. get('trig-I')); got {type(method).__name__} {method!r:.80}")
    return method


def names(suite_name: str | None = None, *, privacy: str | None = None) -> list[str]:
    """Registered names, in catalogue order, optionally of one suite and/or privacy class.

    Raises
    ------
    ValueError
        For a suite or a privacy class that the catalogue does not have (naming the ones it has), instead of an
        empty list.
    """
    if suite_name is not None and suite_name not in suites():
        close = difflib.get_close_matches(str(suite_name), suites(), n=1)
        raise ValueError(f"unknown suite {suite_name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                         + f"; suites: {suites()}")
    if privacy is not None and privacy not in PRIVACY_CLASSES:
        raise ValueError(f"unknown privacy class {privacy!r}; privacy classes: {list(PRIVACY_CLASSES)}")
    return [e.name for e in CATALOGUE
            if (suite_name is None or suite_name in e.suites) and (privacy is None or e.privacy == privacy)]


def check_names(requested: Sequence[str], *, allowed: Sequence[str] | None = None,
                what: str = "unknown method name(s)") -> None:
    """Refuse every name of ``requested`` that is not registered (or not in ``allowed``), before anything runs.

    The message names each unknown name with the closest registered names (:func:`difflib.get_close_matches`)
    and lists the allowed ones.

    Raises
    ------
    TypeError
        For ``requested`` given as one string instead of a list of names.
    ValueError
        For a name that is not a string or not allowed.
    """
    if isinstance(requested, str):  # a bare name would be read as its characters
        raise TypeError(f"requested must be a list of method names, not a str; got {requested!r} "
                        f"(did you mean [{requested!r}]?)")
    pool = list(REGISTRY) if allowed is None else list(allowed)
    bad = [n for n in requested if not isinstance(n, str) or n not in pool]
    if not bad:
        return
    parts = []
    for n in bad:
        if not isinstance(n, str):
            parts.append(f"{n!r} (not a string)")
            continue
        close = difflib.get_close_matches(n, pool, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else "no close name"
        where = " (registered, but not one of the allowed methods)" if n in REGISTRY else ""
        parts.append(f"{n!r}{where}: {hint}")
    raise ValueError(f"{what}: {'; '.join(parts)} (allowed: {', '.join(pool)})")


def get(name: str, **params: Any) -> Method:
    """The registered method ``name``, with ``params`` set by :func:`configure` (every one must be a parameter of
    that method; see there).

    Raises
    ------
    KeyError
        For an unknown name; the message suggests the closest registered names and lists them all.
    ValueError, TypeError
        For a parameter the method does not have or a value it refuses (:func:`configure`).
    """
    try:
        entry = REGISTRY[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(name, list(REGISTRY), n=3, cutoff=0.6) if isinstance(name, str) else []
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise KeyError(f"unknown method {name!r}; {hint}registered: {', '.join(REGISTRY)}") from None
    return _configure(entry.method, name, params) if params else entry.method


def suite(suite_name: str, *, include: Sequence[str] | None = None, **params: Any) -> dict[str, Method]:
    """``{name: method}`` of one suite (catalogue order), each configured with ``params``.

    ``include`` keeps only the named methods; a name outside the suite is an error. ``params`` are set as a
    suite-wide setting: each on every member that has a field of that name, the budget with the members'
    privacy classes in mind (``epsilon`` on the private members only: a non-private reference keeps ε = ∞;
    ``delta`` on the (ε, δ)-DP members only: an ε-DP member keeps δ = 0). A parameter that no member of the
    suite has is an error (a typo must not pass silently).

    Raises
    ------
    TypeError
        For ``include`` given as one string instead of a list of names (it would be read as its characters).
    ValueError
        For an unknown suite, a name outside the suite, or a parameter no member has.
    """
    members = names(suite_name)  # an unknown suite is refused there
    if isinstance(include, str):  # a bare name would be taken as its characters
        raise TypeError(f"include must be a list of method names, not a str; got include={include!r} "
                        f"(did you mean include=[{include!r}]?)")
    if include is not None:
        check_names(include, allowed=members, what=f"method name(s) not in suite {suite_name!r}")
        members = [m for m in members if m in set(include)]
    taken = {f.name for m in names(suite_name) for f in dataclasses.fields(REGISTRY[m].method) if f.init}
    unused = sorted(set(params) - taken)
    if unused:
        raise ValueError(f"no method of suite {suite_name!r} has the parameter(s) {unused}; "
                         f"the suite's parameters: {sorted(taken)}")
    return {m: _broadcast(REGISTRY[m].method, params) for m in members}


def configure(method: Method, **params: Any) -> Method:
    """``method`` with the parameters ``params`` set (:func:`dataclasses.replace`, so the method validates them).

    Every parameter must be a field of the method's dataclass, and the budget must fit its privacy class: a
    non-private reference (ε = ∞, such as ``lp-eps-inf`` or ``subsample``) takes no ε other than ∞ and an ε-DP
    method no δ other than 0. Anything else is refused, naming the method, the parameter and what is
    allowed (use :func:`suite` to set a budget on a whole suite, each member by its privacy class).

    Raises
    ------
    TypeError
        For ``method`` that is not a method instance (a name, a class; :func:`check_method`).
    ValueError
        For a parameter the method does not have, or a budget outside its privacy class.
    """
    method = check_method(method)
    return _configure(method, method.name, params)


def _configure(method: Method, label: str, params: Mapping[str, Any]) -> Method:
    privacy = method.privacy
    if "epsilon" in params and privacy == "non-private" and not _is_inf(params["epsilon"]):
        raise ValueError(f"method {label!r} is a non-private reference (epsilon = inf): it takes no budget, got "
                         f"epsilon={params['epsilon']!r}; allowed: epsilon=math.inf (or a private method, such as "
                         f"{', '.join(repr(n) for n in names(privacy='(ε,δ)-DP')[:2])})")
    if "delta" in params and privacy == "ε-DP" and not _is_zero(params["delta"]):
        raise ValueError(f"method {label!r} is ε-DP (delta = 0): got delta={params['delta']!r}; allowed: delta=0 "
                         "(register or pick the method's (ε, δ)-DP variant for delta > 0)")
    fields = sorted(f.name for f in dataclasses.fields(method) if f.init)
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise ValueError(f"method {label!r} ({type(method).__name__}) has no parameter(s) {unknown}; "
                         f"its parameters: {fields}")
    return dataclasses.replace(method, **params)


def _is_inf(x: Any) -> bool:
    try:
        return math.isinf(float(x)) and float(x) > 0
    except (TypeError, ValueError):
        return False


def _is_zero(x: Any) -> bool:
    try:
        return float(x) == 0.0
    except (TypeError, ValueError):
        return False


def with_budget(method: Method, *, epsilon: float | None = None, delta: float | None = None) -> Method:
    """``method`` at a shared budget (ε, δ), each part set where the method's privacy class takes it.

    This is the budget of a table, a suite or the board: ``epsilon`` is set on a private method (a non-private
    reference keeps ε = ∞) and ``delta`` on an (ε, δ)-DP method (an ε-DP method keeps δ = 0, and its release
    records δ = 0 spent). To set one method's parameters exactly, use :func:`configure`, which refuses a budget
    outside the method's class.

    >>> with_budget(get("trig-I"), epsilon=0.5, delta=1e-5).delta
    0.0
    >>> with_budget(get("trig-II"), epsilon=0.5, delta=1e-5).delta
    1e-05

    Raises
    ------
    TypeError
        For ``method`` that is not a method instance (a name, a class; :func:`check_method`).
    """
    method = check_method(method)
    return _broadcast(method, {k: v for k, v in (("epsilon", epsilon), ("delta", delta)) if v is not None})


def _broadcast(method: Method, params: Mapping[str, Any]) -> Method:
    """``method`` with the suite-wide ``params`` it takes (:func:`suite`): its own fields, the budget by its class."""
    fields = {f.name for f in dataclasses.fields(method) if f.init}
    privacy = method.privacy
    changes = {}
    for k, v in params.items():
        if k not in fields:
            continue
        if k == "epsilon" and privacy == "non-private":
            continue
        if k == "delta" and privacy != "(ε,δ)-DP":
            continue
        changes[k] = v
    return dataclasses.replace(method, **changes) if changes else method


def describe(methods: Mapping[str, Method]) -> list[dict[str, Any]]:
    """One row per method: name, class, privacy class and every parameter (for tables and manifests).

    ``methods`` is a mapping ``{name: method}`` (e.g. :func:`suite`'s); anything else, or a value that is not a
    method instance, is refused with a TypeError naming it (:func:`check_method`).
    """
    if not isinstance(methods, Mapping):
        raise TypeError(f"methods must be a mapping {{name: method}} (e.g. suite('baselines')); got "
                        f"{type(methods).__name__} {methods!r:.80}")
    for n, m in methods.items():
        check_method(m, name=f"methods[{n!r}]")
    return [{"method": n, "class": type(m).__name__, "privacy": m.privacy,
             **{f.name: getattr(m, f.name) for f in dataclasses.fields(m)}} for n, m in methods.items()]
