"""Headless notebook execution with papermill (the batch path).

``python -m dpkit.batch notebook NB.ipynb --output DIR [-p NAME VALUE ...]`` executes one
notebook with ``INTERACTIVE=False`` and ``OUTPUT_DIR=DIR``, writing the executed copy,
``metrics.json``, figures and a log into ``DIR``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["execute_notebook", "main"]


def execute_notebook(
    notebook: str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    parameters: dict[str, Any] | None = None,
    kernel_name: str | None = None,
    timeout: int | None = 3600,
    progress: bool = False,
) -> Path:
    """Execute ``notebook`` headlessly into ``output_dir`` and return the executed copy's path.

    ``INTERACTIVE`` defaults to ``False`` and ``OUTPUT_DIR`` to ``output_dir``; other
    ``parameters`` are injected into the cell tagged ``parameters``. Raises
    :class:`papermill.PapermillExecutionError` (with the failing cell) if a cell fails.
    """
    import papermill as pm

    nb = Path(notebook)
    if not nb.is_file():
        raise FileNotFoundError(f"notebook not found: {nb}")
    out = Path(output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    params = {"INTERACTIVE": False, **dict(parameters or {}), "OUTPUT_DIR": str(out)}
    executed = out / nb.name
    t0 = time.perf_counter()
    env_backend = os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        pm.execute_notebook(
            str(nb),
            str(executed),
            parameters=params,
            kernel_name=kernel_name or "python3",
            cwd=str(nb.resolve().parent),
            progress_bar=progress,
            execution_timeout=timeout,
            log_output=False,
        )
        status = "ok"
    except Exception as exc:  # record, then re-raise
        status = f"failed: {type(exc).__name__}: {str(exc)[:2000]}"
        raise
    finally:
        (out / "run.json").write_text(
            json.dumps(
                {
                    "notebook": str(nb),
                    "parameters": params,
                    "status": status,
                    "wall_time_s": time.perf_counter() - t0,
                    "python": sys.executable,
                    "mplbackend": env_backend,
                },
                indent=2,
                default=str,
            )
        )
    return executed


def _parse_value(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dpkit.batch", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    one = sub.add_parser("notebook", help="execute one notebook headless")
    one.add_argument("notebook")
    one.add_argument("--output", required=True, help="output folder (executed notebook, metrics.json, figures)")
    one.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="parameter override; VALUE is parsed as YAML (e.g. -p QUICK true -p SIGMAS '[2, 4]')")
    one.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "notebook":
        params = {k: _parse_value(v) for k, v in args.param}
        path = execute_notebook(args.notebook, args.output, parameters=params, progress=args.progress)
        metrics = Path(args.output) / "metrics.json"
        print(f"executed: {path}")
        if metrics.exists():
            from .report import read_metrics

            m = read_metrics(metrics)
            bad = [c["id"] for c in m.get("checks", []) if c["verdict"] != c["expected"]]
            print(f"metrics: {metrics} ({len(m.get('checks', []))} checks, {len(bad)} unexpected verdicts)")
            if bad:
                print("unexpected: " + ", ".join(bad))
                return 1
        return 0
    return 2  # pragma: no cover


if __name__ == "__main__":
    raise SystemExit(main())
