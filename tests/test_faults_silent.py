"""Fault catalogue of the silent and unclear faults, one section per class.

1. Runner parameters: every runner, sweep, table and claims entry point the notebooks call, and the batch
   manifests, refuse a bad seed, list of widths, count or list of data set names before any work, naming the
   parameter and its allowed range (the shared validators of :mod:`dpkit.core.validation`).
2. Row counts: a data file with fewer rows than the registry documents is refused on every loader path, also with
   ``verify=False``, naming the file and both counts.
3. QUICK: a QUICK run keeps a part of the data sets / widths / sweep values the user gave, or warns naming what it
   replaced (:func:`dpkit.core.quick.quick_values`); no notebook or claims function overrides them otherwise.
4. Released databases: the class supremum and the evaluators refuse weights that are not finite, negative, all zero
   or not summing to 1, however the :class:`~dpkit.queries.synthetic.WeightedDatabase` was made.
5. The method registry: a function taking a method refuses a name, a class or anything else, naming the argument;
   one taking a name refuses an unknown suite or privacy class and a bare string.
6. Dask scheduler addresses: a closed local port, a local server speaking HTTP and one sending garbage frames fail
   within 30 s in one line naming the address (``--scheduler``, ``DPKIT_SCHEDULER``, the CLI).

Each test fails on the code before these checks existed (the cases already refused then are kept as the class's
regression cases).
"""
from __future__ import annotations

import ast
import copy
import inspect
import json
import math
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from batch_notebooks import make_manifest, make_notebook
from test_data_loaders import SHARED, needs_shared

from dpkit import batch
from dpkit.core.exceptions import QuickReplacementWarning
from dpkit.core.quick import quick_values
from dpkit.data import MalformedDataError, load
from dpkit.data.registry import get_spec, registry_path
from dpkit.experiments import cell_seed, run_cell, run_cells, run_table_cell, shared_seed, sweep
from dpkit.methods import registry
from dpkit.methods.registry import get
from dpkit.queries.evaluate import answer_synthetic, answer_weighted
from dpkit.queries.supremum import ErrorFunction, certify_supremum, class_supremum
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- 1. runner parameters
@pytest.fixture(scope="module")
def X() -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, size=(40, 2))


def _cheap() -> dict:
    return {"subsample": get("subsample")}


BAD_SEEDS = [(1.5, TypeError), (3.0, TypeError), (True, TypeError), (-1, ValueError), (None, TypeError),
             ("3", TypeError), (np.float64(2.0), TypeError)]
BAD_SIGMAS = [(2.0, TypeError), ("2", TypeError), ([], ValueError), ([2.0, 2.0], ValueError), ([0.0], ValueError),
              ([math.inf], ValueError), ([math.nan], ValueError), ([2.0, "4"], TypeError), ({2.0}, TypeError)]
BAD_COUNTS = [(0, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError), (None, TypeError)]
BAD_NAMES = [("WDBC", TypeError), ([], ValueError), (["WDBC", "WDBC"], ValueError), ([3], TypeError),
             ([""], TypeError)]


def _run_cells(X, **kw):
    args = dict(methods=_cheap(), sigmas=[2.0], reps=1, seed=0, dataset="mock", n_queries=5, J=2, supremum=None)
    args.update(kw)
    return run_cells(X, **args)


def _refused(call, exc, name, *, allowed: str | None = None):
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    assert msg.startswith(name), msg  # the parameter is named first ...
    if allowed is not None:
        assert allowed in msg, msg  # ... with the range it must be in
    assert "\n" not in msg


@pytest.mark.parametrize("seed, exc", BAD_SEEDS, ids=repr)
def test_run_cells_refuses_a_bad_seed_by_name(X, seed, exc):
    _refused(lambda: _run_cells(X, seed=seed), exc, "seed must be an integer in [0, inf)")


@pytest.mark.parametrize("sigmas, exc", BAD_SIGMAS, ids=repr)
def test_run_cells_refuses_bad_sigmas_by_name(X, sigmas, exc):
    _refused(lambda: _run_cells(X, sigmas=sigmas), exc, "sigmas")


