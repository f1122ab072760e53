"""Checkpoints: LangGraph's SqliteSaver and PostgresSaver tuned for size, fenced by the
thread's lease, and compaction of finished threads.

This is the one module that relies on LangGraph internals (a private snapshot class, the
savers' table layouts and the cursor methods their writes go through);
tests/test_checkpoint_contract.py and tests/test_conformance.py fail loudly if an upgrade
changes them. Checkpoints are kept small: integer channel versions instead of the savers'
49-character strings, and blobs compressed with zlib."""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.checkpoint.sqlite import SqliteSaver

from ima.storage.sql import Sql

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph


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


class Fence(Protocol):
    """What a saver asks before writing (a held `ima.runs.leases.Lease`)."""

    def check(self) -> None:
        """Raise if this process already knows it may not write (no database round trip)."""

    def confirm(self, sql: Sql) -> None:
        """Raise unless the database says this process may write, checked inside the
        transaction of the write."""


class Fenced:
    """A saver whose every write is fenced by the thread's lease in the database: the
    write's own transaction first confirms the lease row still names this process (see
    ima.runs.leases), so a process that lost its lease can never write, however slow.

    It also writes integer channel versions (LangGraph's default scheme) where both savers
    write 49-character strings: every checkpoint lists a version per channel twice
    (channel_versions, versions_seen); integers take 1-3 bytes. Threads that began with
    string versions keep them, so older databases resume unchanged."""

    fence: Fence | None = None

    def put(self, *args: Any, **kwargs: Any) -> Any:
        if self.fence:
            self.fence.check()  # cheap early stop; the transaction below decides
        return super().put(*args, **kwargs)  # type: ignore[misc]

    def put_writes(self, *args: Any, **kwargs: Any) -> Any:
        if self.fence:
            self.fence.check()
        return super().put_writes(*args, **kwargs)  # type: ignore[misc]

    def get_next_version(self, current: str | int | None, channel: None = None) -> Any:
        if isinstance(current, str):
            return super().get_next_version(current, channel)  # type: ignore[misc]
        return (current or 0) + 1


class Checkpointer(Fenced, SqliteSaver):
    """SqliteSaver with integer channel versions and a lease fence.

    SqliteSaver writes (put, put_writes, delete_thread; compaction here too) through
    `cursor()`, under its lock, committing at the end. Fenced, that cursor first takes the
    file's write lock (BEGIN IMMEDIATE) and confirms the lease, which lives in the same
    file: a takeover needs that lock too, so it cannot slip between the check and the
    write."""

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        with super().cursor(transaction) as cur:
            if not (transaction and self.fence):
                yield cur
                return
            cur.execute("BEGIN IMMEDIATE")
            try:
                self.fence.confirm(Sql(cur, postgres=False))
                yield cur
            except BaseException:
                self.conn.rollback()  # nothing of a refused or failed write stays
                raise


class PostgresCheckpointer(Fenced, PostgresSaver):
    """PostgresSaver with integer channel versions (its blobs table keeps them as text and
    only ever compares them for equality), compressed blobs and a lease fence.

    PostgresSaver writes (put, put_writes, delete_thread) through `_cursor(pipeline=True)`.
    Fenced, those statements run in one transaction that first reads the lease row FOR
    SHARE: a takeover (an upsert of that row) waits for the write to commit, and a write
    after a takeover sees the new holder and is refused."""

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
        with super()._cursor(pipeline=pipeline) as cur:
            if not (pipeline and self.fence):
                yield cur
                return
            with cur.connection.transaction():
                self.fence.confirm(Sql(cur, postgres=True))
                yield cur


