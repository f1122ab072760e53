"""SQLite on disk for checkpoints and the run registry, set up for real use: WAL so readers
never block the writer, and a busy timeout so several runs can share one database file.

Checkpoints are kept small (benchmarks/, figure 2): integer channel versions instead of
SqliteSaver's 49-character strings, and blobs compressed with zlib."""

from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.checkpoint.sqlite import SqliteSaver

from ima.errors import UserError
from ima.graph.context import RunContext

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

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


class CompressedSerializer(JsonPlusSerializer):
    """LangGraph's serializer, with blobs of 256 bytes or more zlib-compressed.

    Compressed blobs carry the type tag `zlib+<type>`; untagged blobs (older databases) load
    as before.
    """

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = super().dumps_typed(obj)
        if len(data) < 256:
            return kind, data
        return f"zlib+{kind}", zlib.compress(data, 6)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        if kind.startswith("zlib+"):
            return super().loads_typed((kind.removeprefix("zlib+"), zlib.decompress(blob)))
        return super().loads_typed(data)


class Checkpointer(SqliteSaver):
    """SqliteSaver with integer channel versions (LangGraph's default scheme).

    Every checkpoint lists a version per channel twice (channel_versions, versions_seen);
    SqliteSaver writes each as a 49-character string, integers take 1-3 bytes. Threads that
    began with string versions keep them, so older databases resume unchanged.
    """

    def get_next_version(self, current: str | int | None, channel: None = None) -> Any:  # type: ignore[override]
        if isinstance(current, str):
            return super().get_next_version(current, channel)
        return (current or 0) + 1


def compact_thread(saver: SqliteSaver, graph: CompiledStateGraph, config: Any) -> None:
    """Keep only the latest checkpoint of a finished thread, its DeltaChannels stored whole.

    The way LangGraph documents to prune a thread that uses DeltaChannel
    (`BaseCheckpointSaver.prune`): the kept checkpoint holds a snapshot of every delta
    channel, so nothing needs the deleted ancestors. The thread's state is unchanged; its
    step-by-step history is gone. Freed pages return to the file system.
    """
    thread_id = str(config["configurable"]["thread_id"])
    latest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if latest is None:
        return
    values = graph.get_state(latest.config).values
    checkpoint = dict(latest.checkpoint)
    stored = dict(checkpoint["channel_values"])
    delta = [k for k, ch in graph.channels.items() if isinstance(ch, DeltaChannel) and k in values]
    for key in delta:
        stored[key] = _DeltaSnapshot(values[key])
    checkpoint["channel_values"] = stored
    metadata = {**latest.metadata, "counters_since_delta_snapshot": {k: [0, 0] for k in delta}}
    kind, blob = saver.serde.dumps_typed(checkpoint)
    keep = latest.config["configurable"]["checkpoint_id"]
    where = "thread_id = ? AND checkpoint_ns = '' AND checkpoint_id"
    with saver.cursor() as cur:
        cur.execute(f"DELETE FROM writes WHERE {where} != ?", (thread_id, keep))
        cur.execute(f"DELETE FROM checkpoints WHERE {where} != ?", (thread_id, keep))
        cur.execute(
            f"UPDATE checkpoints SET type = ?, checkpoint = ?, metadata = ?, "
            f"parent_checkpoint_id = NULL WHERE {where} = ?",
            (kind, blob, json.dumps(metadata).encode(), thread_id, keep),
        )
    with saver.lock:  # executescript steps the pragma to the end (execute frees one page)
        saver.conn.executescript("PRAGMA incremental_vacuum;")


@contextmanager
def open_checkpointer(path: Path) -> Iterator[SqliteSaver]:
    conn = connect(path)
    try:
        saver = Checkpointer(conn, serde=CompressedSerializer())
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
    keep_history: bool = False  # keep every step's checkpoint after the run ends

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
