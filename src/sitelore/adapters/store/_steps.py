"""Store work written once for both databases: steps that ask for queries, and their drivers.

A *step* is a generator that yields each :class:`Query` it needs and is sent the
answer (a row, the rows, or a row count); it returns its result. It does no I/O
itself, so one step runs on SQLite (:func:`run_sqlite`: synchronously, on the
caller's connection or inside a write on the writer thread) and on PostgreSQL
(:func:`run_pg`: awaited on a psycopg connection). Neither driver opens, commits or
closes anything: the store around it does.

A step's statements are written as PostgreSQL takes them; :func:`sqlite_sql` says
each as SQLite does (its tables lack the ``sitelore_`` prefix, its parameters are
``:name`` and ``?`` where psycopg's are ``%(name)s`` and ``%s``). Every value still
reaches the database as a bound parameter.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sqlite3
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "Query",
    "Step",
    "execute",
    "execute_many",
    "fetch_all",
    "fetch_one",
    "run_pg",
    "run_sqlite",
    "sqlite_sql",
]

_T = TypeVar("_T")
_NAMED = re.compile(r"%\((\w+)\)s")
_PREFIX = re.compile(r"\bsitelore_(?=\w)")
#: ``INSERT ... VALUES (:a, :b, ...)`` ending the statement (SQLite form).
_ROW_VALUES = re.compile(r"\bVALUES\s*\(((?:\s*:\w+\s*,)*\s*:\w+\s*)\)\s*$", re.IGNORECASE)
#: Bound parameters per multi-row INSERT (SQLite allows 32,766 since 3.32).
_MAX_PARAMS = 8000


@dataclasses.dataclass(frozen=True, slots=True)
class Query:
    """A statement, its parameters, and what the step wants back: ``one`` row (or None),
    ``all`` rows, the ``count`` of rows changed, or nothing (``many``: the statement
    runs once per set of parameters)."""

    sql: str
    params: Any = ()
    want: Literal["one", "all", "count", "many"] = "one"


#: Work that yields queries, is sent their answers and returns a ``_T``.
Step = Generator[Query, Any, _T]


def fetch_one(sql: str, params: Any = ()) -> Step[Any]:
    """One statement's first row, or None."""
    return (yield Query(sql, params, "one"))


def fetch_all(sql: str, params: Any = ()) -> Step[Any]:
    """One statement's rows."""
    return (yield Query(sql, params, "all"))


def execute(sql: str, params: Any = ()) -> Step[Any]:
    """Run one statement; how many rows it changed."""
    return (yield Query(sql, params, "count"))


def execute_many(sql: str, params: Any) -> Step[Any]:
    """Run one statement once for each set of parameters."""
    return (yield Query(sql, params, "many"))


@functools.lru_cache(maxsize=128)
def sqlite_sql(sql: str) -> str:
    """``sql`` as the SQLite store says it: no table prefix, ``:name`` and ``?`` parameters.

    >>> sqlite_sql("SELECT pk FROM sitelore_documents WHERE id = %(key)s LIMIT %s")
    'SELECT pk FROM documents WHERE id = :key LIMIT ?'
    """
    return _PREFIX.sub("", _NAMED.sub(r":\1", sql).replace("%s", "?"))


@dataclasses.dataclass(frozen=True, slots=True)
class _Done:
    value: Any


def _resume(step: Step[Any], answer: Any) -> Query | _Done:
    """The next query ``step`` asks, given the answer to its last; or its result."""
    try:
        return step.send(answer)
    except StopIteration as done:
        return _Done(done.value)


def run_sqlite(conn: sqlite3.Connection, step: Step[_T]) -> _T:
    """Run ``step`` on an SQLite connection, answering each query as it asks."""
    asked = _resume(step, None)
    while isinstance(asked, Query):
        sql, params = sqlite_sql(asked.sql), asked.params
        if asked.want == "many":
            asked = _resume(step, _run_many(conn, sql, params))
            continue
        cur = conn.execute(sql, params)
        if asked.want == "one":
            answer = cur.fetchone()
        elif asked.want == "all":
            answer = cur.fetchall()
        else:
            answer = cur.rowcount
        asked = _resume(step, answer)
    result: _T = asked.value
    return result


def _run_many(conn: sqlite3.Connection, sql: str, rows: Any) -> int:
    """Run ``sql`` once per row; a plain ``INSERT ... VALUES (:a, ...)`` of dict rows as
    a few multi-row INSERTs. How many rows changed.

    In a transaction each statement is a statement journal, and FTS5 writes its pending
    terms out at each one: inserted one row at a time, a page's sections made one index
    segment per section (merged again later), twice the CPU of one statement per page.

    >>> conn = sqlite3.connect(":memory:")
    >>> _ = conn.execute("CREATE TABLE t (a, b)")
    >>> rows = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    >>> _run_many(conn, "INSERT INTO t (a, b) VALUES (:a, :b)", rows)
    2
    >>> conn.execute("SELECT * FROM t").fetchall()
    [(1, 2), (3, 4)]
    """
    rows = list(rows)
    found = _ROW_VALUES.search(sql)
    if found is None or not rows or not all(isinstance(row, dict) for row in rows):
        return int(conn.executemany(sql, rows).rowcount)
    names = [name.strip()[1:] for name in found.group(1).split(",")]
    one = "(" + ", ".join("?" * len(names)) + ")"
    head = sql[: found.start()] + "VALUES "
    per = max(1, _MAX_PARAMS // len(names))
    changed = 0
    for first in range(0, len(rows), per):
        chunk = rows[first : first + per]
        params = [row[name] for row in chunk for name in names]
        changed += conn.execute(head + ", ".join([one] * len(chunk)), params).rowcount
    return changed


async def run_pg(conn: psycopg.AsyncConnection[Any], step: Step[_T]) -> _T:
    """Run ``step`` on a psycopg connection (rows as dicts), answering each query as it asks."""
    asked = _resume(step, None)
    while isinstance(asked, Query):
        async with conn.cursor() as cur:
            if asked.want == "many":
                await cur.executemany(asked.sql, asked.params)
            else:
                await cur.execute(asked.sql, asked.params)
            if asked.want == "one":
                answer = await cur.fetchone()
            elif asked.want == "all":
                answer = await cur.fetchall()
            else:
                answer = cur.rowcount
        asked = _resume(step, answer)
    result: _T = asked.value
    return result
