"""``import dpkit`` and dpkit's first use of ``mbi`` (and so JAX) print nothing on stderr; only ``mbi``'s two
import-time notes are silenced (by message and category), any other warning of that import is shown."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, *, path: list[str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*(path or []), str(ROOT)]), "PYTHONWARNINGS": "default"}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_import_dpkit_prints_nothing():
    out = _run("import dpkit, dpkit.methods, dpkit.experiments, dpkit.batch")
    assert out.returncode == 0, out.stderr
    assert out.stderr == "", out.stderr


def test_first_use_of_mbi_prints_nothing(tmp_path):
    out = _run("from dpkit.methods._discrete import load_mbi; load_mbi()")
    assert out.returncode == 0, out.stderr
    assert out.stderr == "", out.stderr


def test_only_mbis_two_notes_are_silenced(tmp_path):
    """A stand-in ``mbi`` that warns mbi's two notes and a third warning: the third is printed."""
    fake = tmp_path / "mbi"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "import warnings\n"
        "warnings.warn('JAX is running in float32 mode. For large datasets', UserWarning)\n"
        "warnings.warn('JAX persistent compilation cache is enabled. MBI generates', UserWarning)\n"
        "warnings.warn('some other advice of the import', UserWarning)\n")
    out = _run("from dpkit.methods._discrete import load_mbi; m = load_mbi(); import mbi; assert m is mbi",
               path=[str(tmp_path)])
    assert out.returncode == 0, out.stderr
    assert "some other advice of the import" in out.stderr
    assert "float32" not in out.stderr and "compilation cache" not in out.stderr, out.stderr
