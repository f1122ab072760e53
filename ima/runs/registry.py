"""The run registry: one record per thread, kept beside its checkpoints, so any command
can show, resume or export a run."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.runs.sqlite import connect


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
    keep_history: bool = False  # keep every step's checkpoint after the run ends
    brief: str = ""  # the brief that replaced the task's description ("" = the task's)

    def run_context(self) -> RunContext:
        """The run's settings, as they were when it started (resume uses the same)."""
        names = RunContext.model_fields
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

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.conn = connect(path, autocommit=True, read_only=read_only)
        if not read_only:
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS ima_runs "
                "(thread_id TEXT PRIMARY KEY, record TEXT NOT NULL)"
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
