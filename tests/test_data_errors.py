"""dpkit.data bad input: every case is a clear error naming the file and the fix; nothing half-loads.

Corrupted copies are made in tmp_path from the shared raw files (skipped with that reason if
``<shared>/data/raw`` is absent); synthetic files are used where no real file is needed.
"""
from __future__ import annotations

import gzip
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import test_data_loaders
from test_data_loaders import SHARED, needs_shared

import dpkit.data as dd
import dpkit.data.download as ddl
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.data import (
    ChecksumError,
    DataNotFoundError,
    DataUnavailableError,
    MalformedDataError,
    UnknownDatasetError,
    load,
)

no_files = test_data_loaders.no_files  # the shared fixture


def _copy(code: str, name: str, dest: Path) -> Path:
    (dest / code).mkdir(parents=True, exist_ok=True)
    out = dest / code / name
    shutil.copy(SHARED / code / name, out)
    out.chmod(0o644)
    return out


def _load(*a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return load(*a, **k)


def test_unknown_name_lists_known_ones():
    with pytest.raises(UnknownDatasetError, match=r"unknown data set 'ADULT'.*CRM, CSN, CTG, PAM, PKS, WDBC, mock"):
        load("ADULT")
    with pytest.raises(TypeError):
        load(3)


def test_missing_file_says_what_and_where(no_files, tmp_path):
    with pytest.raises(DataNotFoundError) as ei:
        load("CRM", download=False)
    msg = str(ei.value)
    assert "communities.data" in msg and "1,102,815 bytes" in msg
    assert "machine-learning-databases/communities/communities.data" in msg
    assert "DPKIT_DATA_DIR" in msg and "fetch CRM" in msg and str(tmp_path / "empty") in msg
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load("PKS", path=tmp_path / "nope.data")
    # an explicit folder without the file is an error even though other locations might hold one
    (tmp_path / "other").mkdir()
    with pytest.raises(DataNotFoundError, match=r"Searched \(only the path argument\)"):
        load("PKS", path=tmp_path / "other")
    assert no_files == []  # download=False: no attempt


def test_pam_offline_clear_message(no_files, tmp_path):
    with pytest.raises(DataNotFoundError) as ei:
        load("PAM")  # default: tries the download, which fails offline
    msg = str(ei.value)
    assert no_files == ["https://archive.ics.uci.edu/ml/machine-learning-databases/00231/PAMAP2_Dataset.zip"]
    assert "download failed (ConnectionError" in msg
    for s in ("PAMAP2_Dataset.zip", "Protocol/subject101.dat", "141,698,539", "Protocol/subject109.dat",
              "PAM/Protocol/subject101.dat", "DPKIT_DATA_DIR", "fetch PAM", "pamap2"):
        assert s in msg, s
    assert list((tmp_path / "empty").iterdir()) == []  # a failed download leaves nothing behind
    with pytest.raises(ValueError, match="subjects"):
        load("PAM", subjects=[110])


@needs_shared
def test_truncated_file_is_a_checksum_error(tmp_path):
    p = _copy("CRM", "communities.data", tmp_path)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ChecksumError) as ei:
        load("CRM", path=p)
    msg = str(ei.value)
    assert str(p) in msg and "truncated" in msg and "communities.data" in msg and "fetch CRM" in msg


@needs_shared
def test_same_size_edit_is_a_checksum_error_and_cache_notices_changes(tmp_path):
    p = _copy("PKS", "parkinsons_updrs.data", tmp_path)
    assert _load("PKS", path=p).shape == (5875, 19)  # hash now cached for this (size, mtime)
    data = bytearray(p.read_bytes())
    i = data.index(b"72,0,5.6431")
    data[i:i + 2] = b"73"  # one digit changed, same size
    p.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="content differs") as ei:
        load("PKS", path=p)
    assert str(p) in str(ei.value)


@needs_shared
def test_lf_variant_of_crm_is_accepted(tmp_path):
    p = _copy("CRM", "communities.data", tmp_path)
    p.write_bytes(p.read_bytes().replace(b"\r\n", b"\n"))
    ds = load("CRM", path=p)
    assert ds.shape == (1993, 101) and "LF" in ds.provenance["files"][0]["check"]


@needs_shared
def test_corrupt_copy_in_earlier_location_is_not_skipped(tmp_path, monkeypatch):
    """A bad file in $DPKIT_DATA_DIR is an error even though a good copy exists later in the search order."""
    p = _copy("WDBC", "wdbc.data", tmp_path)
    p.write_bytes(p.read_bytes()[:-100])
    monkeypatch.setenv("DPKIT_DATA_DIR", str(tmp_path))
    with pytest.raises(ChecksumError, match=str(p)):
        load("WDBC")


