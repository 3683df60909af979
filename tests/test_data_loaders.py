"""dpkit.data: the Table 3.1 shapes on this machine, rescaling, bounds, provenance, no-file paths.

Real-data tests need the machine's offline copies ``<shared>/data/raw`` (:func:`dpkit.core.paths.shared_dir`:
``$DPKIT_SHARED_DIR``, else a ``shared`` folder beside the clone); they are skipped with that reason when absent.
"""
from __future__ import annotations

import gzip
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

import dpkit.data as dd
import dpkit.data.download as ddl
import dpkit.data.files as dfiles
import dpkit.data.recipes as drecipes
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.data import Dataset, load

SHARED = dfiles.shared_raw_dir()
needs_shared = pytest.mark.skipif(SHARED is None, reason="the offline copies <shared>/data/raw are absent")

THESIS = {"CRM": (1993, 101), "CTG": (2126, 28), "PKS": (5875, 19), "WDBC": (569, 30)}


@pytest.fixture
def no_files(tmp_path, monkeypatch):
    """No raw files anywhere and no network: empty $DPKIT_DATA_DIR, no repo/shared folders, downloads fail.

    Returns the list of URLs a download was attempted for. Shared by the other tests/test_data_*.py files.
    """
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("DPKIT_DATA_DIR", str(empty))
    monkeypatch.setattr(dfiles, "shared_raw_dir", lambda: None)
    monkeypatch.setattr(dfiles, "repo_raw_dir", lambda: tmp_path / "no-repo-raw")
    calls = []

    def offline(url, dest, progress=False):
        calls.append(url)
        raise ConnectionError(f"offline test: no route to {url}")

    monkeypatch.setattr(ddl, "download_url", offline)
    return calls


def _quiet_load(*a, **k) -> Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return load(*a, **k)


def test_registry_lists_the_six_and_mock():
    assert dd.list_datasets() == ["CRM", "CSN", "CTG", "PAM", "PKS", "WDBC", "mock"]
    for code in ["CRM", "CSN", "CTG", "PAM", "PKS", "WDBC"]:
        spec = dd.dataset_info(code)
        assert spec.licence == "CC BY 4.0" and spec.uci_id and spec.page.startswith("https://archive.ics.uci.edu/")
        assert spec.thesis_shape is not None and spec.preprocessing
        assert all(len(v.sha256) == 64 for f in spec.files for v in f.variants)
    crm = dd.dataset_info("crm")  # case-insensitive
    assert {v.sha256[:8] for v in crm.file("data").variants} == {"09e0b5c0", "d90d85bd"}  # CRLF and LF


@needs_shared
@pytest.mark.parametrize("code", sorted(THESIS))
def test_shapes_match_thesis(code):
    ds = _quiet_load(code)
    assert ds.shape == THESIS[code] and ds.matches_thesis
    assert ds.X.dtype == np.float64 and ds.X.flags.c_contiguous and not ds.X.flags.writeable
    assert np.all(ds.X >= -1) and np.all(ds.X <= 1)
    assert len(ds.columns) == ds.d == ds.bounds.shape[0] and len(set(ds.columns)) == ds.d
    p = ds.provenance
    assert p["files"][0]["verified"] is True
    assert p["files"][0]["found_in"] in ("shared data/raw", "repo data/raw", "$DPKIT_DATA_DIR")
    assert len(p["files"][0]["sha256"]) == 64 and p["raw_shape"] == list(ds.raw_shape)


@needs_shared
def test_crm_recipe_and_public_bounds():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # public bounds: no leak warning
        ds = load("CRM")
    assert ds.raw_shape == (1994, 128) and ds.bounds_source == "public"
    assert np.all(ds.bounds == [0.0, 1.0])
    assert "state" not in ds.columns and "LemasSwornFT" not in ds.columns and ds.columns[-1] == "ViolentCrimesPerPop"
    assert ds.provenance["rows_dropped_missing"] == 1 and ds.provenance["clipped_values"] == 0
    raw = pd.read_csv(SHARED / "CRM" / "communities.data", header=None, na_values="?")
    raw = raw.iloc[:, [i for i, c in enumerate(dd.dataset_info("CRM").raw["columns"]) if c in ds.columns]].dropna()
    np.testing.assert_allclose(ds.X, 2 * raw.to_numpy() - 1, atol=1e-15)  # [0,1] -> [-1,1]


