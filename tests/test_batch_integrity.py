"""A batch output keeps what it holds: a run folder holds the run of its own key, only the runner's own temporary
folders are cleaned up, a run is finished only with the metrics.json of its own attempt, and commands that cannot
write say so in one line and leave nothing half-written."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from batch_notebooks import PARAMETERS, make_manifest, make_notebook
from board_records import write_run_records

from dpkit import batch
from dpkit.batch import runner
from dpkit.batch.locks import MARKER, clean_stale, make_temporary
from dpkit.batch.stale import StaleRunsError


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _fake_execute(notebook, output_dir, *, parameters=None, final_dir=None, **kw):
    """Writes run.json/metrics.json as a finished run of ``parameters`` (no kernel)."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    params = {**(parameters or {}), "OUTPUT_DIR": str(final_dir)}
    (out / "metrics.json").write_text(json.dumps({"checks": [], "table": [{"seed": params.get("SEED")}]}))
    (out / "run.json").write_text(json.dumps({"status": "ok", "notebook": str(notebook), "parameters": params,
                                              "key": batch.run_key(notebook, params)}))
    return out / Path(notebook).name


# --------------------------------------------------------------------------- 1. a run folder holds its own key's run
@pytest.mark.notebook
def test_notebook_into_a_finished_batch_run_is_refused_unless_replace_which_keeps_the_old_run(tmp_path, capsys):
    m = make_manifest(tmp_path, [{"notebook": "tiny.ipynb", "grid": {"SEED": [0]}}])
    out = tmp_path / "out"
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 0
    folder = out / "tiny" / batch.run_key("tiny.ipynb", {"SEED": 0})
    before = _snapshot(folder)
    assert json.loads(before["run.json"])["key"] == folder.name
    capsys.readouterr()
    # the offending command: refused in one line naming the folder, nothing touched
    assert batch.main(["notebook", str(tmp_path / "tiny.ipynb"), "--output", str(folder), "-p", "SEED", "9"]) == 2
    err = capsys.readouterr().err
    assert str(folder) in err and "--replace" in err and len(err.strip().splitlines()) == 1
    assert _snapshot(folder) == before
    assert batch.main(["collect", str(out)]) == 0
    assert [r["status"] for r in batch.run_manifest(m, scheduler="sync")] == ["skipped"]
    # --replace: the old run moves whole to .superseded/ (same bytes), the new one is SEED 9's, not SEED 0's
    assert batch.main(["notebook", str(tmp_path / "tiny.ipynb"), "--output", str(folder), "-p", "SEED", "9",
                       "--replace"]) == 0
    [kept] = (out / ".superseded" / "tiny").iterdir()
    assert kept.name.startswith(folder.name) and _snapshot(kept) == before
    assert json.loads((folder / "metrics.json").read_text())["table"][0]["seed"] == 9
    capsys.readouterr()
    # the folder now holds another key's run: collect and status name it (exit 1), the runner never skips it
    assert batch.main(["collect", str(out)]) == 1
    assert f"{folder}: holds a run of other parameters" in capsys.readouterr().err
    assert batch.main(["status", str(m)]) == 1
    assert str(folder) in capsys.readouterr().out
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 2
    assert str(folder) in capsys.readouterr().err
    # --stale rerun moves it aside too (kept) and runs SEED 0 again
    [r] = batch.run_manifest(m, scheduler="sync", on_stale="rerun")
    assert r["status"] == "ok" and json.loads((folder / "metrics.json").read_text())["table"][0]["seed"] == 0
    assert len(list((out / ".superseded" / "tiny").iterdir())) == 2
    assert batch.main(["collect", str(out)]) == 0


def test_a_run_folder_of_other_parameters_is_never_reused(tmp_path, monkeypatch, capsys):
    """A finished run whose run.json records other parameters than its folder's key (as the notebook command used to
    leave it): not skipped as finished, named by collect/status (exit 1) and by the runner before anything runs."""
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute)
    m = make_manifest(tmp_path, [{"notebook": "tiny.ipynb", "grid": {"SEED": [0, 1]}}])
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 0
    folder = tmp_path / "out" / "tiny" / batch.run_key("tiny.ipynb", {"SEED": 0})
    rj = folder / "run.json"
    info = json.loads(rj.read_text())
    info["parameters"]["SEED"] = 9  # SEED 9's run in SEED 0's folder, no key recorded (an older record)
    del info["key"]
    rj.write_text(json.dumps(info))
    capsys.readouterr()
    assert batch.main(["collect", str(tmp_path / "out")]) == 1
    assert f"{folder}: holds a run of other parameters" in capsys.readouterr().err
    assert batch.main(["status", str(m)]) == 1
    assert f"{folder}: holds a run of other parameters" in capsys.readouterr().out
    with pytest.raises(StaleRunsError, match=str(folder)):
        batch.run_manifest(m, scheduler="sync")
    assert json.loads(rj.read_text())["parameters"]["SEED"] == 9  # untouched
    # run_one on its own does not take it for SEED 0's run either, and moves it aside rather than deleting it
    spec = batch.RunSpec((tmp_path / "tiny.ipynb").resolve(), {"SEED": 0})
    assert batch.run_one(spec, tmp_path / "out")["status"] == "ok"
    [kept] = (tmp_path / "out" / ".superseded" / "tiny").iterdir()
    assert json.loads((kept / "run.json").read_text())["parameters"]["SEED"] == 9
    assert json.loads(rj.read_text())["parameters"]["SEED"] == 0


