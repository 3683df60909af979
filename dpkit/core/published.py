"""A published table as data: a file of one table with its provenance beside it, checked on every read and write.

dpkit publishes three tables: the leaderboard's records (:mod:`dpkit.board.records`, Parquet), Tables 3.2/3.3
(:mod:`dpkit.experiments.tables_records`, CSV) and the notebooks' checks (:mod:`dpkit.experiments.checks_records`,
CSV). Each is described by a :class:`TableSchema` (its columns and their pandas dtypes, optional trailing columns,
its key) and shares what this module holds:

* the schema's checks (:meth:`TableSchema.check_columns`, :meth:`TableSchema.check_dtypes`,
  :meth:`TableSchema.check_key`, :meth:`TableSchema.refuse`), one-line errors naming the file, the column, the
  value and the row's key;
* the writing (:func:`write_published`): every file atomically (:func:`dpkit.core.paths.write_atomic`), none if one
  of them is there and ``replace`` is not given; a table as CSV with every float to the bit (:func:`csv_text`), a
  provenance as sorted JSON (:func:`provenance_text`);
* the reading of a CSV table (:meth:`TableSchema.read_csv`) and of the ``provenance.json`` beside a table
  (:func:`read_provenance`).

The checks particular to a table (its values, the budget, the thesis's numbers) stay in its module.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpkit.core.paths import write_atomic

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PROVENANCE_NAME", "PublishedFileError", "TableSchema", "csv_text", "provenance_text", "refuse_overwrite",
           "write_published",
           "read_provenance"]

#: The name of the provenance file beside a published table (where its numbers came from).
PROVENANCE_NAME = "provenance.json"


class PublishedFileError(FileNotFoundError):
    """A published table's file (or its provenance) that is missing, or one that would be overwritten without
    ``replace``. Each table's module raises its own subclass."""


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as the CSV text of a published table: no index, every float to the bit (``%.17g``), ``\\n`` line ends."""
    return df.to_csv(index=False, float_format="%.17g", lineterminator="\n")


def provenance_text(provenance: Mapping[str, Any]) -> str:
    """``provenance`` as the text of a ``provenance.json``: indented JSON with sorted keys, a value JSON does not
    know as its ``str``, and a final line end."""
    return json.dumps(dict(provenance), indent=2, sort_keys=True, default=str) + "\n"


def refuse_overwrite(paths: Iterable[str | os.PathLike], *, replace: bool = False, what: str | None = None,
                     error: type[PublishedFileError] = PublishedFileError) -> None:
    """Nothing if none of ``paths`` is there or ``replace`` is True; else ``error`` naming every one that is there
    (the check :func:`write_published` makes first; a command makes it before it computes what it would write).

    Parameters
    ----------
    paths : iterable of path-like
        The files that would be written.
    replace : bool
        Whether they may be replaced.
    what : str, optional
        What the files are ("a published board"), to begin the message with.
    error : type
        The error to raise (the table's own :class:`PublishedFileError`).

    Raises
    ------
    PublishedFileError
        (``error``) When a file is there and ``replace`` is False.
    """
    there = [str(p) for p in paths if Path(p).exists()]
    if there and not replace:
        one = len(there) == 1
        files = ", ".join(there)
        head = f"{what} is there: {files};" if what else f"{files} {'exists' if one else 'exist'}:"
        raise error(f"{head} not overwritten (pass replace=True, or --replace, to replace {'it' if one else 'them'})")


def write_published(files: Mapping[Path, bytes | str], *, replace: bool = False,
                    error: type[PublishedFileError] = PublishedFileError) -> list[Path]:
    """Write each of ``files`` (path -> content, a text as UTF-8) atomically, its folder made if missing; nothing if
    one of them is there and ``replace`` is False.

    Parameters
    ----------
    files : mapping of Path to bytes or str
        The files and their contents, written in this order.
    replace : bool
        Replace the files that are there.
    error : type
        The error to raise (the table's own :class:`PublishedFileError`).

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    PublishedFileError
        (``error``) When a file is there and ``replace`` is False, naming every such file: nothing is written.
    """
    paths = [Path(p) for p in files]
    refuse_overwrite(paths, replace=replace, error=error)
    for path, data in zip(paths, files.values()):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data.encode() if isinstance(data, str) else data)
    return paths


def read_provenance(table: str | os.PathLike, *, what: str = "the numbers",
                    error: type[PublishedFileError] = PublishedFileError) -> dict[str, Any]:
    """The ``provenance.json`` beside the published table ``table``: a JSON object with a list of ``runs``.

    Parameters
    ----------
    table : path-like
        The table's file.
    what : str
        What came from the runs, for the message of a missing provenance ("where {what} came from").
    error : type
        The error for a missing provenance (the table's own :class:`PublishedFileError`).

    Returns
    -------
    dict
        The provenance.

    Raises
    ------
    PublishedFileError
        (``error``) When it is missing; the message names the table.
    ValueError
        When it is unreadable, not a JSON object or has no list of ``runs``, naming it.
    """
    prov_path = Path(table).parent / PROVENANCE_NAME
    if not prov_path.is_file():
        raise error(f"{table}: no {PROVENANCE_NAME} beside it (where {what} came from)")
    try:
        prov = json.loads(prov_path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{prov_path}: unreadable provenance: {type(exc).__name__}: {exc}") from None
    if not isinstance(prov, dict) or not isinstance(prov.get("runs"), list):
        raise ValueError(f"{prov_path}: not a provenance (a JSON object with a list of 'runs')")
    return prov


@dataclass(frozen=True, kw_only=True)
class TableSchema:
    """The shape of a published table: its columns and their pandas dtypes, then all of its optional columns or none,
    and the key that names a row.

    Parameters
    ----------
    name : str
        What the table is, for the messages ("leaderboard records table").
    columns : mapping of str to str
        The columns, in their order, and their pandas dtypes (``"object"`` for text, ``"float64"``, ``"int64"``,
        ``"bool"``).
    optional : mapping of str to str
        Columns after ``columns`` in a table that has them (all of them, in their order, or none).
    key : tuple of str
        The columns that name a row (one row per key).
    row : str
        What a row is, for the messages ("the check").
    writer : str
        The function that writes the table, for the message of a table whose columns are in another order.
    invalid : type
        The error for a table that does not fit the schema (a :class:`ValueError`).
    """

    name: str
    columns: Mapping[str, str]
    optional: Mapping[str, str] = field(default_factory=dict)
    key: tuple[str, ...]
    row: str = "the row"
    writer: str = "its writer"
    invalid: type[ValueError] = ValueError

    def dtypes(self, names: list[str]) -> dict[str, str]:
        """The columns (and dtypes) of a table with these column names: the :attr:`columns`, then the
        :attr:`optional` ones when it has any of them."""
        if any(c in self.optional for c in names):
            return {**self.columns, **self.optional}
        return dict(self.columns)

    def check_columns(self, names: list[Any], *, source: str) -> None:
        """Exactly the :attr:`columns`, each once, in their order, then all the :attr:`optional` ones or none; else
        an :attr:`invalid` error naming ``source`` and the columns missing, extra, repeated or moved."""
        columns, optional = list(self.columns), list(self.optional)
        if names == columns or (optional and names == [*columns, *optional]):
            return
        if optional and names[:len(columns)] == columns:
            raise self.invalid(f"{source}: after the {self.name}'s columns come all of {optional}, in this order, "
                               f"or none; found {[str(c) for c in names[len(columns):]]}")
        names = [c for c in names if c not in self.optional]
        twice = sorted({str(c) for c in names if names.count(c) > 1})
        missing = [c for c in columns if c not in names]
        extra = [str(c) for c in names if c not in self.columns]
        if twice or missing or extra:
            raise self.invalid(f"{source}: not a {self.name} (missing columns {missing}, extra {extra}"
                               f"{f', twice {twice}' if twice else ''}; expected {columns}"
                               f"{f', then all of {optional} or none' if optional else ''})")
        moved = [f"{c!r} at position {i}" for i, (c, want) in enumerate(zip(names, columns)) if c != want]
        moved_text = ", ".join(moved[:4]) + (f" and {len(moved) - 4} more" if len(moved) > 4 else "")
        raise self.invalid(f"{source}: the columns are in another order than the {self.name}'s ({moved_text}; the "
                           f"order is {columns}, as {self.writer} writes them)")

    def check_dtypes(self, df: pd.DataFrame, *, source: str, hint: str = "") -> dict[str, str]:
        """The table's columns and dtypes (:meth:`dtypes`) if ``df`` has them; else an :attr:`invalid` error naming
        ``source`` and each column of another dtype (then ``hint``, how to read the table)."""
        schema = self.dtypes([str(c) for c in df.columns])
        wrong = {c: str(df[c].dtype) for c, t in schema.items() if str(df[c].dtype) != t}
        if wrong:
            raise self.invalid(f"{source}: column dtype(s) {wrong}; expected {({c: schema[c] for c in wrong})}"
                               + (f" ({hint})" if hint else ""))
        return schema

    def row_key(self, df: pd.DataFrame, i: Any) -> str:
        """The key of row ``i`` of ``df``, as ``('CRM', 2.0, ...)``."""
        return "(" + ", ".join(repr(_plain(df.at[i, k])) for k in self.key if k in df.columns) + ")"

    def refuse(self, df: pd.DataFrame, mask: Any, *, source: str, what: str, column: str | None = None) -> None:
        """Nothing if ``mask`` holds for no row; else an :attr:`invalid` error naming ``source``, the ``column`` and
        its value in the first row where it holds (or no column, where a row is wrong as a whole), the row's key,
        ``what`` is wrong and how many rows are."""
        import numpy as np
        import pandas as pd

        mask = pd.Series(np.asarray(mask, dtype=bool), index=df.index)
        if not mask.any():
            return
        i = mask.idxmax()
        where = (f"column {column!r} = {_plain(df.at[i, column])!r} of {self.row} {self.row_key(df, i)}"
                 if column is not None else f"{self.row} {self.row_key(df, i)}")
        n = int(mask.sum())
        raise self.invalid(f"{source}: {where}: {what}" + (f" ({n} rows)" if n > 1 else ""))

    def check_key(self, df: pd.DataFrame, *, source: str) -> None:
        """One row per :attr:`key`; else an :attr:`invalid` error naming ``source``, how many rows share a key and
        the first of them."""
        dup = df.duplicated(list(self.key), keep=False)
        if dup.any():
            raise self.invalid(f"{source}: {int(dup.sum())} rows share a key {self.key}, e.g. {self.row} "
                               f"{self.row_key(df, dup.idxmax())}")

    def read_csv(self, path: Path) -> pd.DataFrame:
        """The CSV table of ``path`` (as :func:`csv_text` writes it) with the schema's dtypes where the file has its
        columns (text as text, an empty float as NaN, ``True``/``False``), not yet checked otherwise.

        Raises
        ------
        ValueError
            (:attr:`invalid`) When the file is not a readable CSV, or a value is not of its column's type (naming
            the file, the column, the value and the row's key).
        """
        import pandas as pd

        schema = {**self.columns, **self.optional}
        floats = [c for c, t in schema.items() if t == "float64"]
        try:
            df = pd.read_csv(path, dtype={c: t for c, t in schema.items() if t == "object"}, keep_default_na=False,
                             na_values={c: ["", "NaN", "nan"] for c in floats})
        except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise self.invalid(f"{path}: not a readable CSV: {' '.join(str(exc).split())}") from None
        for c, t in schema.items():
            if c not in df.columns or str(df[c].dtype) == t:
                continue
            if t == "float64":
                df[c] = self._convert(df, c, float, "a number", source=str(path))
            elif t == "bool":
                df[c] = self._convert(df, c, _bool, "True or False", source=str(path))
        return df

    def _convert(self, df: pd.DataFrame, column: str, to: Any, what: str, *, source: str) -> pd.Series:
        """``df[column]`` converted value by value by ``to``, or an :attr:`invalid` error naming the first value it
        refuses and its row."""
        import pandas as pd

        values = []
        for i, v in df[column].items():
            try:
                values.append(to(v))
            except (TypeError, ValueError):
                raise self.invalid(f"{source}: column {column!r} = {v!r} of {self.row} {self.row_key(df, i)}: must "
                                   f"be {what}") from None
        return pd.Series(values, index=df.index, dtype="float64" if to is float else "bool")


def _bool(value: Any) -> bool:
    """``True``/``False`` as written by :func:`csv_text` (a bool read back as text)."""
    if str(value) not in ("True", "False"):
        raise ValueError(value)
    return str(value) == "True"


def _plain(x: Any) -> Any:
    """A numpy scalar as the Python value (for a message)."""
    return x.item() if hasattr(x, "item") and not isinstance(x, (str, bytes)) else x