@needs_shared
def test_ctg_columns_are_the_documented_28():
    ds = _quiet_load("CTG")
    assert "DR_count" not in ds.columns and "Tendency" not in ds.columns
    assert ds.provenance["columns_dropped_constant"] == ["DR_count"]
    assert "Tendency" in ds.provenance["columns_excluded"]
    assert ds.columns[:2] == ("b", "e") and {"LB", "ASTV", "Variance", "AC", "AC_count"} <= set(ds.columns)


@needs_shared
def test_data_bounds_warn_once_and_rescale_exactly():
    with pytest.warns(PrivacyLeakWarning) as rec:
        ds = load("PKS")
    assert sum(issubclass(r.category, PrivacyLeakWarning) for r in rec) == 1
    assert ds.bounds_source == "data" and ds.provenance["privacy_leak_warning"] is True
    assert "min/max" in ds.provenance["bounds_reference"]
    # data bounds: every column reaches exactly -1 and +1, and the inverse map gives back the file's values
    assert np.all(ds.X.min(axis=0) == -1.0) and np.all(ds.X.max(axis=0) == 1.0)
    raw = pd.read_csv(SHARED / "PKS" / "parkinsons_updrs.data")[list(ds.columns)].to_numpy()
    np.testing.assert_allclose(ds.X_original, raw, rtol=1e-12, atol=1e-12 * np.abs(raw).max())
    assert ds.columns[:3] == ("test_time", "motor_UPDRS", "total_UPDRS")
    # CRM with bounds="data" also warns: the switch is honoured even where public bounds exist
    with pytest.warns(PrivacyLeakWarning):
        assert load("CRM", bounds="data").bounds_source == "data"


@needs_shared
def test_user_bounds_clip_and_are_recorded():
    with pytest.warns(dd.ClippingWarning, match=r"PKS: \d+ of 111625 values \(21\.2%\)") as rec:
        ds = load("PKS", bounds=(0.0, 1.0))  # deliberately too narrow: values clipped, with a warning (no leak warning)
    assert not any(issubclass(r.category, PrivacyLeakWarning) for r in rec)
    assert ds.bounds_source == "user" and ds.provenance["clipped_values"] > 0
    assert ds.provenance["clipped_fraction"] == ds.provenance["clipped_values"] / ds.X.size
    assert np.all(np.abs(ds.X) <= 1)
    with pytest.raises(ValueError, match="upper > lower"):
        load("PKS", bounds=(1.0, 0.0))
    with pytest.raises(ValueError, match="bounds must be"):
        load("PKS", bounds="median")


@needs_shared
def test_csn_test_split_stands_in_and_subsamples_are_seeded():
    ds = _quiet_load("CSN")
    assert ds.shape == (99762, 8) and ds.thesis_shape == (100000, 8) and ds.matches_thesis is False
    assert ds.provenance["files"][0]["role"] == "test"
    assert any("TEST split stands in" in n for n in ds.provenance["notes"])
    assert ds.columns == ("age", "wage_per_hour", "capital_gains", "capital_losses", "dividends_from_stocks",
                          "instance_weight", "num_persons_worked_for_employer", "weeks_worked_in_year")
    a, b, c = (_quiet_load("CSN", n=500, rng=s) for s in (1, 1, 2))
    assert np.array_equal(a.X, b.X) and not np.array_equal(a.X, c.X)
    assert a.provenance["subsample"]["seed"] == 1 and a.provenance["subsample"]["of"] == 99762
    with pytest.raises(ValueError, match="exceeds"):
        _quiet_load("CSN", n=10**6)


