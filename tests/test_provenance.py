"""Every metrics.json records its provenance (commit, dirty flag, versions, CPU count, BLAS)."""
from __future__ import annotations

import json

from dpkit.outputs.report import Report


def test_metrics_json_records_provenance(tmp_path):
    path = Report(tmp_path).write()
    prov = json.loads(path.read_text())["meta"]["provenance"]
    assert set(prov) >= {"git", "python", "cpu_count", "packages", "blas"}
    assert prov["packages"]["numpy"] and prov["cpu_count"] >= 1
    assert prov["git"]["commit"] is None or len(prov["git"]["commit"]) == 40
    assert isinstance(prov["blas"], list)
