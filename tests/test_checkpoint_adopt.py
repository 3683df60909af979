"""Kept repetitions survive a change of the dpkit sources that alters no number, and only such a change.

A checkpoint whose identity differs only in ``dpkit_sha256`` is adopted when the repetitions computed again equal the
kept ones to the bit (measured times aside), refused naming the difference otherwise; ``--stale verify`` lets a batch
go on from such repetitions.
"""
from __future__ import annotations

import inspect
import json
import math
import os
import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from batch_notebooks import make_checkpoint_notebook, make_manifest, stop_after

from dpkit import batch
from dpkit import experiments as ex
from dpkit.experiments import checkpoint as ck
from dpkit.experiments.adoption import adoption_switch, first_difference, record_difference
from dpkit.experiments.checkpoint import CheckpointMismatchError, RepetitionCheckpoint
from dpkit.methods.references import SamplingFloor
from dpkit.methods.registry import get

SIGMAS = (2.0, 6.0)
KW = dict(sigmas=SIGMAS, seed=3, dataset="mock", n_queries=80)
NEW = "f" * 16  # the fingerprint of "the changed sources"


@pytest.fixture(scope="module")
def X():
    from dpkit.data import load

    return load("mock", n=200, d=3, rng=1).X


def _methods():
    return {"trig-II": get("trig-II", C=100, R=6), "marginals-histogram": get("marginals-histogram"),
            "floor": SamplingFloor(size=10)}


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _numbers(recs) -> list[tuple]:
    """Everything but the measured times, floats as their exact hex form."""
    return [(r.rep, r.method, r.sigma, r.abs.hex(), r.rel.hex(), r.support_size, r.error_bound.hex(),
             None if r.sup_abs is None else r.sup_abs.hex(), json.dumps(r.seeds)) for r in recs]


def _kept_run(X, folder: Path, reps: int = 3):
    recs = ex.run_cells(X, methods=_methods(), reps=reps, checkpoint=folder, **KW)
    return recs, json.loads((folder / "identity.json").read_text())


# --------------------------------------------------------------------------- the comparison
def test_the_comparison_ignores_measured_times_only():
    nan = float("nan")
    assert first_difference({"a": [1.0, nan], "seconds": 1.0}, {"a": [1.0, nan], "seconds": 2.0}) is None
    assert first_difference({"s": {"seconds": 1.0, "x": 2.0}}, {"s": {"seconds": 5.0, "x": 2.0}}) is None
    assert first_difference(0.0, -0.0) == ("", 0.0, -0.0)  # bit for bit
    assert first_difference(1.0, 1.0 + 2 ** -52) is not None
    assert first_difference(np.float64(nan), np.float64(nan)) is None
    assert first_difference(1, 1.0) is not None and first_difference(np.int64(1), 1) is not None  # types too
    a = np.array([1.0, nan])
    assert first_difference(a, a.copy()) is None
    assert first_difference(a, a.astype(np.float32))[0] == " (dtype, shape)"
    assert first_difference({"w": a}, {"w": np.array([1.0, 2.0])})[0] == "['w']"
    assert first_difference({"a": 1}, {"b": 1})[0] == " (keys)"
    assert first_difference([1, 2], [1, 2, 3])[0] == " (length)"


def test_a_record_differs_in_anything_but_its_times(X):
    [r] = ex.run_cell(X, methods={"trig-II": get("trig-II", C=100, R=6)}, sigma=2.0, reps=1, n_queries=40, rng=1)
    assert r.supremum is not None and "seconds" in r.supremum
    timed = replace(r, time_s=r.time_s + 1.0, timings={k: v + 1.0 for k, v in r.timings.items()},
                    supremum={**r.supremum, "seconds": r.supremum["seconds"] + 1.0})
    assert record_difference([r], [timed]) is None
    why = record_difference([r], [replace(r, rel=math.nextafter(r.rel, 1.0))])
    assert why == f"method 'trig-II', σ 2.0: rel kept {r.rel!r}, now {math.nextafter(r.rel, 1.0)!r}"
    moved = {**r.supremum, "witness": [w + 1e-12 for w in r.supremum["witness"]]}
    assert "supremum['witness'][0]" in record_difference([r], [replace(r, supremum=moved)])
    assert record_difference([r], [r, r]) == "1 records kept, 2 now"