@needs_shared
def test_csn_training_file_gives_thesis_n(tmp_path, monkeypatch):
    """A stand-in training file (test lines twice, minus one = 199,523 rows) -> seeded 100000-row subsample."""
    with gzip.open(SHARED / "CSN" / "census-income.test.gz", "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    fake = lines + lines[:-1]
    assert len(fake) == 199523
    d = tmp_path / "CSN"
    d.mkdir()
    with gzip.open(d / "census-income.data.gz", "wb", compresslevel=1) as fh:
        fh.write(b"".join(fake))
    monkeypatch.setenv("DPKIT_DATA_DIR", str(tmp_path))
    ds = _quiet_load("CSN", rng=7)
    assert ds.shape == (100000, 8) and ds.matches_thesis
    p = ds.provenance
    assert p["files"][0]["role"] == "train" and p["subsample"] == {
        "n": 100000, "of": 199523, "seed": 7, "method": p["subsample"]["method"]}
    assert "structure" in p["files"][0]["check"]  # no published checksum for the training file
    # a training file with the wrong row count is refused, not used
    with gzip.open(d / "census-income.data.gz", "wb", compresslevel=1) as fh:
        fh.write(b"".join(lines))
    with pytest.raises(dd.MalformedDataError, match="199523"):
        _quiet_load("CSN")


@needs_shared
def test_loads_are_cached_and_results_independent():
    a = _quiet_load("WDBC")
    b = _quiet_load("WDBC")
    assert a.X is not b.X and np.array_equal(a.X, b.X)
    with pytest.raises(ValueError):
        a.X[0, 0] = 0.0  # read-only: a caller cannot corrupt the cache
    info = drecipes._parse_cached.cache_info()
    assert info.hits >= 1


@needs_shared
def test_wdbc_sklearn_copy_equals_file():
    f = _quiet_load("WDBC", source="files")
    s = _quiet_load("WDBC", source="sklearn")
    assert s.provenance["source"] == dd.SKLEARN_SOURCE and np.array_equal(f.X, s.X) and f.columns == s.columns


def test_wdbc_and_mock_work_with_no_files(no_files):
    ds = _quiet_load("WDBC")
    assert ds.shape == (569, 30) and ds.provenance["source"] == "scikit-learn bundled copy"
    assert ds.provenance["files"][0]["verified"] is True  # matrix hash equals the UCI file's
    m = load("mock", n=200, d=4, rng=3)
    assert m.shape == (200, 4) and m.bounds_source == "public" and m.provenance["seed"] == 3
    assert np.array_equal(m.X, load("mock", n=200, d=4, rng=3).X)
    assert not np.array_equal(m.X, load("mock", n=200, d=4, rng=4).X)
    assert np.all(np.abs(m.X) <= 1) and load("mock").shape == (1000, 5)
    with pytest.raises(ValueError, match="only for the mock"):
        load("WDBC", d=3)


@needs_shared
def test_explicit_path_and_env_take_precedence(tmp_path, monkeypatch, no_files):
    shared = SHARED
    (tmp_path / "env" / "WDBC").mkdir(parents=True)
    shutil.copy(shared / "WDBC" / "wdbc.data", tmp_path / "env" / "WDBC" / "wdbc.data")
    monkeypatch.setenv("DPKIT_DATA_DIR", str(tmp_path / "env"))
    ds = _quiet_load("WDBC")
    assert ds.provenance["files"][0]["found_in"] == "$DPKIT_DATA_DIR"
    other = tmp_path / "mycopy.csv"
    shutil.copy(shared / "WDBC" / "wdbc.data", other)
    ds = _quiet_load("WDBC", path=other)
    assert ds.provenance["files"][0]["found_in"] == "path argument" and ds.provenance["files"][0]["file"] == str(other)
    # with an explicit path nothing else is consulted: an empty folder is an error, not a fallback
    (tmp_path / "nothing").mkdir()
    with pytest.raises(dd.DataNotFoundError):
        _quiet_load("WDBC", path=tmp_path / "nothing")


def test_shared_dir_found_from_cwd(tmp_path, monkeypatch):
    """CI layout: <root>/clone beside the offline copies <root>/<shared>/data/raw; the lookup walks up from the
    working directory."""
    (tmp_path / "shared" / "data" / "raw").mkdir(parents=True)
    (tmp_path / "clone" / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "clone" / "sub")
    monkeypatch.delenv("DPKIT_SHARED_DIR", raising=False)
    found = dfiles.shared_raw_dir()
    # the package's own ancestors are tried first; on this machine they may find the real shared folder
    assert found is not None and found.parts[-3:] == ("shared", "data", "raw")
    monkeypatch.setenv("DPKIT_SHARED_DIR", str(tmp_path / "shared"))
    assert dfiles.shared_raw_dir() == tmp_path / "shared" / "data" / "raw"


def test_table_3_1_rows(no_files):
    rows = {r["code"]: r for r in dd.table_3_1()}
    assert set(rows) == {"CRM", "CSN", "CTG", "PAM", "PKS", "WDBC"}
    assert rows["WDBC"]["status"] == "match" and rows["WDBC"]["source"] == "scikit-learn bundled copy"
    assert rows["PAM"]["status"].startswith("unavailable") and rows["PAM"]["thesis_n"] == 19870