@needs_shared
def test_malformed_rows_name_the_line(tmp_path):
    p = _copy("WDBC", "wdbc.data", tmp_path)
    lines = p.read_text().splitlines(keepends=True)
    bad = lines[9].split(",")
    bad[5] = "1.2.3"
    lines[9] = ",".join(bad)
    p.write_text("".join(lines))
    with pytest.raises(ChecksumError):
        load("WDBC", path=p)  # verified by default
    with pytest.raises(MalformedDataError, match=r"line 10: column 5 holds '1.2.3'") as ei:
        load("WDBC", path=p, verify=False)
    assert str(p) in str(ei.value)
    # a short line (last field lost)
    lines = p.read_text().splitlines(keepends=True)
    lines[9] = _copy("WDBC", "wdbc.data", tmp_path / "x").read_text().splitlines(keepends=True)[9]
    lines[20] = lines[20].rsplit(",", 1)[0] + "\n"
    p.write_text("".join(lines))
    with pytest.raises(MalformedDataError, match=r"line 21: field 32 of 32 is empty"):
        load("WDBC", path=p, verify=False)
    # an extra field
    lines[20] = lines[9].rstrip("\n") + ",9.9\n"
    p.write_text("".join(lines))
    with pytest.raises(MalformedDataError, match="Expected 32 fields"):
        load("WDBC", path=p, verify=False)


@needs_shared
def test_dropped_column_crm_and_pks(tmp_path):
    p = _copy("CRM", "communities.data", tmp_path)
    out = [",".join(line.split(",")[:-1]) for line in p.read_text().splitlines()]  # last column gone everywhere
    p.write_text("\n".join(out) + "\n")
    with pytest.raises(MalformedDataError, match=r"127 fields per line, expected 128 \(a column is missing"):
        load("CRM", path=p, verify=False)
    q = _copy("PKS", "parkinsons_updrs.data", tmp_path)
    rows = [line.split(",") for line in q.read_text().splitlines()]
    j = rows[0].index("HNR")
    q.write_text("\n".join(",".join(r[:j] + r[j + 1:]) for r in rows) + "\n")
    with pytest.raises(MalformedDataError, match="22 expected|fields per line, expected 22"):
        load("PKS", path=q, verify=False)
    # same count but a renamed column: the header check names the missing one
    rows[0][j] = "HNR2"
    q.write_text("\n".join(",".join(r) for r in rows) + "\n")
    with pytest.raises(MalformedDataError, match=r"missing column\(s\) \['HNR'\]"):
        load("PKS", path=q, verify=False)


@needs_shared
def test_truncated_gzip_and_corrupt_xls(tmp_path):
    p = _copy("CSN", "census-income.test.gz", tmp_path)
    p.write_bytes(p.read_bytes()[:200_000])
    with pytest.raises(ChecksumError, match="truncated"):
        load("CSN", path=p)
    with pytest.raises(MalformedDataError, match="truncated or corrupt gzip") as ei:
        load("CSN", path=p, verify=False)
    assert str(p) in str(ei.value)
    x = _copy("CTG", "CTG.xls", tmp_path)
    x.write_bytes(x.read_bytes()[:4096])
    with pytest.raises(MalformedDataError, match="not a readable Excel"):
        load("CTG", path=x, verify=False)


def test_csn_shifted_fields_and_empty_file(tmp_path):
    d = tmp_path / "CSN"
    d.mkdir()
    good = ", ".join(["38"] + ["x"] * 39 + ["95", "- 50000."])
    shifted = ", ".join(["38"] + ["x"] * 38 + ["95", "- 50000.", "extra?"])
    with gzip.open(d / "census-income.test.gz", "wt") as fh:
        fh.write(good + "\n" + shifted + "\n")
    with pytest.raises(MalformedDataError, match=r"line 2: label 'extra\?'"):
        load("CSN", path=d / "census-income.test.gz", verify=False)
    e = tmp_path / "empty.data"
    e.write_text("")
    with pytest.raises(MalformedDataError, match="empty"):
        load("WDBC", path=e, verify=False)


