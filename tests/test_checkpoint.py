"""run_cells with a checkpoint: an interrupted run resumes with the records of an uninterrupted one."""
from __future__ import annotations

import pickle
from dataclasses import replace

import pytest

from dpkit import experiments as ex
from dpkit.experiments.checkpoint import CheckpointMismatchError, RepetitionCheckpoint
from dpkit.methods.references import SamplingFloor
from dpkit.methods.registry import get

SIGMAS = (2.0, 6.0)
KW = dict(sigmas=SIGMAS, reps=4, seed=3, dataset="mock", n_queries=120)


@pytest.fixture(scope="module")
def X():
    from dpkit.data import load

    return load("mock", n=250, d=3, rng=1).X


def _methods():
    return {"trig-II": get("trig-II", C=200, R=8), "marginals-histogram": get("marginals-histogram"),
            "kme-answers": get("kme-answers", max_features=32), "floor": SamplingFloor(size=15)}


def _numbers(recs):
    return [(r.rep, r.method, r.sigma, r.abs, r.rel, r.support_size, r.eps_spent, r.delta_spent, r.error_bound)
            for r in recs]


class Stop(Exception):
    pass


def _stop_after(k):
    def hook(i, reps):
        if i + 1 == k:
            raise Stop

    return hook


def test_interrupted_run_resumes_with_the_same_records(X, tmp_path):
    whole = ex.run_cells(X, methods=_methods(), **KW)
    with pytest.raises(Stop):
        ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, on_repetition=_stop_after(2), **KW)
    keep = RepetitionCheckpoint(tmp_path, ex.checkpoint.run_identity(X, methods=_methods(), sigmas=SIGMAS, seed=3,
                                                                      dataset="mock", n_queries=120, J=10))
    assert keep.done() == [0, 1]
    seen = []
    resumed = ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, on_repetition=lambda i, n: seen.append(i), **KW)
    assert seen == [0, 1, 2, 3]
    assert _numbers(resumed) == _numbers(whole)
    assert keep.done() == [0, 1, 2, 3]
    # the kept repetitions were loaded, not recomputed: their release times are the first run's
    first = {(r.rep, r.method, r.sigma): r.time_s for r in resumed if r.rep < 2}
    again = ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **KW)
    assert {(r.rep, r.method, r.sigma): r.time_s for r in again if r.rep < 2} == first
    # control: without the checkpoint, times are measured anew
    fresh = ex.run_cells(X, methods=_methods(), **KW)
    assert {(r.rep, r.method, r.sigma): r.time_s for r in fresh if r.rep < 2} != first


def test_a_kept_repetition_is_what_is_returned(X, tmp_path):
    """Loading really uses the files (a doctored file shows up in the result), so the test above can fail."""
    ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **{**KW, "reps": 1})
    path = tmp_path / "rep-00000.pkl"
    kept = pickle.loads(path.read_bytes())
    kept["records"] = [replace(r, abs=123.0) for r in kept["records"]]
    path.write_bytes(pickle.dumps(kept))
    recs = ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **{**KW, "reps": 1})
    assert all(r.abs == 123.0 for r in recs)


@pytest.mark.parametrize("change, field", [
    (dict(seed=4), "seed"), (dict(sigmas=(2.0, 4.0)), "sigmas"), (dict(n_queries=100), "n_queries"),
    (dict(dataset="other"), "dataset"), (dict(methods="eps"), "methods: trig-II"), (dict(X="shift"), "data_sha256"),
    (dict(methods="order"), "method_order"),
])
def test_a_checkpoint_of_another_computation_is_refused_by_name(X, tmp_path, change, field):
    ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **{**KW, "reps": 1})
    before = sorted(p.name for p in tmp_path.iterdir())
    kw = {**KW, "reps": 1, **{k: v for k, v in change.items() if k not in ("methods", "X")}}
    methods = _methods()
    if change.get("methods") == "eps":
        methods["trig-II"] = replace(methods["trig-II"], epsilon=0.5)
    if change.get("methods") == "order":  # the same methods in another order get other streams
        methods = dict(reversed(list(methods.items())))
    data = X * 0.5 if change.get("X") else X
    with pytest.raises(CheckpointMismatchError, match=field) as info:
        ex.run_cells(data, methods=methods, checkpoint=tmp_path, **kw)
    assert str(tmp_path) in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing overwritten


