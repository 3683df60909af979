"""The kind of machine a number was computed on, as far as its bits depend on it.

The same seeds give the same records to the bit on machines that agree in the processor's vectorised kernels and in
the libraries; on another processor numpy dispatches to other SIMD kernels (AVX2 or AVX-512) and some last bits come
out differently (measured in the batch guide, "The bits are a machine's"). :func:`cpu` names the processor and the
targets of numpy's runtime dispatch it supports; :func:`numerics_machine` is the one-line form that provenance and
kept repetitions record.
"""
from __future__ import annotations

import functools
import platform
from typing import Any

__all__ = ["cpu", "numerics_machine"]


@functools.lru_cache(maxsize=1)
def cpu() -> dict[str, Any]:
    """``{"model", "numpy_simd"}``: the processor's name (``/proc/cpuinfo`` on Linux, else
    :func:`platform.processor`) and the targets of numpy's runtime dispatch this processor supports (e.g.
    ``["X86_V3", "X86_V4", "AVX512_ICL"]``: AVX2 and AVX-512 kernels), ``None`` where unknown."""
    model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh if ln.lower().startswith("model name")), None)
    except OSError:
        pass
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

        simd = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]
    except ImportError:  # another numpy layout: not recorded
        simd = None
    return {"model": model or platform.processor() or None, "numpy_simd": simd}


def numerics_machine() -> str:
    """``"<processor>; numpy SIMD <targets>"``: two machines with different strings may round differently."""
    info = cpu()
    simd = ",".join(info["numpy_simd"]) if info["numpy_simd"] is not None else "unknown"
    return f"{info['model'] or 'unknown processor'}; numpy SIMD {simd}"
