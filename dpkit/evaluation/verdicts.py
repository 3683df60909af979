"""The value every claim returns: a :class:`Check` with its statistic, bound and verdict.

``expected`` is the verdict the theory predicts (``"FAIL"`` for a negative control). A notebook's statistical checks
share one :class:`FalseAlarmBudget`, the probability that a correct implementation fails any of them in one run;
:func:`retry_once` re-runs a failed attempt once on fresh randomness and fails only if both fail.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from dpkit.core.rng import RNGLike, resolve_rng, spawn

__all__ = ["VERDICTS", "Check", "FalseAlarmBudget", "check", "retry_once", "with_retry"]

VERDICTS = ("PASS", "FAIL")


@dataclass
class Check:
    """One claim checked by simulation or exact computation.

    Parameters
    ----------
    id : str
        Stable identifier, e.g. ``"Ex1.2-auditor"``.
    claim : str
        What the theory says, in words (with the thesis equation number).
    statistic : float
        What was measured.
    bound : float
        What the claim allows.
    confidence : float or None
        Confidence level of the statistic's bound (e.g. 0.95), ``None`` for exact checks.
    verdict : {"PASS", "FAIL"}
        Whether the measured statistic satisfied the claim.
    expected : {"PASS", "FAIL"}
        The verdict the theory predicts.
    note : str
        Free text (e.g. the point estimate behind a confidence bound).
    attempts : {1, 2}
        How many attempts the check's rule allows: 1 for a single test, 2 under the retry rule of
        :func:`retry_once` (its false-alarm probability is then ``level²``).
    retry_statistic : float or None
        The statistic of the second attempt when the first one failed and the check was re-run.
    """

    id: str
    claim: str
    statistic: float
    bound: float
    confidence: float | None
    verdict: str
    expected: str = "PASS"
    note: str = ""
    attempts: int = 1
    retry_statistic: float | None = None

    def __post_init__(self) -> None:
        for k in ("verdict", "expected"):
            v = getattr(self, k)
            if v not in VERDICTS:
                raise ValueError(f"{k} must be one of {VERDICTS}; got {v!r}")
        if self.attempts not in (1, 2):
            raise ValueError(f"attempts must be 1 (single test) or 2 (retry rule); got {self.attempts!r}")

    @property
    def consistent(self) -> bool:
        return self.verdict == self.expected


def check(
    id: str,
    claim: str,
    statistic: float,
    bound: float,
    *,
    holds: bool | None = None,
    relation: str = "<=",
    confidence: float | None = None,
    expected: str = "PASS",
    note: str = "",
) -> Check:
    """Build a :class:`Check`; the verdict is ``statistic <relation> bound`` unless ``holds`` is given."""
    if holds is None:
        ops = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b}
        if relation not in ops:
            raise ValueError(f"relation must be one of {tuple(ops)}; got {relation!r}")
        holds = bool(ops[relation](float(statistic), float(bound)))
    return Check(
        id=id,
        claim=claim,
        statistic=float(statistic),
        bound=float(bound),
        confidence=None if confidence is None else float(confidence),
        verdict="PASS" if holds else "FAIL",
        expected=expected,
        note=note,
    )




def with_retry(first: Check, second: Check | None) -> Check:
    """Combine the attempts of a check under the retry rule (see :func:`retry_once`).

    ``first`` keeps its statistic and bound (so a run reports what it measured first); the verdict
    is ``first``'s unless ``second`` (the re-run, ``None`` when there was none) exists, in which
    case the check fails only if both attempts failed. ``attempts`` becomes 2 in both cases: the
    rule, not the outcome, sets the false-alarm probability.
    """
    if second is None:
        return replace(first, attempts=2)
    if second.id != first.id:
        raise ValueError(f"the retry of check {first.id!r} returned check {second.id!r}")
    verdict = "FAIL" if first.verdict == second.verdict == "FAIL" else "PASS"
    note = (f"{first.note}; " if first.note else "") + (
        f"retry rule: attempt 1 {first.statistic:.4g} vs {first.bound:.4g} failed, attempt 2 on fresh randomness "
        f"{second.statistic:.4g} → {second.verdict}")
    return replace(first, verdict=verdict, attempts=2, retry_statistic=second.statistic, note=note)


def retry_once(attempt: Callable[[np.random.Generator], Check], rng: RNGLike) -> Check:
    """Run a statistical check under the retry rule: a failed attempt is re-run once on fresh randomness.

    ``attempt(g)`` draws everything it needs from ``g``. The first attempt gets ``resolve_rng(rng)``
    (exactly what a single test would get, so its statistic is unchanged for the same seed); if it
    fails and the check is expected to PASS, a second attempt runs on a stream spawned from the
    same generator after the first attempt (independent of it) at the same level, and the check
    fails only if both fail. For a correct implementation each attempt fails with probability
    ≤ ``level``, so the check does with probability ≤ ``level²``; a real defect that fails each
    attempt with probability ``q`` fails the check with probability ``q²``.

    Negative controls (``expected="FAIL"``) are never re-run: a second chance to *pass* would
    only lower their power.

    The rule follows the practice of OpenDP's test suite (``opendp/opendp``): its flaky statistical
    comparison ``test_pca_compare_sklearn`` (``python/test/extras/test_pca.py``) re-runs the
    assertion on fresh randomness and fails only if every attempt fails, while its sampler tests
    (``rust/src/traits/samplers/test.rs``) fix a small per-test Type I error (``ALPHA = 1e-6``) so
    that a suite of many tests rarely fails by chance. Here the per-test level comes from the
    notebook's :class:`FalseAlarmBudget` and the retry is limited to one re-run, so the accounting
    stays exact: ``level²`` per retried check.

    >>> def attempt(g):
    ...     u = float(g.random())
    ...     return check("demo", "a uniform draw is ≥ 0.5", u, 0.5, relation=">=", confidence=0.5)
    >>> c = retry_once(attempt, 3)
    >>> c.attempts, c.verdict in ("PASS", "FAIL")
    (2, True)
    """
    g = resolve_rng(rng)
    first = attempt(g)
    if first.verdict == "PASS" or first.expected == "FAIL":
        return with_retry(first, None)
    (fresh,) = spawn(g, 1)
    return with_retry(first, attempt(fresh))


@dataclass(frozen=True)
class FalseAlarmBudget:
    """A notebook's false-alarm budget split over its statistical checks (Bonferroni).

    ``total`` (α) bounds the probability that a *correct* implementation fails any of the
    ``n_tests`` charged checks in one run. Each charged check runs at the per-test level
    ``level = α/n_tests`` (union bound: ``P(any false alarm) ≤ Σ_i P(check i fails) ≤ α``, whatever
    the dependence between the checks). A check under the retry rule (:func:`retry_once`) fails
    falsely with probability ≤ ``level²`` (two independent attempts at ``level``), so the bound the
    record states, ``Σ_i level^{attempts_i}``, is ≤ α.

    Charged: every check with a ``confidence`` (a statistical check) that is expected to PASS.
    Not charged: exact checks (``confidence is None``) and negative controls (``expected="FAIL"``):
    a negative control tests a deliberately wrong claim, so it cannot raise a false alarm; it runs at
    the same per-test level and must still FAIL by a wide margin (its power is recorded).

    Why Bonferroni and not Holm: a false alarm is the event "some correct check fails". When every
    charged hypothesis is true, Holm's step-down rejects something iff the smallest p-value is
    ≤ α/m, exactly Bonferroni's event, so Holm has the same false-alarm probability; it only
    adds power to *further* rejections after a first one, which a run that already failed does not
    need. Bonferroni also works with checks that report a confidence bound instead of a p-value
    (ε_lb ≤ ε, Clopper–Pearson and Hoeffding bounds), which Holm's ordering of p-values would need.

    >>> b = FalseAlarmBudget(1e-3, n_tests=4)
    >>> b.level, b.confidence
    (0.00025, 0.99975)
    """

    total: float
    n_tests: int

    def __post_init__(self) -> None:
        if not (isinstance(self.total, (int, float)) and 0.0 < float(self.total) < 1.0):
            raise ValueError(f"FALSE_ALARM (total) must be in (0, 1); got {self.total!r}")
        if isinstance(self.n_tests, bool) or not isinstance(self.n_tests, (int, np.integer)) or self.n_tests < 1:
            raise ValueError(f"n_tests must be a positive integer (the charged statistical checks); got {self.n_tests!r}")

    @property
    def level(self) -> float:
        """Per-test level ``α/n_tests``: the probability that one charged attempt fails for a correct implementation."""
        return float(self.total) / int(self.n_tests)

    @property
    def confidence(self) -> float:
        """``1 − level``: the ``confidence`` every statistical check of the notebook carries."""
        return 1.0 - self.level

    def record(self, checks: Sequence[Check]) -> dict[str, Any]:
        """The budget's accounting for ``metrics.json`` (``report.extra["false_alarm_budget"]``).

        Raises ``ValueError`` (naming the checks) unless exactly ``n_tests`` statistical checks are
        expected to PASS and every statistical check carries ``confidence == 1 − level``, so a
        notebook cannot add a check without charging it, nor run one at another level.
        """
        stat = [c for c in checks if c.confidence is not None]
        charged = [c for c in stat if c.expected == "PASS"]
        if len(charged) != self.n_tests:
            raise ValueError(f"the budget is split over n_tests={self.n_tests} checks, but {len(charged)} statistical checks "
                             f"are expected to PASS: {[c.id for c in charged]}")
        off = [(c.id, c.confidence) for c in stat if not math.isclose(c.confidence, self.confidence, rel_tol=1e-12, abs_tol=0.0)]
        if off:
            raise ValueError(f"statistical checks must carry confidence = 1 − level = {self.confidence!r}; got {off}")
        rows = [dict(id=c.id, level=self.level, attempts=c.attempts, false_alarm=self.level**c.attempts, verdict=c.verdict,
                     statistic=c.statistic, retry_statistic=c.retry_statistic) for c in charged]
        controls = [dict(id=c.id, level=self.level, statistic=c.statistic, bound=c.bound, verdict=c.verdict) for c in stat
                    if c.expected == "FAIL"]
        return dict(method="bonferroni", total=float(self.total), n_tests=int(self.n_tests), level=self.level,
                    confidence=self.confidence, bound=float(sum(r["false_alarm"] for r in rows)),
                    retry_rule="a failed attempt is re-run once on fresh randomness at the same level; the check fails only "
                               "if both fail (false-alarm probability level²); negative controls are never re-run",
                    charged=rows, controls=controls)
