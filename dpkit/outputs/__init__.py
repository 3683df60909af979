"""Outputs: the ``metrics.json`` contract, the one plotting style and figure exporter, table
writers and the widget panels. Receives results; computes none."""
