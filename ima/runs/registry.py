"""The run registry: one record per thread, kept beside its checkpoints (in the same
database), so any command on any machine can show, resume or export a run."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.core.processes import process_alive
from ima.core.settings import RunContext
from ima.runs import leases
from ima.runs.database import Database, open_database

TABLE = "ima_runs"
# Settings a run recorded before they existed ran with these values: resume keeps them
# even where today's default differs.
RECORDED_BEFORE: dict[str, Any] = {"prompt_layout": "paper", "weights": "q4_k_m"}
_DDL = f"CREATE TABLE IF NOT EXISTS {TABLE} (thread_id TEXT PRIMARY KEY, record TEXT NOT NULL)"


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
    # Whether a process holds the thread's lease now: set when read from the registry,
    # never stored (None: unknown, then the pid on this machine decides).
    live: bool | None = field(default=None, compare=False)

    def run_context(self) -> RunContext:
        """The run's settings, as they were when it started (resume uses the same)."""
        names = RunContext.model_fields
        settings = {**RECORDED_BEFORE, **self.settings}
        return RunContext(**{k: v for k, v in settings.items() if k in names})

    @property
    def shown_status(self) -> str:
        """`running` only while a process holds it; a killed run shows as interrupted."""
        alive = self.live if self.live is not None else process_alive(self.pid)
        if self.status == "running" and not alive:
            return "interrupted"
        return self.status

    def take_over(self, stored: RunRecord) -> None:
        """Adopt what the registry holds (another process may have moved the run on)."""
        for name in (f.name for f in fields(self)):
            setattr(self, name, getattr(stored, name))

    def stored(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("live")
        return data


class RunRegistry:
    """The `ima_runs` table: one row per thread (`with RunRegistry(db) as registry:`)."""

    def __init__(self, db: Database | Path | str, *, read_only: bool = False) -> None:
        self.db = open_database(db, read_only=read_only)
        self._owned = not isinstance(db, Database)  # opened here: closed here
        self.db.set_up("registry", lambda sql: sql.execute(_DDL))

    @property
    def path(self) -> str:
        return self.db.label

    def close(self) -> None:
        if self._owned:
            self.db.close()

    def __enter__(self) -> RunRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def save(self, record: RunRecord, lease: leases.Lease | None = None) -> None:
        """Store the record; with `lease`, only while the lease row still names its holder
        (checked in the same transaction): LeaseLost, and nothing written, once another
        process has taken the thread over."""
        record.updated_at = time.time()
        with self.db.transaction() as sql:
            if lease is not None:
                lease.confirm(sql)
            sql.execute(
                f"INSERT INTO {TABLE} VALUES (%s, %s) ON CONFLICT (thread_id) "
                "DO UPDATE SET record = excluded.record",
                (record.thread_id, json.dumps(record.stored())),
            )

    def add(self, record: RunRecord) -> bool:
        """Register a new thread; False if it already exists (nothing is overwritten)."""
        record.updated_at = time.time()
        with self.db.session() as sql:
            added = sql.execute(
                f"INSERT INTO {TABLE} VALUES (%s, %s) ON CONFLICT (thread_id) DO NOTHING",
                (record.thread_id, json.dumps(record.stored())),
            )
        return added == 1

    def _records(
        self, rows: list[dict[str, Any]], threads: list[str] | None = None
    ) -> list[RunRecord]:
        live = leases.holders(self.db, threads)
        records = []
        for row in rows:
            record = RunRecord(**json.loads(row["record"]))
            record.live = record.thread_id in live
            records.append(record)
        return records

    def find(self, thread_id: str) -> RunRecord | None:
        with self.db.session() as sql:
            row = sql.one(f"SELECT record FROM {TABLE} WHERE thread_id = %s", (thread_id,))
        return self._records([row], [thread_id])[0] if row else None

    def get(self, thread_id: str) -> RunRecord:
        record = self.find(thread_id)
        if record is None:
            raise UserError(f"unknown thread {thread_id!r} in {self.path}: see `ima runs`")
        return record

    def all(self) -> list[RunRecord]:
        with self.db.session() as sql:
            rows = sql.all(f"SELECT record FROM {TABLE}")
        return sorted(self._records(rows), key=lambda r: r.created_at)
