"""Fault catalogue of the data layer: every bad input is a loud error (or warning) of the documented type whose
message names the parameter, variable or file involved.

Each case is one row: an id, the call, the exception (or warning) class and the strings its message must
contain. Cases that need the shared raw copies are skipped with that reason where they are absent.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import yaml
from test_data_loaders import SHARED, needs_shared

import dpkit.data.download as ddl
import dpkit.data.files as dfiles
from dpkit.data import (
    ChecksumError,
    ClippingWarning,
    DataConfigError,
    DataNotFoundError,
    MalformedDataError,
    RegistryError,
    UnknownDatasetError,
    fetch,
    load,
    status,
)
from dpkit.data.registry import registry_path


@dataclass
class Env:
    """What a case may use: a scratch folder and monkeypatch."""

    tmp: Path
    mp: pytest.MonkeyPatch
    also: list[str] = field(default_factory=list)

    def expect(self, *parts: object) -> None:
        """More strings the message must contain (known only inside the case, e.g. a tmp path)."""
        self.also.extend(str(p) for p in parts)

    def no_files(self) -> Path:
        """No raw files anywhere and no network; returns the (empty) $DPKIT_DATA_DIR."""
        empty = self.tmp / "empty"
        empty.mkdir(exist_ok=True)
        self.mp.setenv("DPKIT_DATA_DIR", str(empty))
        self.mp.setattr(dfiles, "shared_raw_dir", lambda: None)
        self.mp.setattr(dfiles, "repo_raw_dir", lambda: self.tmp / "no-repo-raw")

        def offline(url, dest, progress=False):
            raise ConnectionError(f"offline test: no route to {url}")

        self.mp.setattr(ddl, "download_url", offline)
        return empty

    def registry(self, edit: Callable[[dict], None] | None = None, text: str | None = None) -> Path:
        """A copy of the registry (edited, or replaced by ``text``) named by DPKIT_REGISTRY."""
        p = self.tmp / "registry.yaml"
        if text is None:
            doc = yaml.safe_load(registry_path().read_text())
            edit(doc)
            text = yaml.safe_dump(doc, sort_keys=False)
        p.write_text(text)
        self.mp.setenv("DPKIT_REGISTRY", str(p))
        return p

    def copy(self, code: str, name: str) -> Path:
        """A writable copy of a shared raw file in tmp/CODE/."""
        (self.tmp / code).mkdir(parents=True, exist_ok=True)
        out = self.tmp / code / name
        shutil.copy(SHARED / code / name, out)
        out.chmod(0o644)
        return out


CASES: list = []


def case(id: str, exc: type[BaseException] | type[Warning], *must: str, shared: bool = False):
    """Register ``fn(env)``: it must raise (or warn) ``exc`` with every string of ``must`` and ``env.expect``."""

    def deco(fn: Callable[[Env], object]):
        CASES.append(pytest.param(fn, exc, must, id=id, marks=[needs_shared] if shared else []))
        return fn

    return deco


# ---------------------------------------------------------------- names and arguments
@case("name-unknown", UnknownDatasetError, "'ADULT'", "CRM, CSN, CTG, PAM, PKS, WDBC, mock", "data/README.md")
def _(env):
    load("ADULT")


@case("name-empty", UnknownDatasetError, "''", "known:")
def _(env):
    load("")


@case("name-not-str", TypeError, "name must be a str", "int")
def _(env):
    load(3)


@case("n-zero", ValueError, "n must be an integer in [2, inf]", "got 0")
def _(env):
    load("mock", n=0)


@case("n-one", ValueError, "n must be an integer in [2, inf]", "got 1")
def _(env):
    load("mock", n=1)


@case("n-float", TypeError, "n must be an integer", "float")
def _(env):
    load("mock", n=2.5)


@case("n-bool", TypeError, "n must be an integer", "bool")
def _(env):
    load("mock", n=True)


@case("n-too-large", ValueError, "n = 1000000 exceeds the 569 rows available for WDBC")
def _(env):
    env.no_files()
    load("WDBC", n=10**6, bounds=(0, 5000))


@case("d-not-mock", ValueError, "d is only for the mock data set", "WDBC", "d=3")
def _(env):
    load("WDBC", d=3)


@case("d-zero", ValueError, "d must be an integer in [1, inf]", "got 0")
def _(env):
    load("mock", d=0)


@case("source-bad", ValueError, "source must be", "'csv'")
def _(env):
    load("WDBC", source="csv")


@case("source-not-wdbc", ValueError, "source is only for the WDBC data set", "CRM")
def _(env):
    load("CRM", source="files")


@case("subjects-not-pam", ValueError, "subjects is only for the PAM data set", "CRM")
def _(env):
    load("CRM", subjects=[101])


@case("subjects-unknown", ValueError, "subjects must be", "[110]", "101, 102")
def _(env):
    load("PAM", subjects=[110])


@case("subjects-empty", ValueError, "subjects must be a non-empty list", "[]")
def _(env):
    load("PAM", subjects=[])


@case("subjects-repeated", ValueError, "distinct subjects", "[101, 101]")
def _(env):
    load("PAM", subjects=[101, 101])


@case("verify-not-bool", TypeError, "verify must be True or False", "'no'")
def _(env):
    load("mock", verify="no")


@case("download-not-bool", TypeError, "download must be True, False or None", "'yes'")
def _(env):
    load("mock", download="yes")


@case("rng-bad", TypeError, "rng must be", "str")
def _(env):
    load("mock", rng="seed")


@case("path-for-mock", ValueError, "path is not an option of the synthetic mock")
def _(env):
    load("mock", path=env.tmp)


# ---------------------------------------------------------------- bounds
@case("bounds-reversed", ValueError, "bounds must be finite with upper > lower")
def _(env):
    load("mock", bounds=(1.0, 0.0))


@case("bounds-unknown-word", ValueError, "bounds must be", "'median'")
def _(env):
    load("mock", bounds="median")


@case("bounds-nan", ValueError, "bounds must be finite")
def _(env):
    load("mock", bounds=(np.nan, 1.0))


@case("bounds-scalar", ValueError, "bounds must be", "got 5")
def _(env):
    load("mock", bounds=5)


@case("bounds-wrong-length", ValueError, "bounds must be", "length d = 5")
def _(env):
    load("mock", bounds=([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]))


@case("bounds-dict-missing-column", ValueError, "bounds dict lacks column(s)", "'x4'")
def _(env):
    load("mock", bounds={f"x{j}": (-1, 1) for j in range(4)})


@case("bounds-dict-misspelt-column", ValueError, "bounds dict lacks column(s) ['x4']", "'x_4'", "(did you mean 'x4'?)")
def _(env):
    load("mock", bounds={**{f"x{j}": (-1, 1) for j in range(4)}, "x_4": (-1, 1)})


@case("bounds-dict-extra-column-warns", UserWarning, "bounds for column(s) ['x7']", "not in mock's kept columns", "ignored")
def _(env):
    load("mock", bounds={f"x{j}": (-1, 1) for j in (0, 1, 2, 3, 4, 7)})


@case("bounds-dict-bad-pair", ValueError, "bounds dict values must be (lower, upper) pairs")
def _(env):
    load("mock", bounds={f"x{j}": "wide" for j in range(5)})


@case("bounds-clip-warns-fraction", ClippingWarning, "mock:", "values (", "%) lie outside the user bounds")
def _(env):
    ds = load("mock", n=400, d=2, rng=0, bounds=(-0.1, 0.1))
    env.expect(f"({ds.provenance['clipped_fraction']:.1%})", f"{ds.provenance['clipped_values']} of 800 values")


@case("bounds-clip-crm-76-percent", ClippingWarning, "CRM: 153340 of 201293 values (76.2%)", shared=True)
def _(env):
    load("CRM", bounds=(0.4, 0.6))


# ---------------------------------------------------------------- environment variables
@case("env-data-dir-missing", DataConfigError, "DPKIT_DATA_DIR=", "does not exist", "mkdir -p")
def _(env):
    env.mp.setenv("DPKIT_DATA_DIR", str(env.tmp / "nowhere"))
    env.expect(str(env.tmp / "nowhere"))
    load("CRM")


@case("env-data-dir-is-file", DataConfigError, "DPKIT_DATA_DIR=", "is a file, not a folder")
def _(env):
    f = env.tmp / "a-file"
    f.write_text("x")
    env.mp.setenv("DPKIT_DATA_DIR", str(f))
    env.expect(str(f))
    load("PKS")


@case("env-data-dir-missing-fetch", DataConfigError, "DPKIT_DATA_DIR=", "does not exist")
def _(env):
    env.mp.setenv("DPKIT_DATA_DIR", str(env.tmp / "nowhere"))
    fetch("PAM")


@case("env-shared-dir-missing", DataConfigError, "DPKIT_SHARED_DIR=", "does not exist")
def _(env):
    env.mp.setenv("DPKIT_SHARED_DIR", str(env.tmp / "no-shared"))
    env.expect(str(env.tmp / "no-shared"))
    load("CRM")


@case("env-shared-dir-without-raw", DataConfigError, "DPKIT_SHARED_DIR=", "has no data/raw folder")
def _(env):
    env.mp.setenv("DPKIT_SHARED_DIR", str(env.tmp))
    load("CRM")


@case("env-offline-unknown", DataConfigError, "DPKIT_OFFLINE='maybe'", "is not understood")
def _(env):
    env.no_files()
    env.mp.setenv("DPKIT_OFFLINE", "maybe")
    load("CRM")


@case("env-registry-missing", RegistryError, "does not exist", "(from DPKIT_REGISTRY)")
def _(env):
    env.mp.setenv("DPKIT_REGISTRY", str(env.tmp / "nope.yaml"))
    env.expect(str(env.tmp / "nope.yaml"))
    load("CRM")


# ---------------------------------------------------------------- the registry
@case("registry-bad-yaml", RegistryError, "is not valid YAML", "registry.yaml")
def _(env):
    p = env.registry(text="datasets:\n  CRM: {title: [unclosed\n")
    env.expect(str(p))
    load("CRM")


@case("registry-no-datasets", RegistryError, "expected a mapping with a 'datasets' key")
def _(env):
    p = env.registry(text="version: 1\n")
    env.expect(str(p))
    load("CRM")


@case("registry-entry-not-mapping", RegistryError, "entry 'CRM' is not a mapping")
def _(env):
    env.expect(env.registry(text="datasets:\n  CRM: just a string\n"))
    load("CRM")


@case("registry-entry-missing-title", RegistryError, "registry entry 'PKS' in", "is malformed", "'title'")
def _(env):
    env.expect(env.registry(lambda doc: doc["datasets"]["PKS"].pop("title")))
    load("PKS")


@case("registry-bad-sha256", RegistryError, "registry entry 'PKS' in", "is malformed", "file 'data'", "not 64 hexadecimal")
def _(env):
    env.expect(env.registry(lambda doc: doc["datasets"]["PKS"]["files"]["data"]["variants"][0].update(sha256="abc")))
    load("PKS")


@case("registry-unknown-recipe", RegistryError, "names unknown recipe 'pks2'")
def _(env):
    env.expect(env.registry(lambda doc: doc["datasets"]["PKS"].update(recipe="pks2")))
    load("PKS")


@case("registry-unknown-public-step", RegistryError, "public_steps names unknown step(s) ['drop_outliers']")
def _(env):
    env.expect(env.registry(lambda doc: doc["datasets"]["PKS"].update(public_steps={"drop_outliers": "nowhere"})))
    load("PKS")


@case("registry-wrong-checksum", ChecksumError, "parkinsons_updrs.data", "none of the registry's", "0000000000", shared=True)
def _(env):
    env.registry(lambda doc: doc["datasets"]["PKS"]["files"]["data"]["variants"][0].update(sha256="0" * 64))
    load("PKS")


# ---------------------------------------------------------------- files
@case("file-missing-offline", DataNotFoundError, "communities.data", "1,102,815 bytes", "Searched (in order)",
      "DPKIT_DATA_DIR", "fetch CRM", "downloads disabled")
def _(env):
    empty = env.no_files()
    env.expect(str(empty))
    load("CRM", download=False)


@case("file-download-fails", DataNotFoundError, "wdbc.data", "download failed (ConnectionError", "fetch WDBC")
def _(env):
    env.no_files()
    load("WDBC", source="files")


@case("path-does-not-exist", DataNotFoundError, "path argument", "does not exist", "parkinsons_updrs.data")
def _(env):
    env.expect(str(env.tmp / "nope.data"))
    load("PKS", path=env.tmp / "nope.data")


@case("path-folder-without-file", DataNotFoundError, "Searched (only the path argument)", "parkinsons_updrs.data")
def _(env):
    (env.tmp / "other").mkdir()
    env.expect(str(env.tmp / "other"))
    load("PKS", path=env.tmp / "other")


@case("file-truncated", ChecksumError, "truncated or incomplete", "fetch CRM", shared=True)
def _(env):
    p = env.copy("CRM", "communities.data")
    p.write_bytes(p.read_bytes()[:100_000])
    env.expect(str(p))
    load("CRM", path=p)


@case("file-same-size-edit", ChecksumError, "its size is right but its content differs", shared=True)
def _(env):
    p = env.copy("WDBC", "wdbc.data")
    b = bytearray(p.read_bytes())
    b[10] = ord("9") if b[10] != ord("9") else ord("8")
    p.write_bytes(bytes(b))
    env.expect(str(p))
    load("WDBC", path=p)


@case("file-empty", MalformedDataError, "is empty")
def _(env):
    p = env.tmp / "wdbc.data"
    p.write_text("")
    env.expect(str(p))
    load("WDBC", path=p, verify=False)


@case("file-corrupt-gzip", MalformedDataError, "truncated or corrupt gzip stream")
def _(env):
    p = env.tmp / "census-income.test.gz"
    p.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 40)
    env.expect(str(p))
    load("CSN", path=p, verify=False)


@case("file-not-excel", MalformedDataError, "is not a readable Excel 97 workbook")
def _(env):
    p = env.tmp / "CTG.xls"
    p.write_bytes(b"<html>not a workbook</html>")
    env.expect(str(p))
    load("CTG", path=p, verify=False)


@case("file-non-numeric", MalformedDataError, "line 3: column 'Jitter(%)' holds 'abc', not a number;")
def _(env):
    cols = yaml.safe_load(registry_path().read_text())["datasets"]["PKS"]["columns"]
    good = ",".join(["1"] * len(cols))
    p = env.tmp / "parkinsons_updrs.data"
    p.write_text(",".join(cols) + "\n" + good + "\n" + good.replace("1,1,1,1,1,1,1", "1,1,1,1,1,1,abc", 1) + "\n")
    env.expect(str(p))
    load("PKS", path=p, verify=False)


@case("file-pam-garbage", MalformedDataError, "subject109.dat is malformed")
def _(env):
    d = env.tmp / "PAM" / "Protocol"
    d.mkdir(parents=True)
    (d / "subject109.dat").write_text(" ".join(["1"] * 54) + "\n" + " ".join(["x"] * 54) + "\n")
    load("PAM", path=env.tmp, subjects=[109], verify=False)


@case("file-too-few-rows", MalformedDataError, "has 1 data rows, the registry expects 569", "wdbc.data")
def _(env):
    row = "842302,M," + ",".join(["1.5"] * 30)
    p = env.tmp / "wdbc.data"
    p.write_text(row + "\n")
    load("WDBC", path=p, verify=False)


@pytest.mark.parametrize("run, exc, must", CASES)
def test_fault(run, exc, must, tmp_path, monkeypatch):
    env = Env(tmp_path, monkeypatch)
    if issubclass(exc, Warning):
        with pytest.warns(exc) as rec:
            run(env)
        message = " | ".join(str(r.message) for r in rec if issubclass(r.category, exc))
    else:
        with pytest.raises(exc) as ei:
            run(env)
        message = str(ei.value)
    for s in (*must, *env.also):
        assert s in message, f"{s!r} not in {message!r}"


def test_catalogue_is_large_enough():
    assert len(CASES) >= 20 and len({p.id for p in CASES}) == len(CASES)


def test_cli_names_a_bad_data_dir(tmp_path):
    """The command line reports the same errors, on stderr, with exit status 2."""
    bad = tmp_path / "nowhere"
    env = {**__import__("os").environ, "DPKIT_DATA_DIR": str(bad)}
    r = subprocess.run([sys.executable, "-m", "dpkit.data", "list", "CRM"], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and "DPKIT_DATA_DIR" in r.stderr and str(bad) in r.stderr


def test_status_reports_instead_of_raising(tmp_path, monkeypatch):
    """status() (behind `verify`) turns data problems into a status, never an exception."""
    Env(tmp_path, monkeypatch).no_files()
    st = status("CRM")
    assert st["status"] == "MISSING" and "communities.data" in st["message"]