def test_more_repetitions_extend_a_checkpoint(X, tmp_path):
    """Repetition i's streams do not depend on the number of repetitions, so a longer run reuses a shorter one."""
    ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **{**KW, "reps": 2})
    longer = ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **KW)
    assert _numbers(longer) == _numbers(ex.run_cells(X, methods=_methods(), **KW))


def test_kept_seconds_sum_every_attempt(X, tmp_path):
    from dpkit.experiments.checkpoint import kept_seconds

    with pytest.raises(Stop):
        ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, on_repetition=_stop_after(1), **KW)
    n1, t1 = kept_seconds(tmp_path)
    ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **KW)
    n2, t2 = kept_seconds(tmp_path)
    assert (n1, n2) == (1, 4) and 0 < t1 < t2
    # a file without a recorded time (an older checkpoint) makes the sum unknown, not smaller
    path = tmp_path / "rep-00002.pkl"
    kept = pickle.loads(path.read_bytes())
    del kept["seconds"]
    path.write_bytes(pickle.dumps(kept))
    assert kept_seconds(tmp_path) == (4, None)


def test_repetitions_kept_by_another_kind_of_machine_are_loaded_with_a_warning(X, tmp_path, monkeypatch):
    """Each kept repetition records the machine that computed it (processor and numpy's SIMD kernels: the bits can
    differ between them). Resumed on another kind of machine, the run loads it with one RuntimeWarning naming both, and
    gives the same records; kept_machines counts each kind (older files: "unrecorded"); a plain resume on the same
    machine does not warn."""
    import warnings

    from dpkit.core.machine import numerics_machine
    from dpkit.experiments import checkpoint as cp

    here = numerics_machine()
    with pytest.raises(Stop):
        ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, on_repetition=_stop_after(2), **KW)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same machine: no warning
        ex.run_cells(X, methods=_methods(), checkpoint=tmp_path / "same", **{**KW, "reps": 1})
        ex.run_cells(X, methods=_methods(), checkpoint=tmp_path / "same", **{**KW, "reps": 1})
    assert cp.kept_machines(tmp_path) == {here: 2 + 1}  # the folder "same" lies below tmp_path
    monkeypatch.setattr(cp, "numerics_machine", lambda: "another processor; numpy SIMD X86_V3")
    with pytest.warns(RuntimeWarning, match="computed on another kind of machine") as seen:
        resumed = ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **KW)
    assert len([w for w in seen if "another kind of machine" in str(w.message)]) == 1
    assert here in str(seen[0].message) and "another processor" in str(seen[0].message)
    assert _numbers(resumed) == _numbers(ex.run_cells(X, methods=_methods(), **KW))
    kept = cp.kept_machines(tmp_path)
    assert kept == {here: 3, "another processor; numpy SIMD X86_V3": 2}, kept
    path = tmp_path / "rep-00003.pkl"
    payload = pickle.loads(path.read_bytes())
    del payload["machine"]
    path.write_bytes(pickle.dumps(payload))
    assert cp.kept_machines(tmp_path)["unrecorded"] == 1


def test_an_unreadable_kept_repetition_is_named(X, tmp_path):
    ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **{**KW, "reps": 1})
    (tmp_path / "rep-00000.pkl").write_bytes(b"not a pickle")
    with pytest.raises(CheckpointMismatchError, match="rep-00000.pkl is unreadable"):
        ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **{**KW, "reps": 1})