# --------------------------------------------------------------------------- 2. cleaning only what the runner made
@pytest.mark.parametrize("marked", [False, True])
def test_clean_up_removes_only_the_runners_own_temporary_folders(tmp_path, monkeypatch, marked):
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute)
    out = tmp_path / "out"
    user = [out / "notes" / ".thesis.old-draft", out / "notes" / ".thesis.tmp-1", out / "tiny" / ".aaaaaaaaaaaa.old-draft",
            out / "tiny" / ".aaaaaaaaaaaa.tmp-0000dead.bak", out / "tiny" / ".notakey.tmp-0000dead"]
    for p in user:
        p.mkdir(parents=True)
        (p / "chapter.tex").write_text("my notes")
        if marked:  # even with the runner's marker, a name of another shape is not the runner's
            (p / MARKER).write_text("")
    look_alike = out / "tiny" / ".aaaaaaaaaaaa.tmp-0000dead"  # the runner's name shape, without its marker
    if not marked:
        look_alike.mkdir()
        (look_alike / "chapter.tex").write_text("my notes")
        user.append(look_alike)
    ours = make_temporary(out / "tiny", "bbbbbbbbbbbb")
    assert clean_stale(out) == [ours]
    m = make_manifest(tmp_path, [{"notebook": "tiny.ipynb"}])
    assert [r["status"] for r in batch.run_manifest(m, scheduler="sync")] == ["ok"]  # cleans up before it runs
    for p in user:
        assert (p / "chapter.tex").read_text() == "my notes", p
    assert not ours.exists() and not [p for p in (out / "tiny").glob(".*-*") if p not in user]


def test_a_finished_checkpoint_folder_is_only_removed_when_the_runner_made_it(tmp_path):
    from dpkit.batch.execute import open_checkpoint, remove_checkpoint

    mine = tmp_path / ".quick.checkpoint"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    remove_checkpoint(mine)
    assert (mine / "notes.txt").is_file()
    made = open_checkpoint(tmp_path / ".other.checkpoint", "0" * 16)
    remove_checkpoint(made)
    assert not made.exists()


# --------------------------------------------------------------------------- 3. finished = its own metrics.json
NO_METRICS = PARAMETERS + "\nWRITE: bool = True"
BODY = ("from dpkit.outputs.report import Report\n"
        "if WRITE:\n    rep = Report(OUTPUT_DIR, params={'SEED': SEED})\n    rep.row(seed=SEED)\n    rep.write()")


@pytest.mark.notebook
def test_a_run_that_writes_no_metrics_has_failed(tmp_path, capsys):
    make_notebook(tmp_path, parameters=NO_METRICS, body=BODY)
    m = make_manifest(tmp_path, [{"notebook": "tiny.ipynb", "parameters": {"WRITE": False}}])
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "failed" and "wrote no metrics.json" in r["error"]
    assert json.loads((Path(r["folder"]) / "run.json").read_text())["status"] == "failed"
    assert batch.main(["status", str(m)]) == 1
    assert "failed" in capsys.readouterr().out
    assert [x["status"] for x in batch.run_manifest(m, scheduler="sync")] == ["failed"]  # tried again, not skipped


def test_a_run_recorded_ok_without_metrics_is_not_finished(tmp_path, monkeypatch, capsys):
    """A folder whose run.json says ok but which has no metrics.json (as earlier versions recorded): status says
    failed (exit 1) and the next batch runs it again instead of skipping it forever."""
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute)
    m = make_manifest(tmp_path, [{"notebook": "tiny.ipynb"}])
    [r] = batch.run_manifest(m, scheduler="sync")
    (Path(r["folder"]) / "metrics.json").unlink()
    assert batch.main(["status", str(m)]) == 1
    assert "wrote no metrics.json" in capsys.readouterr().out
    assert [x["status"] for x in batch.run_manifest(m, scheduler="sync")] == ["ok"]
    assert (Path(r["folder"]) / "metrics.json").is_file()


