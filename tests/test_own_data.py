"""Your own data (dpkit.data.spec): a spec file, a DataFrame, an entry point; the privacy of the
preprocessing; every bad input a clear error or warning naming the file, column or value; a QUICK board of its own
on the shipped example (scikit-learn's diabetes data) and an entrant ranked against it."""
from __future__ import annotations

import importlib.metadata
import json
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import dpkit.data.spec as dspec
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.data import (
    ChecksumError,
    ClippingWarning,
    DataNotFoundError,
    MalformedDataError,
    SpecError,
    from_dataframe,
    load,
    load_available,
    register_dataset,
    unregister_dataset,
)
from dpkit.data.spec import MAX_BOARD_COLUMNS, MIN_BOARD_ROWS, check_board_shape, data_fingerprint, quick_datasets

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "examples" / "diabetes.yaml"
COLUMNS = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]


def _spec(tmp_path: Path, name: str = "toy", **keys) -> Path:
    doc = {"name": name, "citation": "a test", **keys}
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def _csv(tmp_path: Path, df: pd.DataFrame, name: str = "toy.csv") -> Path:
    p = tmp_path / name
    df.to_csv(p, index=False)
    return p


@pytest.fixture
def toy(tmp_path):
    """A small CSV (50 rows, columns a in [0, 10], b in [-5, 5], a text column) and its spec path maker."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.uniform(0, 10, 50), "b": rng.uniform(-5, 5, 50),
                       "colour": rng.choice(["red", "green", "blue"], 50)})
    _csv(tmp_path, df)
    return df


def _load_quiet(name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the example declares everything: no warning at all
        return load(name, **kw)


# ---- the example: a spec file of a file shipped with a package ------------------------------------------------


def test_the_example_spec_loads_the_diabetes_data_with_its_public_bounds():
    from sklearn.datasets import load_diabetes

    ds = _load_quiet(str(EXAMPLE))
    raw = load_diabetes(scaled=False).data
    assert ds.name == "diabetes" and ds.shape == (442, 10) and list(ds.columns) == COLUMNS
    assert ds.bounds_source == "public" and ds.thesis_shape is None and ds.matches_thesis is None
    # X is the raw data rescaled with the declared bounds (sex: ordinal 1/2 -> 0/1 -> -1/+1), exactly
    spec = yaml.safe_load(EXAMPLE.read_text())
    lo = np.array([spec["bounds"][c][0] if c != "sex" else 0.0 for c in COLUMNS])
    hi = np.array([spec["bounds"][c][1] if c != "sex" else 1.0 for c in COLUMNS])
    coded = raw.copy()
    coded[:, 1] -= 1.0
    np.testing.assert_array_equal(ds.X, 2.0 * (coded - lo) / (hi - lo) - 1.0)
    prov = ds.provenance
    assert prov["bounds_by_column"]["sex"] == "encoding" and prov["bounds_by_column"]["age"] == "public"
    assert prov["files"][0]["verified"] and prov["files"][0]["sha256"] == spec["sha256"]
    assert prov["spec"]["file"] == str(EXAMPLE) and len(prov["spec"]["sha256"]) == 64
    assert prov["data_dependent_steps"] == [] and not prov["privacy_leak_warning"] and prov["clipped_values"] == 0
    assert "Efron" in prov["citation"]
    from dpkit.data import dataset_info

    info = dataset_info(str(EXAMPLE))
    assert info.name == "diabetes" and info.rows == 442 and info.spec_file == EXAMPLE


def test_without_declared_bounds_the_datas_own_are_used_with_a_privacy_leak_warning(tmp_path, toy):
    spec = _spec(tmp_path, path="toy.csv", columns=["a", "b"], bounds={"a": [0, 10]})
    with pytest.warns(PrivacyLeakWarning, match=r"toy: rescaling bounds are the per-column min/max .* \['b'\]"):
        ds = load(str(spec))
    assert ds.bounds_source == "data" and ds.provenance["bounds_by_column"] == {"a": "public", "b": "data"}
    assert ds.provenance["privacy_leak_warning"] and ds.provenance["data_dependent_steps"][0]["step"] == "bounds"
    np.testing.assert_array_equal(ds.bounds[1], [toy["b"].min(), toy["b"].max()])
    np.testing.assert_array_equal(ds.bounds[0], [0.0, 10.0])  # declared: used as they are, not the data's


def test_a_spec_path_works_in_load_available_keyed_by_its_name_and_in_quick_mode(tmp_path, toy):
    spec = _spec(tmp_path, path="toy.csv", columns=["a", "b"], bounds={"a": [0, 10], "b": [-5, 5]})
    with pytest.warns(PrivacyLeakWarning, match="WDBC"):  # WDBC has no documented bounds; its spec declares them
        data, missing = load_available([str(spec), "WDBC"])
    assert list(data) == ["toy", "WDBC"] and missing == {}
    assert quick_datasets(["CRM", str(spec), "WDBC"]) == [str(spec), "WDBC"]
    assert quick_datasets(["CRM", "CSN"]) == ["WDBC"]
    with pytest.raises(ValueError, match="'toy' a second time"):
        (tmp_path / "toy2.yaml").write_text(spec.read_text())
        load_available([str(spec), str(tmp_path / "toy2.yaml")])


# ---- a DataFrame, register_dataset, encodings ------------------------------------------------------------------


def test_a_dataframe_with_encodings_and_declared_bounds(toy):
    ds = from_dataframe(toy, name="frame", bounds={"a": [0, 10], "b": [-5, 5]},
                        encodings={"colour": {"one_hot": ["red", "green", "blue"]}})
    assert ds.columns == ("a", "b", "colour=red", "colour=green", "colour=blue") and ds.bounds_source == "public"
    onehot = (ds.X[:, 2:] + 1.0) / 2.0
    np.testing.assert_array_equal(onehot.sum(axis=1), 1.0)
    np.testing.assert_array_equal(onehot[:, 0] == 1.0, (toy["colour"] == "red").to_numpy())
    np.testing.assert_allclose(ds.X[:, 0], toy["a"] / 5.0 - 1.0, rtol=0, atol=1e-15)
    ordinal = from_dataframe(toy, name="frame", bounds={"a": [0, 10], "b": [-5, 5]},
                             encodings={"colour": {"ordinal": ["blue", "green", "red"]}})
    codes = toy["colour"].map({"blue": -1.0, "green": 0.0, "red": 1.0}).to_numpy()
    np.testing.assert_array_equal(ordinal.X[:, 2], codes)
    assert ds.provenance["files"][0]["found_in"] == "memory" and len(ds.provenance["files"][0]["sha256"]) == 64


def test_register_dataset_gives_a_dataframe_a_name_load_knows(toy):
    register_dataset("my-frame", toy[["a", "b"]], bounds={"a": [0, 10], "b": [-5, 5]})
    try:
        ds = _load_quiet("my-frame", n=20, rng=1)
        assert ds.shape == (20, 2) and ds.provenance["subsample"]["of"] == 50
        with pytest.raises(SpecError, match="name 'My-Frame' is already taken by register_dataset"):
            register_dataset("My-Frame", toy)
    finally:
        unregister_dataset("my-frame")
    with pytest.raises(ValueError, match="unknown data set 'my-frame'"):
        load("my-frame")


# ---- an entry point of group dpkit.datasets ----------------------------------------------------------------------


def test_an_installed_packages_entry_point_is_a_data_set_name(tmp_path, toy, monkeypatch):
    spec = _spec(tmp_path, name="ignored", path=str(tmp_path / "toy.csv"), columns=["a", "b"],
                 bounds={"a": [0, 10], "b": [-5, 5]})
    mod = tmp_path / "scratch_own_data_pkg.py"
    mod.write_text(textwrap.dedent(f"""
        SPEC = {str(spec)!r}
        def frame():
            import pandas as pd
            return pd.read_csv({str(tmp_path / 'toy.csv')!r})[["a"]]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [importlib.metadata.EntryPoint(name="pkg-toy", value="scratch_own_data_pkg:SPEC", group="dpkit.datasets"),
           importlib.metadata.EntryPoint(name="pkg-frame", value="scratch_own_data_pkg:frame", group="dpkit.datasets"),
           importlib.metadata.EntryPoint(name="WDBC", value="scratch_own_data_pkg:SPEC", group="dpkit.datasets")]
    real = importlib.metadata.entry_points

    def fake(**kw):
        return eps if kw.get("group") == "dpkit.datasets" else real(**kw)

    monkeypatch.setattr(dspec.importlib.metadata, "entry_points", fake)
    try:
        ds = _load_quiet("pkg-toy")
        assert ds.name == "pkg-toy" and ds.shape == (50, 2) and "entry point 'pkg-toy'" in ds.provenance["spec"]["origin"]
        with pytest.warns(PrivacyLeakWarning, match=r"pkg-frame: .*\['a'\]"):
            assert load("pkg-frame").shape == (50, 1)
        assert "pkg-toy" in dspec.user_datasets()
        # a registry code is never taken over by an entry point of the same name
        with pytest.warns(PrivacyLeakWarning, match="WDBC"):
            assert load("WDBC").shape == (569, 30)
    finally:
        sys.modules.pop("scratch_own_data_pkg", None)