@pytest.mark.parametrize("reader", ["load", "kept_meta"])
def test_a_repetition_pickled_with_a_record_class_of_another_name_is_named(X, tmp_path, reader):
    """A kept file whose records are of a class this dpkit does not have (a checkpoint from before a rename) is
    refused in one line naming the file, by the checkpoint and by the batch's time accounting alike."""
    from dpkit.experiments.checkpoint import kept_meta

    ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **{**KW, "reps": 1})
    path = tmp_path / "rep-00000.pkl"
    # a pickle naming a record class that no longer exists (GLOBAL opcode: module, name; then STOP)
    path.write_bytes(b"\x80\x04cdpkit.experiments.record_types\nRunRecord\n.")
    with pytest.raises(CheckpointMismatchError, match="rep-00000.pkl is unreadable"):
        if reader == "load":
            ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **{**KW, "reps": 1})
        else:
            kept_meta(tmp_path)


def test_other_dpkit_sources_do_not_continue_a_checkpoint(X, tmp_path, monkeypatch):
    from dpkit.experiments import checkpoint

    ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **{**KW, "reps": 1})
    monkeypatch.setattr(checkpoint, "library_fingerprint", lambda: "0" * 16)
    with pytest.raises(CheckpointMismatchError, match="dpkit_sha256"):
        ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, **{**KW, "reps": 1})


def test_fingerprint_ignores_docstrings_and_comments_not_code(tmp_path):
    """A docstring, comment or layout edit keeps kept repetitions valid; any change to code does not."""
    from dpkit.core.paths import library_fingerprint

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    src = '"""Module doc."""\n\n\ndef f(x):\n    """Doc."""\n    return 2 * x  # twice\n\n\nclass C:\n    """Doc."""\n'
    (pkg / "m.py").write_text(src)
    (pkg / "sub" / "n.py").write_text("Y = 1\n")
    base = library_fingerprint(pkg)

    def variant(text, name="m.py"):
        (pkg / name).write_text(text)
        got = library_fingerprint(pkg)
        (pkg / name).write_text(src)
        return got

    edited = src.replace("Module doc.", "Module doc, longer.").replace('"""Doc."""', '"""Other\n    doc."""')
    assert variant(edited) == base
    assert variant(src.replace("  # twice", "") + "\n# a comment\n") == base
    assert variant(src.replace("return 2 * x", "return (2 *\n            x)")) == base
    assert variant(src.replace('class C:\n    """Doc."""\n', "class C:\n    pass\n")) == base
    for code in (src.replace("2 * x", "3 * x"), src.replace("2 * x", "x * 2"), src + "import os\n",
                 src.replace("def f(x)", "def f(y)").replace("2 * x", "2 * y"), src.replace('"""Doc."""', "x = 1", 1)):
        assert variant(code) != base, code
    (pkg / "m.py").rename(pkg / "m2.py")
    assert library_fingerprint(pkg) != base


# ----------------------------------------------------------------------------- repetitions in worker processes
class _FailsSometimes(SamplingFloor):
    """A subsample that raises in about half the repetitions (decided by its own stream, so per repetition)."""

    def release(self, X, *, rng=None, ledger=None, workload=None):
        if rng.random() < 0.5:
            raise RuntimeError("this repetition fails")
        return super().release(X, rng=rng, ledger=ledger, workload=workload)


def test_repetitions_in_worker_processes_give_the_same_records(X, tmp_path):
    """workers=2 computes repetitions in two processes: the records equal those of one process, to the bit,
    every repetition is kept, and a run resumed from a partial checkpoint in workers gives them too."""
    whole = ex.run_cells(X, methods=_methods(), **KW)
    seen = []
    two = ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, workers=2,
                       on_repetition=lambda i, n: seen.append(i), **KW)
    assert _numbers(two) == _numbers(whole)
    assert seen == [0, 1, 2, 3]  # reported in repetition order, whatever order they finished in
    keep = RepetitionCheckpoint(tmp_path, ex.checkpoint.run_identity(X, methods=_methods(), sigmas=SIGMAS, seed=3,
                                                                      dataset="mock", n_queries=120, J=10))
    assert keep.done() == [0, 1, 2, 3]
    for p in (tmp_path / "rep-00001.pkl", tmp_path / "rep-00003.pkl"):
        p.unlink()
    resumed = ex.run_cells(X, methods=_methods(), checkpoint=tmp_path, workers=3, **KW)
    assert _numbers(resumed) == _numbers(whole)
    assert keep.done() == [0, 1, 2, 3]


