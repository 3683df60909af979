"""A published table as data (dpkit.core.published): one schema check, one atomic writer that never overwrites
without ``replace``, one provenance reader, used by the board's records, Tables 3.2/3.3 and the checks."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpkit.board import records as board_records
from dpkit.core.published import (
    PROVENANCE_NAME,
    PublishedFileError,
    TableSchema,
    csv_text,
    provenance_text,
    read_provenance,
    refuse_overwrite,
    write_published,
)
from dpkit.experiments import checks_records, tables_records

SCHEMA = TableSchema(name="toy table", columns={"name": "object", "x": "float64", "ok": "bool"},
                     optional={"y": "float64"}, key=("name",), row="the toy", writer="write_toy")
TABLES = {"board records": board_records, "tables": tables_records, "checks": checks_records}


def _toy() -> pd.DataFrame:
    return pd.DataFrame({"name": ["a", "b"], "x": [0.1, 1 / 3], "ok": [True, False]}).astype(dict(SCHEMA.columns))


@pytest.mark.parametrize("module", list(TABLES.values()), ids=list(TABLES))
def test_every_published_table_is_described_by_one_schema_and_its_file_errors_are_one_kind(module):
    """The three published tables share the one schema type and the one error type for their files."""
    assert isinstance(module.SCHEMA, TableSchema) and module.SCHEMA.columns is module.COLUMNS
    assert module.SCHEMA.key == module.KEY
    error = {"board records": "BoardFileError", "tables": "TablesFileError", "checks": "ChecksFileError"}
    assert issubclass(getattr(module, error[next(k for k, v in TABLES.items() if v is module)]), PublishedFileError)


def test_a_file_that_is_there_is_not_overwritten_and_nothing_is_written(tmp_path):
    a, b = tmp_path / "sub" / "t.csv", tmp_path / "sub" / PROVENANCE_NAME
    assert write_published({a: "1\n", b: b"{}\n"}) == [a, b]
    assert a.read_bytes() == b"1\n" and b.read_bytes() == b"{}\n"
    b.unlink()
    with pytest.raises(PublishedFileError, match=rf"^{a} exists: not overwritten \(pass replace=True"):
        write_published({a: "2\n", b: "x"})
    assert a.read_bytes() == b"1\n" and not b.exists()  # nothing written, not even the file that was not there
    b.write_text("old")
    with pytest.raises(PublishedFileError, match=rf"^{a}, {b} exist: not overwritten .*replace them\)$"):
        refuse_overwrite([a, b], error=PublishedFileError)
    with pytest.raises(PublishedFileError, match=rf"^published toys is there: {a}, {b}; not overwritten"):
        refuse_overwrite([a, b], what="published toys")
    refuse_overwrite([a, b], replace=True)
    write_published({a: "ε\n", b: "x"}, replace=True)
    assert a.read_bytes() == "ε\n".encode() and not list(a.parent.glob(".*"))  # UTF-8, no temporary left behind


def test_a_table_as_csv_keeps_every_float_to_the_bit_and_its_dtypes(tmp_path):
    df = _toy()
    path = tmp_path / "toy.csv"
    path.write_text(csv_text(df))
    back = SCHEMA.read_csv(path)
    pd.testing.assert_frame_equal(back, df)
    assert back["x"].iloc[1] == 1 / 3
    assert provenance_text({"b": np.float64(0.5), "a": tmp_path}) == f'{{\n  "a": "{tmp_path}",\n  "b": 0.5\n}}\n'


@pytest.mark.parametrize("column, value, what", [("x", "big", "a number"), ("ok", "yes", "True or False")])
def test_a_value_of_the_wrong_type_is_refused_naming_the_file_column_value_and_row(tmp_path, column, value, what):
    df = _toy().astype({column: object})
    df.at[1, column] = value
    path = tmp_path / "toy.csv"
    path.write_text(df.to_csv(index=False))
    with pytest.raises(ValueError, match=rf"^{path}: column '{column}' = '{value}' of the toy \('b'\): must be {what}$"):
        SCHEMA.read_csv(path)


@pytest.mark.parametrize("names, message", [
    (["name", "x"], r"^t: not a toy table \(missing columns \['ok'\], extra \[\]; expected \['name', 'x', 'ok'\], "
                    r"then all of \['y'\] or none\)$"),
    (["name", "z", "x", "ok"], r"extra \['z'\]"),
    (["name", "x", "x", "ok"], r"twice \['x'\]"),
    (["x", "name", "ok"], r"^t: the columns are in another order than the toy table's \('x' at position 0, 'name' at "
                          r"position 1; the order is \['name', 'x', 'ok'\], as write_toy writes them\)$"),
    (["name", "x", "ok", "z", "y"], r"^t: after the toy table's columns come all of \['y'\], in this order, or none"),
])
def test_columns_missing_extra_repeated_moved_or_a_partial_optional_set_are_refused(names, message):
    with pytest.raises(ValueError, match=message):
        SCHEMA.check_columns(names, source="t")
    SCHEMA.check_columns(["name", "x", "ok"], source="t")
    SCHEMA.check_columns(["name", "x", "ok", "y"], source="t")


def test_dtypes_keys_and_values_are_refused_naming_the_row():
    df = _toy()
    with pytest.raises(ValueError, match=r"^t: column dtype\(s\) \{'x': 'object'\}; expected \{'x': 'float64'\} "
                                         r"\(read it with read_toy\)$"):
        SCHEMA.check_dtypes(df.astype({"x": object}), source="t", hint="read it with read_toy")
    with pytest.raises(ValueError, match=r"^t: 2 rows share a key \('name',\), e.g. the toy \('a'\)$"):
        SCHEMA.check_key(pd.concat([df, df.iloc[:1]], ignore_index=True), source="t")
    with pytest.raises(ValueError, match=r"^t: column 'x' = 0.3333333333333333 of the toy \('b'\): too big$"):
        SCHEMA.refuse(df, df["x"] > 0.2, source="t", column="x", what="too big")
    with pytest.raises(ValueError, match=r"^t: the toy \('a'\): odd \(2 rows\)$"):
        SCHEMA.refuse(df, [True, True], source="t", what="odd")
    SCHEMA.refuse(df, [False, False], source="t", what="odd")


def test_the_provenance_beside_a_table_must_be_there_and_name_its_runs(tmp_path):
    table = tmp_path / "toy.csv"
    with pytest.raises(PublishedFileError, match=rf"^{table}: no provenance.json beside it \(where the toys came"):
        read_provenance(table, what="the toys")
    for text in ("[1]", '{"runs": 3}', "{"):
        (tmp_path / PROVENANCE_NAME).write_text(text)
        with pytest.raises(ValueError, match=rf"^{tmp_path / PROVENANCE_NAME}: (not a|unreadable) provenance"):
            read_provenance(table)
    (tmp_path / PROVENANCE_NAME).write_text(json.dumps({"runs": []}))
    assert read_provenance(table) == {"runs": []}
