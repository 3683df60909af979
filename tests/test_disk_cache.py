"""The on-disk cache of embeddings and exact answers (dpkit.queries.disk_cache): reuse is bit-identical,
a corrupt or foreign file is detected (checksum / stored key), discarded loudly and recomputed."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from dpkit.queries import disk_cache
from dpkit.queries.disk_cache import CacheWarning
from dpkit.queries.exact import clear_cache, embedding_for, exact_answers
from dpkit.queries.lowrank import FitOptions
from dpkit.queries.truth_cache import clear_truth_cache, exact_truth
from dpkit.queries.workload import GaussianKernelWorkload

SMALL = FitOptions(pool_data=300, pool_cube=300, max_rank=400, max_prefix=48)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPKIT_CACHE_DIR", str(tmp_path / "cache"))
    clear_cache()
    clear_truth_cache()
    yield tmp_path / "cache"
    clear_cache()
    clear_truth_cache()


def _data(n=1200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return np.clip(np.round(rng.normal(0, 0.4, (n, d)) * 10) / 10, -1, 1)


def _flip(path):
    """Bit rot: one byte inside the first array's data (the zip CRC sees it: unreadable)."""
    raw = bytearray(path.read_bytes())
    i = raw.index(b"\x93NUMPY") + 200
    raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def _corrupt(path):
    """A well-formed file whose first array was changed after the checksum was taken (only the checksum sees it)."""
    with np.load(path) as z:
        arrays = {k: np.array(z[k]) for k in z.files}
    name = sorted(k for k in arrays if k != "__meta__")[0]
    arrays[name].reshape(-1)[0] += 1e-9
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def test_roundtrip_and_off(cache, monkeypatch):
    key = disk_cache.entry_key("t", {"a": 1})
    arrays = {"x": np.arange(5.0), "y": np.eye(2)}
    path = disk_cache.save("t", key, arrays, {"m": "v"})
    assert path is not None and path.parent == cache / "t" and not list(path.parent.glob(".*.tmp"))
    got, meta = disk_cache.load("t", key)
    assert meta == {"m": "v"} and all(np.array_equal(got[k], v) for k, v in arrays.items())
    assert disk_cache.entry_key("t", {"a": 2}) != key and disk_cache.load("t", disk_cache.entry_key("t", {"a": 2})) is None
    monkeypatch.setenv("DPKIT_CACHE_DIR", "off")
    assert disk_cache.cache_dir() is None and disk_cache.save("t", key, arrays, {}) is None
    assert disk_cache.load("t", key) is None


@pytest.mark.parametrize("damage", ["flip", "tamper", "truncate", "foreign"])
def test_bad_file_is_discarded_with_a_warning(cache, damage):
    k1, k2 = disk_cache.entry_key("t", {"a": 1}), disk_cache.entry_key("t", {"a": 2})
    p1 = disk_cache.save("t", k1, {"x": np.arange(100.0)}, {})
    p2 = disk_cache.save("t", k2, {"x": np.arange(100.0) + 1}, {})
    if damage == "flip":
        _flip(p1)
    elif damage == "tamper":
        _corrupt(p1)
    elif damage == "truncate":
        p1.write_bytes(p1.read_bytes()[:100])
    else:  # a valid file of another key under this key's name
        shutil.copyfile(p2, p1)
    reason = {"flip": "unreadable", "tamper": "checksum", "truncate": "unreadable", "foreign": "foreign"}[damage]
    with pytest.warns(CacheWarning, match=reason):
        assert disk_cache.load("t", k1) is None
    assert not p1.exists() and disk_cache.load("t", k2) is not None  # discarded; the other entry is untouched


def test_embedding_reused_from_disk_bit_for_bit_and_refit_after_corruption(cache):
    X = _data()
    wl = GaussianKernelWorkload.generate(60, 3, sigma=4.0, rng=1)
    emb, hit = embedding_for(X, 4.0, options=SMALL)
    assert not hit
    ref = exact_answers(wl, X, method="lowrank", options=SMALL)
    (path,) = (cache / "embeddings").glob("*.npz")
    clear_cache()  # a new process: memory empty, disk kept
    emb2, hit2 = embedding_for(X, 4.0, options=SMALL)
    assert hit2 and emb2.info.get("from_disk") and emb2 is not emb
    for name in ("landmarks", "beta"):
        assert np.array_equal(getattr(emb2, name), getattr(emb, name))
    assert (emb2.sigma, emb2.mmd, emb2.eps_prefix, emb2.n_prefix) == (emb.sigma, emb.mmd, emb.eps_prefix, emb.n_prefix)
    clear_cache()
    again = exact_answers(wl, X, method="lowrank", options=SMALL)
    assert again.cached and again.seconds["fit"] == 0.0
    assert np.array_equal(again.answers, ref.answers) and np.array_equal(again.bounds, ref.bounds)
    clear_cache()
    _corrupt(path)
    with pytest.warns(CacheWarning, match="checksum"):
        refit = exact_answers(wl, X, method="lowrank", options=SMALL)
    assert not refit.cached and refit.seconds["fit"] > 0  # recomputed, not trusted
    assert np.array_equal(refit.answers, ref.answers) and path.exists()  # and rewritten
    # another data set, σ or fit option is another entry
    embedding_for(X[:-1], 4.0, options=SMALL)
    embedding_for(X, 6.0, options=SMALL)
    assert len(list((cache / "embeddings").glob("*.npz"))) == 3


