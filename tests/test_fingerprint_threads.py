"""dpkit parses Python source in several threads of one Dask worker at once (seceded notebook tasks: one run's start
hashes dpkit's sources while another reads its notebook's parameters): its parser calls must never overlap, since
CPython 3.11's parser is not thread-safe (python/cpython gh-106905; a cold Tables 3.2/3.3 batch lost a run to it on
2026-11-28). Every parse goes through dpkit.core.pysource's one lock."""
from __future__ import annotations

import ast
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dpkit.core.paths as paths
from dpkit.core import pysource
from dpkit.core.paths import library_fingerprint

ROOT = Path(__file__).resolve().parents[1]


def test_library_fingerprint_never_parses_in_two_threads_at_once(monkeypatch):
    real = ast.parse
    inside, overlaps, lock = [0], [0], threading.Lock()

    def slow_parse(*args, **kwargs):
        with lock:
            inside[0] += 1
            if inside[0] > 1:
                overlaps[0] += 1
        time.sleep(0.002)  # widen the window in which a second thread could enter
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                inside[0] -= 1

    monkeypatch.setattr(ast, "parse", slow_parse)
    monkeypatch.setattr(paths, "_CODE_DIGESTS", {})
    with ThreadPoolExecutor(4) as ex:
        prints = list(ex.map(lambda _: paths.library_fingerprint(), range(4)))
    assert overlaps[0] == 0
    assert len(set(prints)) == 1


def test_every_parse_in_dpkit_goes_through_the_one_lock():
    """No module of the package but dpkit.core.pysource calls ast.parse or ast.literal_eval itself (the old code did
    in the batch's manifest, execute and repetitions modules, beside the fingerprint's own lock)."""
    call = re.compile(r"\bast\.(parse|literal_eval)\(")
    found = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "dpkit").rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if call.search(line) and p.name != "pysource.py"]
    assert found == []


def test_a_parse_waits_while_another_thread_holds_the_lock(tmp_path):
    """literal_eval and the library fingerprint (a file it has not seen) wait for the lock, then give their results."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text(f"X = {uuid.uuid4().int}\n")  # new bytes: parsed, not read from the memo
    out: dict[str, object] = {}
    threads = [threading.Thread(target=lambda: out.__setitem__("literal", pysource.literal_eval("[1, (2, 'a')]"))),
               threading.Thread(target=lambda: out.__setitem__("fingerprint", library_fingerprint(pkg)))]
    with pysource.PARSE_LOCK:
        for t in threads:
            t.start()
        for t in threads:
            t.join(0.3)
        assert out == {}, out  # both are waiting for the lock
    for t in threads:
        t.join(30)
    assert out["literal"] == [1, (2, "a")]
    assert out["fingerprint"] == library_fingerprint(pkg) and len(str(out["fingerprint"])) == 16
