"""Statements written once, run unchanged on SQLite and PostgreSQL: `%s` placeholders and
`{now}` for the database's clock (seconds since the epoch); rows come back as dicts."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

Row = dict[str, Any]
SqlSession = Callable[[], AbstractContextManager["Sql"]]  # `with session() as sql: ...`

_NOW = {
    True: "EXTRACT(EPOCH FROM clock_timestamp())::float8",
    False: "((julianday('now') - 2440587.5) * 86400.0)",
}


class Sql:
    """Statements on one connection (a sqlite3 or psycopg connection or cursor)."""

    def __init__(self, conn: Any, postgres: bool) -> None:
        self.conn = conn
        self.postgres = postgres

    def _text(self, sql: str) -> str:
        sql = sql.replace("{now}", _NOW[self.postgres])
        return sql if self.postgres else sql.replace("%s", "?")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; the number of rows it changed."""
        cur = self.conn.execute(self._text(sql), tuple(params))
        return cur.rowcount

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cur = self.conn.execute(self._text(sql), tuple(params))
        if self.postgres:  # the pool's connections return dict rows
            return list(cur.fetchall())
        names = [d[0] for d in cur.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = self.all(sql, params)
        return rows[0] if rows else None


def sqlite_session(conn: Any, lock: threading.Lock | threading.RLock | None = None) -> SqlSession:
    """Sessions on one SQLite connection, one thread at a time (`lock`: shared with other
    users of the connection)."""
    guard = lock or threading.Lock()

    @contextmanager
    def session() -> Iterator[Sql]:
        with guard:
            yield Sql(conn, postgres=False)

    return session


def pool_session(pool: Any) -> SqlSession:
    """Sessions on connections borrowed from a psycopg pool (autocommit, dict rows)."""

    @contextmanager
    def session() -> Iterator[Sql]:
        with pool.connection() as conn:
            yield Sql(conn, postgres=True)

    return session
