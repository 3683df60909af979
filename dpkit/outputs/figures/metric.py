"""Which error a figure shows: the *thesis metric* (the worst error over the workload's random queries, the
number the thesis's tables print; the default everywhere) or the *class supremum* (the error of the worst query
of the whole query class, the quantity the thesis's theorems bound; :mod:`dpkit.queries.supremum`).

A row carries the thesis metric as ``abs_mean, abs_std, abs_min, abs_max`` and the class supremum as
``sup_abs_mean, sup_abs_std, sup_abs_min, sup_abs_max`` (:mod:`dpkit.experiments.summary`); the supremum is of the
absolute error only.
"""
from __future__ import annotations

from dpkit.core.validation import check_choice

__all__ = ["METRICS", "check_metric", "metric_column", "metric_label", "metric_caption"]

#: The metrics a figure can show.
METRICS: tuple[str, ...] = ("thesis", "supremum")
_COLUMN = {"thesis": "abs", "supremum": "sup_abs"}
_LABEL = {"thesis": "worst absolute error", "supremum": "class supremum of the absolute error"}
_CAPTION = {"thesis": "Mean worst absolute error",
            "supremum": "Mean class supremum of the absolute error (the error of the worst query of the whole query "
                        "class: a single Gaussian kernel centred in the cube, found by search, a certified lower bound; "
                        "not the thesis metric, the worst of the workload's random queries)"}


def check_metric(metric: object, *, name: str = "metric") -> str:
    """``metric`` if it is one of :data:`METRICS`; else a ``ValueError`` naming ``name`` and the allowed values.

    >>> check_metric("supremum")
    'supremum'
    >>> check_metric("sup", name="METRIC")
    Traceback (most recent call last):
    ...
    ValueError: METRIC must be one of ('thesis', 'supremum'); got 'sup'
    """
    return check_choice(metric, name=name, choices=METRICS)


def metric_column(metric: str) -> str:
    """The column prefix of ``metric``'s absolute error: ``"abs"`` or ``"sup_abs"`` (``<prefix>_mean`` etc.)."""
    return _COLUMN[check_metric(metric)]


def metric_label(metric: str) -> str:
    """The error axis's label for ``metric``."""
    return _LABEL[check_metric(metric)]


def metric_caption(metric: str) -> str:
    """The opening words of a caption for ``metric`` (``"Mean worst absolute error"`` for the thesis metric)."""
    return _CAPTION[check_metric(metric)]
