"""Claims as library code: one module per topic, each public function checks one statement of the thesis or its sources
and returns :class:`~dpkit.evaluation.verdicts.Check` values.

Statistical checks take their per-test level ``gamma`` (default 10⁻³) from the notebook's
:class:`~dpkit.evaluation.verdicts.FalseAlarmBudget`; checks under the retry rule (:func:`~dpkit.claims.results.retried`)
fail only if a re-run on fresh randomness fails too (probability γ²); negative controls never retry.
"""
