"""A small batch output with checks (no compute): run folders <batch>/<notebook>/<key>/ with run.json and
metrics.json, as the batch runner writes them; for the published checks' tests (test_checks_records, test_docs)."""
from __future__ import annotations

import json

from dpkit.batch import run_key
from dpkit.outputs.report import Report


def fake_run(batch, notebook, params, checks, status="ok", error="CellExecutionError: boom"):
    """A batch run folder <batch>/<notebook>/<key>/ with its run.json and (when ``checks``) metrics.json."""
    key = run_key(f"{notebook}.ipynb", params)
    folder = batch / notebook / key
    r = Report(folder)
    for c in checks:
        r.check(*c[:4], **c[4] if len(c) > 4 else {})
    r.write()
    info = {"notebook": f"notebooks/{notebook}.ipynb", "key": key, "parameters": params, "status": status,
            "wall_time_s": 12.0}
    if status != "ok":
        info["error"] = error
    (folder / "run.json").write_text(json.dumps(info))
    return folder


def fake_batch(tmp_path, *, control_fails=True):
    """Two notebooks, one of them run on two parameter sets (same check ids, told apart by the run key)."""
    batch = tmp_path / "batch"
    for seed in (1, 2):
        fake_run(batch, "20_tables", {"SEED": seed, "QUICK": False},
             [("T1", "the error bound holds, eq. (3.4)", 0.5, 1.0, {"confidence": 0.95}),
              ("T2", "the printed constant, a negative control", 2.0, 1.0, {"expected": "FAIL"})])
    fake_run(batch, "31_linear", {"SEED": 0},
         [("L1", "exact: the sensitivity is finite (bound: inf)", 0.01, float("inf")),
          ("L2", "under-noised mechanism, a control", 0.2 if control_fails else 0.0, 0.1, {"expected": "FAIL"})])
    return batch
