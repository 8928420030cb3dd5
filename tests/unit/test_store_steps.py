"""The SQLite step driver's many-row statements: multi-row INSERTs where they may be used."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from sitelore.adapters.store._steps import _MAX_PARAMS, execute_many, run_sqlite


def _table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT, c TEXT)")
    return conn


_CHUNKED = _MAX_PARAMS // 3 * 2 + 7  # rows of three: three statements' worth


@pytest.mark.parametrize(
    ("sql", "rows", "expected"),
    [
        # Named dict rows: multi-row INSERTs, the parameters in the statement's order.
        (
            "INSERT INTO t (a, b, c) VALUES (:a, :b, :c)",
            [{"c": f"c{n}", "a": n, "b": f"b{n}"} for n in range(_CHUNKED)],
            [(n, f"b{n}", f"c{n}") for n in range(_CHUNKED)],
        ),
        # Positional rows, and a statement with more after VALUES: one run per row.
        (
            "INSERT INTO t (a, b, c) VALUES (?, ?, ?)",
            [(n, f"b{n}", f"c{n}") for n in range(5)],
            [(n, f"b{n}", f"c{n}") for n in range(5)],
        ),
        (
            "INSERT INTO t (a, b, c) VALUES (:a, :b, :c) ON CONFLICT (a) DO NOTHING",
            [{"a": n % 3, "b": f"b{n}", "c": f"c{n}"} for n in range(6)],
            [(n, f"b{n}", f"c{n}") for n in range(3)],
        ),
    ],
    ids=["named-chunked", "positional", "on-conflict"],
)
def test_many_rows_are_stored_in_order_and_counted(
    sql: str, rows: list[Any], expected: list[tuple[Any, ...]]
) -> None:
    conn = _table()
    changed = run_sqlite(conn, execute_many(sql, rows))
    assert conn.execute("SELECT a, b, c FROM t ORDER BY rowid").fetchall() == expected
    assert changed == len(expected)


def test_named_rows_go_in_as_few_statements_of_bounded_size() -> None:
    """One statement per chunk of rows, each binding at most ``_MAX_PARAMS`` values (a
    statement per row made FTS5 write an index segment per row)."""
    conn = _table()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    rows = [{"a": n, "b": "b", "c": "c"} for n in range(_CHUNKED)]
    run_sqlite(conn, execute_many("INSERT INTO t (a, b, c) VALUES (:a, :b, :c)", rows))
    inserts = [sql for sql in statements if sql.startswith("INSERT")]
    assert len(inserts) == 3
    assert all(sql.count("(") - 1 <= _MAX_PARAMS // 3 for sql in inserts)


def test_a_failing_row_fails_the_statement_and_writes_none_of_its_chunk() -> None:
    conn = _table()
    conn.execute("BEGIN")
    rows = [{"a": 1, "b": "x", "c": "y"}, {"a": 1, "b": "dup", "c": "z"}]
    with pytest.raises(sqlite3.IntegrityError):
        run_sqlite(conn, execute_many("INSERT INTO t (a, b, c) VALUES (:a, :b, :c)", rows))
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