def test_truth_reused_from_disk_and_recomputed_after_corruption(cache):
    X = _data(400, 2, seed=3)
    wl = GaussianKernelWorkload.generate(50, 2, sigma=2.0, rng=5)
    t1 = exact_truth(wl, X)
    (path,) = (cache / "truth").glob("*.npz")
    clear_truth_cache()
    wl_again = GaussianKernelWorkload.generate(50, 2, sigma=2.0, rng=5)  # regenerated from the seed
    t2 = exact_truth(wl_again, X)
    assert t2 is not t1 and np.array_equal(t2.answers, t1.answers)
    assert (t2.error_bound, t2.method, t2.seconds) == (t1.error_bound, t1.method, t1.seconds)
    other = exact_truth(GaussianKernelWorkload.generate(50, 2, sigma=2.0, rng=6), X)
    assert not np.array_equal(other.answers, t1.answers)
    clear_truth_cache()
    _corrupt(path)
    with pytest.warns(CacheWarning, match="checksum"):
        t3 = exact_truth(wl, X)
    assert np.array_equal(t3.answers, t1.answers)
    # negative control: a file that passes no check is never used — plant wrong answers with a valid
    # checksum under the right name but another key: detected as foreign, not returned
    clear_truth_cache()
    wrong_key = disk_cache.entry_key("truth", {"wrong": True})
    bad = disk_cache.save("truth", wrong_key, {"answers": t1.answers + 0.5}, {"error_bound": (0.0).hex(),
                                                                              "seconds": 0.0, "method": "exact"})
    shutil.copyfile(bad, path)
    with pytest.warns(CacheWarning, match="foreign"):
        t4 = exact_truth(wl, X)
    assert np.array_equal(t4.answers, t1.answers)


def test_other_method_lists_of_a_cell_reuse_the_answers_from_disk(cache, monkeypatch):
    """A table cell and a leaderboard cell (other methods, same cell seed) see the same workloads: the second
    process computes no exact answer (the workload is the first child of each repetition's seed)."""
    import dpkit.queries.truth_cache as tc
    from dpkit.experiments.protocol import run_cell
    from dpkit.experiments.records import cell_seed
    from dpkit.methods.registry import get

    X = _data(500, 2, seed=4)
    calls = []
    real = tc.exact_answers
    monkeypatch.setattr(tc, "exact_answers", lambda *a, **k: calls.append(1) or real(*a, **k))
    small = dict(epsilon=1.0, C=100, R=4, k=1, n_iter=2)
    table = [get("trig-I", **small), get("trig-II", delta=1e-3, **{k: v for k, v in small.items()})]
    rec1 = run_cell(X, methods=table, sigma=4.0, reps=2, n_queries=20, rng=cell_seed(0, "toy", 4.0))
    assert len(calls) == 2
    clear_truth_cache()  # a new process
    board = {"a": table[1], "b": table[0], "c": get("trig-I", **{**small, "R": 3})}
    rec2 = run_cell(X, methods=board, sigma=4.0, reps=2, n_queries=20, rng=cell_seed(0, "toy", 4.0))
    assert len(calls) == 2  # every exact answer of the second run came from the disk cache
    assert len(rec1) == 4 and len(rec2) == 6
    from dpkit.experiments.records import repetitions

    kw = dict(sigma=4.0, reps=2, n_queries=20)
    w2 = [r.workload.centres for r in repetitions(X, names=["a", "b"], rng=cell_seed(0, "toy", 4.0), **kw)]
    w3 = [r.workload.centres for r in repetitions(X, names=["a", "b", "c"], rng=cell_seed(0, "toy", 4.0), **kw)]
    assert all(np.array_equal(a, b) for a, b in zip(w2, w3))
