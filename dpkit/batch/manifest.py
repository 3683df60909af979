"""Batch manifests: read, validate against the notebooks' parameters cells, expand into runs.

The format is in docs/guide/batch.md. Errors, before any notebook runs, naming the manifest, the entry and the
parameter: a misspelt key, an undeclared parameter, a value of the wrong type. YAML 1.2 scalars only (``yes`` stays a
string, so ``QUICK: yes`` is a type error), and a key given twice is an error.
"""
from __future__ import annotations

import difflib
import functools
import hashlib
import io
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from dpkit.core.exceptions import DPKitError
from dpkit.core.paths import results_dir
from dpkit.core.pysource import literal_eval
from dpkit.core.validation import (
    check_name,
    check_name_list,
    check_positive_finite,
    check_positive_int,
    check_seed,
    check_sigmas,
)
from dpkit.data.spec import absolute_spec_paths

__all__ = [
    "BatchError",
    "ManifestError",
    "NotebookParameterError",
    "NotebookParameterTypeError",
    "RunSpec",
    "run_key",
    "parse_yaml",
    "parse_value",
    "load_manifest",
    "expand_manifest",
    "manifest_output",
    "declared_parameters",
    "check_parameters",
]

TOP_KEYS = ("name", "output", "defaults", "runs")
RUN_KEYS = ("notebook", "parameters", "grid", "exclude")
#: set by the runner for every run; a manifest or ``-p`` may not set them
RESERVED = ("OUTPUT_DIR", "CHECKPOINT_DIR", "CHECKPOINT_ADOPT", "CHECKPOINT_VERIFY_REPS")


class BatchError(DPKitError):
    """Base class of the batch runner's errors."""


class ManifestError(BatchError, ValueError):
    """A manifest (or a results file) is malformed: the message names the file and the key."""


class NotebookParameterError(BatchError, ValueError):
    """A run sets a parameter its notebook does not declare in the cell tagged ``parameters``."""


class NotebookParameterTypeError(NotebookParameterError, TypeError):
    """A run gives a parameter a value whose type differs from the notebook's typed literal."""


# --------------------------------------------------------------------------- YAML 1.2 scalars
class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with YAML 1.2 booleans and floats, and duplicate keys as errors."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, (str, int, float)) and key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
                if isinstance(key, (str, int, float)):
                    seen.add(key)
        return super().construct_mapping(node, deep=deep)