def test_pam_recipe_on_a_synthetic_subject_file(tmp_path):
    """The PAM parser (not verifiable on real data here) on a tiny file in the documented 54-column layout."""
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(50, 54))
    rows[:, 0] = np.arange(50) / 100
    rows[:, 1] = np.where(np.arange(50) < 10, 0, 4)  # 10 transient rows (activityID 0)
    rows[::2, 2] = np.nan  # heart rate at a lower rate
    d = tmp_path / "PAM" / "Protocol"
    d.mkdir(parents=True)
    np.savetxt(d / "subject109.dat", rows, fmt="%.6f", delimiter=" ")
    with pytest.raises(ChecksumError, match="subject109.dat"):
        load("PAM", path=tmp_path, subjects=[109])
    ds = _load("PAM", path=tmp_path, subjects=[109], verify=False)
    assert ds.shape == (20, 28) and ds.raw_shape == (50, 54)  # 40 non-transient rows, half with heart rate
    assert ds.columns[0] == "heart_rate" and ds.columns[-1] == "ankle_mag_z"
    assert "NOT verified" in ds.provenance["files"][0]["check"]
    txt = (d / "subject109.dat").read_text().splitlines()
    txt[30] = " ".join(txt[30].split()[:40])  # truncated line
    (d / "subject109.dat").write_text("\n".join(txt) + "\n")
    with pytest.raises(MalformedDataError, match="line 31: truncated line"):
        load("PAM", path=tmp_path, subjects=[109], verify=False)
    txt[30] = txt[31] + " 1.0"  # one field too many
    (d / "subject109.dat").write_text("\n".join(txt) + "\n")
    with pytest.raises(MalformedDataError, match="subject109.dat is malformed"):
        load("PAM", path=tmp_path, subjects=[109], verify=False)
    (d / "subject109.dat").write_text("\n".join(" ".join(t.split()[:53]) for t in txt) + "\n")  # a column dropped
    with pytest.raises(MalformedDataError, match="line 1 has 53 fields, expected 54"):
        load("PAM", path=tmp_path, subjects=[109], verify=False)


@needs_shared
def test_corrupt_download_is_never_kept(no_files, monkeypatch, tmp_path):
    good = (SHARED / "PKS" / "parkinsons_updrs.data").read_bytes()

    def bad_download(url, dest, progress=False):
        dest.write_bytes(good[:1000])  # an interrupted transfer

    monkeypatch.setattr(ddl, "download_url", bad_download)
    with pytest.raises(ChecksumError, match="corrupt and was discarded"):
        load("PKS")
    target = tmp_path / "empty" / "PKS"
    assert not (target / "parkinsons_updrs.data").exists()
    assert not target.exists() or not any(target.rglob("*"))  # no temp files left either

    def good_download(url, dest, progress=False):
        assert dest != target / "parkinsons_updrs.data"  # downloads land in a temporary file first
        dest.write_bytes(good)

    monkeypatch.setattr(ddl, "download_url", good_download)
    ds = _load("PKS")
    assert ds.shape == (5875, 19) and ds.provenance["files"][0]["found_in"] == "downloaded"
    assert (target / "parkinsons_updrs.data").read_bytes() == good
    assert _load("PKS").provenance["files"][0]["found_in"] == "$DPKIT_DATA_DIR"  # kept and found next time


def test_csn_training_download_without_checksum_needs_structure(no_files, monkeypatch, tmp_path):
    def junk(url, dest, progress=False):
        with gzip.open(dest, "wb") as fh:
            fh.write(b"not, census, data\n")

    monkeypatch.setattr(ddl, "download_url", junk)
    with pytest.raises(ChecksumError, match="failed its structure check"):
        dd.fetch("CSN", include_optional=True)
    assert not (tmp_path / "empty" / "CSN" / "census-income.data.gz").exists()


def test_pam_zip_download_is_verified_member_by_member(no_files, monkeypatch, tmp_path):
    import zipfile

    def fake_zip(url, dest, progress=False):
        assert url.endswith("PAMAP2_Dataset.zip")
        with zipfile.ZipFile(dest, "w") as zf:
            zf.writestr("PAMAP2_Dataset/Protocol/subject109.dat", "1 2 3\n")  # wrong size and hash

    monkeypatch.setattr(ddl, "download_url", fake_zip)
    with pytest.raises(ChecksumError, match="subject109.dat.*corrupt and was discarded|corrupt and was discarded"):
        load("PAM", subjects=[109])
    assert not (tmp_path / "empty" / "PAM").exists()

    def not_a_zip(url, dest, progress=False):
        dest.write_bytes(b"<html>proxy error</html>")

    monkeypatch.setattr(ddl, "download_url", not_a_zip)
    with pytest.raises(ChecksumError, match="not a valid zip"):
        load("PAM", subjects=[109])
    assert not (tmp_path / "empty" / "PAM").exists()


