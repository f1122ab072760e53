"""SQLite files set up for real use: WAL so readers never block the writer, a busy timeout
so several processes can share one file, and read-only connections that never write.

Errors are the driver's (`sqlite3.Error`, `OSError`); each caller says in its own words
what could not be opened and what to do."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from urllib.parse import quote


def connect(path: Path, *, timeout: float = 30.0, autocommit: bool = False) -> sqlite3.Connection:
    """A connection with WAL and a busy timeout of `timeout` seconds, usable from any thread
    (callers serialise its use); the folder is created if missing. `autocommit`: no implicit
    transactions (LangGraph's SqliteStore and statements that each commit on their own)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    conn = sqlite3.connect(
        path,
        timeout=timeout,
        check_same_thread=False,
        isolation_level=None if autocommit else "",
    )
    try:
        if new:  # freed pages can go back to the file system (it takes effect on new files)
            conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        _use_wal(conn, timeout)  # also fails fast on a file that is not SQLite
        conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        # With WAL, NORMAL syncs at checkpoints, not at every commit: a killed process loses
        # nothing committed; only a power cut can undo the last few steps (never corrupts).
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _use_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch to WAL, waiting up to `timeout` seconds while other connections hold the file:
    SQLite answers a journal-mode change with "locked" at once, without its busy handler,
    when several connections open a new file together."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def connect_read_only(path: Path, timeout: float = 30.0) -> sqlite3.Connection:
    """A connection that never writes. mode=ro still needs the WAL index beside the file;
    where nothing may be created there (a read-only folder or file system), `immutable`
    reads the file as it is. A file that is not SQLite raises at once."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    last: sqlite3.OperationalError | None = None
    for suffix in ("", "&immutable=1"):
        try:
            conn = sqlite3.connect(uri + suffix, uri=True, timeout=timeout, check_same_thread=False)
        except sqlite3.OperationalError as exc:
            last = exc
            continue
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            return conn
        except sqlite3.Error as exc:
            conn.close()
            if not isinstance(exc, sqlite3.OperationalError):
                raise  # not a SQLite file: no other way of opening it helps
            last = exc
    assert last is not None
    raise last