# ---- bad input: each one clear error or warning naming the file, column or value -----------------------------------


BAD = {
    "missing file": (dict(path="nope.csv"), DataNotFoundError, ["data file", "nope.csv", "does not exist"]),
    "wrong format": (dict(path="toy.csv", format="parquet"), MalformedDataError, ["toy.csv", "cannot be read as parquet"]),
    "column not there": (dict(path="toy.csv", columns=["a", "bb"]), MalformedDataError,
                         ["'bb' (did you mean 'b'?)", "not in", "toy.csv"]),
    "non-numeric": (dict(path="toy.csv", columns=["a", "colour"], bounds={"a": [0, 10]}), MalformedDataError,
                    ["column 'colour'", "not numeric", "encodings"]),
    "unknown level": (dict(path="toy.csv", columns=["colour"], encodings={"colour": {"ordinal": ["red", "green"]}}),
                      MalformedDataError, ["column 'colour'", "'blue'", "ordinal levels"]),
    "rows": (dict(path="toy.csv", columns=["a"], bounds={"a": [0, 10]}, rows=51), MalformedDataError,
             ["has 50 rows", "rows: 51"]),
    "collision": (dict(path="toy.csv", name="wdbc"), SpecError, ["'wdbc' collides with the registered data set 'WDBC'"]),
    "unknown key": (dict(path="toy.csv", bound={"a": [0, 1]}), SpecError, ["'bound' (did you mean 'bounds'?)"]),
    "url without sha256": (dict(url="https://example.org/x.csv"), SpecError, ["url needs sha256"]),
    "bad bounds": (dict(path="toy.csv", bounds={"a": [1, 1]}), SpecError, ["bounds of column 'a'", "upper > lower"]),
    "sha256 mismatch": (dict(path="toy.csv", sha256="0" * 64), ChecksumError, ["toy.csv has sha256", "spec says"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_a_clear_error_naming_it(tmp_path, toy, case):
    keys, exc, parts = BAD[case]
    spec = _spec(tmp_path, **keys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(exc) as info:
            load(str(spec))
    for part in parts:
        assert part in str(info.value), (case, str(info.value))
    if exc is not SpecError or case == "collision":
        return
    assert str(spec) in str(info.value)  # a spec error names its spec file


def test_a_missing_spec_file_and_bad_yaml_are_named(tmp_path):
    with pytest.raises(DataNotFoundError, match="spec file .*absent.yaml does not exist"):
        load(str(tmp_path / "absent.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match="bad.yaml is not valid YAML"):
        load(str(bad))


def test_missing_values_are_refused_unless_a_policy_is_declared(tmp_path):
    df = pd.DataFrame({"a": [1.0, 2.0, np.nan, 4.0, 5.0], "b": [0.0, 1.0, 2.0, np.nan, 4.0]})
    _csv(tmp_path, df)
    with pytest.raises(MalformedDataError, match=r"column 'a' of .*toy.csv has 1 missing value\(s\) \(first at row 2"):
        load(str(_spec(tmp_path, path="toy.csv", bounds={"a": [0, 5], "b": [0, 5]})))
    with pytest.warns(PrivacyLeakWarning, match=r"dropped 2 row\(s\) with a missing value"):
        ds = load(str(_spec(tmp_path, path="toy.csv", bounds={"a": [0, 5], "b": [0, 5]}, missing="drop_rows")))
    assert ds.n == 3 and ds.provenance["rows_dropped_missing"] == 2
    filled = _load_quiet(str(_spec(tmp_path, path="toy.csv", bounds={"a": [0, 5], "b": [0, 5]},
                                   missing={"fill": {"a": 0.0, "b": 0.0}})))
    assert filled.n == 5 and filled.provenance["data_dependent_steps"] == []


def test_a_constant_column_is_refused_with_data_bounds_and_warned_about_with_declared_ones(tmp_path):
    _csv(tmp_path, pd.DataFrame({"a": [1.0, 2.0, 3.0], "c": [7.0, 7.0, 7.0]}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(MalformedDataError, match=r"column\(s\) \['c'\] of .*toy.csv are constant"):
            load(str(_spec(tmp_path, path="toy.csv")))
    with pytest.warns(UserWarning, match=r"column\(s\) \['c'\] of .*toy.csv are constant in the data; kept"):
        ds = load(str(_spec(tmp_path, path="toy.csv", bounds={"a": [0, 4], "c": [0, 10]})))
    assert ds.columns == ("a", "c")  # nothing silently dropped


def test_bounds_that_do_not_contain_the_data_clip_with_the_share_per_column(tmp_path):
    _csv(tmp_path, pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [0.0, 1.0, 2.0, 3.0]}))
    with pytest.warns(ClippingWarning, match=r"2 of 8 values \(25.0%\) .* \(a: 2 \(50.0%\)\)"):
        ds = load(str(_spec(tmp_path, path="toy.csv", bounds={"a": [1, 2], "b": [0, 3]})))
    assert ds.provenance["clipped_by_column"] == {"a": 2} and ds.X[:, 0].tolist() == [-1.0, -1.0, 1.0, 1.0]


def test_the_boards_range_too_few_rows_too_many_columns():
    few = from_dataframe(pd.DataFrame({"a": np.linspace(0, 1, MIN_BOARD_ROWS - 1)}), name="few", bounds={"a": [0, 1]})
    with pytest.raises(ValueError, match=f"few: {MIN_BOARD_ROWS - 1} rows are too few for the board"):
        check_board_shape(few)
    wide_df = pd.DataFrame(np.random.default_rng(0).uniform(size=(MIN_BOARD_ROWS, MAX_BOARD_COLUMNS + 1)))
    wide = from_dataframe(wide_df, name="wide", bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match=f"wide: {MAX_BOARD_COLUMNS + 1} columns are too many"):
        check_board_shape(wide)
    check_board_shape(from_dataframe(wide_df.iloc[:, :MAX_BOARD_COLUMNS], name="ok", bounds=(0.0, 1.0)))


def test_the_board_command_refuses_bad_data_before_anything_runs(tmp_path, capsys):
    from dpkit.batch.cli import main

    _csv(tmp_path, pd.DataFrame({"a": np.linspace(0, 1, 10)}))
    spec = _spec(tmp_path, path="toy.csv", bounds={"a": [0, 1]})
    assert main(["board", str(spec), "--out", str(tmp_path / "b")]) == 2
    assert "10 rows are too few for the board" in capsys.readouterr().err
    assert main(["board", str(tmp_path / "absent.yaml"), "--out", str(tmp_path / "b")]) == 2
    assert "absent.yaml does not exist" in capsys.readouterr().err
    assert not (tmp_path / "b" / "batch").exists()


# ---- a QUICK board of its own on the example, and an entrant ranked against it ------------------------------------

ENTRANT = textwrap.dedent('''
    from dataclasses import dataclass
    from typing import ClassVar

    import numpy as np

    from dpkit.core.accounting import ledger_for
    from dpkit.queries.release import MethodBase, Release


    @dataclass(frozen=True, kw_only=True)
    class Zero(MethodBase):
        epsilon: float = 1.0
        delta: float = 0.0
        label: ClassVar[str] = "zero"
        needs_workload: ClassVar[bool] = True

        def release(self, X, *, rng=None, ledger=None, workload=None):
            wl = self._require_workload(workload)
            led = ledger_for(ledger, self.epsilon, self.delta, self.name)
            led.spend("zeros", self.epsilon, 0.0)  # the board's budget, spent (the answers do not look at X)
            return Release(method=self.name, privacy=self.privacy, params={"epsilon": self.epsilon, "delta": 0.0},
                           ledger=led.to_dict(), timings={"total": 0.0}, answers=np.zeros(len(wl)))
''')


@pytest.mark.slow
@pytest.mark.notebook
def test_a_quick_board_of_its_own_on_the_example_and_board_add_against_it(tmp_path, monkeypatch, capsys):
    from dpkit.batch.cli import main
    from dpkit.board.records import read_records

    out = tmp_path / "board-diabetes"
    assert main(["board", str(EXAMPLE), "--quick", "--out", str(out), "--scheduler", "sync"]) == 0
    text = capsys.readouterr().out
    assert "no comparison with the thesis" in text and "better than the thesis" not in text
    records = read_records(out / "records.parquet")
    assert set(records["dataset"]) == {"diabetes"} and set(records["sigma"]) == {2.0}
    assert sorted(set(records["rep"])) == [0, 1, 2, 3]
    prov = json.loads((out / "provenance.json").read_text())
    data = prov["data"]["diabetes"]
    assert data["argument"] == str(EXAMPLE)
    assert data["fingerprint"]["sha256"] == data_fingerprint(_load_quiet(str(EXAMPLE)))["sha256"]
    assert data["fingerprint"]["spec_sha256"] == data["provenance"]["spec"]["sha256"]
    assert prov["runs"] and "library_fingerprint" in prov  # the published board's provenance, plus "data"
    assembled = out / "assembled"
    headline = (assembled / "leaderboard_headline.md").read_text()
    assert "no comparison with the thesis" in headline and "0/0" not in headline
    caption = (assembled / "leaderboard_table_3_2_abs.caption.txt").read_text()
    assert "the thesis printed no number" in caption and "against the thesis's Table" not in caption
    board = pd.read_csv(assembled / "leaderboard.csv", keep_default_na=False)
    assert set(board["verdict_abs"]) == {"n/a"} and set(board["paper_abs"].astype(str)) <= {"", "nan"}
    # no verdict, but the winner's interval all the same (level 1 − γ, as the class-supremum ranking's)
    est, low, high = (board[c].astype(float) for c in ("abs_est", "abs_ci_low", "abs_ci_high"))
    assert ((low <= est) & (est < high)).all() and (board["abs_level"].astype(float) == 0.05).all()
    # a second run reuses the finished runs; another data set's spec into the same folder is refused
    assert main(["board", str(EXAMPLE), "--quick", "--out", str(out), "--scheduler", "sync"]) == 0
    changed = tmp_path / "diabetes.yaml"
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["bounds"]["age"] = [0, 120]
    changed.write_text(yaml.safe_dump(doc))
    capsys.readouterr()
    assert main(["board", str(changed), "--quick", "--out", str(out), "--scheduler", "sync"]) == 2
    assert "holds a board of other data" in capsys.readouterr().err
    # an entrant ranked against the board of its own: its data set found again through the provenance
    (tmp_path / "scratch_own_entrant.py").write_text(ENTRANT)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["board-add", "scratch_own_entrant:Zero", "--board", str(out / "records.parquet"),
                     "--out", str(tmp_path / "added"), "--quick", "--no-gate"]) == 0
        assert "diabetes σ=2 ε-DP: rank " in capsys.readouterr().out
        # the board's data changed since: refused, naming the fingerprints
        prov["data"]["diabetes"]["argument"] = str(changed)
        (out / "provenance.json").write_text(json.dumps(prov))
        assert main(["board-add", "scratch_own_entrant:Zero", "--board", str(out / "records.parquet"),
                     "--out", str(tmp_path / "added2"), "--quick", "--no-gate"]) == 2
        assert "has changed since the board was made" in capsys.readouterr().err
    finally:
        sys.modules.pop("scratch_own_entrant", None)


def test_board_add_finds_a_board_of_its_own_data_through_its_provenance_whatever_calls_it(tmp_path):
    """board_add (the one path of the command, make board-add and notebook 45's ENTRANT) loads the data sets of a board
    of its own by what its provenance names, checked against the fingerprint the board was made with; before, only
    the command line did, and the library (notebook 45's path) looked the data set up by name and refused it."""
    from dpkit.board.add import EntrantRefusedError, prepare_board_add
    from dpkit.board.records import records_frame, write_records
    from dpkit.core.published import PROVENANCE_NAME

    ds = _load_quiet(str(EXAMPLE))
    recs = [{"sigma": 2.0, "rep": r, "method": "trig-I", "privacy": "ε-DP", "eps_spent": 1.0, "delta_spent": 0.0,
             "abs": 0.1, "rel": 0.2, "sup_abs": None, "centre_abs": None, "time_s": 0.0, "error_bound": 0.0,
             "support_size": 0, "seeds": None} for r in range(4)]
    board = tmp_path / "board" / "records.parquet"
    write_records(records_frame(recs, dataset=ds.name, run_seed=0, n_queries=300, J=10, epsilon=1.0, delta=1e-3), board)
    prov = {"data": {ds.name: {"argument": str(EXAMPLE), "fingerprint": data_fingerprint(ds)}}}
    (board.parent / PROVENANCE_NAME).write_text(json.dumps(prov))
    prep = prepare_board_add("direct-gaussian", board=board, out=tmp_path / "out", quick=True, gate=False)
    assert list(prep.data) == [ds.name] and np.array_equal(prep.data[ds.name], ds.X)
    prov["data"][ds.name]["fingerprint"] = {"sha256": "0" * 64}  # the data changed since the board was made
    (board.parent / PROVENANCE_NAME).write_text(json.dumps(prov))
    with pytest.raises(EntrantRefusedError, match=f"data set {ds.name} of board .* has changed since the board was made"):
        prepare_board_add("direct-gaussian", board=board, out=tmp_path / "out", quick=True, gate=False)
    assert not (tmp_path / "out").exists()


def test_the_widgets_data_set_choice_writes_a_spec_files_path_into_commands(tmp_path, toy):
    from dpkit.outputs.widgets import as_datasets, as_list, notebook_parameters

    spec = _spec(tmp_path, name="chosen", path="toy.csv", columns=["a", "b"], bounds={"a": [0, 10], "b": [-5, 5]})
    data, _ = load_available([str(spec), "CRM"][:1])
    assert list(data) == ["chosen"]  # the dropdown shows the name ...
    params = notebook_parameters({"dataset": "chosen"}, {"dataset": ("DATASETS", as_datasets)})
    assert params == {"DATASETS": [str(spec.resolve())]}  # ... and a command or manifest loads it by its spec file
    assert as_datasets("WDBC") == ["WDBC"] and as_list("chosen") == ["chosen"]


def test_a_board_without_printed_numbers_makes_no_thesis_comparison():
    from dpkit.board.report import headline, lost_cells_text
    from dpkit.outputs.figures.leaderboard import LEADERBOARD_CAPTION, leaderboard_caption

    board = [{"dataset": "diabetes", "sigma": s, "privacy": p, "verdict_abs": "n/a", "verdict_rel": "n/a",
              "paper_abs": float("nan"), "paper_rel": float("nan"), "budget": 0.05}
             for s in (2.0, 4.0) for p in ("ε-DP", "(ε,δ)-DP")]
    text = headline(board).text()
    assert text.startswith("no comparison with the thesis") and "0/0" not in text
    assert lost_cells_text(board, []) == "The thesis printed no number for these data sets: no cell is compared with it."
    caption = leaderboard_caption(board, kind="abs", privacy="ε-DP", table="3.2", protocol="4 repetitions")
    assert "against the thesis's Table" not in caption and "the thesis printed no number" in caption
    # a board with printed numbers keeps the published wording
    printed = [dict(r, paper_abs=0.05, verdict_abs="better") for r in board]
    assert headline(printed).text().startswith("better than the thesis in 2/2 (Table 3.2)")
    assert leaderboard_caption(printed, kind="abs", privacy="ε-DP", table="3.2", protocol="p") == LEADERBOARD_CAPTION.format(
        kind="absolute", privacy="ε-DP", table="3.2", protocol="p")


def test_the_thesis_remarks_judge_the_thesis_data_sets_only():
    import dpkit.claims.private_pca as pp

    # σ of Alg 7 is below 1 on a large data set: the remark (σ > 1 on every data set but CSN) is about the thesis's
    # data sets, so your own is listed under its name and not judged
    df = pd.DataFrame(np.random.default_rng(0).uniform(size=(100000, 2)), columns=["a", "b"])
    register_dataset("big-own", df, bounds=[0, 1])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            res = pp.sigma_vs_norm(datasets=["WDBC", "big-own"], k=2, n_iter=10, epsilon=1.0, delta=1e-3)
    finally:
        unregister_dataset("big-own")
    assert [r.dataset for r in res.rows] == ["WDBC", "big-own"] and res.rows[1].sigma_alg7 < 1
    assert res.checks[0].verdict == "PASS" and res.checks[0].statistic == res.rows[0].sigma_alg7


def test_the_tables_caption_names_the_thesis_lines_only_where_there_are_printed_numbers():
    from dpkit.outputs.figures.tables import TABLES_CAPTION, tables_caption

    own = [{"dataset": "diabetes", "paper_abs": float("nan"), "paper_rel": float("nan")}]
    assert "the thesis's Tables 3.2/3.3" not in tables_caption(own, kind="abs")
    assert "the thesis printed no number for these data sets" in tables_caption(own, kind="abs")
    thesis = own + [{"dataset": "WDBC", "paper_abs": 0.05, "paper_rel": 0.1}]
    assert tables_caption(thesis, kind="rel") == TABLES_CAPTION.format(kind="relative")


def test_parquet_and_excel_files(tmp_path, toy):
    toy.to_parquet(tmp_path / "toy.parquet")
    ds = _load_quiet(str(_spec(tmp_path, path="toy.parquet", columns=["a", "b"], bounds={"a": [0, 10], "b": [-5, 5]})))
    np.testing.assert_array_equal(ds.X[:, 0], toy["a"].to_numpy() / 5.0 - 1.0)
    try:
        import openpyxl  # noqa: F401
    except ImportError:  # the reader's package is missing: an error naming the file, the format and the package
        import zipfile

        with zipfile.ZipFile(tmp_path / "toy.xlsx", "w") as zf:  # pandas tells an xlsx by this member
            zf.writestr("xl/workbook.xml", "<workbook/>")
        with pytest.raises(MalformedDataError, match=r"toy.xlsx as excel needs a package that is not installed"):
            load(str(_spec(tmp_path, path="toy.xlsx", bounds=[0, 10])))
    else:
        toy.to_excel(tmp_path / "toy.xlsx", index=False, sheet_name="data")
        ds = _load_quiet(str(_spec(tmp_path, path="toy.xlsx", read={"sheet": "data"}, columns=["a", "b"],
                                   bounds={"a": [0, 10], "b": [-5, 5]})))
        assert ds.shape == (50, 2)


def test_an_encoded_column_with_missing_values_keeps_its_levels(tmp_path):
    # pandas reads a column of integer codes with a gap as floats (2.0): still the level 2
    _csv(tmp_path, pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "sex": [1, 2, None, 2]}))
    ds = _load_quiet(str(_spec(tmp_path, path="toy.csv", bounds={"a": [0, 4]}, encodings={"sex": {"ordinal": [1, 2]}},
                               missing={"fill": {"sex": 1}})))
    assert ds.X[:, 1].tolist() == [-1.0, 1.0, -1.0, 1.0]


def test_a_url_is_downloaded_with_the_projects_download_code_and_checked(tmp_path, toy, monkeypatch):
    import hashlib

    import dpkit.data.download as ddl

    body = (tmp_path / "toy.csv").read_bytes()
    good = hashlib.sha256(body).hexdigest()
    calls = []

    def fake_download(url, dest, *, progress=False):
        calls.append(url)
        Path(dest).write_bytes(body if "good" in url else body + b"1,2,red\n")

    monkeypatch.setattr(ddl, "download_url", fake_download)
    monkeypatch.setenv("DPKIT_DATA_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    monkeypatch.delenv("DPKIT_OFFLINE", raising=False)
    keys = dict(sha256=good, columns=["a", "b"], bounds={"a": [0, 10], "b": [-5, 5]})
    spec = _spec(tmp_path, name="remote", url="https://example.org/good/toy.csv", **keys)
    ds = _load_quiet(str(spec))
    assert ds.provenance["files"][0]["verified"] and calls == ["https://example.org/good/toy.csv"]
    assert (tmp_path / "cache" / "user" / "remote" / "toy.csv").is_file()
    _load_quiet(str(spec))  # the second load uses the checked copy
    assert len(calls) == 1
    bad = _spec(tmp_path, name="tampered", url="https://example.org/bad/toy.csv", **keys)
    with pytest.raises(ChecksumError, match="the download of https://example.org/bad/toy.csv has sha256"):
        load(str(bad))
    assert not list((tmp_path / "cache" / "user" / "tampered").iterdir())  # nothing kept
    monkeypatch.setenv("DPKIT_OFFLINE", "1")
    with pytest.raises(DataNotFoundError, match="downloads are off"):
        load(str(_spec(tmp_path, name="offline", url="https://example.org/good/toy.csv", **keys)))


def test_the_generated_manifest_has_the_published_boards_protocol_and_aim_on_request(tmp_path):
    from dpkit.batch.manifest import expand_manifest, load_manifest
    from dpkit.batch.own_board import prepare_own_board

    published = load_manifest(ROOT / "notebooks" / "manifests" / "leaderboard.yaml")
    board = prepare_own_board(str(EXAMPLE), out=tmp_path / "b", aim=True)
    runs = expand_manifest(load_manifest(board.manifest))  # checked against notebook 45's parameters cell
    assert [r.notebook.name for r in runs] == ["45_leaderboard.ipynb"] * 2
    for r in runs:
        assert r.parameters["DATASETS"] == [str(EXAMPLE)]
        assert r.parameters["SIGMAS"] == published["runs"][0]["grid"]["SIGMAS"][0]
        assert {k: r.parameters[k] for k in published["defaults"]} == published["defaults"]
    assert "METHODS" not in runs[0].parameters and runs[1].parameters["METHODS"] == ["aim"]
    data = json.loads((tmp_path / "b" / "data.json").read_text())
    assert data["fingerprint"]["dataset"] == "diabetes" and data["load_warnings"] == []
    assert len(expand_manifest(load_manifest(prepare_own_board(str(EXAMPLE), out=tmp_path / "c").manifest))) == 1


def test_a_manifest_names_a_spec_file_relative_to_itself(tmp_path):
    from dpkit.batch.manifest import expand_manifest, load_manifest

    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "mine.yaml").write_text(EXAMPLE.read_text())
    manifest = folder / "m.yaml"
    manifest.write_text(yaml.safe_dump({"name": "m", "runs": [{
        "notebook": str(ROOT / "notebooks" / "45_leaderboard.ipynb"), "parameters": {"QUICK": True},
        "grid": {"DATASETS": [["mine.yaml", "WDBC"]]}}]}))
    (run,) = expand_manifest(load_manifest(manifest))
    # the notebook runs in notebooks/, so the runner passes each spec file's absolute path; registry codes stay
    assert run.parameters["DATASETS"] == [str(folder / "mine.yaml"), "WDBC"]


@pytest.mark.slow
@pytest.mark.notebook
def test_a_quick_tables_notebook_on_a_spec_file_named_relative_to_the_current_folder(tmp_path, monkeypatch):
    from dpkit.batch.cli import main

    (tmp_path / "mine.yaml").write_text(EXAMPLE.read_text())
    monkeypatch.chdir(tmp_path)  # the notebook itself runs in notebooks/: the runner passes the absolute path
    out = tmp_path / "run"
    assert main(["notebook", str(ROOT / "notebooks" / "20_tables.ipynb"), "--output", str(out), "-p", "QUICK", "true",
                 "-p", "DATASETS", '["mine.yaml"]', "-p", "INTERACTIVE", "false"]) == 0
    rows = pd.read_csv(out / "tables_rows.csv")
    assert set(rows["dataset"]) == {"diabetes"} and set(rows["sigma"]) == {2.0, 4.0}
    assert json.loads((out / "run.json").read_text())["parameters"]["DATASETS"] == [str(tmp_path / "mine.yaml")]
    caption = (out / "tables_abs_vs_sigma.caption.txt").read_text()
    assert "the thesis printed no number for these data sets" in caption
    # QUICK's 1000 queries, not the thesis's 10⁴; no "(nan)" in the thesis column of the comparison table
    assert "ε = 1, δ = 10⁻³, 10³ queries per repetition" in caption and "10⁴" not in caption
    comparison = pd.read_csv(out / "tables_3_2_3_3.csv", keep_default_na=False)
    assert not comparison.astype(str).apply(lambda c: c.str.contains("nan")).any().any()
    assert comparison["σ=2"].str.fullmatch(r"\d\.\d{3} ± \d\.\d{3}").all()


def test_the_summary_of_a_board_without_printed_numbers_has_no_thesis_column():
    from dpkit.board.report import summary_markdown

    row = {"dataset": "diabetes", "sigma": 2.0, "privacy": "ε-DP", "method": "m", "method_rel": "m", "abs_est": 0.05,
           "abs_ci_low": 0.04, "abs_ci_high": 0.06, "rel_est": 0.1, "rel_ci_low": 0.08, "rel_ci_high": 0.12,
           "paper_abs": float("nan"), "paper_rel": float("nan"), "verdict_abs": "n/a", "verdict_rel": "n/a",
           "selection": "split", "judged_reps": 15, "budget": 0.05}
    text = summary_markdown([row])
    assert "`m` 0.050 [0.040, 0.060] |" in text and "n/a" not in text and "no verdict" in text
    printed = dict(row, paper_abs=0.07, verdict_abs="better", paper_rel=0.2, verdict_rel="better")
    assert "`m` 0.050 [0.040, 0.060] (0.070) better" in summary_markdown([printed])
