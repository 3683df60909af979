"""Where a result came from, recorded in every ``metrics.json``: the git commit (and whether the tree was dirty),
Python and the key packages' versions, the CPU count, the processor and the vectorised kernels numpy dispatches to on
it, and the BLAS in use — so a number can be traced months later. The same seeds give the same bits only on machines
that agree in the processor's kernels and the libraries (another processor rounds some last bits differently)."""
from __future__ import annotations

import functools
import os
import platform
import subprocess
from importlib import metadata
from typing import Any

from dpkit.core.machine import cpu
from dpkit.core.paths import repo_root

__all__ = ["provenance", "PACKAGES"]

#: Packages whose versions can change a number.
PACKAGES = ("numpy", "scipy", "pandas", "scikit-learn", "threadpoolctl", "matplotlib", "papermill", "diffprivlib", "mbi")


def _git() -> dict[str, Any]:
    root = repo_root()
    if root is None:
        return {"commit": None, "dirty": None}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
                                text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if commit.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


@functools.lru_cache(maxsize=1)
def _static() -> dict[str, Any]:
    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            versions[p] = None
    try:
        from threadpoolctl import threadpool_info

        blas = [{k: i.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
                for i in threadpool_info() if i.get("user_api") == "blas"]
    except Exception as exc:  # threadpoolctl is a dependency; its probing must not break a run
        blas = [{"error": f"{type(exc).__name__}: {exc}"}]
    return {"python": platform.python_version(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
            "cpu": cpu(), "packages": versions, "blas": blas}


def provenance() -> dict[str, Any]:
    """``{"git": {commit, dirty}, "python", "platform", "cpu_count", "cpu": {model, numpy_simd}, "packages": {name:
    version}, "blas": [{internal_api, version, num_threads, architecture}]}``."""
    return {"git": _git(), **_static()}
