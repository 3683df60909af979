"""dpkit.data command line (list | verify | fetch) and notebook 10 in QUICK mode."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from test_data_loaders import SHARED, needs_shared  # noqa: E402

import dpkit.data.download as ddl
from dpkit.data.__main__ import main


@pytest.fixture
def offline(monkeypatch):
    calls = []

    def _off(url, dest, progress=False):
        calls.append(url)
        raise ConnectionError("offline test")

    monkeypatch.setattr(ddl, "download_url", _off)
    return calls


@needs_shared
def test_verify_reports_every_dataset(capsys, offline):
    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    codes = {"CRM", "CSN", "CTG", "PAM", "PKS", "WDBC", "mock"}
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln[:5].strip() in codes}
    for code, shape in [("CRM", "(1993, 101)"), ("CTG", "(2126, 28)"), ("PKS", "(5875, 19)"), ("WDBC", "(569, 30)")]:
        assert lines[code].split()[1] == "OK" and lines[code].count(shape) == 2, lines[code]
    assert "OK (n differs)" in lines["CSN"] and "(99762, 8)" in lines["CSN"] and "(100000, 8)" in lines["CSN"]
    assert "MISSING" in lines["PAM"] and "PAMAP2_Dataset.zip" in out
    assert "checksum ok" in out and "all found files verified" in out
    assert offline == []  # verify never downloads


@needs_shared
def test_verify_fails_on_a_corrupt_copy(tmp_path, monkeypatch, capsys, offline):
    (tmp_path / "CTG").mkdir()
    bad = tmp_path / "CTG" / "CTG.xls"
    shutil.copy(SHARED / "CTG" / "CTG.xls", bad)
    bad.chmod(0o644)
    bad.write_bytes(bad.read_bytes()[:100_000])
    monkeypatch.setenv("DPKIT_DATA_DIR", str(tmp_path))
    assert main(["verify", "CTG"]) == 1
    out = capsys.readouterr().out
    assert "BAD CHECKSUM" in out and "MISMATCH" in out and str(bad) in out and "truncated" in out


def test_list_fetch_and_unknown(capsys, offline, tmp_path, monkeypatch):
    monkeypatch.setenv("DPKIT_DATA_DIR", str(tmp_path))
    assert main(["list", "WDBC", "PAM", "mock"]) == 0
    out = capsys.readouterr().out
    assert "search order" in out and "scikit-learn bundled copy" in out and "thesis (19870, 28)" in out
    assert main(["fetch", "PAM"]) == 1  # offline: required files cannot be fetched
    out = capsys.readouterr().out
    assert "could not fetch" in out and "PAMAP2_Dataset.zip" in out and str(tmp_path / "PAM") in out
    assert offline and not (tmp_path / "PAM").exists()
    assert main(["verify", "NOPE"]) == 2
    assert "unknown data set 'NOPE'" in capsys.readouterr().err


def test_hash_helper(tmp_path, capsys):
    f = tmp_path / "x.data"
    f.write_bytes(b"abc")
    assert main(["hash", str(f)]) == 0
    assert capsys.readouterr().out.split() == ["ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "3", str(f)]


def test_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "dpkit.data", "list", "mock"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "mock" in r.stdout and "registry:" in r.stdout


@needs_shared
@pytest.mark.notebook
def test_notebook_10_quick(run_notebook, tmp_path):
    m = run_notebook("10_datasets.ipynb")
    assert (tmp_path / "10_datasets" / "marginals.pdf").is_file() and (tmp_path / "10_datasets" / "marginals.png").is_file()
    assert m["all_consistent"] is True
    checks = {c["id"]: c for c in m["checks"]}
    for code in ("CRM", "CTG", "PKS", "WDBC"):
        assert checks[f"shape-{code}"]["verdict"] == "PASS"
    assert checks["shape-CSN-d"]["verdict"] == "PASS"
    assert checks["shape-CSN-n"]["expected"] == "FAIL" and "test split" in checks["shape-CSN-n"]["note"]
    assert checks["PAM-offline-message"]["verdict"] == "PASS"
    assert {r["code"] for r in m["table"]} == {"CRM", "CSN", "CTG", "PAM", "PKS", "WDBC"}
    assert m["params"]["QUICK"] is True