def test_the_switch_is_explicit(monkeypatch):
    """Adoption is the caller's parameter, never the environment's: a variable of the old name changes nothing."""
    assert adoption_switch(True) is True and adoption_switch(False) is False
    with pytest.raises(TypeError, match="adopt must be True or False"):
        adoption_switch("verify")
    monkeypatch.setenv("DPKIT_CHECKPOINT_ADOPT", "verify")
    assert adoption_switch(False) is False
    assert inspect.signature(ex.run_cells).parameters["adopt"].default is False


# --------------------------------------------------------------------------- adoption by run_cells
def test_kept_repetitions_are_adopted_by_sources_that_compute_the_same_numbers(X, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "keep"
    first, old = _kept_run(X, folder)
    before = _files(folder)
    monkeypatch.setattr(ck, "library_fingerprint", lambda: NEW)
    # without the switch: refused as before, nothing touched
    with pytest.raises(CheckpointMismatchError, match="dpkit_sha256"):
        ex.run_cells(X, methods=_methods(), reps=3, checkpoint=folder, **KW)
    assert _files(folder) == before
    monkeypatch.setenv("DPKIT_CHECKPOINT_ADOPT", "verify")  # the retired variable: not a switch any more
    with pytest.raises(CheckpointMismatchError, match="dpkit_sha256"):
        ex.run_cells(X, methods=_methods(), reps=3, checkpoint=folder, **KW)
    assert _files(folder) == before
    again = ex.run_cells(X, methods=_methods(), reps=3, checkpoint=folder, adopt=True, **KW)
    # the kept records are returned (their release times are the first run's), equal to the first run's to the bit
    assert [(r.rep, r.method, r.sigma, r.time_s) for r in again] == [(r.rep, r.method, r.sigma, r.time_s) for r in first]
    assert _numbers(again) == _numbers(first)
    assert (folder / f"identity-{old['dpkit_sha256'][:12]}.json").read_bytes() == before["identity.json"]
    assert json.loads((folder / "identity.json").read_text()) == {**old, "dpkit_sha256": NEW}
    [entry] = json.loads((folder / "adoptions.json").read_text())
    assert entry["from"] == old["dpkit_sha256"] and entry["to"] == NEW
    assert entry["verified"] == [0, 2] and entry["adopted"] == 3 and entry["utc"].endswith("Z")
    assert "adopted 3 repetition(s)" in capsys.readouterr().err
    keep = RepetitionCheckpoint(folder, {**old, "dpkit_sha256": NEW})  # every file now belongs to the new identity
    assert keep.done() == [0, 1, 2]
    for i in range(3):
        payload = pickle.loads((folder / f"rep-{i:05d}.pkl").read_bytes())
        assert payload["seconds"] == pickle.loads(before[f"rep-{i:05d}.pkl"])["seconds"]
    # the adopted folder goes on (no second verification: it is current now) with the numbers of one fresh run
    longer = ex.run_cells(X, methods=_methods(), reps=4, checkpoint=folder, **KW)
    assert _numbers(longer) == _numbers(ex.run_cells(X, methods=_methods(), reps=4, **KW))
    assert len(json.loads((folder / "adoptions.json").read_text())) == 1


def test_measured_times_do_not_prevent_adoption(X, tmp_path, monkeypatch):
    folder = tmp_path / "keep"
    first, _ = _kept_run(X, folder, reps=2)
    digest = ck._digest(json.loads((folder / "identity.json").read_text()))
    for i in range(2):  # times that no recomputation gives back
        path = folder / f"rep-{i:05d}.pkl"
        payload = pickle.loads(path.read_bytes())
        assert payload["digest"] == digest
        payload["records"] = [replace(r, time_s=1e6, timings={"total": 1e6},
                                      supremum=None if r.supremum is None else {**r.supremum, "seconds": 1e6})
                              for r in payload["records"]]
        path.write_bytes(pickle.dumps(payload))
    monkeypatch.setattr(ck, "library_fingerprint", lambda: NEW)
    again = ex.run_cells(X, methods=_methods(), reps=2, checkpoint=folder, adopt=True, **KW)
    assert all(r.time_s == 1e6 for r in again) and _numbers(again) == _numbers(first)
    assert any(r.supremum is not None and r.supremum["seconds"] == 1e6 for r in again)


def test_an_adoption_cut_off_half_way_is_finished_by_the_next(X, tmp_path, monkeypatch):
    """A process killed while it wrote the files again leaves some under the new identity: the next adoption takes them."""
    folder = tmp_path / "keep"
    first, old = _kept_run(X, folder, reps=2)
    path = folder / "rep-00001.pkl"
    payload = pickle.loads(path.read_bytes())
    path.write_bytes(pickle.dumps({**payload, "digest": ck._digest({**old, "dpkit_sha256": NEW})}))
    monkeypatch.setattr(ck, "library_fingerprint", lambda: NEW)
    again = ex.run_cells(X, methods=_methods(), reps=2, checkpoint=folder, adopt=True, **KW)
    assert [r.time_s for r in again] == [r.time_s for r in first] and _numbers(again) == _numbers(first)


def _nudged(release):
    """A release whose synthetic database moved 1e-12 of weight: numbers change, the method's repr does not."""
    def release_again(self, X, **kw):
        rel = release(self, X, **kw)
        w = np.array(rel.synthetic.weights)
        w[0] += 1e-12
        w[1] -= 1e-12
        return replace(rel, synthetic=replace(rel.synthetic, weights=w))

    return release_again


def test_sources_that_change_a_number_are_refused_and_nothing_is_touched(X, tmp_path, monkeypatch):
    folder = tmp_path / "keep"
    _kept_run(X, folder, reps=2)
    before = _files(folder)
    monkeypatch.setattr(ck, "library_fingerprint", lambda: NEW)
    monkeypatch.setattr(SamplingFloor, "release", _nudged(SamplingFloor.release))
    with pytest.raises(CheckpointMismatchError) as info:
        ex.run_cells(X, methods=_methods(), reps=2, checkpoint=folder, adopt=True, **KW)
    msg = str(info.value)
    assert str(folder) in msg and "repetition 0 " in msg and "method 'floor', σ 2.0: abs kept " in msg
    assert f"dpkit {NEW}" in msg and "--stale rerun" in msg
    assert _files(folder) == before


def test_another_difference_is_refused_even_with_the_switch(X, tmp_path, monkeypatch):
    folder = tmp_path / "keep"
    _kept_run(X, folder, reps=1)
    before = _files(folder)
    monkeypatch.setattr(ck, "library_fingerprint", lambda: NEW)
    with pytest.raises(CheckpointMismatchError, match="different run .*seed"):
        ex.run_cells(X, methods=_methods(), reps=1, checkpoint=folder, adopt=True, **{**KW, "seed": 4})
    assert _files(folder) == before


def test_the_dask_path_goes_on_from_an_adopted_checkpoint(X, tmp_path, monkeypatch):
    from distributed import LocalCluster

    from dpkit.batch.repetitions import DaskRepetitions

    folder = tmp_path / "keep"
    _kept_run(X, folder, reps=2)
    from dpkit.core import paths

    for where in (ck, paths):  # the sources of this process and of its in-process worker, as the tasks check
        monkeypatch.setattr(where, "library_fingerprint", lambda: NEW)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as c:
        recs = ex.run_cells(X, methods=_methods(), reps=4, checkpoint=folder, adopt=True,
                            workers=DaskRepetitions(c.scheduler_address), **KW)
    assert _numbers(recs) == _numbers(ex.run_cells(X, methods=_methods(), reps=4, **KW))
    assert RepetitionCheckpoint(folder, json.loads((folder / "identity.json").read_text())).done() == [0, 1, 2, 3]
    assert json.loads((folder / "identity.json").read_text())["dpkit_sha256"] == NEW


# --------------------------------------------------------------------------- the batch: --stale verify
OLD = "0" * 16  # "the older sources" that kept the repetitions


def _batch(tmp_path: Path) -> tuple[Path, Path]:
    from dpkit.batch.manifest import expand_manifest, load_manifest
    from dpkit.batch.stale import checkpoint_folder

    make_checkpoint_notebook(tmp_path)
    m = make_manifest(tmp_path, [{"notebook": "long.ipynb", "parameters": {"STOP": str(tmp_path / "stop")}}])
    [spec] = expand_manifest(load_manifest(m))
    return m, checkpoint_folder(spec, spec.folder(tmp_path / "out").parent)


def _stop_after(tmp_path: Path, i: int) -> None:
    stop_after(tmp_path / "stop", i)


def _as_if_kept_by(keep: Path, fingerprint: str) -> None:
    """Make the kept repetitions look computed by sources of ``fingerprint`` (their identity, the folder's record)."""
    (keep / "dpkit_sha256").write_text(fingerprint + "\n")
    meta = keep / "mock" / "identity.json"
    identity = {**json.loads(meta.read_text()), "dpkit_sha256": fingerprint}
    meta.write_text(json.dumps(identity))
    for path in (keep / "mock").glob("rep-*.pkl"):
        payload = pickle.loads(path.read_bytes())
        path.write_bytes(pickle.dumps({**payload, "digest": ck._digest(identity)}))


def _stopped_run(tmp_path: Path) -> tuple[Path, Path]:
    """A run that failed after its repetitions 0 and 1, kept by "older sources"."""
    m, keep = _batch(tmp_path)
    _stop_after(tmp_path, 1)
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "failed" and "deliberate failure after repetition 1" in r["error"]
    _as_if_kept_by(keep, OLD)
    return m, keep


def test_stale_verify_goes_on_from_kept_repetitions_that_compute_the_same(X, tmp_path, capsys):
    from dpkit.batch.manifest import notebook_fingerprint
    from dpkit.batch.stale import StaleRunsError
    from dpkit.core.paths import library_fingerprint

    m, keep = _stopped_run(tmp_path)
    with pytest.raises(StaleRunsError, match="--stale verify"):
        batch.run_manifest(m, scheduler="sync")
    # verify: the kept repetitions stay; the kernel adopts them, then this attempt stops after repetition 2
    _stop_after(tmp_path, 2)
    [r] = batch.run_manifest(m, scheduler="sync", on_stale="verify")
    assert r["status"] == "failed" and "deliberate failure after repetition 2" in r["error"], r["error"]
    assert not (tmp_path / "out" / ".superseded").exists()
    err = capsys.readouterr().err
    assert "continuing" in err and "now count as current" in err
    assert "adopted 2 repetition(s)" in (Path(r["folder"]) / "long.ipynb").read_text()  # the kernel's line, in its notebook
    assert (keep / "dpkit_sha256").read_text().strip() == library_fingerprint()
    assert (keep / "notebook_sha256").read_text().strip() == notebook_fingerprint(tmp_path / "long.ipynb")
    [entry] = json.loads((keep / "mock" / "adoptions.json").read_text())
    assert (entry["from"], entry["to"], entry["verified"], entry["adopted"]) == (OLD, library_fingerprint(), [0, 1], 2)
    assert "DPKIT_CHECKPOINT_ADOPT" not in os.environ  # the switch was the notebook's parameter, not an environment's
    # the folder is current now: the default policy goes on, and run.json records the adoption
    [r2] = batch.run_manifest(m, scheduler="sync")
    assert r2["status"] == "ok" and not keep.exists()
    info = json.loads((Path(r2["folder"]) / "run.json").read_text())["checkpoint"]
    assert info["resumed_repetitions"] == 3 and info["repetitions"] == 4
    [logged] = info["adoptions"]
    assert logged["dataset"] == "mock" and logged["from"] == OLD and logged["adopted"] == 2
    # the numbers of one uninterrupted run
    recs = ex.run_cells(X, methods={"trig-II": get("trig-II", C=100, R=6), "floor": SamplingFloor(size=10)},
                        sigmas=[2.0, 4.0], reps=4, seed=0, dataset="mock", n_queries=80)
    table = json.loads((Path(r2["folder"]) / "metrics.json").read_text())["table"]
    assert [(t["rep_index"], t["method"], t["sigma"], t["abs"]) for t in table] == \
        [(r.rep, r.method, r.sigma, r.abs) for r in recs]


def test_verify_reps_sets_how_many_kept_repetitions_the_kernel_computes_again(tmp_path, capsys):
    m, keep = _batch(tmp_path)
    _stop_after(tmp_path, 2)
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "failed"
    _as_if_kept_by(keep, OLD)  # repetitions 0, 1 and 2 kept by "older sources"
    for bad in (["--stale", "verify", "--verify-reps", "0"], ["--verify-reps", "3"]):
        with pytest.raises(SystemExit) as info:
            batch.main(["run", str(m), "--scheduler", "sync", *bad])
        assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--verify-reps must be a positive integer, got 0" in err and "--verify-reps applies to --stale verify" in err
    assert batch.main(["run", str(m), "--scheduler", "sync", "--stale", "verify", "--verify-reps", "3"]) == 0
    [logged] = json.loads((Path(r["folder"]) / "run.json").read_text())["checkpoint"]["adoptions"]
    assert (logged["verified"], logged["adopted"]) == ([0, 1, 2], 3)  # the default would verify [0, 2]


def test_the_notebook_command_applies_the_same_stale_policies_to_its_kept_repetitions(tmp_path, capsys):
    nb = make_checkpoint_notebook(tmp_path)

    def attempt(name: str, *extra: str) -> int:
        return batch.main(["notebook", str(nb), "--output", str(tmp_path / name), "-p", "STOP", str(tmp_path / "stop"),
                           *extra])

    _stop_after(tmp_path, 2)
    assert attempt("one") == 1
    keep = tmp_path / ".one.checkpoint"
    _as_if_kept_by(keep, OLD)  # repetitions 0, 1 and 2 kept by "older sources"
    before = _files(keep)
    assert attempt("one") == 2 and "--stale verify" in capsys.readouterr().err  # named, nothing ran
    assert attempt("one", "--stale", "keep") == 2 and "--stale keep keeps finished runs" in capsys.readouterr().err
    assert _files(keep) == before and not (tmp_path / "one" / "metrics.json").exists()
    assert attempt("one", "--stale", "verify", "--verify-reps", "3") == 0
    assert "now count as current" in capsys.readouterr().err and not keep.exists()
    [logged] = json.loads((tmp_path / "one" / "run.json").read_text())["checkpoint"]["adoptions"]
    assert (logged["from"], logged["verified"], logged["adopted"]) == (OLD, [0, 1, 2], 3)
    # rerun: the stale repetitions go to .superseded/ beside the output, and the run starts afresh
    _stop_after(tmp_path, 0)
    assert attempt("two") == 1
    _as_if_kept_by(tmp_path / ".two.checkpoint", OLD)
    assert attempt("two", "--stale", "rerun") == 0
    [aside] = (tmp_path / ".superseded").glob("two.checkpoint-*")
    assert sorted(p.name for p in (aside / "mock").glob("rep-*.pkl")) == ["rep-00000.pkl"]
    assert json.loads((tmp_path / "two" / "run.json").read_text())["checkpoint"]["resumed_repetitions"] == 0


def test_stale_verify_fails_a_run_whose_kept_numbers_differ(tmp_path, capsys):
    m, keep = _stopped_run(tmp_path)
    path = keep / "mock" / "rep-00000.pkl"
    payload = pickle.loads(path.read_bytes())
    first = payload["records"][0]
    payload["records"][0] = replace(first, abs=first.abs + 1e-9)  # as if the older sources computed another number
    path.write_bytes(pickle.dumps(payload))
    before = _files(keep)
    assert batch.main(["run", str(m), "--scheduler", "sync", "--stale", "verify"]) == 1
    out = capsys.readouterr().out
    assert "CheckpointMismatchError" in out and "repetition 0 " in out and "method 'trig-II', σ 2.0: abs kept" in out
    assert "--stale rerun" in out
    assert _files(keep) == before  # nothing adopted, the folder's record still says stale
    with pytest.raises(batch.stale.StaleRunsError, match="dpkit sources: ran 0000000000000000"):
        batch.run_manifest(m, scheduler="sync")


def test_stale_verify_refuses_finished_runs_of_a_changed_notebook(tmp_path):
    import nbformat

    from dpkit.batch.stale import StaleRunsError

    m = make_manifest(tmp_path)
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "ok"
    nb = nbformat.read(str(tmp_path / "tiny.ipynb"), as_version=4)
    nb.cells[-1].source += "\n# changed"
    nbformat.write(nb, str(tmp_path / "tiny.ipynb"))
    with pytest.raises(StaleRunsError, match="--stale verify applies to kept repetitions of unfinished runs"):
        batch.run_manifest(m, scheduler="sync", on_stale="verify")
    assert (Path(r["folder"]) / "metrics.json").is_file()


def test_stale_verify_leaves_kept_repetitions_of_another_computation_stale(tmp_path):
    """A changed notebook that computes something else (here a method's parameter): its kernel refuses the kept
    repetitions, and the folder stays stale, for --stale rerun to move it aside."""
    import nbformat

    from dpkit.batch.stale import StaleRunsError

    m, keep = _batch(tmp_path)
    _stop_after(tmp_path, 1)
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "failed"
    nb = nbformat.read(str(tmp_path / "long.ipynb"), as_version=4)
    nb.cells[-1].source = nb.cells[-1].source.replace("SamplingFloor(size=10)", "SamplingFloor(size=11)")
    nbformat.write(nb, str(tmp_path / "long.ipynb"))
    before = _files(keep)
    [r2] = batch.run_manifest(m, scheduler="sync", on_stale="verify")
    assert r2["status"] == "failed" and "CheckpointMismatchError" in r2["error"] and "methods: floor" in r2["error"]
    assert _files(keep) == before
    with pytest.raises(StaleRunsError, match="notebook: ran"):
        batch.run_manifest(m, scheduler="sync")


def test_an_adoption_keeps_the_machine_that_computed_each_repetition(X, tmp_path, monkeypatch):
    """Adopted files are written again under the new identity: a repetition computed by another kind of machine stays
    that machine's, and one kept before machines were recorded stays unrecorded (not this machine's)."""
    from dpkit.core.machine import numerics_machine

    folder = tmp_path / "keep"
    _kept_run(X, folder, reps=3)
    for i, machine in ((1, "another machine"), (2, None)):
        path = folder / f"rep-{i:05d}.pkl"
        payload = pickle.loads(path.read_bytes())
        if machine is None:
            del payload["machine"]  # a file from before machines were recorded
        else:
            payload["machine"] = machine
        path.write_bytes(pickle.dumps(payload))
    monkeypatch.setattr(ck, "library_fingerprint", lambda: NEW)
    with pytest.warns(RuntimeWarning, match="another kind of machine"):  # loading repetition 1 mixes two machines
        ex.run_cells(X, methods=_methods(), reps=3, checkpoint=folder, adopt=True, **KW)
    assert json.loads((folder / "identity.json").read_text())["dpkit_sha256"] == NEW  # adopted
    machines = [pickle.loads((folder / f"rep-{i:05d}.pkl").read_bytes())["machine"] for i in range(3)]
    assert machines == [numerics_machine(), "another machine", None]
    assert ck.kept_machines(folder) == {numerics_machine(): 1, "another machine": 1, "unrecorded": 1}
