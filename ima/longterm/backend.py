"""Where long-term memory lives: a LangGraph store plus the revision log that arbitrates
its conditional writes, in the same database. `open_backend(location)` opens either:

- a SQLite file (the default: runs/memory.sqlite beside the runs database): a SqliteStore
  plus the revision table in the same file, each on its own connection;
- a `postgresql://` URL: LangGraph's PostgresStore plus the revision table, on the
  process's connection pool for that database (set up once per process).

`ima.storage.targets.memory_location` says which location a run uses.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore
from langgraph.store.sqlite import SqliteStore

from ima.longterm.errors import MemoryUnavailable
from ima.longterm.revisions import TableRevisionLog, register
from ima.storage import postgres
from ima.storage.sql import pool_session, sqlite_session
from ima.storage.sqlite import connect, connect_read_only
from ima.storage.targets import check_url, is_url, safe_url


@dataclass
class Backend:
    """An opened store and its revision log; `where` names it for the run record."""

    store: BaseStore
    revisions: TableRevisionLog
    where: str
    connections: tuple[sqlite3.Connection, ...] = ()  # SQLite: closed with the backend

    def close(self) -> None:
        """SQLite: close its connections (a PostgreSQL pool belongs to the process)."""
        for conn in self.connections:
            with contextlib.suppress(sqlite3.Error):
                conn.close()


def open_backend(location: str | Path, timeout: float = 30.0, read_only: bool = False) -> Backend:
    """Long-term memory at `location`, a SQLite file or a postgresql:// URL (`read_only`: a
    SQLite file is only read, nothing is created). MemoryUnavailable if a SQLite file cannot
    be used; UserError (one line) if a PostgreSQL server cannot."""
    if is_url(str(location)):
        return _open_postgres(str(location))
    return _open_sqlite(Path(location), timeout, read_only)


@contextlib.contextmanager
def _setup_lock(path: Path) -> Iterator[None]:
    """SqliteStore.setup() reads the schema version, then migrates (ALTER TABLE ...), so two
    processes opening a new file at once can both migrate and one fails; switching a new
    file to WAL can also report "locked" without waiting. A lock on a
    sidecar file serialises first opens across threads and processes (flock is held per
    open file, so two threads of one process exclude each other too)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: first opens are not serialised
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _open_sqlite(path: Path, timeout: float, read_only: bool) -> Backend:
    opened: list[sqlite3.Connection] = []
    try:
        if read_only:
            opened += [connect_read_only(path, timeout), connect_read_only(path, timeout)]
            store = SqliteStore(opened[0])
            store.is_setup = True  # an existing store's tables (nothing is created read-only)
            revisions = TableRevisionLog(sqlite_session(opened[1]))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            with _setup_lock(path):  # a new file's WAL switch and schema: one opener at a time
                # SqliteStore needs autocommit (it issues its own BEGIN/COMMIT)
                opened.append(connect(path, timeout=timeout, autocommit=True))
                opened.append(connect(path, timeout=timeout, autocommit=True))
                store = SqliteStore(opened[0])
                store.setup()
                revisions = TableRevisionLog(sqlite_session(opened[1]))
                revisions.setup()
    except (OSError, sqlite3.Error) as exc:
        for conn in opened:
            conn.close()
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise MemoryUnavailable(f"cannot open long-term memory store {path}: {reason}") from None
    register(store, revisions)
    return Backend(store, revisions, str(path), tuple(opened))


def _open_postgres(url: str) -> Backend:
    from langgraph.store.postgres import PostgresStore  # psycopg: only for PostgreSQL users

    pool: Any = postgres.pool(check_url(url))
    store = PostgresStore(pool)
    revisions = TableRevisionLog(pool_session(pool))

    def create(sql: Any) -> None:
        store.setup()
        revisions.setup()

    postgres.set_up(url, "long_term", create)
    register(store, revisions)
    return Backend(store, revisions, safe_url(url))
