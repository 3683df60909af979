"""Parsing Python source from several threads of one process.

CPython 3.11's parser keeps shared state, so two threads calling :func:`ast.parse` at once can fail with
``SystemError: AST constructor recursion depth mismatch`` [1]_; runs in the threads of one Dask worker do that. Every
parse in dpkit goes through this module's one lock.

References
----------
.. [1] CPython issue gh-106905, "Use of the ast module from multiple threads can crash or raise SystemError"
   (fixed in later releases).
"""
from __future__ import annotations

import ast
import threading
from typing import Any

__all__ = ["PARSE_LOCK", "parse", "literal_eval"]

#: Held by every :func:`ast.parse` of dpkit (:func:`parse`, :func:`literal_eval`, the library fingerprint).
PARSE_LOCK = threading.Lock()


def parse(source: str | bytes) -> ast.Module:
    """:func:`ast.parse` of ``source`` under :data:`PARSE_LOCK`."""
    with PARSE_LOCK:
        return ast.parse(source)


def literal_eval(text: str) -> Any:
    """:func:`ast.literal_eval` of ``text`` (a Python literal) under :data:`PARSE_LOCK`; raises as it does
    (``ValueError``, ``SyntaxError``, ...)."""
    with PARSE_LOCK:
        return ast.literal_eval(text)
