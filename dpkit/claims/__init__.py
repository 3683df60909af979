"""Claims as library code: one module per topic, each public function checks one statement of
the thesis or its sources and returns :class:`~dpkit.evaluation.verdicts.Check` values (with the
statistic, the bound, the confidence and the verdict). Notebooks only choose parameters, call
these functions, hand the checks to :class:`~dpkit.outputs.report.Report` and draw figures.

Statistical checks take their per-test level ``gamma`` (a single attempt of a correct check fails with
probability ≤ γ; default 10⁻³, the notebooks' historical γ). A notebook passes the level of its
:class:`~dpkit.evaluation.verdicts.FalseAlarmBudget` (``FALSE_ALARM`` split over its statistical checks).
Checks marked "retry rule" run under :func:`~dpkit.claims.results.retried`: they fail only if a
re-run on fresh randomness fails too (false-alarm probability γ²); negative controls never retry.
"""
