"""Every make switch (``make TARGET NAME=value``) that a message, a page or the Makefile names is listed by
``make help``, with what it does."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_NAMED = re.compile(r"\bmake [a-z][a-z-]*((?:\s+\[?[A-Z][A-Z_]*=[^\s\]]*\]?)+)")


def _help() -> str:
    out = subprocess.run(["make", "-s", "-o", ".venv/.dpkit-installed", "help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _named_switches() -> dict[str, str]:
    """NAME -> a file that names ``make ... NAME=value``: the Makefile, the docs, the README, dpkit's messages."""
    files = [ROOT / "Makefile", ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("docs/*.py"),
             *ROOT.glob("dpkit/**/*.py"), *ROOT.glob("tools/*.py")]
    found: dict[str, str] = {}
    for f in files:
        if "_build" in f.parts:
            continue
        for m in _NAMED.finditer(f.read_text()):
            for name in re.findall(r"([A-Z][A-Z_]*)=", m.group(1)):
                found.setdefault(name, str(f.relative_to(ROOT)))
    return found


def _makefile_switches() -> set[str]:
    """The variables the Makefile lets a user set: ``NAME ?= ...`` and those read only as ``$(if $(NAME)``."""
    text = (ROOT / "Makefile").read_text()
    names = set(re.findall(r"^([A-Z][A-Z_]*) \?=", text, re.M))
    names |= set(re.findall(r"\$\((?:if|filter [^,]+,|or) ?\$\(([A-Z][A-Z_]*)\)", text))
    defined = set(re.findall(r"^([A-Z][A-Z_]*) :?=", text, re.M))
    return names - (defined - set(re.findall(r"^([A-Z][A-Z_]*) \?=", text, re.M))) - {"PYTHON", "JUPYTER_CONFIG_PATH"}


def test_every_named_switch_is_in_make_help():
    text = _help()
    switches = text.split("switches (", 1)
    assert len(switches) == 2, "make help lists no switches"
    listed = set(re.findall(r"^\s+([A-Z][A-Z_]*)\s+\S", switches[1], re.M))
    named = _named_switches()
    assert {"STALE", "REQUIRE_DATA", "PORT", "NO_BROWSER", "BATCH"} <= set(named)  # the scan finds them
    missing = {n: where for n, where in named.items() if n not in listed}
    assert not missing, f"switches named but not in make help (name: where): {missing}"
    unlisted = sorted(n for n in _makefile_switches() if n not in listed)
    assert not unlisted, f"Makefile switches not in make help: {unlisted}"
