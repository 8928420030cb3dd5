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
        cur = conn.executemany(sql, params) if asked.want == "many" else conn.execute(sql, params)
        if asked.want == "one":
            answer = cur.fetchone()
        elif asked.want == "all":
            answer = cur.fetchall()
        else:
            answer = cur.rowcount
        asked = _resume(step, answer)
    result: _T = asked.value
    return result


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
