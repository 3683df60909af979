"""One recipe object per data set: spec -> locate -> verify -> parse, on one straight path.

:meth:`Recipe.read` finds the files (:mod:`dpkit.data.files`), checks their sizes and sha256 against the registry and
parses them (:mod:`dpkit.data.parsers`); the subclasses named by the registry's ``recipe:`` key (:data:`RECIPES`) hold
what differs: :class:`CSNRecipe` (the training file, else the test split; a seeded subsample), :class:`PAMRecipe`
(``subjects=``), :class:`WDBCRecipe` (scikit-learn's copy, checked by hash, when no file is found) and
:class:`MockRecipe` (seeded, no files). The Table 3.1 steps are :mod:`dpkit.data.steps`.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from dpkit.data import download, parsers
from dpkit.data.errors import ChecksumError, DataNotFoundError, RegistryError
from dpkit.data.files import FoundFile, find_file, sha256_file, verify_file
from dpkit.data.parsers import Table
from dpkit.data.registry import DatasetSpec, FileSpec, get_spec, load_registry, registry_path

__all__ = ["SKLEARN_SOURCE", "Source", "Recipe", "CSNRecipe", "PAMRecipe", "WDBCRecipe", "MockRecipe", "RECIPES",
           "recipe_for", "parse_cached"]

Parser = Callable[[DatasetSpec, Mapping[str, Path], Mapping[str, bool]], Table]
PathArg = str | os.PathLike | None

#: provenance ``source`` of WDBC loaded from scikit-learn's bundled copy
SKLEARN_SOURCE = "scikit-learn bundled copy"


@dataclass(frozen=True)
class Source:
    """What a recipe read, before the Table 3.1 steps.

    ``files`` are the provenance entries of the files used; ``subsample_n`` is the number of
    rows the recipe asks for (``None``: all); ``extra`` holds recipe-specific provenance.
    """

    table: Table
    files: list[dict[str, Any]]
    source: str
    notes: list[str] = field(default_factory=list)
    subsample_n: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _registry_key() -> tuple[str, int]:
    p = registry_path()
    return (str(p), p.stat().st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _parse_cached(code: str, registry_key: tuple, file_key: tuple) -> Table:
    files = {role: Path(p) for role, p, _sha, _chk in file_key}
    checked = {role: chk for role, _p, _sha, chk in file_key}
    return recipe_for(get_spec(code)).parse(files, checked)


def parse_cached(code: str, use: Mapping[str, FoundFile]) -> Table:
    """Parse ``use`` (role -> verified file) once per (registry, paths, sha256s); the table is read-only."""
    file_key = tuple(sorted((r, str(ff.path), ff.sha256, bool(ff.verified)) for r, ff in use.items()))
    return _parse_cached(code, _registry_key(), file_key)


def _file_provenance(role: str, ff: FoundFile, verify: bool) -> dict[str, Any]:
    if ff.verified:
        check = "sha256 + size match registry" + (f" ({ff.variant.note})" if ff.variant and ff.variant.note else "")
    elif not verify:
        check = "NOT verified (verify=False)"
    else:
        check = "no published checksum; checked by structure (row and field counts)"
    return {"role": role, "file": str(ff.path), "name": ff.spec.name, "sha256": ff.sha256, "found_in": ff.found_in,
            "verified": ff.verified, "check": check}


class Recipe:
    """The straight path of a file-based data set; subclasses override the hooks that differ.

    Parameters
    ----------
    spec : DatasetSpec
        The registry entry.
    parser : callable
        ``parser(spec, files, checked) -> Table`` (:mod:`dpkit.data.parsers`).
    """

    #: keyword options of :func:`dpkit.data.load` this recipe accepts besides the common ones
    options: ClassVar[frozenset[str]] = frozenset()
    #: what stands in when no file is found (shown by ``python -m dpkit.data list``)
    fallback: ClassVar[str] = ""

    def __init__(self, spec: DatasetSpec, parser: Parser | None = None) -> None:
        self.spec = spec
        self._parser = parser

    # ---- hooks ------------------------------------------------------------------------------------
    def check_options(self, **options: Any) -> None:
        """``d``, ``source`` and ``subjects`` are each meant for one recipe: elsewhere they are an error."""
        for key, value in options.items():
            if value is not None and key not in self.options:
                owners = [c for c, s in load_registry().items() if s.recipe in RECIPES and key in RECIPES[s.recipe](s).options]
                raise ValueError(f"{key} is only for the {'/'.join(owners) or 'no'} data set(s); {self.spec.code} has a fixed "
                                 f"recipe (got {key}={value!r})")

    def roles(self, options: Mapping[str, Any]) -> list[str]:
        """The file roles to look for (default: the registry's required files)."""
        return [f.role for f in self.spec.files if not f.optional]

    def roles_with_explicit_file(self, explicit: str, roles: list[str]) -> list[str]:
        """The roles to look for when ``path`` is a file given for role ``explicit``."""
        return roles

    def missing_required(self, roles: list[str], found: Mapping[str, FoundFile]) -> list[str]:
        """Roles that must still be fetched (default: every role not found)."""
        return [r for r in roles if r not in found]

    def after_locate(self, found: dict[str, FoundFile], path: PathArg, allow_download: bool | None) -> None:
        """Extra files fetched on request (default: none)."""

    def choose(self, found: Mapping[str, FoundFile], n: int | None) -> tuple[dict[str, FoundFile], list[str], int | None]:
        """Which files are parsed, notes about the choice and the rows to keep (default: all found, ``n``)."""
        return dict(found), [], n

    def parse(self, files: Mapping[str, Path], checked: Mapping[str, bool]) -> Table:
        """Parse ``files`` (role -> path); ``checked[role]`` says whether its checksum was verified."""
        if self._parser is None:
            raise RegistryError(f"registry entry {self.spec.code!r}: recipe {self.spec.recipe!r} has no parser")
        return self._parser(self.spec, files, checked)

    def structure_check(self, fs: FileSpec, p: Path) -> None:
        """A full strict parse of a downloaded file that has no registry checksum (expects the registry's row count)."""
        self.parse({fs.role: p}, {fs.role: True})

    # ---- the straight path ------------------------------------------------------------------------
    def read(self, *, path: PathArg, verify: bool, allow_download: bool | None, n: int | None,
             rng: np.random.Generator, seed: int | str | None, options: Mapping[str, Any]) -> Source:
        """locate -> verify -> parse; returns the :class:`Source` for the Table 3.1 steps."""
        found = self.locate(self.roles(options), path, allow_download)
        found = {r: self.verified(ff, verify) for r, ff in found.items()}
        use, notes, subsample_n = self.choose(found, n)
        table = parse_cached(self.spec.code, use)
        source = "files (" + ", ".join(sorted({ff.found_in for ff in use.values()})) + ")"
        return Source(table, [_file_provenance(r, ff, verify) for r, ff in use.items()], source, notes, subsample_n)

    def _explicit_role(self, p: Path, roles: list[str]) -> str:
        for f in self.spec.files:
            if f.role in roles and Path(f.name).name == p.name:
                return f.role
        return next(f.role for f in self.spec.files if f.role in roles and not f.optional)

    def locate(self, roles: list[str], path: PathArg, allow_download: bool | None) -> dict[str, FoundFile]:
        """Find every role's file in the search locations; fetch missing required ones (or say what to do)."""
        spec, explicit = self.spec, None
        if path is not None:
            p = Path(path).expanduser()
            if not p.exists():
                raise DataNotFoundError(
                    f"[{spec.code}] path argument {p} does not exist; pass the data file or a folder holding it "
                    f"(expected file(s): {', '.join(spec.file(r).name for r in roles)})")
            if p.is_file():
                explicit = self._explicit_role(p, roles)
                roles = self.roles_with_explicit_file(explicit, roles)
        found: dict[str, FoundFile] = {}
        for role in roles:
            hit = find_file(spec.code, spec.file(role), path=path, explicit_role=(role == explicit))
            if hit is not None:
                found[role] = hit
        missing = [spec.file(r) for r in self.missing_required(roles, found)]
        if missing:
            if path is not None:
                reason = "not attempted: an explicit path was given"
                raise DataNotFoundError(download.missing_message(spec, missing, path=path, reason=reason))
            if not download.downloads_allowed(allow_download):
                reason = "downloads disabled (download=False or DPKIT_OFFLINE=1)"
                raise DataNotFoundError(download.missing_message(spec, missing, reason=reason))
            for ff in download.fetch(spec, roles=[f.role for f in missing], structure_check=self.structure_check):
                found[ff.spec.role] = ff
        self.after_locate(found, path, allow_download)
        return found

    def verified(self, ff: FoundFile, verify: bool) -> FoundFile:
        """``ff`` with its sha256 and, if ``verify``, the registry variant it matches (ChecksumError otherwise)."""
        if verify:
            sha, variant = verify_file(self.spec.code, ff.spec, ff.path)
        else:
            sha, variant = sha256_file(ff.path), None
        return FoundFile(spec=ff.spec, path=ff.path, found_in=ff.found_in, sha256=sha, variant=variant,
                         verified=variant is not None)

    def fetch(self, *, dest: PathArg = None, progress: bool = False, include_optional: bool = True,
              missing_only: bool = True) -> list[FoundFile]:
        """Download this data set's files (see :func:`dpkit.data.fetch`)."""
        roles = [f.role for f in self.spec.files if (include_optional or not f.optional)
                 and not (missing_only and find_file(self.spec.code, f) is not None)]
        if not roles:
            return []
        return download.fetch(self.spec, roles=roles, dest=dest, progress=progress, structure_check=self.structure_check)


class CSNRecipe(Recipe):
    """Census-Income: the 199,523-row training file (no published checksum) gives the thesis's n = 100000
    as a seeded subsample; without it the whole 99,762-row test split stands in (stated in the notes)."""

    def roles(self, options: Mapping[str, Any]) -> list[str]:
        return ["train", "test"]

    def roles_with_explicit_file(self, explicit: str, roles: list[str]) -> list[str]:
        return [explicit]  # an explicit CSN file is used alone (never mixed with a train file found elsewhere)

    def missing_required(self, roles: list[str], found: Mapping[str, FoundFile]) -> list[str]:
        return [] if ("train" in found or "test" in found) else ["test"]

    def after_locate(self, found: dict[str, FoundFile], path: PathArg, allow_download: bool | None) -> None:
        if "train" in found or allow_download is not True or path is not None:
            return
        try:  # optional file, no published checksum: only on explicit request
            for ff in download.fetch(self.spec, roles=["train"], structure_check=self.structure_check):
                found[ff.spec.role] = ff
        except DataNotFoundError:
            pass  # offline: the test split stands in (stated in the provenance notes)

    def choose(self, found: Mapping[str, FoundFile], n: int | None) -> tuple[dict[str, FoundFile], list[str], int | None]:
        if "train" in found:
            note = "training file census-income.data.gz present: thesis recipe, seeded subsample of it"
            return {"train": found["train"]}, [note], (self.spec.thesis_n if n is None else n)
        notes = [] if n is not None else [
            "training file census-income.data.gz not found: the whole 99,762-row TEST split stands in; "
            "the thesis's n = 100000 (a subsample of the 199,523-row training file) cannot be reached from it"]
        return {"test": found["test"]}, notes, n


class PAMRecipe(Recipe):
    """PAMAP2: ``subjects=[101, ...]`` selects the Protocol files (default all nine)."""

    options = frozenset({"subjects"})

    def roles(self, options: Mapping[str, Any]) -> list[str]:
        roles = [f.role for f in self.spec.files if f.role.startswith("subject")]
        subjects = options.get("subjects")
        if subjects is None:
            return roles
        allowed = [int(r[len("subject"):]) for r in roles]
        try:
            want = [f"subject{int(s)}" for s in subjects]
        except (TypeError, ValueError):
            want = None
        if not want or any(w not in roles for w in want) or len(set(want)) != len(want):
            raise ValueError(f"subjects must be a non-empty list of distinct subjects from {allowed}; got {subjects!r}")
        return want


class WDBCRecipe(Recipe):
    """WDBC: ``source="files"`` or ``"sklearn"``; by default the file if one is found, else scikit-learn's
    bundled copy, whose 569 x 30 matrix is checked against the UCI file's hash (``matrix_sha256``)."""

    options = frozenset({"source"})
    fallback = SKLEARN_SOURCE

    def check_options(self, **options: Any) -> None:
        super().check_options(**options)
        if options.get("source") not in (None, "files", "sklearn"):
            raise ValueError(f"source must be None, 'files' or 'sklearn' for WDBC; got {options['source']!r}")

    def read(self, *, path: PathArg, verify: bool, allow_download: bool | None, n: int | None,
             rng: np.random.Generator, seed: int | str | None, options: Mapping[str, Any]) -> Source:
        source = options.get("source")
        # the bundled copy is the fallback when no file is found (never for a corrupt one, nor with path=)
        if source == "sklearn" or (source is None and path is None and find_file(self.spec.code, self.spec.file("data")) is None):
            return self._read_sklearn(verify, n, explicit=source == "sklearn")
        return super().read(path=path, verify=verify, allow_download=allow_download, n=n, rng=rng, seed=seed, options=options)

    def _read_sklearn(self, verify: bool, n: int | None, *, explicit: bool) -> Source:
        import sklearn

        table, msha = parsers.sklearn_wdbc(self.spec)
        want = self.spec.raw.get("matrix_sha256")
        if verify and msha != want:
            raise ChecksumError(
                f"[WDBC] scikit-learn's bundled breast_cancer data (matrix sha256 {msha}) differs from UCI's "
                f"wdbc.data (registry matrix_sha256 {want}); place wdbc.data ({self.spec.file('data').url}) in "
                f"data/raw/WDBC/ or $DPKIT_DATA_DIR/WDBC/ instead.")
        entry = {"role": "data", "file": f"sklearn/datasets/data/breast_cancer.csv (scikit-learn {sklearn.__version__})",
                 "sha256_matrix": msha, "found_in": self.fallback, "verified": bool(verify and msha == want)}
        note = ("no wdbc.data found in the search locations; used scikit-learn's bundled copy, "
                "whose 569 x 30 feature matrix is checked against the UCI file's hash")
        return Source(table, [entry], self.fallback, [note], n)


class MockRecipe(Recipe):
    """Seeded synthetic data (``n`` rows, ``d`` columns; registry ``defaults``), no files."""

    options = frozenset({"d"})

    def read(self, *, path: PathArg, verify: bool, allow_download: bool | None, n: int | None,
             rng: np.random.Generator, seed: int | str | None, options: Mapping[str, Any]) -> Source:
        if path is not None:
            raise ValueError(f"path is not an option of the synthetic {self.spec.code} data set (got path={os.fspath(path)!r})")
        defaults = self.spec.raw.get("defaults") or {}
        nn = int(n if n is not None else defaults.get("n", 1000))
        dd = int(options["d"] if options.get("d") is not None else defaults.get("d", 5))
        return Source(parsers.mock_table(nn, dd, rng), [], "synthetic", [], None, {"seed": seed, "n": nn, "d": dd})

    def fetch(self, **kwargs: Any) -> list[FoundFile]:
        return []


def _with(parser: Parser, cls: type[Recipe] = Recipe) -> Callable[[DatasetSpec], Recipe]:
    return lambda spec: cls(spec, parser)


#: registry ``recipe:`` key -> recipe factory
RECIPES: dict[str, Callable[[DatasetSpec], Recipe]] = {
    "crm": _with(parsers.parse_crm),
    "csn": _with(parsers.parse_csn, CSNRecipe),
    "ctg": _with(parsers.parse_ctg),
    "pam": _with(parsers.parse_pam, PAMRecipe),
    "pks": _with(parsers.parse_pks),
    "wdbc": _with(parsers.parse_wdbc, WDBCRecipe),
    "mock": lambda spec: MockRecipe(spec),
}


def recipe_for(spec: DatasetSpec) -> Recipe:
    """The recipe object named by the registry entry's ``recipe:`` key."""
    try:
        return RECIPES[spec.recipe](spec)
    except KeyError:
        raise RegistryError(f"registry entry {spec.code!r} in {registry_path()} names unknown recipe {spec.recipe!r}; "
                            f"known: {sorted(RECIPES)}") from None
