"""Parsing Python source from several threads of one process.

CPython 3.11's parser keeps the depth of the AST it is converting in state shared by the interpreter's threads, so
two threads that call :func:`ast.parse` (or :func:`ast.literal_eval`, which parses) at the same time can fail with
``SystemError: AST constructor recursion depth mismatch`` [1]_. The batch runner does exactly that: several runs
execute in the threads of one Dask worker (a notebook's task secedes while its repetitions run), and one run's
start hashes dpkit's sources while the next one reads its notebook's parameters. Every parse in dpkit goes
through this module's one lock.

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
