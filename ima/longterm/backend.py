"""The default backend: a SqliteStore on a file (runs/memory.sqlite beside the runs
database) plus the revision table in the same file, each on its own connection."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from langgraph.store.sqlite import SqliteStore

from ima.longterm.errors import MemoryUnavailable
from ima.longterm.revisions import SqliteRevisionLog, register


def _connect(path: Path, timeout: float) -> sqlite3.Connection:
    # SqliteStore needs autocommit (it issues its own BEGIN/COMMIT); WAL lets readers run
    # beside a writer, the busy timeout lets several processes share the file.
    conn = sqlite3.connect(path, timeout=timeout, check_same_thread=False, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")  # also fails fast on a file that is not SQLite
        conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


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


@dataclass
class SqliteBackend:
    path: Path
    store: SqliteStore
    revisions: SqliteRevisionLog

    def close(self) -> None:
        for conn in (self.store.conn, self.revisions.conn):
            with contextlib.suppress(sqlite3.Error):
                conn.close()


def _connect_read_only(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection that never writes (`immutable` where not even the WAL index may be made)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False)
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.OperationalError:
        conn = sqlite3.connect(uri + "&immutable=1", uri=True, check_same_thread=False)
    return conn


def open_sqlite(path: str | Path, timeout: float = 30.0, read_only: bool = False) -> SqliteBackend:
    """Open (creating if needed) the store file; MemoryUnavailable if it cannot be used.
    `read_only` (for inspection) never writes and never creates anything."""
    path = Path(path)
    opened: list[sqlite3.Connection] = []
    try:
        if read_only:
            opened += [_connect_read_only(path, timeout), _connect_read_only(path, timeout)]
            store = SqliteStore(opened[0])
            store.is_setup = True  # an existing store's tables (nothing is created read-only)
            revisions = SqliteRevisionLog(opened[1], create=False)
            register(store, revisions)
            return SqliteBackend(path, store, revisions)
        path.parent.mkdir(parents=True, exist_ok=True)
        with _setup_lock(path):  # a new file's WAL switch and schema: one opener at a time
            opened.append(_connect(path, timeout))
            opened.append(_connect(path, timeout))
            store = SqliteStore(opened[0])
            store.setup()
            revisions = SqliteRevisionLog(opened[1])
    except (OSError, sqlite3.Error) as exc:
        for conn in opened:
            conn.close()
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise MemoryUnavailable(f"cannot open long-term memory store {path}: {reason}") from None
    register(store, revisions)
    return SqliteBackend(path, store, revisions)
