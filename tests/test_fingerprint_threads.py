"""library_fingerprint runs in several threads of one Dask worker at once (seceded notebook tasks): its parser
calls must never overlap, since CPython 3.11's parser is not thread-safe (python/cpython gh-106905)."""
from __future__ import annotations

import ast
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import dpkit.core.paths as paths


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