def _snapshot_values(
    saver: BaseCheckpointSaver, graph: CompiledStateGraph, thread_id: str, keep_last: int
) -> tuple[Any, dict[str, Any]] | None:
    """The oldest of the thread's newest `keep_last` checkpoints and each DeltaChannel's
    whole value in it; None when the thread has nothing older to fold into it."""
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    kept = list(saver.list(config, limit=keep_last))
    if not kept or (keep_last > 1 and kept[-1].parent_config is None):
        return None  # no checkpoint, or nothing before the oldest kept one
    oldest = kept[-1]
    values = graph.get_state(oldest.config).values
    delta = {
        k: values[k]
        for k, ch in graph.channels.items()
        if isinstance(ch, DeltaChannel) and k in values
    }
    return oldest, delta


# A run that keeps no history is compacted while it runs (`compact_while_running`):
# LangGraph's bookkeeping of each step (a checkpoint, a dozen rows of writes) outweighs the
# text a step adds, so a long run's database would grow to many times its state. The newest
# steps stay whole, so nothing a step still being written relies on is touched; only they
# remain for time travel.
COMPACT_EVERY = 60  # steps: about 20 turns (agent turn, memory update, router)
KEEP_STEPS = 3


def compact_while_running(
    saver: BaseCheckpointSaver, graph: CompiledStateGraph, config: Any, steps: int
) -> bool:
    """After `steps` steps of a run that keeps no history: compact it every COMPACT_EVERY
    steps, keeping the newest KEEP_STEPS whole. True when it compacted."""
    if steps % COMPACT_EVERY:
        return False
    compact_thread(saver, graph, config, keep_last=KEEP_STEPS)
    return True


def compact_thread(
    saver: BaseCheckpointSaver, graph: CompiledStateGraph, config: Any, keep_last: int = 1
) -> None:
    """Fold a thread's history into one checkpoint, its DeltaChannels stored whole.

    `keep_last=1` (a finished thread): keep only the latest checkpoint. More: keep the
    newest `keep_last` checkpoints as they are, and the oldest of them becomes the thread's
    first, holding a snapshot of every delta channel (a run in progress).

    The way LangGraph documents to prune a thread that uses DeltaChannel
    (`BaseCheckpointSaver.prune`; PostgresSaver's own prune refuses such threads): the kept
    checkpoint holds a snapshot of every delta channel, so nothing needs the deleted
    ancestors. The thread's state is unchanged; its older step-by-step history is gone.
    """
    thread_id = str(config["configurable"]["thread_id"])
    found = _snapshot_values(saver, graph, thread_id, max(keep_last, 1))
    if found is None:
        return
    oldest, delta = found
    kept = _Kept(oldest, thread_id, delta)
    if isinstance(saver, PostgresSaver):
        _compact_postgres(saver, kept)
    else:
        _compact_sqlite(saver, kept)


class _Kept:
    """The checkpoint a compaction keeps, and what its row becomes whichever saver holds it."""

    def __init__(self, found: Any, thread_id: str, delta: dict[str, Any]) -> None:
        self.checkpoint = found.checkpoint  # as the saver read it
        self.thread_id = thread_id
        self.id: str = found.config["configurable"]["checkpoint_id"]
        self.delta = delta  # the delta channels' values, stored whole from now on
        counters = {k: [0, 0] for k in delta}
        self.metadata = {**found.metadata, "counters_since_delta_snapshot": counters}


def _compact_sqlite(saver: Any, kept: _Kept) -> None:
    """SqliteSaver keeps the whole checkpoint (values included) in one row: rewrite it, and
    drop the checkpoints before it and their writes. Freed pages return to the file system."""
    checkpoint = dict(kept.checkpoint)
    stored = dict(checkpoint["channel_values"])
    for key, value in kept.delta.items():
        stored[key] = _DeltaSnapshot(value)
    checkpoint["channel_values"] = stored
    kind, blob = saver.serde.dumps_typed(checkpoint)
    where = "thread_id = ? AND checkpoint_ns = '' AND checkpoint_id"
    with saver.cursor() as cur:
        # Checkpoint ids grow with time (uuid6): LangGraph finds the latest by them too.
        cur.execute(f"DELETE FROM writes WHERE {where} < ?", (kept.thread_id, kept.id))
        cur.execute(f"DELETE FROM checkpoints WHERE {where} < ?", (kept.thread_id, kept.id))
        cur.execute(
            f"UPDATE checkpoints SET type = ?, checkpoint = ?, metadata = ?, "
            f"parent_checkpoint_id = NULL WHERE {where} = ?",
            (kind, blob, json.dumps(kept.metadata).encode(), kept.thread_id, kept.id),
        )
    with saver.lock:  # executescript steps the pragma to the end (execute frees one page)
        saver.conn.executescript("PRAGMA incremental_vacuum;")