@pytest.mark.notebook
def test_a_second_attempt_into_one_folder_is_not_credited_with_the_first_ones_metrics(tmp_path, capsys):
    nb = make_notebook(tmp_path, parameters=NO_METRICS, body=BODY)
    out = tmp_path / "o"
    batch.execute_notebook(nb, out, parameters={"SEED": 1})
    first = (out / "metrics.json").read_bytes()
    with pytest.raises(batch.execute.NoMetricsError, match="wrote no metrics.json"):
        batch.execute_notebook(nb, out, parameters={"SEED": 2, "WRITE": False})
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "failed" and "wrote no metrics.json" in info["error"]
    assert (out / "metrics.json").read_bytes() == first
    # the command: the finished first run is only replaced with --replace, and then the failure is reported
    cli = tmp_path / "cli"
    assert batch.main(["notebook", str(nb), "--output", str(cli), "-p", "SEED", "1"]) == 0
    capsys.readouterr()
    assert batch.main(["notebook", str(nb), "--output", str(cli), "-p", "SEED", "2", "-p", "WRITE", "false",
                       "--replace"]) == 1
    assert "wrote no metrics.json" in capsys.readouterr().err
    assert not (cli / "metrics.json").exists()
    assert json.loads((cli / "run.json").read_text())["status"] == "failed"
    [kept] = (tmp_path / ".superseded").iterdir()
    assert json.loads((kept / "metrics.json").read_text())["table"][0]["seed"] == 1


def test_notebook_output_holding_files_but_no_run_is_refused(tmp_path, capsys):
    nb = make_notebook(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("x")
    assert batch.main(["notebook", str(nb), "--output", str(tmp_path / "mine")]) == 2
    assert str(tmp_path / "mine") in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["thesis.tex"]


# --------------------------------------------------------------------------- 4. cannot write / cannot start: one line
def _board_runs(root: Path) -> None:
    from test_leaderboard import _row

    for key, sigma in (("aaa", 2.0), ("bbb", 4.0)):
        d = root / "45_leaderboard" / key
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"status": "ok", "parameters": {}}))
        rows = [_row("m1", "ε-DP", 0.03, sigma=sigma), _row("m2", "(ε,δ)-DP", 0.02, sigma=sigma)]
        (d / "metrics.json").write_text(json.dumps({"checks": [], "table": [], "method_rows": rows}))
        write_run_records(d, rows)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_assemble_into_a_read_only_folder_fails_in_one_line_and_writes_nothing(tmp_path, capsys):
    from dpkit.batch.assemble import main

    _board_runs(tmp_path / "batch")
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "leaderboard.csv").write_text("an older board")
    ro.chmod(0o555)
    try:
        assert main(["leaderboard", str(tmp_path / "batch"), "--out", str(ro)]) == 2
    finally:
        ro.chmod(0o755)
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(ro) in err and len(err.strip().splitlines()) == 1
    assert [p.name for p in ro.iterdir()] == ["leaderboard.csv"] and (ro / "leaderboard.csv").read_text() == "an older board"


