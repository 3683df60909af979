"""Every metrics.json records its provenance (commit, dirty flag, versions, CPU count, processor, BLAS)."""
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
    assert set(prov["cpu"]) == {"model", "numpy_simd"} and all("architecture" in b for b in prov["blas"])


def test_the_processor_and_numpys_kernels_are_recorded():
    """The bits of a result depend on the processor's vectorised kernels (numpy's dispatch, the BLAS kernels): both
    are named, as numpy itself reports them."""
    import numpy as np

    from dpkit.core.machine import cpu

    info = cpu()
    assert info["model"] is None or isinstance(info["model"], str) and info["model"]
    simd = info["numpy_simd"]
    assert simd is not None and set(simd) <= set(np._core._multiarray_umath.__cpu_dispatch__)
    assert all(np._core._multiarray_umath.__cpu_features__[t] for t in simd)
