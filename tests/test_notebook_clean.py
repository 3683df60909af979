"""The notebooks stay clean in git however they are saved: ``tools/notebook_clean.py`` as git's clean filter
(installed by ``make venv`` and ``make lab``; ``.gitattributes`` names it for ``notebooks/*.ipynb``)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def test_the_repository_names_the_filter_for_its_notebooks():
    assert "notebooks/*.ipynb filter=dpkit-notebook" in (ROOT / ".gitattributes").read_text()
    for target in ("venv", "lab"):
        out = subprocess.run(["make", "-s", "-n", "-o", ".venv/.dpkit-installed", target], cwd=ROOT,
                             capture_output=True, text=True, timeout=60).stdout
        assert "tools/notebook_clean.py --install-git-filter" in out, target


def test_a_notebook_saved_with_outputs_is_committed_without_them(tmp_path):
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "notebooks").mkdir()
    shutil.copy(ROOT / "tools" / "notebook_clean.py", repo / "tools" / "notebook_clean.py")
    shutil.copy(ROOT / ".gitattributes", repo / ".gitattributes")
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.org")
    _git(repo, "config", "user.name", "t")
    out = subprocess.run([sys.executable, "tools/notebook_clean.py", "--install-git-filter"], cwd=repo,
                         capture_output=True, text=True)
    assert out.returncode == 0 and "dpkit-notebook" in out.stdout, out.stderr
    committed = json.loads((ROOT / "notebooks" / "21_kappa_sweep.ipynb").read_text())
    nb = json.loads(json.dumps(committed))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "saved with outputs"}]
            cell["execution_count"] = 7
    nb["metadata"]["widgets"] = {"state": {}}
    path = repo / "notebooks" / "21_kappa_sweep.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "notebook")
    staged = json.loads(_git(repo, "show", "HEAD:notebooks/21_kappa_sweep.ipynb"))
    assert staged == committed  # what git holds: no outputs, no counts, no widget state, the sources unchanged
    assert "saved with outputs" in path.read_text()  # the file on disk keeps them
    assert _git(repo, "status", "--porcelain") == ""  # and git sees nothing to commit


def test_outside_a_git_repository_it_says_so_and_does_nothing(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "notebook_clean.py"), "--install-git-filter"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0 and "not in a git work tree" in out.stderr


def test_every_committed_notebook_passes_the_filter_unchanged():
    """Installing the filter marks no committed notebook as modified: each comes out byte for byte."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        out = subprocess.run([sys.executable, str(ROOT / "tools" / "notebook_clean.py")], input=path.read_text(),
                             capture_output=True, text=True, check=True).stdout
        assert out == path.read_text(), path.name