def test_assemble_with_a_folder_in_the_way_fails_in_one_line_and_writes_nothing(tmp_path, capsys):
    """An output that cannot be written (a folder of its name in --out, writable or not, even for root): exit 2, one
    line naming it, and none of the other outputs written."""
    from dpkit.batch.assemble import main

    _board_runs(tmp_path / "batch")
    dest = tmp_path / "dest"
    (dest / "leaderboard_summary.md").mkdir(parents=True)
    assert main(["leaderboard", str(tmp_path / "batch"), "--out", str(dest)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(dest / "leaderboard_summary.md") in err and len(err.strip().splitlines()) == 1
    assert [p.name for p in dest.iterdir()] == ["leaderboard_summary.md"]
    (tmp_path / "afile").write_text("")
    assert main(["leaderboard", str(tmp_path / "batch"), "--out", str(tmp_path / "afile" / "x")]) == 2
    assert str(tmp_path / "afile") in capsys.readouterr().err


def test_assemble_failing_half_way_leaves_nothing_half_written(tmp_path, monkeypatch, capsys):
    """A failure after some outputs are written (here: the second figure) leaves neither them nor a new folder."""
    from dpkit.batch import assemble

    _board_runs(tmp_path / "batch")
    calls = []

    def failing(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(tmp_path / "batch" / "assembled" / "x.pdf"))
        return real(*a, **k)

    real = assemble.export_figure
    monkeypatch.setattr(assemble, "export_figure", failing)
    assert assemble.main(["leaderboard", str(tmp_path / "batch")]) == 2
    assert str(tmp_path / "batch" / "assembled") in capsys.readouterr().err
    assert not (tmp_path / "batch" / "assembled").exists()


def test_assemble_of_malformed_records_names_the_file(tmp_path, capsys):
    """The board is made from the runs' records.parquet: one that is not a records table, or not Parquet at all,
    stops the assembly (exit 2) naming the file."""
    import pandas as pd

    from dpkit.batch.assemble import main

    _board_runs(tmp_path / "batch")
    bad = tmp_path / "batch" / "45_leaderboard" / "bbb" / "records.parquet"
    pd.DataFrame({"sigma": [2.0]}).to_parquet(bad)
    assert main(["leaderboard", str(tmp_path / "batch")]) == 2
    assert str(bad) in capsys.readouterr().err
    bad.write_bytes(b"not parquet")
    assert main(["leaderboard", str(tmp_path / "batch")]) == 2
    assert str(bad) in capsys.readouterr().err
    assert not (tmp_path / "batch" / "assembled").exists()


def test_absolute_notebook_glob_in_a_manifest(tmp_path, capsys):
    make_notebook(tmp_path, "a_1.ipynb")
    make_notebook(tmp_path, "a_2.ipynb")
    m = make_manifest(tmp_path, [{"notebook": str(tmp_path / "a_*.ipynb")}])
    specs = batch.expand_manifest(batch.load_manifest(m))
    assert [s.notebook.name for s in specs] == ["a_1.ipynb", "a_2.ipynb"]
    m = make_manifest(tmp_path, [{"notebook": str(tmp_path / "zz_*.ipynb")}])
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 2
    assert "zz_*.ipynb" in capsys.readouterr().err
    m = make_manifest(tmp_path, [{"notebook": "a/**b/*.ipynb"}])
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 2
    assert "a/**b/*.ipynb" in capsys.readouterr().err


def test_manifest_that_is_not_text_is_named(tmp_path, capsys):
    m = tmp_path / "m.yaml"
    m.write_bytes(b"runs: [\xff\xfe]\n")
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 2
    assert str(m) in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_collect_into_a_read_only_folder_fails_in_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute)
    m = make_manifest(tmp_path, [{"notebook": "tiny.ipynb"}])
    batch.run_manifest(m, scheduler="sync")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert batch.main(["collect", str(tmp_path / "out"), "--out", str(ro / "c")]) == 2
    finally:
        ro.chmod(0o755)
    err = capsys.readouterr().err
    assert str(ro) in err and len(err.strip().splitlines()) == 1 and not list(ro.iterdir())


def test_collect_with_a_folder_in_the_way_fails_in_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """The second of the collected files cannot be written (a folder of its name): the first is not written either."""
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute)
    batch.run_manifest(make_manifest(tmp_path, [{"notebook": "tiny.ipynb"}]), scheduler="sync")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "c_checks.csv").mkdir()
    assert batch.main(["collect", str(tmp_path / "out"), "--out", str(tmp_path / "w" / "c")]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "w" / "c_checks.csv") in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == ["c_checks.csv"]


def test_checks_summary_with_a_folder_in_the_way_fails_in_one_line_and_writes_nothing(tmp_path, capsys):
    from dpkit.batch import checks as checks_cli

    (tmp_path / "res" / "50_x").mkdir(parents=True)
    (tmp_path / "res" / "50_x" / "metrics.json").write_text(json.dumps({"checks": [], "table": []}))
    (tmp_path / "w" / "s.tex").mkdir(parents=True)
    assert checks_cli.main([str(tmp_path / "res"), "--out", str(tmp_path / "w" / "s")]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "w" / "s.tex") in err and len(err.strip().splitlines()) == 1
    assert [p.name for p in (tmp_path / "w").iterdir()] == ["s.tex"]
    (tmp_path / "afile").write_text("")
    assert checks_cli.main([str(tmp_path / "res"), "--out", str(tmp_path / "afile" / "s")]) == 2
    assert str(tmp_path / "afile") in capsys.readouterr().err


@pytest.mark.notebook
def test_status_reads_a_finished_run_whose_record_has_odd_timing_fields(tmp_path, capsys):
    """A finished run's ``run.json`` with a ``checkpoint`` that is not an object (or a non-numeric time) is shown as
    finished without those figures (status used to crash with a traceback on it)."""
    m = make_manifest(tmp_path, [{"notebook": "tiny.ipynb", "grid": {"SEED": [0]}}])
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 0
    rj = tmp_path / "out" / "tiny" / batch.run_key("tiny.ipynb", {"SEED": 0}) / "run.json"
    rj.write_text(json.dumps({**json.loads(rj.read_text()), "checkpoint": "12 s", "wall_time_s": "fast"}))
    capsys.readouterr()
    assert batch.main(["status", str(m)]) == 0
    assert "finished" in capsys.readouterr().out