def test_a_failing_repetition_in_a_worker_is_raised_and_finished_work_kept(X, tmp_path):
    methods = {"floor": SamplingFloor(size=15), "flaky": _FailsSometimes(size=15)}
    reps = 8
    fails = []  # which repetitions fail, one at a time in this process
    for i in range(reps):
        try:
            ex.run_cells(X, methods=methods, **{**KW, "reps": i + 1}, checkpoint=tmp_path / "probe")
        except RuntimeError:
            fails.append(i)
            (tmp_path / "probe" / f"rep-{i:05d}.pkl").unlink(missing_ok=True)
            break
    assert fails, "no repetition of the flaky method failed: the test could not fail"
    with pytest.raises(RuntimeError, match="this repetition fails"):
        ex.run_cells(X, methods=methods, checkpoint=tmp_path / "two", workers=2, **{**KW, "reps": reps})
    keep = RepetitionCheckpoint(tmp_path / "two", ex.checkpoint.run_identity(
        X, methods=methods, sigmas=SIGMAS, seed=3, dataset="mock", n_queries=120, J=10))
    done = keep.done()
    assert fails[0] not in done and set(range(fails[0])) <= set(done)  # everything before the failure was kept
    ok = ex.run_cells(X, methods={"floor": SamplingFloor(size=15)}, **{**KW, "reps": 2}, workers=2)
    assert len(ok) == 2 * len(SIGMAS)


def test_workers_must_be_positive(X, tmp_path):
    with pytest.raises(ValueError, match="workers"):
        ex.run_cells(X, methods=_methods(), workers=0, checkpoint=tmp_path / "c", **KW)
    assert not (tmp_path / "c").exists()  # refused before anything is written


def test_verify_reps_spreads_the_recomputed_repetitions_from_the_lowest_to_the_highest(tmp_path, monkeypatch):
    """An adoption computes ``verify_at=n`` kept repetitions again (2: the lowest and the highest, the default),
    chosen by the caller (a notebook's CHECKPOINT_VERIFY_REPS); a count below 1 is refused by name."""
    from dpkit.experiments.adoption import verified_indices, verify_reps_switch

    kept = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert verified_indices(kept, 1) == [0] and verified_indices(kept, 2) == [0, 9]
    assert verified_indices(kept, 3) == [0, 4, 9] and verified_indices(kept, 4) == [0, 3, 6, 9]
    assert verified_indices(kept, 10) == verified_indices(kept, 50) == kept and verified_indices([], 3) == []
    assert verified_indices([2, 5, 7], 2) == [2, 7]
    assert verify_reps_switch() == 2 and verify_reps_switch(5) == 5
    monkeypatch.setenv("DPKIT_CHECKPOINT_VERIFY_REPS", "3")  # the retired variable changes nothing
    assert verify_reps_switch() == 2 and verify_reps_switch(1) == 1
    with pytest.raises(ValueError, match="verify_reps"):
        verify_reps_switch(0)
    identity = {"dpkit_sha256": "a" * 16, "seeding": "x"}
    keep = RepetitionCheckpoint(tmp_path, identity)
    for i in range(7):
        keep.save(i, [float(i)], seconds=1.0)
    asked: list[int] = []
    RepetitionCheckpoint(tmp_path, {**identity, "dpkit_sha256": "b" * 16}, verify_at=3,
                         verify=lambda i: asked.append(i) or [float(i)])
    assert asked == [0, 3, 6]
