"""Tiny notebooks and manifests for the batch-runner tests, written into ``tmp_path`` (no test module)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import yaml

PARAMETERS = """SEED: int = 0
QUICK: bool = False
INTERACTIVE: bool = True
OUTPUT_DIR: str = "out"
X: float = 1.0
NAMES: list = ["a"]
OPTS: dict = {}
LABEL: str = "x"
FAIL: bool = False
SLEEP: float = 0.0
LOG: str = ""
KILL_MARKER: str = \"\""""

BODY = """import os
import signal
import time
from pathlib import Path

from dpkit.outputs.report import Report

if LOG:
    with open(LOG, "a") as f:
        f.write(f"start {SEED}\\n")
if KILL_MARKER and not Path(KILL_MARKER).exists():
    Path(KILL_MARKER).write_text(str(os.getpid()))
    os.kill(os.getppid(), signal.SIGKILL)  # the process that runs this kernel: the Dask worker
    time.sleep(60)
time.sleep(SLEEP)
if FAIL:
    raise RuntimeError("deliberate failure of the tiny notebook")
rep = Report(OUTPUT_DIR, params={"SEED": SEED, "X": X})
rep.check("tiny-bound", "X / 2 <= X", X / 2, X)
rep.row(seed=SEED, x=X)
rep.write()
if LOG:
    with open(LOG, "a") as f:
        f.write(f"end {SEED}\\n")"""


CHECKPOINT_PARAMETERS = """SEED: int = 0
QUICK: bool = False
INTERACTIVE: bool = True
OUTPUT_DIR: str = "out"
CHECKPOINT_DIR: str = ""
CHECKPOINT_ADOPT: bool = False
CHECKPOINT_VERIFY_REPS: int = 2
STOP: str = \"\""""

CHECKPOINT_BODY = """from pathlib import Path

from dpkit.data import load
from dpkit.experiments import run_cells
from dpkit.methods.references import SamplingFloor
from dpkit.methods.registry import get
from dpkit.outputs.report import Report


def stop_once(i, reps):  # the attempt dies after the repetition the file STOP names (then removed), as a killed kernel would
    if STOP and Path(STOP).is_file() and i == int(Path(STOP).read_text()):
        Path(STOP).unlink()
        raise RuntimeError(f"deliberate failure after repetition {i}")


X = load("mock", n=200, d=3, rng=1).X
recs = run_cells(X, methods={"trig-II": get("trig-II", C=100, R=6), "floor": SamplingFloor(size=10)}, sigmas=[2.0, 4.0],
                 reps=4, seed=SEED, dataset="mock", n_queries=80, on_repetition=stop_once,
                 checkpoint=Path(CHECKPOINT_DIR) / "mock" if CHECKPOINT_DIR else None, adopt=CHECKPOINT_ADOPT,
                 verify_reps=CHECKPOINT_VERIFY_REPS)
rep = Report(OUTPUT_DIR, params={"SEED": SEED})
rep.check("positive-error", "worst errors are >= 0", min(r.abs for r in recs), 0.0, relation=">=")
for r in recs:
    rep.row(rep_index=r.rep, method=r.method, sigma=r.sigma, abs=r.abs, rel=r.rel)
rep.write()"""


def make_checkpoint_notebook(folder: Path, name: str = "long.ipynb") -> Path:
    """A notebook whose ``run_cells`` (2 methods, σ 2 and 4, 4 repetitions of mock data) keeps each repetition in
    ``CHECKPOINT_DIR/mock``; an attempt fails after the repetition that the file ``STOP`` names (:func:`stop_after`),
    as a killed kernel would."""
    return make_notebook(folder, name, parameters=CHECKPOINT_PARAMETERS, body=CHECKPOINT_BODY)


def stop_after(stop: Path, i: int) -> None:
    """Make the next attempt of :func:`make_checkpoint_notebook` with ``STOP=stop`` fail after its repetition ``i``."""
    Path(stop).write_text(str(i))


def make_notebook(folder: Path, name: str = "tiny.ipynb", *, parameters: str | None = PARAMETERS, body: str = BODY) -> Path:
    """A two-cell notebook: a cell tagged ``parameters`` (typed literals) and a body writing ``metrics.json``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    cells = []
    if parameters is not None:
        cell = nbformat.v4.new_code_cell(parameters)
        cell.metadata["tags"] = ["parameters"]
        cells.append(cell)
    cells.append(nbformat.v4.new_code_cell(body))
    nb.cells = cells
    path = Path(folder) / name
    nbformat.write(nb, str(path))
    return path


def make_manifest(folder: Path, runs: list[dict[str, Any]] | None = None, *, name: str = "m.yaml",
                  text: str | None = None, **top: Any) -> Path:
    """A manifest next to ``tiny.ipynb`` (created if missing), output ``out``; or the raw ``text``."""
    folder = Path(folder)
    if not (folder / "tiny.ipynb").exists():
        make_notebook(folder)
    path = folder / name
    if text is None:
        runs = runs if runs is not None else [{"notebook": "tiny.ipynb"}]
        text = yaml.safe_dump({"name": "t", "output": "out", **top, "runs": runs})
    path.write_text(text)
    return path
