"""requirements.lock is what `make` installs, it satisfies pyproject.toml, and environment.yml agrees with it.

Every package that environment.yml pins (conda or pip section) must have the lock's version, Python must be the
version the lock was compiled for, and the pip section must install the lock. The agreement check is shown to
reject a wrong pin (negative control).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
ENV = ROOT / "environment.yml"


def read_lock(text: str) -> tuple[dict[str, str], str]:
    """``{canonical name: version}`` of the ``name==version`` lines, and the ``--python-version`` of the header."""
    pins = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", line)
        if m:
            pins[canonicalize_name(m.group(1))] = m.group(2)
    py = re.search(r"--python-version[ =](\d+\.\d+)", text)
    assert py, "the lock header must record the --python-version it was compiled for"
    return pins, py.group(1)


def _conda_pin(entry: str) -> tuple[str, str | None]:
    """``(name, version spec)`` of a conda match spec like ``numpy=2.4.6``, ``numpy==2.4.6``, ``numpy>=2``."""
    m = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*?)\s*$", entry)
    return m.group(1), (m.group(2) or None)


def _conda_matches(spec: str, version: str) -> bool:
    if spec.startswith("==") or re.match(r"^\d", spec):  # exact (conda `==x` or `name x`)
        return Version(version) == Version(spec.lstrip("= "))
    if spec.startswith("="):  # conda `=x.y` means x.y.*
        prefix = spec[1:].rstrip("*").rstrip(".")
        return version == prefix or version.startswith(prefix + ".")
    return SpecifierSet(spec).contains(version, prereleases=True)


def disagreements(env: dict, pins: dict[str, str], python: str) -> list[str]:
    """Every way ``env`` (parsed environment.yml) disagrees with the lock; empty if they agree."""
    bad, installs_lock = [], False
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for entry in dep.get("pip", []):
                if re.match(r"^(-r|--requirement)\s*requirements\.lock$", entry.strip()):
                    installs_lock = True
                elif not entry.startswith("-"):
                    req = Requirement(entry)
                    name = canonicalize_name(req.name)
                    if name not in pins:
                        bad.append(f"pip: {entry} is not in the lock")
                    elif req.specifier and not req.specifier.contains(pins[name], prereleases=True):
                        bad.append(f"pip: {entry} but the lock pins {pins[name]}")
            continue
        name, spec = _conda_pin(dep)
        if name == "python":
            if spec is None or not _conda_matches(spec, python):
                bad.append(f"conda: {dep} but the lock is compiled for Python {python}")
        elif name == "pip" and spec is None:
            continue
        elif canonicalize_name(name) not in pins:
            bad.append(f"conda: {dep} is not in the lock")
        elif spec is not None and not _conda_matches(spec, pins[canonicalize_name(name)]):
            bad.append(f"conda: {dep} but the lock pins {pins[canonicalize_name(name)]}")
    if not installs_lock:
        bad.append("the pip section does not install -r requirements.lock")
    return bad


@pytest.fixture(scope="module")
def lock():
    return read_lock(LOCK.read_text(encoding="utf-8"))


def test_environment_yml_agrees_with_the_lock(lock):
    pins, python = lock
    env = yaml.safe_load(ENV.read_text(encoding="utf-8"))
    assert disagreements(env, pins, python) == []


def test_agreement_check_rejects_a_wrong_pin(lock):
    """Negative control: a conda pin off the lock, a pip range the lock violates, the wrong Python and a pip
    section without the lock are each reported."""
    pins, python = lock
    wrong = {"dependencies": [f"python={python}", "numpy=1.26.4", f"scipy=={pins['scipy']}", "pip",
                              {"pip": [f"pandas<{pins['pandas']}"]}]}
    bad = disagreements(wrong, pins, python)
    assert any(b.startswith("conda: numpy=1.26.4") for b in bad)
    assert any(b.startswith("pip: pandas<") for b in bad)
    assert "the pip section does not install -r requirements.lock" in bad
    assert not any("scipy" in b for b in bad)  # the exact lock version is accepted
    assert disagreements({"dependencies": ["python=3.99", "pip", {"pip": ["-r requirements.lock"]}]}, pins, python)


def test_lock_satisfies_pyproject_and_pins_every_extra(lock):
    """Every requirement of pyproject.toml (core and every extra that `all` pulls in) is pinned in the lock at a
    version its specifier allows; `all` names every other extra."""
    pins, python = lock
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    (all_req,) = extras["all"]
    assert set(Requirement(all_req).extras) == set(extras) - {"all"}
    reqs = [Requirement(r) for r in project["dependencies"]]
    reqs += [Requirement(r) for name, rs in extras.items() if name != "all" for r in rs]
    for req in reqs:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is not in requirements.lock (run make lock)"
        assert req.specifier.contains(pins[name], prereleases=True), f"{req} but the lock pins {pins[name]}"
    assert SpecifierSet(project["requires-python"]).contains(python + ".0")


def test_lock_is_fully_pinned_with_hashes():
    """Every requirement line is ``name==version`` followed by at least one sha256 hash (pip's hash-checking mode)."""
    text = LOCK.read_text(encoding="utf-8")
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2])  # skip the two header lines
    assert len(blocks) > 100
    for block in blocks:
        assert re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?==\S+ \\\n\s+--hash=sha256:[0-9a-f]{64}", block), block[:80]


def test_make_installs_from_the_lock():
    """The venv stamp depends on the lock and installs exactly it (pip's resolver checks the pins agree), then dpkit
    without dependencies; `make lock` exists."""
    mk = (ROOT / "Makefile").read_text(encoding="utf-8")
    stamp = re.search(r"^\$\(STAMP\):(.*)$", mk, re.M)
    assert stamp and "$(LOCK)" in stamp.group(1)
    assert re.search(r"^LOCK\s*:=\s*requirements\.lock$", mk, re.M)
    assert "pip install -q -r $(LOCK)" in mk and "pip install -q --no-deps -e ." in mk
    assert 'pip install -q -e ".[all]"' not in mk
    assert re.search(r"^lock:.*##", mk, re.M)
