"""The PAM (PAMAP2) recipe end to end on small files in the PAMAP2 format that the test writes itself.

The real Protocol files (1.6 GB zip) are not on this machine. Here two small subject files are written
in the documented layout (54 space-separated fields: timestamp, activityID, heart rate, 3 IMUs x 17;
``NaN`` for missing; heart rate sampled at ~9 Hz, so most rows miss it), and a copy of the registry
(``DPKIT_REGISTRY``) carries their sizes and sha256, so the whole path runs as it will on the real
files: locate -> verify -> parse -> drop transient and incomplete rows -> rescale; and, through a fake
zip, download -> verify member by member -> install -> load.
"""
from __future__ import annotations

import hashlib
import io
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

import dpkit.data.download as ddl
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.data import ChecksumError, load
from dpkit.data.registry import get_spec, registry_path

KEEP = [2, 4, 5, 6, 10, 11, 12, 13, 14, 15, 21, 22, 23, 27, 28, 29, 30, 31, 32, 38, 39, 40, 44, 45, 46, 47, 48, 49]


def _subject_text(rows: np.ndarray) -> str:
    return "\n".join(" ".join("NaN" if np.isnan(v) else f"{v:.6f}" for v in r) for r in rows) + "\n"


def _subject(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = np.round(rng.normal(size=(n, 54)), 6)
    rows[:, 0] = np.arange(n) / 100.0  # timestamp (s), 100 Hz
    rows[:, 1] = np.where(np.arange(n) % 7 == 0, 0, 1 + np.arange(n) % 5)  # activityID 0 = transient
    hr = np.full(n, np.nan)
    hr[::3] = np.round(rng.uniform(70, 160, size=hr[::3].shape), 6)  # heart rate at a lower rate
    rows[:, 2] = hr
    rows[5, 40] = np.nan  # a dropped IMU sample
    return rows


@pytest.fixture
def pam(tmp_path, monkeypatch):
    """Two subject files under tmp/PAM/Protocol and a registry copy that accepts them; returns (folder, rows)."""
    rng = np.random.default_rng(20120101)
    data = {101: _subject(rng, 60), 109: _subject(rng, 40)}
    folder = tmp_path / "PAM" / "Protocol"
    folder.mkdir(parents=True)
    doc = yaml.safe_load(registry_path().read_text())
    for s, rows in data.items():
        raw = _subject_text(rows).encode()
        (folder / f"subject{s}.dat").write_bytes(raw)
        doc["datasets"]["PAM"]["files"][f"subject{s}"]["variants"] = [
            {"size": len(raw), "sha256": hashlib.sha256(raw).hexdigest(), "note": "test fixture"}]
    reg = tmp_path / "registry.yaml"
    reg.write_text(yaml.safe_dump(doc, sort_keys=False))
    monkeypatch.setenv("DPKIT_REGISTRY", str(reg))
    return tmp_path, data


def _expected(data: dict[int, np.ndarray]) -> np.ndarray:
    rows = np.concatenate([data[101], data[109]])
    kept = rows[rows[:, 1] != 0][:, KEEP]
    return kept[~np.isnan(kept).any(axis=1)]


def test_pam_recipe_verified_end_to_end(pam):
    root, data = pam
    with pytest.warns(PrivacyLeakWarning) as rec:
        ds = load("PAM", path=root, subjects=[101, 109])
    messages = [str(r.message) for r in rec if issubclass(r.category, PrivacyLeakWarning)]
    assert len(messages) == 2 and "row(s) with a missing value" in messages[0] and "rescaling bounds" in messages[1]
    want = _expected(data)
    assert ds.shape == (want.shape[0], 28) and ds.raw_shape == (100, 54)
    assert ds.columns == tuple(get_spec("PAM").raw["keep"].values())
    np.testing.assert_allclose(ds.X_original, want, rtol=1e-12, atol=1e-12)
    assert np.all(ds.X.min(axis=0) == -1.0) and np.all(ds.X.max(axis=0) == 1.0)
    p = ds.provenance
    assert [f["role"] for f in p["files"]] == ["subject101", "subject109"]
    assert all(f["verified"] and "test fixture" in f["check"] for f in p["files"])
    non_transient = sum(int((r[:, 1] != 0).sum()) for r in data.values())
    assert p["rows_dropped_missing"] == non_transient - want.shape[0] > 0
    assert [s["step"] for s in p["data_dependent_steps"]] == ["drop_missing_rows", "bounds"]
    assert p["privacy_leak_warning"] is True and p["thesis_shape"] == [19870, 28]
    assert any("subject101: 60 lines" in n for n in p["notes"])
    # one subject alone, and a byte changed in it: the checksum catches it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        assert load("PAM", path=root, subjects=[109]).raw_shape == (40, 54)
    f = root / "PAM" / "Protocol" / "subject109.dat"
    b = bytearray(f.read_bytes())
    b[1] = ord("9") if b[1] != ord("9") else ord("8")
    f.write_bytes(bytes(b))
    with pytest.raises(ChecksumError, match="subject109.dat"):
        load("PAM", path=root, subjects=[109])


def test_pam_download_from_a_zip_is_verified_installed_and_loaded(pam, tmp_path, monkeypatch):
    root, data = pam
    members = {f"PAMAP2_Dataset/Protocol/subject{s}.dat": (root / "PAM" / "Protocol" / f"subject{s}.dat").read_bytes()
               for s in data}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, raw in members.items():
            zf.writestr(name, raw)
    calls = []

    def fake_download(url, dest, progress=False):
        calls.append(url)
        Path(dest).write_bytes(buf.getvalue())

    target = tmp_path / "dest"
    target.mkdir()
    monkeypatch.setenv("DPKIT_DATA_DIR", str(target))
    monkeypatch.setattr(ddl, "download_url", fake_download)
    monkeypatch.setattr("dpkit.data.files.shared_raw_dir", lambda: None)
    monkeypatch.setattr("dpkit.data.files.repo_raw_dir", lambda: tmp_path / "no-repo-raw")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        ds = load("PAM", subjects=[101, 109])
    assert calls == [get_spec("PAM").archive]
    assert [f["found_in"] for f in ds.provenance["files"]] == ["downloaded", "downloaded"]
    np.testing.assert_allclose(ds.X_original, _expected(data), rtol=1e-12, atol=1e-12)
    assert sorted(p.name for p in (target / "PAM").rglob("*")) == ["Protocol", "subject101.dat", "subject109.dat"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        again = load("PAM", subjects=[101, 109])  # now found, not downloaded again
    assert calls == [get_spec("PAM").archive] and again.provenance["files"][0]["found_in"] == "$DPKIT_DATA_DIR"
    assert np.array_equal(again.X, ds.X)