@pytest.mark.parametrize("param", ["reps", "n_queries", "J"])
@pytest.mark.parametrize("value, exc", BAD_COUNTS, ids=repr)
def test_run_cells_refuses_bad_counts_by_name(X, param, value, exc):
    _refused(lambda: _run_cells(X, **{param: value}), exc, param)


@pytest.mark.parametrize("dataset", [3, "", None])
def test_run_cells_refuses_a_dataset_that_is_not_a_name(X, dataset):
    _refused(lambda: _run_cells(X, dataset=dataset), TypeError, "dataset must be a non-empty string")


@pytest.mark.parametrize("param, value, exc", [("sigma", 0.0, ValueError), ("sigma", math.inf, ValueError),
                                               ("sigma", "2", TypeError), ("reps", 0, ValueError),
                                               ("n_queries", 2.5, TypeError), ("J", 0, ValueError)])
def test_run_cell_and_sweep_refuse_bad_values_by_name(X, param, value, exc):
    args = dict(sigma=2.0, reps=1, n_queries=5, J=2)
    args[param] = value
    _refused(lambda: run_cell(X, methods=_cheap(), supremum=None, **args), exc, param)
    m = get("direct-gaussian")
    _refused(lambda: sweep(X, method=m, param="epsilon", values=[1.0], **args), exc, param)


@pytest.mark.parametrize("values, exc", [(1.0, TypeError), ("0.5, 1", TypeError), ([], ValueError),
                                         ([1.0, 1.0], ValueError)], ids=repr)
def test_sweep_refuses_values_that_are_not_a_list_of_distinct_values(X, values, exc):
    _refused(lambda: sweep(X, method=get("direct-gaussian"), param="epsilon", values=values, sigma=2.0, reps=1,
                           n_queries=5, J=2), exc, "values")


@pytest.mark.parametrize("seed, exc", BAD_SEEDS, ids=repr)
def test_table_cells_and_cell_seeds_refuse_a_bad_seed_by_name(X, seed, exc):
    _refused(lambda: run_table_cell(X, dataset="mock", sigma=2.0, methods=_cheap(), reps=1, seed=seed,
                                    n_queries=5, J=2), exc, "seed must be an integer in [0, inf)")
    _refused(lambda: cell_seed(seed, "mock", 2.0), exc, "seed")
    _refused(lambda: shared_seed(seed, "mock"), exc, "seed")


def test_valid_parameters_give_the_same_numbers_as_before(X):
    """The validators return what they were given: np.int64 seeds, tuples of widths and ints as floats run as before."""
    a = _run_cells(X, seed=np.int64(3), sigmas=(2, 4.0))
    b = _run_cells(X, seed=3, sigmas=[2.0, 4.0])
    assert [(r.abs, r.rel) for r in a] == [(r.abs, r.rel) for r in b]
    assert cell_seed(np.int64(3), "mock", 2.0).entropy == cell_seed(3, "mock", 2.0).entropy


@pytest.mark.parametrize("param, value, exc", [("seed", 1.5, TypeError), ("seed", True, TypeError),
                                               ("reps", 2.5, TypeError), ("n_queries", 0, ValueError)], ids=repr)
def test_the_widget_panels_refuse_a_bad_seed_or_count_instead_of_rounding_it(X, param, value, exc):
    from dpkit.outputs.panels import explore, explore_sweep

    cell = {**dict(reps=1, n_queries=5, J=2, seed=0), param: value}
    _refused(lambda: explore(X=X, dataset="mock", epsilon=1.0, delta=1e-3, sigma=2.0, kappa=7.0, k=1, C=10, R=2,
                             mechanisms=("I",), **cell), exc, param)
    _refused(lambda: explore_sweep(X=X, dataset="mock", method=get("direct-gaussian"), param="epsilon", values=[1.0],
                                   sigma=2.0, xlabel="ε", **cell), exc, param)


def _claims_calls() -> dict:
    """Every claims ``notebook_checks`` (the function a theorem notebook calls with its parameters), by module: found
    in the package, so a topic added later is covered without being listed here."""
    import importlib
    import pkgutil

    import dpkit.claims

    found = {info.name: importlib.import_module(f"dpkit.claims.{info.name}")
             for info in pkgutil.iter_modules(dpkit.claims.__path__)}
    calls = {name: m.notebook_checks for name, m in found.items() if hasattr(m, "notebook_checks")}
    assert len(calls) >= 10, f"only {sorted(calls)} define notebook_checks"
    return calls