# PostgresSaver keeps primitive values inline in the checkpoint's JSON and every other value
# (a `_DeltaSnapshot` too, leaving the marker `true` inline) in checkpoint_blobs under
# (channel, version). Compaction rewrites the kept row and its delta channels' blobs, then
# drops every earlier checkpoint, their writes and unreferenced blobs, in one transaction.
_PG_COMPACT = (
    "DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = '' "
    "AND checkpoint_id < %s",
    "DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id < %s",
)
_PG_BLOB = (
    "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
    "VALUES (%s, '', %s, %s, %s, %s) ON CONFLICT (thread_id, checkpoint_ns, channel, version) "
    "DO UPDATE SET type = excluded.type, blob = excluded.blob"
)
_PG_UNREFERENCED_BLOBS = """
DELETE FROM checkpoint_blobs b WHERE b.thread_id = %s AND b.checkpoint_ns = '' AND NOT EXISTS (
    SELECT 1 FROM checkpoints c, jsonb_each_text(c.checkpoint -> 'channel_versions') v
    WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns
    AND v.key = b.channel AND v.value = b.version)
"""


def _compact_postgres(saver: PostgresSaver, kept: _Kept) -> None:
    from psycopg.types.json import Jsonb

    thread_id, keep = kept.thread_id, kept.id

    with saver._cursor() as cur, cur.connection.transaction():
        fence = getattr(saver, "fence", None)
        if fence:
            fence.confirm(Sql(cur, postgres=True))  # compaction rewrites the thread: fenced too
        for statement in _PG_COMPACT:
            cur.execute(statement, (thread_id, keep))
        row = cur.execute(
            "SELECT checkpoint FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' "
            "AND checkpoint_id = %s FOR UPDATE",
            (thread_id, keep),
        ).fetchone()
        if row is None:
            return
        checkpoint = row["checkpoint"]
        versions = checkpoint["channel_versions"]
        for key, value in kept.delta.items():
            if key not in versions:
                continue  # never written (e.g. memories in the baseline): nothing to keep
            kind, blob = saver.serde.dumps_typed(_DeltaSnapshot(value))
            cur.execute(_PG_BLOB, (thread_id, key, str(versions[key]), kind, blob))
            checkpoint["channel_values"][key] = True  # the saver's "snapshot in a blob" mark
        cur.execute(
            "UPDATE checkpoints SET checkpoint = %s, metadata = %s, parent_checkpoint_id = NULL "
            "WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = %s",
            (Jsonb(checkpoint), Jsonb(kept.metadata), thread_id, keep),
        )
        cur.execute(_PG_UNREFERENCED_BLOBS, (thread_id,))


def sqlite_checkpointer(conn: sqlite3.Connection, set_up: bool = True) -> Checkpointer:
    """A saver on an open connection (not autocommit: SqliteSaver commits its own writes);
    `set_up` creates LangGraph's tables (a read-only file has them, or nothing to read)."""
    saver = Checkpointer(conn, serde=CompressedSerializer())
    if set_up:
        saver.setup()
    else:
        saver.is_setup = True
    return saver


def postgres_checkpointer(pool: Any) -> PostgresCheckpointer:
    """A saver on the pool; its tables are set up once per process (`Database.set_up`)."""
    return PostgresCheckpointer(pool, serde=CompressedSerializer())