_BOOL, _FLOAT = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:float"
_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != _BOOL] for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_Loader.add_implicit_resolver(_FLOAT, re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789"))


def parse_yaml(text: str, *, source: str) -> Any:
    """Parse YAML text (YAML 1.2 scalars, duplicate keys rejected); errors name ``source``."""
    stream = io.StringIO(text)
    stream.name = source  # named in the marks of YAML errors instead of "<unicode string>"
    try:
        return yaml.load(stream, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ManifestError(f"{source}: not valid YAML: {exc}") from exc


def parse_value(text: str, *, name: str = "VALUE") -> Any:
    """A ``-p NAME VALUE`` value, parsed as a YAML 1.2 scalar or flow collection (``true``, ``4``, ``[2, 4]``)."""
    return parse_yaml(text, source=f"-p {name} {text!r}")


# --------------------------------------------------------------------------- runs and keys
@dataclass(frozen=True)
class RunSpec:
    """One notebook execution of a batch: the notebook and its parameters."""

    notebook: Path
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return run_key(self.notebook, self.parameters)

    def folder(self, output: str | os.PathLike) -> Path:
        """``<output>/<notebook stem>/<key>``: where this run lives once finished."""
        return Path(output) / self.notebook.stem / self.key


#: Parameters that do not change a run's results, left out of :func:`run_key`.
NOT_IN_KEY = ("OUTPUT_DIR", "CHECKPOINT_DIR", "INTERACTIVE", "REP_WORKERS", "REP_BACKEND")


def run_key(notebook: str | os.PathLike, parameters: dict[str, Any]) -> str:
    """A stable 12-hex-digit hash of the notebook's name and its parameters.

    The parameters of :data:`NOT_IN_KEY` are not part of the key: they do not change results (``REP_WORKERS``,
    how many repetitions a notebook computes at once, and ``REP_BACKEND``, where it computes them, give the same
    records to the bit; tests/test_checkpoint.py, tests/test_batch_repetitions.py).
    """
    clean = {k: v for k, v in sorted(parameters.items()) if k not in NOT_IN_KEY}
    blob = json.dumps({"notebook": Path(notebook).name, "parameters": clean}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def notebook_fingerprint(notebook: str | os.PathLike) -> str:
    """A 16-hex-digit hash of what a notebook computes: each cell's type and source, in order.

    Outputs, execution counts and metadata do not count (committed notebooks carry no outputs, and
    re-saving in JupyterLab must not make a finished run look stale). Recorded in ``run.json``
    (``notebook_sha256``) so a resumed batch can tell a finished run of an older notebook.
    """
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    cells = [[c.get("cell_type"), "".join(c.get("source", "")) if isinstance(c.get("source"), list)
              else c.get("source", "")] for c in nb.get("cells", [])]
    return hashlib.sha256(json.dumps(cells, ensure_ascii=False).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- notebook parameters
#: the allowed range of the parameters every runner notebook names alike (the run seed, the repetitions, the workload's
#: size, the kernel widths, the data sets), checked with dpkit's shared validators once a value has its declared type:
#: a manifest or ``-p`` value out of range is refused before anything runs, naming the parameter and the range
RANGE_CHECKS: dict[str, Callable[..., Any]] = {
    "SEED": check_seed, "REPS": check_positive_int, "N_QUERIES": check_positive_int, "J": check_positive_int,
    "REP_WORKERS": check_positive_int, "SIGMA": check_positive_finite, "SIGMAS": check_sigmas,
    "DATASET": check_name, "DATASETS": check_name_list,
}

_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),  # an int is fine for a float
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "list": lambda v: isinstance(v, (list, tuple)),
    "tuple": lambda v: isinstance(v, (list, tuple)),
    "dict": lambda v: isinstance(v, dict),
    "none": lambda v: v is None,
}


def _declared_types(annotation: str, default: str) -> frozenset[str] | None:
    """The allowed type names of one parameter (``None``: not checkable, e.g. an exotic annotation)."""
    ann = annotation.replace("typing.", "").replace(" ", "")
    if ann in ("", "None"):  # no annotation: the type of the default literal
        try:
            value = literal_eval(default)
        except (ValueError, SyntaxError):
            return None
        name = type(value).__name__
        return frozenset({name}) if name in _TYPE_CHECKS and value is not None else None
    if ann.startswith("Optional[") and ann.endswith("]"):
        ann = ann[len("Optional["):-1] + "|None"
    names = frozenset("none" if p in ("None", "NoneType") else p.split("[")[0].lower() for p in ann.split("|"))
    return names if names <= set(_TYPE_CHECKS) else None


@functools.lru_cache(maxsize=128)
def _inspect(path: str, mtime_ns: int) -> tuple[tuple[str, str, frozenset[str] | None, str], ...]:
    """``(name, annotation, allowed type names, default's source)`` of each parameter of the notebook at ``path``."""
    import papermill as pm

    try:
        info = pm.inspect_notebook(path)
    except Exception as exc:  # not JSON, not a notebook, unreadable
        raise BatchError(f"notebook {path}: cannot read its parameters cell: {type(exc).__name__}: {exc}") from exc
    return tuple((n, str(p.get("inferred_type_name") or ""), _declared_types(str(p.get("inferred_type_name") or ""),
                                                                             str(p.get("default"))), str(p.get("default")))
                 for n, p in info.items())


def declared_parameters(notebook: str | os.PathLike) -> dict[str, tuple[str, frozenset[str] | None]]:
    """The notebook's ``parameters`` cell: ``{name: (annotation, allowed type names or None)}`` (via papermill)."""
    p = Path(notebook).resolve()
    if not p.is_file():
        raise FileNotFoundError(f"notebook not found: {p}")
    return {n: (ann, types) for n, ann, types, _default in _inspect(str(p), p.stat().st_mtime_ns)}


def default_parameters(notebook: str | os.PathLike) -> dict[str, Any]:
    """The values the notebook's ``parameters`` cell gives its parameters (via papermill), for those whose default is
    a literal (``REPS: int = 30``); a default computed by an expression is left out."""
    p = Path(notebook).resolve()
    if not p.is_file():
        raise FileNotFoundError(f"notebook not found: {p}")
    out = {}
    for name, _ann, _types, default in _inspect(str(p), p.stat().st_mtime_ns):
        try:
            out[name] = literal_eval(default)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return out


def _parameter_problem(notebook: Path, name: str, value: Any, declared: dict[str, tuple[str, frozenset[str] | None]]
                       ) -> NotebookParameterError | None:
    if name in RESERVED:
        return NotebookParameterError(f"{name} is set by the runner (a folder of the run, or its --stale policy); "
                                      "do not set it")
    if name not in declared:
        if not declared:
            return NotebookParameterError(f"{notebook.name} has no cell tagged 'parameters', so {name!r} cannot be set")
        close = difflib.get_close_matches(name, list(declared), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return NotebookParameterError(f"{notebook.name} declares no parameter {name!r}{hint}; "
                                      f"its parameters cell declares: {', '.join(declared)}")
    annotation, types = declared[name]
    if types is None or any(_TYPE_CHECKS[t](value) for t in types):
        if name in RANGE_CHECKS and value is not None:
            try:
                RANGE_CHECKS[name](value, name=name)
            except (TypeError, ValueError) as exc:
                return NotebookParameterError(f"{name}={value!r} is out of range for {notebook.name}: {exc}")
        return None
    hint = ""
    if isinstance(value, str) and types & {"bool", "int", "float"}:
        hint = " (write true/false for a bool and numbers without quotes)"
    return NotebookParameterTypeError(f"{name}={value!r} has type {type(value).__name__} but {notebook.name} declares "
                                      f"{name}: {annotation or '/'.join(sorted(types))}{hint}")


def check_parameters(notebook: str | os.PathLike, parameters: dict[str, Any], *, source: str = "parameters",
                     where: dict[str, str] | None = None) -> None:
    """Raise if ``parameters`` do not fit the notebook's declared names and typed literals.

    ``source`` prefixes the message (a manifest entry, ``-p``); ``where`` maps a parameter name to
    where it was set (``runs[0].grid.SEED[1]``). Every problem is listed; the exception is
    :class:`NotebookParameterTypeError` when all are type errors, else :class:`NotebookParameterError`.
    """
    nb = Path(notebook)
    declared = declared_parameters(nb)
    problems = []
    for name, value in parameters.items():
        err = _parameter_problem(nb, name, value, declared)
        if err is not None:
            problems.append((err, f"{(where or {}).get(name, name)}: {err}"))
    if problems:
        cls = NotebookParameterTypeError if all(isinstance(e, TypeError) for e, _ in problems) else NotebookParameterError
        raise cls(f"{source}: " + "; ".join(msg for _, msg in problems))


# --------------------------------------------------------------------------- manifests
def _check_keys(found: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = [k for k in found if k not in allowed]
    if unknown:
        hints = [f"{k!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(str(k), allowed, n=1)) else "")
                 for k in unknown]
        raise ManifestError(f"{where} has unknown keys: {', '.join(hints)}; allowed: {', '.join(allowed)}")


def _check_run(r: Any, i: int, where: str) -> None:
    if not isinstance(r, dict) or "notebook" not in r:
        raise ManifestError(f"{where}: runs[{i}] must be a mapping with a 'notebook' key")
    _check_keys(r, RUN_KEYS, f"{where}: runs[{i}]")
    if not isinstance(r["notebook"], str) or not r["notebook"]:
        raise ManifestError(f"{where}: runs[{i}].notebook must be a notebook path or glob, got {r['notebook']!r}")
    if "exclude" in r and not (isinstance(r["exclude"], list) and all(isinstance(x, str) for x in r["exclude"])):
        raise ManifestError(f"{where}: runs[{i}].exclude must be a list of notebook file names or globs")
    for k in ("parameters", "grid"):
        if k in r and not isinstance(r[k], dict):
            raise ManifestError(f"{where}: runs[{i}].{k} must be a mapping")
    for g, values in (r.get("grid") or {}).items():
        if not isinstance(values, list) or not values:
            raise ManifestError(f"{where}: runs[{i}].grid.{g} must be a non-empty list")
    both = set(r.get("grid") or {}) & set(r.get("parameters") or {})
    if both:
        raise ManifestError(f"{where}: runs[{i}] sets {sorted(both)} in both 'parameters' and 'grid'")


def load_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """Read and validate the form of a YAML manifest (see :mod:`dpkit.batch.runner`).

    Raises :class:`ManifestError` (a ``ValueError``) naming the file and the key for bad YAML, an
    unknown key (with the closest allowed name) or a value of the wrong form.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"manifest not found: {p}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"manifest {p} is not UTF-8 text: {exc}") from exc
    m = parse_yaml(text, source=f"manifest {p}") or {}
    if not isinstance(m, dict) or not isinstance(m.get("runs"), list) or not m["runs"]:
        raise ManifestError(f"manifest {p} must be a mapping with a non-empty list 'runs'")
    where = f"manifest {p}"
    _check_keys(m, TOP_KEYS, where)
    for k in ("name", "output"):
        if k in m and not isinstance(m[k], str):
            raise ManifestError(f"{where}: {k} must be a string, got {m[k]!r}")
    if "output" in m and not m["output"].strip():
        raise ManifestError(f"{where}: output must be a non-empty folder path (relative to the manifest); omit it for "
                            f"results/batch/<name>")
    if "name" in m and (not m["name"].strip() or m["name"] in (".", "..") or any(ch in m["name"] for ch in "/\\")):
        raise ManifestError(f"{where}: name must be a non-empty plain folder name (no '/', not '.' or '..'; it names "
                            f"results/batch/<name>), got {m['name']!r}")
    if "defaults" in m and not isinstance(m["defaults"], (dict, type(None))):
        raise ManifestError(f"{where}: defaults must be a mapping of parameters")
    for i, r in enumerate(m["runs"]):
        _check_run(r, i, where)
    m["_path"] = str(p.resolve())
    return m


def _notebooks(base: Path, r: dict[str, Any], where: str) -> list[Path]:
    import fnmatch

    pattern = str(r["notebook"])
    if any(ch in pattern for ch in "*?["):
        excluded = list(r.get("exclude") or [])
        anchor = Path(pattern).anchor  # an absolute glob is matched from its root (Path.glob takes relative ones only)
        root, relative = (Path(anchor), pattern[len(anchor):]) if anchor else (base, pattern)
        try:
            found = list(root.glob(relative))
        except (ValueError, NotImplementedError, OSError) as exc:
            raise ManifestError(f"{where}: notebook glob {pattern!r} cannot be used: {exc}") from exc
        notebooks = sorted(p.resolve() for p in found
                           if p.suffix == ".ipynb" and not any(fnmatch.fnmatch(p.name, x) for x in excluded))
        if not notebooks:
            raise FileNotFoundError(f"{where}: no notebook matches {pattern!r}")
        return notebooks
    nb = (base / pattern).resolve()
    if not nb.is_file():
        raise FileNotFoundError(f"{where}: notebook not found: {nb}")
    return [nb]


def expand_manifest(manifest: dict[str, Any]) -> list[RunSpec]:
    """All runs of a manifest: each entry's parameters × the cartesian product of its grid.

    Every parameter (defaults, parameters, each grid value) is checked against each notebook's
    parameters cell before any run starts (:func:`check_parameters`).
    """
    base = Path(manifest.get("_path", ".")).parent
    where = f"manifest {manifest.get('_path', '<dict>')}"
    defaults = dict(manifest.get("defaults") or {})
    specs: list[RunSpec] = []
    seen: set[tuple[str, str]] = set()
    by_stem: dict[str, Path] = {}
    for i, r in enumerate(manifest["runs"]):
        params = {**defaults, **dict(r.get("parameters") or {})}
        grid = dict(r.get("grid") or {})
        names = list(grid)
        origin = {k: (f"runs[{i}].parameters.{k}" if k in (r.get("parameters") or {}) else f"defaults.{k}") for k in params}
        for nb in _notebooks(base, r, where):
            other = by_stem.setdefault(nb.stem, nb)
            if other != nb:  # runs live in <output>/<stem>/<key> and the key hashes the file name: they would collide
                raise ManifestError(f"{where}: runs[{i}] names {nb} but {other} has the same name; runs are kept by "
                                    f"notebook name, so one batch cannot hold both (rename one, or use two manifests)")
            check_parameters(nb, params, source=f"{where}: runs[{i}] ({nb.name})", where=origin)
            for g in names:
                for j, v in enumerate(grid[g]):
                    check_parameters(nb, {g: v}, source=f"{where}: runs[{i}] ({nb.name})", where={g: f"runs[{i}].grid.{g}[{j}]"})
            for combo in itertools.product(*(grid[n] for n in names)) if names else [()]:
                # a spec file of your own data is named relative to the manifest, as its output
                spec = RunSpec(nb, absolute_spec_paths({**params, **dict(zip(names, combo))}, base))
                if (str(nb), spec.key) not in seen:
                    seen.add((str(nb), spec.key))
                    specs.append(spec)
    return specs


def manifest_output(manifest: dict[str, Any]) -> Path:
    """The manifest's output folder: ``output`` relative to the manifest, else ``results/batch/<name>``."""
    base = Path(manifest.get("_path", ".")).parent
    if manifest.get("output"):
        return (base / manifest["output"]).resolve()
    return results_dir() / "batch" / str(manifest.get("name", Path(manifest.get("_path", "batch")).stem))
