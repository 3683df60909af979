"""dpkit.claims.data (the checks of notebook 10) and dpkit.outputs.figures.data, on mock data and, where it is
available, on the shared raw copies. Each check is shown to FAIL on a deliberately broken input."""
from __future__ import annotations

import dataclasses
import warnings

import pytest
import test_data_loaders
from test_data_loaders import needs_shared

from dpkit.claims import data as dc
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.data import load

no_files = test_data_loaders.no_files  # the shared fixture


def _verdicts(checks):
    return {c.id: c.verdict for c in checks}


def test_mock_check_and_unknown_files(no_files):
    loaded = dc.load_table_3_1(["PAM", "WDBC"], rng=0)
    assert set(loaded.datasets) == {"WDBC"} and "PAM" in loaded.errors
    assert loaded.leak_warnings["WDBC"] and all("rescaling bounds" in m for m in loaded.leak_warnings["WDBC"])
    assert dc.pam_check(loaded).id == "PAM-offline-message" and dc.pam_check(loaded).verdict == "PASS"
    loaded.errors["PAM"] = "PAM: no such file"  # a message that does not say what to do
    assert dc.pam_check(loaded).verdict == "FAIL"
    assert dc.mock_reproducible_check(3).verdict == "PASS"
    assert dc.wdbc_sklearn_check(loaded) == []  # WDBC came from scikit-learn here: nothing to compare
    assert _verdicts(dc.shape_checks(loaded))["shape-WDBC"] == "PASS"
    assert _verdicts(dc.shape_checks(loaded))["shape-CRM"] == "FAIL"  # not loaded: reported, not skipped


def test_bounds_check_fails_when_a_warning_or_record_is_missing():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        ds = load("mock", n=50, d=2, rng=1, bounds="data")  # data bounds: one undeclared step, one warning
    ok = dc.LoadedDatasets({"mock": ds}, {"mock": ["mock: rescaling bounds are ..."]}, {})
    assert _verdicts(dc.dataset_checks(ok)) == {"checksum-mock": "PASS", "range-mock": "PASS", "bounds-mock": "PASS"}
    silent = dc.LoadedDatasets({"mock": ds}, {"mock": []}, {})  # the warning was swallowed
    assert _verdicts(dc.dataset_checks(silent))["bounds-mock"] == "FAIL"
    prov = dict(ds.provenance, data_dependent_steps=[])  # the step was not recorded
    unrecorded = dataclasses.replace(ds, provenance=prov)
    assert _verdicts(dc.dataset_checks(dc.LoadedDatasets({"mock": unrecorded}, {"mock": ["x"]}, {})))["bounds-mock"] == "FAIL"
    out_of_range = dataclasses.replace(ds, X=ds.X * 2)
    assert _verdicts(dc.dataset_checks(dc.LoadedDatasets({"mock": out_of_range}, {"mock": ["x"]}, {})))["range-mock"] == "FAIL"


@needs_shared
def test_table_3_1_checks_on_the_shared_copies():
    loaded = dc.load_table_3_1(["CRM", "CSN", "CTG", "PAM", "PKS", "WDBC"], rng=0)
    checks = dc.table_3_1_checks(loaded, seed=0)
    assert all(c.consistent for c in checks), [c for c in checks if not c.consistent]
    v = {c.id: c for c in checks}
    assert v["shape-CSN-n"].expected == "FAIL" and "bounds-CTG" in v and "WDBC-sklearn-equals-file" in v
    assert len(loaded.leak_warnings["CTG"]) == 2 and len(loaded.leak_warnings["CRM"]) == 0  # DR_count + bounds; none
    assert "drop_constant_columns" in v["bounds-CTG"].note


def test_marginal_figures_receive_loaded_data():
    from dpkit.outputs.figures.data import dataset_marginals, marginal_histograms, pick_columns

    m = load("mock", n=100, d=5, rng=0)
    fig = marginal_histograms([m], k=3, bins=10)
    assert len([ax for ax in fig.axes if ax.axison]) == 3 and pick_columns(5, 3) == [0, 2, 4]
    assert dataset_marginals({"mock": m}, "mock", k=2).axes
    with pytest.raises(ValueError, match="name must be one of"):
        dataset_marginals({"mock": m}, "CRM")
    with pytest.raises(ValueError, match="datasets"):
        marginal_histograms([])
    import matplotlib.pyplot as plt

    plt.close("all")
