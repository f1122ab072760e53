"""Long-term memory's storage: a LangGraph store plus the revision log that arbitrates
its conditional writes, in the same database.

- `open_sqlite(path)`: a SqliteStore plus the revision table in the same file, each on its
  own connection (the default: runs/memory.sqlite beside the runs database).
- `on_pool(pool)`: LangGraph's PostgresStore plus the revision table on a PostgreSQL
  connection pool; the runs database (`ima.runs.database.open_memory_backend`) brings the
  pool, so the library never loads a PostgreSQL driver.

`ima.storage.targets.memory_location` says which one a run uses.
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
from ima.storage.sql import pool_session, sqlite_session
from ima.storage.sqlite import connect, connect_read_only
from ima.storage.targets import is_url, safe_url


@dataclass
class Backend:
    """An opened store and its revision log; `where` names it for the run record."""

    store: BaseStore
    revisions: TableRevisionLog
    where: str
    connections: tuple[sqlite3.Connection, ...] = ()  # SQLite: closed with the backend

    def setup(self) -> None:
        """Create the store's and the revision log's tables (idempotent)."""
        self.store.setup()
        self.revisions.setup()

    def close(self) -> None:
        """SQLite: close its connections (a PostgreSQL pool belongs to the process)."""
        for conn in self.connections:
            with contextlib.suppress(sqlite3.Error):
                conn.close()


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


def open_sqlite(path: str | Path, timeout: float = 30.0, read_only: bool = False) -> Backend:
    """Open (creating if needed) the store file; MemoryUnavailable if it cannot be used.
    `read_only` (for inspection) never writes and never creates anything."""
    path = Path(path)
    if is_url(str(path)):
        raise MemoryUnavailable(
            f"long-term memory at {safe_url(str(path))} is a database server: open it through "
            "the runs database (ima.runs.database.open_memory_backend)"
        )
    opened: list[sqlite3.Connection] = []
    try:
        if read_only:
            opened += [connect_read_only(path, timeout), connect_read_only(path, timeout)]
            backend = _on_sqlite(path, opened)
            backend.store.is_setup = True  # an existing store's tables: nothing is created
            return backend
        path.parent.mkdir(parents=True, exist_ok=True)
        with _setup_lock(path):  # a new file's WAL switch and schema: one opener at a time
            # SqliteStore needs autocommit (it issues its own BEGIN/COMMIT)
            opened += [connect(path, timeout=timeout, autocommit=True) for _ in range(2)]
            backend = _on_sqlite(path, opened)
            backend.setup()
        return backend
    except (OSError, sqlite3.Error) as exc:
        for conn in opened:
            conn.close()
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise MemoryUnavailable(f"cannot open long-term memory store {path}: {reason}") from None


def _on_sqlite(path: Path, conns: list[sqlite3.Connection]) -> Backend:
    """The store on one connection, the revision log on the other."""
    store = SqliteStore(conns[0])
    revisions = TableRevisionLog(sqlite_session(conns[1]))
    register(store, revisions)
    return Backend(store, revisions, str(path), tuple(conns))


def on_pool(pool: Any, where: str) -> Backend:
    """Long-term memory on a psycopg pool (autocommit, dict rows); run `setup` once."""
    from langgraph.store.postgres import PostgresStore  # the pool's owner has psycopg

    store = PostgresStore(pool)
    revisions = TableRevisionLog(pool_session(pool))
    register(store, revisions)
    return Backend(store, revisions, where)