@pytest.mark.parametrize("module", sorted(_claims_calls()))
@pytest.mark.parametrize("seed, exc", [(1.5, TypeError), (True, TypeError), (-1, ValueError), ("0", TypeError)],
                         ids=repr)
def test_every_claims_notebook_checks_refuses_a_bad_seed_first(module, seed, exc):
    """The seed is checked before anything else (the other arguments are not even looked at)."""
    f = _claims_calls()[module]
    dummies = {n: None for n, p in inspect.signature(f).parameters.items()
               if p.kind is p.KEYWORD_ONLY and p.default is p.empty}
    _refused(lambda: f(seed, True, 1e-3, **dummies), exc, "seed must be an integer in [0, inf)")


@pytest.mark.parametrize("module, param, value, exc", [
    ("exponential_net", "rr_reps", 0, ValueError), ("reconstruction", "trials", 1.5, TypeError),
    ("reconstruction", "dp_trials", 0, ValueError), ("private_pca", "rate_reps", True, TypeError)], ids=repr)
def test_claims_notebook_checks_refuse_bad_repetition_counts_by_name(module, param, value, exc):
    f = _claims_calls()[module]
    args = {n: None for n, p in inspect.signature(f).parameters.items()
            if p.kind is p.KEYWORD_ONLY and p.default is p.empty}
    args.update({"trials": 1, "dp_trials": 1} if module == "reconstruction" else {})
    args[param] = value
    if module == "private_pca":  # checked before rate_reps
        args["datasets"] = ["WDBC"]
    _refused(lambda: f(0, True, 1e-3, **args), exc, param)


@pytest.mark.parametrize("param, value, exc", [("sigma", 0.0, ValueError), ("reps", 1.5, TypeError),
                                               ("n_queries", 0, ValueError), ("J", None, TypeError)], ids=repr)
def test_trig_runs_refuse_bad_values_by_name(param, value, exc):
    from dpkit.claims import trig_rates

    args = {**dict(reps=1, n_queries=2, J=2, epsilon=1.0, sigma=2.0, rng=0), param: value}
    _refused(lambda: trig_rates.error_terms(n=10, **args), exc, param)
    _refused(lambda: trig_rates.rate_runs(ns_d1=[10], ns_d2=[10], delta=1e-3, **args), exc, param)


BASELINE_ARGS = dict(datasets=["WDBC"], sigmas=[4.0], epsilon=1.0, delta=1e-3, reps=1, n_queries=5, J=2, C=10, R=2,
                     m_rows=5, mwem_t=1, n_class=2, pca_k=1, pca_reps=1, toy_levels=2, toy_m=2, methods=[])


@pytest.mark.parametrize("param, value, exc", [
    ("datasets", "WDBC", TypeError), ("datasets", [], ValueError), ("sigmas", 4.0, TypeError),
    ("sigmas", [4.0, 4.0], ValueError), ("reps", 0, ValueError), ("n_queries", 1.5, TypeError),
    ("methods", "trig-I", TypeError)], ids=repr)
def test_baselines_notebook_checks_refuses_bad_lists_and_counts_by_name(param, value, exc):
    from dpkit.claims import baselines

    args = {**BASELINE_ARGS, param: value}
    _refused(lambda: baselines.notebook_checks(0, False, 1e-3, **args), exc, param)


def test_trig_rates_and_private_pca_and_smoothness_refuse_bad_values_by_name():
    from dpkit.claims import private_pca, smoothness, trig_rates

    _refused(lambda: trig_rates.notebook_checks(0, True, 1e-3, epsilon=1.0, delta=1e-3, sigma=-2.0, ns_d1=[10],
                                                ns_d2=[10], reps=1, n_queries=1, J=1, privacy_n=10),
             ValueError, "sigma")
    _refused(lambda: trig_rates.notebook_checks(0, True, 1e-3, epsilon=1.0, delta=1e-3, sigma=2.0, ns_d1=[10],
                                                ns_d2=[10], reps=1.5, n_queries=1, J=1, privacy_n=10),
             TypeError, "reps")
    _refused(lambda: private_pca.notebook_checks(0, True, 1e-3, epsilon=1.0, delta=1e-3, k=1, n_iter=1,
                                                 lemma_sizes=[[5, 2]], n_mu_draws=1, audit_samples=1, rate_ns=[10],
                                                 rate_d=2, rate_reps=1, datasets="WDBC"), TypeError, "datasets")
    for f in (smoothness.proof_chain, smoothness.critical_orders):
        _refused(lambda: f(sigmas=2.0), TypeError, "sigmas")
        _refused(lambda: f(sigmas=[2.0, -1.0]), ValueError, "sigmas[1]")


