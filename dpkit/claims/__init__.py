"""Claims as library code: one module per topic, each public function checks one statement of
the thesis or its sources and returns :class:`~dpkit.evaluation.verdicts.Check` values (with the
statistic, the bound, the confidence and the verdict). Notebooks only choose parameters, call
these functions, hand the checks to :class:`~dpkit.outputs.report.Report` and draw figures."""
