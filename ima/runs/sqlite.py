"""SQLite files set up for real use: WAL so readers never block the writer, a busy timeout
so several processes can share one file, and one-line errors for unusable paths."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from ima.core.errors import UserError

DEFAULT_DB = Path("runs") / "ima.sqlite"


def default_db() -> Path:
    return Path(os.environ.get("IMA_DB") or DEFAULT_DB)


def connect(path: Path, *, autocommit: bool = False, read_only: bool = False) -> sqlite3.Connection:
    """A connection with WAL and a 30 s busy timeout; UserError if the path is unusable.

    `read_only` never writes, so commands that only read work on a file nobody may write.
    """
    if read_only:
        return _connect_read_only(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            path,
            timeout=30,
            check_same_thread=False,
            isolation_level=None if autocommit else "",
        )
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")  # takes effect on a new file only
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        # With WAL, NORMAL syncs at checkpoints, not at every commit: a killed process loses
        # nothing committed; only a power cut can undo the last few steps (never corrupts).
        conn.execute("PRAGMA synchronous=NORMAL")
    except (OSError, sqlite3.Error) as exc:
        raise UserError(
            f"cannot open database {path}: {exc} (choose another path with --db)"
        ) from None
    return conn


def _connect_read_only(path: Path) -> sqlite3.Connection:
    # mode=ro still needs the WAL index beside the file; where nothing may be created there
    # (a read-only folder or file system), `immutable` reads the file as it is.
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    for suffix in ("", "&immutable=1"):
        try:
            conn = sqlite3.connect(uri + suffix, uri=True, timeout=30, check_same_thread=False)
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            return conn
        except sqlite3.OperationalError as exc:
            last = exc
        except sqlite3.DatabaseError as exc:
            raise UserError(f"cannot read database {path}: {exc} (choose another --db)") from None
    raise UserError(f"cannot read database {path}: {last} (choose another --db)") from None