RANGE_PARAMETERS = """SEED: int = 0
REPS: int = 2
N_QUERIES: int = 10
J: int = 2
REP_WORKERS: int = 1
SIGMA: float = 2.0
SIGMAS: list = [2.0]
DATASET: str = "mock"
DATASETS: list = ["mock"]
OUTPUT_DIR: str = "out"
"""


@pytest.mark.parametrize("param, value", [("SEED", -1), ("REPS", 0), ("N_QUERIES", 0), ("J", -2), ("REP_WORKERS", 0),
                                          ("SIGMA", 0.0), ("SIGMA", -1), ("SIGMAS", []), ("SIGMAS", [2.0, 2.0]),
                                          ("SIGMAS", [0.0]), ("DATASET", ""), ("DATASETS", []),
                                          ("DATASETS", ["mock", "mock"]), ("DATASETS", [3])], ids=repr)
def test_manifest_and_cli_refuse_out_of_range_runner_parameters_before_anything_runs(tmp_path, capsys, param, value):
    make_notebook(tmp_path, "tiny.ipynb", parameters=RANGE_PARAMETERS, body="pass")
    m = make_manifest(tmp_path, runs=[{"notebook": "tiny.ipynb", "parameters": {param: value}}])
    with pytest.raises(batch.manifest.NotebookParameterError) as info:
        batch.expand_manifest(batch.load_manifest(m))
    msg = str(info.value)
    assert f"runs[0].parameters.{param}" in msg and f"{param}={value!r}" in msg and "tiny.ipynb" in msg, msg
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and param in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
    # the same value given with -p to one notebook
    assert batch.main(["notebook", str(tmp_path / "tiny.ipynb"), "--output", str(tmp_path / "o"), "-p", param,
                       json.dumps(value)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and param in err


# --------------------------------------------------------------------------- 2. row counts
ROW_FILES = [(code, f.role, f.name, f.rows) for code in ("CRM", "CSN", "CTG", "PKS", "WDBC")
             for f in get_spec(code).files if f.rows is not None]


@needs_shared
@pytest.mark.parametrize("code, role, name, rows", ROW_FILES, ids=[f"{c}-{r}" for c, r, _, _ in ROW_FILES])
def test_a_file_with_fewer_rows_than_documented_is_refused_with_verify_false(tmp_path, monkeypatch, code, role,
                                                                               name, rows):
    """Every loader with a documented row count: the registry documents one row more than the (real) file has."""
    if not (SHARED / code / name).exists():
        pytest.skip(f"the shared copy of {code}/{name} is absent")
    doc = yaml.safe_load(registry_path().read_text())
    doc["datasets"][code]["files"][role]["rows"] = rows + 1
    reg = tmp_path / "registry.yaml"
    reg.write_text(yaml.safe_dump(doc, sort_keys=False))
    monkeypatch.setenv("DPKIT_REGISTRY", str(reg))
    folder = tmp_path / code
    folder.mkdir()
    for f in get_spec(code).files:  # the data set's files, so that this role's file is the one read
        src = SHARED / code / f.name
        if src.exists():
            (folder / Path(f.name).name).symlink_to(src)
    with pytest.raises(MalformedDataError) as info:
        load(code, path=folder / Path(name).name, verify=False)
    msg = str(info.value)
    assert f"has {rows} data rows, the registry expects {rows + 1}" in msg and Path(name).name in msg, msg


@needs_shared
def test_a_truncated_wdbc_file_is_refused_with_verify_false(tmp_path):
    src = (SHARED / "WDBC" / "wdbc.data").read_text().splitlines(keepends=True)
    p = tmp_path / "wdbc.data"
    p.write_text("".join(src[:300]))
    with pytest.raises(MalformedDataError) as info:
        load("WDBC", path=p, verify=False)
    assert str(p) in str(info.value) and "has 300 data rows, the registry expects 569" in str(info.value)


# --------------------------------------------------------------------------- 3. QUICK
def test_quick_values_keeps_a_part_of_the_users_values_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert quick_values(["CRM", "WDBC", "CTG"], ["WDBC"], name="DATASETS") == ["WDBC"]
        assert quick_values([4.0, 2.0, 1.0], [1.0, 2.0, 3.0], name="SIGMAS") == [2.0, 1.0]


def test_quick_values_warns_naming_what_it_replaces():
    with pytest.warns(QuickReplacementWarning) as rec:
        out = quick_values(["CRM"], ["WDBC"], name="DATASETS", what="data sets")
    assert out == ["WDBC"]
    msg = str(rec[0].message)
    assert "DATASETS=['CRM']" in msg and "['WDBC']" in msg and "QUICK" in msg
    with pytest.raises(TypeError, match="DATASETS must be a non-empty list"):
        quick_values("CRM", ["WDBC"], name="DATASETS")


#: list parameters a user gives that QUICK must not silently replace (notebooks: upper case; claims: lower case)
USER_LISTS = {"DATASETS", "DATASET", "SIGMAS", "SIGMA", "VALUES", "METHODS", "MECHANISMS", "datasets", "sigmas",
              "methods"}


def _quick_overrides(tree: ast.AST, flag: str) -> list[str]:
    """Assignments to a user's list parameter inside ``if <flag>:`` that neither call quick_values nor slice the
    parameter itself (a part of the user's list)."""
    bad = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == flag):
            continue
        for stmt in (s for b in node.body for s in ast.walk(b) if isinstance(s, ast.Assign)):
            targets = [t for tgt in stmt.targets for t in (tgt.elts if isinstance(tgt, ast.Tuple) else [tgt])]
            values = stmt.value.elts if isinstance(stmt.value, ast.Tuple) and len(targets) > 1 else [stmt.value]
            for t, v in zip(targets, values):
                if not (isinstance(t, ast.Name) and t.id in USER_LISTS):
                    continue
                ok = (isinstance(v, ast.Call) and getattr(v.func, "id", getattr(v.func, "attr", "")) == "quick_values") or (
                    isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id == t.id
                    and isinstance(v.slice, ast.Slice))
                if not ok:
                    bad.append(f"line {stmt.lineno}: {t.id} = {ast.unparse(v)}")
    return bad


@pytest.mark.parametrize("nb", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_no_notebook_replaces_the_users_lists_silently_in_quick_mode(nb):
    cells = json.loads(nb.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
    assert _quick_overrides(ast.parse(code), "QUICK") == []


@pytest.mark.parametrize("module", sorted((ROOT / "dpkit" / "claims").glob("*.py")), ids=lambda p: p.name)
def test_no_claims_function_replaces_the_users_lists_silently_in_quick_mode(module):
    assert _quick_overrides(ast.parse(module.read_text()), "quick") == []


# --------------------------------------------------------------------------- 4. released databases
def _db() -> WeightedDatabase:
    pts = np.array([[0.1, 0.2], [-0.3, 0.4], [0.5, -0.5], [0.0, 0.0]])
    return WeightedDatabase(points=pts, weights=np.full(4, 0.25), m=4)


BAD_WEIGHTS = {"nan": [np.nan, 0.25, 0.25, 0.5], "inf": [np.inf, 0.0, 0.0, 0.0], "negative": [-0.25, 0.5, 0.5, 0.25],
               "all-zero": [0.0, 0.0, 0.0, 0.0], "sum-not-1": [0.1, 0.1, 0.1, 0.1]}


def _setattr(w):
    db = _db()
    object.__setattr__(db, "weights", np.asarray(w, dtype=float))
    return db


def _new(w):
    db = WeightedDatabase.__new__(WeightedDatabase)
    for k, v in dict(points=_db().points, weights=np.asarray(w, dtype=float), m=4, counts=None).items():
        object.__setattr__(db, k, v)
    return db


def _write_flag(w):
    db = _db()
    db.weights.setflags(write=True)
    db.weights[:] = w
    return db


def _copied(w):
    return copy.deepcopy(_setattr(w))


CONSTRUCTIONS = {"setattr": _setattr, "new": _new, "write-flag": _write_flag, "deepcopy": _copied}
EXPECT = {"nan": "must be finite", "inf": "must be finite", "negative": "must be non-negative",
          "all-zero": "all zero", "sum-not-1": "must sum to 1"}


@pytest.mark.parametrize("how", sorted(CONSTRUCTIONS))
@pytest.mark.parametrize("kind", sorted(BAD_WEIGHTS))
def test_the_class_supremum_refuses_bad_weights_however_the_database_was_made(how, kind):
    X = np.random.default_rng(1).uniform(-1, 1, (30, 2))
    db = CONSTRUCTIONS[how](BAD_WEIGHTS[kind])
    for call in (lambda: class_supremum(X, db, 1.0, rng=0, n_data_starts=2, n_synthetic_starts=2),
                 lambda: certify_supremum(X, db, 1.0, max_boxes=10),
                 lambda: ErrorFunction(X, db, 1.0)):
        with pytest.raises(ValueError, match=EXPECT[kind]) as info:
            call()
        assert "weights" in str(info.value)


@pytest.mark.parametrize("kind", sorted(BAD_WEIGHTS))
def test_a_release_whose_synthetic_database_has_bad_weights_is_refused_by_the_supremum(kind):
    from types import SimpleNamespace

    X = np.random.default_rng(1).uniform(-1, 1, (30, 2))
    rel = SimpleNamespace(synthetic=_setattr(BAD_WEIGHTS[kind]), method="broken")
    with pytest.raises(ValueError, match=EXPECT[kind]):
        class_supremum(X, rel, 1.0, rng=0, n_data_starts=2, n_synthetic_starts=2)


def test_the_evaluators_refuse_all_zero_and_bad_weights():
    wl = GaussianKernelWorkload.generate(3, 2, J=2, sigma=1.0, rng=0)
    P = _db().points
    with pytest.raises(ValueError, match="weights are all zero"):
        answer_weighted(wl, P, np.zeros(4))
    for kind, w in BAD_WEIGHTS.items():
        with pytest.raises(ValueError, match="synthetic_weights"):
            answer_synthetic(wl, P, np.asarray(w))


def test_record_release_refuses_a_synthetic_database_with_bad_weights(X):
    from dpkit.experiments.records import record_release, repetitions
    from dpkit.queries.release import Release

    rep = next(repetitions(X, sigma=1.0, names=["broken"], reps=1, n_queries=4, J=2, rng=0))
    syn = _new([0.0, 0.0, 0.0, 0.0])
    rel = Release(method="broken", privacy="ε-DP", params={}, ledger={}, timings={}, synthetic=syn)
    with pytest.raises(ValueError, match="broken's release.synthetic.weights are all zero"):
        record_release("broken", rel, 0.0, rep=rep, sigma=1.0, X=X)


@pytest.mark.parametrize("kind", ["nan", "all-zero", "negative"])
def test_the_gate_pilots_release_probe_refuses_a_synthetic_database_with_bad_weights(kind):
    """An entrant's release is a consumer too: its mean and mass near the differing row are not computed from NaNs."""
    from types import SimpleNamespace

    from dpkit.evaluation.gate import neighbour_pairs, probes

    pair = neighbour_pairs(4, 2)[0]
    method = SimpleNamespace(release=lambda X, rng=None: SimpleNamespace(
        answers=None, diagnostics=None, synthetic=_setattr(BAD_WEIGHTS[kind])))
    with pytest.raises(ValueError, match=EXPECT[kind]) as info:
        probes(method, pair)["release"](pair.d0, np.random.default_rng(0))
    assert str(info.value).startswith("release.synthetic.weights")


# --------------------------------------------------------------------------- 5. the method registry
NOT_METHODS = [("trig-I", "not the name 'trig-I'; use get('trig-I')"), ("trig-l", "use get('trig-I"),
               (type(get("trig-I")), "not the class"), (None, "got NoneType"), (3, "got int"),
               ({"epsilon": 1.0}, "got dict")]


@pytest.mark.parametrize("value, needle", NOT_METHODS, ids=repr)
def test_registry_functions_taking_a_method_name_the_argument(value, needle):
    for call in (lambda: registry.with_budget(value, epsilon=0.5), lambda: registry.configure(value, epsilon=0.5)):
        with pytest.raises(TypeError) as info:
            call()
        assert str(info.value).startswith("method must be a method instance") and needle in str(info.value)
    with pytest.raises(TypeError) as info:
        registry.describe({"mine": value})
    assert str(info.value).startswith("methods['mine'] must be a method instance")


def test_registry_functions_taking_a_name_refuse_unknown_names_and_bare_strings():
    with pytest.raises(ValueError, match=r"unknown suite 'tabels' \(did you mean 'tables'\?\)"):
        registry.names("tabels")
    with pytest.raises(ValueError, match="unknown privacy class 'DP'"):
        registry.names(privacy="DP")
    with pytest.raises(TypeError, match=r"requested must be a list of method names, not a str"):
        registry.check_names("trig-I")
    with pytest.raises(TypeError, match="methods must be a mapping"):
        registry.describe([get("trig-I")])
    assert registry.with_budget(get("trig-II"), epsilon=0.5).epsilon == 0.5  # a method still passes


# --------------------------------------------------------------------------- 6. scheduler addresses
def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class _Garbage(socketserver.BaseRequestHandler):
    def handle(self):  # a frame header no Dask peer sends: an absurd length, then silence
        self.request.sendall(b"\xff" * 64)
        time.sleep(40)


class _Http(socketserver.BaseRequestHandler):
    def handle(self):  # an HTTP server: reads a request line, answers 400, closes
        self.request.recv(65536)
        self.request.sendall(b"HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture(params=["closed", "http", "garbage"])
def bad_address(request):
    if request.param == "closed":
        yield f"tcp://127.0.0.1:{_closed_port()}"
        return
    handler = _Http if request.param == "http" else _Garbage
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def _fails_fast(call, address, what):
    t0 = time.monotonic()
    with pytest.raises(batch.manifest.BatchError) as info:
        call()
    assert time.monotonic() - t0 < 30
    msg = str(info.value)
    assert msg.startswith(f"{what} {address}: ") and "\n" not in msg, msg


def test_batch_client_fails_within_30_s_naming_the_address(bad_address):
    from dpkit.batch.scheduler import batch_client

    def call():
        with batch_client(bad_address, None):
            pass

    _fails_fast(call, bad_address, "--scheduler")


def test_repetitions_on_a_bad_dpkit_scheduler_fail_within_30_s_naming_the_variable(bad_address, monkeypatch):
    from dpkit.batch.repetitions import SCHEDULER_ENV, repetition_workers

    monkeypatch.setenv(SCHEDULER_ENV, bad_address)
    workers = repetition_workers("auto", 1)

    def call():
        with workers._client():
            pass

    _fails_fast(call, bad_address, SCHEDULER_ENV)


@pytest.mark.parametrize("kind", ["closed", "http"])
def test_the_run_command_exits_2_in_one_line_naming_the_address(tmp_path, kind):
    """In a fresh process (the old code hangs on the HTTP server: the subprocess's own timeout catches that)."""
    make_notebook(tmp_path)
    m = make_manifest(tmp_path)
    srv = None
    if kind == "closed":
        address = f"tcp://127.0.0.1:{_closed_port()}"
    else:
        srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Http)
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        address = f"127.0.0.1:{srv.server_address[1]}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "dpkit.batch", "run", str(m), "--scheduler", address], env=env,
                           capture_output=True, text=True, timeout=120)
        spent = time.monotonic() - t0
    finally:
        if srv is not None:
            srv.shutdown()
            srv.server_close()
    assert p.returncode == 2, p.stderr[-2000:]
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: --scheduler {address}: "), p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was written
    assert spent < 60  # the probe's 10 s plus an interpreter's start on a shared machine


def test_a_real_scheduler_passes_the_probe():
    from distributed import LocalCluster

    from dpkit.batch.scheduler import probe_scheduler

    with LocalCluster(n_workers=0, processes=False, protocol="tcp", dashboard_address=None) as cluster:
        assert probe_scheduler(cluster.scheduler_address)["type"] == "Scheduler"

