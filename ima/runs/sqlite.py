"""SQLite files set up for real use: WAL so readers never block the writer, a busy timeout
so several processes can share one file, and one-line errors for unusable paths."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ima.core.errors import UserError

DEFAULT_DB = Path("runs") / "ima.sqlite"


def default_target() -> str:
    """IMA_DB (a SQLite path or a postgresql:// URL), else runs/ima.sqlite."""
    return os.environ.get("IMA_DB") or str(DEFAULT_DB)


def connect(path: Path, *, autocommit: bool = False) -> sqlite3.Connection:
    """A connection with WAL and a 30 s busy timeout; UserError if the path is unusable."""
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
