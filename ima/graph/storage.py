"""SQLite on disk for checkpoints and the run registry, set up for real use: WAL so readers
never block the writer, and a busy timeout so several runs can share one database file."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from ima.errors import UserError
from ima.graph.context import RunContext

DEFAULT_DB = Path("runs") / "ima.sqlite"


def default_db() -> Path:
    return Path(os.environ.get("IMA_DB") or DEFAULT_DB)


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
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
    except (OSError, sqlite3.Error) as exc:
        raise UserError(
            f"cannot open database {path}: {exc} (choose another path with --db)"
        ) from None
    return conn


@contextmanager
def open_checkpointer(path: Path) -> Iterator[SqliteSaver]:
    conn = connect(path)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        yield saver
    finally:
        conn.close()


@dataclass
class RunRecord:
    """What is needed to resume or inspect a run, kept beside its checkpoints."""

    thread_id: str
    task_ref: str  # bundled task id or the path of the task file
    task_id: str
    task_version: int
    task_fingerprint: str
    memory_mode: str
    settings: dict[str, Any]
    out_dir: str
    status: str = "running"
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    wall_seconds: float = 0.0
    pid: int = 0

    def run_context(self) -> RunContext:
        """The run's settings, as they were when it started (resume uses the same)."""
        names = {f.name for f in fields(RunContext)}
        return RunContext(**{k: v for k, v in self.settings.items() if k in names})

    @property
    def shown_status(self) -> str:
        """`running` only while its process lives; a killed run shows as interrupted."""
        if self.status == "running" and not _alive(self.pid):
            return "interrupted"
        return self.status


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunRegistry:
    """The `ima_runs` table: one row per thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = connect(path, autocommit=True)
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS ima_runs (thread_id TEXT PRIMARY KEY, record TEXT NOT NULL)"
        )

    def close(self) -> None:
        self.conn.close()

    def save(self, record: RunRecord) -> None:
        record.updated_at = time.time()
        self.conn.execute(
            "INSERT OR REPLACE INTO ima_runs VALUES (?, ?)",
            (record.thread_id, json.dumps(asdict(record))),
        )

    def find(self, thread_id: str) -> RunRecord | None:
        row = self.conn.execute(
            "SELECT record FROM ima_runs WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        return RunRecord(**json.loads(row[0])) if row else None

    def get(self, thread_id: str) -> RunRecord:
        record = self.find(thread_id)
        if record is None:
            raise UserError(f"unknown thread {thread_id!r} in {self.path}: see `ima runs`")
        return record

    def all(self) -> list[RunRecord]:
        rows = self.conn.execute("SELECT record FROM ima_runs").fetchall()
        records = [RunRecord(**json.loads(r[0])) for r in rows]
        return sorted(records, key=lambda r: r.created_at)