def test_load_available_names_the_parameter_and_the_absent_data_sets(no_files):
    # a JSON list passed as one string (papermill -p) is named, not iterated character by character
    with pytest.raises(TypeError, match=r"DATASETS must be a list of data set codes.*str '\[\"WDBC\"\]'"):
        dd.load_available('["WDBC"]')
    with pytest.raises(ValueError, match="DATASETS is empty"):
        dd.load_available([])
    with pytest.raises(ValueError, match=r"DATASETS repeats \['mock'\]"):
        dd.load_available(["mock", "mock"])
    with pytest.raises(UnknownDatasetError, match="ADULT"):  # a typo is an error, not an absent data set
        dd.load_available(["mock", "ADULT"])
    # PAM is documented in the registry as possibly unavailable offline: reported, with that reason
    data, missing = dd.load_available(["PAM", "mock"], download=False)
    assert list(data) == ["mock"] and data["mock"].shape == (1000, 5)
    assert list(missing) == ["PAM"] and missing["PAM"].startswith("DataNotFoundError: ") and "subject101.dat" in missing["PAM"]
    assert dd.dataset_info("PAM").unavailable_offline in missing["PAM"]
    with pytest.raises(DataUnavailableError, match=r"none of SETS = \['PAM'\] is available here: PAM: DataNotFoundError"):
        dd.load_available(["PAM"], parameter="SETS", download=False)
    assert no_files == []


def test_load_available_fails_for_missing_data_not_documented_as_unavailable(no_files, tmp_path):
    """Only a data set the registry documents as possibly unavailable offline may be absent: any other missing data
    set, or a documented one missing from an explicit path, is the loader's error (not a shorter table)."""
    assert [c for c in dd.list_datasets() if dd.dataset_info(c).unavailable_offline] == ["PAM"]
    for names in (["CRM", "mock"], ["CRM", "PAM"], ["PAM", "CRM"]):
        with pytest.raises(DataNotFoundError, match="communities.data") as info:
            dd.load_available(names, download=False)
        assert not isinstance(info.value, DataUnavailableError), names
    (tmp_path / "wrong").mkdir()
    with pytest.raises(DataNotFoundError, match=r"Searched \(only the path argument\)") as info:
        dd.load_available(["PAM"], path=tmp_path / "wrong")
    assert not isinstance(info.value, DataUnavailableError)


@needs_shared
def test_load_available_does_not_hide_a_damaged_file(tmp_path, monkeypatch):
    p = _copy("CRM", "communities.data", tmp_path)
    p.write_bytes(p.read_bytes()[:1000])
    monkeypatch.setenv("DPKIT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(dd.files, "shared_raw_dir", lambda: None)
    with pytest.raises(ChecksumError, match="communities.data"):
        dd.load_available(["CRM", "mock"])


def test_load_available_does_not_hide_a_damaged_file_of_a_data_set_that_may_be_unavailable(no_files, tmp_path):
    """PAM may be absent offline, but a PAM file that is there and damaged is the loader's ChecksumError."""
    bad = tmp_path / "empty" / "PAM" / "Protocol" / "subject109.dat"
    bad.parent.mkdir(parents=True)
    bad.write_text("1.0 0 nan\n")
    with pytest.raises(ChecksumError, match="subject109.dat"):
        dd.load_available(["PAM"], subjects=[109])
    assert no_files == []  # found (damaged): nothing to download


def test_notebook_40_does_not_hide_a_damaged_file_and_records_only_documented_absences(tmp_path, monkeypatch):
    """Notebook 40's loading (claims.baselines.notebook_checks) goes through load_available: a damaged file is the
    loader's ChecksumError (it used to be caught by an ``except Exception`` and the data set silently skipped), and
    a run of data sets that are all documented as possibly unavailable and absent is a DataUnavailableError."""
    from dpkit.claims import baselines
    from dpkit.data.errors import DataUnavailableError

    kw = dict(sigmas=[4.0], epsilon=1.0, delta=1e-3, reps=1, n_queries=10, J=10, C=100, R=10, m_rows=50, mwem_t=2,
              n_class=10, pca_k=2, pca_reps=1, toy_levels=2, toy_m=2, methods=[])
    p = _copy("CRM", "communities.data", tmp_path)
    p.write_bytes(p.read_bytes()[:1000])
    monkeypatch.setenv("DPKIT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(dd.files, "shared_raw_dir", lambda: None)
    with pytest.raises(ChecksumError, match="communities.data"):
        baselines.notebook_checks(0, False, 0.05, datasets=["CRM"], **kw)
    (tmp_path / "nothing").mkdir()
    monkeypatch.setenv("DPKIT_DATA_DIR", str(tmp_path / "nothing"))
    monkeypatch.setenv("DPKIT_OFFLINE", "1")
    with pytest.raises(DataUnavailableError, match="PAM"):
        baselines.notebook_checks(0, False, 0.05, datasets=["PAM"], **kw)
